//! `recall call TOOL 'JSON'`: one tool call that the person typed, its result printed.

use std::io::Write;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::cli::{GlobalArgs, ServerArgs};
use crate::embedding;
use crate::engine::Cancelled;
use crate::session::{Interrupt, start_servers_on};
use crate::tool::ToolCall;

/// `recall call TOOL 'JSON'`: one call, its result printed.
pub fn call(global: &GlobalArgs, args: &ServerArgs, tool: &str, arguments: &str) -> Result<()> {
    let arguments: Value = serde_json::from_str(arguments)
        .with_context(|| format!("arguments must be a JSON object, got {arguments:?}"))?;
    let Value::Object(arguments) = arguments else {
        anyhow::bail!("arguments must be a JSON object like '{{\"query\": \"bread\"}}'");
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    // Ctrl-C (or the terminal closing) stops the call and shuts the servers down: never a
    // server left running without recall.
    let interrupt = Interrupt::install(&runtime);
    let (manager, _) = start_servers_on(&runtime, args)?;
    let token = interrupt.token();
    // The search a model command would get: when the vault's embedding is nearly done, it is
    // waited for.
    let bound = Some(std::time::Duration::from_secs(args.embedding_wait));
    if let Ok(readiness) = embedding::prepare(&runtime, &manager, &token, bound) {
        embedding::say(&readiness);
    }
    let call = ToolCall {
        name: tool.to_string(),
        arguments,
    };
    // The person typed this call: approval is for calls the model chooses, so it just runs.
    let output = runtime.block_on(async {
        tokio::select! {
            output = manager.call(&call) => Some(output),
            () = token.cancelled() => None,
        }
    });
    runtime.block_on(manager.shutdown());
    let Some(output) = output else {
        return Err(Cancelled.into());
    };
    let mut out = std::io::stdout().lock();
    if global.json {
        let json = CallJson {
            text: &output.text,
            structured: output.structured.as_ref(),
            is_error: output.is_error,
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
    } else {
        writeln!(out, "{}", output.text)?;
    }
    if output.is_error {
        anyhow::bail!("{tool} returned an error");
    }
    Ok(())
}

/// `recall call --json`.
#[derive(Serialize)]
struct CallJson<'a> {
    text: &'a str,
    structured: Option<&'a Value>,
    is_error: bool,
}
