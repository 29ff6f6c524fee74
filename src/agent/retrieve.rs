//! The searches the agent makes itself, before the model decides anything: the opening search
//! for the question as asked, and the wider one after an answer that the notes do not say.

use std::collections::BTreeSet;

use chrono::{Datelike, NaiveDate};
use obsidian_kb::api;
use obsidian_kb::dates::{self, Period};

use super::calls::render_results;
use super::decide::call_signature;
use super::follow_up::Days;
use super::{Agent, AgentError, Gathered, StepRecord};
use crate::engine::{ChatModel, GenerationStats};
use crate::prompt::Message;
use crate::tool::{ToolCall, ToolHost, ToolSpec};
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

/// What the opening searches did ([`Agent::open`]).
pub(super) struct Opened {
    /// Whether a search ran.
    pub(super) ran: bool,
    /// The period searched last: the one with notes, if any had.
    pub(super) period: Option<Period>,
    /// The period searched, when no note is dated within it (nor, for days named without
    /// their year, on the same days of the years before) and it is a week at most.
    pub(super) undated: Option<Period>,
}

/// Whether `text` names one of `days` as a written date or a holiday, in any year (a day
/// asked without its year was looked for in several): what a passage must do to answer a
/// question about days no note is dated on. `today`: what relative dates count from.
pub(super) fn names_day(text: &str, days: Period, today: NaiveDate) -> bool {
    let month_days = |period: Period| {
        period
            .from
            .iter_days()
            .take_while(move |day| *day <= period.to)
            .map(|day| (day.month(), day.day()))
    };
    let asked: BTreeSet<(u32, u32)> = month_days(days).take(366).collect();
    // A day, a weekend, a holiday: a month or a year ("this year" in a note of Christmas
    // Eve) names no day of it.
    dates::mentioned(text, today)
        .into_iter()
        .filter(|mention| (mention.period.to - mention.period.from).num_days() < UNDATED_DAYS)
        .any(|mention| month_days(mention.period).any(|day| asked.contains(&day)))
}

/// Days a period asked about may last to be one an answer must name ([`Opened::undated`]): a
/// day, a weekend, a week, a holiday. A month or a year no note is dated in ("this year",
/// asked of a vault of years before) is answered from what the notes say of it in words.
const UNDATED_DAYS: i64 = 7;

/// Years before the latest that a day named without its year is looked for in, while none
/// has a note: a person asking "what did I do on Jan 9th" of a vault of 2024 in 2026 means
/// 2024's.
const YEARS_BACK: usize = 5;

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
    /// The opening searches. A question that names a day or a period ([`period_asked`]) is
    /// searched within it first: a daily note shares few words with a question about its
    /// day, and the vault knows each note's dates. Days named without their year ("on Jan
    /// 9th") are the latest ones first, then the same days each year before while none has
    /// a note, [`YEARS_BACK`] at most. The question searched as asked (`query`) fills the
    /// passages left.
    pub(super) fn open(
        &mut self,
        vault: &VaultTools,
        query: &str,
        days: Option<Days>,
        tools: &[ToolSpec],
        conversation: &mut Vec<Message>,
        gathered: &mut Gathered,
    ) -> Result<Opened, AgentError> {
        let mut ran = false;
        let mut dated_found = false;
        let mut searched = days.map(|days| days.period);
        let mut years = match days {
            Some(days) if days.yearless => YEARS_BACK,
            _ => 0,
        };
        while let Some(period) = searched {
            let known = gathered.sources.list().len();
            let dated = opening(query, RETRIEVED_PASSAGES, Some(period));
            ran |= self.retrieve(vault, &dated, tools, conversation, gathered)?;
            dated_found = gathered.sources.list().len() > known;
            if dated_found || years == 0 {
                break;
            }
            years -= 1;
            match period.a_year_before() {
                Some(earlier) => searched = Some(earlier),
                None => break,
            }
        }
        let room = RETRIEVED_PASSAGES.saturating_sub(gathered.sources.list().len());
        if room > 0 {
            let plain = opening(query, room, None);
            ran |= self.retrieve(vault, &plain, tools, conversation, gathered)?;
        }
        self.follow_pointed(vault, query, tools, conversation, gathered)?;
        Ok(Opened {
            ran,
            undated: searched
                .filter(|days| !dated_found && (days.to - days.from).num_days() < UNDATED_DAYS),
            period: searched,
        })
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
        // Finding nothing at all within a period stays out, as the search without one follows.
        let dated = params.from.is_some() || params.to.is_some();
        self.gather(vault, &[call], !dated, tools, conversation, gathered)?;
        Ok(true)
    }

    /// Makes `calls` of the vault's tools as the agent's own, their results numbered as
    /// sources and the calls counted as made. They enter the conversation only when they
    /// brought a passage not shown yet, or (`say_nothing_found`) found none at all at the
    /// opening, for the model to read that nothing matched.
    pub(super) fn gather(
        &mut self,
        vault: &VaultTools,
        calls: &[ToolCall],
        say_nothing_found: bool,
        tools: &[ToolSpec],
        conversation: &mut Vec<Message>,
        gathered: &mut Gathered,
    ) -> Result<(), AgentError> {
        // Small models copy the opening call; repeating it counts as a repeated call.
        gathered.signatures.push(call_signature(calls));
        let known = gathered.sources.list().len();
        let (records, texts) = self.run_calls(calls, Some(vault), &mut gathered.sources)?;
        let pythonic: Vec<String> = calls.iter().map(ToolCall::to_pythonic).collect();
        let written = format!("[{}]", pythonic.join(", "));
        gathered.steps.push(StepRecord {
            kind: "retrieve",
            input: String::new(),
            output: written.clone(),
            calls: records,
            stats: GenerationStats::default(),
        });
        if gathered.sources.list().len() == known && (known > 0 || !say_nothing_found) {
            return Ok(());
        }
        // At most half of what is free: the model may still want to read a note whole.
        let budget = self.result_budget(conversation, tools)? / 2;
        conversation.push(Message::assistant(written));
        conversation.push(Message::ipython(render_results(calls, &texts, budget)));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
