//! A note cut into the parts a summary reads one generation at a time, and how many points
//! each part is worth. A long note's parts are its top-level sections (the highest heading
//! level it uses below a lone `# Title`; the text before the first heading is a section of its
//! own): a section too long is cut at its own subheadings (then between paragraphs), and small
//! neighbours are put together. A part is worth about one point per [`WORDS_PER_POINT`] words
//! of prose, at least one per top-level section it holds, at most [`MAX_PART_POINTS`]. Pure:
//! tested without a model.

use std::ops::Range;

use super::chunk::{block_heading, blocks, prose_lines};

/// About one point per this many words of prose (code blocks aside).
pub(super) const WORDS_PER_POINT: usize = 150;
/// Most points one part of a long note gives.
pub(super) const MAX_PART_POINTS: usize = 4;
/// A note of more words than this is summarized part by part; a shorter one in one generation
/// of up to seven points (what one generation of a small model covers well).
pub(super) const LONG_NOTE_WORDS: usize = 900;
/// In a summary of several notes, about one point per this many words of a note's prose.
pub(super) const NOTE_WORDS_PER_POINT: usize = 300;
/// Most points one note of several gives.
pub(super) const MAX_NOTE_POINTS: usize = 3;

/// A section of fewer words than this is put together with a neighbour...
const SMALL_WORDS: usize = 40;
/// ...as long as the two hold at most this many words. A part of several sections gives
/// most of its points to its first (measured: in Canvas, the opening and "Create a new canvas"
/// put together gave two points on the opening), so only the smallest are put together.
const MERGE_WORDS: usize = 200;
/// A section of more words than this is cut at its subheadings (or between paragraphs).
const MAX_PART_WORDS: usize = 450;

/// A note's paragraphs ([`blocks`]) and its top-level sections.
#[derive(Debug)]
pub(super) struct Outline {
    /// The paragraphs, a heading starting each section.
    pub(super) blocks: Vec<String>,
    /// Each top-level section that holds words, as a range of `blocks`, in order.
    pub(super) sections: Vec<Range<usize>>,
}

/// One part of a note: whole paragraphs, from one or more top-level sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Part {
    /// The paragraphs it holds (a range of [`Outline::blocks`]).
    pub(super) blocks: Range<usize>,
    /// The top-level sections it holds or holds some of (a range of [`Outline::sections`]).
    pub(super) sections: Range<usize>,
    /// Its words, headings aside.
    pub(super) words: usize,
    /// How many points it is worth.
    pub(super) points: usize,
}

/// Words of `block` outside its heading line: all of them, and those outside code blocks.
fn block_words(block: &str) -> (usize, usize) {
    let lines = || {
        block
            .lines()
            .skip(usize::from(block_heading(block).is_some()))
    };
    let all = lines().map(|l| l.split_whitespace().count()).sum();
    let prose = prose_lines(block)
        .skip(usize::from(block_heading(block).is_some()))
        .map(|l| l.split_whitespace().count())
        .sum();
    (all, prose)
}

impl Outline {
    /// Cuts `text` into paragraphs and top-level sections.
    pub(super) fn new(text: &str) -> Outline {
        let blocks = blocks(text);
        let levels: Vec<Option<usize>> = blocks
            .iter()
            .map(|b| block_heading(b).map(|(level, _)| level))
            .collect();
        // A lone level-1 heading opening the note is its title, not a section.
        let title = levels.first() == Some(&Some(1))
            && levels.iter().filter(|l| **l == Some(1)).count() == 1;
        let top = levels
            .iter()
            .skip(usize::from(title))
            .flatten()
            .min()
            .copied();
        let mut starts: Vec<usize> = (usize::from(title)..blocks.len())
            .filter(|&i| levels[i].is_some() && levels[i] == top)
            .collect();
        if starts.first() != Some(&0) {
            starts.insert(0, 0);
        }
        let mut outline = Outline {
            blocks,
            sections: Vec::new(),
        };
        let ends = starts.iter().skip(1).copied().chain([outline.blocks.len()]);
        outline.sections = starts
            .iter()
            .zip(ends)
            .map(|(&start, end)| start..end)
            .filter(|range| outline.words(range.clone()).0 > 0)
            .collect();
        outline
    }

    /// Words of the paragraphs in `range`, headings aside: all, and outside code blocks.
    fn words(&self, range: Range<usize>) -> (usize, usize) {
        self.blocks[range]
            .iter()
            .map(|b| block_words(b))
            .fold((0, 0), |(a, p), (ba, bp)| (a + ba, p + bp))
    }

    /// The text of the paragraphs in `range`.
    pub(super) fn text(&self, range: Range<usize>) -> String {
        self.blocks[range].join("\n\n")
    }

    /// The heading a top-level section opens with; `None` for the text before the first one.
    pub(super) fn heading(&self, section: usize) -> Option<&str> {
        let block = &self.blocks[self.sections[section].start];
        block_heading(block).map(|(_, text)| text)
    }

    /// Every heading of the note, any level, in order.
    pub(super) fn headings(&self) -> Vec<&str> {
        self.blocks
            .iter()
            .filter_map(|b| block_heading(b).map(|(_, text)| text))
            .collect()
    }

    /// The top-level section paragraph `block` is in, if any.
    pub(super) fn section_of(&self, block: usize) -> Option<usize> {
        self.sections.iter().position(|s| s.contains(&block))
    }

    /// The parts a long note is read in: each top-level section, a long one cut at its
    /// subheadings (then between paragraphs) into pieces of at most `MAX_PART_WORDS` words
    /// where it can be, and a small one put together with a neighbour.
    pub(super) fn parts(&self) -> Vec<Part> {
        let mut pieces = Vec::new();
        for section in &self.sections {
            self.split(section.clone(), &mut pieces);
        }
        let mut merged: Vec<Range<usize>> = Vec::new();
        for piece in pieces {
            match merged.last_mut() {
                Some(last) if self.mergeable(last.clone(), piece.clone()) => last.end = piece.end,
                _ => merged.push(piece),
            }
        }
        merged
            .into_iter()
            .map(|blocks| {
                let first = self.section_of(blocks.start).unwrap_or(0);
                let last = self.section_of(blocks.end - 1).unwrap_or(first);
                let (words, prose) = self.words(blocks.clone());
                let sections = first..last + 1;
                let points = points_for(prose, WORDS_PER_POINT, sections.len(), MAX_PART_POINTS);
                Part {
                    blocks,
                    sections,
                    words,
                    points,
                }
            })
            .collect()
    }

    /// Two neighbouring pieces are put together when one is small and both are not large.
    fn mergeable(&self, a: Range<usize>, b: Range<usize>) -> bool {
        let (a, b) = (self.words(a).0, self.words(b).0);
        (a < SMALL_WORDS || b < SMALL_WORDS) && a + b <= MERGE_WORDS
    }

    /// `range` as pieces of at most `MAX_PART_WORDS` words where it can be: cut at its
    /// highest subheadings, each piece cut again if need be, then neighbours packed together
    /// up to that size; a range with no subheadings is cut between paragraphs.
    fn split(&self, range: Range<usize>, out: &mut Vec<Range<usize>>) {
        if self.words(range.clone()).0 <= MAX_PART_WORDS || range.len() < 2 {
            out.push(range);
            return;
        }
        let level = |i: usize| block_heading(&self.blocks[i]).map(|(level, _)| level);
        let sub = (range.start + 1..range.end).filter_map(level).min();
        let mut starts: Vec<usize> = match sub {
            Some(sub) => (range.start + 1..range.end)
                .filter(|&i| level(i) == Some(sub))
                .collect(),
            None => (range.start + 1..range.end).collect(),
        };
        starts.insert(0, range.start);
        let ends = starts.iter().skip(1).copied().chain([range.end]);
        let mut pieces = Vec::new();
        for (start, end) in starts.iter().copied().zip(ends) {
            self.split(start..end, &mut pieces);
        }
        let mut packed: Vec<Range<usize>> = Vec::new();
        for piece in pieces {
            match packed.last_mut() {
                Some(last) if self.words(last.start..piece.end).0 <= MAX_PART_WORDS => {
                    last.end = piece.end;
                }
                _ => packed.push(piece),
            }
        }
        out.extend(packed);
    }
}

/// Points a text of `prose` words is worth: about one per `per` words, at least one per
/// section it holds (`sections`) and at least one, at most `cap`.
pub(super) fn points_for(prose: usize, per: usize, sections: usize, cap: usize) -> usize {
    ((prose + per / 2) / per).max(sections).max(1).min(cap)
}

/// The points of a note of several, read whole: about one per `NOTE_WORDS_PER_POINT` words of
/// prose, at least one, at most `MAX_NOTE_POINTS`.
pub(super) fn note_points(text: &str) -> usize {
    let prose = prose_lines(text)
        .filter(|line| super::chunk::heading_level(line).is_none())
        .map(|l| l.split_whitespace().count())
        .sum();
    points_for(prose, NOTE_WORDS_PER_POINT, 1, MAX_NOTE_POINTS)
}

/// `points` shared among pieces of the given word counts, in proportion, at least one each.
pub(super) fn share_points(points: usize, words: &[usize]) -> Vec<usize> {
    let total: usize = words.iter().sum::<usize>().max(1);
    words
        .iter()
        .map(|w| ((points * w + total / 2) / total).max(1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize) -> String {
        (0..n)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn top_level_sections_are_the_highest_heading_level_below_a_lone_title() {
        let text = format!(
            "# Title\n\nIntro {}\n\n## One\n\n{}\n\n### Sub\n\n{}\n\n## Two\n\n{}\n\n## Empty",
            words(5),
            words(10),
            words(10),
            words(10)
        );
        let outline = Outline::new(&text);
        assert_eq!(outline.sections.len(), 3, "{:?}", outline.sections);
        // The text under the title is the first section, named by the title.
        assert_eq!(outline.heading(0), Some("Title"));
        assert_eq!(outline.heading(1), Some("One"));
        assert_eq!(outline.heading(2), Some("Two"));
        assert_eq!(outline.headings(), ["Title", "One", "Sub", "Two", "Empty"]);
        // The title is not a section of its own, and one heading at level 1 among several is.
        let two = Outline::new(&format!("# A\n\n{}\n\n# B\n\n{}", words(3), words(3)));
        assert_eq!(two.sections.len(), 2);
        assert_eq!(two.heading(0), Some("A"));
        // No headings: one section.
        let one = Outline::new(&words(40));
        assert_eq!((one.sections.len(), one.sections[0].clone()), (1, 0..1));
    }

    #[test]
    fn small_sections_are_merged_and_large_ones_cut_at_subheadings() {
        let text = format!(
            "Intro {}\n\n## Big\n\n{}\n\n### A\n\n{}\n\n### B\n\n{}\n\n## Tiny\n\n{}\n\n\
             ## Mid\n\n{}\n\n## Last\n\n{}",
            words(20),
            words(40),
            words(300),
            words(300),
            words(30),
            words(150),
            words(200)
        );
        let outline = Outline::new(&text);
        assert_eq!(outline.sections.len(), 5);
        let parts = outline.parts();
        let texts: Vec<String> = parts
            .iter()
            .map(|p| outline.text(p.blocks.clone()))
            .collect();
        // Big (640 words) is cut at its subheadings, its opening packed with ### A; Tiny (30)
        // joins Mid (150); the intro (21) is too large to join Big's first piece.
        assert_eq!(parts.len(), 5, "{parts:?}");
        assert!(texts[0].starts_with("Intro") && !texts[0].contains("## Big"));
        assert!(texts[1].starts_with("## Big") && texts[1].contains("### A"));
        assert!(texts[2].starts_with("### B"));
        assert!(texts[3].starts_with("## Tiny") && texts[3].contains("## Mid"));
        assert!(texts[4].starts_with("## Last"));
        assert_eq!(
            parts.iter().map(|p| p.sections.clone()).collect::<Vec<_>>(),
            [0..1, 1..2, 1..2, 2..4, 4..5]
        );
        // Every paragraph is in exactly one part, in order.
        let covered: Vec<usize> = parts.iter().flat_map(|p| p.blocks.clone()).collect();
        assert_eq!(covered, (0..outline.blocks.len()).collect::<Vec<_>>());
        assert_eq!(
            parts.iter().map(|p| p.points).collect::<Vec<_>>(),
            // 21 words: 1; 340: 2; 300: 2; 180 over two sections: 2; 200: 1.
            [1, 2, 2, 2, 1]
        );
    }

    #[test]
    fn a_long_section_without_subheadings_is_cut_between_paragraphs() {
        let text = format!(
            "## Only\n\n{}\n\n{}\n\n{}",
            words(300),
            words(300),
            words(300)
        );
        let outline = Outline::new(&text);
        let parts = outline.parts();
        assert_eq!(parts.len(), 3, "{parts:?}");
        assert!(parts.iter().all(|p| p.sections == (0..1)));
        assert!(parts.iter().all(|p| p.words == 300));
    }

    #[test]
    fn points_are_in_proportion_to_words_within_bounds() {
        assert_eq!(points_for(0, 150, 1, 4), 1);
        assert_eq!(points_for(74, 150, 1, 4), 1);
        assert_eq!(points_for(230, 150, 1, 4), 2);
        assert_eq!(points_for(450, 150, 1, 4), 3);
        assert_eq!(points_for(5000, 150, 1, 4), 4);
        // At least one per section held, still within the cap.
        assert_eq!(points_for(100, 150, 3, 4), 3);
        assert_eq!(points_for(100, 150, 6, 4), 4);
        // Code does not count toward a note's points.
        let code = format!("```\n{}\n```", words(2000));
        assert_eq!(note_points(&format!("{}\n\n{code}", words(20))), 1);
        assert_eq!(note_points(&words(700)), 2);
        assert_eq!(note_points(&words(5000)), 3);
        assert_eq!(share_points(4, &[100, 300]), [1, 3]);
        assert_eq!(share_points(1, &[100, 100, 100]), [1, 1, 1]);
    }
}
