//! Citation marks in an answer's text: `[2]`, `[1, 3]`, `[2-4]`, `[source 2]`, where each
//! stands and the words each vouches for ([`claims`]). Pure text; what the numbers name is
//! [`super::Sources`]'s to say.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// The source numbers written in brackets: `[2]`, `[1, 3]`, `[1; 2]`, `[2-4]`, `[source 2]`.
pub fn cited_numbers(text: &str) -> BTreeSet<usize> {
    citation_marks(text)
        .into_iter()
        .flat_map(|mark| mark.numbers)
        .collect()
}

/// One citation mark in an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitationMark {
    /// Where the mark stands, in bytes.
    pub span: Range<usize>,
    /// The numbers it names.
    pub numbers: BTreeSet<usize>,
}

/// The citation marks of `text`, in order (see [`cited_numbers`] for the forms read).
pub fn citation_marks(text: &str) -> Vec<CitationMark> {
    static CITE: LazyLock<Regex> = LazyLock::new(|| {
        // Small models decorate the number: `[source 2]`, `[Note: 1]`.
        Regex::new(
            r"(?i)\[\s*(?:(?:sources?|notes?|ref)\s*:?\s*)?(\d{1,3}(?:\s*(?:[,;]|-|–)\s*\d{1,3})*)\s*\]",
        )
        .expect("valid regex")
    });
    CITE.captures_iter(text)
        .map(|caps| CitationMark {
            span: caps.get(0).expect("the whole match").range(),
            numbers: mark_numbers(&caps[1]),
        })
        .filter(|mark| !mark.numbers.is_empty())
        .collect()
}

/// `2`, `1, 3`, `1; 2`, `2-4` as numbers (a range of at most 20).
fn mark_numbers(list: &str) -> BTreeSet<usize> {
    let mut numbers = BTreeSet::new();
    for part in list.split([',', ';']) {
        let bounds: Vec<usize> = part
            .split(['-', '–'])
            .filter_map(|n| n.trim().parse().ok())
            .collect();
        match bounds.as_slice() {
            [n] => {
                numbers.insert(*n);
            }
            [a, b] if a <= b && b - a < 20 => numbers.extend(*a..=*b),
            _ => {}
        }
    }
    numbers
}

/// True when a mark after `before` starts its line: only blanks, a bullet (`-`, `*`, `+`),
/// a quote's `>` or a list number (`2.`) stand before it.
pub(super) fn starts_line(before: &str) -> bool {
    let line = before.rsplit('\n').next().unwrap_or("");
    let line =
        line.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '-' | '*' | '+' | '>'));
    let unnumbered = line.trim_start_matches(|c: char| c.is_ascii_digit());
    let line = match unnumbered.strip_prefix(['.', ')']) {
        Some(rest) if unnumbered.len() < line.len() => rest,
        _ => line,
    };
    line.trim().is_empty()
}

/// A citation mark with the words it vouches for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim<'a> {
    /// The sentence the mark closes or stands in.
    pub text: &'a str,
    /// The numbers the mark names.
    pub numbers: BTreeSet<usize>,
}

/// The claims of `answer`: each citation mark with the words it vouches for. A mark after
/// text vouches for the text since the previous mark: its sentence when every sentence has
/// one, the whole answer for a closing `Sources: [1]` (or the attribution step's numbers). A
/// mark that starts a line, as in a list of sources, vouches for the rest of its line; alone
/// on its line, for the lines directly below it (to a blank line or the next mark). Marks
/// side by side (`[1] [2]`, `[1], [3]`) share one claim.
pub fn claims(answer: &str) -> Vec<Claim<'_>> {
    let marks = citation_marks(answer);
    let mut claims: Vec<Claim<'_>> = Vec::new();
    let mut previous_end = 0;
    for (i, mark) in marks.iter().enumerate() {
        let between = &answer[previous_end..mark.span.start];
        previous_end = mark.span.end;
        if starts_line(&answer[..mark.span.start]) {
            let rest = &answer[mark.span.end..];
            let next_mark = marks
                .get(i + 1)
                .map_or(rest.len(), |m| m.span.start - mark.span.end);
            let line_end = rest.find('\n').unwrap_or(rest.len());
            let alone = rest[..line_end]
                .trim_matches(|c: char| c.is_whitespace() || c == ':')
                .is_empty();
            // A mark alone on its line (its copied header taken out) heads the text directly
            // below it, as a passage sits under its header in the prompt.
            let end = if alone {
                rest.find("\n\n").unwrap_or(rest.len())
            } else {
                line_end
            };
            let end = end.min(next_mark);
            claims.push(Claim {
                text: rest[..end].trim(),
                numbers: mark.numbers.clone(),
            });
            continue;
        }
        let adjacent = between.chars().all(|c| !c.is_alphanumeric());
        if let Some(last) = claims.last_mut()
            && adjacent
        {
            last.numbers.extend(mark.numbers.iter().copied());
            continue;
        }
        claims.push(Claim {
            text: between
                .trim_matches(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '.')),
            numbers: mark.numbers.clone(),
        });
    }
    claims
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cited_numbers_reads_lists_ranges_and_ignores_links() {
        let numbers =
            cited_numbers("A [1], b [2, 4] and [3-5][7]; not [x] or [[Note]] or [10000].");
        assert_eq!(numbers.into_iter().collect::<Vec<_>>(), [1, 2, 3, 4, 5, 7]);
        assert!(cited_numbers("[[wiki]] and [text](url)").is_empty());
    }

    #[test]
    fn each_mark_vouches_for_the_text_since_the_previous_one() {
        let claims = |answer| -> Vec<(&str, Vec<usize>)> {
            claims(answer)
                .into_iter()
                .map(|c| (c.text, c.numbers.into_iter().collect()))
                .collect()
        };
        assert_eq!(
            claims(
                "The trick is PMAT: prophase, telophase. [1] It is in Lab 3 [2], on Friday \
                 [3] [4].\n\n1. **Cells**: small.\n\nThat is all. [1, 3]"
            ),
            [
                ("The trick is PMAT: prophase, telophase", vec![1]),
                ("It is in Lab 3", vec![2]),
                ("on Friday", vec![3, 4]),
                ("1. **Cells**: small.\n\nThat is all", vec![1, 3]),
            ]
        );
        // A closing mark for the whole answer; a list of sources, each line its own.
        assert_eq!(
            claims("Use $$ and LaTeX.\n\nSources: [1]"),
            [("Use $$ and LaTeX.\n\nSources", vec![1])]
        );
        assert_eq!(
            claims("[1]\nUse a recovery code.\nThen sign in.\n\nMore."),
            [("Use a recovery code.\nThen sign in.", vec![1])]
        );
        assert_eq!(
            claims("Put it in snippets.\n\n[1] Settings › Appearance\n- [2] CSS snippets"),
            [
                ("Settings › Appearance", vec![1]),
                ("CSS snippets", vec![2])
            ]
        );
    }
}
