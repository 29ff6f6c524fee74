//! The sections of the notes a study command read, and which one a generated text comes from:
//! a summary point is traced to the section holding most of its words, weighed as a citation
//! is ([`crate::support::SourceTerms`]), so that each point names a heading a reader can open.

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
    terms: SourceTerms,
}

impl Sections {
    /// Cuts each note at its headings: a section is a heading's paragraphs up to the next
    /// heading, read with the note's title and the heading, as a search hit is.
    pub(super) fn new(notes: &[SourceNote]) -> Sections {
        let mut places: Vec<Place> = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        for (note, source) in notes.iter().enumerate() {
            let paragraphs = blocks(&source.content);
            for (paragraph, heading) in paragraphs.iter().zip(headings(&paragraphs)) {
                let place = Place { note, heading };
                if places.last() != Some(&place) {
                    texts.push(source_label(&source.title, place.heading.as_deref()));
                    places.push(place);
                }
                let text = texts.last_mut().expect("a section was just pushed");
                text.push('\n');
                text.push_str(paragraph);
            }
        }
        Sections {
            terms: SourceTerms::new(&texts),
            places,
        }
    }

    /// The section holding most of `text`'s words; `None` when none holds any.
    pub(super) fn source_of(&mut self, text: &str) -> Option<Place> {
        self.terms.best(text).map(|i| self.places[i].clone())
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
        assert_eq!(
            sections.source_of("Version history is kept for a year on the Plus plan."),
            Some(place(0, Some("Plans")))
        );
        assert_eq!(
            sections.source_of("Its servers are in Europe."),
            Some(place(0, Some("Regions")))
        );
        assert_eq!(
            sections.source_of("A website on your own domain."),
            Some(place(1, None))
        );
        assert_eq!(sections.source_of("Zebras graze."), None);
    }
}
