//! The MCP client manager: spawns every configured server over stdio, merges their tools into one
//! routing table, and routes [`ToolCall`]s to them with a timeout, restarting a dead server once.
//!
//! This is the only module that imports `rmcp`; everything leaving it is [`crate::tool`]
//! vocabulary or a type defined here. A server's stderr goes to the log (target
//! `recall::mcp::stderr`), never into tool output.
//!
//! Each server runs in a process group of its own: Ctrl-C at the terminal (SIGINT to the
//! foreground group) stops recall's turn and never reaches a server. Whenever recall is done with
//! a server (shutdown, a failed start, a restart) it ends the whole group, so the processes a
//! server started itself (`npx` → `node`, a shell script's children) are not left behind.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, ReadResourceRequestParams, ResourceContents,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, Command};
use tokio::task::JoinHandle;

use crate::config::ServerSpec;
use crate::tool::{RoutedTool, ToolCall, ToolHost, ToolOutput, ToolRoute, ToolSpec};

/// Separator between server and tool name when a tool name is offered by several servers.
pub const PREFIX_SEPARATOR: &str = "__";

/// Starting a server may take longer than one call (npx may download it first); its limit is
/// the per-call timeout or this, whichever is longer.
pub const MIN_STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// How many stderr lines of each server are kept for failure reports.
const STDERR_TAIL_LINES: usize = 20;

/// How long to wait for a server that failed to start to finish writing its stderr.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// How long the processes left in a server's group have after SIGTERM before SIGKILL.
const GROUP_GRACE: Duration = Duration::from_millis(500);

/// The state of one configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Started and answering.
    Running,
    /// Died once and was restarted; it will not be restarted again.
    Restarted,
    /// Died; it is restarted for the next call routed to it (if it was not restarted before).
    Exited {
        /// What was observed.
        reason: String,
    },
    /// Could not be started (or died after its one restart); its tools are not offered.
    Failed {
        /// What went wrong.
        reason: String,
        /// The last lines it wrote to stderr.
        stderr_tail: Vec<String>,
    },
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerStatus::Running => f.write_str("running"),
            ServerStatus::Restarted => f.write_str("running (restarted once)"),
            ServerStatus::Exited { reason } => {
                write!(f, "exited ({reason}); restarts on next call")
            }
            ServerStatus::Failed { reason, .. } => write!(f, "failed: {reason}"),
        }
    }
}

/// A server's entry in `recall tools`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    /// The configured name.
    pub name: String,
    /// Its state.
    pub status: ServerStatus,
    /// The child's process id while it runs.
    pub pid: Option<u32>,
    /// Names of the tools it offers after filtering (its own names, unprefixed).
    pub tools: Vec<String>,
    /// Whether it is configured `readOnly`.
    pub read_only: bool,
}

type Client = RunningService<RoleClient, ClientConfig>;

/// A started server: the client session, its child's pid and its filtered tools.
struct Live {
    client: Arc<Client>,
    pid: Option<u32>,
    tools: Vec<ToolSpec>,
}

struct ServerState {
    client: Option<Arc<Client>>,
    pid: Option<u32>,
    /// Kept while `Exited`, so calls still route to it and trigger the restart.
    tools: Vec<ToolSpec>,
    status: ServerStatus,
    restarted: bool,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

struct Server {
    spec: ServerSpec,
    state: Mutex<ServerState>,
    /// Serializes restarts so concurrent calls to a dead server start it only once.
    restart: tokio::sync::Mutex<()>,
}

impl Server {
    fn state(&self) -> std::sync::MutexGuard<'_, ServerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs the configured MCP servers and routes calls to them. See the module docs.
pub struct McpManager {
    servers: Vec<Server>,
    /// The routing table by exposed name, in table order (servers in config order, tools in
    /// server order): one map, so a reader never sees names and routes from two rebuilds.
    routes: RwLock<IndexMap<String, RoutedTool>>,
}

impl McpManager {
    /// Starts every server concurrently and lists their tools. A server that fails is logged with
    /// its stderr tail and marked [`ServerStatus::Failed`]; the others work regardless.
    pub async fn start(specs: &[ServerSpec]) -> McpManager {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, spec) in specs.iter().enumerate() {
            let spec = spec.clone();
            tasks.spawn(async move {
                let tail = Arc::new(Mutex::new(VecDeque::new()));
                let started = start_server(&spec, tail.clone()).await;
                (i, started, tail)
            });
        }
        let mut results: Vec<_> = (0..specs.len()).map(|_| None).collect();
        while let Some(joined) = tasks.join_next().await {
            // A panic inside a start task is a bug here, not the server's; surface it.
            let (i, started, tail) =
                joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            results[i] = Some((started, tail));
        }
        let servers = specs
            .iter()
            .zip(results)
            .map(|(spec, result)| {
                let (started, stderr_tail) = result.expect("every start task reports");
                let state = match started {
                    Ok(live) => ServerState {
                        client: Some(live.client),
                        pid: live.pid,
                        tools: live.tools,
                        status: ServerStatus::Running,
                        restarted: false,
                        stderr_tail,
                    },
                    Err(failure) => {
                        log_failure(&spec.name, &failure);
                        ServerState {
                            client: None,
                            pid: None,
                            tools: Vec::new(),
                            status: failure.into_status(),
                            restarted: false,
                            stderr_tail,
                        }
                    }
                };
                Server {
                    spec: spec.clone(),
                    state: Mutex::new(state),
                    restart: tokio::sync::Mutex::new(()),
                }
            })
            .collect();
        let manager = McpManager {
            servers,
            routes: RwLock::default(),
        };
        manager.rebuild_routes();
        manager
    }

    /// The routing table, in order: servers as configured, tools as each server lists them.
    pub fn routed_tools(&self) -> Vec<RoutedTool> {
        let routes = self.routes.read().unwrap_or_else(PoisonError::into_inner);
        routes.values().cloned().collect()
    }

    /// Every configured server with its status and tools (a child found dead shows as exited).
    pub fn servers(&self) -> Vec<ServerReport> {
        self.servers
            .iter()
            .map(|server| {
                // Notices (and records) a death that happened while idle.
                self.current_client(server);
                let state = server.state();
                ServerReport {
                    name: server.spec.name.clone(),
                    status: state.status.clone(),
                    pid: state.client.as_ref().and(state.pid),
                    tools: state.tools.iter().map(|t| t.name.clone()).collect(),
                    read_only: server.spec.read_only,
                }
            })
            .collect()
    }

    /// The process id of `server`'s child while it runs.
    pub fn server_pid(&self, server: &str) -> Option<u32> {
        let server = self.servers.iter().find(|s| s.spec.name == server)?;
        let state = server.state();
        state.client.as_ref().and(state.pid)
    }

    /// Routes and runs one call; see [`ToolHost::call`].
    ///
    /// A server found dead *before* the call is sent is restarted (once in its lifetime) and the
    /// call goes to the new process: nothing was lost. A server that dies *during* a call fails
    /// that call with an error output (it may have had effects, so it is not retried) and is
    /// restarted for the next call.
    pub async fn call(&self, call: &ToolCall) -> ToolOutput {
        let routed = match self.resolve(&call.name) {
            Ok(routed) => routed,
            Err(message) => return error_output(message),
        };
        let Some(server) = self
            .servers
            .iter()
            .find(|s| s.spec.name == routed.route.server)
        else {
            return error_output(format!("tool \"{}\" has no server", call.name));
        };
        let client = match self.live_client(server).await {
            Ok(client) => client,
            Err(message) => return error_output(message),
        };
        let original = routed.route.tool.clone();
        // After a restart the server may no longer offer the tool.
        if !server.state().tools.iter().any(|t| t.name == original) {
            return error_output(format!(
                "tool \"{}\" is no longer offered by server \"{}\"",
                call.name, server.spec.name
            ));
        }
        let params = CallToolRequestParams::new(original).with_arguments(call.arguments.clone());
        let timeout = server.spec.timeout;
        match tokio::time::timeout(timeout, client.call_tool(params)).await {
            Ok(Ok(result)) => convert_result(result),
            Err(_) => {
                // Say what happened: a server restarted after it stopped may still be starting
                // (a vault server indexes first); otherwise it was slow, with `timeoutSecs` the
                // bound it missed.
                let why = if matches!(server.state().status, ServerStatus::Restarted) {
                    "it was restarted after it stopped and may still be starting up; try again \
                     in a moment"
                } else {
                    "it did not answer in time; `timeoutSecs` in the server's config sets the limit"
                };
                error_output(format!(
                    "tool \"{}\" timed out after {} s on server \"{}\": {why}",
                    call.name,
                    timeout.as_secs_f64(),
                    server.spec.name
                ))
            }
            Ok(Err(error)) if is_dead(&error) || client.is_transport_closed() => {
                let reason = format!("connection lost during a call ({error})");
                self.mark_exited(server, &client, &reason);
                error_output(format!(
                    "server \"{}\" stopped while running tool \"{}\"; the call did not complete. \
                     It will be restarted for the next call.",
                    server.spec.name, call.name
                ))
            }
            Ok(Err(ServiceError::McpError(data))) => {
                error_output(format!("tool \"{}\" failed: {}", call.name, data.message))
            }
            Ok(Err(error)) => error_output(format!("tool \"{}\" failed: {error}", call.name)),
        }
    }

    /// The text of resource `uri` on `server` (the first text content it returns).
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<String, String> {
        let server = self
            .servers
            .iter()
            .find(|s| s.spec.name == server)
            .ok_or_else(|| format!("no server named {server}"))?;
        let client = self
            .current_client(server)
            .ok_or_else(|| format!("server {} is not running", server.spec.name))?;
        let result = tokio::time::timeout(
            server.spec.timeout,
            client.read_resource(ReadResourceRequestParams::new(uri)),
        )
        .await
        .map_err(|_| format!("reading {uri} timed out"))?
        .map_err(|e| format!("reading {uri} failed: {e}"))?;
        result
            .contents
            .into_iter()
            .find_map(|c| match c {
                ResourceContents::TextResourceContents { text, .. } => Some(text),
                _ => None,
            })
            .ok_or_else(|| format!("{uri} has no text"))
    }

    /// Stops every server: closes each session, waits (bounded) for the children to exit, then
    /// ends what is left of each server's process group.
    pub async fn shutdown(self) {
        let mut tasks = tokio::task::JoinSet::new();
        for server in &self.servers {
            let (client, pid) = {
                let mut state = server.state();
                (state.client.take(), state.pid.take())
            };
            let name = server.spec.name.clone();
            tasks.spawn(async move {
                match client.map(Arc::try_unwrap) {
                    // Closing the transport closes stdin, then SIGTERM, then SIGKILL (rmcp).
                    Some(Ok(client)) => {
                        if let Err(e) = client.cancel().await {
                            tracing::warn!(server = %name, "shutdown: {e}");
                        }
                    }
                    // A call still holds it (its future was leaked); dropping cancels the session.
                    Some(Err(shared)) => drop(shared),
                    None => {}
                }
                // Also for a server that died earlier: its own children may outlive it.
                if let Some(pid) = pid {
                    end_group(pid).await;
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    /// Finds the route for an exposed name; also accepts `server__tool` for unprefixed tools.
    fn resolve(&self, name: &str) -> Result<RoutedTool, String> {
        let routes = self.routes.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(routed) = routes.get(name) {
            return Ok(routed.clone());
        }
        if let Some((server, tool)) = name.split_once(PREFIX_SEPARATOR)
            && let Some(routed) = routes
                .values()
                .find(|r| r.route.server == server && r.route.tool == tool)
        {
            return Ok(routed.clone());
        }
        drop(routes);
        let available: Vec<String> = self
            .routed_tools()
            .into_iter()
            .map(|r| r.spec.name)
            .collect();
        let ambiguous: Vec<&String> = available
            .iter()
            .filter(|n| {
                n.split_once(PREFIX_SEPARATOR)
                    .is_some_and(|(_, t)| t == name)
            })
            .collect();
        if !ambiguous.is_empty() {
            let names: Vec<&str> = ambiguous.iter().map(|s| s.as_str()).collect();
            return Err(format!(
                "tool name \"{name}\" is offered by several servers; call one of: {}",
                names.join(", ")
            ));
        }
        if available.is_empty() {
            return Err(format!("unknown tool \"{name}\": no tools are available"));
        }
        Err(format!(
            "unknown tool \"{name}\". Available tools: {}",
            available.join(", ")
        ))
    }

    /// The server's session, restarting it first if it died and has a restart left.
    async fn live_client(&self, server: &Server) -> Result<Arc<Client>, String> {
        if let Some(client) = self.current_client(server) {
            return Ok(client);
        }
        let _guard = server.restart.lock().await;
        // Another call may have restarted it while we waited.
        if let Some(client) = self.current_client(server) {
            return Ok(client);
        }
        let (restarted, status, tail, old_pid) = {
            let state = server.state();
            (
                state.restarted,
                state.status.clone(),
                state.stderr_tail.clone(),
                state.pid,
            )
        };
        if restarted || matches!(status, ServerStatus::Failed { .. }) {
            return Err(format!(
                "server \"{}\" is not running ({status}); it is not restarted again",
                server.spec.name
            ));
        }
        tracing::info!(server = %server.spec.name, "restarting MCP server");
        // The dead server's own children go before a new one starts.
        if let Some(pid) = old_pid {
            end_group(pid).await;
        }
        match start_server(&server.spec, tail).await {
            Ok(live) => {
                let client = live.client.clone();
                {
                    let mut state = server.state();
                    state.client = Some(live.client);
                    state.pid = live.pid;
                    state.tools = live.tools;
                    state.status = ServerStatus::Restarted;
                    state.restarted = true;
                }
                self.rebuild_routes();
                Ok(client)
            }
            Err(failure) => {
                log_failure(&server.spec.name, &failure);
                {
                    let mut state = server.state();
                    state.tools.clear();
                    state.pid = None;
                    state.restarted = true;
                    state.status = failure.into_status();
                }
                self.rebuild_routes();
                Err(format!(
                    "server \"{}\" stopped and could not be restarted",
                    server.spec.name
                ))
            }
        }
    }

    /// The running session, or `None` after noticing (and recording) that it died.
    fn current_client(&self, server: &Server) -> Option<Arc<Client>> {
        let client = server.state().client.clone()?;
        if client.is_transport_closed() {
            self.mark_exited(server, &client, "its connection closed (process exited?)");
            return None;
        }
        Some(client)
    }

    /// Records that `client` (if still current) died; once dead after a restart it is failed.
    fn mark_exited(&self, server: &Server, client: &Arc<Client>, reason: &str) {
        let mut state = server.state();
        let current = state
            .client
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, client));
        if !current {
            return;
        }
        state.client = None;
        let tail = tail_lines(&state.stderr_tail);
        tracing::warn!(
            server = %server.spec.name,
            stderr_tail = %tail.join("\n"),
            "MCP server stopped: {reason}"
        );
        state.status = if state.restarted {
            ServerStatus::Failed {
                reason: format!("stopped again after its restart: {reason}"),
                stderr_tail: tail,
            }
        } else {
            ServerStatus::Exited {
                reason: reason.to_owned(),
            }
        };
        // A server that will not come back loses its routes; an exited one keeps them so the
        // next call reaches it and triggers the restart.
        if matches!(state.status, ServerStatus::Failed { .. }) {
            state.tools.clear();
            drop(state);
            self.rebuild_routes();
        }
    }

    /// Recomputes the exposed names: a tool name offered by several servers becomes
    /// `server__tool` for each of them.
    fn rebuild_routes(&self) {
        let per_server: Vec<(String, bool, Vec<ToolSpec>)> = self
            .servers
            .iter()
            .map(|s| {
                (
                    s.spec.name.clone(),
                    s.spec.read_only,
                    s.state().tools.clone(),
                )
            })
            .collect();
        let mut count: HashMap<&str, usize> = HashMap::new();
        for (_, _, tools) in &per_server {
            for tool in tools {
                *count.entry(tool.name.as_str()).or_default() += 1;
            }
        }
        let mut routes = IndexMap::new();
        for (server, read_only, tools) in &per_server {
            for tool in tools {
                let prefixed = count[tool.name.as_str()] > 1;
                let exposed = if prefixed {
                    format!("{server}{PREFIX_SEPARATOR}{}", tool.name)
                } else {
                    tool.name.clone()
                };
                if routes.contains_key(&exposed) {
                    // e.g. server "a" offering "b__x" and server "a__b" offering "x": keep the first.
                    tracing::warn!(server = %server, tool = %tool.name, "tool name clash on {exposed}; skipped");
                    continue;
                }
                let spec = ToolSpec {
                    name: exposed.clone(),
                    ..tool.clone()
                };
                let route = ToolRoute {
                    server: server.clone(),
                    tool: tool.name.clone(),
                    read_only: *read_only,
                    prefixed,
                };
                routes.insert(exposed, RoutedTool { spec, route });
            }
        }
        *self.routes.write().unwrap_or_else(PoisonError::into_inner) = routes;
    }
}

impl ToolHost for McpManager {
    fn tools(&self) -> Vec<ToolSpec> {
        self.routed_tools().into_iter().map(|r| r.spec).collect()
    }

    fn route(&self, tool: &str) -> Option<ToolRoute> {
        self.resolve(tool).ok().map(|r| r.route)
    }

    fn call(&self, call: &ToolCall) -> impl Future<Output = ToolOutput> + Send {
        McpManager::call(self, call)
    }
}

/// Why a server did not start.
struct StartFailure {
    reason: String,
    stderr_tail: Vec<String>,
}

impl StartFailure {
    fn into_status(self) -> ServerStatus {
        ServerStatus::Failed {
            reason: self.reason,
            stderr_tail: self.stderr_tail,
        }
    }
}

fn log_failure(server: &str, failure: &StartFailure) {
    tracing::warn!(
        server = %server,
        stderr_tail = %failure.stderr_tail.join("\n"),
        "MCP server failed to start: {}",
        failure.reason
    );
}

/// Spawns the child, initializes the session and lists its tools, all within the startup limit.
async fn start_server(
    spec: &ServerSpec,
    tail: Arc<Mutex<VecDeque<String>>>,
) -> Result<Live, StartFailure> {
    let mut command = Command::new(&spec.command);
    // Only what the spec names: a server never sees recall's secrets by accident.
    command
        .args(&spec.args)
        .env_clear()
        .envs(spec.child_env(|name| std::env::var_os(name)))
        // A group of its own (its id is the child's pid): the terminal's Ctrl-C is for recall.
        .process_group(0);
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| StartFailure {
            reason: format!("cannot run {}: {e}", spec.command),
            stderr_tail: Vec::new(),
        })?;
    let pid = transport.id();
    let reader = stderr.map(|stderr| spawn_stderr_logger(spec.name.clone(), stderr, tail.clone()));
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("recall", env!("CARGO_PKG_VERSION")),
    );
    let limit = spec.timeout.max(MIN_STARTUP_TIMEOUT);
    let started = tokio::time::timeout(limit, async {
        let client = info
            .serve(transport)
            .await
            .map_err(|e| format!("initialization failed: {e}"))?;
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("listing tools failed: {e}"))?;
        Ok::<_, String>((client, tools))
    })
    .await;
    let (client, tools) = match started {
        Ok(Ok(started)) => started,
        Ok(Err(reason)) => return Err(start_failure(reason, pid, reader, &tail).await),
        Err(_) => {
            let reason = format!("did not start within {} s", limit.as_secs_f64());
            return Err(start_failure(reason, pid, reader, &tail).await);
        }
    };
    let offered: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    for wanted in spec.allowed_tools.iter().flatten() {
        if !offered.contains(wanted) {
            tracing::warn!(server = %spec.name, "allowedTools names \"{wanted}\", which the server does not offer");
        }
    }
    let tools = tools
        .into_iter()
        .filter(|t| spec.allows(&t.name))
        .map(|t| ToolSpec {
            name: t.name.to_string(),
            description: t
                .description
                .map(|d| d.into_owned())
                .or(t.title)
                .unwrap_or_default(),
            input_schema: Value::Object((*t.input_schema).clone()),
        })
        .collect();
    tracing::info!(server = %spec.name, pid = ?pid, "MCP server started");
    Ok(Live {
        client: Arc::new(client),
        pid,
        tools,
    })
}

/// Ends the failed server's process group, then builds the failure report once the dying
/// child has (briefly) had time to finish its stderr, so the tail holds its last words.
async fn start_failure(
    reason: String,
    pid: Option<u32>,
    reader: Option<JoinHandle<()>>,
    tail: &Mutex<VecDeque<String>>,
) -> StartFailure {
    // Before the drain: a process left in the group may hold the stderr pipe open.
    if let Some(pid) = pid {
        end_group(pid).await;
    }
    if let Some(reader) = reader {
        let _ = tokio::time::timeout(STDERR_DRAIN, reader).await;
    }
    StartFailure {
        reason,
        stderr_tail: tail_lines(tail),
    }
}

/// Ends every process still in the process group `pgid` (a server and what it started):
/// SIGTERM, up to [`GROUP_GRACE`] for them to exit, then SIGKILL. Returns at once when the
/// group is already empty.
async fn end_group(pgid: u32) {
    let Ok(raw) = i32::try_from(pgid) else { return };
    let group = Pid::from_raw(raw);
    // ESRCH: no process is left in the group.
    if killpg(group, Signal::SIGTERM).is_err() {
        return;
    }
    let deadline = Instant::now() + GROUP_GRACE;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if killpg(group, None).is_err() {
            return;
        }
    }
    // Also reached when only zombies are left (they count as members until reaped).
    if killpg(group, Signal::SIGKILL).is_ok() {
        tracing::debug!(pgid, "processes of an MCP server ignored SIGTERM; killed");
    }
}

/// Logs each stderr line of a server and keeps the last few for failure reports.
fn spawn_stderr_logger(
    server: String,
    stderr: ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    // Servers may write anything; never fail on non-UTF-8.
                    let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
                    tracing::debug!(target: "recall::mcp::stderr", server = %server, "{line}");
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    if tail.len() == STDERR_TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            }
        }
    })
}

fn tail_lines(tail: &Mutex<VecDeque<String>>) -> Vec<String> {
    tail.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .cloned()
        .collect()
}

/// True for errors meaning the session is gone rather than that the call failed.
fn is_dead(error: &ServiceError) -> bool {
    matches!(
        error,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

fn error_output(text: String) -> ToolOutput {
    ToolOutput {
        text,
        structured: None,
        is_error: true,
    }
}

/// Text parts joined by newlines; other parts summarized in one line each, since the model reads
/// text only. With no content at all, the structured result stands in as JSON text.
fn convert_result(result: CallToolResult) -> ToolOutput {
    let parts: Vec<String> = result.content.iter().map(summarize_block).collect();
    let mut text = parts.join("\n");
    if text.is_empty()
        && let Some(structured) = &result.structured_content
    {
        text = structured.to_string();
    }
    ToolOutput {
        text,
        structured: result.structured_content,
        is_error: result.is_error.unwrap_or(false),
    }
}

fn summarize_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!(
                "[image: {}, {} bytes base64]",
                image.mime_type,
                image.data.len()
            )
        }
        ContentBlock::Audio(audio) => {
            format!(
                "[audio: {}, {} bytes base64]",
                audio.mime_type,
                audio.data.len()
            )
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[binary resource {uri}: {}, {} bytes base64]",
                mime_type.as_deref().unwrap_or("unknown type"),
                blob.len()
            ),
            _ => "[embedded resource of a kind recall does not show]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => {
            let title = link.title.as_deref().unwrap_or(&link.name);
            match &link.description {
                Some(d) => format!("[resource link: {title} <{}>: {d}]", link.uri),
                None => format!("[resource link: {title} <{}>]", link.uri),
            }
        }
        // Content kinds newer than this code: say so rather than drop them silently.
        _ => "[content of a kind recall does not show]".to_owned(),
    }
}
