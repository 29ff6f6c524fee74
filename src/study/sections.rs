//! The sections of the notes a study command read, and which one a generated text comes from:
//! a summary point is traced to the section holding most of its words, weighed as a citation
//! is ([`crate::support::SourceTerms`]), so that each point names a heading a reader can open.

use std::ops::Range;

use super::chunk::{blocks, headings};
use super::export::source_label;
use super::target::SourceNote;
use crate::support::SourceTerms;

/// Where a section is: the note (an index into the notes) and the heading it is under
/// (`None` for the text before the first heading).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Place {
    pub(super) note: usize,
    pub(super) heading: Option<String>,
}

/// The sections of some notes, read once.
pub(super) struct Sections {
    places: Vec<Place>,
    /// For each place, the first of its note's paragraphs ([`blocks`]) it holds.
    starts: Vec<usize>,
    terms: SourceTerms,
}

impl Sections {
    /// Cuts each note at its headings: a section is a heading's paragraphs up to the next
    /// heading, read with the note's title and the heading, as a search hit is.
    pub(super) fn new(notes: &[SourceNote]) -> Sections {
        let mut places: Vec<Place> = Vec::new();
        let mut starts = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        for (note, source) in notes.iter().enumerate() {
            let paragraphs = blocks(&source.content);
            for (i, (paragraph, heading)) in
                paragraphs.iter().zip(headings(&paragraphs)).enumerate()
            {
                let place = Place { note, heading };
                if places.last() != Some(&place) {
                    texts.push(source_label(&source.title, place.heading.as_deref()));
                    places.push(place);
                    starts.push(i);
                }
                let text = texts.last_mut().expect("a section was just pushed");
                text.push('\n');
                text.push_str(paragraph);
            }
        }
        Sections {
            terms: SourceTerms::new(&texts),
            places,
            starts,
        }
    }

    /// The sections (a range of places) that hold some of the paragraphs `blocks` of `note`
    /// (paragraphs as [`blocks`] cuts the note).
    pub(super) fn within(&self, note: usize, blocks: Range<usize>) -> Range<usize> {
        let of_note: Vec<usize> = (0..self.places.len())
            .filter(|&i| self.places[i].note == note)
            .collect();
        let held: Vec<usize> = of_note
            .iter()
            .enumerate()
            .filter(|&(k, &i)| {
                let end = of_note
                    .get(k + 1)
                    .map_or(usize::MAX, |&next| self.starts[next]);
                self.starts[i] < blocks.end && end > blocks.start
            })
            .map(|(_, &i)| i)
            .collect();
        match (held.first(), held.last()) {
            (Some(&first), Some(&last)) => first..last + 1,
            _ => 0..0,
        }
    }

    /// Of the sections `within` (a range from [`Sections::within`]), the one holding most of
    /// `text`'s words, weighed against every section read; with none holding any, the first.
    pub(super) fn best_within(&mut self, text: &str, within: Range<usize>) -> Option<usize> {
        let scores = self.terms.evidence("", text);
        within
            .clone()
            .filter(|&i| scores.get(i).is_some_and(|&s| s > 0.0))
            .max_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(b.cmp(&a)))
            .or((!within.is_empty()).then_some(within.start))
    }

    /// The section numbered `i` (as [`Sections::best_within`] names it).
    pub(super) fn place(&self, i: usize) -> &Place {
        &self.places[i]
    }

    /// The first of its note's paragraphs that section `i` holds.
    pub(super) fn start(&self, i: usize) -> usize {
        self.starts[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(title: &str, content: &str) -> SourceNote {
        SourceNote {
            uri: format!("note://{title}"),
            title: title.into(),
            link: format!("obsidian://open?vault=v&file={title}"),
            content: content.into(),
        }
    }

    #[test]
    fn a_point_is_traced_to_the_section_holding_its_words() {
        let notes = [
            note(
                "Sync",
                "Sync keeps notes alike.\n\n## Plans\n\nThe Plus plan stores 10 GB.\n\n\
                 It keeps version history for a year.\n\n## Regions\n\nServers stand in Europe.",
            ),
            note(
                "Publish",
                "Publish puts notes on a website with a custom domain.",
            ),
        ];
        let mut sections = Sections::new(&notes);
        let place = |note, heading: Option<&str>| Place {
            note,
            heading: heading.map(str::to_string),
        };
        // Paragraphs of Sync: the opening, `## Plans` and its two, `## Regions` and its one.
        let all = sections.within(0, 0..6);
        assert_eq!(all, 0..3);
        assert_eq!(sections.within(1, 0..1), 3..4);
        assert_eq!(sections.within(0, 2..4), 1..2);
        let mut source_of = |text: &str, within: Range<usize>| {
            sections
                .best_within(text, within)
                .map(|i| sections.place(i).clone())
        };
        assert_eq!(
            source_of(
                "Version history is kept for a year on the Plus plan.",
                all.clone()
            ),
            Some(place(0, Some("Plans")))
        );
        assert_eq!(
            source_of("Its servers are in Europe.", all.clone()),
            Some(place(0, Some("Regions")))
        );
        assert_eq!(
            source_of("A website on your own domain.", 3..4),
            Some(place(1, None))
        );
        // A point is traced within the part it was written from; with no word of it there,
        // to the part's first section.
        assert_eq!(
            source_of("Its servers are in Europe.", 1..2),
            Some(place(0, Some("Plans")))
        );
        assert_eq!(source_of("Zebras graze.", all), Some(place(0, None)));
        assert_eq!(source_of("Zebras graze.", 0..0), None);
    }
}
