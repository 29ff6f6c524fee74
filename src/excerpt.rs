//! The part of a passage that bears on a question: what the model is shown of a search hit.
//!
//! A small model reads every token of its prompt before it writes the first word of an answer,
//! and most of the answer prompt is its sources. A passage is a whole section (up to 800
//! characters), while the fact asked for is usually one sentence or one line of it. So each
//! passage is cut into units (lines, and the sentences of a line) and the units that share the
//! most telling words with the question are kept, in their order, with the unit after each
//! (a "To do this:" line is followed by its steps), up to a bound in characters per passage and
//! one for all the passages together, for which the units of every passage compete by score; an
//! ellipsis stands where text was left out. Words are read as the vault's search reads them
//! ([`Tokenizer::query_terms`]: stemmed, stop words out, CJK as bigrams), and weighted by how
//! few units of the search's passages hold them, so a word every passage has (the app's name)
//! picks nothing out. A passage sharing no word with the question keeps its opening.
//!
//! The cut is only what the model reads: the whole passage stays in [`crate::sources::Source`]
//! for the quote a person is shown, and `read_note` still reads the note whole.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use obsidian_kb::search::Tokenizer;

/// What stands where text was left out.
const ELLIPSIS: &str = "…";

/// How many characters of a search's passages the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds<'a> {
    /// All passages together.
    pub total: usize,
    /// One passage, by rank (the last bound for passages past the end).
    pub each: &'a [usize],
}

impl Bounds<'_> {
    fn each(&self, rank: usize) -> usize {
        self.each
            .get(rank)
            .or(self.each.last())
            .copied()
            .unwrap_or(usize::MAX)
    }
}

/// The parts of `passages` (best first) that bear on `question`, within `bounds`. Units compete
/// for the total across passages, so a passage that only shares a common word with the question
/// gives its room to one that holds the answer; yet each passage keeps its best unit (or its
/// opening), so the model still sees what every source is about. A passage kept whole is shown
/// as it is.
pub fn excerpts(question: &str, passages: &[&str], bounds: Bounds) -> Vec<String> {
    let mut tokenizer = Tokenizer::default();
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
    let scores: Vec<Vec<f32>> = units
        .iter()
        .map(|units| {
            units
                .iter()
                .map(|u| u.terms.iter().map(|t| weight(t)).sum())
                .collect()
        })
        .collect();
    let mut choice = Choice::new(passages, &units, bounds);
    // Each passage's best unit first, best passage first: every source says what it is about.
    // A passage sharing no word with the question shows its opening, as a section starts with
    // what it is about.
    let mut leads = Vec::new();
    for (p, scores) in scores.iter().enumerate() {
        let best = (0..scores.len())
            .filter(|&u| scores[u] > 0.0)
            .max_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(b.cmp(&a)));
        let lead = best.unwrap_or(0);
        if !units[p].is_empty() && !choice.keep(p, lead) {
            choice.cut_lead(p, lead);
        }
        leads.push(best);
    }
    // Then every other unit holding an asked word, best first over all passages (between
    // equals, the better passage's, then the earlier).
    let mut order: Vec<(usize, usize)> = scores
        .iter()
        .enumerate()
        .flat_map(|(p, s)| {
            (0..s.len())
                .filter(move |&u| s[u] > 0.0)
                .map(move |u| (p, u))
        })
        .collect();
    order.sort_by(|&(pa, ua), &(pb, ub)| {
        scores[pb][ub]
            .total_cmp(&scores[pa][ua])
            .then(pa.cmp(&pb))
            .then(ua.cmp(&ub))
    });
    for &(p, u) in &order {
        choice.keep(p, u);
    }
    // Then what follows a kept match: context, not evidence (a "To do this:" line, its steps).
    for &(p, u) in &order {
        if choice.kept[p][u] && u + 1 < units[p].len() {
            choice.keep(p, u + 1);
        }
    }
    // A passage whose rest fits is shown whole: an ellipsis there would save next to nothing.
    for (p, passage_units) in units.iter().enumerate() {
        let rest: Vec<usize> = (0..passage_units.len())
            .filter(|&u| !choice.kept[p][u])
            .collect();
        let cost: usize = rest.iter().map(|&u| choice.cost(p, u)).sum();
        if choice.cut[p].is_none() && cost <= choice.room(p) {
            for u in rest {
                choice.keep(p, u);
            }
        }
    }
    // Last, openings go on where no word matched.
    for (p, lead) in leads.iter().enumerate() {
        if lead.is_none() {
            for u in 1..units[p].len() {
                if !choice.keep(p, u) {
                    break;
                }
            }
        }
    }
    passages
        .iter()
        .enumerate()
        .map(|(p, passage)| match &choice.cut[p] {
            Some(cut) => cut.clone(),
            None if units[p].is_empty() => passage.trim().to_string(),
            None => render(passage, &units[p], &choice.kept[p]),
        })
        .collect()
}

/// A unit of a passage and the asked terms it holds.
struct Unit {
    span: Range<usize>,
    terms: HashSet<String>,
}

/// The units kept so far, and the room they take.
struct Choice<'a> {
    passages: &'a [&'a str],
    units: &'a [Vec<Unit>],
    bounds: Bounds<'a>,
    kept: Vec<Vec<bool>>,
    /// A passage whose lead alone is over its room: the lead's start, cut at a word.
    cut: Vec<Option<String>>,
    used: Vec<usize>,
    total: usize,
}

impl<'a> Choice<'a> {
    fn new(passages: &'a [&'a str], units: &'a [Vec<Unit>], bounds: Bounds<'a>) -> Choice<'a> {
        Choice {
            passages,
            units,
            bounds,
            kept: units.iter().map(|u| vec![false; u.len()]).collect(),
            cut: vec![None; units.len()],
            used: vec![0; units.len()],
            total: 0,
        }
    }

    /// A unit's characters, and one for its join to the next.
    fn cost(&self, p: usize, u: usize) -> usize {
        self.passages[p][self.units[p][u].span.clone()]
            .chars()
            .count()
            + 1
    }

    /// The room left to passage `p`.
    fn room(&self, p: usize) -> usize {
        let each = self.bounds.each(p).saturating_sub(self.used[p]);
        each.min(self.bounds.total.saturating_sub(self.total))
    }

    /// Keeps unit `u` of passage `p` if it fits; true when it is kept.
    fn keep(&mut self, p: usize, u: usize) -> bool {
        if self.cut[p].is_some() {
            return false;
        }
        if self.kept[p][u] {
            return true;
        }
        let cost = self.cost(p, u);
        if cost > self.room(p) {
            return false;
        }
        self.kept[p][u] = true;
        self.used[p] += cost;
        self.total += cost;
        true
    }

    /// Shows the start of unit `u` of passage `p`, cut at a word to the room left (at least a
    /// few words, so that the source still says something), and nothing more of it.
    fn cut_lead(&mut self, p: usize, u: usize) {
        const FEWEST: usize = 40;
        let room = self.room(p).max(FEWEST.min(self.bounds.each(p)));
        let text = &self.passages[p][self.units[p][u].span.clone()];
        let head = cut_at_word(text, room);
        let chars = head.chars().count() + 1;
        self.used[p] += chars;
        self.total += chars;
        self.cut[p] = Some(format!("{head}{ELLIPSIS}"));
    }
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

    fn each(each: &[usize]) -> Bounds<'_> {
        Bounds {
            total: usize::MAX,
            each,
        }
    }

    const RECOVERY: &str = "File recovery is a core plugin. It keeps copies of your notes.\n\
        Snapshots are taken every 5 minutes, and kept for 7 days by default.\n\
        To restore a snapshot:\n\
        1. Open Settings.\n\
        2. Select File recovery.\n\
        Snapshots are stored outside the vault, in the app's data folder.";

    #[test]
    fn a_passage_within_its_bound_is_kept_whole() {
        let cut = excerpts("how often are snapshots taken?", &[RECOVERY], each(&[1000]));
        assert_eq!(cut, vec![RECOVERY.to_string()]);
    }

    #[test]
    fn the_matching_units_are_kept_in_order_with_an_ellipsis_where_text_was_left_out() {
        let cut = excerpts("How long are snapshots kept?", &[RECOVERY], each(&[140]));
        assert_eq!(
            cut[0],
            "…\nSnapshots are taken every 5 minutes, and kept for 7 days by default.\n\
             To restore a snapshot:\n1. Open Settings.\n…"
        );
    }

    #[test]
    fn a_lead_in_line_brings_the_line_after_it() {
        let cut = excerpts("how do I restore a snapshot", &[RECOVERY], each(&[60]));
        assert_eq!(cut[0], "…\nTo restore a snapshot:\n1. Open Settings.\n…");
    }

    #[test]
    fn a_word_every_unit_holds_picks_nothing_out() {
        let passages = [
            "Obsidian stores notes.\nObsidian syncs. Obsidian has themes with dark colours.",
            "Obsidian runs plugins.",
        ];
        let cut = excerpts("obsidian dark themes", &passages, each(&[40, 40]));
        assert_eq!(cut[0], "… Obsidian has themes with dark colours.");
        assert_eq!(cut[1], "Obsidian runs plugins.");
    }

    #[test]
    fn passages_share_one_total_and_the_answer_gets_the_room() {
        let other = "Canvas is a core plugin. It lays notes out on a board.\n\
            Cards can be grouped. Snapshots of a canvas are not taken.";
        let total = 180;
        let cut = excerpts(
            "How long are snapshots kept, and where are they stored?",
            &[other, RECOVERY],
            Bounds {
                total,
                each: &[400],
            },
        );
        // The other passage keeps only its best unit; the rest goes to the one with the answer.
        assert_eq!(cut[0], "… Snapshots of a canvas are not taken.");
        assert_eq!(
            cut[1],
            "…\nSnapshots are taken every 5 minutes, and kept for 7 days by default.\n…\n\
             Snapshots are stored outside the vault, in the app's data folder."
        );
        let shown: usize = cut.iter().map(|c| c.chars().count()).sum();
        assert!(shown <= total + 2 * 4, "{shown}");
    }

    #[test]
    fn a_passage_sharing_no_word_keeps_its_opening() {
        let cut = excerpts("what is a canvas?", &[RECOVERY], each(&[70]));
        assert_eq!(
            cut[0],
            "File recovery is a core plugin. It keeps copies of your notes.\n…"
        );
    }

    #[test]
    fn a_unit_longer_than_the_bound_is_cut_at_a_word() {
        let long =
            "Snapshots are taken every five minutes while the app is open and kept for a week.";
        let cut = excerpts("snapshots", &[long], each(&[30]));
        assert_eq!(cut[0], "Snapshots are taken every five…");
    }

    #[test]
    fn cjk_sentences_are_units_and_matched_by_bigrams() {
        let passage = "文件恢复是核心插件。快照每五分钟保存一次。快照保留七天。";
        let cut = excerpts("快照保留多久", &[passage], each(&[10]));
        assert_eq!(cut[0], "… 快照保留七天。");
    }
}
