//! Summaries: one generation per note when it fits, else one per chunk and a combining pass
//! (map-reduce, combining groups first when the parts do not fit together). Every generation is
//! held by a grammar to a short bullet list (`- point` lines), streamed a whole line at a time.
//! Each point of the summary names the section its words come from ([`super::sections`]):
//! `[n]` after the point, the numbered sources as `obsidian://` links after the summary.

use std::io::Write;
use std::ops::ControlFlow;

use anyhow::{Result, bail};
use serde::Serialize;

use super::chunk::chunk_text;
use super::export::{SourceRef, SummaryPoint, SummaryReport};
use super::sections::{Place, Sections};
use super::target::SourceNote;
use super::writer::{Grammar, Writer, line_rule};
use crate::engine::StopReason;
use crate::prompt::StudyPrompt;

/// Most points in one summary.
const MAX_POINTS: usize = 7;
/// Longest point, in characters.
const MAX_POINT: usize = 300;

/// The grammar of a summary: 1 to 7 lines `- point`, each non-empty, of at most `max_tokens`
/// characters (so the first point always fits), then only the end of the turn.
pub fn summary_grammar(max_tokens: usize) -> Grammar {
    let point = max_tokens.saturating_sub(3).clamp(1, MAX_POINT);
    Grammar {
        name: "summary",
        gbnf: format!(
            "root ::= bullet (\"\\n\" bullet){{0,{}}} \"\\n\"?\nbullet ::= \"- \" point\n{}",
            MAX_POINTS - 1,
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
    lines
        .iter()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(str::trim)
        .filter(|point| !point.is_empty())
        .map(str::to_string)
        .collect()
}

/// A summary's Markdown: its points as a bullet list.
fn bullets(points: &[String]) -> String {
    points
        .iter()
        .map(|p| format!("- {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the note template is filled with.
#[derive(Serialize)]
struct NoteVars<'a> {
    title: &'a str,
    text: &'a str,
    part: usize,
    parts: usize,
}

/// Summarizes `notes` (one, or each and then all together) and prints the summary.
pub(super) fn write_summary(
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
    let mut summarizer = Summarizer {
        grammar: summary_grammar(writer.request.max_tokens),
        writer,
        sections: Sections::new(notes),
        cited: Vec::new(),
    };
    let single = notes.len() == 1;
    let mut chunks = 0;
    let mut parts = Vec::new();
    for note in notes {
        let (summary, n) = summarizer.note(note, stream && single)?;
        chunks += n;
        parts.push((note.title.as_str(), summary));
    }
    let summary = if single {
        parts.remove(0).1
    } else {
        let parts = parts
            .into_iter()
            .map(|(title, summary)| format!("### {title}\n\n{summary}"))
            .collect();
        summarizer.reduce(target, parts, stream)?
    };
    if json {
        let texts = parse_summary(&summary, true);
        let places: Vec<Option<Place>> = texts
            .iter()
            .map(|text| summarizer.sections.source_of(text))
            .collect();
        let points = texts
            .into_iter()
            .zip(&places)
            .map(|(text, place)| SummaryPoint {
                text,
                source: place.as_ref().map(|place| source_ref(notes, place)),
            })
            .collect();
        return SummaryReport::new(summary, points, notes, chunks).print(&mut out);
    }
    // The sections the points were traced to, numbered as marked; then the notes read that no
    // point was traced to.
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
    Ok(())
}

fn source_ref<'n>(notes: &'n [SourceNote], place: &'n Place) -> SourceRef<'n> {
    SourceRef::new(&notes[place.note], place.heading.as_deref())
}

struct Summarizer<'w, 'a> {
    writer: &'w mut Writer<'a>,
    grammar: Grammar,
    /// The notes' sections, which points are traced to.
    sections: Sections,
    /// The sections the streamed points were traced to, in the order of their numbers.
    cited: Vec<Place>,
}

/// `line` (a streamed `- point`) with the number of the section its words come from, given
/// one in `cited` (the first time a section is named, it is added).
fn mark_point(line: &str, sections: &mut Sections, cited: &mut Vec<Place>) -> String {
    let line = line.trim_end();
    let Some(place) = line.strip_prefix("- ").and_then(|p| sections.source_of(p)) else {
        return line.to_string();
    };
    let number = match cited.iter().position(|c| *c == place) {
        Some(i) => i + 1,
        None => {
            cited.push(place);
            cited.len()
        }
    };
    format!("{line} [{number}]")
}

impl Summarizer<'_, '_> {
    /// One note's summary and the number of chunks it took: one generation when the note
    /// fits, else one per chunk and then a combining pass.
    fn note(&mut self, note: &SourceNote, stream: bool) -> Result<(String, usize)> {
        let vars = |text, part, parts| NoteVars {
            title: &note.title,
            text,
            part,
            parts,
        };
        let whole = self
            .writer
            .render(StudyPrompt::Note, &vars(&note.content, 1, 1))?;
        if self.writer.fits(StudyPrompt::Summarize, &whole)? {
            let summary = self.generate(StudyPrompt::Summarize, &whole, stream, &note.title)?;
            return Ok((summary, 1));
        }
        let frame = self.writer.render(StudyPrompt::Note, &vars("", 999, 999))?;
        let budget = self.writer.text_budget(StudyPrompt::Summarize, &frame, 0)?;
        let chunks = chunk_text(&note.content, budget, &|text| self.writer.count(text));
        let total = chunks.len();
        let mut summaries = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            tracing::info!("summarizing {} part {}/{total}", note.uri, i + 1);
            let user = self
                .writer
                .render(StudyPrompt::Note, &vars(chunk, i + 1, total))?;
            summaries.push(self.generate(StudyPrompt::Summarize, &user, false, &note.title)?);
        }
        Ok((self.reduce(&note.title, summaries, stream)?, total))
    }

    /// Combines partial summaries into one; when they do not fit one prompt, combines groups
    /// of them first (and so on).
    fn reduce(&mut self, title: &str, mut parts: Vec<String>, stream: bool) -> Result<String> {
        let vars = |text: &str| serde_json::json!({"title": title, "text": text});
        loop {
            let joined = parts.join("\n\n");
            let user = self
                .writer
                .render(StudyPrompt::CombineUser, &vars(&joined))?;
            if self.writer.fits(StudyPrompt::Combine, &user)? {
                return self.generate(StudyPrompt::Combine, &user, stream, title);
            }
            let frame = self.writer.render(StudyPrompt::CombineUser, &vars(""))?;
            let budget = self.writer.text_budget(StudyPrompt::Combine, &frame, 0)?;
            let groups = chunk_text(&joined, budget, &|text| self.writer.count(text));
            if groups.len() >= parts.len() {
                bail!(
                    "{} partial summaries of {title} do not fit the context together; raise \
                     --ctx or lower --max-tokens",
                    parts.len()
                );
            }
            let mut next = Vec::new();
            for group in &groups {
                let user = self.writer.render(StudyPrompt::CombineUser, &vars(group))?;
                next.push(self.generate(StudyPrompt::Combine, &user, false, title)?);
            }
            parts = next;
        }
    }

    /// One summary generation; with `stream`, each whole line goes to stdout as it ends (a
    /// line cut off at `--max-tokens` is never shown, nor kept).
    fn generate(
        &mut self,
        system: StudyPrompt,
        user: &str,
        stream: bool,
        title: &str,
    ) -> Result<String> {
        let mut stdout = std::io::stdout();
        let mut pending = String::new();
        let (sections, cited) = (&mut self.sections, &mut self.cited);
        let mut sink = |text: &str| {
            if !stream {
                return ControlFlow::Continue(());
            }
            pending.push_str(text);
            let Some(end) = pending.rfind('\n') else {
                return ControlFlow::Continue(());
            };
            let lines: String = pending
                .drain(..=end)
                .collect::<String>()
                .lines()
                .map(|line| mark_point(line, sections, cited) + "\n")
                .collect();
            match stdout
                .write_all(lines.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => ControlFlow::Continue(()),
                // Nobody reads any more (a closed pipe).
                Err(_) => ControlFlow::Break(()),
            }
        };
        let completion = self
            .writer
            .generate(system, user, &self.grammar, &mut sink)?;
        let whole = matches!(
            completion.stop,
            StopReason::EndOfTurn | StopReason::EndOfMessage
        );
        if stream && whole && !pending.is_empty() {
            writeln!(
                stdout,
                "{}",
                mark_point(&pending, &mut self.sections, &mut self.cited)
            )?;
        }
        let points = parse_summary(&completion.text, whole);
        if points.is_empty() {
            bail!(
                "the summary of {title} was cut off at --max-tokens {} before its first point \
                 ended; raise --max-tokens",
                self.writer.request.max_tokens
            );
        }
        if !whole {
            eprintln!(
                "recall: the summary of {title} reached --max-tokens; its last, unfinished \
                 point is left out"
            );
        }
        Ok(bullets(&points))
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
    }
}
