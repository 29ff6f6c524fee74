//! The restatement step: a follow-up that leans on the conversation ("And on Plus?", "When's
//! his birthday?", [`super::follow_up`]'s `leans_on_earlier`) is written again by the model as a
//! question that stands alone, before anything is searched. The search looks for it, and the
//! answer step is asked it, so that a small model answers what the person means rather than
//! the words they typed ("And on Plus?" had got "On Plus, the largest file you can sync on
//! Sync Standard is …"). Off by default (`AgentOptions::restate`, `--restate`): with
//! Qwen2.5-1.5B it cited three more gold notes of 50 follow-ups, wrote no more keywords, and
//! cost 0.4–0.7 s a follow-up (docs/benches.md); the rules of [`super::follow_up`] stay.
//!
//! The restatement runs on the decision context, which an answer-first turn leaves idle, as
//! a prompt of its own: an instruction with two examples (the prompt cache keeps them), then
//! the last turns, each question with the start of its answer, and the follow-up. Given the
//! whole conversation with its sources, and asked in words alone, Qwen2.5-1.5B wrote the
//! instruction back ("Who has not read our conversation must understand it."). A
//! restatement is used only when it can stand for the follow-up ([`stands_for`]); otherwise
//! the turn searches the follow-up with the question before it, as without this step.

use obsidian_kb::search::Tokenizer;

use super::side_step::{Context, SideStep};
use super::{Agent, AgentError, StepRecord, step};
use crate::engine::{ChatModel, StopReason};
use crate::facts::without_marks;
use crate::grammar::RESTATED_GBNF;
use crate::language::{Language, same_question};
use crate::prompt::{Message, Role};
use crate::tool::ToolHost;

/// Tokens a restated question may take: a question, not an answer.
const RESTATE_TOKENS: usize = 48;

/// The restatement's instruction and examples: the same in every turn, so the prompt cache
/// keeps them (a system message is a prompt's stable prefix).
const RESTATE_SYSTEM: &str = include_str!("../../prompts/agent/restate_system.txt");
/// What the examples write before a rewritten question.
const LABEL: &str = "Rewritten:";

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// The follow-up that ends `conversation` restated to stand alone, its generation added
    /// to `steps`; `None` when the restatement cannot stand for it ([`stands_for`]) or the
    /// model failed (the turn goes on without it; Ctrl-C still stops it).
    pub(super) fn restate(
        &mut self,
        conversation: &[Message],
        steps: &mut Vec<StepRecord>,
    ) -> Result<Option<String>, AgentError> {
        let Some((last, before)) = conversation.split_last() else {
            return Ok(None);
        };
        if last.role != Role::User {
            return Ok(None);
        }
        let question = last.content.trim();
        let turns = earlier_turns(before);
        let pairs: Vec<(&str, &str)> = turns.iter().map(|(q, a)| (*q, a.as_str())).collect();
        let instruction = self.template.restate_instruction(&pairs, question)?;
        let messages = [
            Message::system(RESTATE_SYSTEM.trim()),
            Message::user(instruction),
        ];
        // Failing, the follow-up is searched as it leans.
        let restate = SideStep {
            what: "restatement",
            context: Context::Decision,
            max_tokens: RESTATE_TOKENS,
            gbnf: RESTATED_GBNF.to_string(),
        };
        let Some(completion) = self.side_step(restate, &messages)? else {
            return Ok(None);
        };
        steps.push(step("restate", &completion, Vec::new()));
        let earlier: Vec<&str> = turns.iter().map(|(question, _)| *question).collect();
        // The label the examples write it under, if the model wrote it too.
        let restated = completion.text.trim();
        let restated = restated.strip_prefix(LABEL).unwrap_or(restated).trim();
        let stands =
            completion.stop == StopReason::EndOfTurn && stands_for(restated, question, &earlier);
        Ok(stands.then(|| restated.to_string()))
    }
}

/// Earlier turns a restatement reads, at most this many, the last ones.
const EARLIER_TURNS: usize = 2;
/// Characters of an earlier answer a restatement reads: where it names what a follow-up
/// points at ("Elias"), its first sentence does.
const EARLIER_ANSWER_CHARS: usize = 240;

/// The last [`EARLIER_TURNS`] turns of `conversation`: each question with the start of its
/// answer (its first paragraph, citation marks out; quoted passages follow a blank line).
fn earlier_turns(conversation: &[Message]) -> Vec<(&str, String)> {
    let mut turns: Vec<(&str, String)> = Vec::new();
    for message in conversation {
        match message.role {
            Role::User => turns.push((message.content.trim(), String::new())),
            // The last message of a turn by the model is its answer (calls come before).
            Role::Assistant => {
                if let Some((_, answer)) = turns.last_mut() {
                    let first = message.content.split("\n\n").next().unwrap_or("");
                    *answer = one_line(&without_marks(first))
                        .chars()
                        .take(EARLIER_ANSWER_CHARS)
                        .collect();
                }
            }
            _ => {}
        }
    }
    let skip = turns.len().saturating_sub(EARLIER_TURNS);
    turns.split_off(skip)
}

/// `text` on one line, its words one space apart, a mark that closes a sentence or clause
/// against the word before it (where a citation mark stood: "per hour [1]." → "per hour.").
fn one_line(text: &str) -> String {
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && !word.starts_with(['.', ',', ';', ':', '!', '?']) {
            line.push(' ');
        }
        line.push_str(word);
    }
    line
}

/// Whether `restated` can stand for the follow-up `question` asked after the `earlier`
/// questions: a question other than the follow-up itself, in its language, holding most
/// search terms of the follow-up's own ([`keeps_most`]: one that drops them asks something
/// else, most often the question before again), and not an earlier question written out
/// again.
fn stands_for(restated: &str, question: &str, earlier: &[&str]) -> bool {
    let mut tokenizer = Tokenizer::default();
    let terms = tokenizer.query_terms(restated);
    restated.ends_with(['?', '？'])
        && !same_question(restated, question)
        && Language::of(restated) == Language::of(question)
        && keeps_most(&terms, &tokenizer.query_terms(question))
        && !earlier.iter().any(|e| same_question(e, restated))
}

/// Whether `terms` hold at least half of `own` (all of one): a restatement drops a filler
/// ("What if I go for Plus?" → "How many vaults can I sync with the Plus plan?"), never most
/// of what the follow-up asks ("And per file?" → the question before again).
fn keeps_most(terms: &[String], own: &[String]) -> bool {
    let kept = own.iter().filter(|term| terms.contains(term)).count();
    2 * kept >= own.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restatement_stands_for_a_follow_up_when_it_keeps_what_it_asks() {
        let earlier = ["What's the biggest file Sync Standard will take?"];
        assert!(stands_for(
            "What's the biggest file Sync Plus will take?",
            "And on Plus?",
            &earlier
        ));
        // The follow-up's own word dropped: it asks the question before again.
        assert!(!stands_for(
            "What's the biggest file Sync Standard will take?",
            "And on Plus?",
            &earlier
        ));
        assert!(!stands_for(
            "what's the biggest file Sync  Standard will take?",
            "Why?",
            &earlier
        ));
        // A filler may go, not most of what the follow-up asks.
        assert!(stands_for(
            "How many vaults can I sync with the Plus plan?",
            "What if I go for Plus?",
            &earlier
        ));
        assert!(!stands_for(
            "How much space does a Publish site get in total?",
            "And per file?",
            &["How much space does a Publish site get in total? "]
        ));
        assert!(!stands_for(
            "How much space does a Publish site get?",
            "And per file?",
            &earlier
        ));
        // The follow-up as it was is no restatement.
        assert!(!stands_for("And on  Plus?", "And on Plus?", &earlier));
        // No question, or another language.
        assert!(!stands_for(
            "The biggest file on Plus",
            "And on Plus?",
            &earlier
        ));
        assert!(!stands_for(
            "Plus 计划能同步的最大文件是多少？",
            "And on Plus?",
            &earlier
        ));
        assert!(stands_for(
            "When is Elias's birthday?",
            "When's his birthday?",
            &["Who did I chat with at the train station?"]
        ));
    }
}
