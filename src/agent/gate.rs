//! What of an answer reaches the user while it streams, and when: [`FactGate`] holds back each
//! clause stating a fact until it is checked against what the model was given, [`Restating`]
//! an answer while it only says the question again, [`HoldBack`] an answer that may still be
//! only "the notes do not say" (so the turn can look further before anyone reads it). The
//! answer step streams through all three. Pure: text in, text out.

use std::ops::ControlFlow;

use super::own_words::OwnWords;
use crate::facts::{self, KnownFacts};
use crate::language::{NOTES_LACK_IT, says_notes_lack_it};
use crate::support::Adds;

/// Streams an answer but holds back each clause that states a fact (a number, a key
/// combination: [`crate::facts`]) until the clause is whole and its facts are found in what the
/// model was given. A clause stating a fact found nowhere is never shown: the gate closes and
/// stops the generation, and the agent says the notes do not say. Text before a fact streams
/// at once, so the first words come as fast as without the gate.
pub(super) struct FactGate<'k> {
    known: &'k KnownFacts,
    held: String,
    /// Whether what is held opens a sentence (its first word is then no name).
    opens_sentence: bool,
    made_up: Vec<String>,
}

impl<'k> FactGate<'k> {
    pub(super) fn new(known: &'k KnownFacts) -> FactGate<'k> {
        FactGate {
            known,
            held: String::new(),
            opens_sentence: true,
            made_up: Vec::new(),
        }
    }

    /// Passes `text` on as far as it is checked; breaks once a made-up fact closed the gate.
    pub(super) fn pass(
        &mut self,
        text: &str,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if !self.made_up.is_empty() {
            return ControlFlow::Break(());
        }
        self.held.push_str(text);
        self.flush(false, on_text)
    }

    /// At the answer's end: checks and shows what is still held; returns the made-up facts
    /// (empty when every fact stood in a source).
    pub(super) fn finish(
        &mut self,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Vec<String> {
        if self.made_up.is_empty() {
            let _ = self.flush(true, on_text);
        }
        std::mem::take(&mut self.made_up)
    }

    fn flush(
        &mut self,
        at_end: bool,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        loop {
            let Some(fact) = facts::first_fact(&self.held, self.opens_sentence) else {
                // No fact yet: all of it goes, but for an end that may be one being written.
                let keep = match facts::unfinished_fact(&self.held) {
                    Some(from) if !at_end => self.held.len() - from,
                    _ => 0,
                };
                let ready = self.held.len() - keep;
                return self.show(ready, on_text);
            };
            // The word the fact stands in is held whole (`$75,000`, `(Ctrl+O`).
            // (After the whitespace itself, which may be wider than a byte: `　`, U+3000.)
            let start = self.held[..fact]
                .char_indices()
                .rfind(|(_, c)| c.is_whitespace())
                .map_or(0, |(at, c)| at + c.len_utf8());
            if self.show(start, on_text).is_break() {
                return ControlFlow::Break(());
            }
            let end = match facts::clause_end(&self.held) {
                Some(end) => end,
                None if at_end => self.held.len(),
                None => return ControlFlow::Continue(()),
            };
            let made_up = self
                .known
                .unsupported(&self.held[..end], self.opens_sentence);
            if !made_up.is_empty() {
                self.made_up = made_up;
                self.held.clear();
                return ControlFlow::Break(());
            }
            if self.show(end, on_text).is_break() {
                return ControlFlow::Break(());
            }
            if self.held.is_empty() {
                return ControlFlow::Continue(());
            }
        }
    }

    /// Shows the first `len` bytes held.
    fn show(
        &mut self,
        len: usize,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if len == 0 {
            return ControlFlow::Continue(());
        }
        let shown: String = self.held.drain(..len).collect();
        if let Some(ends) = facts::ends_sentence(&shown) {
            self.opens_sentence = ends;
        }
        on_text(&shown)
    }
}

/// Holds an answer back from the user while it may still be only "The notes do not say.", so
/// that such an answer can be replaced by a second look before anyone reads it. Any other
/// answer is released as soon as it parts from those words.
#[derive(Default)]
pub(super) struct HoldBack {
    held: String,
    released: bool,
}

impl HoldBack {
    /// Passes `text` on to `on_text`, or holds it.
    pub(super) fn pass(
        &mut self,
        text: &str,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.released {
            return on_text(text);
        }
        self.held.push_str(text);
        if may_be_notes_lack_it(&self.held) {
            return ControlFlow::Continue(());
        }
        self.release(on_text)
    }

    /// True while text is held back.
    pub(super) fn holding(&self) -> bool {
        !self.released && !self.held.is_empty()
    }

    /// Shows what is held and passes everything after it on.
    pub(super) fn release(
        &mut self,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        self.released = true;
        if self.held.is_empty() {
            return ControlFlow::Continue(());
        }
        on_text(&std::mem::take(&mut self.held))
    }
}

/// Holds an answer back while all it says is the question again, citation marks, copied
/// source headers and a sentence saying the sources lack it aside ([`OwnWords`]): "Jonathan's
/// email address is [1].", "The price is not mentioned in the given sources." A small model writes that when the sources lack what was asked
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

/// True while `text` (an answer's start) is, or may still become, an answer that only says
/// the notes do not say.
fn may_be_notes_lack_it(text: &str) -> bool {
    let start = text.trim_start().to_lowercase().replace('\u{2019}', "'");
    NOTES_LACK_IT.iter().any(|phrase| {
        phrase.starts_with(&start) || (start.starts_with(phrase) && says_notes_lack_it(text))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::Source;

    /// Streams `tokens` through a [`FactGate`] over `known`; returns what was shown after each
    /// token, and the made-up facts at the end.
    fn gate(known: &[&str], tokens: &[&str]) -> (Vec<String>, Vec<String>) {
        let known = KnownFacts::new(known.iter().copied());
        let mut gate = FactGate::new(&known);
        let mut shown = String::new();
        let mut after_each = Vec::new();
        for token in tokens {
            let _ = gate.pass(token, &mut |t| {
                shown.push_str(t);
                ControlFlow::Continue(())
            });
            after_each.push(shown.clone());
        }
        let made_up = gate.finish(&mut |t| {
            shown.push_str(t);
            ControlFlow::Continue(())
        });
        after_each.push(shown);
        (after_each, made_up)
    }

    /// Streams `tokens` through a [`Restating`] hold for `question`; returns what was shown
    /// and whether all of it was held.
    fn restate(question: &str, tokens: &[&str]) -> (String, bool) {
        let asked = format!("Answer from the numbered sources: {question}");
        let jonathan = [Source {
            number: 1,
            uri: "note://People/Jonathan".to_string(),
            title: "Jonathan".to_string(),
            heading_path: Vec::new(),
            link: String::new(),
            text: "email: jon@example.org".to_string(),
            passage: String::new(),
        }];
        let own = OwnWords::new(question, &asked, &jonathan);
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
        let question = "What's Jonathan's email address?";
        let (shown, held) = restate(question, &["Jonathan's", " email address", " is [1]."]);
        assert_eq!((shown.as_str(), held), ("", true));
        // Tokens are pieces of words: "Jon" is no word of its own.
        let (shown, held) = restate(question, &["Jon", "athan", "'s", " em", "ail", " address"]);
        assert_eq!((shown.as_str(), held), ("", true));
        let (shown, held) = restate(
            question,
            &["Jonathan's", " email address is", " jon@example.org [1]."],
        );
        assert_eq!(
            (shown.as_str(), held),
            ("Jonathan's email address is jon@example.org [1].", false)
        );
        // Somebody else's address is held to its end, however it is cut into tokens.
        let (shown, held) = restate(
            question,
            &[
                "Jonathan's",
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
        let question = "Is Jonathan a friend?";
        let (shown, held) = restate(question, &["No", ", Jonathan"]);
        assert_eq!((shown.as_str(), held), ("", true));
        let tokens = [
            "No",
            ", Jonathan",
            " is a colleague",
            " on the design team [1].",
        ];
        let (shown, held) = restate(question, &tokens);
        assert_eq!(
            (shown.as_str(), held),
            ("No, Jonathan is a colleague on the design team [1].", false)
        );
        // Saying the sources lack it, in words of its own, is no answer: held to the end.
        let question = "What's the price of Publish in euros for students?";
        let tokens = [
            "The price of Publish",
            " in euros for students is",
            " not",
            " mentioned in",
            " the given sources.",
        ];
        let (shown, held) = restate(question, &tokens);
        assert_eq!((shown.as_str(), held), ("", true));
        // Without sources there is nothing to hold for.
        let mut hold = Restating::new(None);
        let mut shown = String::new();
        let _ = hold.pass("Jonathan's email", &mut |t| {
            shown.push_str(t);
            ControlFlow::Continue(())
        });
        assert_eq!(
            (shown.as_str(), hold.held_all()),
            ("Jonathan's email", false)
        );
    }

    #[test]
    fn words_before_a_fact_stream_at_once_and_a_checked_clause_follows_whole() {
        let source = "The pump delivers 1,200 litres per hour.";
        let (shown, made_up) = gate(
            &[source],
            &[
                "The pump",
                " delivers 1",
                ",2",
                "00 litres",
                ", at",
                " noon [1].",
            ],
        );
        assert!(made_up.is_empty());
        // The last word waits for the next token: it may go on.
        assert_eq!(shown[0], "The ");
        assert_eq!(shown[1], "The pump delivers ");
        assert_eq!(shown[3], "The pump delivers ");
        assert_eq!(shown[4], "The pump delivers 1,200 litres, ");
        assert_eq!(shown[6], "The pump delivers 1,200 litres, at noon [1].");
    }

    #[test]
    fn a_version_streamed_after_its_name_is_checked_with_it() {
        let mut known = KnownFacts::new(["Credits\nLicensed under the Apache License 2.0."]);
        known.know_question("When is Obsidian 2.0 coming out?");
        let mut gate = FactGate::new(&known);
        let mut shown = String::new();
        for token in [
            "Obsidian",
            " ",
            "2",
            ".0",
            " is",
            " not",
            " scheduled",
            " yet.",
        ] {
            let _ = gate.pass(token, &mut |text| {
                shown.push_str(text);
                ControlFlow::Continue(())
            });
        }
        let made_up = gate.finish(&mut |text| {
            shown.push_str(text);
            ControlFlow::Continue(())
        });
        assert_eq!(made_up, ["Obsidian 2.0"]);
        assert_eq!(shown, "");
    }

    #[test]
    fn a_word_cut_between_tokens_is_checked_whole() {
        // "iOS/i" then "PadOS": shown as far as the cut, the tail read as a name of its own
        // that no source gives.
        let (shown, made_up) = gate(
            &["在 iOS 或 iPadOS 上打开。"],
            &["在 iOS/i", "PadOS 上打开。"],
        );
        assert!(made_up.is_empty(), "{made_up:?}");
        assert_eq!(shown[0], "在 iOS/");
        assert_eq!(shown.last().unwrap(), "在 iOS/iPadOS 上打开。");
    }

    #[test]
    fn a_wide_space_before_a_fact_is_shown_whole() {
        // An ideographic space (three bytes) before a figure: the text up to the figure is
        // shown, cut at a character's edge.
        let (shown, made_up) = gate(&["快照保留 30 天。"], &["快照保留\u{3000}30", " 天。"]);
        assert!(made_up.is_empty());
        assert_eq!(shown[0], "快照保留\u{3000}");
        assert_eq!(shown.last().unwrap(), "快照保留\u{3000}30 天。");
    }

    #[test]
    fn a_clause_with_a_made_up_fact_is_never_shown() {
        let (shown, made_up) = gate(
            &["The job ad names no salary."],
            &[
                "The range",
                " was $75",
                ",000 a year",
                ". Apply",
                " by May.",
            ],
        );
        assert_eq!(made_up, ["75,000"]);
        assert_eq!(shown.last().unwrap(), "The range was ");
        let (shown, made_up) = gate(
            &["Export with the menu."],
            &["Press Ct", "rl+Shift", "+O [1]."],
        );
        assert_eq!(
            shown[0], "Press ",
            "a last word that may begin a fact waits"
        );
        assert_eq!(made_up, ["Ctrl+Shift+O"]);
        assert_eq!(shown.last().unwrap(), "Press ");
        // A combination comes a token at a time, spaced or not (Qwen2.5-1.5B: "`Cmd + T`",
        // "`Ctrl+Shift+D`", keys no source holds): none of it is shown before it is whole.
        for tokens in [
            &["It is `", "Cmd", " +", " T", "`.", " [1]"][..],
            &["It is `", "Ctrl", "+", "Shift", "+D", "` (Windows)."],
        ] {
            let known = ["Hotkeys are yours to set on Windows (like `Ctrl+C`)."];
            let (shown, made_up) = gate(&known, tokens);
            assert_eq!(made_up.len(), 1, "{tokens:?}");
            assert_eq!(shown.last().unwrap(), "It is ", "{tokens:?}");
        }
    }

    #[test]
    fn a_made_up_name_is_never_shown() {
        let known = ["Teams › Commercial license: a license is charged per seat."];
        let tokens = [
            "It is",
            " headquartered in",
            " San",
            " Francisco",
            ", California",
            ". [1]",
        ];
        let (shown, made_up) = gate(&known, &tokens);
        assert_eq!(made_up, ["San", "Francisco"]);
        assert_eq!(shown.last().unwrap(), "It is headquartered in ");
        // A sentence's first word is no name; one shown after it opens no sentence.
        let tokens = ["Licenses are", " per seat", ". Teams", " buy them [1]."];
        let (shown, made_up) = gate(&known, &tokens);
        assert!(made_up.is_empty());
        assert_eq!(
            shown.last().unwrap(),
            "Licenses are per seat. Teams buy them [1]."
        );
        // Nor is the first after a citation mark that numbers a step.
        let tokens = [
            "Steps:\n[1] Open",
            " the license.\n",
            "[2",
            "]",
            " Check",
            " a seat.",
        ];
        let (_, made_up) = gate(&known, &tokens);
        assert!(made_up.is_empty(), "{made_up:?}");
    }

    /// Streams `tokens` through a [`HoldBack`]; returns what was shown before the end, and
    /// whether it still held text at the end.
    fn hold(tokens: &[&str]) -> (String, bool) {
        let mut shown = String::new();
        let mut hold = HoldBack::default();
        for token in tokens {
            let _ = hold.pass(token, &mut |t| {
                shown.push_str(t);
                ControlFlow::Continue(())
            });
        }
        (shown, hold.holding())
    }

    #[test]
    fn only_the_notes_not_saying_is_held_back_from_the_user() {
        assert_eq!(
            hold(&["The", " notes", " don\u{2019}t", " say", "."]),
            (String::new(), true)
        );
        assert_eq!(
            hold(&["\n", "The notes do not say who"]),
            (String::new(), true)
        );
        // Any other answer shows as soon as it parts from those words.
        assert_eq!(
            hold(&["The", " notes", " say", " B204"]),
            ("The notes say B204".to_string(), false)
        );
        assert_eq!(
            hold(&["The notes do not say.", " But [1]", " names B204."]),
            (
                "The notes do not say. But [1] names B204.".to_string(),
                false
            )
        );
        assert_eq!(hold(&["Room", " B204"]), ("Room B204".to_string(), false));
    }

    #[test]
    fn a_chinese_answer_is_held_only_while_it_may_say_the_notes_lack_it() {
        assert_eq!(hold(&["笔记", "中没有说明。"]), (String::new(), true));
        assert_eq!(
            hold(&["快照", "保留七天"]),
            ("快照保留七天".to_string(), false)
        );
    }
}
