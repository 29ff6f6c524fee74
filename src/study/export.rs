//! What the study commands print: a quiz as Markdown (items as they come), one JSON object, or
//! Anki CSV (front, back, source, link; written by the `csv` crate); a summary's `--json`
//! report. The JSON shapes are the `Serialize` types here. Every source carries its
//! `obsidian://open` link, at the heading its item comes from: a click away in Obsidian.

use std::io::Write;

use anyhow::Result;
use obsidian_kb::api;
use serde::Serialize;

use super::item::QuizItem;
use super::target::SourceNote;
use crate::cli::QuizFormat;

/// Where an item or a summary comes from.
#[derive(Debug, Serialize)]
pub(super) struct SourceRef<'a> {
    title: &'a str,
    uri: &'a str,
    /// The heading of the passage, when the note was cut into pieces.
    #[serde(skip_serializing_if = "Option::is_none")]
    heading: Option<&'a str>,
    /// `obsidian://open` link to the note, at that heading when there is one.
    link: String,
}

impl<'a> SourceRef<'a> {
    pub(super) fn new(note: &'a SourceNote, heading: Option<&'a str>) -> Self {
        SourceRef {
            title: &note.title,
            uri: &note.uri,
            heading,
            link: heading.map_or_else(
                || note.link.clone(),
                |heading| api::link_at_heading(&note.link, heading),
            ),
        }
    }

    /// `Title` or `Title › Heading`: the source as a reader names it.
    fn label(&self) -> String {
        source_label(self.title, self.heading)
    }

    /// The `obsidian://open` link.
    pub(super) fn link(&self) -> &str {
        &self.link
    }

    /// The label as a Markdown link that opens the note in Obsidian.
    pub(super) fn markdown(&self) -> String {
        format!("[{}]({})", self.label(), self.link)
    }
}

/// `Title`, or `Title › Heading`: a source as a reader names it.
pub(super) fn source_label(title: &str, heading: Option<&str>) -> String {
    match heading {
        Some(heading) => format!("{title} › {heading}"),
        None => title.to_string(),
    }
}

/// `quiz --format json`: the questions, each with its source.
#[derive(Debug, Serialize)]
struct QuizReport<'a> {
    questions: Vec<QuizEntry<'a>>,
}

#[derive(Debug, Serialize)]
struct QuizEntry<'a> {
    question: &'a str,
    answer: &'a str,
    source: SourceRef<'a>,
}

/// `summarize --json`: the summary, each point with the section it comes from, the notes it
/// is made from, how many generations (chunks) they took, and how much was read.
#[derive(Debug, Serialize)]
pub(super) struct SummaryReport<'a> {
    summary: String,
    points: Vec<SummaryPoint<'a>>,
    sources: Vec<SourceRef<'a>>,
    chunks: usize,
    read: ReadReport<'a>,
}

/// How much of its target a summary read: the top-level sections of one note, or the notes of
/// several; and those read that no point came from.
#[derive(Debug, Serialize)]
pub(super) struct ReadReport<'a> {
    /// `sections` or `notes`.
    unit: &'static str,
    /// How many were read...
    read: usize,
    /// ...of how many.
    of: usize,
    /// The words of the notes.
    words: usize,
    /// The sections (or notes) read that no point came from.
    without_points: Vec<SourceRef<'a>>,
}

impl<'a> ReadReport<'a> {
    pub(super) fn new(unit: &'static str, read: usize, of: usize, words: usize) -> Self {
        ReadReport {
            unit,
            read,
            of,
            words,
            without_points: Vec::new(),
        }
    }

    pub(super) fn without_points(self, without_points: Vec<SourceRef<'a>>) -> Self {
        ReadReport {
            without_points,
            ..self
        }
    }

    /// `Read 15 of 15 sections (2,345 words).`, and which gave no point.
    pub(super) fn sentence(&self) -> String {
        let mut text = format!(
            "Read {} of {} {} ({} words).",
            self.read,
            self.of,
            self.unit,
            thousands(self.words)
        );
        if !self.without_points.is_empty() {
            let names: Vec<&str> = self
                .without_points
                .iter()
                .map(|s| match (self.unit, s.heading) {
                    ("notes", _) => s.title,
                    (_, Some(heading)) => heading,
                    (_, None) => "the opening",
                })
                .collect();
            text.push_str(&format!(" No point came from: {}.", names.join("; ")));
        }
        text
    }
}

/// A count as a reader reads it: `2,345`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One point of a summary and the section its words come from (null when no section holds
/// them).
#[derive(Debug, Serialize)]
pub(super) struct SummaryPoint<'a> {
    pub(super) text: String,
    pub(super) source: Option<SourceRef<'a>>,
}

impl<'a> SummaryReport<'a> {
    pub(super) fn new(
        summary: String,
        points: Vec<SummaryPoint<'a>>,
        notes: &'a [SourceNote],
        chunks: usize,
        read: ReadReport<'a>,
    ) -> Self {
        SummaryReport {
            summary,
            points,
            sources: notes.iter().map(|n| SourceRef::new(n, None)).collect(),
            chunks,
            read,
        }
    }

    /// One line of JSON.
    pub(super) fn print(&self, out: &mut impl Write) -> Result<()> {
        writeln!(out, "{}", serde_json::to_string(self)?)?;
        Ok(())
    }
}

/// A quiz being printed in one format.
pub(super) struct QuizOutput<'o, W: Write> {
    format: QuizFormat,
    out: &'o mut W,
}

impl<'o, W: Write> QuizOutput<'o, W> {
    /// Starts the output (Markdown's title).
    pub(super) fn start(format: QuizFormat, target: &str, out: &'o mut W) -> Result<Self> {
        if format == QuizFormat::Md {
            writeln!(out, "# Quiz: {target}\n")?;
        }
        Ok(QuizOutput { format, out })
    }

    /// The `number`-th item: Markdown prints it now, the other formats at the end.
    pub(super) fn item(
        &mut self,
        item: &QuizItem,
        notes: &[SourceNote],
        number: usize,
    ) -> Result<()> {
        if self.format != QuizFormat::Md {
            return Ok(());
        }
        let source = SourceRef::new(&notes[item.note], item.heading.as_deref());
        let indent = |s: &str| s.replace('\n', "\n   ");
        writeln!(
            self.out,
            "{number}. {}\n   - Answer: {}\n   - Source: {}\n",
            indent(&item.qa.question),
            indent(&item.qa.answer),
            source.markdown()
        )?;
        self.out.flush()?;
        Ok(())
    }

    /// Prints what the format prints at the end: the JSON object, or the CSV rows.
    pub(super) fn finish(self, items: &[QuizItem], notes: &[SourceNote]) -> Result<()> {
        let entries = items.iter().map(|item| QuizEntry {
            question: &item.qa.question,
            answer: &item.qa.answer,
            source: SourceRef::new(&notes[item.note], item.heading.as_deref()),
        });
        match self.format {
            QuizFormat::Md => {}
            QuizFormat::Json => {
                let report = QuizReport {
                    questions: entries.collect(),
                };
                writeln!(self.out, "{}", serde_json::to_string(&report)?)?;
            }
            QuizFormat::Anki => {
                let mut csv = anki_writer(&mut *self.out);
                for entry in entries {
                    let source = &entry.source;
                    csv.write_record([
                        entry.question,
                        entry.answer,
                        &source.label(),
                        &source.link,
                    ])?;
                }
                csv.flush()?;
            }
        }
        Ok(())
    }
}

/// RFC 4180 CSV as Anki imports it: CRLF line ends, fields quoted when they hold a comma, a
/// quote or a line break, or a `#` (which Anki would read as a header line at a row's start).
fn anki_writer<W: Write>(out: W) -> csv::Writer<W> {
    csv::WriterBuilder::new()
        .has_headers(false)
        .terminator(csv::Terminator::CRLF)
        .comment(Some(b'#'))
        .from_writer(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anki_rows_quote_what_needs_it_and_read_back() {
        let rows = [
            [
                "What, \"exactly\"?",
                "line one\nline two",
                "Home (note://Home)",
            ],
            ["#tag first", "", "plain"],
        ];
        let mut text = Vec::new();
        {
            let mut csv = anki_writer(&mut text);
            for row in &rows {
                csv.write_record(row).unwrap();
            }
            csv.flush().unwrap();
        }
        let text = String::from_utf8(text).unwrap();
        assert!(text.ends_with("plain\r\n"), "{text:?}");
        assert!(text.contains("\"#tag first\""), "{text:?}");
        let read: Vec<Vec<String>> = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes())
            .records()
            .map(|r| r.unwrap().iter().map(str::to_string).collect())
            .collect();
        assert_eq!(read, rows.map(|r| r.map(str::to_string).to_vec()));
    }

    #[test]
    fn json_reports_name_sources_and_leave_out_unknown_headings() {
        let link = "obsidian://open?vault=v&file=Home";
        let notes = [SourceNote {
            uri: "note://Home".into(),
            title: "Home".into(),
            link: link.into(),
            content: String::new(),
        }];
        let points = vec![SummaryPoint {
            text: "A point.".into(),
            source: None,
        }];
        let read = ReadReport::new("sections", 2, 2, 2345)
            .without_points(vec![SourceRef::new(&notes[0], Some("Lists"))]);
        assert_eq!(
            read.sentence(),
            "Read 2 of 2 sections (2,345 words). No point came from: Lists."
        );
        let report = SummaryReport::new("- A point.".into(), points, &notes, 1, read);
        let lists = "obsidian://open?vault=v&file=Home%23Lists";
        assert_eq!(
            serde_json::to_value(&report).unwrap(),
            serde_json::json!({
                "summary": "- A point.",
                "points": [{"text": "A point.", "source": null}],
                "sources": [{"title": "Home", "uri": "note://Home", "link": link}],
                "chunks": 1,
                "read": {"unit": "sections", "read": 2, "of": 2, "words": 2345,
                         "without_points": [{"title": "Home", "uri": "note://Home",
                                             "heading": "Lists", "link": lists}]}
            })
        );
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(
            ReadReport::new("notes", 3, 3, 900).sentence(),
            "Read 3 of 3 notes (900 words)."
        );
        let source = SourceRef::new(&notes[0], Some("Links & more"));
        let at_heading = "obsidian://open?vault=v&file=Home%23Links%20%26%20more";
        assert_eq!(
            source.markdown(),
            format!("[Home › Links & more]({at_heading})")
        );
        assert_eq!(
            serde_json::to_value(&source).unwrap(),
            serde_json::json!({"title": "Home", "uri": "note://Home", "heading": "Links & more", "link": at_heading})
        );
    }
}
