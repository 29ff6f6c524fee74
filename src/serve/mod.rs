//! `recall serve`: the vault agent behind an OpenAI-compatible HTTP API, so that the chat
//! plugins of Obsidian (Copilot, Local GPT, Smart Composer…) and Open WebUI can ask the vault
//! as they would ask a model, and get answers with cited headings.
//!
//! One model is in memory and answers one question at a time. The HTTP side (`http.rs`, on
//! the workbench's tokio runtime) turns each request into a [`Job`] on a bounded queue; the
//! worker (this module, on the calling thread, which owns the model's two sessions) runs the
//! agent on it as `recall chat` runs a turn and sends back [`JobEvent`]s: the answer's text as
//! it streams, then its sources. Wire types are in `openai.rs`.
//!
//! Every job's cancellation token is a child of the Ctrl-C token: Ctrl-C stops the turn in
//! progress and the server; a client that goes away stops its own turn only.

mod access;
mod http;
mod listen;
mod openai;
mod page;
mod status;
mod study;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{ApproveAll, Approver, RefuseAll, SYSTEM_PROMPT, Turn};
use crate::chat::fit_context;
use crate::cli::{GlobalArgs, RunArgs, ServeArgs};
use crate::engine::{ChatModel, Session};
use crate::prompt::Message;
use crate::session::{Workbench, citations_markdown, without_citations_markdown};
use crate::study::Deck;
use crate::vault::VaultTools;

pub use access::Access;
pub use http::MAX_BODY_BYTES;
use obsidian_kb::api;
use openai::{ChatRequest, RecallExtension, Usage};
use status::{Board, ModelStatus, Status, TurnStatus, VaultStatus};
use study::StudyWork;

/// How long, after Ctrl-C, the server waits for its connections to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How often an idle worker reads the vault server's status (embedding progress, notes).
const INDEX_REFRESH: Duration = Duration::from_secs(1);

/// `recall serve`: binds, loads the model, answers until Ctrl-C.
pub fn serve(global: &GlobalArgs, run: &RunArgs, args: &ServeArgs) -> Result<()> {
    // Checked before the model loads: a refused address should not cost a model load.
    let address = listen_address(args)?;
    anyhow::ensure!(args.queue >= 1, "--queue must be at least 1");
    let access = Access {
        api_key: args.api_key.clone(),
        extra_origins: args.allow_origin.clone(),
    };
    let deck = Deck::locate(args.deck.deck.clone())?;
    let bench = Workbench::open(global, run)?;
    let listener = match bench
        .runtime
        .block_on(tokio::net::TcpListener::bind(address))
    {
        Ok(listener) => listener,
        Err(err) => {
            bench.close();
            return Err(err).with_context(|| format!("cannot listen on {address}"));
        }
    };
    let bound = listener.local_addr().unwrap_or(address);
    let shutdown = bench.interrupt.token();
    let (jobs, mut queue) = mpsc::channel(args.queue);
    let last_turn_ms = Arc::new(AtomicU64::new(0));
    let board = Board::new(first_status(&bench, run));
    let state = http::AppState {
        jobs,
        access: Arc::new(access),
        started: chrono::Utc::now().timestamp(),
        next_request: Arc::new(AtomicU64::new(0)),
        last_turn_ms: last_turn_ms.clone(),
        shutdown: shutdown.clone(),
        board: board.clone(),
        deck: Arc::new(deck),
    };
    let app = http::router(state, study::routes());
    let stopped = shutdown.clone();
    let server = bench.runtime.spawn(listen::serve(
        listener,
        app,
        listen::Limits::default(),
        stopped,
    ));
    // The one line a person or a script waits for before sending requests.
    eprintln!(
        "recall: serving the vault at http://{bound}/v1 (model \"{}\"), its page at \
         http://{bound}/; Ctrl-C stops",
        openai::MODEL_ID
    );
    let worked = work(&bench, run, &mut queue, &last_turn_ms, &board);
    // Jobs still queued are dropped with the queue: their requests are told the server stops.
    drop(queue);
    shutdown.cancel();
    let served = bench
        .runtime
        .block_on(async { tokio::time::timeout(SHUTDOWN_GRACE, server).await });
    bench.close();
    worked?;
    match served {
        Ok(Ok(result)) => result.context("the HTTP server failed"),
        Ok(Err(join)) => Err(join).context("the HTTP server task failed"),
        // Connections that would not close in time end with the process.
        Err(_) => Ok(()),
    }
}

/// Where to listen: `--host` and `--port`. A host other than loopback lets other machines ask
/// the vault, so it needs an API key.
fn listen_address(args: &ServeArgs) -> Result<SocketAddr> {
    let addresses: Vec<SocketAddr> = (args.host.as_str(), args.port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve --host {}", args.host))?
        .collect();
    let first = *addresses
        .first()
        .with_context(|| format!("--host {} resolves to no address", args.host))?;
    let loopback = addresses.iter().all(|a| is_loopback(a.ip()));
    anyhow::ensure!(
        loopback || args.api_key.is_some(),
        "--host {} lets other machines ask your notes: give an API key first (--api-key, or \
         RECALL_API_KEY in the environment, which no process list shows)",
        args.host
    );
    Ok(first)
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// One request for the worker: what it asks (`W`, one [`Work`] on the queue, then its kind
/// once the worker has told them apart), and where its outcome goes.
pub struct Job<W = Work> {
    /// The request's number, for the log.
    pub number: u64,
    pub work: W,
    /// Cancelled when the client goes away, and (as the Ctrl-C token's child) on Ctrl-C.
    pub cancel: CancellationToken,
    /// Where the answer goes; nobody listens any more when the client has gone.
    pub events: mpsc::UnboundedSender<JobEvent>,
}

/// What a job asks of the model.
pub enum Work {
    /// A chat turn (`/v1/chat/completions`).
    Chat(JobRequest),
    /// A summary, quiz items or a grade (`/v1/recall/…`, the page's study part).
    Study(StudyWork),
}

/// What a request asks, read from its OpenAI form.
#[derive(Debug, PartialEq)]
pub struct JobRequest {
    /// The earlier turns, as `recall chat` keeps them (user and assistant messages; the
    /// sources Recall put after an answer taken off).
    pub history: Vec<Message>,
    /// The last user message.
    pub question: String,
    /// Bounds the answer; none: `--max-tokens` or the default.
    pub answer_tokens: Option<usize>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u32>,
}

impl JobRequest {
    /// Reads a chat request; the error says what is wrong with it. System (and developer)
    /// messages are left out: Recall answers with its own instructions, which its citations
    /// depend on. Tool messages are left out: Recall's tools are its own.
    fn from_openai(request: &ChatRequest) -> Result<JobRequest, String> {
        let (last, earlier) = request
            .messages
            .split_last()
            .ok_or("messages is empty: send at least the user's question")?;
        let question = last.text();
        if last.role != "user" || question.trim().is_empty() {
            return Err(format!(
                "the last message must be the user's question (it is a {} message{})",
                last.role,
                if last.role == "user" {
                    " with no text"
                } else {
                    ""
                }
            ));
        }
        let mut history = Vec::new();
        for (i, message) in earlier.iter().enumerate() {
            match message.role.as_str() {
                "user" => history.push(Message::user(message.text())),
                "assistant" => {
                    let text = message.text();
                    history.push(Message::assistant(without_citations_markdown(&text)));
                }
                "system" | "developer" | "tool" | "function" => {}
                other => {
                    return Err(format!(
                        "messages[{i}]: unknown role {other:?} (expected system, developer, \
                         user, assistant or tool)"
                    ));
                }
            }
        }
        let answer_tokens = request.max_completion_tokens.or(request.max_tokens);
        if answer_tokens == Some(0) {
            return Err("max_tokens must be at least 1".into());
        }
        if let Some(t) = request.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(format!("temperature {t} is out of range (0 to 2)"));
        }
        if let Some(p) = request.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return Err(format!("top_p {p} is out of range (above 0, at most 1)"));
        }
        Ok(JobRequest {
            history,
            question,
            answer_tokens,
            temperature: request.temperature,
            top_p: request.top_p,
            seed: request.seed,
        })
    }
}

/// What the worker sends back for a job.
pub enum JobEvent {
    /// The question fits and the turn has begun: a stream's headers may go.
    Started,
    /// A piece of the answer, as it is written.
    Text(String),
    /// Study work is done: its report, as JSON; nothing follows.
    Done(serde_json::Value),
    /// The turn is done; nothing follows.
    Finished(Finished),
    /// The turn failed; nothing follows.
    Failed(JobError),
}

/// The end of a turn that answered.
pub struct Finished {
    /// The sources as Markdown, to follow the answer's text.
    pub sources_markdown: String,
    pub extension: RecallExtension,
    pub usage: Usage,
    /// `length` when the answer used up its token bound, else `stop`.
    pub finish_reason: &'static str,
}

impl Finished {
    fn of(turn: &Turn, answer_tokens: usize) -> Finished {
        let cut = turn
            .steps
            .iter()
            .rev()
            .find(|s| s.kind == "answer")
            .is_some_and(|s| s.stats.generated_tokens >= answer_tokens);
        let prompt: usize = turn.steps.iter().map(|s| s.stats.prompt_tokens).sum();
        let generated: usize = turn.steps.iter().map(|s| s.stats.generated_tokens).sum();
        Finished {
            sources_markdown: citations_markdown(&turn.citations),
            extension: RecallExtension {
                citations: turn.citations.clone(),
                fallback: turn.fallback,
            },
            usage: Usage::new(prompt, generated),
            finish_reason: if cut { "length" } else { "stop" },
        }
    }
}

/// Why a job gave no answer.
pub enum JobError {
    /// Ctrl-C: the server is stopping.
    Stopping,
    /// The turn failed (the model, a prompt): the error, with its causes.
    Turn(String),
    /// Study work named nothing the vault holds: the client's to change.
    NotFound(String),
    /// Study work on a card the deck no longer holds as shown: list the cards again.
    Conflict(String),
    /// The question alone, with the prompt around it, is longer than the model's context: the
    /// client's mistake, never to be retried as it is.
    TooLong {
        /// The context size, in tokens.
        context: usize,
    },
}

impl JobError {
    fn message(&self) -> String {
        match self {
            JobError::Stopping => "recall serve is stopping".into(),
            JobError::Turn(error) | JobError::NotFound(error) | JobError::Conflict(error) => {
                error.clone()
            }
            JobError::TooLong { context } => format!(
                "the question is too long for the model's context of {context} tokens \
                 (with the prompt around it and room for the answer); send a shorter one"
            ),
        }
    }
}

/// What the status says before the first turn: the model and the vault, not yet the index.
fn first_status(bench: &Workbench, run: &RunArgs) -> Status {
    let info = bench.model.info();
    let vault = VaultTools::find(&bench.manager).map(|tools| VaultStatus {
        name: run
            .servers
            .vault
            .as_deref()
            .and_then(|path| path.file_name())
            .map_or(tools.server, |name| name.to_string_lossy().into_owned()),
        index: None,
    });
    Status {
        model: ModelStatus {
            name: info.name.clone(),
            file: info
                .path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            parameters: info.n_params,
            context: 0,
        },
        vault,
        turns: TurnStatus::default(),
    }
}

/// Reads the vault server's status resource onto the board; a server that does not answer
/// leaves the index unknown.
fn refresh_index(bench: &Workbench, board: &Board) {
    let Some(tools) = VaultTools::find(&bench.manager) else {
        return;
    };
    let read = bench
        .runtime
        .block_on(bench.manager.read_resource(&tools.server, api::STATUS_URI));
    let index = read.ok().and_then(|text| serde_json::from_str(&text).ok());
    board.update(|status| {
        if let Some(vault) = &mut status.vault {
            vault.index = index;
        }
    });
}

/// Takes jobs off the queue, one at a time, until Ctrl-C (or until the HTTP side is gone).
/// While idle, it keeps the board's index figures current.
fn work(
    bench: &Workbench,
    run: &RunArgs,
    queue: &mut mpsc::Receiver<Job>,
    last_turn_ms: &AtomicU64,
    board: &Board,
) -> Result<()> {
    let mut session = bench.session()?;
    let mut answer_session = bench.session()?;
    board.update(|status| status.model.context = session.context_size());
    // Nobody is at a terminal to ask: calls to tools that may write need --yes.
    let mut approver: Box<dyn Approver> = if run.servers.yes {
        Box::new(ApproveAll)
    } else {
        Box::new(RefuseAll)
    };
    let shutdown = bench.interrupt.token();
    loop {
        refresh_index(bench, board);
        let next = bench.runtime.block_on(async {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => Idle::Stop,
                job = queue.recv() => job.map_or(Idle::Stop, Idle::Job),
                () = tokio::time::sleep(INDEX_REFRESH) => Idle::Refresh,
            }
        });
        let job = match next {
            Idle::Stop => return Ok(()),
            Idle::Refresh => continue,
            Idle::Job(job) => job,
        };
        board.update(|status| status.turns.busy = true);
        let started = Instant::now();
        let Job {
            number,
            work,
            cancel,
            events,
        } = job;
        match work {
            Work::Chat(request) => answer(
                bench,
                run,
                &mut session,
                &mut answer_session,
                approver.as_mut(),
                Job {
                    number,
                    work: request,
                    cancel,
                    events,
                },
            ),
            Work::Study(study) => study::run_study(
                bench,
                run,
                &mut session,
                board,
                Job {
                    number,
                    work: study,
                    cancel,
                    events,
                },
            ),
        }
        let took = started.elapsed();
        last_turn_ms.store(took.as_millis() as u64, Ordering::Relaxed);
        board.update(|status| {
            status.turns.busy = false;
            status.turns.answered += 1;
            status.turns.last_seconds = Some(took.as_secs_f64());
        });
    }
}

/// What ended the worker's wait.
enum Idle {
    Job(Job),
    /// Time to read the index's figures again.
    Refresh,
    Stop,
}

/// Runs one job's turn and sends its events; logs one line to stderr.
fn answer<'e>(
    bench: &'e Workbench,
    run: &RunArgs,
    session: &mut Session<'e>,
    answer_session: &mut Session<'e>,
    approver: &mut dyn Approver,
    job: Job<JobRequest>,
) {
    let Job {
        number,
        work: request,
        cancel,
        events,
    } = job;
    if cancel.is_cancelled() {
        report_cancelled(bench, number, &events);
        return;
    }
    let started = Instant::now();
    let answer_tokens = request
        .answer_tokens
        .unwrap_or_else(|| run.agent.answer_tokens());
    let mut conversation = vec![Message::system(SYSTEM_PROMPT.trim())];
    conversation.extend(request.history);
    let folded = fit_context(
        bench,
        session,
        answer_tokens,
        &mut conversation,
        &request.question,
    );
    if !folded.fits {
        let context = session.context_size();
        eprintln!("recall: #{number}: refused: the question does not fit the context");
        let _ = events.send(JobEvent::Failed(JobError::TooLong { context }));
        return;
    }
    if folded.dropped > 0 {
        eprintln!(
            "recall: #{number}: shortened {} old turns to fit the context",
            folded.dropped
        );
    }
    // The HTTP side holds a stream's headers until now, so that a request that can never fit
    // is a 400 rather than a 200 whose stream says it failed.
    if events.send(JobEvent::Started).is_err() {
        report_cancelled(bench, number, &events);
        return;
    }
    let mut options = bench.agent_options(&run.model, &run.agent);
    options.cancel = cancel.clone();
    options.answer_tokens = answer_tokens;
    options.sampling.temperature = request.temperature.unwrap_or(options.sampling.temperature);
    options.sampling.top_p = request.top_p.unwrap_or(options.sampling.top_p);
    options.sampling.seed = request.seed.unwrap_or(options.sampling.seed);
    let mut agent = bench.agent(session, answer_session, approver, options);
    let asked = agent.ask(&mut conversation, &request.question, &mut |text| {
        if events.send(JobEvent::Text(text.to_string())).is_err() {
            // The client is gone: nobody reads the rest.
            cancel.cancel();
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    let seconds = started.elapsed().as_secs_f64();
    match asked {
        Ok(turn) => {
            let finished = Finished::of(&turn, answer_tokens);
            let cited = turn.citations.iter().filter(|c| c.cited).count();
            eprintln!(
                "recall: #{number}: answered in {seconds:.1} s, citing {cited} source{}",
                if cited == 1 { "" } else { "s" }
            );
            // The client may have gone at the last moment: nothing to do about it.
            let _ = events.send(JobEvent::Finished(finished));
        }
        Err(err) if err.is_cancelled() => report_cancelled(bench, number, &events),
        Err(err) => {
            eprintln!("recall: #{number}: failed after {seconds:.1} s: {err:#}");
            let _ = events.send(JobEvent::Failed(JobError::Turn(format!("{err:#}"))));
        }
    }
}

/// A stopped turn: on Ctrl-C the client is told the server stops; a client that went away
/// needs no reply.
pub(crate) fn report_cancelled(
    bench: &Workbench,
    number: u64,
    events: &mpsc::UnboundedSender<JobEvent>,
) {
    if bench.interrupt.token().is_cancelled() {
        eprintln!("recall: #{number}: stopped (Ctrl-C)");
        let _ = events.send(JobEvent::Failed(JobError::Stopping));
    } else {
        eprintln!("recall: #{number}: stopped: the client went away");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::Role;

    fn request(json: &str) -> Result<JobRequest, String> {
        JobRequest::from_openai(&serde_json::from_str(json).expect("a request"))
    }

    #[test]
    fn the_last_user_message_is_the_question_and_the_rest_is_history() {
        let asked = request(
            r#"{"messages":[
                {"role":"system","content":"You are a helpful assistant."},
                {"role":"user","content":"What is Sync?"},
                {"role":"assistant","content":"A paid service [1].\n\nSources:\n- [1] [Sync](<obsidian://open?vault=v&file=Sync>)\n"},
                {"role":"user","content":"How much is it?"}]}"#,
        )
        .expect("a valid request");
        assert_eq!(asked.question, "How much is it?");
        let roles: Vec<Role> = asked.history.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant]);
        assert_eq!(asked.history[1].content, "A paid service [1].");
    }

    #[test]
    fn a_request_without_a_question_is_refused_with_the_reason() {
        let empty = request(r#"{"messages":[]}"#).unwrap_err();
        assert!(empty.contains("empty"), "{empty}");
        let last = request(r#"{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}]}"#)
            .unwrap_err();
        assert!(last.contains("assistant message"), "{last}");
        let blank = request(r#"{"messages":[{"role":"user","content":"  "}]}"#).unwrap_err();
        assert!(blank.contains("no text"), "{blank}");
        let role = request(
            r#"{"messages":[{"role":"narrator","content":"x"},{"role":"user","content":"Hi"}]}"#,
        )
        .unwrap_err();
        assert!(role.contains("narrator"), "{role}");
        let hot = request(r#"{"messages":[{"role":"user","content":"Hi"}],"temperature":7}"#)
            .unwrap_err();
        assert!(hot.contains("temperature"), "{hot}");
    }

    #[test]
    fn only_loopback_is_served_without_an_api_key() {
        let args = |host: &str, key: Option<&str>| ServeArgs {
            host: host.into(),
            port: 0,
            api_key: key.map(String::from),
            allow_origin: Vec::new(),
            queue: 1,
            deck: crate::cli::DeckArgs { deck: None },
        };
        assert!(listen_address(&args("127.0.0.1", None)).is_ok());
        assert!(listen_address(&args("localhost", None)).is_ok());
        assert!(listen_address(&args("::1", None)).is_ok());
        let open = listen_address(&args("0.0.0.0", None))
            .unwrap_err()
            .to_string();
        assert!(open.contains("API key"), "{open}");
        assert!(listen_address(&args("0.0.0.0", Some("secret"))).is_ok());
    }
}
