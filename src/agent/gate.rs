//! What of an answer reaches the user while it streams, and when: [`FactGate`] holds back each
//! clause stating a fact until it is checked against what the model was given (and, asked
//! for a figure, until the figure check read it: `super::figure`), [`HoldBack`] an answer
//! that may still be only "the notes do not say" (so the turn can look further before anyone
//! reads it). The answer step streams through both, and through
//! [`super::own_words::Restating`], which holds an answer while it only says the question
//! again. Pure: text in, text out.

use std::ops::ControlFlow;

use crate::facts::{self, KnownFacts};
use crate::language::{NOTES_LACK_IT, says_notes_lack_it};

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
    /// Whether a checked clause stating a fact is withheld, with everything after it, until
    /// the answer is read whole ([`FactGate::release`]): its figure is to be checked against
    /// what the question asks (`super::figure`).
    withhold_facts: bool,
    /// Checked text not shown yet, from the first clause stating a fact.
    withheld: Option<String>,
}

impl<'k> FactGate<'k> {
    /// A gate over what is `known`; `withhold_facts`: see [`FactGate::withheld`].
    pub(super) fn new(known: &'k KnownFacts, withhold_facts: bool) -> FactGate<'k> {
        FactGate {
            known,
            held: String::new(),
            opens_sentence: true,
            made_up: Vec::new(),
            withhold_facts,
            withheld: None,
        }
    }

    /// This gate withholding the whole answer, from its first word, until
    /// [`FactGate::release`]: a name asked for is read against its line once the answer is
    /// whole (`super::figure`), and a name in Chinese script is no fact the gate can see.
    pub(super) fn withholding_all(mut self) -> FactGate<'k> {
        self.withheld = Some(String::new());
        self
    }

    /// The checked text withheld from its first clause stating a fact to the end, when the
    /// gate withholds facts and the answer stated one; `None` otherwise.
    pub(super) fn withheld(&self) -> Option<&str> {
        self.withheld.as_deref()
    }

    /// Shows what was withheld.
    pub(super) fn release(&mut self, on_text: &mut dyn FnMut(&str) -> ControlFlow<()>) {
        if let Some(withheld) = self.withheld.take().filter(|w| !w.is_empty()) {
            let _ = on_text(&withheld);
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
                let mut ready = self.held.len() - keep;
                if self.holds_clauses() && !at_end {
                    ready = ready.min(finished_clauses(&self.held));
                }
                return self.show(ready, on_text);
            };
            // The word the fact stands in is held whole (`$75,000`, `(Ctrl+O`).
            // (After the whitespace itself, which may be wider than a byte: `　`, U+3000.)
            let mut start = self.held[..fact]
                .char_indices()
                .rfind(|(_, c)| c.is_whitespace())
                .map_or(0, |(at, c)| at + c.len_utf8());
            if self.holds_clauses() {
                start = start.min(finished_clauses(&self.held[..fact]));
            }
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
            if self.withhold_facts && self.withheld.is_none() {
                self.withheld = Some(String::new());
            }
            if self.show(end, on_text).is_break() {
                return ControlFlow::Break(());
            }
            if self.held.is_empty() {
                return ControlFlow::Continue(());
            }
        }
    }

    /// Whether the clause being written is held whole, not only from its first fact: asked
    /// for a figure, before the first is checked. Its opening alone reads as an answer cut
    /// short when its figure proves made up ("老刘的生日是", then "the notes do not say"), and
    /// tells the reader nothing a right answer's whole clause does not a moment later.
    fn holds_clauses(&self) -> bool {
        self.withhold_facts && self.withheld.is_none()
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
        match &mut self.withheld {
            Some(withheld) => {
                withheld.push_str(&shown);
                ControlFlow::Continue(())
            }
            None => on_text(&shown),
        }
    }
}

/// Where the last whole clause of `text` ends ([`facts::clause_end`]); 0 when none is whole.
fn finished_clauses(text: &str) -> usize {
    let mut end = 0;
    while let Some(next) = facts::clause_end(&text[end..]) {
        end += next;
    }
    end
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

    /// Streams `tokens` through a [`FactGate`] over `known`; returns what was shown after each
    /// token, and the made-up facts at the end.
    fn gate(known: &[&str], tokens: &[&str]) -> (Vec<String>, Vec<String>) {
        let known = KnownFacts::new(known.iter().copied());
        let mut gate = FactGate::new(&known, false);
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
    fn a_gate_withholding_facts_shows_them_only_when_released() {
        let known = KnownFacts::new(["The pump delivers 1,200 litres per hour."]);
        let mut gate = FactGate::new(&known, true);
        let mut shown = String::new();
        let mut show = |text: &str| {
            shown.push_str(text);
            ControlFlow::Continue(())
        };
        for token in ["The pump", " delivers 1,200", " litres", " an hour [1]."] {
            let _ = gate.pass(token, &mut show);
        }
        assert!(gate.finish(&mut show).is_empty());
        // The clause the first figure stands in is withheld whole, from its first word: none
        // of it was shown before the release.
        assert_eq!(
            gate.withheld(),
            Some("The pump delivers 1,200 litres an hour [1].")
        );
        gate.release(&mut show);
        assert_eq!(shown, "The pump delivers 1,200 litres an hour [1].");

        // A clause whose figure is made up shows nothing of itself, its opening included;
        // clauses whole before it stream as they end.
        let known = KnownFacts::new(["- 妈 生日（4月23日）"]);
        let mut gate = FactGate::new(&known, true);
        let mut shown = String::new();
        let mut show = |text: &str| {
            shown.push_str(text);
            ControlFlow::Continue(())
        };
        for token in ["查了礼物清单。", "\n老刘的", "生日是", "5月3日", "。[1]"] {
            let _ = gate.pass(token, &mut show);
        }
        assert_eq!(gate.finish(&mut show), ["5月3日"]);
        assert_eq!(shown, "查了礼物清单。\n");

        // An answer stating no fact is never withheld.
        let mut gate = FactGate::new(&known, true);
        let mut shown = String::new();
        let mut show = |text: &str| {
            shown.push_str(text);
            ControlFlow::Continue(())
        };
        let _ = gate.pass("The pump is quiet [1].", &mut show);
        assert!(gate.finish(&mut show).is_empty());
        assert_eq!(gate.withheld(), None);
        assert_eq!(shown, "The pump is quiet [1].");
    }

    #[test]
    fn a_version_streamed_after_its_name_is_checked_with_it() {
        let mut known = KnownFacts::new(["Credits\nLicensed under the Apache License 2.0."]);
        known.know_question("When does Obsidian 2.0 ship?");
        let mut gate = FactGate::new(&known, false);
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
