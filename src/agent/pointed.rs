//! Who a question points at without naming them, by what they did ("the person I talked to
//! at the train station", "the friend whose birthday drinks I went to"): the notes the line
//! it describes links to are read after the opening search, and the answer step is told who
//! is meant. Stop 56 followed links for every question: it gained no answer and cost ~120
//! prompt tokens a question; read only for such questions, the frozen personal set's link
//! questions came out right 4 → 7 of 8 (docs/benches.md).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use obsidian_kb::api;
use obsidian_kb::links::{self, LinkKind};
use obsidian_kb::search::Tokenizer;
use regex::Regex;

use super::{Agent, AgentError, Gathered};
use crate::engine::ChatModel;
use crate::prompt::Message;
use crate::sources::Source;
use crate::tool::{ToolCall, ToolHost, ToolSpec};
use crate::vault::{self, VaultClient, VaultTools};
use crate::{facts, markup};

/// Notes the opening follows links to, for a question pointing at someone it does not name
/// ([`someone_pointed_at`]), and how much of each it reads: a person's note opens with what a
/// question about them asks (a birthday, an email, an employer in its properties and first
/// lines). A question after the birthday of someone met at the train station on 11 August
/// 2022 is answered by the day's line "I talked to [[Elias]]" and Elias's note, which
/// shares no word with the question.
const LINKED_NOTES: usize = 2;
const LINKED_CHARS: usize = 300;

/// Hits of the search for a name written without a link, among which its note is looked for,
/// and how many such names a question may search for (a search takes milliseconds).
const NAME_HITS: usize = 5;
const NAME_SEARCHES: usize = 4;

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
        let client = VaultClient::new(self.runtime, self.host);
        let mut outgoing: HashMap<String, Vec<api::OutgoingLink>> = HashMap::new();
        let mut searches = NAME_SEARCHES;
        let mut find = |mention: Mention| {
            let client = client.as_ref()?;
            match mention {
                // A link leads where the vault server resolves it; an unresolved one nowhere.
                // (A server that cannot tell leaves it as written.)
                Mention::Link { from, target } => {
                    let links = match outgoing.entry(from.to_string()) {
                        Entry::Occupied(known) => known.into_mut(),
                        Entry::Vacant(new) => {
                            let params = api::LinksParams {
                                uri: from.to_string(),
                            };
                            let out: Result<api::LinksOutput, _> =
                                client.call(api::GET_LINKS, &params);
                            new.insert(out.map(|out| out.outgoing).unwrap_or_default())
                        }
                    };
                    resolved_link(target, links)
                }
                // A name written without a link ("I met Sophie at the trainstation") is the
                // note a search for it finds whose title is it or begins with it, when one
                // alone does (`Sophie B`).
                Mention::Name(name) => {
                    searches = searches.checked_sub(1)?;
                    let search = api::SearchParams {
                        query: name.to_string(),
                        limit: Some(NAME_HITS),
                        ..api::SearchParams::default()
                    };
                    let found: api::SearchOutput = client.call(api::SEARCH_NOTES, &search).ok()?;
                    let hits = found.hits.iter();
                    only_note_named(name, hits.map(|hit| (hit.uri.as_str(), hit.title.as_str())))
                }
            }
        };
        let linked = linked_notes(query, &pointed, gathered.sources.list(), &mut find);
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
    /// What `read_note` is given: the note's path where the vault resolved the link or found
    /// the name (`People/Elias`), else the link's target as written, less `.md`.
    target: String,
    /// The note's title: the target's last part (`Elias`).
    title: String,
    /// The number of the source whose line leads to it (the day's note the question
    /// describes).
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

/// What a line may lead to a note by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mention<'a> {
    /// A `[[link]]`: its target as written (less `.md`), in the note of URI `from`.
    Link { from: &'a str, target: &'a str },
    /// A name written without a link.
    Name(&'a str),
}

/// The notes linked from the first line of `sources` that the model reads, shares a search
/// term with `query` other than the word pointing at someone (`pointed`: "person" is a
/// property's name too, `person:: [[Alice]]`) and its numbers (the day was searched for),
/// and leads to notes: the line the question describes ("I talked to [[Elias]] on the train
/// station"). `find` tells the note a mention leads to, if any: a link the vault resolves,
/// or a name the line writes without a link and the question does not give ("I met Sophie
/// at the trainstation"). At most [`LINKED_NOTES`], links first. Embeds and links to files
/// other than notes are no person or project.
fn linked_notes(
    query: &str,
    pointed: &str,
    sources: &[Source],
    find: &mut dyn FnMut(Mention) -> Option<LinkedNote>,
) -> Vec<LinkedNote> {
    let mut tokenizer = Tokenizer::default();
    let mut asked: HashSet<String> = tokenizer.query_terms(query).into_iter().collect();
    for term in tokenizer.query_terms(pointed) {
        asked.remove(&term);
    }
    asked.retain(|term| !term.chars().all(|c| c.is_ascii_digit()));
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
            let (mut links, mut spans) = (Vec::new(), Vec::new());
            links::scan_wikilinks(line, LinkKind::Wiki, &mut links, &mut spans);
            let mut notes: Vec<LinkedNote> = Vec::new();
            let mut add = |note: Option<LinkedNote>| {
                let Some(note) = note else { return };
                if !notes
                    .iter()
                    .any(|n| n.target.eq_ignore_ascii_case(&note.target))
                {
                    notes.push(LinkedNote {
                        from: source.number,
                        ..note
                    });
                }
            };
            for link in &links {
                let target = link.path.strip_suffix(".md").unwrap_or(&link.path);
                let title = target.rsplit('/').next().unwrap_or(target);
                if !link.embed && !title.is_empty() && !title.contains('.') {
                    add(find(Mention::Link {
                        from: &source.uri,
                        target,
                    }));
                }
            }
            let mut unlinked = line.to_string();
            for span in spans.iter().rev() {
                unlinked.replace_range(span.clone(), " ");
            }
            let unlinked = markup::plain(&unlinked);
            // A line's first word may be a name too ("Sophie was shopping").
            let names = facts::names(&unlinked, false)
                .into_iter()
                .map(|name| &unlinked[name])
                .filter(|name| {
                    !query
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|word| word.eq_ignore_ascii_case(name))
                });
            for name in names.take(LINKED_NOTES) {
                add(find(Mention::Name(name)));
            }
            if !notes.is_empty() {
                notes.truncate(LINKED_NOTES);
                return notes;
            }
        }
    }
    Vec::new()
}

/// The note the link to `target` (as written, less `.md`) leads to among a note's `outgoing`
/// links: `None` when it is unresolved or no note; as written when the list lacks it.
fn resolved_link(target: &str, outgoing: &[api::OutgoingLink]) -> Option<LinkedNote> {
    let as_written = |link: &api::OutgoingLink| {
        let written = link.target.split('#').next().unwrap_or("");
        let written = written.strip_suffix(".md").unwrap_or(written);
        written.eq_ignore_ascii_case(target)
    };
    let path = match outgoing.iter().find(|link| as_written(link)) {
        Some(link) => vault::note_path(link.uri.as_deref()?),
        None => target,
    };
    Some(LinkedNote {
        target: path.to_string(),
        title: path.rsplit('/').next().unwrap_or(path).to_string(),
        from: 0,
    })
}

/// The one note among `hits` (URI and title) whose title is `name` or begins with it as a
/// word ("Sophie B" for "Sophie"); `None` when none is, or several are (two Daves).
fn only_note_named<'h>(
    name: &str,
    hits: impl IntoIterator<Item = (&'h str, &'h str)>,
) -> Option<LinkedNote> {
    let name = name.to_lowercase();
    let mut found: Option<LinkedNote> = None;
    for (uri, hit_title) in hits {
        let title = hit_title.to_lowercase();
        let named = title == name
            || title
                .strip_prefix(&name)
                .is_some_and(|rest| rest.starts_with(' '));
        let target = vault::note_path(uri);
        if !named || found.as_ref().is_some_and(|f| f.target == target) {
            continue;
        }
        if found.is_some() {
            return None;
        }
        found = Some(LinkedNote {
            target: target.to_string(),
            title: hit_title.to_string(),
            from: 0,
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every link leads where it is written; no name leads anywhere.
    fn as_written(mention: Mention) -> Option<LinkedNote> {
        match mention {
            Mention::Link { target, .. } => resolved_link(target, &[]),
            Mention::Name(_) => None,
        }
    }

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
             I chatted to (person:: [[Elias]]) and [[Noor]] at the ferry terminal, ![[terminal.jpg]]\n\
             [[map.pdf]] from the [[ferry terminal]]",
        );
        let query = "When's the birthday of the person I chatted to at the ferry terminal?";
        // The first line bearing on the question that links notes: not the line before,
        // which shares no word with it, nor the line after; no embed, no file.
        let targets = |sources: &[Source]| -> Vec<String> {
            linked_notes(query, "person", sources, &mut as_written)
                .into_iter()
                .map(|note| note.target)
                .collect()
        };
        assert_eq!(targets(std::slice::from_ref(&day)), ["Elias", "Noor"]);
        // A note among the sources already is read again, whole from the top.
        let elias = source("Elias", "Met him at the terminal.");
        assert_eq!(targets(&[day.clone(), elias]), ["Elias", "Noor"]);
        // A link into a folder names the note by its last part.
        let folder = source(
            "2022-08-12",
            "Chatted to [[People/Sofie Jansen]] at the terminal",
        );
        assert_eq!(
            linked_notes(query, "person", &[folder], &mut as_written),
            [LinkedNote {
                target: "People/Sofie Jansen".into(),
                title: "Sofie Jansen".into(),
                from: 0,
            }]
        );
        // The word pointing at someone describes nothing.
        let other = source("2022-01-10", "Lunch with (person:: [[Alice]])");
        assert!(linked_notes(query, "person", &[other], &mut as_written).is_empty());
        // A line the model was not shown leads nowhere.
        let mut cut = day.clone();
        cut.text = "- Something I want to do soon Plans".into();
        assert!(linked_notes(query, "person", &[cut], &mut as_written).is_empty());
        // Nor does a link the vault cannot resolve: the next line bearing on the question
        // is read (a year the question names bears on nothing: the day was searched for).
        let outgoing = |target: &str, uri: Option<&str>| api::OutgoingLink {
            target: target.to_string(),
            uri: uri.map(str::to_string),
        };
        let known = [
            outgoing("Alice", Some("note://People/Alice")),
            outgoing("Elias", None),
            outgoing("Noor", Some("note://People/Noor Haddad")),
        ];
        let mut resolve = |mention: Mention| match mention {
            Mention::Link { from, target } => {
                assert_eq!(from, "note://2022-08-11.md");
                resolved_link(target, &known)
            }
            Mention::Name(_) => None,
        };
        let mut day = day;
        day.passage
            .insert_str(0, "2022-01-05: lunch with (person:: [[Alice]])\n");
        day.text = markup::plain(&day.passage);
        let query = "When's the birthday of the person I chatted to at the ferry terminal in 2022?";
        assert_eq!(
            linked_notes(query, "person", &[day], &mut resolve),
            [LinkedNote {
                target: "People/Noor Haddad".into(),
                title: "Noor Haddad".into(),
                from: 0,
            }]
        );
    }

    #[test]
    fn a_name_written_without_a_link_is_the_note_named_so() {
        let hits = [
            ("note://People/Sophie B", "Sophie B"),
            ("note://People/Sophie B", "Sophie B"),
            ("note://Journal/2022-01-10", "2022-01-10"),
            ("note://Sophienholm", "Sophienholm"),
        ];
        let sophie = only_note_named("Sophie", hits);
        assert_eq!(
            sophie.map(|note| note.target).as_deref(),
            Some("People/Sophie B")
        );
        // Two notes so named are no one note; a title merely beginning so is none.
        let daves = [
            ("note://People/Dave Hill", "Dave Hill"),
            ("note://Dave Price", "Dave Price"),
        ];
        assert_eq!(only_note_named("Dave", daves), None);
        assert_eq!(only_note_named("Soph", hits), None);

        let day = source(
            "2022-01-10",
            "- Went to the lecture\nmet:: I ran into Sophie at the ferryterminal with Easter eggs",
        );
        let query = "What's the email of the person I ran into at the ferry terminal on Easter?";
        let mut searched = Vec::new();
        let mut note_named = |mention: Mention| match mention {
            Mention::Name(name) => {
                searched.push(name.to_string());
                only_note_named(name, hits)
            }
            Mention::Link { .. } => None,
        };
        let linked = linked_notes(query, "person", std::slice::from_ref(&day), &mut note_named);
        assert_eq!(
            linked,
            [LinkedNote {
                target: "People/Sophie B".into(),
                title: "Sophie B".into(),
                from: 0,
            }]
        );
        // The name the question gives is no one it points at; the line sharing no word with
        // it is not read for names.
        assert_eq!(searched, ["Sophie"]);
    }

    #[test]
    fn someone_pointed_at_by_what_they_did_is_found() {
        for (question, who) in [
            (
                "When's the birthday of the person I chatted to at the ferry terminal?",
                "person",
            ),
            (
                "What's the email of the friend whose leaving party I went to on 12 May?",
                "friend",
            ),
            (
                "What's the dog called of the neighbour who lent me a drill?",
                "neighbour",
            ),
            ("Where does the person I went skiing with work?", "person"),
        ] {
            assert_eq!(
                someone_pointed_at(question).as_deref(),
                Some(who),
                "{question}"
            );
        }
        // A thing the question describes, or someone it names, is nobody pointed at.
        for question in [
            "How do I get dropped files stored beside the note I'm editing?",
            "How do I recover a synced file I removed?",
            "When is Elias's birthday?",
            "Who did I bump into at the gym?",
        ] {
            assert_eq!(someone_pointed_at(question), None, "{question}");
        }
    }
}
