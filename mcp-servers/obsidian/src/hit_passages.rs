//! Which passages of a note a search hit shows, and in which order: cut at query time, for the
//! few notes shown only, so indexing costs nothing more. Pure.

use crate::index::{HitPassage, NoteEntry};
use crate::search::{self, Tokenizer};

/// The heading paths and texts of `e`'s `count` passages that best match the query `terms`
/// (weighted by `weights`), best first; one passage with empty text for a note without text.
/// Passages are cut at query time, for the few notes shown only, so indexing costs nothing more.
///
/// Words choose first where they can: on the Obsidian help questions, the passage the query's
/// words favour held an answer keyword more often than the one most similar in meaning, or any
/// blend of the two (measured with all-MiniLM-L6-v2). Then comes the note's opening, then
/// the two rankings in turn (the best by meaning, the second by words, …), so further passages
/// bring what words alone would miss: on the help questions, with 3 passages of the top 3
/// notes, an answer keyword is in the passages for 31 of 43 (29 without the opening). A note
/// whose passages share no word with the query (found by meaning, or by its title or tags) is
/// ranked by meaning alone; without `similarities` (each passage's, in note order) such a note
/// gives its passages in order.
pub(crate) fn best_passages(
    e: &NoteEntry,
    tok: &mut Tokenizer,
    terms: &[String],
    weights: &[f32],
    similarities: Option<&[Option<f32>]>,
    count: usize,
) -> Vec<HitPassage> {
    let body = e.body();
    let headings = &e.parsed.headings;
    let passages = e.passages();
    if passages.is_empty() {
        return vec![HitPassage {
            heading_path: Vec::new(),
            text: String::new(),
        }];
    }
    let by_words = search::passage_scores(
        tok,
        terms,
        weights,
        passages
            .iter()
            .map(|p| (p.heading_path(headings), p.text(body))),
    );
    let similarities = similarities.filter(|s| s.len() == passages.len());
    passage_order(&by_words, similarities, count)
        .into_iter()
        .map(|i| {
            let (heading_path, text) = e.passage_parts(&passages[i]);
            HitPassage { heading_path, text }
        })
        .collect()
}

/// The order in which a note's passages are shown, `count` at most: the best by words (a
/// positive score in `by_words`; else by meaning), the note's opening, then the best by
/// meaning (`similarities`, one per passage), the second by words, and so on; then the rest in
/// note order.
fn passage_order(
    by_words: &[f32],
    similarities: Option<&[Option<f32>]>,
    count: usize,
) -> Vec<usize> {
    let words = ranked(by_words.iter().map(|&s| Some(s).filter(|s| *s > 0.0)));
    let meaning = similarities
        .map(|s| ranked(s.iter().copied()))
        .unwrap_or_default();
    let alternating = (0..words.len().max(meaning.len()))
        .flat_map(|k| [words.get(k), meaning.get(k)])
        .flatten()
        .copied();
    // The note's opening comes second: it usually says what the note is about, often with
    // the figure a question wants ("40% off", "25 or more licenses").
    let first = alternating.clone().take(1);
    let mut order: Vec<usize> = Vec::with_capacity(count);
    for i in first.chain([0]).chain(alternating).chain(0..by_words.len()) {
        if order.len() == count {
            break;
        }
        if !order.contains(&i) {
            order.push(i);
        }
    }
    order
}

/// Indices of the scored items, highest score first, ties to the earlier; unscored ones left
/// out.
fn ranked(scores: impl Iterator<Item = Option<f32>>) -> Vec<usize> {
    let mut scored: Vec<(usize, f32)> = scores
        .enumerate()
        .filter_map(|(i, s)| Some((i, s?)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_passage_comes_first_then_the_opening_then_both_rankings_in_turn() {
        let words = [0.0, 3.0, 1.0, 0.0, 2.0];
        let meaning = [Some(0.3), Some(0.8), None, Some(0.1), Some(0.9)];
        // Words' best, the opening, meaning's best, words' second, meaning's next unseen, …
        assert_eq!(passage_order(&words, Some(&meaning), 1), [1]);
        assert_eq!(passage_order(&words, Some(&meaning), 3), [1, 0, 4]);
        assert_eq!(passage_order(&words, Some(&meaning), 9), [1, 0, 4, 2, 3]);
        // Words alone: their best, the opening, then the rest of their ranking.
        assert_eq!(passage_order(&words, None, 4), [1, 0, 4, 2]);
        // No word matches: meaning's best, the opening, meaning's next; neither: note order.
        assert_eq!(passage_order(&[0.0; 5], Some(&meaning), 3), [4, 0, 1]);
        assert_eq!(passage_order(&[0.0; 3], None, 2), [0, 1]);
        // Ties go to the earlier passage.
        assert_eq!(passage_order(&[1.0, 1.0], None, 1), [0]);
    }
}
