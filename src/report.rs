//! The JSON the command layer prints: a turn's `--json` report, one generation's timings, the
//! `--transcript` lines, each a `Serialize` type whose fields are written in declaration order
//! (tests, `benches/answer-quality` and `benches/ask-ttft` read these keys).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::agent::{CallRecord, StepRecord, Turn};
use crate::engine::GenerationStats;
use crate::engine::ModelInfo;
use crate::prompt::Message;
use crate::sources::Citation;

/// The `--json` report of one turn (`ask`, and each turn of `chat`).
#[derive(Serialize)]
pub struct TurnReport<'a> {
    answer: &'a str,
    fallback: bool,
    citations: &'a [Citation],
    steps: Vec<StepReport<'a>>,
    model: &'a str,
}

impl<'a> TurnReport<'a> {
    /// The report of `turn`, answered by the model `info` describes.
    pub fn new(turn: &'a Turn, info: &'a ModelInfo) -> Self {
        TurnReport {
            answer: &turn.answer,
            fallback: turn.fallback,
            citations: &turn.citations,
            steps: turn.steps.iter().map(StepReport::new).collect(),
            model: &info.name,
        }
    }
}

/// One step of a [`TurnReport`].
#[derive(Serialize)]
struct StepReport<'a> {
    kind: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    input: &'a str,
    output: &'a str,
    calls: Vec<CallReport<'a>>,
    timings: Timings,
}

impl<'a> StepReport<'a> {
    fn new(step: &'a StepRecord) -> Self {
        StepReport {
            kind: step.kind,
            input: &step.input,
            output: &step.output,
            calls: step.calls.iter().map(CallReport::new).collect(),
            timings: Timings::new(&step.stats),
        }
    }
}

/// One tool call of a [`StepReport`].
#[derive(Serialize)]
struct CallReport<'a> {
    name: &'a str,
    arguments: &'a Value,
    server: Option<&'a str>,
    ok: bool,
    result_chars: usize,
    notes: &'a [String],
    ms: u64,
}

impl<'a> CallReport<'a> {
    fn new(call: &'a CallRecord) -> Self {
        CallReport {
            name: &call.name,
            arguments: &call.arguments,
            server: call.server.as_deref(),
            ok: call.ok,
            result_chars: call.result_chars,
            notes: &call.notes,
            ms: call.elapsed.as_millis() as u64,
        }
    }
}

/// One generation's token counts and times, as `--json` and `--transcript` print them.
#[derive(Debug, Serialize)]
pub struct Timings {
    prompt_tokens: usize,
    prompt_tokens_reused: usize,
    prompt_tokens_restored: usize,
    prompt_tokens_evaluated: usize,
    generated_tokens: usize,
    prompt_ms: u64,
    generation_ms: u64,
}

impl Timings {
    /// The timings of the generation `stats` describes.
    pub fn new(stats: &GenerationStats) -> Self {
        Timings {
            prompt_tokens: stats.prompt_tokens,
            prompt_tokens_reused: stats.reused_tokens,
            prompt_tokens_restored: stats.restored_tokens,
            prompt_tokens_evaluated: stats.evaluated_tokens,
            generated_tokens: stats.generated_tokens,
            prompt_ms: stats.prompt_time.as_millis() as u64,
            generation_ms: stats.generation_time.as_millis() as u64,
        }
    }
}

/// A `--transcript` line of a conversation: its messages and the turn's report.
#[derive(Serialize)]
struct ConversationEntry<'a> {
    messages: Vec<MessageEntry<'a>>,
    run: &'a TurnReport<'a>,
}

/// One message of a [`ConversationEntry`].
#[derive(Serialize)]
struct MessageEntry<'a> {
    role: &'static str,
    content: &'a str,
}

/// Appends one JSON line (messages and report) to the `--transcript` file.
pub fn write_transcript(path: &Path, conversation: &[Message], report: &TurnReport) -> Result<()> {
    let messages = conversation
        .iter()
        .map(|m| MessageEntry {
            role: m.role.as_str(),
            content: &m.content,
        })
        .collect();
    append_transcript(
        path,
        &ConversationEntry {
            messages,
            run: report,
        },
    )
}

/// Appends `entry` as one JSON line to the `--transcript` file.
pub fn append_transcript(path: &Path, entry: &impl Serialize) -> Result<()> {
    let line = serde_json::to_string(entry).context("cannot write the transcript entry")?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot write transcript {}", path.display()))?;
    writeln!(file, "{line}")
        .with_context(|| format!("cannot write transcript {}", path.display()))?;
    Ok(())
}
