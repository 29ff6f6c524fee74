//! Cutting a note's text into pieces that each fit a prompt, at headings and blank lines where
//! possible, and naming the heading each piece starts under. Pure: tested without a model.

use text_splitter::{ChunkConfig, ChunkSizer, MarkdownSplitter};

/// The text of a Markdown ATX heading line (`## Goals` → `Goals`); `None` for any other line.
fn heading(line: &str) -> Option<&str> {
    heading_level(line).map(|level| line[level..].trim().trim_end_matches('#').trim())
}

/// The level of a Markdown ATX heading line (`## Goals` → 2); `None` for any other line.
pub fn heading_level(line: &str) -> Option<usize> {
    let text = line.trim_start_matches('#');
    let level = line.len() - text.len();
    ((1..=6).contains(&level) && text.starts_with(' ')).then_some(level)
}

/// The heading a block opens with (its first line, as [`blocks`] cuts them): its level and
/// text; `None` for a block that does not open with one.
pub fn block_heading(block: &str) -> Option<(usize, &str)> {
    let line = block.lines().next()?;
    Some((heading_level(line)?, heading(line)?))
}

/// True for a line that opens or closes a fenced code block.
fn fence(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("```") || line.starts_with("~~~")
}

/// The lines of `text` outside fenced code blocks, fences left out: a `# comment` in a shell
/// example is not a heading, and an example is not a statement to ask about.
pub fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut in_code = false;
    text.lines().filter(move |line| {
        if fence(line) {
            in_code = !in_code;
            return false;
        }
        !in_code
    })
}

/// Paragraphs, with each heading starting a new one; a fenced code block is one paragraph,
/// blank lines and all.
pub fn blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current = String::new();
    let mut in_code = false;
    for line in text.lines() {
        let was_code = in_code;
        if fence(line) {
            in_code = !in_code;
        }
        // An opening fence starts a block; inside one, nothing ends it but its closing fence.
        let breaks =
            !was_code && (fence(line) || line.trim().is_empty() || heading(line).is_some());
        if breaks {
            if !current.trim().is_empty() {
                blocks.push(current.trim_end().to_string());
            }
            current.clear();
        }
        if was_code || !line.trim().is_empty() {
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

/// Splits `text` into chunks of at most `budget` by `size` (the model's tokens), the largest
/// Markdown units that fit: sections, then blocks, lines, sentences, words, and inside a word
/// only as a last resort (`text-splitter`'s Markdown splitter). Chunks are trimmed; a chunk
/// exceeds the budget only when one character does.
pub fn chunk_text(text: &str, budget: usize, size: &dyn Fn(&str) -> usize) -> Vec<String> {
    let config = ChunkConfig::new(budget.max(1)).with_sizer(Sizer(size));
    MarkdownSplitter::new(config)
        .chunks(text)
        .map(str::to_string)
        .collect()
}

/// A chunk's size as the caller measures it.
struct Sizer<'a>(&'a dyn Fn(&str) -> usize);

impl ChunkSizer for Sizer<'_> {
    fn size(&self, chunk: &str) -> usize {
        (self.0)(chunk)
    }
}

/// The characters of `block` outside its heading lines and code blocks.
pub fn body_chars(block: &str) -> usize {
    prose_lines(block)
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
            if let Some(last) = prose_lines(chunk).filter_map(heading).last() {
                current = Some(last.to_string());
            }
            start
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(t: &str) -> usize {
        t.chars().count()
    }

    #[test]
    fn short_text_is_one_chunk() {
        let text = "# Title\n\nOne paragraph.";
        assert_eq!(chunk_text(text, 100, &chars), vec![text.to_string()]);
    }

    #[test]
    fn chunks_cut_at_headings_and_blank_lines_and_fit() {
        let text = "# One\nalpha beta\n\ngamma delta\n## Two\nepsilon zeta\n\neta theta";
        let chunks = chunk_text(text, 30, &chars);
        assert_eq!(
            chunks,
            vec![
                "# One\nalpha beta\n\ngamma delta",
                "## Two\nepsilon zeta\n\neta theta"
            ]
        );
    }

    #[test]
    fn a_paragraph_too_long_splits_at_lines_then_words_then_characters() {
        let long_line = "word ".repeat(20);
        let blob = "x".repeat(100);
        let text = format!("first line\nsecond line\n{long_line}\n\n{blob}");
        let chunks = chunk_text(&text, 40, &chars);
        assert!(chunks.iter().all(|c| chars(c) <= 40), "{chunks:?}");
        assert_eq!(chunks[0], "first line\nsecond line");
        let words: usize = chunks.iter().map(|c| c.matches("word").count()).sum();
        assert_eq!(words, 20);
        let xs: usize = chunks.iter().map(|c| c.matches('x').count()).sum();
        assert_eq!(xs, 100);
    }

    #[test]
    fn a_code_block_is_kept_whole_when_it_fits() {
        let text = "Intro.\n\n```\nfn a() {}\n\nfn b() {}\n```\n\nAfter the code.";
        let chunks = chunk_text(text, 30, &chars);
        assert!(
            chunks.contains(&"```\nfn a() {}\n\nfn b() {}\n```".to_string()),
            "{chunks:?}"
        );
    }

    #[test]
    fn a_code_block_is_one_paragraph_with_no_headings_or_prose() {
        let text = "Install it:\n```shell\n# Login\nob login\n\nob sync\n```\n\n## Use\nRun it.";
        let paragraphs = blocks(text);
        assert_eq!(
            paragraphs,
            [
                "Install it:",
                "```shell\n# Login\nob login\n\nob sync\n```",
                "## Use\nRun it."
            ]
        );
        assert_eq!(headings(&paragraphs), [None, None, Some("Use".to_string())]);
        assert_eq!(body_chars(&paragraphs[1]), 0);
        assert_eq!(body_chars(&paragraphs[2]), "Run it.".len());
    }

    #[test]
    fn empty_text_has_no_chunks() {
        assert!(chunk_text("\n\n  \n", 100, &chars).is_empty());
    }

    #[test]
    fn each_chunk_is_named_by_the_heading_it_starts_under() {
        let text = "Intro line.\n\n# One\nalpha beta gamma\n\ndelta epsilon\n## Two ##\nzeta eta\n\n#tag is not a heading";
        let chunks = chunk_text(text, 24, &chars);
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
