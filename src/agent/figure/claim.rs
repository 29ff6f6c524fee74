//! What an answer's sentence claims: the figure it gives (its kind, whole as written) and the
//! sentence that gives it, read for the check
//! ([`super::FigureLine`]). Pure.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use obsidian_kb::search::Tokenizer;
use regex::Regex;

/// Where `text` writes `fact` as a whole, not as a part of a longer number ("20" in
/// "2022").
pub(super) fn find_whole(text: &str, fact: &str) -> Option<usize> {
    text.match_indices(fact).map(|(at, _)| at).find(|&at| {
        let before = text[..at].chars().next_back();
        let after = text[at + fact.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

/// `fact` as `text` writes it, whole: with the currency sign before it and the groups of
/// digits around it that one space, a hyphen or a `+` joins to it (the fact check reads a
/// phone number's groups as numbers of their own).
pub(super) fn whole_figure(text: &str, fact: &str) -> String {
    static WHOLE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[+€$£¥]?\s?(?:\d[\d.,:/]*[ -]?)+").expect("valid regex"));
    // A date with its month's name is whole as the fact check read it.
    let Some(at) = find_whole(text, fact).filter(|_| !fact.chars().any(char::is_alphabetic)) else {
        return fact.to_string();
    };
    WHOLE
        .find_iter(text)
        .find(|run| run.start() <= at && at + fact.len() <= run.end())
        .map_or(fact.to_string(), |run| {
            run.as_str()
                .trim()
                .trim_end_matches(['-', '.', ','])
                .to_string()
        })
}

/// A full-width mark ends a sentence whatever follows; a full stop only before a space.
fn ends_wide(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '\n')
}

/// Any mark that may end a sentence.
fn ends(c: char) -> bool {
    ends_wide(c) || matches!(c, '.' | '!' | '?')
}

/// Where the sentence of `text` holding `at` begins: after the end of the one before.
fn sentence_start(text: &str, at: usize) -> usize {
    text[..at]
        .char_indices()
        .rev()
        .find(|&(i, c)| ends_wide(c) || (ends(c) && text[i + c.len_utf8()..].starts_with(' ')))
        .map_or(0, |(i, c)| i + c.len_utf8())
}

/// The answer's sentence that gives `fact` ([`sentence_with`]), led by the sentence before
/// it when it shares no search term with `question`: "The total amount was €6,900, …",
/// after "The grant was approved on 21 September, …", is the grant's, and read alone the
/// check took it for any total, a plumber's quote.
pub(super) fn claim_about(question: &str, text: &str, fact: &str) -> String {
    let claim = sentence_with(text, fact);
    let mut tokenizer = Tokenizer::default();
    let asked: BTreeSet<String> = tokenizer.query_terms(question).into_iter().collect();
    let Some(at) = find_whole(text, fact) else {
        return claim;
    };
    if tokenizer
        .query_terms(&claim)
        .iter()
        .any(|term| asked.contains(term))
    {
        return claim;
    }
    let start = sentence_start(text, at);
    let head = text[..start].trim_end();
    let head = head.strip_suffix(ends).unwrap_or(head);
    let before: Vec<&str> = text[sentence_start(text, head.len())..start]
        .split_whitespace()
        .collect();
    match before.join(" ") {
        before if before.is_empty() => claim,
        before => format!("{before} {claim}"),
    }
}

/// The sentence of `text` that holds `fact`, trimmed: from the end of the sentence before
/// (a full stop, question or exclamation mark and a space, or a line break) to the end of its
/// own. A full stop within a number (`40.00`) ends nothing.
pub(super) fn sentence_with(text: &str, fact: &str) -> String {
    let Some(at) = find_whole(text, fact) else {
        return text.trim().to_string();
    };
    let start = sentence_start(text, at);
    let after = at + fact.len();
    let end = text[after..]
        .char_indices()
        .find(|&(i, c)| {
            let next = text[after + i + c.len_utf8()..].chars().next();
            ends_wide(c) || (ends(c) && next.is_none_or(char::is_whitespace))
        })
        .map_or(text.len(), |(i, c)| after + i + c.len_utf8());
    // A citation mark blanked out leaves spaces, before a full stop too.
    let words: Vec<&str> = text[start..end].split_whitespace().collect();
    let mut sentence = words.join(" ");
    for mark in [".", ",", ";", ":", "!", "?"] {
        sentence = sentence.replace(&format!(" {mark}"), mark);
    }
    // Where the answer comes from is no part of what it says ("According to Daily ›
    // 2024-10-19, …", "根据…中的信息，…"), and a copied header reads to the check as a claim.
    static SOURCE_SAID: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?i:according\s+to|based\s+on|as\s+per)\b[^,，]*[,，]|(?:根据|按照|据)[^,，]*[,，])\s*")
            .expect("valid regex")
    });
    match SOURCE_SAID.find(&sentence) {
        Some(said) if said.end() < sentence.len() && sentence[said.end()..].contains(fact) => {
            sentence[said.end()..].to_string()
        }
        _ => sentence,
    }
}
