//! Who a question points at without naming them, by what they did ("the person I talked to
//! at the train station", "the friend whose birthday drinks I went to"): the notes the line
//! it describes links to are read after the opening search, and the answer step is told who
//! is meant. Stop 56 followed links for every question: it gained no answer and cost ~120
//! prompt tokens a question; read only for such questions, the frozen personal set's link
//! questions came out right 4 → 7 of 8 (docs/benches.md).

use std::collections::HashSet;
use std::sync::LazyLock;

use obsidian_kb::api;
use obsidian_kb::links::{self, LinkKind};
use obsidian_kb::search::Tokenizer;
use regex::Regex;

use super::{Agent, AgentError, Gathered};
use crate::engine::ChatModel;
use crate::markup;
use crate::prompt::Message;
use crate::sources::Source;
use crate::tool::{ToolCall, ToolHost, ToolSpec};
use crate::vault::VaultTools;

/// Notes the opening follows links to, for a question pointing at someone it does not name
/// ([`someone_pointed_at`]), and how much of each it reads: a person's note opens with what a
/// question about them asks (a birthday, an email, an employer in its properties and first
/// lines). "When's the birthday of the person I talked to at the train station on 11 August
/// 2022?" is answered by the day's line "I talked to [[Elias]]" and Elias's note, which
/// shares no word with the question.
const LINKED_NOTES: usize = 2;
const LINKED_CHARS: usize = 300;

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// After the opening search of a question pointing at someone ([`someone_pointed_at`]):
    /// the notes linked from the line it describes read as sources, who is meant kept for
    /// the answer step (`gathered.someone`), and the source of that line beside each
    /// (`gathered.found_through`), to be cited with it.
    pub(super) fn follow_pointed(
        &mut self,
        vault: &VaultTools,
        query: &str,
        tools: &[ToolSpec],
        conversation: &mut Vec<Message>,
        gathered: &mut Gathered,
    ) -> Result<(), AgentError> {
        let Some(pointed) = someone_pointed_at(query) else {
            return Ok(());
        };
        let linked = linked_notes(query, &pointed, gathered.sources.list());
        let reads: Vec<ToolCall> = linked
            .iter()
            .filter_map(|note| {
                let read = api::ReadParams {
                    uri: note.target.clone(),
                    max_chars: Some(LINKED_CHARS),
                    ..api::ReadParams::default()
                };
                vault.call(api::READ_NOTE, &read)
            })
            .collect();
        if !reads.is_empty() {
            self.gather(vault, &reads, false, tools, conversation, gathered)?;
        }
        // Told who is meant, the model reads their note, not the day's.
        let mut named: Vec<String> = Vec::new();
        for note in &linked {
            // The note as read: its properties are what is asked most.
            let Some(source) =
                gathered.sources.list().iter().rev().find(|s| {
                    s.title.eq_ignore_ascii_case(&note.title) && s.heading_path.is_empty()
                })
            else {
                continue;
            };
            named.push(format!("{} (source {})", source.title, source.number));
            gathered.found_through.push((source.number, note.from));
        }
        gathered.someone = (!named.is_empty())
            .then(|| format!("The {pointed} it asks about is {}.", named.join(" or ")));
        Ok(())
    }
}

/// A note a link leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LinkedNote {
    /// The link's target as written, less `.md` (`People/Elias`): what `read_note` resolves.
    target: String,
    /// The note's title: the target's last part (`Elias`).
    title: String,
    /// The number of the source whose line links it (the day's note the question describes).
    from: usize,
}

/// The one `question` asks about without naming them, pointed at by what they did or what is
/// theirs: "the person I talked to at the train station", "the friend whose birthday drinks I
/// went to", "the neighbour who borrowed my ladder". Returns the word it points with
/// ("person", "friend", "neighbour"). English only, so far.
fn someone_pointed_at(question: &str) -> Option<String> {
    static SOMEONE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)\bthe\s+(?P<who>[\p{L}-]+)\s+(?:who|whom|whose)\b|\bthe\s+(?P<one>person|people|friend|neighbou?r|colleague|co-?worker|one|guy|woman|man)\s+(?:I|we|that)\b",
        )
        .expect("valid regex")
    });
    let found = SOMEONE.captures(question)?;
    let who = found.name("who").or_else(|| found.name("one"))?;
    Some(who.as_str().to_lowercase())
}

/// The notes linked from the first line of `sources` that the model reads, shares a search
/// term with `query` other than the word pointing at someone (`pointed`: "person" is a
/// property's name too, `person:: [[Alice]]`) and links notes: the line the question
/// describes ("I talked to [[Elias]] on the train station"). At most [`LINKED_NOTES`], by
/// link target as written (`read_note` resolves a name as Obsidian does). Embeds and links
/// to files other than notes are no person or project.
fn linked_notes(query: &str, pointed: &str, sources: &[Source]) -> Vec<LinkedNote> {
    let mut tokenizer = Tokenizer::default();
    let mut asked: HashSet<String> = tokenizer.query_terms(query).into_iter().collect();
    for term in tokenizer.query_terms(pointed) {
        asked.remove(&term);
    }
    for source in sources {
        for line in source.passage.lines() {
            let shown = markup::plain(line);
            let shown = shown.trim();
            let bears = !shown.is_empty()
                && source.text.contains(shown)
                && tokenizer
                    .query_terms(shown)
                    .iter()
                    .any(|term| asked.contains(term));
            if !bears {
                continue;
            }
            let mut links = Vec::new();
            links::scan_wikilinks(line, LinkKind::Wiki, &mut links, &mut Vec::new());
            let mut notes: Vec<LinkedNote> = Vec::new();
            for link in links {
                let target = link.path.strip_suffix(".md").unwrap_or(&link.path);
                let title = target.rsplit('/').next().unwrap_or(target);
                let note = !link.embed && !title.is_empty() && !title.contains('.');
                if note && !notes.iter().any(|n| n.target.eq_ignore_ascii_case(target)) {
                    notes.push(LinkedNote {
                        target: target.to_string(),
                        title: title.to_string(),
                        from: source.number,
                    });
                }
            }
            if !notes.is_empty() {
                notes.truncate(LINKED_NOTES);
                return notes;
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(title: &str, passage: &str) -> Source {
        Source {
            number: 0,
            uri: format!("note://{title}.md"),
            title: title.to_string(),
            heading_path: Vec::new(),
            link: String::new(),
            text: markup::plain(passage),
            passage: passage.to_string(),
        }
    }

    #[test]
    fn the_notes_linked_from_the_line_the_question_describes_are_followed() {
        let day = source(
            "2022-08-11",
            "- Something I want to do soon [[Plans]]\n\
             I talked to (person:: [[Elias]]) and [[Noor]] on the train station, ![[station.jpg]]\n\
             [[map.pdf]] from the [[train station]]",
        );
        let query = "When's the birthday of the person I talked to at the train station?";
        // The first line bearing on the question that links notes: not the line before,
        // which shares no word with it, nor the line after; no embed, no file.
        let targets = |sources: &[Source]| -> Vec<String> {
            linked_notes(query, "person", sources)
                .into_iter()
                .map(|note| note.target)
                .collect()
        };
        assert_eq!(targets(std::slice::from_ref(&day)), ["Elias", "Noor"]);
        // A note among the sources already is read again, whole from the top.
        let elias = source("Elias", "Met him at the station.");
        assert_eq!(targets(&[day.clone(), elias]), ["Elias", "Noor"]);
        // A link into a folder names the note by its last part.
        let folder = source(
            "2022-08-12",
            "Talked to [[People/Sofie Jansen]] at the station",
        );
        assert_eq!(
            linked_notes(query, "person", &[folder]),
            [LinkedNote {
                target: "People/Sofie Jansen".into(),
                title: "Sofie Jansen".into(),
                from: 0,
            }]
        );
        // The word pointing at someone describes nothing.
        let other = source("2022-01-10", "Lunch with (person:: [[Alice]])");
        assert!(linked_notes(query, "person", &[other]).is_empty());
        // A line the model was not shown leads nowhere.
        let mut cut = day;
        cut.text = "- Something I want to do soon Plans".into();
        assert!(linked_notes(query, "person", &[cut]).is_empty());
    }

    #[test]
    fn someone_pointed_at_by_what_they_did_is_found() {
        for (question, who) in [
            (
                "When's the birthday of the person I talked to at the train station?",
                "person",
            ),
            (
                "What's the email of the friend whose birthday drinks I went to on 29 March?",
                "friend",
            ),
            (
                "What's the cat called of the neighbour who borrowed my ladder?",
                "neighbour",
            ),
            ("Where does the person I spent Easter with work?", "person"),
        ] {
            assert_eq!(
                someone_pointed_at(question).as_deref(),
                Some(who),
                "{question}"
            );
        }
        // A thing the question describes, or someone it names, is nobody pointed at.
        for question in [
            "How do I make pasted images get saved next to the note I'm writing in?",
            "How do I bring back a synced note I deleted?",
            "When is Elias's birthday?",
            "Who did I bump into at the gym?",
        ] {
            assert_eq!(someone_pointed_at(question), None, "{question}");
        }
    }
}
