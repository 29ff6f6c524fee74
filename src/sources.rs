//! Numbered sources: the passages and notes the vault tools returned during one turn, shown to
//! the model as `[1]`, `[2]` … and turned into citations by the numbers the answer writes.
//!
//! A passage returned twice keeps its first number, so numbers are stable across steps. Every
//! note URI a result mentions (sources, links, backlinks) is remembered, with the headings its
//! passages sit under and the offsets a paged read says to continue from: those are the only
//! references, sections and offsets the decision grammar lets the model pass to a tool.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::LazyLock;

use chrono::{Datelike, NaiveDate};
use obsidian_kb::search::Tokenizer;
use obsidian_kb::{api, excerpt};
use regex::Regex;
use serde::Serialize;

use crate::language::Language;
use crate::vault::{VaultResult, note_path};
use crate::{markup, support};

mod marks;

use marks::starts_line;
pub use marks::{CitationMark, Claim, citation_marks, cited_numbers, claims};

/// Characters of a search hit's passage the model reads when the search asked the vault for
/// no excerpt (a search the model wrote, or a vault server without excerpts), cut by the
/// question's words ([`excerpt`]): the first hit's, then each other one's. Measured on the 103
/// help questions (SmolLM2 reading the same sources): 800/400 cut the prompt tokens read
/// before the answer from ~800 to ~670 and kept an answer keyword in view for 72 questions (76
/// with whole passages), and Qwen2.5-1.5B cited the gold note and wrote a keyword as often as
/// with whole passages (87 and 69 of 103; 87 and 68 before). The agent's own searches ask for
/// the vault's excerpts, which weigh meaning too and are cut much shorter
/// (`agent::retrieve`).
const SHOWN_CHARS: [usize; 2] = [800, 400];

/// The language `question` is answered in: its own where its script or words say so surely,
/// else the one it most likely is where the `sources` it is asked of are surely written in
/// it ([`Language::detect_beside`]). `None`: English.
pub fn question_language(question: &str, sources: &[Source]) -> Option<Language> {
    let context: Vec<&str> = sources.iter().map(|s| s.text.as_str()).collect();
    Language::detect_beside(question, &context.join("\n"))
}

/// One numbered source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Its number, from 1.
    pub number: usize,
    /// The note's `note://` URI.
    pub uri: String,
    /// The note's title.
    pub title: String,
    /// Headings above the passage, outermost first (empty: the whole note, or its opening).
    pub heading_path: Vec<String>,
    /// `obsidian://open` link to the note at that heading.
    pub link: String,
    /// What the model was shown: a search's best hit whole, a later hit cut to what bears on
    /// the question ([`obsidian_kb::excerpt`]), a read whole.
    pub text: String,
    /// The whole passage or read: what a quote shows the person.
    pub passage: String,
}

impl Source {
    /// `Title › Heading › Subheading`.
    pub fn label(&self) -> String {
        label(&self.title, &self.heading_path)
    }

    /// `Folder › Subfolder › Title › Heading`: the label under the folders the note sits in
    /// (read from its URI), each day in it written in digits also spelled out in `language`
    /// (the question's: [`with_days_spelled`]), as the answer step reads it.
    pub fn breadcrumb(&self, language: Option<Language>) -> String {
        with_days_spelled(&self.folders_and_label(), language)
    }

    /// The label under the folders the note sits in, as written.
    fn folders_and_label(&self) -> String {
        under_folders(&self.uri, &self.label())
    }
}

/// `label` under the folders of the note `uri` names: `Folder › Subfolder › label`.
fn under_folders(uri: &str, label: &str) -> String {
    match note_path(uri).rsplit_once('/') {
        Some((folders, _)) => format!("{} › {label}", folders.replace('/', " › ")),
        None => label.to_string(),
    }
}

/// `header` with each day it writes in digits also spelled out, as a question in `language`
/// (English: `None`) names it: `Journal › 2025-09-28 › Long run` → `Journal › 2025-09-28
/// (Sunday 28 September 2025) › Long run`, or `(2025年9月28日 星期日)` for a question in
/// Chinese. A small model does not take a daily note's name for the day a question names
/// in words: asked the distance run on 28 September 2025 over the note 2025-09-28
/// holding "19 km", Qwen2.5-1.5B said the notes do not say, even with that passage alone.
pub fn with_days_spelled(header: &str, language: Option<Language>) -> String {
    let mut spelled = String::with_capacity(header.len() + 32);
    let mut from = 0;
    for mention in obsidian_kb::dates::mentioned(header, obsidian_kb::dates::today()) {
        let written = &header[mention.start..mention.end];
        let day = mention.period.from;
        if mention.period.to != day || written.chars().any(char::is_alphabetic) {
            continue;
        }
        spelled.push_str(&header[from..mention.end]);
        let _ = write!(spelled, " ({})", spelled_day(day, language));
        from = mention.end;
    }
    spelled.push_str(&header[from..]);
    spelled
}

/// `day` as a question in `language` writes it, with its weekday.
fn spelled_day(day: NaiveDate, language: Option<Language>) -> String {
    let weekday = day.weekday().num_days_from_monday() as usize;
    let (year, month, date) = (day.year(), day.month(), day.day());
    match language {
        Some(Language::Chinese) => {
            const DAYS: [&str; 7] = ["一", "二", "三", "四", "五", "六", "日"];
            format!("{year}年{month}月{date}日 星期{}", DAYS[weekday])
        }
        Some(Language::Japanese) => {
            const DAYS: [&str; 7] = ["月", "火", "水", "木", "金", "土", "日"];
            format!("{year}年{month}月{date}日 {}曜日", DAYS[weekday])
        }
        Some(Language::Korean) => {
            const DAYS: [&str; 7] = ["월", "화", "수", "목", "금", "토", "일"];
            format!("{year}년 {month}월 {date}일 {}요일", DAYS[weekday])
        }
        _ => day.format("%A %-d %B %Y").to_string(),
    }
}

/// `Title › Heading › Subheading`, without a first heading that only repeats the title (the
/// usual `# Title` line).
pub fn label(title: &str, heading_path: &[String]) -> String {
    let mut headings = heading_path.iter().map(String::as_str).peekable();
    if headings.peek() == Some(&title) {
        headings.next();
    }
    std::iter::once(title)
        .chain(headings)
        .collect::<Vec<_>>()
        .join(" › ")
}

/// `[n] Title › Heading (note://…)`: a source's header as the decision step reads it.
fn header(source: &Source) -> String {
    format!("[{}] {} ({})", source.number, source.label(), source.uri)
}

/// `[n] Folder › Title › Heading`: a source's header as the answer step reads it
/// ([`Sources::for_answer`]).
fn answer_header(source: &Source, language: Option<Language>) -> String {
    format!("[{}] {}", source.number, source.breadcrumb(language))
}

/// `results` (tool results, rendered by [`Sources::add`]) with each source header as the
/// answer step reads it: `[n] Folder › Title › Heading`, the note's place without its URI.
/// A URI is what a tool call names a note by, and the answer step calls none: on the 103
/// help questions the five URIs were ~60 of the ~450 tokens Qwen2.5-1.5B read before its
/// first answer token. The folders stay, for they say what a note is about ("Obsidian Web
/// Clipper › Reader"): without them Qwen2.5-1.5B cited the gold note for 81 of the 103
/// questions instead of 85, most often where it named its sources afterwards (the
/// attribution step, `agent/cite.rs`). Read from the text, not from this turn's sources, so
/// that an earlier turn's results read the same in every later turn: rewritten by the later
/// turn's sources, they changed where its numbers meant other notes, and a follow-up read
/// them again (147 of the 420 tokens it read, on "And on Plus?").
/// Days are spelled out in `language`, the question's.
pub fn headers_for_answer(results: &str, language: Option<Language>) -> String {
    static HEADER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?m)^\[(\d{1,3})\] ([^\n]+?) \((note://[^()\n]*)\)").expect("valid regex")
    });
    HEADER
        .replace_all(results, |c: &regex::Captures| {
            let place = under_folders(&c[3], &c[2]);
            format!("[{}] {}", &c[1], with_days_spelled(&place, language))
        })
        .into_owned()
}

/// `answer` with the source headers it copied from the prompt taken out: whatever stands
/// between a citation mark and a `(note://…)` on its line (the prompt's header form; no answer
/// needs a note URI), and after a mark a source's `Title › Heading` (whole or cut at a `›`)
/// that ends its line. Models often answer with a list of such headers, copied, numbered anew
/// or made up in that form: it says nothing of the sources, so it is no words of the model's
/// own ([`crate::support::adds`]), and its marks cite nothing (every source listed is
/// not every source used), so a header that starts its line goes with its mark. Two marks
/// stay: one after the sentence it closes, and one whose header heads text of the model's
/// own, on its line or directly below it, as the prompt sets a passage under its header (the
/// mark then vouches for that text, see [`claims`]). A title that a sentence goes on from
/// stays.
pub fn without_copied_headers(answer: &str, sources: &[Source]) -> String {
    static MARK: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\[\d{1,3}\][ \t]*").expect("valid regex"));
    static URI_HEADER: LazyLock<Regex> = LazyLock::new(|| {
        // The closing parenthesis may be missing where the answer ran out of tokens.
        Regex::new(r"^[^\n\[\]]*?\(note://[^()\n]*\)?").expect("valid regex")
    });
    let mut kept = String::with_capacity(answer.len());
    let mut rest = answer;
    while let Some(mark) = MARK.find(rest) {
        let after = &rest[mark.end()..];
        let copied = sources
            .iter()
            .map(|s| copied_header_len(after, s))
            .chain(URI_HEADER.find(after).map(|h| h.end()))
            .max()
            .unwrap_or(0);
        kept.push_str(&rest[..mark.start()]);
        rest = &after[copied..];
        if copied == 0 || !starts_line(&kept) || heads_text(rest) {
            kept.push_str(mark.as_str());
        }
    }
    kept.push_str(rest);
    kept
}

/// The opening of `answer` that no citation mark vouches for: the lines before its first
/// mark, when that mark starts a line, as the mark of a source header does (it vouches for
/// what follows it, see [`claims`]). A model that writes its answer first and then copies
/// sources under their headers leaves its own answer there. Empty when the first mark
/// closes text of its own on its line, or there is no mark.
pub fn unvouched_opening(answer: &str) -> &str {
    match citation_marks(answer).first() {
        Some(mark) if starts_line(&answer[..mark.span.start]) => {
            let line_start = answer[..mark.span.start].rfind('\n').map_or(0, |i| i + 1);
            answer[..line_start].trim_end()
        }
        _ => "",
    }
}

/// True when `rest` (what follows a header on its line) holds words, or the line below it
/// does and starts with no citation mark.
fn heads_text(rest: &str) -> bool {
    let mut lines = rest.split('\n');
    let on_its_line = lines.next().unwrap_or("");
    if on_its_line.chars().any(char::is_alphanumeric) {
        return true;
    }
    lines.next().is_some_and(|below| {
        let starts_with_mark = citation_marks(below)
            .first()
            .is_some_and(|m| starts_line(&below[..m.span.start]));
        !below.trim().is_empty() && !starts_with_mark
    })
}

/// The length of the longest start of `source`'s header that `text` begins with, when
/// nothing but a colon follows it on its line; 0 if none. A header is its breadcrumb (as the
/// answer step reads it, or with its days as written) or its label (as a decision step does),
/// each cut at any `›`.
fn copied_header_len(text: &str, source: &Source) -> usize {
    [
        source.breadcrumb(None),
        source.breadcrumb(Language::of(text)),
        source.folders_and_label(),
        source.label(),
    ]
    .iter()
    .flat_map(|header| {
        let mut ends: Vec<usize> = header.match_indices(" › ").map(|(at, _)| at).collect();
        ends.push(header.len());
        ends.into_iter().map(move |end| &header[..end])
    })
    .filter(|start| {
        text.strip_prefix(start).is_some_and(|after| {
            let line = after.lines().next().unwrap_or("").trim();
            line.is_empty() || line == ":"
        })
    })
    .map(str::len)
    .max()
    .unwrap_or(0)
}

/// A source as the user sees it after the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Citation {
    /// The source's number in the answer (`[n]`).
    pub number: usize,
    /// The note's title.
    pub title: String,
    /// Headings above the passage, outermost first.
    pub heading_path: Vec<String>,
    /// The note's `note://` URI.
    pub uri: String,
    /// `obsidian://open` link to the note at that heading.
    pub link: String,
    /// True when the answer cites it; false when the answer cited nothing and this is one of
    /// the sources it was given.
    pub cited: bool,
    /// The numbers the answer wrote in its place: sources its words do not come from, while
    /// this one holds them (see [`crate::support`]). Empty when cited as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<usize>,
    /// What the model was shown of the note: the passage the answer read, shown on demand
    /// under the answer (`recall serve`'s page).
    pub passage: String,
}

/// The sources of one turn, in the order they were first returned.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The question search hits are cut for; none: passages are shown whole (as plain text).
    question: Option<String>,
    list: Vec<Source>,
    references: Vec<String>,
    sections: Vec<String>,
    offsets: Vec<usize>,
}

impl Citation {
    /// `Title › Heading › Subheading`.
    pub fn label(&self) -> String {
        label(&self.title, &self.heading_path)
    }
}

impl Sources {
    /// Sources for a turn answering `question`: each search hit is shown to the model cut to
    /// what bears on it.
    pub fn for_question(question: &str) -> Sources {
        Sources {
            question: Some(question.to_string()),
            ..Sources::default()
        }
    }

    /// Every source so far.
    pub fn list(&self) -> &[Source] {
        &self.list
    }

    /// Note URIs seen in results so far, in order first seen.
    pub fn references(&self) -> &[String] {
        &self.references
    }

    /// Headings that passages so far sit under (the last of each heading path: what
    /// `read_note`'s `section` takes), in order first seen.
    pub fn sections(&self) -> &[String] {
        &self.sections
    }

    /// The `next_offset`s of paged reads so far, in order first seen.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Adds what a vault result carries and returns its text for the model: sources numbered,
    /// links as a list of references.
    pub fn add(&mut self, result: &VaultResult) -> String {
        match result {
            VaultResult::Search(out) => self.add_search(out),
            VaultResult::Read(out) => self.add_read(out),
            VaultResult::Links(out) => self.add_links(out),
            VaultResult::List(out) => self.add_list(out),
        }
    }

    fn add_search(&mut self, out: &api::SearchOutput) -> String {
        if out.hits.is_empty() {
            return "No passage matches. Try other words.".to_string();
        }
        let plain: Vec<String> = out
            .hits
            .iter()
            .map(|hit| markup::plain(&hit.passage))
            .collect();
        let shown = match &self.question {
            Some(question) => {
                let passages: Vec<&str> = plain.iter().map(String::as_str).collect();
                let tokenizer = Tokenizer::for_text(&plain.concat());
                let by_words =
                    excerpt::excerpts(question, &passages, &SHOWN_CHARS, None, tokenizer);
                // The vault's own excerpt, where the search asked for one, weighs meaning too;
                // the best hit is read whole all the same.
                out.hits
                    .iter()
                    .zip(by_words)
                    .enumerate()
                    .map(|(i, (hit, by_words))| match &hit.excerpt {
                        Some(cut) if i > 0 => markup::plain(cut),
                        _ => by_words,
                    })
                    .collect()
            }
            None => plain,
        };
        let rendered: Vec<String> = out
            .hits
            .iter()
            .zip(shown)
            .map(|(hit, text)| {
                let known = self.list.len();
                let n = self.insert(Source {
                    number: 0,
                    uri: hit.uri.clone(),
                    title: hit.title.clone(),
                    heading_path: hit.heading_path.clone(),
                    link: hit.link.clone(),
                    text,
                    passage: hit.passage.trim().to_string(),
                });
                if n <= known {
                    // Shown already: its text again would only be more to read.
                    self.render_seen(n)
                } else {
                    self.render(n)
                }
            })
            .collect();
        rendered.join("\n\n")
    }

    fn add_read(&mut self, out: &api::ReadOutput) -> String {
        // A person's or a project's properties are often what is asked (a birthday, an
        // email): they come first, as the note writes them first; on the first page only (a
        // page's text ends where the next begins, or at the end).
        let offset = out
            .next_offset
            .unwrap_or(out.total_chars)
            .saturating_sub(out.content.chars().count());
        let properties = match &out.frontmatter {
            Some(properties) if offset == 0 => properties_text(properties),
            _ => String::new(),
        };
        let content = format!("{properties}{}", out.content.trim());
        let n = self.insert(Source {
            number: 0,
            uri: out.uri.clone(),
            title: out.title.clone(),
            heading_path: Vec::new(),
            link: out.link.clone(),
            text: markup::plain(&content),
            passage: content,
        });
        let mut text = self.render(n);
        if let Some(next) = out.next_offset {
            if !self.offsets.contains(&next) {
                self.offsets.push(next);
            }
            let _ = write!(
                text,
                "\n[{} more characters: read_note(uri=\"{}\", offset={next})]",
                out.total_chars.saturating_sub(next),
                out.uri
            );
        }
        text
    }

    fn add_links(&mut self, out: &api::LinksOutput) -> String {
        let mut text = format!("Links of {}:", out.uri);
        for link in &out.outgoing {
            if let Some(uri) = &link.uri {
                self.remember(uri);
                let _ = write!(text, "\n- links to {uri}");
            }
        }
        for back in &out.backlinks {
            self.remember(&back.uri);
            let _ = write!(text, "\n- linked from {} ({})", back.title, back.uri);
        }
        text
    }

    fn add_list(&mut self, out: &api::ListOutput) -> String {
        let mut text = format!("{} notes:", out.notes.len());
        for note in &out.notes {
            self.remember(&note.uri);
            let _ = write!(text, "\n- {} ({})", note.title, note.uri);
        }
        text
    }

    /// The source's number: an existing one for the same note and heading path with the same
    /// text, else a new one.
    fn insert(&mut self, mut source: Source) -> usize {
        self.remember(&source.uri);
        if let Some(heading) = source.heading_path.last()
            && !self.sections.contains(heading)
        {
            self.sections.push(heading.clone());
        }
        if let Some(known) = self.list.iter().find(|s| {
            s.uri == source.uri
                && s.heading_path == source.heading_path
                && s.passage == source.passage
        }) {
            return known.number;
        }
        source.number = self.list.len() + 1;
        self.list.push(source);
        self.list.len()
    }

    fn remember(&mut self, uri: &str) {
        if !self.references.iter().any(|r| r == uri) {
            self.references.push(uri.to_string());
        }
    }

    /// `[n] Title › Heading (note://…)` and the text under it.
    fn render(&self, number: usize) -> String {
        let source = &self.list[number - 1];
        format!("{}\n{}", header(source), source.text)
    }

    /// `[n] Title › Heading (note://…)`, for a source whose text the model has been shown.
    fn render_seen(&self, number: usize) -> String {
        format!("{}: as above.", header(&self.list[number - 1]))
    }

    /// Source `number` shown again, whole (its passage as plain text, cut by the question's
    /// words to `chars` when longer), under its header as the answer step reads it. What the
    /// model has read of the source is now that text, and its citation is checked against it.
    pub fn show_whole(&mut self, number: usize, chars: usize) -> String {
        let question = self.question.as_deref().unwrap_or_default();
        let source = &mut self.list[number - 1];
        let passage = markup::plain(&source.passage);
        let tokenizer = Tokenizer::for_text(&passage);
        let mut cut = excerpt::excerpts(question, &[passage.as_str()], &[chars], None, tokenizer);
        source.text = cut.pop().unwrap_or(passage);
        format!(
            "{}\n{}",
            answer_header(source, Language::of(question)),
            source.text
        )
    }

    /// The citations for `answer` to `question`: the sources it cites by number (`[2]`,
    /// `[1, 3]`, `[1][3]`), checked against the answer's words ([`crate::support`]), in number
    /// order; when it cites none, every source it was given, marked uncited. The marks of
    /// source headers it copied ([`without_copied_headers`]) cite nothing. `attributed` is a
    /// claim made outside the text: the attribution step's numbers for an unmarked opening.
    pub fn citations(
        &self,
        question: &str,
        answer: &str,
        attributed: Option<Claim<'_>>,
    ) -> Vec<Citation> {
        let in_range = |n: &usize| (1..=self.list.len()).contains(n);
        let answer = without_copied_headers(answer, &self.list);
        let mut claims = claims(&answer);
        claims.extend(attributed);
        if !claims.iter().flat_map(|c| &c.numbers).any(in_range) {
            return self.given();
        }
        // Each mark is held against the words it vouches for (`claims`): its own sentence when
        // every sentence has a mark, the whole answer for a closing `Sources: [1]`. A source
        // vouches with what the model read of it: held against whole passages, the same answers
        // cited later hits they did not come from more often (11 of 56 help questions), the
        // gold note no more often.
        let mut kept = BTreeSet::new();
        let mut replaced: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        let held: Vec<String> = self
            .list
            .iter()
            .map(|s| format!("{}\n{}", s.label(), s.text))
            .collect();
        let mut held = support::SourceTerms::new(&held);
        for claim in claims {
            let numbers: BTreeSet<usize> = claim.numbers.into_iter().filter(in_range).collect();
            let evidence = held.evidence(question, claim.text);
            let checked = support::check(&numbers, &evidence);
            if let Some((number, dropped)) = checked.replaced {
                tracing::debug!(
                    "{:?} cites {dropped:?}, its words come from [{number}]: cited instead",
                    claim.text
                );
                replaced.entry(number).or_default().extend(dropped);
            }
            kept.extend(checked.numbers);
        }
        self.list
            .iter()
            .filter(|s| kept.contains(&s.number))
            .map(|s| {
                let mut citation = self.citation(s, true);
                citation.replaces = replaced
                    .get(&s.number)
                    .map(|dropped| dropped.iter().copied().collect())
                    .unwrap_or_default();
                citation
            })
            .collect()
    }

    /// Every source given, marked uncited: what an answer that cites none, or says the notes
    /// do not hold the answer, is shown with.
    pub fn given(&self) -> Vec<Citation> {
        self.list.iter().map(|s| self.citation(s, false)).collect()
    }

    /// Cites, after each cited source that was found through a link, the source whose line
    /// links it (`through`: pairs of those numbers), unless it is cited already: the day's
    /// note that says who "the person I talked to at the train station" is bears the answer
    /// about them as much as their own note.
    pub fn cite_through(&self, citations: &mut Vec<Citation>, through: &[(usize, usize)]) {
        for &(found, from) in through {
            let cites = |n: usize| citations.iter().any(|c| c.cited && c.number == n);
            if !cites(found) || cites(from) {
                continue;
            }
            let Some(source) = self.list.iter().find(|s| s.number == from) else {
                continue;
            };
            citations.retain(|c| c.number != from);
            let at = citations
                .iter()
                .position(|c| c.number == found)
                .map_or(citations.len(), |at| at + 1);
            citations.insert(at, self.citation(source, true));
        }
    }

    fn citation(&self, s: &Source, cited: bool) -> Citation {
        Citation {
            number: s.number,
            title: s.title.clone(),
            heading_path: s.heading_path.clone(),
            uri: s.uri.clone(),
            link: s.link.clone(),
            cited,
            replaces: Vec::new(),
            passage: s.text.clone(),
        }
    }
}

/// A note's properties as lines of `key: value`, as a note's frontmatter reads: a list's items
/// joined by commas, anything nested as JSON.
fn properties_text(properties: &serde_json::Map<String, serde_json::Value>) -> String {
    use serde_json::Value;
    let scalar = |value: &Value| match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let mut text = String::new();
    for (key, value) in properties {
        let value = match value {
            Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(", "),
            other => scalar(other),
        };
        let _ = writeln!(text, "{key}: {value}");
    }
    text
}

#[cfg(test)]
mod tests;
