//! One function per command: each takes the parsed flags, does its job, and writes the result
//! to stdout (the answer) or stderr (progress, logs).

use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::agent::{self, Agent, AgentOptions, ApproveAll, Approver, RefuseAll, Turn};
use crate::cli::{AgentArgs, GlobalArgs, ModelArgs, PromptCacheArgs, ServerArgs};
use crate::config;
use crate::engine::catalog::{self, CatalogError};
use crate::engine::llama::{BenchOptions, Engine, LoadOptions};
use crate::engine::llama::{ModelInfo, Session, SessionOptions};
use crate::engine::prompt_cache::PromptCache;
use crate::engine::{CancellationToken, Cancelled, GenerationStats};
use crate::mcp::{McpManager, ServerStatus};
use crate::prompt::{ChatTemplate, Message};
use crate::sources::Citation;
use crate::tool::ToolCall;
use crate::tool::{ToolHost, ToolRoute};

/// Resolves `--model` to a file (downloading if needed) and loads it.
pub fn load_model(args: &ModelArgs) -> Result<Engine> {
    let progress = std::io::stderr().is_terminal();
    let path = match (
        catalog::resolve_model(&args.model, progress),
        &args.fallback_model,
    ) {
        (
            Err(err @ (CatalogError::Download { .. } | CatalogError::NotCached { .. })),
            Some(fallback),
        ) => {
            eprintln!("recall: {err}\nrecall: using {fallback} instead");
            catalog::resolve_model(fallback, progress)?
        }
        (result, _) => result?,
    };
    let engine = Engine::load(
        &path,
        &LoadOptions {
            gpu_layers: args.gpu_layers,
            progress,
        },
    )?;
    tracing::info!(
        model = %engine.info().name,
        path = %path.display(),
        "model loaded"
    );
    Ok(engine)
}

/// [`load_model`] on a thread of its own, so that a Ctrl-C (`cancel`) need not wait for a large
/// model to finish loading: the error is then [`Cancelled`] at once and the load is abandoned
/// (recall is about to exit; the thread ends with the process).
fn load_model_until(args: &ModelArgs, cancel: &CancellationToken) -> Result<Engine> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let args = args.clone();
    std::thread::Builder::new()
        .name("model-load".into())
        .spawn(move || {
            // The receiver is gone only when the load was abandoned.
            let _ = sender.send(load_model(&args));
        })
        .context("cannot start the model-loading thread")?;
    loop {
        match receiver.recv_timeout(CANCEL_POLL) {
            Ok(loaded) => return loaded,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if cancel.is_cancelled() => {
                return Err(Cancelled.into());
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                anyhow::bail!("the model-loading thread ended without a result")
            }
        }
    }
}

/// How often blocking waits (a model load, a yes/no answer) look at the Ctrl-C token.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// `recall bench`: pp/tg tokens per second, mean ± sd, like `llama-bench`.
pub fn bench(
    global: &GlobalArgs,
    args: &ModelArgs,
    n_prompt: usize,
    n_gen: usize,
    repetitions: usize,
) -> Result<()> {
    let engine = load_model(args)?;
    let report = engine.bench(&BenchOptions {
        n_prompt,
        n_gen,
        repetitions: repetitions.max(1),
        threads: args.threads,
    })?;
    let mut out = std::io::stdout().lock();
    if global.json {
        let json = serde_json::json!({
            "model": engine.info().name,
            "threads": report.threads,
            "pp": {"tokens": report.pp.tokens, "tok_s": report.pp.mean, "sd": report.pp.sd},
            "tg": {"tokens": report.tg.tokens, "tok_s": report.tg.mean, "sd": report.tg.sd},
        });
        writeln!(out, "{json}")?;
        return Ok(());
    }
    let info = engine.info();
    writeln!(
        out,
        "| model | size | params | threads | test | t/s |\n| --- | ---: | ---: | ---: | ---: | ---: |"
    )?;
    for (name, t) in [("pp", &report.pp), ("tg", &report.tg)] {
        if t.tokens == 0 {
            continue;
        }
        writeln!(
            out,
            "| {} | {:.2} MiB | {:.2} M | {} | {}{} | {:.2} ± {:.2} |",
            info.name,
            info.size_bytes as f64 / (1024.0 * 1024.0),
            info.n_params as f64 / 1e6,
            report.threads,
            name,
            t.tokens,
            t.mean,
            t.sd
        )?;
    }
    Ok(())
}

/// `recall models`: the catalog and where each model would come from.
pub fn models() -> Result<()> {
    let mut out = std::io::stdout().lock();
    for (alias, entry) in catalog::catalog() {
        let local = catalog::local_model_dirs()
            .into_iter()
            .map(|d| d.join(&entry.file))
            .find(|p| p.is_file());
        let cached = hf_cached(&entry.repo, &entry.file);
        let place = match (local, cached) {
            (Some(p), _) => format!("local: {}", p.display()),
            (None, Some(_)) => "in the Hugging Face cache".to_string(),
            (None, None) => format!("downloads from hf:{}/{}", entry.repo, entry.file),
        };
        let default = if alias == catalog::DEFAULT_MODEL {
            " (default)"
        } else {
            ""
        };
        writeln!(
            out,
            "{alias}{default}\n    {}\n    {place}",
            entry.description
        )?;
    }
    Ok(())
}

fn hf_cached(repo: &str, file: &str) -> Option<PathBuf> {
    hf_hub::Cache::from_env().model(repo.to_string()).get(file)
}

/// How long the bundled server's searches wait for its first embedding pass: recall's first
/// question is asked right after the server starts, and a small or cached vault is embedded
/// well within this; a large vault's first pass is not waited for past it.
const VAULT_EMBEDDING_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// `recall mcp-vault-server`: the bundled vault server, as a child process of this binary.
pub fn mcp_vault_server(vault: PathBuf, embedding_model: Option<PathBuf>) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(obsidian_kb::serve_stdio(obsidian_kb::ServeOptions {
        embedding_model,
        embedding_wait: VAULT_EMBEDDING_WAIT,
        ..obsidian_kb::ServeOptions::new(vault)
    }))?;
    Ok(())
}

/// The bundled vault server's embedding model: the one asked for, else the default file in a
/// local models folder when there is one, else none (search by words alone).
fn embedding_model(args: &ServerArgs) -> Option<PathBuf> {
    if args.no_embeddings {
        return None;
    }
    args.embedding_model.clone().or_else(|| {
        crate::engine::catalog::local_model_dirs()
            .into_iter()
            .map(|dir| dir.join(crate::engine::catalog::DEFAULT_EMBEDDING_MODEL_FILE))
            .find(|p| p.is_file())
    })
}

/// Starts every configured tool server (concurrently) on a fresh runtime.
pub fn start_servers(args: &ServerArgs) -> Result<(tokio::runtime::Runtime, McpManager)> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let manager = start_servers_on(&runtime, args)?;
    Ok((runtime, manager))
}

/// Starts every configured tool server (concurrently) on `runtime`, reporting those that fail.
fn start_servers_on(runtime: &tokio::runtime::Runtime, args: &ServerArgs) -> Result<McpManager> {
    let config = config::load(
        args.config.as_deref(),
        args.vault.as_deref(),
        embedding_model(args).as_deref(),
    )?;
    for warning in &config.warnings {
        eprintln!("recall: {warning}");
    }
    let manager = runtime.block_on(McpManager::start(&config.servers));
    for server in manager.servers() {
        if let ServerStatus::Failed {
            reason,
            stderr_tail,
        } = &server.status
        {
            eprintln!("recall: server {} failed to start: {reason}", server.name);
            for line in stderr_tail {
                eprintln!("    {line}");
            }
        }
    }
    Ok(manager)
}

/// `recall tools`: servers, their status and tools.
pub fn tools(global: &GlobalArgs, args: &ServerArgs) -> Result<()> {
    let (runtime, manager) = start_servers(args)?;
    let routed = manager.routed_tools();
    let mut out = std::io::stdout().lock();
    if global.json {
        let servers: Vec<Value> = manager
            .servers()
            .iter()
            .map(|s| {
                json!({"name": s.name, "status": s.status.to_string(), "read_only": s.read_only,
                       "tools": s.tools})
            })
            .collect();
        let tools: Vec<Value> = routed
            .iter()
            .map(|t| {
                json!({"name": t.spec.name, "server": t.route.server, "tool": t.route.tool,
                       "prefixed": t.route.prefixed, "description": t.spec.description,
                       "input_schema": t.spec.input_schema})
            })
            .collect();
        writeln!(out, "{}", json!({"servers": servers, "tools": tools}))?;
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

/// `recall call TOOL 'JSON'`: one call, its result printed.
pub fn call(global: &GlobalArgs, args: &ServerArgs, tool: &str, arguments: &str) -> Result<()> {
    let arguments: Value = serde_json::from_str(arguments)
        .with_context(|| format!("arguments must be a JSON object, got {arguments:?}"))?;
    let Value::Object(arguments) = arguments else {
        anyhow::bail!("arguments must be a JSON object like '{{\"query\": \"bread\"}}'");
    };
    let (runtime, manager) = start_servers(args)?;
    let call = ToolCall {
        name: tool.to_string(),
        arguments,
    };
    // The person typed this call: approval is for calls the model chooses, so it just runs.
    let output = runtime.block_on(manager.call(&call));
    runtime.block_on(manager.shutdown());
    let mut out = std::io::stdout().lock();
    if global.json {
        writeln!(
            out,
            "{}",
            json!({"text": output.text, "structured": output.structured, "is_error": output.is_error})
        )?;
    } else {
        writeln!(out, "{}", output.text)?;
    }
    if output.is_error {
        anyhow::bail!("{tool} returned an error");
    }
    Ok(())
}

/// `recall render`: the decision-step prompt, exactly as it would be tokenized (Llama 3 layout).
pub fn render(args: &ServerArgs, question: &str) -> Result<()> {
    let (runtime, manager) = start_servers(args)?;
    let tools = manager.tools();
    runtime.block_on(manager.shutdown());
    let conversation = [
        Message::system(agent::SYSTEM_PROMPT.trim()),
        Message::user(question),
    ];
    let prompt = ChatTemplate::llama3().decision(&conversation, &tools)?;
    write!(std::io::stdout().lock(), "{}", prompt.text)?;
    Ok(())
}

/// Ctrl-C as cancellation instead of the end of the process: it cancels the current token,
/// which every piece of work (an `ask`, a chat turn, a study run) checks. A chat takes a fresh
/// token per turn ([`Interrupt::renew`]), so a Ctrl-C stops one turn only.
#[derive(Clone, Default)]
pub struct Interrupt {
    current: Arc<Mutex<CancellationToken>>,
}

impl Interrupt {
    /// Catches Ctrl-C (SIGINT) on `runtime` from now on.
    pub fn install(runtime: &tokio::runtime::Runtime) -> Interrupt {
        let interrupt = Interrupt::default();
        let current = interrupt.current.clone();
        runtime.spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                current
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .cancel();
            }
        });
        interrupt
    }

    /// The current token: cancelled once Ctrl-C was pressed since the last renewal.
    pub fn token(&self) -> CancellationToken {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the current token with a fresh one (a Ctrl-C pressed before does not touch it)
    /// and returns it.
    pub fn renew(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = token.clone();
        token
    }
}

/// What every model-using command starts with: the tool servers, the model, its prompt layout,
/// and Ctrl-C caught as cancellation (it ends the current work, not the process).
pub struct Workbench {
    /// Runs the MCP clients; the agent blocks on it for tool calls.
    pub runtime: tokio::runtime::Runtime,
    /// The tool servers.
    pub manager: McpManager,
    /// The loaded model.
    pub engine: Engine,
    /// How prompts are laid out for it.
    pub template: ChatTemplate,
    /// Ctrl-C, caught from the moment the servers run.
    pub interrupt: Interrupt,
}

impl Workbench {
    /// Starts the servers and loads the model.
    pub fn open(
        global: &GlobalArgs,
        model_args: &ModelArgs,
        server_args: &ServerArgs,
    ) -> Result<Workbench> {
        Self::open_after(global, model_args, server_args, |_, _| Ok(())).map(|(bench, ())| bench)
    }

    /// Starts the servers, runs `first` on them, and only when it succeeds loads the model: a
    /// bad target should fail before the user waits for a model to load. Ctrl-C is caught
    /// before the first server starts: pressed at any point here, the servers stop and the
    /// error is [`Cancelled`] (a model still loading is left to the process's exit).
    pub fn open_after<T>(
        global: &GlobalArgs,
        model_args: &ModelArgs,
        server_args: &ServerArgs,
        first: impl FnOnce(&tokio::runtime::Runtime, &McpManager) -> Result<T>,
    ) -> Result<(Workbench, T)> {
        let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
        // From here on Ctrl-C must not kill recall: the servers would be left without their
        // shutdown (they run in process groups of their own, so the terminal spares them).
        let interrupt = Interrupt::install(&runtime);
        let manager = start_servers_on(&runtime, server_args)?;
        let token = interrupt.token();
        let loaded = if token.is_cancelled() {
            Err(Cancelled.into())
        } else {
            first(&runtime, &manager)
                .and_then(|found| Ok((found, load_model_until(model_args, &token)?)))
        };
        let (found, engine) = match loaded {
            Ok(loaded) => loaded,
            Err(err) => {
                runtime.block_on(manager.shutdown());
                return Err(err);
            }
        };
        let info = engine.info();
        let template = ChatTemplate::new(
            info.chat_template.as_deref(),
            &info.bos_text,
            &info.eos_text,
        )?;
        tracing::info!("prompt family: {}", template.family().name());
        if global.verbose {
            eprintln!(
                "recall: model {} ({}), prompt family {}",
                info.name,
                info.path.display(),
                template.family().name()
            );
        }
        let bench = Workbench {
            runtime,
            manager,
            engine,
            template,
            interrupt,
        };
        Ok((bench, found))
    }

    /// A conversation's context on the model.
    pub fn session(&self, model_args: &ModelArgs) -> Result<Session<'_>> {
        Ok(self.engine.session(&SessionOptions {
            n_ctx: model_args.ctx,
            threads: model_args.threads,
        })?)
    }

    /// An agent on this bench's tools and prompt layout: decisions on `session`, answers on
    /// `answer_session` (two contexts of the one model).
    pub fn agent<'a, 'e>(
        &'a self,
        session: &'a mut Session<'e>,
        answer_session: &'a mut Session<'e>,
        approver: &'a mut dyn Approver,
        options: AgentOptions,
    ) -> Agent<'a, Session<'e>, McpManager> {
        Agent::new(
            session,
            &self.manager,
            &self.runtime,
            &self.template,
            approver,
            options,
        )
        .with_answer_model(answer_session)
    }

    /// The loop settings the flags ask for, cancelled by the current Ctrl-C token.
    pub fn agent_options(&self, model_args: &ModelArgs, agent_args: &AgentArgs) -> AgentOptions {
        AgentOptions {
            max_steps: agent_args.max_steps,
            answer_tokens: agent_args.max_tokens,
            grammar: !agent_args.no_grammar,
            tool_first: !agent_args.tools_optional,
            sampling: model_args.sampling(),
            cancel: self.interrupt.token(),
        }
    }

    /// Stops the servers.
    pub fn close(self) {
        self.runtime.block_on(self.manager.shutdown());
    }
}

/// Writes streamed text to stdout; stops generation when nobody reads it any more.
pub fn stream_to_stdout(enabled: bool) -> impl FnMut(&str) -> ControlFlow<()> {
    let mut stdout = std::io::stdout();
    move |text| {
        if enabled
            && stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .is_err()
        {
            // The reader went away (a closed pipe): nobody is left to read the rest.
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

/// `recall ask`: one question, the answer streamed, then the notes it used.
///
/// Ctrl-C at any point (prompt, decision, tool calls, the answer streaming) stops the run: the
/// error is [`Cancelled`] (`recall: stopped`, exit 130), a streamed part of the answer is ended
/// with a newline, and `--json` prints nothing, since there is no finished turn to report.
pub fn ask(
    global: &GlobalArgs,
    model_args: &ModelArgs,
    server_args: &ServerArgs,
    agent_args: &AgentArgs,
    cache_args: &PromptCacheArgs,
    question: &str,
) -> Result<()> {
    let bench = Workbench::open(global, model_args, server_args)?;
    let mut session = bench.session(model_args)?;
    let mut answer_session = bench.session(model_args)?;
    if let Some(cache) = prompt_cache(cache_args) {
        // Decision and answer prompts part at the system message: each keeps its own prefix.
        session.use_prompt_cache(cache.clone());
        answer_session.use_prompt_cache(cache);
    }
    let mut approver = approver(server_args.yes, &bench.interrupt);
    let mut agent = bench.agent(
        &mut session,
        &mut answer_session,
        approver.as_mut(),
        bench.agent_options(model_args, agent_args),
    );
    let mut conversation = Vec::new();
    let mut streamed = false;
    let mut sink = stream_to_stdout(!global.json);
    let asked = agent.ask(&mut conversation, question, &mut |text| {
        streamed = true;
        sink(text)
    });
    drop((session, answer_session));
    let turn = match asked {
        Ok(turn) => turn,
        Err(err) => {
            if streamed && !global.json {
                // The cut answer's line ends before the error is printed.
                let _ = writeln!(std::io::stdout());
            }
            bench.close();
            return Err(err.into());
        }
    };

    let report = turn_json(&turn, bench.engine.info());
    if let Some(path) = &global.transcript {
        write_transcript(path, &conversation, &report)?;
    }
    bench.close();
    let mut out = std::io::stdout().lock();
    if global.json {
        writeln!(out, "{report}")?;
    } else {
        writeln!(out)?;
        print_citations(&mut out, &turn.citations)?;
    }
    Ok(())
}

/// The prompt cache the flags ask for: none with `--no-prompt-cache` (or when the platform has
/// no cache folder), else `--prompt-cache-dir` or the platform's.
pub fn prompt_cache(args: &PromptCacheArgs) -> Option<PromptCache> {
    if args.no_prompt_cache {
        return None;
    }
    let dir = args
        .prompt_cache_dir
        .clone()
        .or_else(PromptCache::default_dir);
    if dir.is_none() {
        tracing::debug!("no platform cache folder (HOME unset?): no prompt cache");
    }
    dir.map(PromptCache::new)
}

/// The sources after an answer: the ones it cites, or, when it cites none, the ones it was
/// given, said as such.
pub fn print_citations(out: &mut impl Write, citations: &[Citation]) -> std::io::Result<()> {
    let Some(first) = citations.first() else {
        return Ok(());
    };
    if first.cited {
        writeln!(out, "\nSources:")?;
    } else {
        writeln!(out, "\nSources given (the answer cites none of them):")?;
    }
    for c in citations {
        writeln!(out, "[{}] {}\n    {}", c.number, c.label(), c.link)?;
    }
    Ok(())
}

/// Approval of calls to servers not marked read-only: `--yes`, a terminal prompt, or refusal.
/// A Ctrl-C at the terminal prompt refuses the call and stops the turn (`interrupt`).
pub fn approver(yes: bool, interrupt: &Interrupt) -> Box<dyn Approver> {
    if yes {
        Box::new(ApproveAll)
    } else if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Box::new(TerminalApprover {
            always: Default::default(),
            interrupt: interrupt.clone(),
        })
    } else {
        Box::new(RefuseAll)
    }
}

/// Asks on the terminal: y (once), n, or always (this tool, for the rest of the run).
struct TerminalApprover {
    always: std::collections::HashSet<String>,
    interrupt: Interrupt,
}

impl Approver for TerminalApprover {
    fn approve(&mut self, call: &ToolCall, route: &ToolRoute) -> bool {
        if self.always.contains(&call.name) {
            return true;
        }
        let question = format!(
            "Allow {} on server {} with {}? [y/n/always]",
            call.name,
            route.server,
            Value::Object(call.arguments.clone())
        );
        let answer = ask_line(&question, &mut std::io::stdin(), &self.interrupt.token());
        match answer.as_deref() {
            Some("y" | "yes") => true,
            Some("a" | "always") => {
                self.always.insert(call.name.clone());
                true
            }
            _ => false,
        }
    }
}

/// Asks `question` on stderr and reads the answer from the terminal (`input`); `None` on Ctrl-C
/// (`cancel`), end of input or a read error. The terminal is in line mode here, so Ctrl-C is a
/// signal that cancels the token while the line is still unfinished: `input` is read only once
/// poll(2) says a line is there, and the token is looked at in between.
fn ask_line(
    question: &str,
    input: &mut (impl std::io::Read + AsFd),
    cancel: &CancellationToken,
) -> Option<String> {
    use nix::poll::{PollFd, PollFlags, poll};

    eprint!("{question} ");
    loop {
        if cancel.is_cancelled() {
            eprintln!();
            return None;
        }
        let mut fds = [PollFd::new(input.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, CANCEL_POLL.as_millis() as u16) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => break,
            Err(_) => return None,
        }
    }
    // Byte by byte up to the newline: a reply is a word, and nothing after it is taken from
    // whoever reads the terminal next (a chat's line editor).
    let mut line = Vec::new();
    let mut byte = [0u8];
    loop {
        match input.read(&mut byte) {
            Ok(0) if line.is_empty() => return None,
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(String::from_utf8_lossy(&line).trim().to_lowercase())
}

/// The `--json` report of one turn.
pub fn turn_json(turn: &Turn, info: &ModelInfo) -> Value {
    let steps: Vec<Value> = turn
        .steps
        .iter()
        .map(|s| {
            let calls: Vec<Value> = s
                .calls
                .iter()
                .map(|c| {
                    json!({"name": c.name, "arguments": c.arguments, "server": c.server, "ok": c.ok,
                           "result_chars": c.result_chars, "notes": c.notes,
                           "ms": c.elapsed.as_millis() as u64})
                })
                .collect();
            json!({
                "kind": s.kind,
                "output": s.output,
                "calls": calls,
                "timings": timings_json(&s.stats),
            })
        })
        .collect();
    json!({
        "answer": turn.answer,
        "fallback": turn.fallback,
        "citations": turn.citations,
        "steps": steps,
        "model": info.name,
    })
}

/// One generation's token counts and times, as `--json` and `--transcript` print them.
pub fn timings_json(stats: &GenerationStats) -> Value {
    json!({
        "prompt_tokens": stats.prompt_tokens,
        "prompt_tokens_reused": stats.reused_tokens,
        "prompt_tokens_restored": stats.restored_tokens,
        "prompt_tokens_evaluated": stats.evaluated_tokens,
        "generated_tokens": stats.generated_tokens,
        "prompt_ms": stats.prompt_time.as_millis() as u64,
        "generation_ms": stats.generation_time.as_millis() as u64,
    })
}

/// Appends one JSON line (messages and report) to the `--transcript` file.
pub fn write_transcript(
    path: &std::path::Path,
    conversation: &[Message],
    report: &Value,
) -> Result<()> {
    let messages: Vec<Value> = conversation
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
        .collect();
    append_transcript(path, &json!({"messages": messages, "run": report}))
}

/// Appends one JSON line to the `--transcript` file.
pub fn append_transcript(path: &std::path::Path, entry: &Value) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot write transcript {}", path.display()))?;
    writeln!(file, "{entry}")
        .with_context(|| format!("cannot write transcript {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The read end of a pipe, as a terminal's stdin would be, and its write end.
    fn pipe() -> (std::io::PipeReader, std::io::PipeWriter) {
        std::io::pipe().expect("a pipe")
    }

    #[test]
    fn a_yes_no_question_reads_the_typed_line() {
        let (mut input, mut keyboard) = pipe();
        keyboard.write_all(b"  Always\n").unwrap();
        let answer = ask_line("Allow?", &mut input, &CancellationToken::new());
        assert_eq!(answer.as_deref(), Some("always"));
    }

    #[test]
    fn ctrl_c_at_a_yes_no_question_needs_no_enter() {
        let (mut input, _keyboard) = pipe();
        let cancel = CancellationToken::new();
        let ctrl_c = cancel.clone();
        // Nothing is ever typed: before the fix the read waited for a line forever.
        let presser = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            ctrl_c.cancel();
        });
        assert_eq!(ask_line("Allow?", &mut input, &cancel), None);
        presser.join().unwrap();
    }

    #[test]
    fn a_closed_terminal_refuses() {
        let (mut input, keyboard) = pipe();
        drop(keyboard);
        assert_eq!(
            ask_line("Allow?", &mut input, &CancellationToken::new()),
            None
        );
    }
}
