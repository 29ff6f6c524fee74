//! What a turn's question means given the conversation before it: what the opening search
//! looks for ([`searched_for`]: a follow-up with the question it leans on, or the question
//! before asked again of the note or day it names instead) and the day or period it asks
//! about ([`period_asked`]). Pure: the vault is asked only through the `titles` lookup.

use chrono::{Datelike, NaiveDate};
use obsidian_kb::dates::{self, Period};
use obsidian_kb::search::{Tokenizer, is_cjk};

use super::subject::words;
use crate::facts::names_in;
use crate::prompt::{Message, Role};

/// Characters of the earlier question a leaning one is searched with.
const EARLIER_CHARS: usize = 300;

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
    // Each earlier question with the conversation up to it (it last).
    let mut questions: Vec<(&str, &[Message])> = conversation
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .map(|(at, m)| (m.content.as_str(), &conversation[..=at]))
        .collect();
    // The conversation ends with this question.
    questions.pop();
    let mut searched: Option<String> = None;
    // The question before as it was meant: "And the next day?" twice is the day after the
    // day after, asked as the first question asked it.
    let mut before: Option<String> = None;
    for (asked, up_to) in questions {
        let leans = searched.is_some() && leans_on_earlier(asked);
        searched = Some(match searched {
            Some(earlier) if leans => leaning(&moved_to(&earlier, asked, titles), asked),
            _ => asked.to_string(),
        });
        before = Some(
            before
                .filter(|_| leans)
                .and_then(|before| meant_instead(&before, asked, up_to, today, titles))
                .unwrap_or_else(|| asked.to_string()),
        );
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
            let meant = before
                .and_then(|before| meant_instead(&before, question, conversation, today, titles));
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

/// The question `before` asked again of the note or day `question` names instead
/// ([`in_place_of`], [`on_another_day`]; `conversation` ends with `question`), if it only
/// names one.
fn meant_instead(
    before: &str,
    question: &str,
    conversation: &[Message],
    today: NaiveDate,
    titles: &mut dyn FnMut(&str) -> Vec<String>,
) -> Option<String> {
    in_place_of(before, question, titles)
        .or_else(|| on_another_day(before, question, conversation, today))
}

/// Words a follow-up may say besides the note it names and still ask only what the question
/// before asked, about that note or day: "And Terraria?", "What about for the quick
/// switcher?", "那前一天呢？".
const ONLY_NAMING: &str =
    "and but or also so what how about if then for on in with of to the a an 那 那么 还有 呢";

/// Whether `rest` (what a follow-up says besides the note or day it names) says nothing but
/// [`ONLY_NAMING`]'s words.
fn says_nothing_else(rest: &str) -> bool {
    words(&rest.to_lowercase()).all(|word| ONLY_NAMING.split(' ').any(|w| w == word))
}

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
    if !says_nothing_else(&rest) {
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
    if !says_nothing_else(&rest) {
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

#[cfg(test)]
mod tests;
