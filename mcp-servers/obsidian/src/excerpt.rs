//! The part of a passage that bears on a question: what a model is shown of a search hit.
//!
//! A small model reads every token of its prompt before it writes the first word of an answer,
//! and most of an answer prompt is its sources. A passage is a whole section (up to 800
//! characters), while the fact asked for is usually one sentence or one line of it. So each
//! passage is cut into units (lines, and the sentences of a line) and the units that bear most
//! on the question are kept, in their order, with the unit after each (a "To do this:" line is
//! followed by its steps), up to a bound in characters; an ellipsis stands where text was left
//! out.
//!
//! A unit bears on the question by its words and, where the caller has them, by its meaning.
//! Words are read as the search reads them ([`Tokenizer::query_terms`]: stemmed, stop words
//! out, CJK as bigrams), and weighted by how few units of the search's passages hold them, so a
//! word every passage has (the app's name) picks nothing out. Meaning is each unit's embedding
//! similarity to the question ([`units`] says what to embed): a unit more like the question than
//! its passage's average gains up to as much as the passage's best unit by words, so a question
//! in other words than the note's still finds its sentence. A passage sharing nothing with the
//! question keeps its opening.
//!
//! The cut is only what a model reads: the whole passage stays in the search hit.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::search::Tokenizer;

/// What stands where text was left out.
const ELLIPSIS: &str = "…";

/// How much the unit most like the question in meaning gains, as a share of the passage's
/// best score by words. 0.5 and 2 kept as many answer keywords in view on the help questions.
const MEANING_WEIGHT: f32 = 1.0;

/// The units of `passage` that [`excerpts`] weighs, in order: the texts whose similarity to
/// the question it takes as `meaning`.
pub fn units(passage: &str) -> Vec<&str> {
    split_units(passage)
        .into_iter()
        .map(|span| &passage[span])
        .collect()
}

/// The parts of `passages` that bear on `question`, each at most `bounds[i]` characters (the
/// last bound for passages past the end of `bounds`); a passage within its bound is kept whole.
/// `meaning`, where given, holds one row per passage: each of its [`units`]' similarity to the
/// question (a row of another length is ignored). Words are read by `tokenizer`, the index's
/// ([`crate::index::VaultIndex::tokenizer`]).
pub fn excerpts(
    question: &str,
    passages: &[&str],
    bounds: &[usize],
    meaning: Option<&[Vec<f32>]>,
    mut tokenizer: Tokenizer,
) -> Vec<String> {
    let asked: HashSet<String> = tokenizer.query_terms(question).into_iter().collect();
    let units: Vec<Vec<Unit>> = passages
        .iter()
        .map(|p| {
            split_units(p)
                .into_iter()
                .map(|span| {
                    let terms = tokenizer
                        .query_terms(&p[span.clone()])
                        .into_iter()
                        .filter(|t| asked.contains(t))
                        .collect();
                    Unit { span, terms }
                })
                .collect()
        })
        .collect();
    // How many units hold each asked term, over every passage of the search.
    let mut holders: HashMap<&str, usize> = HashMap::new();
    for unit in units.iter().flatten() {
        for term in &unit.terms {
            *holders.entry(term.as_str()).or_default() += 1;
        }
    }
    let all = units.iter().map(Vec::len).sum::<usize>().max(1) as f32;
    let weight = |term: &str| (1.0 + all / holders.get(term).copied().unwrap_or(1) as f32).ln();
    passages
        .iter()
        .zip(&units)
        .enumerate()
        .map(|(i, (passage, units))| {
            let bound = bounds
                .get(i)
                .or(bounds.last())
                .copied()
                .unwrap_or(usize::MAX);
            let mut scores: Vec<f32> = units
                .iter()
                .map(|u| u.terms.iter().map(|t| weight(t)).sum())
                .collect();
            let similarities = meaning
                .and_then(|rows| rows.get(i))
                .filter(|row| row.len() == units.len());
            if let Some(similarities) = similarities {
                add_meaning(&mut scores, similarities);
            }
            cut(passage, units, &scores, bound)
        })
        .collect()
}

/// Adds to each unit's word score its credit by meaning: nothing at or below the passage's
/// average similarity, rising to the passage's best word score (at least 1) for its most
/// similar unit.
fn add_meaning(scores: &mut [f32], similarities: &[f32]) {
    let n = similarities.len() as f32;
    let mean = similarities.iter().sum::<f32>() / n;
    let best = similarities.iter().copied().fold(f32::MIN, f32::max);
    if best - mean <= f32::EPSILON {
        return;
    }
    let scale = scores.iter().copied().fold(0.0, f32::max).max(1.0) * MEANING_WEIGHT;
    for (score, s) in scores.iter_mut().zip(similarities) {
        *score += scale * ((s - mean) / (best - mean)).max(0.0);
    }
}

/// A unit of a passage and the asked terms it holds.
struct Unit {
    span: Range<usize>,
    terms: HashSet<String>,
}

/// `passage` cut to its best units within `bound` characters.
fn cut(passage: &str, units: &[Unit], scores: &[f32], bound: usize) -> String {
    let trimmed = passage.trim();
    if trimmed.chars().count() <= bound || units.is_empty() {
        return trimmed.to_string();
    }
    // A unit's characters, and one for its join to the next.
    let cost = |i: usize| passage[units[i].span.clone()].chars().count() + 1;
    let mut order: Vec<usize> = (0..units.len()).filter(|&i| scores[i] > 0.0).collect();
    // Best first; between equals, the earlier.
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    // Each unit's follower comes after every scored unit: context, not evidence.
    let followers: Vec<usize> = order
        .iter()
        .map(|&i| i + 1)
        .filter(|&i| i < units.len())
        .collect();
    order.extend(followers);
    let mut kept = vec![false; units.len()];
    let mut used = 0;
    if order.is_empty() {
        // No word in common (a question in other words): the opening, as a section starts with
        // what it is about.
        for (i, keep) in kept.iter_mut().enumerate() {
            if used + cost(i) > bound {
                break;
            }
            *keep = true;
            used += cost(i);
        }
    }
    for i in order {
        if !kept[i] && used + cost(i) <= bound {
            kept[i] = true;
            used += cost(i);
        }
    }
    if !kept.contains(&true) {
        // Even the best unit is over the bound: its start, cut at a word.
        let best = scores
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
            .map_or(0, |(i, _)| i);
        return format!(
            "{}{ELLIPSIS}",
            cut_at_word(&passage[units[best].span.clone()], bound)
        );
    }
    render(passage, units, &kept)
}

/// The kept units in order: runs of neighbours as the passage has them, an ellipsis between
/// runs (on a line of its own where the gap held a line break) and at a cut end.
fn render(passage: &str, units: &[Unit], kept: &[bool]) -> String {
    let mut out = String::new();
    let mut last_end: Option<usize> = None;
    let first = kept.iter().position(|&k| k).unwrap_or(0);
    if first > 0 {
        out.push_str(ELLIPSIS);
        out.push(gap_separator(
            &passage[units[first - 1].span.end..units[first].span.start],
        ));
    }
    for (i, unit) in units.iter().enumerate() {
        if !kept[i] {
            continue;
        }
        match last_end {
            Some(end) if i > 0 && kept[i - 1] => out.push_str(&passage[end..unit.span.start]),
            Some(end) => {
                let gap = &passage[end..unit.span.start];
                let sep = gap_separator(gap);
                out.push(sep);
                out.push_str(ELLIPSIS);
                out.push(sep);
            }
            None => {}
        }
        out.push_str(&passage[unit.span.clone()]);
        last_end = Some(unit.span.end);
    }
    if kept.last() == Some(&false) {
        let end = last_end.unwrap_or(0);
        let next = kept.iter().rposition(|&k| k).map_or(0, |i| i + 1);
        out.push(gap_separator(&passage[end..units[next].span.start]));
        out.push_str(ELLIPSIS);
    }
    out
}

/// A line break where the text left out held one, else a space.
fn gap_separator(gap: &str) -> char {
    if gap.contains('\n') { '\n' } else { ' ' }
}

/// The units of a passage: its non-blank lines, each cut into sentences (after `.`, `!` or `?`
/// and a space, or after a CJK full stop), as byte ranges without their surrounding blanks.
fn split_units(passage: &str) -> Vec<Range<usize>> {
    let mut units = Vec::new();
    let mut line_start = 0;
    for line in passage.split_inclusive('\n') {
        let mut start = line_start;
        let mut chars = line.char_indices().peekable();
        let mut before = ' ';
        while let Some((at, c)) = chars.next() {
            let ends = match c {
                // Not a list's `1. `.
                '.' | '!' | '?' => {
                    !before.is_ascii_digit() && chars.peek().is_some_and(|&(_, next)| next == ' ')
                }
                '。' | '！' | '？' => true,
                _ => false,
            };
            if ends {
                let end = line_start + at + c.len_utf8();
                push_trimmed(&mut units, passage, start..end);
                start = end;
            }
            before = c;
        }
        push_trimmed(&mut units, passage, start..line_start + line.len());
        line_start += line.len();
    }
    units
}

fn push_trimmed(units: &mut Vec<Range<usize>>, text: &str, span: Range<usize>) {
    let piece = &text[span.clone()];
    let start = span.start + (piece.len() - piece.trim_start().len());
    let end = span.start + piece.trim_end().len();
    if start < end {
        units.push(start..end);
    }
}

/// At most `bound` characters of `text`, ended at a space where there is one.
fn cut_at_word(text: &str, bound: usize) -> &str {
    let end = text
        .char_indices()
        .nth(bound)
        .map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    if text[end..].chars().next().is_none_or(char::is_whitespace) {
        return head;
    }
    match head.rfind(' ') {
        Some(space) if space > 0 => head[..space].trim_end(),
        _ => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECOVERY: &str = "File recovery is a core plugin. It keeps copies of your notes.\n\
        Snapshots are taken every 5 minutes, and kept for 7 days by default.\n\
        To restore a snapshot:\n\
        1. Open Settings.\n\
        2. Select File recovery.\n\
        Snapshots are stored outside the vault, in the app's data folder.";

    #[test]
    fn a_passage_within_its_bound_is_kept_whole() {
        let cut = excerpts(
            "how often are snapshots taken?",
            &[RECOVERY],
            &[1000],
            None,
            Tokenizer::default(),
        );
        assert_eq!(cut, vec![RECOVERY.to_string()]);
    }

    #[test]
    fn the_matching_units_are_kept_in_order_with_an_ellipsis_where_text_was_left_out() {
        let cut = excerpts(
            "How long are snapshots kept?",
            &[RECOVERY],
            &[140],
            None,
            Tokenizer::default(),
        );
        assert_eq!(
            cut[0],
            "…\nSnapshots are taken every 5 minutes, and kept for 7 days by default.\n\
             To restore a snapshot:\n1. Open Settings.\n…"
        );
    }

    #[test]
    fn a_lead_in_line_brings_the_line_after_it() {
        let cut = excerpts(
            "how do I restore a snapshot",
            &[RECOVERY],
            &[60],
            None,
            Tokenizer::default(),
        );
        assert_eq!(cut[0], "…\nTo restore a snapshot:\n1. Open Settings.\n…");
    }

    #[test]
    fn a_word_every_unit_holds_picks_nothing_out() {
        let passages = [
            "Obsidian stores notes.\nObsidian syncs. Obsidian has themes with dark colours.",
            "Obsidian runs plugins.",
        ];
        let cut = excerpts(
            "obsidian dark themes",
            &passages,
            &[40, 40],
            None,
            Tokenizer::default(),
        );
        assert_eq!(cut[0], "… Obsidian has themes with dark colours.");
        assert_eq!(cut[1], "Obsidian runs plugins.");
    }

    #[test]
    fn a_passage_sharing_no_word_keeps_its_opening() {
        let cut = excerpts(
            "what is a canvas?",
            &[RECOVERY],
            &[70],
            None,
            Tokenizer::default(),
        );
        assert_eq!(
            cut[0],
            "File recovery is a core plugin. It keeps copies of your notes.\n…"
        );
    }

    #[test]
    fn a_unit_longer_than_the_bound_is_cut_at_a_word() {
        let long =
            "Snapshots are taken every five minutes while the app is open and kept for a week.";
        let cut = excerpts("snapshots", &[long], &[30], None, Tokenizer::default());
        assert_eq!(cut[0], "Snapshots are taken every five…");
    }

    #[test]
    fn meaning_brings_the_sentence_in_other_words() {
        let question = "How frequently does it save?";
        let units = units(RECOVERY);
        assert_eq!(
            units[2],
            "Snapshots are taken every 5 minutes, and kept for 7 days by default."
        );
        let mut similarities = vec![0.1; units.len()];
        similarities[2] = 0.6;
        let by_words = excerpts(question, &[RECOVERY], &[80], None, Tokenizer::default());
        assert_eq!(
            by_words[0],
            "File recovery is a core plugin. It keeps copies of your notes.\n…"
        );
        let by_meaning = excerpts(
            question,
            &[RECOVERY],
            &[80],
            Some(&[similarities]),
            Tokenizer::default(),
        );
        assert_eq!(
            by_meaning[0],
            "…\nSnapshots are taken every 5 minutes, and kept for 7 days by default.\n…"
        );
        // Similarities for other units than the passage's are not used.
        let wrong = excerpts(
            question,
            &[RECOVERY],
            &[80],
            Some(&[vec![0.9, 0.1]]),
            Tokenizer::default(),
        );
        assert_eq!(wrong, by_words);
    }

    #[test]
    fn cjk_sentences_are_units_and_matched_by_bigrams() {
        let passage = "文件恢复是核心插件。快照每五分钟保存一次。快照保留七天。";
        let cut = excerpts(
            "快照保留多久",
            &[passage],
            &[10],
            None,
            Tokenizer::default(),
        );
        assert_eq!(cut[0], "… 快照保留七天。");
    }
}
