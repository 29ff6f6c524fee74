//! The order in which a search hit shows its note's passages: the best by words, the note's
//! opening, then the meaning and the words rankings in turn. Pure: scores in, indices out.

/// The order in which a note's passages are shown, `count` at most: the best by words (a
/// positive score in `by_words`; else by meaning), the note's opening, then the best by
/// meaning (`similarities`, one per passage), the second by words, and so on; then the rest in
/// note order.
pub(crate) fn passage_order(
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
