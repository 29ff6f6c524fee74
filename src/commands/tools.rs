//! `recall tools`: the tool servers, their status and their tools, without a model.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use crate::cli::{GlobalArgs, ServerArgs};
use crate::mcp::ServerReport;
use crate::session::start_servers;
use crate::tool::RoutedTool;

/// `recall tools`: servers, their status and tools.
pub fn tools(global: &GlobalArgs, args: &ServerArgs) -> Result<()> {
    let (runtime, manager) = start_servers(args)?;
    let routed = manager.routed_tools();
    let mut out = std::io::stdout().lock();
    if global.json {
        let servers = manager.servers();
        let json = ToolsJson {
            servers: servers.iter().map(ServerJson::new).collect(),
            tools: routed.iter().map(ToolJson::new).collect(),
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
    } else {
        for server in manager.servers() {
            let access = if server.read_only {
                "read-only"
            } else {
                "asks before each call"
            };
            writeln!(out, "{} ({}, {access})", server.name, server.status)?;
            for tool in routed.iter().filter(|t| t.route.server == server.name) {
                let renamed = if tool.route.prefixed {
                    format!(
                        "  (renamed from {}: another server has a tool of that name)",
                        tool.route.tool
                    )
                } else {
                    String::new()
                };
                let summary = tool.spec.description.lines().next().unwrap_or("");
                writeln!(out, "  {}{renamed}\n      {summary}", tool.spec.name)?;
            }
        }
    }
    runtime.block_on(manager.shutdown());
    Ok(())
}

/// `recall tools --json`.
#[derive(Serialize)]
struct ToolsJson<'a> {
    servers: Vec<ServerJson<'a>>,
    tools: Vec<ToolJson<'a>>,
}

/// One server of [`ToolsJson`].
#[derive(Serialize)]
struct ServerJson<'a> {
    name: &'a str,
    /// Its status as the text listing says it.
    status: String,
    read_only: bool,
    tools: &'a [String],
}

impl<'a> ServerJson<'a> {
    fn new(server: &'a ServerReport) -> Self {
        ServerJson {
            name: &server.name,
            status: server.status.to_string(),
            read_only: server.read_only,
            tools: &server.tools,
        }
    }
}

/// One tool of [`ToolsJson`].
#[derive(Serialize)]
struct ToolJson<'a> {
    name: &'a str,
    server: &'a str,
    tool: &'a str,
    prefixed: bool,
    description: &'a str,
    input_schema: &'a Value,
}

impl<'a> ToolJson<'a> {
    fn new(tool: &'a RoutedTool) -> Self {
        ToolJson {
            name: &tool.spec.name,
            server: &tool.route.server,
            tool: &tool.route.tool,
            prefixed: tool.route.prefixed,
            description: &tool.spec.description,
            input_schema: &tool.spec.input_schema,
        }
    }
}
