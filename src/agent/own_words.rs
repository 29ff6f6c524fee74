//! What an answer adds to the question in words of its own ([`OwnWords`]): less what it
//! copied from the sources and the rest of a name the question gives in part; nothing when
//! it lacks the kind of fact the question asks for by name. An answer that adds nothing is no
//! answer: the turn takes it for the notes not saying, and [`Restating`] holds a streamed
//! answer back while it adds nothing yet. Pure.

use std::collections::HashSet;
use std::ops::ControlFlow;

use obsidian_kb::search::Tokenizer;

use super::asks::Wanted;
use super::subject::{Subject, about_subject, addresses_stand_in};
use crate::sources::{Source, without_copied_headers};
use crate::support::{self, Adds};

/// What `answer` adds to `question` ([`OwnWords::adds`]), `asked` the instruction it stands
/// in: for an answer judged once.
pub(super) fn adds_own(
    question: &str,
    wanted: Option<Wanted>,
    asked: &str,
    answer: &str,
    sources: &[Source],
) -> Adds {
    OwnWords::new(question, wanted, asked, sources).adds(answer)
}

/// What an answer must add to a question to be one, read from the question, the instruction
/// it stands in and the sources once, for each piece of a streamed answer to be judged by.
pub(super) struct OwnWords<'a> {
    question: &'a str,
    /// The instruction, and the titles of sources the question names in part.
    asked: String,
    sources: &'a [Source],
    wanted: Option<Wanted>,
    /// For a question asking an email address: what the sources say of the one asked about
    /// ([`about_subject`]), where the address must stand.
    addresses: Option<String>,
}

impl<'a> OwnWords<'a> {
    /// What an answer to `question` must add, asked in the instruction `asked`, when the
    /// question asks for the kind of fact `wanted` by name.
    pub(super) fn new(
        question: &'a str,
        wanted: Option<Wanted>,
        asked: &str,
        sources: &'a [Source],
    ) -> OwnWords<'a> {
        let subjects = subject_titles(question, sources);
        OwnWords {
            question,
            asked: if subjects.is_empty() {
                asked.to_string()
            } else {
                format!("{asked}\n{subjects}")
            },
            sources,
            wanted,
            // Of the names the vault knows (`Asked::named`), none yet: an address asked of
            // someone named in Chinese is read in all the sources.
            addresses: (wanted == Some(Wanted::Email))
                .then(|| about_subject(Subject::of(question, sources, &[]).as_ref(), sources)),
        }
    }

    /// What `answer` adds in words of its own: less the source headers it copied and the rest
    /// of a name the question gives in part that is a source's title ("Kenji" asked: "The
    /// phone number of Kenji Watanabe is [1]." adds nothing). An answer without the kind of
    /// fact the question asks for by name ([`Wanted`]) adds nothing either: "Marco's email is
    /// +31 6 2290 1184." is no email address; nor does one whose email address the sources
    /// give somebody else, or none of them gives ([`addresses_stand_in`]).
    pub(super) fn adds(&self, answer: &str) -> Adds {
        let own = without_copied_headers(answer, self.sources);
        if self.wanted.is_some_and(|wanted| !wanted.held_in(&own)) {
            return Adds::Nothing;
        }
        if let Some(about) = &self.addresses {
            // The address asked for is the answer, though its words may be the name asked
            // about ("marco@bellini.it" for Marco Bellini); somebody else's, or nobody's, is
            // none.
            return if addresses_stand_in(&own, about) {
                Adds::Something
            } else {
                Adds::Nothing
            };
        }
        support::adds(self.question, &self.asked, &own)
    }
}

/// The titles of `sources` that share a search term with `question`, one a line.
fn subject_titles(question: &str, sources: &[Source]) -> String {
    let mut tokenizer = Tokenizer::default();
    let asked: HashSet<String> = tokenizer.query_terms(question).into_iter().collect();
    let mut titles: Vec<&str> = Vec::new();
    for source in sources {
        let named = tokenizer
            .query_terms(&source.title)
            .iter()
            .any(|term| asked.contains(term));
        if named && !titles.contains(&source.title.as_str()) {
            titles.push(&source.title);
        }
    }
    titles.join("\n")
}

/// Holds an answer back while all it says is the question again, citation marks and copied
/// source headers aside ([`OwnWords`]): "Jonathan's email address is [1]." A small model
/// writes that when the sources lack what was asked
/// (Qwen2.5-1.5B: three of the personal vault's thirteen questions it cannot answer), and it is
/// then no answer: the turn takes it for the notes not saying. A bare yes or no is held too,
/// for its next words may be the sources' lack. Released at the answer's third word of its
/// own ([`crate::support::adds`]'s claim), which in an answer is usually among its first few.
pub(super) struct Restating<'o, 'a> {
    /// What the answer must add to the question; `None` (no sources, or released): nothing
    /// is held.
    own: Option<&'o OwnWords<'a>>,
    held: String,
}

impl<'o, 'a> Restating<'o, 'a> {
    /// `own`: what the answer must add, read once for the whole answer (its end is judged
    /// by the same); `None` (no sources): nothing is held.
    pub(super) fn new(own: Option<&'o OwnWords<'a>>) -> Self {
        Restating {
            own,
            held: String::new(),
        }
    }

    /// Passes `text` on to `on_text`, or holds it while the answer so far adds nothing.
    pub(super) fn pass(
        &mut self,
        text: &str,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let Some(own) = self.own else {
            return on_text(text);
        };
        self.held.push_str(text);
        // A word still being written is not judged: "Mark" may become "Markus". (A Chinese,
        // Japanese or Korean character is whole.)
        let judged = self
            .held
            .trim_end_matches(|c: char| is_spaced_letter(c) || matches!(c, '\'' | '\u{2019}'));
        // A bare yes or no is held too: "… is not" may go on "mentioned in the sources".
        if judged.trim().is_empty() || own.adds(judged) != Adds::Something {
            return ControlFlow::Continue(());
        }
        self.own = None;
        on_text(&std::mem::take(&mut self.held))
    }

    /// Shows what is held: at the answer's end, when it is not taken for the notes not saying.
    pub(super) fn release(&mut self, on_text: &mut dyn FnMut(&str) -> ControlFlow<()>) {
        self.own = None;
        if !self.held.is_empty() {
            let _ = on_text(&std::mem::take(&mut self.held));
        }
    }

    /// True when the whole answer was held: it never said a word of its own.
    pub(super) fn held_all(&self) -> bool {
        self.own.is_some() && !self.held.trim().is_empty()
    }
}

/// A letter or digit of a script that spaces its words (those below the CJK blocks).
fn is_spaced_letter(c: char) -> bool {
    c.is_alphanumeric() && (c as u32) < 0x2E80
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `answer` adds, the kind of fact wanted read from the question's words.
    fn adds_read(question: &str, asked: &str, answer: &str, sources: &[Source]) -> Adds {
        adds_own(
            question,
            Wanted::in_question(question),
            asked,
            answer,
            sources,
        )
    }

    #[test]
    fn the_rest_of_a_name_the_question_gives_in_part_is_no_word_of_the_answer_s_own() {
        let source = |title: &str| Source {
            number: 1,
            uri: format!("note://People/{title}"),
            title: title.to_string(),
            heading_path: Vec::new(),
            link: String::new(),
            text: "email: ravi@brightloop.dev\nphone:".to_string(),
            passage: String::new(),
        };
        let sources = [source("Ravi Mehta"), source("Anna Berg")];
        let question = "Ravi's phone number?";
        let asked = format!("Answer from the numbered sources: {question}");
        let adds = |answer: &str| adds_read(question, &asked, answer, &sources);
        assert_eq!(
            adds("The phone number of Ravi Mehta is [1]."),
            Adds::Nothing
        );
        assert_eq!(
            adds("Ravi Mehta's phone number is not mentioned."),
            Adds::Nothing
        );
        // An answer without the kind of fact asked for by name is none.
        assert_eq!(
            adds("Ravi's phone number is ravi@brightloop.dev [1]."),
            Adds::Nothing
        );
        let question = "What's Paolo's email?";
        let paolo = |answer: &str| adds_read(question, &asked, answer, &sources);
        assert_eq!(
            paolo("Paolo's email is +31 6 2290 1184. [1]"),
            Adds::Nothing
        );
        // An address no source gives Paolo is none of his: from nowhere, or somebody else's.
        assert_eq!(paolo("Paolo's email is paolo@ferri.it [1]."), Adds::Nothing);
        assert_eq!(
            paolo("Paolo's email is ravi@brightloop.dev [1]."),
            Adds::Nothing
        );
        let with_paolo = [Source {
            number: 2,
            uri: "note://People/Paolo Ferri".to_string(),
            title: "Paolo Ferri".to_string(),
            text: "email: paolo@ferri.it".to_string(),
            ..sources[0].clone()
        }];
        assert_eq!(
            adds_read(question, &asked, "It is paolo@ferri.it [2].", &with_paolo),
            Adds::Something
        );
        // Asked about nobody by name ("her"), an address must still stand in some source.
        let hers = |answer: &str| adds_read("What's her email?", &asked, answer, &with_paolo);
        assert_eq!(hers("Her email is paolo@ferri.it [2]."), Adds::Something);
        assert_eq!(hers("Her email is bettyt@example.com [2]."), Adds::Nothing);
        // Asked for no address, none is wanted.
        let lena = [Source {
            text: "3 May: emailed Lena about the booking form".to_string(),
            ..sources[0].clone()
        }];
        let emailed = |answer: &str| adds_read("Did I email Lena in May?", &asked, answer, &lena);
        assert_eq!(
            emailed("Yes, on 3 May about the booking form [1]."),
            Adds::Something
        );
        // Asked how many or how much, an answer without a count or an amount is none.
        let count = |answer: &str| {
            adds_read(
                "How many supporter licenses were sold?",
                &asked,
                answer,
                &sources,
            )
        };
        assert_eq!(
            count("The Catalyst license is a one-time purchase that supports development [1]."),
            Adds::Nothing
        );
        for answer in [
            "About 12,000 supporter licenses were sold [1].",
            "Twenty supporter licenses were sold [1].",
            "Supporter licenses come free with Sync [1].",
        ] {
            assert_eq!(count(answer), Adds::Something, "{answer}");
        }
        // A title the question does not name is words of the answer's own.
        let who = |answer: &str| adds_read("Who is Ravi?", &asked, answer, &sources);
        assert_eq!(who("Ravi Mehta [1]."), Adds::Nothing);
        assert_eq!(who("Anna Berg's mentor [2]."), Adds::Something);
        assert_eq!(
            adds("Ravi Mehta's phone number is 06 1234 5678 [1]."),
            Adds::Something
        );
    }

    #[test]
    fn a_bare_no_is_a_verdict_and_a_yes_with_words_of_its_own_stands() {
        let source = Source {
            number: 1,
            uri: "note://Import notes/Import from Evernote".to_string(),
            title: "Import from Evernote".to_string(),
            heading_path: vec!["Export your data from Evernote".to_string()],
            link: String::new(),
            text: "Go to the Notebooks screen and choose Export Notebook, as ENEX.".to_string(),
            passage: String::new(),
        };
        let sources = [source];
        let asked = |question: &str| format!("Answer from the numbered sources: {question}");
        let adds =
            |question: &str, answer: &str| adds_read(question, &asked(question), answer, &sources);
        // Asked whether, a bare no is a verdict.
        let did = "Did I rate Import from Evernote?";
        assert_eq!(adds(did, "No, I did not rate it [1]."), Adds::VerdictOnly);
        let pc = "Is Evernote's ENEX a good way to move notebooks to my PC?";
        assert_eq!(
            adds(
                pc,
                "Yes, choose Export Notebook on the Notebooks screen, as ENEX [1]."
            ),
            Adds::Something
        );
        let enex = "Can I export my notebooks from Evernote as ENEX files?";
        assert_eq!(
            adds(
                enex,
                "Yes, choose Export Notebook on the Notebooks screen [1]."
            ),
            Adds::Something
        );
    }

    /// Streams `tokens` through a [`Restating`] hold for `question`; returns what was shown
    /// and whether all of it was held.
    fn restate(question: &str, tokens: &[&str]) -> (String, bool) {
        let asked = format!("Answer from the numbered sources: {question}");
        let sebastian = [Source {
            number: 1,
            uri: "note://People/Sebastian".to_string(),
            title: "Sebastian".to_string(),
            heading_path: Vec::new(),
            link: String::new(),
            text: "email: seb@example.org".to_string(),
            passage: String::new(),
        }];
        let own = OwnWords::new(question, Wanted::in_question(question), &asked, &sebastian);
        let mut hold = Restating::new(Some(&own));
        let mut shown = String::new();
        for token in tokens {
            let _ = hold.pass(token, &mut |t| {
                shown.push_str(t);
                ControlFlow::Continue(())
            });
        }
        (shown, hold.held_all())
    }

    #[test]
    fn an_answer_is_held_only_while_it_says_the_question_again() {
        let question = "What's Sebastian's email address?";
        let (shown, held) = restate(question, &["Sebastian's", " email address", " is [1]."]);
        assert_eq!((shown.as_str(), held), ("", true));
        // Tokens are pieces of words: "Seb" is no word of its own.
        let (shown, held) = restate(question, &["Seb", "astian", "'s", " em", "ail", " address"]);
        assert_eq!((shown.as_str(), held), ("", true));
        let (shown, held) = restate(
            question,
            &["Sebastian's", " email address is", " seb@example.org [1]."],
        );
        assert_eq!(
            (shown.as_str(), held),
            ("Sebastian's email address is seb@example.org [1].", false)
        );
        // Somebody else's address is held to its end, however it is cut into tokens.
        let (shown, held) = restate(
            question,
            &[
                "Sebastian's",
                " email is",
                " lena@",
                "harbor",
                ".",
                "c",
                "om",
                " [1].",
            ],
        );
        assert_eq!((shown.as_str(), held), ("", true));
        // A yes or no is held until words of its own follow it: "not" may go on "mentioned".
        let question = "Is Sebastian a friend?";
        let (shown, held) = restate(question, &["No", ", Sebastian"]);
        assert_eq!((shown.as_str(), held), ("", true));
        let tokens = [
            "No",
            ", Sebastian",
            " is a colleague",
            " on the design team [1].",
        ];
        let (shown, held) = restate(question, &tokens);
        assert_eq!(
            (shown.as_str(), held),
            (
                "No, Sebastian is a colleague on the design team [1].",
                false
            )
        );
        // Without sources there is nothing to hold for.
        let mut hold = Restating::new(None);
        let mut shown = String::new();
        let _ = hold.pass("Sebastian's email", &mut |t| {
            shown.push_str(t);
            ControlFlow::Continue(())
        });
        assert_eq!(
            (shown.as_str(), hold.held_all()),
            ("Sebastian's email", false)
        );
    }
}
