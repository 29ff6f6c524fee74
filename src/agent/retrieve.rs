//! The searches the agent makes itself, before the model decides anything: the opening search
//! for the question as asked, and the wider one after an answer that the notes do not say.

use std::collections::BTreeSet;

use chrono::{Datelike, NaiveDate};
use obsidian_kb::api;
use obsidian_kb::dates::{self, Period};
use obsidian_kb::search::{Tokenizer, is_cjk};

use super::calls::render_results;
use super::decide::call_signature;
use super::subject::words;
use super::{Agent, AgentError, Gathered, StepRecord};
use crate::engine::{ChatModel, GenerationStats};
use crate::facts::names_in;
use crate::prompt::{Message, Role};
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

/// Most search terms of its own (stemmed, stop words out) of a question that leans on the one
/// before it whatever its words: "And on Plus?", "How do I undo that?" (1), "Who is she?" (0);
/// "How do I publish a website?" (2) stands alone unless it points back.
const LEANING_TERMS: usize = 1;
/// Most search terms of its own of a question that points back with a pronoun and still leans:
/// "What kind of file does it save?" (3) leans; "Is it possible to sync my vault with
/// Dropbox on Android?" (5) asks something new.
const POINTING_TERMS: usize = 3;

/// Words that open a question carried on from the one before ("And on Plus?", "What about
/// iPad?", "还有 iPad 呢？"), lowercase.
const CARRIED_ON: &str = "and, but, or, also, so, what about, how about, what if, 那么, 还有";
/// Words that point back at what was said before: pronouns and demonstratives.
const POINTING_WORDS: &str = "it its it's they them their theirs he him his she her hers \
    this that these those";
/// The same in Chinese, found anywhere in the question (no spaces between words there).
/// Pronouns there do not open relative clauses as "that" does, so no count of words applies.
const POINTING_WORDS_CJK: &str = "它 他 她 这 那 呢";

/// Whether `question` leans on the conversation before it: few words of its own, or it opens
/// as carrying on or points back with a pronoun and has few enough words of its own to be
/// about what it points at. A question with words enough of its own may change the subject.
fn leans_on_earlier(question: &str) -> bool {
    let own = Tokenizer::default().query_terms(question).len();
    let lower = question.trim_start().to_lowercase();
    let words: Vec<&str> = words(&lower).collect();
    let carries_on = CARRIED_ON.split(", ").any(|opening| {
        if opening.is_ascii() {
            words.starts_with(&opening.split(' ').collect::<Vec<_>>())
        } else {
            lower.starts_with(opening)
        }
    });
    own <= LEANING_TERMS
        || carries_on
        || points_back_cjk(question)
        || (points_back(question) && own <= POINTING_TERMS)
}

/// Whether `question` points back at what was said before with a pronoun or a demonstrative
/// ([`POINTING_WORDS`], [`POINTING_WORDS_CJK`]).
fn points_back(question: &str) -> bool {
    words(&question.to_lowercase()).any(|w| POINTING_WORDS.split_whitespace().any(|p| p == w))
        || points_back_cjk(question)
}

/// Whether `question` holds a Chinese pronoun or demonstrative ([`POINTING_WORDS_CJK`]).
fn points_back_cjk(question: &str) -> bool {
    POINTING_WORDS_CJK
        .split_whitespace()
        .any(|p| question.contains(p))
}

/// What a turn searches for ([`searched_for`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Searched {
    /// The search's words: the question, after what it leans on.
    pub(super) query: String,
    /// Whether the question leans on earlier ones, searched with it ([`leans_on_earlier`]).
    pub(super) leans: bool,
    /// What a follow-up only naming another note means: the question before about that
    /// note ([`in_place_of`]).
    pub(super) meant: Option<String>,
}

/// What the opening search looks for: the question as asked; a question that leans on the
/// conversation ([`leans_on_earlier`]) with what the question before it was searched for
/// (itself with the one before, where that leaned too), so that "And on Plus?" is searched as
/// the plan it asks about and "When's his birthday?" as the person two questions back.
/// `titles` gives the runs of a text that are notes' titles or aliases: a follow-up naming
/// another note than what it leans on is searched without that one's name ([`moved_to`]).
pub(super) fn searched_for(
    question: &str,
    conversation: &[Message],
    today: NaiveDate,
    titles: &mut dyn FnMut(&str) -> Vec<String>,
) -> Searched {
    let mut questions: Vec<&str> = conversation
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    // The conversation ends with this question.
    questions.pop();
    let before = questions.last().copied();
    let mut searched: Option<String> = None;
    for asked in questions {
        searched = Some(match searched {
            Some(earlier) if leans_on_earlier(asked) => {
                leaning(&moved_to(&earlier, asked, titles), asked)
            }
            _ => asked.to_string(),
        });
    }
    match searched {
        Some(earlier) if leans_on_earlier(question) => {
            let mut query = leaning(&moved_to(&earlier, question, titles), question);
            // "What's her phone number?" after "Sophie was out shopping …": the person is
            // named in the answer before, not in any question.
            if points_at_a_person(question, questions_before(conversation)) {
                for name in names_answered(conversation)
                    .into_iter()
                    .take(ANSWERED_NAMES)
                {
                    query.push(' ');
                    query.push_str(name);
                }
            }
            let meant = before.and_then(|before| {
                in_place_of(before, question, titles)
                    .or_else(|| on_another_day(before, question, conversation, today))
            });
            Searched {
                query,
                leans: true,
                meant,
            }
        }
        _ => Searched {
            query: question.to_string(),
            leans: false,
            meant: None,
        },
    }
}

/// Words a follow-up may say besides the note it names and still ask only what the question
/// before asked, about that note or day: "And Terraria?", "What about for the quick
/// switcher?", "那前一天呢？".
const ONLY_NAMING: &str =
    "and but or also so what how about if then for on in with of to the a an 那 那么 还有 呢";

/// The question `before` asked again about the note `question` names instead of the one it
/// named, when `question` says nothing else ([`ONLY_NAMING`]) and each names one note's
/// title or alias (`titles`): "And Terraria?" after "How much did Stardew Valley cost?" is
/// "How much did Terraria cost?". Asked "And Terraria?", Qwen2.5-1.5B described the game
/// from the right note, not its price. `None` otherwise ("And on Plus?" names no note).
fn in_place_of(
    before: &str,
    question: &str,
    titles: &mut dyn FnMut(&str) -> Vec<String>,
) -> Option<String> {
    let [named] = titles(question).try_into().ok()?;
    let rest = without_words(&question.to_lowercase(), &named.to_lowercase());
    if !words(&rest).all(|word| ONLY_NAMING.split(' ').any(|w| w == word)) {
        return None;
    }
    let [earlier] = titles(before).try_into().ok()?;
    if earlier.eq_ignore_ascii_case(&named) {
        return None;
    }
    if !lowercase_keeps_places(before) {
        return None;
    }
    let at = *places_of_words(&before.to_lowercase(), &earlier.to_lowercase()).first()?;
    Some(format!(
        "{}{named}{}",
        &before[..at],
        &before[at + earlier.len()..]
    ))
}

/// The question `before` asked again of the day `question` names by the one `before` wrote,
/// when `question` says nothing else ([`ONLY_NAMING`]): "And the night before?" after "What
/// time did I go to bed on 20 January 2022?" is "What time did I go to bed on 19 January
/// 2022?". Told "It asks about 2022-01-19." after the conversation, Qwen2.5-1.5B gave 20
/// January's bedtime again. `None` unless `before` writes one day as a date ("yesterday",
/// "3 days ago" and "on Monday" read wrong with another date in their place).
fn on_another_day(
    before: &str,
    question: &str,
    conversation: &[Message],
    today: NaiveDate,
) -> Option<String> {
    let anchor = dates::anchor_words(question)?;
    let rest = format!("{} {}", &question[..anchor.start], &question[anchor.end..]);
    if !words(&rest.to_lowercase()).all(|word| ONLY_NAMING.split(' ').any(|w| w == word)) {
        return None;
    }
    let day = dates::after_anchor(question, day_talked_about(conversation, today)?)?;
    let [said] = dates::mentioned(before, today).try_into().ok()?;
    let written = &before[said.start..said.end];
    let is_a_date =
        written.contains(|c: char| c.is_ascii_digit()) && !written.to_lowercase().ends_with("ago");
    if said.period.from != said.period.to || !is_a_date {
        return None;
    }
    let day = day.from;
    let day = if written.chars().any(is_cjk) {
        match said.yearless {
            true => format!("{}月{}日", day.month(), day.day()),
            false => format!("{}年{}月{}日", day.year(), day.month(), day.day()),
        }
    } else if written.starts_with(|c: char| c.is_ascii_digit()) && written.contains('-') {
        day.format("%Y-%m-%d").to_string()
    } else if said.yearless {
        day.format("%-d %B").to_string()
    } else {
        day.format("%-d %B %Y").to_string()
    };
    Some(format!(
        "{}{day}{}",
        &before[..said.start],
        &before[said.end..]
    ))
}

/// What `earlier` (searched for before `question`, which leans on it) says that `question`
/// still means: when `question` names a note by its title or alias (`titles`) that `earlier`
/// does not, and points back at nothing ("What voltage does it need?" asks about what came
/// before, whatever note is called "Voltage"), `earlier` less the titles it names. "And for the quick switcher?" after "What's
/// the keyboard shortcut for the command palette on Windows?", or "And Terraria?" after
/// "How much did Stardew Valley cost?", found the earlier question's note first
/// (Qwen2.5-1.5B then answered about it) and the one asked about fifth or second. "And on
/// Plus?" names no note: everything before stands.
fn moved_to(earlier: &str, question: &str, titles: &mut dyn FnMut(&str) -> Vec<String>) -> String {
    if points_back(question) {
        return earlier.to_string();
    }
    let lower = earlier.to_lowercase();
    let named: Vec<String> = titles(question)
        .iter()
        .map(|run| run.to_lowercase())
        .collect();
    if named.iter().all(|run| lower.contains(run.as_str())) {
        return earlier.to_string();
    }
    let mut kept = earlier.to_string();
    for run in titles(earlier) {
        let run = run.to_lowercase();
        if !named.contains(&run) {
            kept = without_words(&kept, &run);
        }
    }
    kept
}

/// `text` less each place it holds the words of `run` (lowercase), in any case, as whole
/// words; `text` as it is when a letter of it lowercases to another length ("İ"), where
/// places in the lowercase text are not places in `text`.
fn without_words(text: &str, run: &str) -> String {
    if !lowercase_keeps_places(text) {
        return text.to_string();
    }
    let mut kept = String::new();
    let mut from = 0;
    for at in places_of_words(&text.to_lowercase(), run) {
        if at < from {
            continue;
        }
        kept.push_str(&text[from..at]);
        from = at + run.len();
    }
    kept.push_str(&text[from..]);
    kept
}

/// Where `lower` holds the words of `run` (both lowercase) as whole words.
fn places_of_words(lower: &str, run: &str) -> Vec<usize> {
    lower
        .match_indices(run)
        .map(|(at, _)| at)
        .filter(|&at| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + run.len()..].chars().next();
            [before, after]
                .iter()
                .all(|c| c.is_none_or(|c| !c.is_alphanumeric() || is_cjk(c)))
        })
        .collect()
}

/// Whether each letter of `text` lowercases to one as long: then places in its lowercase
/// copy are places in it.
fn lowercase_keeps_places(text: &str) -> bool {
    text.chars()
        .all(|c| c.to_lowercase().map(char::len_utf8).sum::<usize>() == c.len_utf8())
}

/// Pronouns that point back at a person, not a thing.
const PERSON_PRONOUNS: &str = "he he's him his she she's her hers";
/// Pronouns that point back at a person after a question asking who, and at things
/// otherwise ("Do they update by themselves?" after a question about themes).
const THEY: &str = "they they're them their theirs";
/// Most names of the answer before that a follow-up pointing at a person is searched with.
const ANSWERED_NAMES: usize = 3;

/// Whether `question` points back at a person: "When's his birthday?", or "When's their
/// birthday?" after `before` (the question before it) asked who.
fn points_at_a_person(question: &str, before: Option<&str>) -> bool {
    let asked_who = before.is_some_and(|before| {
        words(&before.to_lowercase()).any(|word| matches!(word, "who" | "whom" | "whose"))
    });
    words(&question.to_lowercase()).any(|word| {
        PERSON_PRONOUNS.split(' ').any(|p| p == word)
            || (asked_who && THEY.split(' ').any(|p| p == word))
    })
}

/// The question asked before the conversation's last one, if any.
fn questions_before(conversation: &[Message]) -> Option<&str> {
    conversation
        .iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .nth(1)
        .map(|m| m.content.as_str())
}

/// The names the last answer of the conversation gave, in its own words (its first
/// paragraph: quoted passages follow a blank line).
fn names_answered(conversation: &[Message]) -> Vec<&str> {
    let answer = conversation
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map_or("", |m| m.content.as_str());
    names_in(answer.split("\n\n").next().unwrap_or(""))
}

/// A question searched after what the one before it was searched for.
fn leaning(earlier: &str, question: &str) -> String {
    // A search takes at most 2,000 bytes; an earlier question may be a pasted page.
    let earlier: String = earlier.chars().take(EARLIER_CHARS).collect();
    format!("{earlier} {question}")
}

/// The days a question is about ([`period_asked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Days {
    pub(super) period: Period,
    /// Named without their year ("on Jan 9th", "in March"): the latest such days, which
    /// are a guess; a vault's notes may be of years before.
    pub(super) yearless: bool,
}

/// The day or period the turn's question is about, when it names one: by its own words
/// ("on 5 Jan 2022", "last week", counted from `today`), by the day the conversation was
/// about ("And the next day?"), or by what it leans on (`query`).
pub(super) fn period_asked(
    question: &str,
    query: &str,
    conversation: &[Message],
    today: NaiveDate,
) -> Option<Days> {
    if let Some(period) = dates::period_named(question, today) {
        let mentions = dates::mentioned(question, today);
        let yearless = mentions.iter().all(|mention| mention.yearless);
        return Some(Days { period, yearless });
    }
    dates::after_anchor(question, day_talked_about(conversation, today)?)
        .or_else(|| dates::period_named(query, today))
        .map(|period| Days {
            period,
            yearless: false,
        })
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
