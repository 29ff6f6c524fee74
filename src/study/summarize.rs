//! Summaries that cover what they summarize. A short note is summarized in one generation of
//! one to seven points; a long note (more than [`LONG_NOTE_WORDS`] words) part by part
//! ([`super::parts`]: its top-level sections, cut or put together to a size), each part asked
//! for as many points as its words are worth, and every part's points kept (no combining pass,
//! which lost what a small model left out). Several notes (a folder, a search) are summarized
//! note by note, one to three points each, so that no note is lost. Every generation is held
//! by a grammar to a bullet list (`- point` lines), streamed a whole line at a time. A point
//! that only names a heading is dropped, and its part asked once more, warmer (a note of
//! several left with no point keeps the wordiest it wrote). Each point names the
//! section its words come from, among the sections of the part it was written from
//! ([`super::sections`]): `[n]` after the point, the numbered sources as `obsidian://` links
//! after the summary, then what was read: "Read 15 of 15 sections (2,345 words)."

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::ops::{ControlFlow, Range};

use anyhow::{Result, bail};
use serde::Serialize;

use super::chunk::chunk_text;
use super::export::{ReadReport, SourceRef, SummaryPoint, SummaryReport};
use super::parts::{LONG_NOTE_WORDS, Outline, note_points, share_points};
use super::sections::{Place, Sections};
use super::target::SourceNote;
use super::writer::{Grammar, Writer, line_rule};
use crate::engine::StopReason;
use crate::prompt::StudyPrompt;

/// Most points in one generation of a whole note.
const MAX_POINTS: usize = 7;
/// Longest point, in characters.
const MAX_POINT: usize = 300;
/// Sampling of the second try of a part whose points only named headings.
const RETRY_TEMPERATURE: f32 = 0.8;

/// The grammar of a summary: 1 to 7 lines `- point`, each non-empty, of at most `max_tokens`
/// characters (so the first point always fits), then only the end of the turn.
pub fn summary_grammar(max_tokens: usize) -> Grammar {
    bullets_grammar(max_tokens, 1, MAX_POINTS)
}

/// The grammar of a summary of exactly `points` lines `- point` (at least one).
pub fn points_grammar(max_tokens: usize, points: usize) -> Grammar {
    bullets_grammar(max_tokens, points.max(1), points.max(1))
}

/// The most characters the grammar lets a point have.
fn point_bound(max_tokens: usize) -> usize {
    max_tokens.saturating_sub(3).clamp(1, MAX_POINT)
}

fn bullets_grammar(max_tokens: usize, least: usize, most: usize) -> Grammar {
    let point = point_bound(max_tokens);
    let more = if least == most {
        format!("{{{}}}", most - 1)
    } else {
        format!("{{{},{}}}", least - 1, most - 1)
    };
    Grammar {
        name: "summary",
        gbnf: format!(
            "root ::= bullet (\"\\n\" bullet){more} \"\\n\"?\nbullet ::= \"- \" point\n{}",
            line_rule("point", point)
        ),
    }
}

/// The points of a reply written under [`summary_grammar`]. When the reply did not end whole
/// (`whole` false: cut at `--max-tokens`), a last line without its line break is left out.
pub fn parse_summary(reply: &str, whole: bool) -> Vec<String> {
    let mut lines: Vec<&str> = reply.split('\n').collect();
    if !whole {
        lines.pop();
    }
    lines.iter().filter_map(|line| point_of(line)).collect()
}

/// The point a line `- point` holds.
fn point_of(line: &str) -> Option<String> {
    let point = line.trim().strip_prefix("- ")?.trim();
    (!point.is_empty()).then(|| point.to_string())
}

/// A summary's Markdown: its points as a bullet list.
fn bullets(points: &[String]) -> String {
    points
        .iter()
        .map(|p| format!("- {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Words a point is judged by: letters and digits, lower case, common words left out, a
/// plural's `s` taken off.
fn content_words(text: &str) -> Vec<String> {
    const COMMON: &[&str] = &[
        "a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "with", "from", "and", "or",
        "is", "are", "be", "it", "its", "this", "that", "these", "your", "you", "how", "what",
        "when", "about", "as", "can", "into", "use", "used", "using", "up", "our", "we", "they",
        "their", "there", "which", "will",
    ];
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !COMMON.contains(&w.as_str()))
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if stem.chars().count() > 2 && !stem.ends_with('s') => stem.to_string(),
            _ => w,
        })
        .collect()
}

/// True when `point` holds no word beside those of one of `headings`: a heading itself.
fn bare_title_exactly(point: &str, headings: &[&str]) -> bool {
    let words = content_words(point);
    headings.iter().any(|heading| {
        let held: HashSet<String> = content_words(heading).into_iter().collect();
        words.iter().all(|w| held.contains(w))
    })
}

/// A point the grammar cut at its bound (`bound` characters, a trailing space perhaps
/// trimmed since), ended at its last whole sentence when it has one, else marked as cut (`…`);
/// any other point as it is.
fn end_cut_point(point: String, bound: usize) -> String {
    if point.chars().count() + 1 < bound {
        return point;
    }
    match point.rfind(". ") {
        Some(end) if end > 0 => point[..=end].to_string(),
        _ => format!("{}…", point.trim_end()),
    }
}

/// True when `point` is only a heading (one of `headings`, which hold the note's title too),
/// or a heading with a word or two: at most two words beside the heading's, which make up at
/// least half of the point. Such a point names a part; it does not say what the part says.
pub(super) fn bare_title(point: &str, headings: &[&str]) -> bool {
    let words = content_words(point);
    if words.is_empty() {
        return true;
    }
    headings.iter().any(|heading| {
        let held: HashSet<String> = content_words(heading).into_iter().collect();
        let extra = words.iter().filter(|w| !held.contains(*w)).count();
        !held.is_empty() && extra <= 2 && (words.len() - extra) * 2 >= words.len()
    })
}

/// What the note template is filled with.
#[derive(Serialize)]
struct NoteVars<'a> {
    title: &'a str,
    text: &'a str,
    part: usize,
    parts: usize,
    points: Option<usize>,
    retry: bool,
}

/// One generation's worth of a summary: text of one note, and how many points to ask for.
struct Job {
    /// The note (an index into the notes).
    note: usize,
    text: String,
    /// Its number among the parts of its note (1-based) and how many there are.
    part: usize,
    parts: usize,
    /// Points to ask for; `None`: one to seven (a short note, whole).
    points: Option<usize>,
    /// The sections (places) its points are traced to.
    within: Range<usize>,
    /// The top-level sections of its note it holds (a range of [`Outline::sections`]).
    sections: Range<usize>,
    /// What the progress line calls it.
    label: String,
}

/// Text of a note to summarize in one generation, before it is numbered among its note's.
#[derive(Clone)]
struct Piece {
    text: String,
    points: Option<usize>,
    blocks: Range<usize>,
    sections: Range<usize>,
    label: String,
}

/// A point of the summary and the section (place) it was traced to.
struct Point {
    text: String,
    section: Option<usize>,
}

/// The progress of a summary read in several parts, on stderr: a line that counts the parts
/// on a terminal; elsewhere one line saying how many parts there are.
struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    fn start(jobs: &[Job], what: &str) -> Progress {
        if jobs.len() < 2 {
            return Progress(None);
        }
        if !std::io::stderr().is_terminal() {
            eprintln!("recall: reading {what} in {} parts", jobs.len());
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new(jobs.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("recall: reading part {pos}/{len} … {msg}")
                .expect("static template is valid"),
        );
        Progress(Some(bar))
    }

    fn part(&self, number: usize, label: &str) {
        if let Some(bar) = &self.0 {
            bar.set_position(number as u64);
            bar.set_message(label.to_string());
        }
    }

    /// Runs `f` (which writes to the terminal) with the progress line out of its way.
    fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.0 {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// Summarizes `notes` (one, part by part when it is long; or each of several) and prints the
/// summary.
pub(super) fn write_summary(
    writer: &mut Writer,
    notes: &[SourceNote],
    json: bool,
    target: &str,
    out: &mut dyn Write,
) -> Result<()> {
    let mut out = out;
    let stream = !json;
    if stream {
        writeln!(out, "# Summary: {target}\n")?;
        out.flush()?;
    }
    let outlines: Vec<Outline> = notes.iter().map(|n| Outline::new(&n.content)).collect();
    let sections = Sections::new(notes);
    let jobs = plan(writer, notes, &outlines, &sections)?;
    let single = notes.len() == 1;
    let what = if single {
        notes[0].title.clone()
    } else {
        format!("{} notes", notes.len())
    };
    let headings: Vec<Vec<String>> = notes
        .iter()
        .zip(&outlines)
        .map(|(note, outline)| {
            let mut all: Vec<String> = outline.headings().into_iter().map(String::from).collect();
            all.push(note.title.clone());
            all
        })
        .collect();
    let mut summarizer = Summarizer {
        writer,
        sections,
        headings,
        points: Vec::new(),
        cited: Vec::new(),
        progress: Progress::start(&jobs, &what),
        stream,
    };
    let mut read: Vec<HashSet<usize>> = vec![HashSet::new(); notes.len()];
    for (i, job) in jobs.iter().enumerate() {
        summarizer.progress.part(i + 1, &job.label);
        (summarizer.writer.on_step)(&format!("part {} of {}: {}", i + 1, jobs.len(), job.label));
        if summarizer.job(job, notes, single && job.points.is_none())? {
            read[job.note].extend(job.sections.clone());
        }
    }
    summarizer.progress.finish();
    if summarizer.points.is_empty() {
        bail!(
            "the model wrote no usable point; try a larger model (--model), a higher \
             --max-tokens, or --verbose to see its replies"
        );
    }
    let report = summarizer.read_report(notes, &outlines, &read);
    if json {
        let texts: Vec<String> = summarizer.points.iter().map(|p| p.text.clone()).collect();
        let points = summarizer
            .points
            .iter()
            .map(|point| SummaryPoint {
                text: point.text.clone(),
                source: point
                    .section
                    .map(|i| source_ref(notes, summarizer.sections.place(i))),
            })
            .collect();
        return SummaryReport::new(bullets(&texts), points, notes, jobs.len(), report)
            .print(&mut out);
    }
    // The sections the points were traced to, numbered as marked; then the notes read that no
    // point was traced to; then how much was read.
    writeln!(out, "\n## Sources\n")?;
    for (i, place) in summarizer.cited.iter().enumerate() {
        writeln!(out, "{}. {}", i + 1, source_ref(notes, place).markdown())?;
    }
    let mut others = (0..notes.len()).filter(|&n| summarizer.cited.iter().all(|p| p.note != n));
    if let Some(first) = others.next() {
        writeln!(out, "\nAlso read:\n")?;
        for n in std::iter::once(first).chain(others) {
            writeln!(out, "- {}", SourceRef::new(&notes[n], None).markdown())?;
        }
    }
    writeln!(out, "\n{}", report.sentence())?;
    Ok(())
}

/// The generations a summary takes: a short note whole (one to seven points); a long one part
/// by part; each of several notes whole, with one to three points. Text too long for the
/// context is cut to fit, its points shared among the pieces.
fn plan(
    writer: &Writer,
    notes: &[SourceNote],
    outlines: &[Outline],
    sections: &Sections,
) -> Result<Vec<Job>> {
    let single = notes.len() == 1;
    let mut jobs = Vec::new();
    for (n, (note, outline)) in notes.iter().zip(outlines).enumerate() {
        let mut pieces: Vec<Piece> = Vec::new();
        let long = note.content.split_whitespace().count() > LONG_NOTE_WORDS;
        if single && long {
            for part in outline.parts() {
                let label = part
                    .sections
                    .clone()
                    .map(|s| outline.heading(s).unwrap_or("the opening"))
                    .collect::<Vec<_>>()
                    .join(", ");
                pieces.push(Piece {
                    text: outline.text(part.blocks.clone()),
                    points: Some(part.points),
                    blocks: part.blocks,
                    sections: part.sections,
                    label,
                });
            }
        } else {
            pieces.push(Piece {
                text: note.content.clone(),
                points: (!single).then(|| note_points(&note.content)),
                blocks: 0..outline.blocks.len(),
                sections: 0..outline.sections.len(),
                label: note.title.clone(),
            });
        }
        // Text too long for one prompt is cut at its headings and paragraphs to fit.
        let mut fitted = Vec::new();
        for piece in pieces {
            let vars = NoteVars {
                title: &note.title,
                text: &piece.text,
                part: 1,
                parts: 999,
                points: piece.points,
                retry: true,
            };
            let user = writer.render(StudyPrompt::Note, &vars)?;
            if writer.fits(StudyPrompt::Summarize, &user)? {
                fitted.push(piece);
                continue;
            }
            let frame = writer.render(StudyPrompt::Note, &NoteVars { text: "", ..vars })?;
            let budget = writer.text_budget(StudyPrompt::Summarize, &frame, 0)?;
            let chunks = chunk_text(&piece.text, budget, &|t| writer.count(t));
            let words: Vec<usize> = chunks
                .iter()
                .map(|c| c.split_whitespace().count())
                .collect();
            let shares = share_points(piece.points.unwrap_or(3), &words);
            for (text, share) in chunks.into_iter().zip(shares) {
                fitted.push(Piece {
                    text,
                    points: Some(share),
                    ..piece.clone()
                });
            }
        }
        let parts = fitted.len();
        for (i, piece) in fitted.into_iter().enumerate() {
            jobs.push(Job {
                note: n,
                text: piece.text,
                part: i + 1,
                parts,
                points: piece.points,
                within: sections.within(n, piece.blocks),
                sections: piece.sections,
                label: piece.label,
            });
        }
    }
    Ok(jobs)
}

fn source_ref<'n>(notes: &'n [SourceNote], place: &'n Place) -> SourceRef<'n> {
    SourceRef::new(&notes[place.note], place.heading.as_deref())
}

struct Summarizer<'w, 'a> {
    writer: &'w mut Writer<'a>,
    /// The notes' sections, which points are traced to.
    sections: Sections,
    /// Each note's headings and title, which a point must say more than.
    headings: Vec<Vec<String>>,
    /// The points kept so far.
    points: Vec<Point>,
    /// The sections the points were traced to, in the order of their numbers.
    cited: Vec<Place>,
    progress: Progress,
    /// Print each point as it comes.
    stream: bool,
}

/// What one generation left: points kept, points that only named a heading, and whether the
/// reply ended whole.
struct Outcome {
    kept: usize,
    bare: usize,
    dropped: Vec<String>,
    whole: bool,
}

impl Summarizer<'_, '_> {
    /// One job's points (asked once more when some only named a heading). False when the
    /// model wrote nothing usable for it (a reply cut before its first point ended).
    fn job(&mut self, job: &Job, notes: &[SourceNote], free: bool) -> Result<bool> {
        let title = &notes[job.note].title;
        let vars = |points, retry| NoteVars {
            title,
            text: &job.text,
            part: job.part,
            parts: job.parts,
            points,
            retry,
        };
        let max_tokens = self.writer.request.max_tokens;
        let grammar = match job.points {
            Some(points) => points_grammar(max_tokens, points),
            None => summary_grammar(max_tokens),
        };
        let user = self
            .writer
            .render(StudyPrompt::Note, &vars(job.points, false))?;
        let first = self.generate(&user, &grammar, job)?;
        let mut kept = first.kept;
        if first.bare > 0 {
            tracing::info!(
                "{title} part {}: {} points only named a heading; asking again",
                job.part,
                first.bare
            );
            let again = Some(first.bare);
            let user = self.writer.render(StudyPrompt::Note, &vars(again, true))?;
            // Warmer: asked the same greedily, a small model wrote the same heading again.
            let usual = self.writer.request.sampling.clone();
            let sampling = &mut self.writer.request.sampling;
            sampling.temperature = sampling.temperature.max(RETRY_TEMPERATURE);
            sampling.seed = sampling.seed.wrapping_add(job.part as u32);
            let second = self.generate(&user, &points_grammar(max_tokens, first.bare), job);
            self.writer.request.sampling = usual;
            let second = second?;
            kept += second.kept;
            // Of several notes, each keeps a point: one that says little of a note (a hub of
            // links: "Obsidian can be used as a collaboration tool for your team.") rather
            // than none: of those dropped, the one of the most words (the first of them).
            let headings: Vec<&str> = self.headings[job.note].iter().map(String::as_str).collect();
            let said_most = first
                .dropped
                .iter()
                .chain(&second.dropped)
                .filter(|p| !bare_title_exactly(p, &headings))
                .rev()
                .max_by_key(|p| content_words(p).len());
            if kept == 0
                && notes.len() > 1
                && let Some(point) = said_most
            {
                tracing::info!("{title}: keeping a point that says little rather than none");
                self.keep_anyway(point.clone(), job)?;
                kept = 1;
            }
        }
        let which = if job.parts > 1 {
            format!(" (part {} of {})", job.part, job.parts)
        } else {
            String::new()
        };
        if kept == 0 && !first.whole {
            if free {
                bail!(
                    "the summary of {title} was cut off at --max-tokens {max_tokens} before its \
                     first point ended; raise --max-tokens"
                );
            }
            self.progress.suspend(|| {
                eprintln!(
                    "recall: the summary of {title}{which} was cut off at --max-tokens \
                     {max_tokens} before its first point ended; leaving it out"
                );
            });
            return Ok(false);
        }
        if !first.whole {
            self.progress.suspend(|| {
                eprintln!(
                    "recall: the summary of {title}{which} reached --max-tokens; its last, \
                     unfinished point is left out"
                );
            });
        }
        Ok(true)
    }

    /// Keeps `text` as a point of `job` whatever it says (unless it repeats one).
    fn keep_anyway(&mut self, text: String, job: &Job) -> Result<()> {
        let mut keeper = Keeper {
            sections: &mut self.sections,
            points: &mut self.points,
            cited: &mut self.cited,
            progress: &self.progress,
            headings: &[],
            within: job.within.clone(),
            stream: self.stream,
            bound: usize::MAX,
            kept: 0,
            bare: 0,
            dropped: Vec::new(),
        };
        Ok(keeper.keep(text)?)
    }

    /// One summary generation for `job`; each whole line that is a new point saying more than
    /// a heading is kept, traced to its section, and (when streaming) printed with its mark
    /// as it ends. A line cut off at `--max-tokens` is never shown, nor kept.
    fn generate(&mut self, user: &str, grammar: &Grammar, job: &Job) -> Result<Outcome> {
        let headings: Vec<&str> = self.headings[job.note].iter().map(String::as_str).collect();
        let mut keeper = Keeper {
            sections: &mut self.sections,
            points: &mut self.points,
            cited: &mut self.cited,
            progress: &self.progress,
            headings: &headings,
            within: job.within.clone(),
            stream: self.stream,
            bound: point_bound(self.writer.request.max_tokens),
            kept: 0,
            bare: 0,
            dropped: Vec::new(),
        };
        let mut pending = String::new();
        let mut closed = false;
        let mut sink = |text: &str| {
            pending.push_str(text);
            let Some(end) = pending.rfind('\n') else {
                return ControlFlow::Continue(());
            };
            let lines: String = pending.drain(..=end).collect();
            for line in lines.lines() {
                if keeper.line(line).is_err() {
                    // Nobody reads any more (a closed pipe).
                    closed = true;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        };
        let completion = self
            .writer
            .generate(StudyPrompt::Summarize, user, grammar, &mut sink)?;
        let whole = matches!(
            completion.stop,
            StopReason::EndOfTurn | StopReason::EndOfMessage
        );
        if whole && !closed && !pending.is_empty() {
            keeper.line(&pending)?;
        }
        Ok(Outcome {
            kept: keeper.kept,
            bare: keeper.bare,
            dropped: keeper.dropped,
            whole,
        })
    }

    /// What was read and which sections (one note) or notes (several) no point came from.
    fn read_report<'n>(
        &self,
        notes: &'n [SourceNote],
        outlines: &'n [Outline],
        read: &[HashSet<usize>],
    ) -> ReadReport<'n> {
        let words = notes
            .iter()
            .map(|n| n.content.split_whitespace().count())
            .sum();
        if let [note] = notes {
            let outline = &outlines[0];
            let covered: HashSet<usize> = self
                .points
                .iter()
                .filter_map(|p| p.section)
                .filter_map(|i| outline.section_of(self.sections.start(i)))
                .collect();
            let without = (0..outline.sections.len())
                .filter(|s| read[0].contains(s) && !covered.contains(s))
                .map(|s| SourceRef::new(note, outline.heading(s)))
                .collect();
            return ReadReport::new("sections", read[0].len(), outline.sections.len(), words)
                .without_points(without);
        }
        let covered: HashSet<usize> = self
            .points
            .iter()
            .filter_map(|p| p.section)
            .map(|i| self.sections.place(i).note)
            .collect();
        let read_notes =
            (0..notes.len()).filter(|&n| !read[n].is_empty() || outlines[n].sections.is_empty());
        let without = read_notes
            .clone()
            .filter(|n| !covered.contains(n))
            .map(|n| SourceRef::new(&notes[n], None))
            .collect();
        ReadReport::new("notes", read_notes.count(), notes.len(), words).without_points(without)
    }
}

/// Where the lines of one generation go.
struct Keeper<'k> {
    sections: &'k mut Sections,
    points: &'k mut Vec<Point>,
    cited: &'k mut Vec<Place>,
    progress: &'k Progress,
    headings: &'k [&'k str],
    within: Range<usize>,
    stream: bool,
    /// The most characters a point may have: one that has them was cut there.
    bound: usize,
    kept: usize,
    bare: usize,
    /// The points dropped for only naming a heading.
    dropped: Vec<String>,
}

impl Keeper<'_> {
    /// One whole line of a reply: a point is kept unless it only names a heading or repeats
    /// a point already kept; with `stream`, printed with the number of its section.
    fn line(&mut self, line: &str) -> std::io::Result<()> {
        let Some(text) = point_of(line) else {
            return Ok(());
        };
        let text = end_cut_point(text, self.bound);
        if bare_title(&text, self.headings) {
            tracing::info!("a point that only names a heading is dropped: {text:?}");
            self.bare += 1;
            self.dropped.push(text);
            return Ok(());
        }
        self.keep(text)
    }

    /// Keeps `text` unless it repeats a point already kept; with `stream`, prints it with the
    /// number of its section.
    fn keep(&mut self, text: String) -> std::io::Result<()> {
        let key = content_words(&text);
        if self.points.iter().any(|p| content_words(&p.text) == key) {
            tracing::info!("a point said before is dropped: {text:?}");
            return Ok(());
        }
        let section = self.sections.best_within(&text, self.within.clone());
        self.kept += 1;
        let mark = section.map(|i| {
            let place = self.sections.place(i).clone();
            match self.cited.iter().position(|c| *c == place) {
                Some(n) => n + 1,
                None => {
                    self.cited.push(place);
                    self.cited.len()
                }
            }
        });
        if self.stream {
            let line = match mark {
                Some(n) => format!("- {text} [{n}]\n"),
                None => format!("- {text}\n"),
            };
            self.progress.suspend(|| {
                let mut stdout = std::io::stdout();
                stdout
                    .write_all(line.as_bytes())
                    .and_then(|()| stdout.flush())
            })?;
        }
        self.points.push(Point { text, section });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_points_and_drops_a_cut_last_line() {
        let reply = "- One point.\n- Two  \n- Thr";
        assert_eq!(
            parse_summary(reply, false),
            vec!["One point.".to_string(), "Two".to_string()]
        );
        assert_eq!(parse_summary(reply, true).len(), 3);
        assert_eq!(parse_summary("- A.\n", false), vec!["A.".to_string()]);
        assert!(parse_summary("- Cut before its end", false).is_empty());
        assert_eq!(bullets(&parse_summary("- A.\n- B.", true)), "- A.\n- B.");
    }

    #[test]
    fn the_summary_grammar_bounds_points_and_their_length() {
        let grammar = summary_grammar(512);
        assert_eq!(
            grammar.gbnf,
            "root ::= bullet (\"\\n\" bullet){0,6} \"\\n\"?\n\
             bullet ::= \"- \" point\n\
             point ::= [^\\x00-\\x20\\x7F] [^\\x00-\\x1F\\x7F]{0,299}\n"
        );
        assert!(summary_grammar(64).gbnf.ends_with("{0,60}\n"));
        // A part asks for its points exactly.
        assert!(
            points_grammar(512, 3)
                .gbnf
                .starts_with("root ::= bullet (\"\\n\" bullet){2} ")
        );
        assert!(
            points_grammar(512, 1)
                .gbnf
                .starts_with("root ::= bullet (\"\\n\" bullet){0} ")
        );
    }

    #[test]
    fn a_point_cut_at_its_bound_ends_at_its_last_sentence() {
        let cut = "One sentence. Two sentences that run on and o".to_string();
        assert_eq!(end_cut_point(cut.clone(), cut.len()), "One sentence.");
        assert_eq!(end_cut_point(cut.clone(), cut.len() + 1), "One sentence.");
        assert_eq!(end_cut_point(cut.clone(), cut.len() + 2), cut);
        assert_eq!(end_cut_point("No end in sig".into(), 13), "No end in sig…");
    }

    #[test]
    fn a_point_that_only_names_a_heading_is_bare() {
        let headings = [
            "Set up Obsidian Sync for the first time",
            "Log in with your Obsidian account",
            "Lists",
            "Footnotes",
            "Set up Obsidian Sync",
        ];
        for bare in [
            "Set up Obsidian Sync for the first time",
            "Log in with your Obsidian account.",
            "How to log in with your Obsidian account",
            "Lists",
            "Footnotes are supported.",
            "Setting up Obsidian Sync",
            "Set up Obsidian Sync: first steps",
        ] {
            assert!(bare_title(bare, &headings), "{bare:?} is bare");
        }
        assert!(bare_title_exactly("Lists.", &headings));
        assert!(!bare_title_exactly("Footnotes are supported.", &headings));
        for point in [
            "Log in with your Obsidian account from Settings, then choose Sync and Connect.",
            "Lists start with a dash, an asterisk or a number followed by a period.",
            "A footnote is written as [^1] and its text after [^1]: at the end of the note.",
            "The first sync of a large vault can take hours.",
        ] {
            assert!(!bare_title(point, &headings), "{point:?} says something");
        }
    }
}
