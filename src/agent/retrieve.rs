//! The searches the agent makes itself, before the model decides anything: the opening search
//! for the question as asked, and the wider one after an answer that the notes do not say.

use chrono::NaiveDate;
use obsidian_kb::api;
use obsidian_kb::dates::{self, Period};
use obsidian_kb::search::Tokenizer;

use super::calls::render_results;
use super::decide::call_signature;
use super::{Agent, AgentError, Gathered, StepRecord};
use crate::engine::{ChatModel, GenerationStats};
use crate::prompt::{Message, Role};
use crate::tool::{ToolHost, ToolSpec};
use crate::vault::VaultTools;

/// Passages the opening search puts in front of the model. Four (each later one ~45 tokens
/// fewer to read) cost Qwen2.5-1.5B answers on the help questions, as three did before: the
/// gold note cited for 56 of the first 76 instead of 60, a keyword written for 45 instead of
/// 48, in other wording, most with the gold note still the first source.
const RETRIEVED_PASSAGES: usize = 5;
/// When the first answer is that the notes do not say: the leading notes whose further
/// passages the agent reads before the model decides (a note's answer is often in another
/// section than the one matching the question's words; a 1.5B model asked to look further
/// only repeats the opening search), and how many passages of each.
const WIDENED_NOTES: usize = 3;
const WIDENED_PASSAGES: usize = 3;
/// Characters of each hit after the first that the model reads: the vault's excerpt, the
/// sentences that bear on the question by words and meaning (the first hit is read whole). On
/// the 103 English help questions (`obsidian-kb-bench retrieval --excerpt`), 100 after a whole
/// first hit kept an answer keyword in view for 71 (72 with 400 by words alone) in half the
/// characters (884 against 1,727); with Qwen2.5-1.5B on 2 threads, prompt tokens read before
/// the answer 611 → 430, a question 14.2 → 12.2 s, gold note cited 85 → 84, keyword written
/// 69 → 69. The widened search looks for what the opening missed, so it shows more.
const OPENING_EXCERPT_CHARS: usize = 100;
const WIDENED_EXCERPT_CHARS: usize = 400;

/// Most search terms of its own (stemmed, stop words out) of a question that leans on the one
/// before it: "And on Plus?", "How do I undo that?" (1), "Who is she?" (0); "How do I publish
/// a website?" (2) stands alone.
const LEANING_TERMS: usize = 1;

/// What the opening search looks for: the question as asked; a question that leans on the
/// conversation (few words of its own, after an earlier question) with the earlier question
/// before it, so that "And on Plus?" is searched as the plan it asks about. A question with
/// words enough stands alone: it may change the subject.
pub(super) fn searched_for(question: &str, conversation: &[Message]) -> String {
    let own = Tokenizer::default().query_terms(question).len();
    // The conversation ends with this question; the one before is the earlier user message.
    let earlier = conversation
        .iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .nth(1);
    match earlier {
        Some(m) if own <= LEANING_TERMS => {
            // A search takes at most 2,000 bytes; an earlier question may be a pasted page.
            let earlier: String = m.content.chars().take(EARLIER_CHARS).collect();
            format!("{earlier} {question}")
        }
        _ => question.to_string(),
    }
}

/// The day the conversation before this turn's question was last about: the last day an
/// earlier question named, itself counted from the one before where it named it so ("And
/// the next day?"). `None` when none named a day.
fn day_talked_about(conversation: &[Message], today: NaiveDate) -> Option<Period> {
    let mut questions: Vec<&Message> = conversation
        .iter()
        .filter(|m| m.role == Role::User)
        .collect();
    // The conversation ends with this turn's question.
    questions.pop();
    questions.iter().fold(None, |day, m| {
        let named = dates::period_named(&m.content, today)
            .or_else(|| dates::after_anchor(&m.content, day?));
        named.or(day)
    })
}

/// Characters of the earlier question a leaning one is searched with.
const EARLIER_CHARS: usize = 300;

/// Passages of each note about the period a question names that the dated search shows, and
/// characters of each after the first: a day's notes are few and short, and what a question
/// asks of a day is often in a line sharing no word with it ("How much did I spend on 3
/// March?": `spent:: 42.80`, left out of a 100-character excerpt).
const DATED_PASSAGES: usize = 3;
const DATED_EXCERPT_CHARS: usize = WIDENED_EXCERPT_CHARS;

/// An opening search: the question as asked, its best `limit` passages, within `period`
/// when there is one.
fn opening(question: &str, limit: usize, period: Option<Period>) -> api::SearchParams {
    api::SearchParams {
        query: question.to_string(),
        limit: Some(limit),
        // The notes about the day asked for are most of what answers: more of each.
        passages: period.map(|_| DATED_PASSAGES),
        excerpt: Some(match period {
            Some(_) => DATED_EXCERPT_CHARS,
            None => OPENING_EXCERPT_CHARS,
        }),
        from: period.map(|p| p.from.to_string()),
        to: period.map(|p| p.to.to_string()),
        ..api::SearchParams::default()
    }
}

/// The wider search: further passages of the leading notes, for what the opening searched
/// (`query`: a follow-up with the question it leans on).
pub(super) fn wider(query: &str) -> api::SearchParams {
    api::SearchParams {
        query: query.to_string(),
        limit: Some(WIDENED_NOTES),
        passages: Some(WIDENED_PASSAGES),
        excerpt: Some(WIDENED_EXCERPT_CHARS),
        ..api::SearchParams::default()
    }
}

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// The opening searches. A question that names a day or a period ("on 5 Jan 2022",
    /// "last week", counted from [`super::AgentOptions::today`]) is searched within it
    /// first: a daily note shares few words with a question about its day, and the vault
    /// knows each note's dates. The question searched as asked fills the passages left.
    /// Returns whether a search ran.
    pub(super) fn open(
        &mut self,
        vault: &VaultTools,
        question: &str,
        query: &str,
        tools: &[ToolSpec],
        conversation: &mut Vec<Message>,
        gathered: &mut Gathered,
    ) -> Result<bool, AgentError> {
        let today = self.options.today;
        let mut ran = false;
        let period = dates::period_named(question, today)
            .or_else(|| dates::after_anchor(question, day_talked_about(conversation, today)?))
            .or_else(|| dates::period_named(query, today));
        if let Some(period) = period {
            let dated = opening(query, RETRIEVED_PASSAGES, Some(period));
            ran = self.retrieve(vault, &dated, tools, conversation, gathered)?;
        }
        let room = RETRIEVED_PASSAGES.saturating_sub(gathered.sources.list().len());
        if room > 0 {
            let plain = opening(query, room, None);
            ran |= self.retrieve(vault, &plain, tools, conversation, gathered)?;
        }
        Ok(ran)
    }

    /// A search the agent makes itself, through the vault's search tool like any call, its
    /// passages numbered as sources and its call counted as made. It enters the conversation
    /// only when it brought a passage not shown yet. Returns whether it ran.
    pub(super) fn retrieve(
        &mut self,
        vault: &VaultTools,
        params: &api::SearchParams,
        tools: &[ToolSpec],
        conversation: &mut Vec<Message>,
        gathered: &mut Gathered,
    ) -> Result<bool, AgentError> {
        let Some(call) = vault.call(api::SEARCH_NOTES, params) else {
            return Ok(false);
        };
        let calls = [call];
        // Small models copy the opening call; repeating it counts as a repeated call.
        gathered.signatures.push(call_signature(&calls));
        let known = gathered.sources.list().len();
        let (records, texts) = self.run_calls(&calls, Some(vault), &mut gathered.sources)?;
        let written = format!("[{}]", calls[0].to_pythonic());
        gathered.steps.push(StepRecord {
            kind: "retrieve",
            output: written.clone(),
            calls: records,
            stats: GenerationStats::default(),
        });
        // Nothing new stays out; so does finding nothing at all within a period, as the
        // search without one follows.
        let dated = params.from.is_some() || params.to.is_some();
        if gathered.sources.list().len() == known && (known > 0 || dated) {
            return Ok(true);
        }
        // At most half of what is free: the model may still want to read a note whole.
        let budget = self.result_budget(conversation, tools)? / 2;
        conversation.push(Message::assistant(written));
        conversation.push(Message::ipython(render_results(&calls, &texts, budget)));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_that_leans_on_the_one_before_is_searched_with_it() {
        let mut conversation = vec![
            Message::system("Answer from the notes."),
            Message::user("What's the largest file I can sync on Sync Standard?"),
            Message::assistant("5 MB [1]."),
            Message::user("And on Plus?"),
        ];
        assert_eq!(
            searched_for("And on Plus?", &conversation),
            "What's the largest file I can sync on Sync Standard? And on Plus?"
        );
        // Words enough of its own: it may change the subject.
        let own = "How do I publish my notes as a website?";
        conversation.push(Message::user(own));
        assert_eq!(searched_for(own, &conversation), own);
        // The first question of a conversation has nothing to lean on.
        assert_eq!(searched_for("Why?", &conversation[..2]), "Why?");
        // A long earlier question is cut.
        let long = "word ".repeat(1000);
        let conversation = [Message::user(&long), Message::user("Why?")];
        assert!(searched_for("Why?", &conversation).len() < 400);
    }
}
