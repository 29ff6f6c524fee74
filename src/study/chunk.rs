//! Cutting a note's text into pieces that each fit a prompt, at headings and blank lines where
//! possible, and naming the heading each piece starts under. Pure: tested without a model.

#[derive(Clone, Copy)]
enum Unit {
    Block,
    Line,
    Word,
    Piece,
}

impl Unit {
    fn finer(self) -> Option<Unit> {
        match self {
            Unit::Block => Some(Unit::Line),
            Unit::Line => Some(Unit::Word),
            Unit::Word => Some(Unit::Piece),
            Unit::Piece => None,
        }
    }

    fn separator(self) -> &'static str {
        match self {
            Unit::Block => "\n\n",
            Unit::Line => "\n",
            Unit::Word => " ",
            Unit::Piece => "",
        }
    }

    fn split(self, text: &str) -> Vec<String> {
        match self {
            Unit::Block => blocks(text),
            Unit::Line => text.lines().map(str::to_string).collect(),
            Unit::Word => text.split_whitespace().map(str::to_string).collect(),
            // A "word" too long for a chunk (a data blob): cut it into short runs of characters.
            Unit::Piece => {
                let chars: Vec<char> = text.chars().collect();
                chars.chunks(32).map(|c| c.iter().collect()).collect()
            }
        }
    }
}

/// The text of a Markdown ATX heading line (`## Goals` → `Goals`); `None` for any other line.
fn heading(line: &str) -> Option<&str> {
    let text = line.trim_start_matches('#');
    let level = line.len() - text.len();
    ((1..=6).contains(&level) && text.starts_with(' '))
        .then(|| text.trim().trim_end_matches('#').trim())
}

/// Paragraphs, with each heading starting a new one.
pub fn blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.trim().is_empty() || heading(line).is_some() {
            if !current.trim().is_empty() {
                blocks.push(current.trim_end().to_string());
            }
            current.clear();
        }
        if !line.trim().is_empty() {
            if !current.is_empty() {
                current.push('\n');
            }
            current.push_str(line);
        }
    }
    if !current.trim().is_empty() {
        blocks.push(current.trim_end().to_string());
    }
    blocks
}

/// Splits `text` into chunks that each satisfy `fits`, cutting at headings and blank lines
/// where possible, then at line ends, then between words, and inside a word only as a last
/// resort. A chunk fails `fits` only when a run of 32 characters does.
pub fn chunk_text(text: &str, fits: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut chunks = Vec::new();
    pack(Unit::Block.split(text), Unit::Block, fits, &mut chunks);
    chunks
}

fn pack(units: Vec<String>, unit: Unit, fits: &dyn Fn(&str) -> bool, out: &mut Vec<String>) {
    let mut current = String::new();
    for piece in units {
        if !current.is_empty() {
            let candidate = format!("{current}{}{piece}", unit.separator());
            if fits(&candidate) {
                current = candidate;
                continue;
            }
            out.push(std::mem::take(&mut current));
        }
        if fits(&piece) {
            current = piece;
        } else if let Some(finer) = unit.finer() {
            pack(finer.split(&piece), finer, fits, out);
        } else {
            out.push(piece);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
}

/// The characters of `block` outside its heading lines.
pub fn body_chars(block: &str) -> usize {
    block
        .lines()
        .filter(|line| heading(line).is_none())
        .map(|line| line.trim().chars().count())
        .sum()
}

/// For each of `chunks` (in the order [`chunk_text`] or [`blocks`] cut them from one text), the heading it
/// starts under: its own first line when that is a heading, else the last heading of the text
/// before it; `None` before the first heading.
pub fn headings(chunks: &[String]) -> Vec<Option<String>> {
    let mut current: Option<String> = None;
    chunks
        .iter()
        .map(|chunk| {
            let first = chunk.lines().next().and_then(heading);
            let start = first.map(str::to_string).or_else(|| current.clone());
            if let Some(last) = chunk.lines().rev().find_map(heading) {
                current = Some(last.to_string());
            }
            start
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_chunk() {
        let text = "# Title\n\nOne paragraph.";
        assert_eq!(chunk_text(text, &|_| true), vec![text.to_string()]);
    }

    #[test]
    fn chunks_cut_at_headings_and_blank_lines_and_fit() {
        let text = "# One\nalpha beta\n\ngamma delta\n## Two\nepsilon zeta\n\neta theta";
        let fits = |t: &str| t.len() <= 30;
        let chunks = chunk_text(text, &fits);
        assert_eq!(
            chunks,
            vec![
                "# One\nalpha beta\n\ngamma delta",
                "## Two\nepsilon zeta\n\neta theta"
            ]
        );
        assert!(chunks.iter().all(|c| fits(c)));
    }

    #[test]
    fn a_paragraph_too_long_splits_at_lines_then_words_then_characters() {
        let long_line = "word ".repeat(20);
        let blob = "x".repeat(100);
        let text = format!("first line\nsecond line\n{long_line}\n\n{blob}");
        let fits = |t: &str| t.chars().count() <= 40;
        let chunks = chunk_text(&text, &fits);
        assert!(chunks.iter().all(|c| fits(c)), "{chunks:?}");
        assert_eq!(chunks[0], "first line\nsecond line");
        let words: usize = chunks.iter().map(|c| c.matches("word").count()).sum();
        assert_eq!(words, 20);
        let xs: usize = chunks.iter().map(|c| c.matches('x').count()).sum();
        assert_eq!(xs, 100);
    }

    #[test]
    fn empty_text_has_no_chunks() {
        assert!(chunk_text("\n\n  \n", &|_| true).is_empty());
    }

    #[test]
    fn each_chunk_is_named_by_the_heading_it_starts_under() {
        let text = "Intro line.\n\n# One\nalpha beta gamma\n\ndelta epsilon\n## Two ##\nzeta eta\n\n#tag is not a heading";
        let chunks = chunk_text(text, &|t: &str| t.len() <= 24);
        assert_eq!(
            chunks,
            vec![
                "Intro line.",
                "# One\nalpha beta gamma",
                "delta epsilon",
                "## Two ##\nzeta eta",
                "#tag is not a heading",
            ]
        );
        assert_eq!(
            headings(&chunks),
            vec![
                None,
                Some("One".to_string()),
                Some("One".to_string()),
                Some("Two".to_string()),
                Some("Two".to_string()),
            ]
        );
    }
}
