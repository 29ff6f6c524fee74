//! `recall summarize`, `recall quiz` and `recall review`: study aids over the vault. This file
//! holds the commands and what they share ([`StudyJob`]: servers, notes, model, transcript).
//!
//! Data flows one way: the target (a note, a folder, a period or a search query) becomes notes
//! through the vault server's tools ([`target`]), the notes become pieces that fit a prompt
//! ([`chunk`]) and a long note the parts a summary reads it in ([`parts`]),
//! prompts are rendered from `prompts/study/` and generated under a grammar ([`writer`]) into
//! summaries ([`summarize`], each point traced to its section by [`sections`]), quiz items
//! ([`item`], put together into a quiz by [`quiz`]) or grades ([`grade`]), and the result goes
//! to stdout ([`export`]). Saved items live in a deck ([`deck`]) that [`review`] asks from.

mod chunk;
mod deck;
mod export;
mod grade;
mod item;
mod parts;
mod quiz;
mod review;
mod sections;
pub mod served;
mod summarize;
mod target;
mod writer;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use chrono::{DateTime, Utc};

use anyhow::{Result, bail};
use serde::Serialize;

pub use chunk::{chunk_text, headings};
pub use deck::Deck;
pub use grade::{Grade, grade_grammar, parse_grade};
pub use item::{ItemBounds, QaPair, item_grammar, parse_item};
pub use summarize::{parse_summary, points_grammar, summary_grammar};
pub use target::{NothingMatches, Scope, SourceNote, gather_notes, read_notes};
pub use writer::Grammar;

use crate::cli::{GlobalArgs, QuizFormat, RunArgs};
use crate::engine::GenerateRequest;
use crate::mcp::McpManager;
use crate::report::append_transcript;
use crate::session::Workbench;
use writer::{Generation, Writer};

/// What `recall quiz` was asked for.
#[derive(Debug, Clone)]
pub struct QuizRequest {
    /// A note, folder, period or search query.
    pub scope: Scope,
    /// How many questions.
    pub count: usize,
    /// Output format.
    pub format: QuizFormat,
    /// Ask on the terminal and grade.
    pub interactive: bool,
    /// The deck to add the items to (`--save`).
    pub save: Option<PathBuf>,
}

/// What `recall review` was asked for.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    /// The deck file.
    pub deck: PathBuf,
    /// The time to review at.
    pub now: DateTime<Utc>,
    /// Most cards to ask.
    pub limit: Option<usize>,
}

/// `recall summarize`.
pub fn summarize(global: &GlobalArgs, run: &RunArgs, scope: &Scope) -> Result<()> {
    let label = scope.label();
    let job = StudyJob {
        command: "summarize",
        target: &label,
        global,
        run,
    };
    job.run(scope, |writer, notes| {
        summarize::write_summary(writer, notes, global.json, &label, &mut std::io::stdout())
    })
}

/// `recall quiz`.
pub fn quiz(global: &GlobalArgs, run: &RunArgs, request: &QuizRequest) -> Result<()> {
    if request.count == 0 {
        bail!("--count must be at least 1");
    }
    if request.interactive && !std::io::stdin().is_terminal() {
        bail!(
            "--interactive asks on a terminal, but stdin is not one; run without --interactive \
             to print the questions"
        );
    }
    let label = request.scope.label();
    let job = StudyJob {
        command: "quiz",
        target: &label,
        global,
        run,
    };
    job.run(&request.scope, |writer, notes| {
        quiz::write_quiz(writer, notes, global.json, request, &mut std::io::stdout())
    })
}

/// `recall review`: with `--json`, the due cards (no model, no servers); else the due cards
/// asked, graded and scheduled.
pub fn review(global: &GlobalArgs, run: &RunArgs, request: &ReviewRequest) -> Result<()> {
    let mut deck = Deck::open(&request.deck)?;
    let mut out = std::io::stdout();
    if global.json {
        let report = review::DueReport::new(&deck, request.now);
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
        return Ok(());
    }
    let mut due = deck.due(request.now);
    due.truncate(request.limit.unwrap_or(usize::MAX));
    if due.is_empty() {
        if deck.cards.is_empty() {
            writeln!(
                out,
                "The deck {} holds no cards yet: `recall quiz TARGET --save` adds the                  questions it writes.",
                deck.path().display()
            )?;
        } else {
            let next = deck.next_due(request.now);
            writeln!(
                out,
                "Nothing is due ({} cards{}).",
                deck.cards.len(),
                next.map(|n| format!("; the next is due {}", n.format("%Y-%m-%d %H:%M UTC")))
                    .unwrap_or_default()
            )?;
        }
        return Ok(());
    }
    let mut uris: Vec<String> = due
        .iter()
        .map(|&i| deck.cards[i].source.uri.clone())
        .collect();
    uris.sort();
    uris.dedup();
    let job = StudyJob {
        command: "review",
        target: "due cards",
        global,
        run,
    };
    let mut input = std::io::stdin().lock();
    job.run_on(
        |runtime, host| {
            let notes = read_notes(runtime, host, &uris)?;
            Ok(uris.iter().cloned().zip(notes).collect::<Vec<_>>())
        },
        |writer, notes| {
            review::ask_due(
                writer,
                &mut deck,
                &due,
                notes,
                request.now,
                &mut input,
                &mut out,
            )
        },
    )
}

/// What `summarize` and `quiz` share: the flags and the notes the target names (`target`
/// labels the run in headings and the transcript).
struct StudyJob<'a> {
    command: &'static str,
    target: &'a str,
    global: &'a GlobalArgs,
    run: &'a RunArgs,
}

impl StudyJob<'_> {
    /// Starts the servers, gathers the target's notes (before the model loads: a bad target
    /// fails fast), loads the model, runs `write` on a fresh context, and logs its generations.
    fn run(
        self,
        scope: &Scope,
        write: impl FnOnce(&mut Writer, &[SourceNote]) -> Result<()>,
    ) -> Result<()> {
        self.run_on(
            |runtime, host| gather_notes(runtime, host, scope),
            |writer, notes: &Vec<SourceNote>| write(writer, notes),
        )
    }

    /// [`StudyJob::run`] with notes that `gather` reads through the vault tools.
    fn run_on<T>(
        self,
        gather: impl FnOnce(&tokio::runtime::Runtime, &McpManager) -> Result<T>,
        write: impl FnOnce(&mut Writer, &T) -> Result<()>,
    ) -> Result<()> {
        let (bench, notes) = Workbench::open_after(self.global, self.run, gather)?;
        let result = bench.session().and_then(|mut session| {
            let mut writer = Writer {
                request: self.request(&bench),
                model: &mut session,
                template: &bench.template,
                verbose: self.global.verbose,
                log: Vec::new(),
                on_step: &|_| {},
            };
            let result = write(&mut writer, &notes);
            let logged = self.log_generations(&writer.log, &result);
            match (result, logged) {
                // A transcript that cannot be written must not hide why the run itself failed.
                (Err(err), Err(log_err)) => {
                    eprintln!("recall: warning: {log_err:#}");
                    Err(err)
                }
                (result, logged) => logged.and(result),
            }
        });
        bench.close();
        result
    }

    fn request(&self, bench: &Workbench) -> GenerateRequest {
        study_request(self.run, bench.interrupt.token())
    }

    /// Appends the run's generations to the `--transcript` file, if one was asked for (also
    /// when the run failed part-way: that is when the transcript is most wanted).
    fn log_generations(&self, generations: &[Generation], result: &Result<()>) -> Result<()> {
        let Some(path) = &self.global.transcript else {
            return Ok(());
        };
        let entry = TranscriptEntry {
            command: self.command,
            target: self.target,
            generations,
            error: result.as_ref().err().map(|e| format!("{e:#}")),
        };
        append_transcript(path, &entry)
    }
}

/// Sampling near greedy: summaries, questions and grades should follow the note, not
/// wander. Each generation gets its grammar from the caller.
fn study_request(run: &RunArgs, cancel: crate::engine::CancellationToken) -> GenerateRequest {
    let mut sampling = run.model.sampling();
    sampling.temperature = sampling.temperature.min(0.3);
    GenerateRequest {
        max_tokens: run.agent.study_tokens(),
        sampling,
        stop: Vec::new(),
        constraint: None,
        cancel,
        stable_prefix: 0,
    }
}

/// One `--transcript` line of a study run.
#[derive(Serialize)]
struct TranscriptEntry<'a> {
    command: &'static str,
    target: &'a str,
    generations: &'a [Generation],
    error: Option<String>,
}
