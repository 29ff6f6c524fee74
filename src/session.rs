//! What every model-using command (`ask`, `chat`, `summarize`, `quiz`) runs on: the
//! [`Workbench`] (tool servers, model, prompt layout), [`Interrupt`] (Ctrl-C as cancellation),
//! approval of the calls the model chooses, and the streamed answer and its sources on stdout.
//!
//! It lives beside `commands/`, not inside it: `chat.rs` and `study/` are commands of their own
//! and share this without reaching into another command's module.

use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::agent::{
    Agent, AgentOptions, AnswerCheck, ApproveAll, Approver, QuestionKind, RefuseAll,
};
use crate::cli::{
    AgentArgs, GlobalArgs, Grounding, ModelArgs, PromptCacheArgs, QuestionKindArg, RunArgs,
    ServerArgs,
};
use crate::config::{self, EngineSpec, ServersConfig};
use crate::embedding;
use crate::engine::catalog::{self, CatalogError};
use crate::engine::llama::{Engine, LoadOptions, SessionOptions};
use crate::engine::prompt_cache::PromptCache;
use crate::engine::remote::{self, ServerOptions};
use crate::engine::replay::Replay;
use crate::engine::{CancellationToken, Cancelled, Model, Session};
use crate::mcp::{McpManager, ServerStatus};
use crate::prompt::ChatTemplate;
use crate::sources::Citation;
use crate::tool::{ToolCall, ToolRoute};

/// The model the flags ask for: a llama-server when `--engine` (else the config file's
/// `engine`) names one, else `--model` loaded in-process.
pub fn load_model(args: &ModelArgs, configured: Option<&EngineSpec>) -> Result<Model> {
    let env_key = || {
        std::env::var("RECALL_ENGINE_API_KEY")
            .ok()
            .filter(|key| !key.is_empty())
    };
    let engine = match (&args.engine, configured) {
        (Some(url), _) => Some(EngineSpec {
            url: url.clone(),
            api_key: env_key(),
        }),
        (None, Some(spec)) => Some(EngineSpec {
            url: spec.url.clone(),
            api_key: spec.api_key.clone().or_else(env_key),
        }),
        (None, None) => None,
    };
    match engine {
        Some(engine) => connect_engine(engine, args).map(Model::Remote),
        None => load_local_model(args).map(Model::Local),
    }
}

/// Connects to the llama-server `engine` names. Its API key comes from the environment or the
/// config file, never a flag: it shows in no process list or shell history.
fn connect_engine(engine: EngineSpec, args: &ModelArgs) -> Result<remote::Server> {
    let server = remote::Server::connect(&ServerOptions {
        url: engine.url,
        api_key: engine.api_key,
        idle_timeout: std::time::Duration::from_secs(args.engine_timeout.max(1)),
    })?;
    tracing::info!(model = %server.info().name, url = %server.url(), "engine connected");
    Ok(server)
}

/// Resolves `--model` to a file (downloading if needed) and loads it.
fn load_local_model(args: &ModelArgs) -> Result<Engine> {
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
fn load_model_until(
    args: &ModelArgs,
    configured: Option<EngineSpec>,
    cancel: &CancellationToken,
) -> Result<Model> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let args = args.clone();
    std::thread::Builder::new()
        .name("model-load".into())
        .spawn(move || {
            // The receiver is gone only when the load was abandoned.
            let _ = sender.send(load_model(&args, configured.as_ref()));
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
                bail!("the model-loading thread ended without a result")
            }
        }
    }
}

/// How often blocking waits (a model load, a yes/no answer) look at the Ctrl-C token.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// The bundled vault server's embedding model: the one asked for (fetched from the hub if
/// need be), else the best file in a local models folder for the language of the vault's
/// notes (multilingual for a vault in a language other than English that Recall tells), else
/// none (search by words alone). Such a vault without the multilingual model gets a line
/// saying how to fetch it.
fn embedding_model(args: &ServerArgs) -> Result<Option<PathBuf>, CatalogError> {
    if args.no_embeddings {
        return Ok(None);
    }
    if let Some(name) = &args.embedding_model {
        let progress = std::io::stderr().is_terminal();
        return catalog::resolve_embedding_model(name, progress).map(Some);
    }
    let language = args
        .vault
        .as_deref()
        .and_then(|vault| obsidian_kb::Vault::open(vault).ok())
        .and_then(|vault| vault.language());
    let found = obsidian_kb::models::find_local(language);
    let best = obsidian_kb::models::local_files(language)[0];
    if let Some(language) = language
        && found.as_deref().is_none_or(|p| !p.ends_with(best))
    {
        eprintln!(
            "recall: this vault is written in {}; scripts/fetch-multilingual-embedding-model \
             fetches the model that searches it best by meaning",
            language.name()
        );
    }
    Ok(found)
}

/// Starts every configured tool server (concurrently) on a fresh runtime.
pub fn start_servers(args: &ServerArgs) -> Result<(tokio::runtime::Runtime, McpManager)> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let (manager, _) = start_servers_on(&runtime, args)?;
    Ok((runtime, manager))
}

/// Starts every configured tool server (concurrently) on `runtime`, reporting those that fail;
/// also returns the configuration they came from (its source, and the engine it names).
pub fn start_servers_on(
    runtime: &tokio::runtime::Runtime,
    args: &ServerArgs,
) -> Result<(McpManager, ServersConfig)> {
    let config = config::load(
        args.config.as_deref(),
        args.vault.as_deref(),
        embedding_model(args)?.as_deref(),
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
    Ok((manager, config))
}

/// With servers configured and none of them started, a model command has nothing to answer
/// from: an error (after each server's own reason, printed above), unless the person asked
/// for tools to be optional.
fn require_a_server(manager: &McpManager, tools_optional: bool) -> Result<()> {
    let servers = manager.servers();
    let none_started = !servers.is_empty()
        && servers
            .iter()
            .all(|s| matches!(s.status, ServerStatus::Failed { .. }));
    if none_started && !tools_optional {
        bail!(
            "no tool server started, so there is nothing to answer from (see above); \
             mend the server, or pass --tools-optional to use the model alone"
        );
    }
    Ok(())
}

/// How long a run stopped by SIGHUP or SIGTERM may take to shut its servers down.
const HANGUP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Ctrl-C as cancellation instead of the end of the process: it cancels the current token,
/// which every piece of work (an `ask`, a chat turn, a study run) checks. A chat takes a fresh
/// token per turn ([`Interrupt::renew`]), so a Ctrl-C stops one turn only.
#[derive(Clone, Default)]
pub struct Interrupt {
    current: Arc<Mutex<CancellationToken>>,
}

impl Interrupt {
    /// Catches Ctrl-C (SIGINT) on `runtime` from now on, and on Unix the terminal closing
    /// (SIGHUP) and a polite kill (SIGTERM) too: each stops the work the same way, so the
    /// servers are shut down rather than left running without their parent. After either of
    /// the latter the process ends within [`HANGUP_GRACE`] even where nothing looks at the
    /// token (a chat waiting for its next line); a server left then sees its input close.
    pub fn install(runtime: &tokio::runtime::Runtime) -> Interrupt {
        let interrupt = Interrupt::default();
        let current = interrupt.current.clone();
        let cancel = move || {
            current
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .cancel()
        };
        #[cfg(unix)]
        for kind in [
            tokio::signal::unix::SignalKind::hangup(),
            tokio::signal::unix::SignalKind::terminate(),
        ] {
            let Ok(mut signal) = runtime.block_on(async { tokio::signal::unix::signal(kind) })
            else {
                continue;
            };
            let cancel = cancel.clone();
            runtime.spawn(async move {
                if signal.recv().await.is_some() {
                    cancel();
                    tokio::time::sleep(HANGUP_GRACE).await;
                    eprintln!("recall: stopped");
                    std::process::exit(128 + kind.as_raw_value());
                }
            });
        }
        runtime.spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                cancel();
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
    /// The model: loaded in-process, or on a llama-server.
    pub model: Model,
    /// How prompts are laid out for it.
    pub template: ChatTemplate,
    /// Ctrl-C, caught from the moment the servers run.
    pub interrupt: Interrupt,
    /// Context size and threads of each session.
    session_options: SessionOptions,
    /// Where sessions keep their prompts' fixed parts across runs, unless `--no-prompt-cache`.
    prompt_cache: Option<PromptCache>,
    /// A bench's records of the model's replies (`--replay`).
    replay: Option<PathBuf>,
}

impl Workbench {
    /// Starts the servers and loads the model.
    pub fn open(global: &GlobalArgs, run: &RunArgs) -> Result<Workbench> {
        Self::open_after(global, run, |_, _| Ok(())).map(|(bench, ())| bench)
    }

    /// Starts the servers, runs `first` on them, and only when it succeeds loads the model: a
    /// bad target should fail before the user waits for a model to load. Ctrl-C is caught
    /// before the first server starts: pressed at any point here, the servers stop and the
    /// error is [`Cancelled`] (a model still loading is left to the process's exit).
    pub fn open_after<T>(
        global: &GlobalArgs,
        run: &RunArgs,
        first: impl FnOnce(&tokio::runtime::Runtime, &McpManager) -> Result<T>,
    ) -> Result<(Workbench, T)> {
        let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
        // From here on Ctrl-C must not kill recall: the servers would be left without their
        // shutdown (they run in process groups of their own, so the terminal spares them).
        let interrupt = Interrupt::install(&runtime);
        let (manager, config) = start_servers_on(&runtime, &run.servers)?;
        let token = interrupt.token();
        let loaded = if token.is_cancelled() {
            Err(Cancelled.into())
        } else {
            require_a_server(&manager, run.agent.tools_optional)
                .and_then(|()| first(&runtime, &manager))
                .and_then(|found| Ok((found, load_model_until(&run.model, config.engine, &token)?)))
        };
        let (found, model) = match loaded {
            Ok(loaded) => loaded,
            Err(err) => {
                runtime.block_on(manager.shutdown());
                return Err(err);
            }
        };
        // The first answer should be as good as the steady state's: embed the rest of the
        // vault first when it is short, else say that search is by words for now.
        let bound = Some(std::time::Duration::from_secs(run.servers.embedding_wait));
        match embedding::prepare(&runtime, &manager, &token, bound) {
            Ok(readiness) => embedding::say(&readiness),
            Err(cancelled) => {
                runtime.block_on(manager.shutdown());
                return Err(cancelled.into());
            }
        }
        let info = model.info();
        let template = ChatTemplate::new(
            info.chat_template.as_deref(),
            &info.bos_text,
            &info.eos_text,
        )?;
        tracing::info!("prompt family: {}", template.family().name());
        if let Err(err) = check_layout(&model, &template) {
            runtime.block_on(manager.shutdown());
            return Err(err);
        }
        if global.verbose {
            eprintln!(
                "recall: model {} ({}), prompt family {}",
                info.name,
                model.location(),
                template.family().name()
            );
        }
        let bench = Workbench {
            runtime,
            manager,
            model,
            template,
            interrupt,
            session_options: SessionOptions {
                n_ctx: run.model.ctx,
                threads: run.model.threads,
            },
            prompt_cache: prompt_cache(&run.cache),
            replay: run.model.replay.clone(),
        };
        Ok((bench, found))
    }

    /// A conversation's context on the model.
    pub fn session(&self) -> Result<Session<'_>> {
        let mut session = self.model.session(&self.session_options)?;
        if let (Session::Local(session), Some(cache)) = (&mut session, &self.prompt_cache) {
            session.use_prompt_cache(cache.clone());
        }
        if let Some(dir) = &self.replay {
            let info = self.model.info();
            let model = format!("{}:{}", self.model.location(), info.size_bytes);
            session = Session::Replay(Box::new(Replay::new(session, dir, model)?));
        }
        Ok(session)
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
            answer_tokens: agent_args.answer_tokens(),
            grammar: !agent_args.no_grammar,
            tool_first: !agent_args.tools_optional,
            answer_first: !agent_args.decide_first,
            sampling: model_args.sampling(),
            cancel: self.interrupt.token(),
            today: agent_args.today.unwrap_or_else(obsidian_kb::dates::today),
            answer_check: match agent_args.grounding {
                Grounding::Rules => AnswerCheck::Rules,
                Grounding::Gain => AnswerCheck::Gain {
                    threshold: agent_args.grounding_threshold,
                },
            },
            question_kind: match agent_args.question_kind {
                QuestionKindArg::Words => QuestionKind::Words,
                QuestionKindArg::Model => QuestionKind::Model,
            },
        }
    }

    /// Stops the servers.
    pub fn close(self) {
        self.runtime.block_on(self.manager.shutdown());
    }
}

/// Whether `model` can be given prompts in `template`'s layout: its vocabulary must have every
/// marker the layout writes as a token (see [`ChatTemplate::special_tokens`]).
fn check_layout(model: &Model, template: &ChatTemplate) -> Result<()> {
    let unknown = model.unknown_tokens(&template.special_tokens())?;
    if unknown.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "the model {} ({}) does not have {} as special tokens, which its prompt layout, {}, \
         writes: its vocabulary is not the one this layout is for (a server started with \
         another model, or with --chat-template?)",
        model.info().name,
        model.location(),
        unknown.join(" "),
        template.family().name()
    )
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

/// The line above the sources an answer cites.
pub const CITED_HEADING: &str = "Sources:";
/// The line above the sources an answer was given when it cites none of them.
pub const GIVEN_HEADING: &str = "Sources given (the answer cites none of them):";

/// The heading over `citations`, none when there are none.
fn citations_heading(citations: &[Citation]) -> Option<&'static str> {
    let first = citations.first()?;
    Some(if first.cited {
        CITED_HEADING
    } else {
        GIVEN_HEADING
    })
}

/// What the evidence check did to a source's number, said in a parenthesis; none if nothing.
fn replaced_note(citation: &Citation) -> Option<String> {
    if citation.replaces.is_empty() {
        return None;
    }
    let written: Vec<String> = citation.replaces.iter().map(|n| format!("[{n}]")).collect();
    Some(format!(
        "(the answer wrote {}; its words come from this source)",
        written.join(", ")
    ))
}

/// The sources after an answer: the ones it cites, or, when it cites none, the ones it was
/// given, said as such.
pub fn print_citations(out: &mut impl Write, citations: &[Citation]) -> std::io::Result<()> {
    let Some(heading) = citations_heading(citations) else {
        return Ok(());
    };
    writeln!(out, "\n{heading}")?;
    for c in citations {
        writeln!(out, "[{}] {}\n    {}", c.number, c.label(), c.link)?;
        if let Some(note) = replaced_note(c) {
            writeln!(out, "    {note}")?;
        }
    }
    Ok(())
}

/// The same sources as Markdown, to follow an answer where it is rendered (`recall serve`):
/// a blank line, the heading, then `- [n] [Title › Heading](obsidian://…)` per source. Empty
/// when there are none.
pub fn citations_markdown(citations: &[Citation]) -> String {
    let Some(heading) = citations_heading(citations) else {
        return String::new();
    };
    let mut text = format!("\n\n{heading}\n");
    for c in citations {
        // Brackets in a title would end the link text; the destination goes in <…>, so that
        // parentheses in a note's name cannot end it.
        let label = c.label().replace('[', "\\[").replace(']', "\\]");
        text.push_str(&format!("- [{}] [{label}](<{}>)", c.number, c.link));
        if let Some(note) = replaced_note(c) {
            text.push_str(&format!(" {note}"));
        }
        text.push('\n');
    }
    text
}

/// `text` without the sources [`citations_markdown`] put after it: a client sends earlier
/// answers back as chat history, and the model need not read their links again.
pub fn without_citations_markdown(text: &str) -> &str {
    [CITED_HEADING, GIVEN_HEADING]
        .iter()
        .filter_map(|heading| text.rfind(&format!("\n\n{heading}\n- [")))
        .max()
        .map_or(text, |at| &text[..at])
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

/// The prompt cache the flags ask for: none with `--no-prompt-cache` (or when the platform has
/// no cache folder), else `--prompt-cache-dir` or the platform's.
fn prompt_cache(args: &PromptCacheArgs) -> Option<PromptCache> {
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
