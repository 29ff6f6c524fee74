//! `recall chat`: a line-editing REPL over one conversation.
//!
//! One model session serves the whole chat, so each turn evaluates only the tokens after what the
//! KV cache already holds. Before each turn the oldest whole turns fold into recap lines in the
//! system message (question and start of answer) until the decision prompt plus room for the
//! reply fits the context. Lines starting with `/` are commands.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rustyline::error::ReadlineError;
use rustyline::{Config, DefaultEditor};
use serde::{Deserialize, Serialize};

use crate::agent::{Approver, SYSTEM_PROMPT};
use crate::cli::{AgentArgs, GlobalArgs, ModelArgs, RunArgs};
use crate::engine::ChatModel;
use crate::engine::Session;
use crate::prompt::{Message, Role};
use crate::report::{TurnReport, write_transcript};
use crate::session::{Workbench, approver, print_citations, stream_to_stdout};
use crate::tool::ToolHost;

/// The version `/save` writes and `/load` reads.
const SAVE_VERSION: u32 = 1;
/// Tokens kept free besides the answer: a decision reply (the agent allows 256) and some room
/// for the tool results of this turn (the agent cuts results to what is left).
const TURN_RESERVE: usize = 256 + 512;
const PROMPT: &str = "you> ";
const HELP: &str = "\
Ask a question about your notes, or:
  /tools        list the tools the model can call
  /reset        start a new conversation
  /save FILE    save the conversation (JSON)
  /load FILE    continue a saved conversation
  /quit         leave (also /exit or Ctrl-D)
Ctrl-C stops an answer; at the prompt it clears the line.";

/// Runs the REPL.
pub fn run(global: &GlobalArgs, run: &RunArgs, resume: Option<&Path>) -> Result<()> {
    // A bad --resume file fails before the model loads, not after.
    let conversation = match resume {
        Some(path) => load_file(path)?,
        None => Vec::new(),
    };
    // The line editor comes first: on a terminal, rustyline puts a SIGINT handler of its own in
    // place for as long as it lives. Installed after it, the workbench's Ctrl-C handler runs
    // first (and then rustyline's); installed before it, it would never run, and Ctrl-C during a
    // turn would stop nothing.
    let mut input = Input::open();
    let bench = match Workbench::open(global, run) {
        Ok(bench) => bench,
        Err(err) => {
            input.close();
            return Err(err);
        }
    };
    let sessions = bench.session().and_then(|s| Ok((s, bench.session()?)));
    let result = sessions.and_then(|(mut session, mut answer_session)| {
        let mut repl = Repl {
            bench: &bench,
            session: &mut session,
            answer_session: &mut answer_session,
            approver: approver(run.servers.yes, &bench.interrupt),
            conversation,
            global,
            model: &run.model,
            agent: &run.agent,
        };
        repl.run(&mut input)
    });
    // The servers stop while Ctrl-C is still caught; closing the editor restores the SIGINT
    // handler it found (none).
    bench.close();
    input.close();
    result
}

struct Repl<'a, 's> {
    bench: &'a Workbench,
    session: &'a mut Session<'s>,
    /// Answer prompts carry no tool schemas; their own cache keeps their prefix across turns.
    answer_session: &'a mut Session<'s>,
    approver: Box<dyn Approver>,
    conversation: Vec<Message>,
    global: &'a GlobalArgs,
    model: &'a ModelArgs,
    agent: &'a AgentArgs,
}

impl Repl<'_, '_> {
    fn run(&mut self, input: &mut Input) -> Result<()> {
        if input.is_terminal() {
            eprintln!("recall chat: ask about your notes; /help for commands, Ctrl-D to quit.");
        }
        loop {
            let line = match input.read()? {
                Read::Line(line) => line,
                Read::Interrupted => continue,
                Read::End => return Ok(()),
            };
            match parse_line(&line) {
                Line::Empty => {}
                Line::Question(question) => self.turn(question)?,
                Line::Tools => self.print_tools()?,
                Line::Reset => {
                    self.conversation.clear();
                    self.session.reset();
                    self.answer_session.reset();
                    eprintln!("recall: new conversation.");
                }
                Line::Save(Some(path)) => match save_file(Path::new(path), &self.conversation) {
                    Ok(()) => eprintln!(
                        "recall: saved {} messages to {path}",
                        self.conversation.len()
                    ),
                    Err(err) => eprintln!("recall: {err:#}"),
                },
                Line::Load(Some(path)) => match load_file(Path::new(path)) {
                    // The KV cache needs no reset: the next prompt reuses whatever prefix matches.
                    Ok(messages) => {
                        eprintln!("recall: loaded {} messages from {path}", messages.len());
                        self.conversation = messages;
                    }
                    Err(err) => eprintln!("recall: {err:#} (conversation unchanged)"),
                },
                Line::Save(None) => eprintln!("recall: usage: /save FILE"),
                Line::Load(None) => eprintln!("recall: usage: /load FILE"),
                Line::Quit => return Ok(()),
                Line::Help => eprintln!("{HELP}"),
                Line::Unknown(command) => {
                    eprintln!("recall: unknown command {command}; /help lists the commands")
                }
            }
        }
    }

    /// One question: fit the context, ask, print the answer (or its JSON report).
    fn turn(&mut self, question: &str) -> Result<()> {
        let Some(dropped) = self.fit_context(question) else {
            eprintln!(
                "recall: this question is too long for the model's context of {} tokens; ask a \
                 shorter one (the conversation is kept)",
                self.session.context_size()
            );
            return Ok(());
        };
        if dropped > 0 {
            eprintln!(
                "recall: shortened {dropped} old turn{} to a recap line to fit the context of {} tokens",
                if dropped == 1 { "" } else { "s" },
                self.session.context_size()
            );
        }
        let bench = self.bench;
        // Ctrl-C pressed between turns must not stop this one, and one pressed during it stops
        // it alone.
        bench.interrupt.renew();
        let before = self.conversation.len();
        let mut agent = bench.agent(
            &mut *self.session,
            &mut *self.answer_session,
            self.approver.as_mut(),
            bench.agent_options(self.model, self.agent),
        );
        let asked = agent.ask(
            &mut self.conversation,
            question,
            &mut stream_to_stdout(!self.global.json),
        );
        let turn = match asked {
            Ok(turn) => turn,
            // A failed or stopped turn leaves no half of itself behind; the chat goes on.
            Err(err) => {
                self.conversation.truncate(before);
                eprintln!("\nrecall: {err:#}");
                return Ok(());
            }
        };
        let report = TurnReport::new(&turn, bench.model.info());
        if let Some(path) = &self.global.transcript
            && let Err(err) = write_transcript(path, &self.conversation, &report)
        {
            eprintln!("recall: warning: {err:#}");
        }
        let mut out = std::io::stdout().lock();
        if self.global.json {
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
        } else {
            writeln!(out)?;
            print_citations(&mut out, &turn.citations)?;
            writeln!(out)?;
        }
        out.flush()?;
        Ok(())
    }

    /// Folds the oldest turns into recap lines (see [`fit_context`]) and returns how many; a
    /// question that cannot fit even alone leaves the conversation as it was (`None`).
    fn fit_context(&mut self, question: &str) -> Option<usize> {
        let mut fitted = self.conversation.clone();
        let folded = fit_context(
            self.bench,
            self.session,
            self.agent.answer_tokens(),
            &mut fitted,
            question,
        );
        folded.fits.then(|| {
            self.conversation = fitted;
            folded.dropped
        })
    }

    fn print_tools(&self) -> Result<()> {
        let tools = self.bench.manager.routed_tools();
        let mut out = std::io::stdout().lock();
        if self.global.json {
            let list = ChatToolsJson {
                tools: tools
                    .iter()
                    .map(|t| ChatToolJson {
                        name: &t.spec.name,
                        server: &t.route.server,
                        description: &t.spec.description,
                    })
                    .collect(),
            };
            writeln!(out, "{}", serde_json::to_string(&list)?)?;
        } else if tools.is_empty() {
            writeln!(out, "No tools: no server is running (see `recall tools`).")?;
        } else {
            for tool in &tools {
                let summary = tool.spec.description.lines().next().unwrap_or("");
                writeln!(out, "{}: {summary}", tool.spec.name)?;
            }
        }
        Ok(())
    }
}

/// `/tools` with `--json`.
#[derive(Serialize)]
struct ChatToolsJson<'a> {
    tools: Vec<ChatToolJson<'a>>,
}

/// One tool of [`ChatToolsJson`].
#[derive(Serialize)]
struct ChatToolJson<'a> {
    name: &'a str,
    server: &'a str,
    description: &'a str,
}

/// What one input line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    Empty,
    Question(&'a str),
    Tools,
    Reset,
    Save(Option<&'a str>),
    Load(Option<&'a str>),
    Quit,
    Help,
    Unknown(&'a str),
}

fn parse_line(line: &str) -> Line<'_> {
    let line = line.trim();
    let Some(command) = line.strip_prefix('/') else {
        return if line.is_empty() {
            Line::Empty
        } else {
            Line::Question(line)
        };
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    // The rest of the line is the file name, spaces included.
    let file = Some(rest.trim()).filter(|f| !f.is_empty());
    match name {
        "tools" => Line::Tools,
        "reset" => Line::Reset,
        "save" => Line::Save(file),
        "load" => Line::Load(file),
        "quit" | "exit" => Line::Quit,
        "help" | "?" => Line::Help,
        _ => Line::Unknown(line.split_whitespace().next().unwrap_or(line)),
    }
}

/// Folds the oldest turns of `conversation` into recap lines until the next decision prompt,
/// with its tool schemas and `question`, leaves room for an answer of `answer_tokens` and the
/// turn's tool results; says how many turns were folded and whether the prompt fits now (a
/// question too long for the context never does). `serve` keeps the histories its clients
/// send the same way.
pub fn fit_context(
    bench: &Workbench,
    session: &Session<'_>,
    answer_tokens: usize,
    conversation: &mut Vec<Message>,
    question: &str,
) -> Folded {
    let tools = bench.manager.tools();
    let template = &bench.template;
    let limit = session
        .context_size()
        .saturating_sub(answer_tokens + TURN_RESERVE);
    drop_oldest_turns(conversation, |messages| {
        let mut next = messages.to_vec();
        next.push(Message::user(question));
        // A prompt that cannot render is the turn's error to report, not a reason to drop.
        template
            .decision(&next, &tools)
            .map_or(true, |prompt| session.count_tokens(&prompt.text) <= limit)
    })
}

/// Heads the recap of dropped turns inside the system message.
const RECAP_HEADER: &str = "\n\nEarlier in this conversation (older turns, shortened):";
/// Most recap lines kept: the recap must stay a small part of the prompt.
const RECAP_LINES: usize = 8;
/// Longest question or answer excerpt in a recap line, in characters.
const RECAP_CHARS: usize = 160;

/// What [`drop_oldest_turns`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Folded {
    /// Whole turns dropped (each left a recap line, while there is room for lines).
    pub dropped: usize,
    /// Whether the conversation fits now; when not, everything but the system message's own
    /// text is gone and what is left (the question itself) is too long.
    pub fits: bool,
}

/// Makes room by dropping whole turns (a user message and everything up to the next one) from
/// the front, after the system message, until `fits` holds. Each dropped turn leaves a line in
/// the system message (its question and the start of its answer), so the model still knows what
/// was discussed; when only recap lines are left to drop, they go too, oldest first.
///
/// The fewest turns to drop are found by bisection: `fits` renders and counts a whole prompt,
/// and asking it once per dropped turn took minutes on a history of hundreds of messages (it
/// is asked about 2 + log2(turns) times here, plus once per recap line at the very end).
pub fn drop_oldest_turns(
    conversation: &mut Vec<Message>,
    mut fits: impl FnMut(&[Message]) -> bool,
) -> Folded {
    if fits(conversation) {
        return Folded {
            dropped: 0,
            fits: true,
        };
    }
    let has_system = conversation.first().is_some_and(|m| m.role == Role::System);
    let head = usize::from(has_system);
    // Where each turn starts: right after the system message (messages before the first
    // question count as a turn), then at every question.
    let starts: Vec<usize> = (head..conversation.len())
        .filter(|&i| i == head || conversation[i].role == Role::User)
        .collect();
    let (base, earlier_lines) = match conversation.first() {
        Some(system) if has_system => split_recap(&system.content),
        _ => (String::new(), Vec::new()),
    };
    let end_of = |turn: usize| starts.get(turn).copied().unwrap_or(conversation.len());
    // The conversation less its first `dropped` turns, and less the oldest `cut` recap lines.
    let folded = |dropped: usize, cut: usize| -> Vec<Message> {
        let mut out = Vec::with_capacity(head + conversation.len() - end_of(dropped));
        if has_system {
            let mut lines = earlier_lines.clone();
            // Only the newest RECAP_LINES lines are kept: older turns need none.
            lines.extend(
                (dropped.saturating_sub(RECAP_LINES)..dropped)
                    .filter_map(|t| recap_line(&conversation[starts[t]..end_of(t + 1)])),
            );
            let kept = &lines[lines.len().saturating_sub(RECAP_LINES)..];
            let kept = &kept[cut.min(kept.len())..];
            out.push(Message::new(Role::System, join_recap(&base, kept)));
        }
        out.extend_from_slice(&conversation[end_of(dropped)..]);
        out
    };
    // Bisection over the turns to drop: `low` turns are too few, `high` may be enough.
    let (mut low, mut high) = (0, starts.len());
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if fits(&folded(mid, 0)) {
            high = mid;
        } else {
            low = mid;
        }
    }
    let mut candidate = folded(high, 0);
    let mut ok = high < starts.len() || fits(&candidate);
    let mut cut = 0;
    while !ok && has_system && !split_recap(&candidate[0].content).1.is_empty() {
        cut += 1;
        candidate = folded(high, cut);
        ok = fits(&candidate);
    }
    *conversation = candidate;
    Folded {
        dropped: high,
        fits: ok,
    }
}

/// `- Q: … A: …` for one dropped turn: its question and the start of its final answer.
fn recap_line(turn: &[Message]) -> Option<String> {
    let question = turn.iter().find(|m| m.role == Role::User)?;
    let answer = turn
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map_or("", |m| m.content.as_str());
    Some(format!(
        "- Q: {} A: {}",
        excerpt(&question.content),
        excerpt(answer)
    ))
}

/// `text` on one line, cut to [`RECAP_CHARS`] characters.
fn excerpt(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(RECAP_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// A system message's own text and its recap lines.
fn split_recap(system: &str) -> (String, Vec<String>) {
    match system.split_once(RECAP_HEADER) {
        Some((base, recap)) => (
            base.to_string(),
            recap
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        None => (system.to_string(), Vec::new()),
    }
}

fn join_recap(base: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return base.to_string();
    }
    format!("{base}{RECAP_HEADER}\n{}", lines.join("\n"))
}

#[derive(Serialize, Deserialize)]
struct SavedChat {
    version: u32,
    messages: Vec<SavedMessage>,
}

#[derive(Serialize, Deserialize)]
struct SavedMessage {
    role: String,
    content: String,
}

/// The `/save` format: `{"version":1,"messages":[{"role","content"}…]}`.
pub fn conversation_to_json(conversation: &[Message]) -> String {
    let saved = SavedChat {
        version: SAVE_VERSION,
        messages: conversation
            .iter()
            .map(|m| SavedMessage {
                role: m.role.as_str().to_string(),
                content: m.content.clone(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&saved).expect("strings always serialize")
}

/// Reads the `/save` format. A conversation without a system message gets the agent's, since
/// the agent only adds it to an empty conversation.
pub fn conversation_from_json(text: &str) -> Result<Vec<Message>> {
    let saved: SavedChat = serde_json::from_str(text).context("not a saved recall chat")?;
    anyhow::ensure!(
        saved.version == SAVE_VERSION,
        "saved chat version {} is not supported (this recall reads version {SAVE_VERSION})",
        saved.version
    );
    let mut messages = saved
        .messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let role = match m.role.as_str() {
                "system" => Role::System,
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "ipython" => Role::Ipython,
                other => anyhow::bail!(
                    "message {}: unknown role {other:?} (expected system, user, assistant or ipython)",
                    i + 1
                ),
            };
            Ok(Message::new(role, m.content))
        })
        .collect::<Result<Vec<_>>>()?;
    if messages.first().is_some_and(|m| m.role != Role::System) {
        messages.insert(0, Message::system(SYSTEM_PROMPT.trim()));
    }
    Ok(messages)
}

fn load_file(path: &Path) -> Result<Vec<Message>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read saved chat {}", path.display()))?;
    conversation_from_json(&text).with_context(|| format!("cannot load {}", path.display()))
}

/// Writes a temporary file beside the target and renames it over the target, so a failed save
/// never destroys an earlier one. The file is readable by its owner only: it holds notes.
fn save_file(path: &Path, conversation: &[Message]) -> Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    tempfile::NamedTempFile::new_in(folder)
        .and_then(|mut temporary| {
            temporary.write_all((conversation_to_json(conversation) + "\n").as_bytes())?;
            temporary.persist(path).map_err(|e| e.error)?;
            Ok(())
        })
        .with_context(|| format!("cannot save to {}", path.display()))
}

/// `recall/history` in the platform state folder (`dirs::state_dir`: on Linux `$XDG_STATE_HOME`
/// when it is absolute, else `~/.local/state`), or, where the platform has none (macOS,
/// Windows), in its local data folder.
fn history_path() -> Option<PathBuf> {
    let state = dirs::state_dir().or_else(dirs::data_local_dir)?;
    Some(state.join("recall").join("history"))
}

/// Where lines come from: rustyline on a terminal, plain lines otherwise (pipes, tests).
enum Input {
    Editor {
        editor: Box<DefaultEditor>,
        history: Option<PathBuf>,
    },
    Plain,
}

enum Read {
    Line(String),
    Interrupted,
    End,
}

impl Input {
    fn open() -> Input {
        if !std::io::stdin().is_terminal() {
            return Input::Plain;
        }
        let config = Config::builder().auto_add_history(true).build();
        let mut editor = match DefaultEditor::with_config(config) {
            Ok(editor) => editor,
            Err(err) => {
                eprintln!("recall: warning: no line editing ({err}); reading plain lines");
                return Input::Plain;
            }
        };
        let history = history_path();
        if let Some(path) = &history
            && let Err(err) = editor.load_history(path)
            && !matches!(&err, ReadlineError::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
        {
            eprintln!(
                "recall: warning: cannot read history {}: {err}",
                path.display()
            );
        }
        Input::Editor {
            editor: Box::new(editor),
            history,
        }
    }

    fn is_terminal(&self) -> bool {
        matches!(self, Input::Editor { .. })
    }

    fn read(&mut self) -> Result<Read> {
        match self {
            Input::Editor { editor, .. } => match editor.readline(PROMPT) {
                Ok(line) => Ok(Read::Line(line)),
                Err(ReadlineError::Interrupted) => Ok(Read::Interrupted),
                Err(ReadlineError::Eof) => Ok(Read::End),
                Err(err) => Err(err).context("cannot read from the terminal"),
            },
            Input::Plain => {
                let mut bytes = Vec::new();
                let n = std::io::stdin()
                    .lock()
                    .read_until(b'\n', &mut bytes)
                    .context("cannot read stdin")?;
                if n == 0 {
                    return Ok(Read::End);
                }
                let line = String::from_utf8_lossy(&bytes);
                Ok(Read::Line(line.trim_end_matches(['\n', '\r']).to_string()))
            }
        }
    }

    /// Saves the history; failing to is a warning, never an error.
    fn close(self) {
        let Input::Editor {
            mut editor,
            history: Some(path),
        } = self
        else {
            return;
        };
        let saved = match path.parent() {
            Some(dir) => std::fs::create_dir_all(dir).map_err(ReadlineError::Io),
            None => Ok(()),
        }
        .and_then(|()| editor.save_history(&path));
        if let Err(err) = saved {
            eprintln!(
                "recall: warning: cannot save history {}: {err}",
                path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(roles: &str) -> Vec<Message> {
        roles
            .chars()
            .enumerate()
            .map(|(i, c)| {
                let role = match c {
                    's' => Role::System,
                    'u' => Role::User,
                    'a' => Role::Assistant,
                    'i' => Role::Ipython,
                    _ => unreachable!(),
                };
                Message::new(role, format!("{c}{i}"))
            })
            .collect()
    }

    fn roles(conversation: &[Message]) -> String {
        conversation
            .iter()
            .map(|m| m.role.as_str().chars().next().unwrap())
            .collect()
    }

    #[test]
    fn nothing_is_dropped_when_it_fits() {
        let mut c = chat("suaiau");
        assert_eq!(drop_oldest_turns(&mut c, |_| true).dropped, 0);
        assert_eq!(c, chat("suaiau"));
    }

    #[test]
    fn oldest_whole_turns_go_first_and_the_system_message_stays() {
        let mut c = chat("suaiaua" /* two turns, the first with a call */);
        let folded = drop_oldest_turns(&mut c, |m| m.len() <= 3);
        assert_eq!(
            folded,
            Folded {
                dropped: 1,
                fits: true
            }
        );
        assert_eq!(roles(&c), "sua");
        assert!(c[0].content.starts_with("s0"), "{}", c[0].content);
        assert_eq!(c[1].content, "u5", "the newer turn is the one kept");
    }

    #[test]
    fn dropped_turns_leave_a_recap_in_the_system_message() {
        let mut c = chat("suaiaua");
        c[1].content = "When is the\nbiology midterm?".into();
        c[4].content = format!("On May 3 in room 204. {}", "More detail. ".repeat(40));
        assert_eq!(drop_oldest_turns(&mut c, |m| m.len() <= 3).dropped, 1);
        let (base, lines) = split_recap(&c[0].content);
        assert_eq!(base, "s0");
        assert_eq!(lines.len(), 1, "{}", c[0].content);
        assert!(
            lines[0].starts_with("- Q: When is the biology midterm? A: On May 3 in room 204."),
            "{}",
            lines[0]
        );
        assert!(lines[0].ends_with('…') && lines[0].chars().count() < 2 * RECAP_CHARS + 16);
        // A later fold keeps the earlier line, newest last.
        let mut c2 = c.clone();
        c2.extend(
            chat("ua")
                .into_iter()
                .map(|m| Message::new(m.role, format!("later {}", m.content))),
        );
        assert_eq!(drop_oldest_turns(&mut c2, |m| m.len() <= 3).dropped, 1);
        let (_, lines) = split_recap(&c2[0].content);
        assert_eq!(lines.len(), 2);
        assert!(lines[1].starts_with("- Q: u5 A: a6"), "{lines:?}");
    }

    #[test]
    fn the_recap_keeps_only_the_newest_lines() {
        let mut c = chat(&format!("s{}", "ua".repeat(RECAP_LINES + 3)));
        assert_eq!(
            drop_oldest_turns(&mut c, |m| m.len() <= 1).dropped,
            RECAP_LINES + 3
        );
        let (_, lines) = split_recap(&c[0].content);
        assert_eq!(lines.len(), RECAP_LINES);
        assert!(
            lines[RECAP_LINES - 1].starts_with(&format!("- Q: u{}", 2 * (RECAP_LINES + 3) - 1))
        );
    }

    #[test]
    fn every_turn_and_then_the_recap_go_when_nothing_fits() {
        let mut c = chat("suaua");
        assert_eq!(
            drop_oldest_turns(&mut c, |_| false),
            Folded {
                dropped: 2,
                fits: false
            }
        );
        assert_eq!(roles(&c), "s");
        assert_eq!(c[0].content, "s0", "recap lines go last");
        let mut c = chat("uaua");
        assert_eq!(drop_oldest_turns(&mut c, |_| false).dropped, 2);
        assert!(c.is_empty());
        let mut empty = Vec::new();
        assert_eq!(drop_oldest_turns(&mut empty, |_| false).dropped, 0);
    }

    #[test]
    fn a_long_history_is_fitted_with_few_renders() {
        // 5,000 turns, of which the newest 7 fit: found by bisection, not turn by turn.
        let mut c = chat(&format!("s{}", "ua".repeat(5_000)));
        let mut asked = 0;
        let folded = drop_oldest_turns(&mut c, |m| {
            asked += 1;
            m.len() <= 15
        });
        assert_eq!(folded.dropped, 4_993);
        assert!(folded.fits);
        assert_eq!(roles(&c), format!("s{}", "ua".repeat(7)));
        assert!(asked <= 16, "fits asked {asked} times");
        let (_, lines) = split_recap(&c[0].content);
        assert_eq!(lines.len(), RECAP_LINES);
        assert!(
            lines[RECAP_LINES - 1].starts_with("- Q: u9985 "),
            "{lines:?}"
        );
    }

    #[test]
    fn messages_before_the_first_question_count_as_one_turn() {
        let mut c = chat("saiua");
        assert_eq!(drop_oldest_turns(&mut c, |m| m.len() <= 3).dropped, 1);
        assert_eq!(roles(&c), "sua");
    }

    #[test]
    fn saved_chats_round_trip() {
        let c = chat("suaiau");
        let text = conversation_to_json(&c);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["version"], 1);
        assert_eq!(value["messages"][3]["role"], "ipython");
        assert_eq!(value["messages"][3]["content"], "i3");
        assert_eq!(conversation_from_json(&text).unwrap(), c);
        assert!(
            conversation_from_json(&conversation_to_json(&[]))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_saved_chat_without_a_system_message_gets_the_agents() {
        let text = r#"{"version":1,"messages":[{"role":"user","content":"hi"}]}"#;
        let c = conversation_from_json(text).unwrap();
        assert_eq!(roles(&c), "su");
        assert_eq!(c[0].content, SYSTEM_PROMPT.trim());
    }

    #[test]
    fn bad_saved_chats_are_clear_errors() {
        let cases = [
            ("not json", "not a saved recall chat"),
            (r#"{"messages":[]}"#, "version"),
            (
                r#"{"version":2,"messages":[]}"#,
                "version 2 is not supported",
            ),
            (r#"{"version":1,"messages":[{"role":"user"}]}"#, "content"),
            (
                r#"{"version":1,"messages":[{"role":"user","content":"a"},{"role":"bot","content":"b"}]}"#,
                "message 2: unknown role \"bot\"",
            ),
        ];
        for (text, expected) in cases {
            let err = format!("{:#}", conversation_from_json(text).unwrap_err());
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn a_bad_file_is_an_error_naming_it_and_a_save_replaces_whole() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        let err = format!("{:#}", load_file(&missing).unwrap_err());
        assert!(err.contains("missing.json"), "{err}");
        let path = dir.path().join("s.json");
        save_file(&path, &chat("sua")).unwrap();
        save_file(&path, &chat("suaua")).unwrap();
        assert_eq!(load_file(&path).unwrap(), chat("suaua"));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["s.json"], "no temporary file is left behind");
        // A folder that is not there: an error naming the file, nothing written.
        let nowhere = dir.path().join("no such folder").join("s.json");
        let err = format!("{:#}", save_file(&nowhere, &chat("sua")).unwrap_err());
        assert!(
            err.contains("cannot save to") && err.contains("s.json"),
            "{err}"
        );
    }

    #[test]
    fn lines_are_questions_or_commands() {
        assert_eq!(parse_line("  "), Line::Empty);
        assert_eq!(parse_line(" what is X? \n"), Line::Question("what is X?"));
        assert_eq!(parse_line("/tools"), Line::Tools);
        assert_eq!(parse_line("/reset"), Line::Reset);
        assert_eq!(
            parse_line("/save  my chat.json "),
            Line::Save(Some("my chat.json"))
        );
        assert_eq!(parse_line("/save"), Line::Save(None));
        assert_eq!(parse_line("/load a.json"), Line::Load(Some("a.json")));
        assert_eq!(parse_line("/quit"), Line::Quit);
        assert_eq!(parse_line("/exit"), Line::Quit);
        assert_eq!(parse_line("/help"), Line::Help);
        assert_eq!(parse_line("/frob x"), Line::Unknown("/frob"));
    }
}
