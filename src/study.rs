//! `recall summarize` and `recall quiz`: study aids over the vault.
//!
//! Data flows one way: the target (a note, a folder or a search query) becomes notes through the
//! vault server's tools (never by reading files), the notes become prompts, the model writes, and
//! the result goes to stdout. The instructions live in `prompts/study/*.txt`. The pure pieces
//! (placeholders, chunking, Q/A parsing, grading replies, CSV) are tested here without a model.

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::sync::LazyLock;

use anyhow::{Context, Result, bail};
use obsidian_kb::api;
use regex::Regex;
use serde_json::{Value, json};

use crate::cli::{AgentArgs, GlobalArgs, ModelArgs, QuizFormat, ServerArgs};
use crate::commands::{Workbench, append_transcript, stream_to_stdout, timings_json};
use crate::engine::{Cancelled, ChatModel, GenerateRequest, StopReason};
use crate::prompt::{ChatTemplate, Message};
use crate::tool::ToolHost;
use crate::vault::{VaultClient, VaultError};

const SUMMARIZE: &str = include_str!("../prompts/study/summarize.txt");
const NOTE: &str = include_str!("../prompts/study/note.txt");
const NOTE_PART: &str = include_str!("../prompts/study/note_part.txt");
const COMBINE: &str = include_str!("../prompts/study/combine.txt");
const COMBINE_USER: &str = include_str!("../prompts/study/combine_user.txt");
const QUIZ: &str = include_str!("../prompts/study/quiz.txt");
const QUIZ_NOTE: &str = include_str!("../prompts/study/quiz_note.txt");
const QUIZ_AVOID: &str = include_str!("../prompts/study/quiz_avoid.txt");
const QUIZ_RETRY: &str = include_str!("../prompts/study/quiz_retry.txt");
const GRADE: &str = include_str!("../prompts/study/grade.txt");
const GRADE_USER: &str = include_str!("../prompts/study/grade_user.txt");

/// Most notes a folder target brings in; a summary of more would say little about each.
const MAX_NOTES: usize = 50;
/// Search hits used when the target is neither a note nor a folder.
const SEARCH_HITS: usize = 5;
/// Characters per `read_note` page (the server's maximum).
const READ_PAGE: usize = 100_000;
/// Tokens kept free beyond the prompt and the output, for tokenization differences at joins.
const SLACK_TOKENS: usize = 16;
/// Below this many tokens of note text per prompt, chunking would only produce noise.
const MIN_TEXT_TOKENS: usize = 64;
/// Earlier questions of a note shown to the model so it asks something new.
const AVOID_SHOWN: usize = 5;
/// Tokens set aside in quiz prompts for that list and the retry reminder.
const AVOID_RESERVE: usize = 256;

/// What `recall quiz` was asked for.
#[derive(Debug, Clone)]
pub struct QuizRequest {
    /// A note, folder or search query.
    pub target: String,
    /// How many questions.
    pub count: usize,
    /// Output format.
    pub format: QuizFormat,
    /// Ask on the terminal and grade.
    pub interactive: bool,
}

/// One note, read whole through the vault server.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceNote {
    /// Its `note://` URI, as the server gave it.
    pub uri: String,
    /// Its title.
    pub title: String,
    /// Its text (without frontmatter).
    pub content: String,
}

/// The vault server's tools, for reading whole notes, folders and searches.
struct Vault<'a, H> {
    client: VaultClient<'a, H>,
}

impl<'a, H: ToolHost> Vault<'a, H> {
    fn new(runtime: &'a tokio::runtime::Runtime, host: &'a H) -> Result<Self> {
        let client = VaultClient::new(runtime, host).context(
            "no vault server is available: summarize and quiz need one \
             (pass --vault DIR, or name obsidian-kb in the config)",
        )?;
        Ok(Vault { client })
    }

    /// The whole note, page by page; `None` when the server knows no such note.
    fn read_whole(&self, reference: &str) -> Result<Option<SourceNote>> {
        let params = api::ReadParams {
            uri: reference.to_string(),
            max_chars: Some(READ_PAGE),
            ..api::ReadParams::default()
        };
        let mut page: api::ReadOutput = match self.client.call(api::READ_NOTE, &params) {
            Ok(page) => page,
            Err(VaultError::Failed { text, .. }) => {
                tracing::debug!("{reference:?} is not a note: {text}");
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let mut note = SourceNote {
            uri: page.uri.clone(),
            title: page.title.clone(),
            content: std::mem::take(&mut page.content),
        };
        while let Some(offset) = page.next_offset {
            let params = api::ReadParams {
                uri: note.uri.clone(),
                offset: Some(offset),
                max_chars: Some(READ_PAGE),
                ..api::ReadParams::default()
            };
            page = self
                .client
                .call(api::READ_NOTE, &params)
                .with_context(|| format!("reading {} at offset {offset} failed", note.uri))?;
            note.content.push_str(&page.content);
        }
        Ok(Some(note))
    }

    /// Notes in `folder` (subfolders included), at most `MAX_NOTES + 1` to detect the cap.
    fn folder(&self, folder: &str) -> Result<Vec<String>> {
        let mut uris = Vec::new();
        let mut params = api::ListParams {
            folder: Some(folder.to_string()),
            limit: Some(MAX_NOTES + 1),
            ..api::ListParams::default()
        };
        loop {
            let page: api::ListOutput = match self.client.call(api::LIST_NOTES, &params) {
                Ok(page) => page,
                Err(VaultError::Failed { text, .. }) => {
                    tracing::debug!("{folder:?} is not a folder: {text}");
                    return Ok(uris);
                }
                Err(e) => return Err(e.into()),
            };
            uris.extend(page.notes.into_iter().map(|n| n.uri));
            params.cursor = page.next_cursor;
            if params.cursor.is_none() || uris.len() > MAX_NOTES {
                return Ok(uris);
            }
        }
    }

    fn search(&self, query: &str) -> Result<Vec<String>> {
        let params = api::SearchParams {
            query: query.to_string(),
            limit: Some(SEARCH_HITS),
            ..api::SearchParams::default()
        };
        let page: api::SearchOutput = self.client.call(api::SEARCH_NOTES, &params)?;
        let mut uris: Vec<String> = Vec::new();
        // A study target is a name or a topic the person typed: notes that share its words.
        // Search by meaning always finds some nearest note, even for a typo or nonsense.
        for hit in page
            .hits
            .into_iter()
            .filter(|h| h.matched != api::Matched::Meaning)
        {
            if !uris.contains(&hit.uri) {
                uris.push(hit.uri);
            }
        }
        Ok(uris)
    }
}

/// True when `target` names `note` exactly: its vault path or file name (with or without
/// `.md`, any case), or its URI; not merely an alias or a title.
fn names_note_exactly(target: &str, note: &SourceNote) -> bool {
    let path = note.uri.strip_prefix("note://").unwrap_or(&note.uri);
    let target = target.trim().trim_start_matches("note://");
    let target = target.strip_suffix(".md").unwrap_or(target);
    let file = path.rsplit('/').next().unwrap_or(path);
    target.eq_ignore_ascii_case(path) || target.eq_ignore_ascii_case(file)
}

/// Resolves a target to notes: a note (URI, path, name or alias), else a folder, else the best
/// search hits; each read whole.
pub fn gather_notes<H: ToolHost>(
    runtime: &tokio::runtime::Runtime,
    host: &H,
    target: &str,
) -> Result<Vec<SourceNote>> {
    let target = target.trim();
    if target.is_empty() {
        bail!("the target is empty: name a note, a folder, or words to search for");
    }
    let vault = Vault::new(runtime, host)?;
    let note = vault.read_whole(target)?;
    // A note named exactly so wins; else a folder named exactly so wins over a note that only
    // matched by alias ("Obsidian Sync" the folder, not "Introduction to Obsidian Sync").
    if let Some(note) = note.as_ref().filter(|n| names_note_exactly(target, n)) {
        eprintln!("recall: using the note {}", note.uri);
        return Ok(vec![note.clone()]);
    }
    let mut uris = vault.folder(target)?;
    if let Some(note) = note {
        if uris.is_empty() {
            eprintln!(
                "recall: using the note {} (its name or alias matches)",
                note.uri
            );
            return Ok(vec![note]);
        }
        eprintln!(
            "recall: {target:?} is a folder and also matches the note {} by alias; using the folder",
            note.uri
        );
    }
    let how = if uris.is_empty() {
        uris = vault.search(target)?;
        format!("the notes a search for {target:?} found")
    } else {
        format!("the notes in folder {target:?}")
    };
    if uris.is_empty() {
        bail!(
            "nothing in the vault matches {target:?}: it is not a note, a folder, or words any \
             note contains (see `recall call list_notes` for what is there)"
        );
    }
    if uris.len() > MAX_NOTES {
        uris.truncate(MAX_NOTES);
        eprintln!(
            "recall: {target:?} holds more than {MAX_NOTES} notes; using the first {MAX_NOTES}"
        );
    }
    let mut seen = HashSet::new();
    let mut notes = Vec::new();
    for uri in uris {
        if !seen.insert(uri.clone()) {
            continue;
        }
        match vault.read_whole(&uri)? {
            Some(note) => notes.push(note),
            None => eprintln!("recall: cannot read {uri}; leaving it out"),
        }
    }
    if notes.is_empty() {
        bail!("none of {how} could be read");
    }
    eprintln!(
        "recall: no note is named {target:?}; using {how} ({})",
        notes.len()
    );
    Ok(notes)
}

/// Renders study prompts and runs the model on them.
struct Writer<'a> {
    model: &'a mut dyn ChatModel,
    template: &'a ChatTemplate,
    request: GenerateRequest,
    verbose: bool,
    /// Every generation so far (prompt parts and reply), for `--transcript`.
    log: Vec<Value>,
}

impl Writer<'_> {
    fn prompt(&self, system: &str, user: &str) -> Result<String> {
        let conversation = [Message::system(system.trim()), Message::user(user)];
        Ok(self.template.answer(&conversation)?.text)
    }

    fn count(&self, text: &str) -> usize {
        self.model.count_tokens(text)
    }

    /// Tokens of note text that fit beside `system` and `user` (the user message without the
    /// text) while leaving room for the reply.
    fn text_budget(&self, system: &str, user: &str, reserve: usize) -> Result<usize> {
        let overhead = self.count(&self.prompt(system, user)?);
        let context = self.model.context_size();
        let budget =
            context.saturating_sub(overhead + self.request.max_tokens + SLACK_TOKENS + reserve);
        if budget < MIN_TEXT_TOKENS {
            bail!(
                "the context of {context} tokens leaves no room for note text beside the prompt \
                 ({overhead} tokens) and the reply (--max-tokens {}); raise --ctx or lower --max-tokens",
                self.request.max_tokens
            );
        }
        Ok(budget)
    }

    /// True when the prompt leaves room for the reply.
    fn fits(&self, system: &str, user: &str) -> Result<bool> {
        let tokens = self.count(&self.prompt(system, user)?);
        Ok(tokens + self.request.max_tokens + SLACK_TOKENS <= self.model.context_size())
    }

    /// One generation; streamed to stdout when `stream`.
    fn generate(&mut self, system: &str, user: &str, stream: bool) -> Result<String> {
        self.complete(system, user, "", &[], stream)
    }

    /// One generation whose reply starts with `prefill` (written into the prompt after the
    /// assistant header, so the model continues it) and ends at any of `stop`.
    fn complete(
        &mut self,
        system: &str,
        user: &str,
        prefill: &str,
        stop: &[&str],
        stream: bool,
    ) -> Result<String> {
        let prompt = self.prompt(system, user)? + prefill;
        if self.verbose {
            eprintln!("recall: prompt\n{prompt}");
        }
        let request = GenerateRequest {
            stop: stop.iter().map(|s| s.to_string()).collect(),
            ..self.request.clone()
        };
        let mut sink = stream_to_stdout(stream);
        let completion = self.model.generate(&prompt, &request, &mut sink)?;
        if stream {
            // The reply may end mid-line (at --max-tokens); what follows starts on its own.
            writeln!(std::io::stdout())?;
        }
        if self.verbose {
            eprintln!(
                "recall: output ({:?})\n{}",
                completion.stop, completion.text
            );
        }
        self.log.push(json!({
            "system": system.trim(),
            "user": user,
            "prefill": prefill,
            "reply": completion.text,
            "stop": format!("{:?}", completion.stop),
            "timings": timings_json(&completion.stats),
        }));
        if completion.stop == StopReason::Cancelled {
            return Err(Cancelled.into());
        }
        Ok(format!("{prefill}{}", completion.text).trim().to_string())
    }
}

fn request(model_args: &ModelArgs, agent_args: &AgentArgs, bench: &Workbench) -> GenerateRequest {
    let mut sampling = model_args.sampling();
    // Summaries, questions and grades should follow the note, not wander: stay near greedy.
    sampling.temperature = sampling.temperature.min(0.3);
    GenerateRequest {
        max_tokens: agent_args.max_tokens,
        sampling,
        stop: Vec::new(),
        constraint: None,
        cancel: bench.interrupt.token(),
        stable_prefix: 0,
    }
}

/// Fills `{name}` placeholders of a prompt file in one pass (values are never scanned, so a
/// note containing `{text}` stays as written); unknown braces are kept.
pub fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template.trim_end();
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let value = after.find('}').and_then(|end| {
            vars.iter()
                .find(|(name, _)| *name == &after[..end])
                .map(|(_, value)| (*value, end))
        });
        match value {
            Some((value, end)) => {
                out.push_str(value);
                rest = &after[end + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[derive(Clone, Copy)]
enum Unit {
    Block,
    Line,
    Word,
    Piece,
}

impl Unit {
    fn finer(self) -> Option<Unit> {
        match self {
            Unit::Block => Some(Unit::Line),
            Unit::Line => Some(Unit::Word),
            Unit::Word => Some(Unit::Piece),
            Unit::Piece => None,
        }
    }

    fn separator(self) -> &'static str {
        match self {
            Unit::Block => "\n\n",
            Unit::Line => "\n",
            Unit::Word => " ",
            Unit::Piece => "",
        }
    }

    fn split(self, text: &str) -> Vec<String> {
        match self {
            Unit::Block => blocks(text),
            Unit::Line => text.lines().map(str::to_string).collect(),
            Unit::Word => text.split_whitespace().map(str::to_string).collect(),
            // A "word" too long for a chunk (a data blob): cut it into short runs of characters.
            Unit::Piece => {
                let chars: Vec<char> = text.chars().collect();
                chars.chunks(32).map(|c| c.iter().collect()).collect()
            }
        }
    }
}

/// Paragraphs, with each heading starting a new one.
fn blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let heading = line.starts_with('#') && line.trim_start_matches('#').starts_with(' ');
        if line.trim().is_empty() || heading {
            if !current.trim().is_empty() {
                blocks.push(current.trim_end().to_string());
            }
            current.clear();
        }
        if !line.trim().is_empty() {
            if !current.is_empty() {
                current.push('\n');
            }
            current.push_str(line);
        }
    }
    if !current.trim().is_empty() {
        blocks.push(current.trim_end().to_string());
    }
    blocks
}

/// Splits `text` into chunks that each satisfy `fits`, cutting at headings and blank lines
/// where possible, then at line ends, then between words, and inside a word only as a last
/// resort. A chunk fails `fits` only when a run of 32 characters does.
pub fn chunk_text(text: &str, fits: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut chunks = Vec::new();
    pack(Unit::Block.split(text), Unit::Block, fits, &mut chunks);
    chunks
}

fn pack(units: Vec<String>, unit: Unit, fits: &dyn Fn(&str) -> bool, out: &mut Vec<String>) {
    let mut current = String::new();
    for piece in units {
        if !current.is_empty() {
            let candidate = format!("{current}{}{piece}", unit.separator());
            if fits(&candidate) {
                current = candidate;
                continue;
            }
            out.push(std::mem::take(&mut current));
        }
        if fits(&piece) {
            current = piece;
        } else if let Some(finer) = unit.finer() {
            pack(finer.split(&piece), finer, fits, out);
        } else {
            out.push(piece);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
}

/// `recall summarize`.
pub fn summarize(
    global: &GlobalArgs,
    model_args: &ModelArgs,
    server_args: &ServerArgs,
    agent_args: &AgentArgs,
    target: &str,
) -> Result<()> {
    let job = StudyJob {
        command: "summarize",
        target,
        global,
        model_args,
        server_args,
        agent_args,
    };
    job.run(|writer, notes| write_summary(writer, notes, global.json, target))
}

/// What `summarize` and `quiz` share: the flags and the notes the target names.
struct StudyJob<'a> {
    command: &'static str,
    target: &'a str,
    global: &'a GlobalArgs,
    model_args: &'a ModelArgs,
    server_args: &'a ServerArgs,
    agent_args: &'a AgentArgs,
}

impl StudyJob<'_> {
    /// Starts the servers, gathers the target's notes (before the model loads: a bad target
    /// fails fast), loads the model, runs `write` on a fresh context, and logs its generations.
    fn run(self, write: impl FnOnce(&mut Writer, &[SourceNote]) -> Result<()>) -> Result<()> {
        let (bench, notes) = Workbench::open_after(
            self.global,
            self.model_args,
            self.server_args,
            |runtime, host| gather_notes(runtime, host, self.target),
        )?;
        let result = bench.session(self.model_args).and_then(|mut session| {
            let mut writer = Writer {
                request: request(self.model_args, self.agent_args, &bench),
                model: &mut session,
                template: &bench.template,
                verbose: self.global.verbose,
                log: Vec::new(),
            };
            let result = write(&mut writer, &notes);
            let logged = log_generations(self.global, self.command, self.target, &writer, &result);
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
}

/// Appends the run's generations to the `--transcript` file, if one was asked for (also when
/// the run failed part-way: that is when the transcript is most wanted).
fn log_generations(
    global: &GlobalArgs,
    command: &str,
    target: &str,
    writer: &Writer,
    result: &Result<()>,
) -> Result<()> {
    let Some(path) = &global.transcript else {
        return Ok(());
    };
    let entry = json!({
        "command": command,
        "target": target,
        "generations": writer.log,
        "error": result.as_ref().err().map(|e| format!("{e:#}")),
    });
    append_transcript(path, &entry)
}

/// Summarizes `notes` (one, or each and then all together) and prints the summary.
fn write_summary(
    writer: &mut Writer,
    notes: &[SourceNote],
    json: bool,
    target: &str,
) -> Result<()> {
    let stream = !json;
    let mut out = std::io::stdout();
    if stream {
        writeln!(out, "# Summary: {target}\n")?;
        out.flush()?;
    }
    let single = notes.len() == 1;
    let mut chunks = 0;
    let mut parts = Vec::new();
    for note in notes {
        let (summary, n) = summarize_note(writer, note, stream && single)?;
        chunks += n;
        parts.push(format!("### {}\n\n{summary}", note.title));
    }
    let summary = if single {
        // The note's summary without the heading added for combining.
        let (_, summary) = parts[0].split_once("\n\n").unwrap_or(("", &parts[0]));
        summary.to_string()
    } else {
        reduce(writer, target, parts, stream)?
    };
    if json {
        let sources: Vec<Value> = notes
            .iter()
            .map(|n| json!({"title": n.title, "uri": n.uri}))
            .collect();
        let report = json!({"summary": summary, "sources": sources, "chunks": chunks});
        writeln!(out, "{report}")?;
    } else {
        writeln!(out, "\n## Sources\n")?;
        for note in notes {
            writeln!(out, "- {} ({})", note.title, note.uri)?;
        }
    }
    Ok(())
}

/// One note's summary and the number of chunks it took: one generation when the note fits,
/// else one per chunk and then a combining pass.
fn summarize_note(writer: &mut Writer, note: &SourceNote, stream: bool) -> Result<(String, usize)> {
    let title = note.title.as_str();
    let whole = fill(NOTE, &[("title", title), ("text", &note.content)]);
    if writer.fits(SUMMARIZE, &whole)? {
        return Ok((writer.generate(SUMMARIZE, &whole, stream)?, 1));
    }
    let frame = fill(
        NOTE_PART,
        &[
            ("title", title),
            ("part", "999"),
            ("parts", "999"),
            ("text", ""),
        ],
    );
    let budget = writer.text_budget(SUMMARIZE, &frame, 0)?;
    let chunks = chunk_text(&note.content, &|text| writer.count(text) <= budget);
    let total = chunks.len().to_string();
    let mut summaries = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        tracing::info!("summarizing {} part {}/{total}", note.uri, i + 1);
        let part = (i + 1).to_string();
        let user = fill(
            NOTE_PART,
            &[
                ("title", title),
                ("part", &part),
                ("parts", &total),
                ("text", chunk),
            ],
        );
        summaries.push(writer.generate(SUMMARIZE, &user, false)?);
    }
    Ok((reduce(writer, title, summaries, stream)?, chunks.len()))
}

/// Combines partial summaries into one; when they do not fit one prompt, combines groups of
/// them first (and so on).
fn reduce(
    writer: &mut Writer,
    title: &str,
    mut parts: Vec<String>,
    stream: bool,
) -> Result<String> {
    loop {
        let joined = parts.join("\n\n");
        let user = fill(COMBINE_USER, &[("title", title), ("text", &joined)]);
        if writer.fits(COMBINE, &user)? {
            return writer.generate(COMBINE, &user, stream);
        }
        let frame = fill(COMBINE_USER, &[("title", title), ("text", "")]);
        let budget = writer.text_budget(COMBINE, &frame, 0)?;
        let groups = chunk_text(&joined, &|text| writer.count(text) <= budget);
        if groups.len() >= parts.len() {
            bail!(
                "{} partial summaries of {title} do not fit the context together; raise --ctx or \
                 lower --max-tokens",
                parts.len()
            );
        }
        let mut next = Vec::new();
        for group in &groups {
            let user = fill(COMBINE_USER, &[("title", title), ("text", group)]);
            next.push(writer.generate(COMBINE, &user, false)?);
        }
        parts = next;
    }
}

/// A question with its answer, as the model wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QaPair {
    /// The question.
    pub question: String,
    /// The answer.
    pub answer: String,
}

static LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*(?:[-*+>]\s+)?(?:\d+\s*[.)]\s*)?(?:\*\*|__)?\s*(question|answer|q|a)\s*(\d+)?\s*(?:\*\*|__)?\s*([:.)])\s*(?:\*\*|__)?\s*(.*)$",
    )
    .expect("valid regex")
});

static INLINE_ANSWER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\s(?:\*\*|__)?(?:A|Answer|ANSWER)\s*\d*\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*")
        .expect("valid regex")
});

/// Reads `Q: …` / `A: …` pairs out of a model's reply, tolerating what small models add:
/// text around them, numbering (`1.`, `Q1:`), bullets, bold labels, `Question:`/`Answer:`, the
/// answer on the question's line or on the lines after a bare `A:`. A question without an
/// answer is dropped.
pub fn parse_qa(text: &str) -> Vec<QaPair> {
    let mut pairs = Vec::new();
    let mut question: Option<String> = None;
    let mut answer: Option<String> = None;
    // A bare `A:` line: the answer is the lines after it, up to a blank line.
    let mut answer_block = false;
    let mut flush = |question: &mut Option<String>, answer: &mut Option<String>| {
        if let (Some(q), Some(a)) = (question.take(), answer.take()) {
            let (q, a) = (clean(&q), clean(&a));
            if !q.is_empty() && !a.is_empty() {
                pairs.push(QaPair {
                    question: q,
                    answer: a,
                });
            }
        }
    };
    for line in text.lines() {
        let label = LABEL
            .captures(line)
            .filter(|c| &c[3] == ":" || c.get(2).is_some());
        if let Some(caps) = label {
            let rest = caps[4].trim();
            if caps[1].to_lowercase().starts_with('q') {
                flush(&mut question, &mut answer);
                answer_block = false;
                match INLINE_ANSWER.find(rest) {
                    Some(m) => {
                        question = Some(rest[..m.start()].to_string());
                        answer = Some(rest[m.end()..].to_string());
                    }
                    None => question = Some(rest.to_string()),
                }
            } else if question.is_some() && answer.is_none() {
                answer_block = rest.is_empty();
                answer = Some(rest.to_string());
            }
            continue;
        }
        let line = line.trim();
        match (&mut question, &mut answer) {
            (Some(_), Some(_)) if line.is_empty() => {
                flush(&mut question, &mut answer);
                answer_block = false;
            }
            (Some(_), Some(a)) if answer_block => {
                if !a.is_empty() {
                    a.push('\n');
                }
                a.push_str(line);
            }
            // Anything after a one-line answer is commentary: the pair is complete.
            (Some(_), Some(_)) => flush(&mut question, &mut answer),
            (Some(q), None) if !line.is_empty() => {
                q.push(' ');
                q.push_str(line);
            }
            _ => {}
        }
    }
    flush(&mut question, &mut answer);
    pairs
}

fn clean(text: &str) -> String {
    let text = text.trim();
    // A label written `**Q:** text**`-style leaves an unmatched bold marker at the end.
    let text = if text.matches("**").count() % 2 == 1 {
        text.trim_end_matches("**").trim_end()
    } else {
        text
    };
    text.to_string()
}

fn same_question(a: &str, b: &str) -> bool {
    let key = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    key(a) == key(b)
}

/// How the model graded an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grade {
    /// Right.
    Correct,
    /// Partly right.
    Partly,
    /// Wrong.
    Wrong,
}

impl Grade {
    fn points(self) -> f32 {
        match self {
            Grade::Correct => 1.0,
            Grade::Partly => 0.5,
            Grade::Wrong => 0.0,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Grade::Correct => "correct",
            Grade::Partly => "partly",
            Grade::Wrong => "wrong",
        }
    }
}

/// The grade a reply names first (`incorrect` is wrong, not correct) and its one-line reason.
pub fn parse_grade(reply: &str) -> (Option<Grade>, String) {
    let line = reply
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let lower = line.to_lowercase();
    let words = [
        ("incorrect", Grade::Wrong),
        ("not correct", Grade::Wrong),
        ("partially", Grade::Partly),
        ("partly", Grade::Partly),
        ("wrong", Grade::Wrong),
        ("correct", Grade::Correct),
    ];
    let found = words
        .iter()
        .filter_map(|(word, grade)| lower.find(word).map(|at| (at, word.len(), *grade)))
        .min_by_key(|(at, len, _)| (*at, usize::MAX - len));
    let Some((at, len, grade)) = found else {
        return (None, line.to_string());
    };
    // The reason is what follows the grade word, without the separator.
    let why = line
        .get(at + len..)
        .unwrap_or("")
        .trim_start_matches(|c: char| c.is_whitespace() || "*:.-,".contains(c));
    let why = if why.is_empty() && at > 0 { line } else { why };
    (Some(grade), why.to_string())
}

/// One field of an RFC 4180 CSV row: quoted when it holds a comma, a quote or a line break
/// (quotes doubled inside), or starts with `#` (which Anki would read as a header line).
pub fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) || field.starts_with('#') {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// One CSV row, CRLF-terminated as RFC 4180 says.
pub fn csv_row(fields: &[&str]) -> String {
    let fields: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
    format!("{}\r\n", fields.join(","))
}

struct QuizItem {
    qa: QaPair,
    note: usize,
}

/// `recall quiz`.
pub fn quiz(
    global: &GlobalArgs,
    model_args: &ModelArgs,
    server_args: &ServerArgs,
    agent_args: &AgentArgs,
    request: &QuizRequest,
) -> Result<()> {
    if request.count == 0 {
        bail!("--count must be at least 1");
    }
    if request.interactive && !std::io::stdin().is_terminal() {
        bail!(
            "--interactive asks on a terminal, but stdin is not one; run without --interactive \
             to print the questions"
        );
    }
    let job = StudyJob {
        command: "quiz",
        target: &request.target,
        global,
        model_args,
        server_args,
        agent_args,
    };
    job.run(|writer, notes| write_quiz(writer, notes, global.json, request))
}

/// Writes `quiz.count` questions from `notes` in the asked format, or asks them one by one.
fn write_quiz(
    writer: &mut Writer,
    notes: &[SourceNote],
    json: bool,
    quiz: &QuizRequest,
) -> Result<()> {
    let format = if json { QuizFormat::Json } else { quiz.format };
    // Pieces of each note that fit a prompt: a long note's questions spread over its length.
    let mut pieces = Vec::new();
    for note in notes {
        let frame = fill(QUIZ_NOTE, &[("title", &note.title), ("text", "")]);
        let budget = writer.text_budget(QUIZ, &frame, AVOID_RESERVE)?;
        let mut chunks = chunk_text(&note.content, &|text| writer.count(text) <= budget);
        if chunks.is_empty() {
            chunks.push(String::new());
        }
        pieces.push(chunks);
    }
    let mut out = std::io::stdout();
    if quiz.interactive {
        return interactive(writer, notes, &pieces, quiz.count, &mut out);
    }
    if format == QuizFormat::Md {
        writeln!(out, "# Quiz: {}\n", quiz.target)?;
    }
    let mut items: Vec<QuizItem> = Vec::new();
    for slot in 0..quiz.count {
        let Some(item) = next_question(writer, notes, &pieces, &items, slot)? else {
            continue;
        };
        if format == QuizFormat::Md {
            // Printed as they come: a question is useful before the last one is written.
            let note = &notes[item.note];
            let indent = |s: &str| s.replace('\n', "\n   ");
            writeln!(
                out,
                "{}. {}\n   - Answer: {}\n   - Source: {} ({})\n",
                items.len() + 1,
                indent(&item.qa.question),
                indent(&item.qa.answer),
                note.title,
                note.uri
            )?;
            out.flush()?;
        }
        items.push(item);
    }
    if items.is_empty() {
        bail!(
            "the model wrote no question in the Q:/A: form; try a larger model (--model) or \
             --verbose to see its replies"
        );
    }
    match format {
        QuizFormat::Md => {}
        QuizFormat::Json => {
            let questions: Vec<Value> = items
                .iter()
                .map(|i| {
                    let note = &notes[i.note];
                    json!({"question": i.qa.question, "answer": i.qa.answer,
                           "source": {"title": note.title, "uri": note.uri}})
                })
                .collect();
            writeln!(out, "{}", json!({"questions": questions}))?;
        }
        QuizFormat::Anki => {
            for item in &items {
                let note = &notes[item.note];
                let source = format!("{} ({})", note.title, note.uri);
                write!(
                    out,
                    "{}",
                    csv_row(&[&item.qa.question, &item.qa.answer, &source])
                )?;
            }
        }
    }
    Ok(())
}

/// The question for `slot`: notes take turns, and a note's k-th question comes from its k-th
/// piece. `None` (with a note on stderr) when the model wrote nothing usable, even on retry.
fn next_question(
    writer: &mut Writer,
    notes: &[SourceNote],
    pieces: &[Vec<String>],
    items: &[QuizItem],
    slot: usize,
) -> Result<Option<QuizItem>> {
    let index = slot % notes.len();
    let round = slot / notes.len();
    let note = &notes[index];
    let piece = &pieces[index][round % pieces[index].len()];
    let asked: Vec<&str> = items
        .iter()
        .filter(|i| i.note == index)
        .map(|i| i.qa.question.as_str())
        .collect();
    let mut user = fill(QUIZ_NOTE, &[("title", &note.title), ("text", piece)]);
    if !asked.is_empty() {
        let shown: Vec<String> = asked
            .iter()
            .rev()
            .take(AVOID_SHOWN)
            .map(|q| format!("- {}", q.replace('\n', " ")))
            .collect();
        let avoid = fill(QUIZ_AVOID, &[("questions", &shown.join("\n"))]);
        let with_avoid = format!("{user}\n\n{avoid}");
        if writer.fits(QUIZ, &with_avoid)? {
            user = with_avoid;
        }
    }
    for attempt in 0..2 {
        let prompt = if attempt == 0 {
            user.clone()
        } else {
            format!("{user}\n\n{}", QUIZ_RETRY.trim())
        };
        // Starting the reply with the label gets small models past preambles and straight to a
        // question; the next `Q:` would begin a pair nobody asked for.
        let reply = writer.complete(QUIZ, &prompt, "Q:", &["\nQ:"], false)?;
        let new = parse_qa(&reply)
            .into_iter()
            .find(|qa| !asked.iter().any(|q| same_question(q, &qa.question)));
        if let Some(qa) = new {
            return Ok(Some(QuizItem { qa, note: index }));
        }
        tracing::info!(
            "no new Q/A pair from {} (attempt {})",
            note.uri,
            attempt + 1
        );
    }
    eprintln!(
        "recall: the model wrote no usable question about {} ({}); skipping it",
        note.title, note.uri
    );
    Ok(None)
}

/// Asks each question on the terminal, has the model grade the reply against the note's
/// answer, and prints the score. Ctrl-D (or Ctrl-C) ends early with the score so far.
fn interactive(
    writer: &mut Writer,
    notes: &[SourceNote],
    pieces: &[Vec<String>],
    count: usize,
    out: &mut impl Write,
) -> Result<()> {
    let cancel = writer.request.cancel.clone();
    let mut items: Vec<QuizItem> = Vec::new();
    let mut score = 0.0;
    let mut graded = 0;
    for slot in 0..count {
        let Some(item) = next_question(writer, notes, pieces, &items, slot)? else {
            continue;
        };
        let note = &notes[item.note];
        writeln!(
            out,
            "\nQuestion {}: {}\n(from {})",
            items.len() + 1,
            item.qa.question,
            note.title
        )?;
        write!(out, "> ")?;
        out.flush()?;
        let mut reply = String::new();
        if std::io::stdin().read_line(&mut reply)? == 0 || cancel.is_cancelled() {
            writeln!(out)?;
            break;
        }
        let user = fill(
            GRADE_USER,
            &[
                ("question", &item.qa.question),
                ("answer", &item.qa.answer),
                ("reply", reply.trim()),
            ],
        );
        let verdict = writer.generate(GRADE, &user, false)?;
        let (grade, why) = parse_grade(&verdict);
        graded += 1;
        match grade {
            Some(grade) => {
                score += grade.points();
                writeln!(out, "{}: {why}", grade.name())?;
            }
            None => writeln!(out, "ungraded: {why}")?,
        }
        writeln!(out, "Answer from the note: {}", item.qa.answer)?;
        items.push(item);
    }
    writeln!(out, "\nScore: {score}/{graded}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qa(question: &str, answer: &str) -> QaPair {
        QaPair {
            question: question.into(),
            answer: answer.into(),
        }
    }

    #[test]
    fn fill_replaces_known_placeholders_once_and_keeps_other_braces() {
        let out = fill(
            "Title: {title}\n{unknown} {text}\n",
            &[("title", "{text}"), ("text", "a {title} b")],
        );
        assert_eq!(out, "Title: {text}\n{unknown} a {title} b");
        assert_eq!(fill("{open", &[("open", "x")]), "{open");
    }

    #[test]
    fn every_prompt_file_uses_only_the_placeholders_its_caller_fills() {
        for (file, names) in [
            (NOTE, &["title", "text"][..]),
            (NOTE_PART, &["title", "part", "parts", "text"]),
            (COMBINE_USER, &["title", "text"]),
            (QUIZ_NOTE, &["title", "text"]),
            (QUIZ_AVOID, &["questions"]),
            (GRADE_USER, &["question", "answer", "reply"]),
        ] {
            let vars: Vec<(&str, &str)> = names.iter().map(|n| (*n, "")).collect();
            let out = fill(file, &vars);
            assert!(!out.contains('{'), "{file:?} keeps a placeholder: {out:?}");
            for name in names {
                assert!(
                    file.contains(&format!("{{{name}}}")),
                    "{file:?} lacks {name}"
                );
            }
        }
    }

    #[test]
    fn short_text_is_one_chunk() {
        let text = "# Title\n\nOne paragraph.";
        assert_eq!(chunk_text(text, &|_| true), vec![text.to_string()]);
    }

    #[test]
    fn chunks_cut_at_headings_and_blank_lines_and_fit() {
        let text = "# One\nalpha beta\n\ngamma delta\n## Two\nepsilon zeta\n\neta theta";
        let fits = |t: &str| t.len() <= 30;
        let chunks = chunk_text(text, &fits);
        assert_eq!(
            chunks,
            vec![
                "# One\nalpha beta\n\ngamma delta",
                "## Two\nepsilon zeta\n\neta theta"
            ]
        );
        assert!(chunks.iter().all(|c| fits(c)));
    }

    #[test]
    fn a_paragraph_too_long_splits_at_lines_then_words_then_characters() {
        let long_line = "word ".repeat(20);
        let blob = "x".repeat(100);
        let text = format!("first line\nsecond line\n{long_line}\n\n{blob}");
        let fits = |t: &str| t.chars().count() <= 40;
        let chunks = chunk_text(&text, &fits);
        assert!(chunks.iter().all(|c| fits(c)), "{chunks:?}");
        assert_eq!(chunks[0], "first line\nsecond line");
        let words: usize = chunks.iter().map(|c| c.matches("word").count()).sum();
        assert_eq!(words, 20);
        let xs: usize = chunks.iter().map(|c| c.matches('x').count()).sum();
        assert_eq!(xs, 100);
    }

    #[test]
    fn empty_text_has_no_chunks() {
        assert!(chunk_text("\n\n  \n", &|_| true).is_empty());
    }

    #[test]
    fn parses_plain_pairs() {
        assert_eq!(
            parse_qa("Q: What is Alpha?\nA: A project."),
            vec![qa("What is Alpha?", "A project.")]
        );
    }

    #[test]
    fn ignores_text_around_the_pair() {
        let reply = "Sure! Here is a question:\n\nQ: Who wrote it?\nA: Ann.\nI hope this helps.";
        assert_eq!(parse_qa(reply), vec![qa("Who wrote it?", "Ann.")]);
    }

    #[test]
    fn accepts_numbering_bullets_bold_and_long_labels() {
        let reply = "1. Q: First?\n   A: One.\n\nQ2: Second?\nA2: Two.\n- **Question 3:** Third?\n- **Answer:** Three.\nQuestion: Fourth?\nAnswer: Four.";
        assert_eq!(
            parse_qa(reply),
            vec![
                qa("First?", "One."),
                qa("Second?", "Two."),
                qa("Third?", "Three."),
                qa("Fourth?", "Four."),
            ]
        );
    }

    #[test]
    fn drops_a_question_without_an_answer() {
        assert_eq!(
            parse_qa("Q: Lonely?\nQ: Paired?\nA: Yes."),
            vec![qa("Paired?", "Yes.")]
        );
        assert!(parse_qa("Q: Only a question?").is_empty());
        assert!(parse_qa("Q: Empty answer?\nA:").is_empty());
        assert!(parse_qa("no labels at all").is_empty());
    }

    #[test]
    fn reads_an_answer_on_the_question_line_or_below_a_bare_label() {
        assert_eq!(
            parse_qa("Q: Capital of France? A: Paris."),
            vec![qa("Capital of France?", "Paris.")]
        );
        assert_eq!(
            parse_qa("Q: Which two?\nA:\n- red\n- blue\n\nThanks"),
            vec![qa("Which two?", "- red\n- blue")]
        );
        assert_eq!(
            parse_qa("Q: A question that\ngoes on?\nA: Yes."),
            vec![qa("A question that goes on?", "Yes.")]
        );
    }

    #[test]
    fn a_sentence_starting_with_a_is_not_a_label() {
        assert_eq!(
            parse_qa("Q: Who?\nA. Einstein said so.\nA: Him."),
            vec![qa("Who? A. Einstein said so.", "Him.")]
        );
    }

    #[test]
    fn questions_compare_without_case_or_punctuation() {
        assert!(same_question("What is Alpha?", "what is alpha"));
        assert!(!same_question("What is Alpha?", "What is Beta?"));
    }

    #[test]
    fn grades_take_the_first_grade_word() {
        assert_eq!(
            parse_grade("correct: it names the project."),
            (Some(Grade::Correct), "it names the project.".into())
        );
        assert_eq!(
            parse_grade("Incorrect. The note says Tuesday."),
            (Some(Grade::Wrong), "The note says Tuesday.".into())
        );
        assert_eq!(
            parse_grade("\n**Partly** - only one of two"),
            (Some(Grade::Partly), "only one of two".into())
        );
        assert_eq!(parse_grade("I cannot say."), (None, "I cannot say.".into()));
    }

    /// A strict RFC 4180 reader, to check what `csv_row` writes.
    fn read_csv(text: &str) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        let mut row = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                (true, '"') => quoted = false,
                (true, c) => field.push(c),
                (false, '"') if field.is_empty() => quoted = true,
                (false, ',') => row.push(std::mem::take(&mut field)),
                (false, '\r') if chars.peek() == Some(&'\n') => {}
                (false, '\n') => {
                    row.push(std::mem::take(&mut field));
                    rows.push(std::mem::take(&mut row));
                }
                (false, c) => field.push(c),
            }
        }
        assert!(
            !quoted && field.is_empty() && row.is_empty(),
            "unterminated"
        );
        rows
    }

    #[test]
    fn csv_quotes_only_what_needs_it_and_reads_back() {
        assert_eq!(csv_field("plain text"), "plain text");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("#tag"), "\"#tag\"");
        let fields = [
            "What, \"exactly\"?",
            "line one\nline two",
            "Home (note://Home)",
        ];
        let text = csv_row(&fields) + &csv_row(&["a", "", "c"]);
        assert_eq!(
            read_csv(&text),
            vec![
                fields.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
                vec!["a".to_string(), String::new(), "c".to_string()],
            ]
        );
    }
}
