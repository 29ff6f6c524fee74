//! Parallel records (a table's rows, list items opening with a label) and which of them a
//! question asks about: a figure or name from another record than that one is no answer
//! ([`super::NoAnswer::OtherItem`]).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use obsidian_kb::search::{Tokenizer, is_cjk};
use regex::Regex;

use super::{item_indent, terms_asked_about};
use crate::sources::Source;

/// Search terms of a question another record must name beyond those the line does
/// ([`another_record_is_asked`]): one is often a word a name holds by chance ("Hallam
/// Bathrooms" beside the plumber's row, for a question asking the plumber's quote for the
/// bathroom).
const MORE_NAMED: usize = 2;

/// Whether `line` is one of a run of parallel records in `sources` (rows of a table, or list
/// items each opening with a label: [`is_record`]), and another of them is the one `question`
/// asks about: it names more of what the question asks about ([`terms_asked_about`]) in words
/// of its own (all the terms `line` names and [`MORE_NAMED`] more), or its label is named in
/// the question and the line's is not ([`label_is_asked`]). Parallel records are things of a
/// kind, so the one naming what is asked is where its answer stands; a figure or name from
/// another belongs to something else. Asked what the notes cannot answer, Qwen2.5-1.5B took
/// the first: asked the brand of the electric blanket bought for Mam, it gave the walking
/// boots' brand from Rory's row (Mam's row names the blanket, and no brand); "厨房水槽是什么牌子的" the
/// cabinets' 欧派 from the row `| 橱柜（欧派） |` above `| 水槽+龙头 |`; "从大理回武汉坐的哪趟
/// 航班？" the flight of `- 去：…` above `- 回：…，中午的航班`. Unlabelled items are notes on
/// one subject, where the line giving a figure often names nothing ("- total treatment
/// €4,200" under "- braces fitted, …" answers "how much are oisín's braces costing").
pub(super) fn another_record_is_asked(question: &str, line: &str, sources: &[Source]) -> bool {
    if !is_record(line) {
        return false;
    }
    let mut tokenizer = Tokenizer::default();
    let asked = terms_asked_about(&mut tokenizer, question);
    let named = |tokenizer: &mut Tokenizer, text: &str| -> BTreeSet<String> {
        tokenizer
            .query_terms(text)
            .into_iter()
            .filter(|term| asked.contains(term))
            .collect()
    };
    for source in sources {
        for items in item_runs(&source.passage) {
            if !items.iter().any(|item| item.trim() == line) {
                continue;
            }
            let place = Place::of(&mut tokenizer, source);
            let own = named(&mut tokenizer, line);
            let own_label_asked = label_is_asked(&mut tokenizer, question, &asked, &place, line);
            for item in items.iter().filter(|item| is_record(item)) {
                let other = named(&mut tokenizer, item);
                if other.len() >= own.len() + MORE_NAMED && other.is_superset(&own) {
                    return true;
                }
                if !own_label_asked
                    && item.trim() != line
                    && label_is_asked(&mut tokenizer, question, &asked, &place, item)
                {
                    return true;
                }
            }
        }
    }
    false
}

/// What a source's label and the headings in its passage say, which every record under them
/// shares: a question naming it names none of the records ("the bathroom" of "Bathroom
/// renovation", beside the row `| Hallam Bathrooms |`).
struct Place {
    text: String,
    terms: BTreeSet<String>,
}

impl Place {
    fn of(tokenizer: &mut Tokenizer, source: &Source) -> Place {
        let headings = source
            .passage
            .lines()
            .filter_map(|line| line.trim().strip_prefix('#'));
        let text = std::iter::once(source.label().as_str())
            .chain(headings)
            .collect::<Vec<_>>()
            .join("\n");
        let terms = tokenizer.query_terms(&text).into_iter().collect();
        Place { text, terms }
    }
}

/// Whether `question` names the label of the record `item` ([`record_label`]) by a term it
/// asks about (`asked`: [`terms_asked_about`]) or, for a label in Chinese, Japanese or Korean
/// script, by writing it (a label of one character, `回`, is no search term of its own), other
/// than by what `place` says of every record.
fn label_is_asked(
    tokenizer: &mut Tokenizer,
    question: &str,
    asked: &BTreeSet<String>,
    place: &Place,
    item: &str,
) -> bool {
    let Some(label) = record_label(item) else {
        return false;
    };
    let written =
        label.chars().all(is_cjk) && question.contains(label) && !place.text.contains(label);
    written
        || tokenizer
            .query_terms(label)
            .iter()
            .any(|term| asked.contains(term) && !place.terms.contains(term))
}

/// Matches a list item opening with a label of up to three words and a colon; the label is
/// its first group.
static LABELLED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[.\]\s+)?\**([^\s:：*]+(?:\s[^\s:：*]+){0,2})\**\s*[:：]",
    )
    .expect("valid regex")
});

/// Whether `item` is a record of a kind: a table's row, or a list item opening with a label
/// of up to three words and a colon (`- OUT: …`, `- 去：…`, `- price:: 9.99`, `- 09:00 …`).
fn is_record(item: &str) -> bool {
    item.trim_start().starts_with('|') || LABELLED.is_match(item)
}

/// What a record says it is: a table row's first cell, or a list item's words before its
/// colon (`OUT`, `去`); `None` for no record or an empty first cell.
pub(super) fn record_label(item: &str) -> Option<&str> {
    let label = match item.trim().strip_prefix('|') {
        Some(row) => row.split('|').next().map(str::trim),
        None => LABELLED
            .captures(item)
            .and_then(|record| record.get(1))
            .map(|label| label.as_str().trim()),
    };
    label.filter(|label| !label.is_empty())
}

/// The lists and tables of `passage`, each as its items or rows (a table without its header
/// and rule): runs of lines at one indent that [`item_indent`] reads as items. A deeper item
/// belongs to the one above it and is left out.
fn item_runs(passage: &str) -> Vec<Vec<&str>> {
    let mut runs: Vec<Vec<&str>> = Vec::new();
    let mut open: Option<&str> = None;
    for line in passage.lines() {
        match (item_indent(line), open) {
            (Some(indent), Some(outer)) if indent.len() > outer.len() => {}
            (Some(indent), Some(outer)) if indent == outer => {
                if let Some(run) = runs.last_mut() {
                    run.push(line);
                }
            }
            (Some(indent), _) => {
                runs.push(vec![line]);
                open = Some(indent);
            }
            (None, _) => open = None,
        }
    }
    for run in &mut runs {
        let is_rule = |row: &str| row.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
        if run.len() > 1 && is_rule(run[1].trim()) {
            run.drain(..2);
        }
    }
    runs
}
