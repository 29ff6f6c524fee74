//! One note's text analysed: frontmatter, headings, tags and links. Uses `pulldown-cmark` to find
//! code, HTML and math so that tags and links are never taken from them. Pure: never fails.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::frontmatter::{self, Frontmatter};
use crate::links::{self, Link, LinkKind};
use crate::tags;

/// A heading in a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1 to 6.
    pub level: u8,
    /// The heading text, trimmed.
    pub text: String,
    /// Byte offset of the heading line in the body.
    pub start: usize,
    /// Byte offset just past the heading (its underline, for a setext heading), where the
    /// section's own text begins.
    pub end: usize,
}

/// Everything extracted from one note's text.
#[derive(Debug, Clone, Default)]
pub struct ParsedNote {
    /// The frontmatter (empty when absent).
    pub frontmatter: Frontmatter,
    /// Byte offset where the body starts (after the frontmatter).
    pub body_start: usize,
    /// Tags from frontmatter and body, normalised (lowercase), deduplicated, in first-seen order.
    pub tags: Vec<String>,
    /// Links from body and frontmatter, in order.
    pub links: Vec<Link>,
    /// Headings in the body.
    pub headings: Vec<Heading>,
}

/// Parses a note.
pub fn parse(text: &str) -> ParsedNote {
    let (yaml, body_start) = frontmatter::split(text);
    let frontmatter = yaml.map(frontmatter::parse).unwrap_or_default();
    let body = &text[body_start..];

    let mut masked = body.as_bytes().to_vec();
    let comments = comment_spans(body);
    for r in &comments {
        blank(&mut masked, r.clone());
    }
    // Parse with comments blanked so `%%` content produces no events.
    let cleaned = String::from_utf8(masked.clone()).unwrap_or_default();
    let mut headings = Vec::new();
    let mut md_links = Vec::new();
    let mut heading: Option<(u8, usize, String)> = None;
    let opts = Options::ENABLE_TABLES
        | Options::ENABLE_MATH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    for (ev, range) in Parser::new_ext(&cleaned, opts).into_offset_iter() {
        match ev {
            Event::Start(Tag::CodeBlock(_)) | Event::Start(Tag::HtmlBlock) => {
                blank(&mut masked, range)
            }
            Event::Code(_)
            | Event::Html(_)
            | Event::InlineHtml(_)
            | Event::InlineMath(_)
            | Event::DisplayMath(_) => blank(&mut masked, range),
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some((level as u8, range.start, String::new()))
            }
            Event::Text(t) => {
                if let Some((_, _, s)) = heading.as_mut() {
                    s.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, text)) = heading.take() {
                    headings.push(Heading {
                        level,
                        text: text.trim().to_string(),
                        start,
                        end: range.end,
                    });
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                md_links.extend(links::markdown_link(&dest_url, false).map(|l| (range.start, l)))
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                md_links.extend(links::markdown_link(&dest_url, true).map(|l| (range.start, l)))
            }
            _ => {}
        }
    }
    let masked = String::from_utf8(masked)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());

    let mut all_links = Vec::new();
    let mut spans = Vec::new();
    links::scan_wikilinks(&masked, LinkKind::Wiki, &mut all_links, &mut spans);
    // Body links in the order they are written, then frontmatter links.
    let mut ordered: Vec<(usize, Link)> = spans.iter().map(|r| r.start).zip(all_links).collect();
    ordered.extend(md_links);
    ordered.sort_by_key(|(pos, _)| *pos);
    let mut all_links: Vec<Link> = ordered.into_iter().map(|(_, l)| l).collect();
    for s in &frontmatter.strings {
        links::scan_wikilinks(s, LinkKind::Frontmatter, &mut all_links, &mut Vec::new());
    }

    // Tags: never inside a wikilink (`[[Note#Heading]]`).
    let mut tag_text = masked.into_bytes();
    for r in spans {
        blank(&mut tag_text, r);
    }
    let tag_text = String::from_utf8_lossy(&tag_text);
    let mut raw_tags: Vec<String> = frontmatter.tags.clone();
    tags::scan(&tag_text, &mut raw_tags);
    let mut tags_out: Vec<String> = Vec::new();
    for t in raw_tags {
        let n = tags::normalize(&t);
        if !n.is_empty() && !tags_out.contains(&n) {
            tags_out.push(n);
        }
    }

    ParsedNote {
        frontmatter,
        body_start,
        tags: tags_out,
        links: all_links,
        headings,
    }
}

/// Byte spans of `%%comments%%` (an unclosed `%%` runs to the end).
fn comment_spans(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(s) = text[i..].find("%%") {
        let start = i + s;
        match text[start + 2..].find("%%") {
            Some(e) => {
                let end = start + 2 + e + 2;
                out.push(start..end);
                i = end;
            }
            None => {
                out.push(start..text.len());
                break;
            }
        }
    }
    out
}

/// Replaces a byte range with spaces, keeping newlines (so offsets and line starts survive) and
/// never splitting a UTF-8 sequence (whole bytes of multi-byte chars become spaces too).
fn blank(buf: &mut [u8], r: Range<usize>) {
    let end = r.end.min(buf.len());
    for b in &mut buf[r.start.min(end)..end] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

/// The body text of one section: from the heading named `name` to the next heading of the same
/// or a higher level. Names compare case-insensitively, ignoring surrounding `#` and spaces.
pub fn section<'a>(body: &'a str, headings: &[Heading], name: &str) -> Option<&'a str> {
    section_at(body, headings, find_section(headings, name)?)
}

/// The index of the first heading named `name` (compared as in [`section`]).
pub fn find_section(headings: &[Heading], name: &str) -> Option<usize> {
    let want = normalize_heading(name);
    headings
        .iter()
        .position(|h| normalize_heading(&h.text) == want)
}

/// The body text of the section under `headings[idx]`, heading line included.
pub fn section_at<'a>(body: &'a str, headings: &[Heading], idx: usize) -> Option<&'a str> {
    let h = headings.get(idx)?;
    let end = headings[idx + 1..]
        .iter()
        .find(|n| n.level <= h.level)
        .map_or(body.len(), |n| n.start);
    body.get(h.start..end)
}

/// A heading name made comparable.
pub fn normalize_heading(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    s.trim()
        .trim_start_matches('#')
        .trim()
        .nfc()
        .collect::<String>()
        .to_lowercase()
}

/// A passage of a note's body: one section, or one part of a section too long to show whole.
/// Search hits show a passage, so it is sized for a small model's prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Indices into the note's headings of the headings the passage sits under, outermost
    /// first; empty for text above the first heading.
    pub path: Vec<usize>,
    /// Byte range of the passage in the body ([`passages`]; in the whole note text, for a
    /// note's passages, `NoteEntry::passages`), without surrounding whitespace; never empty.
    pub range: Range<usize>,
}

impl Passage {
    /// The passage's text in `body`.
    pub fn text<'a>(&self, body: &'a str) -> &'a str {
        body.get(self.range.clone()).unwrap_or("")
    }

    /// The texts of the headings above the passage, outermost first.
    pub fn heading_path<'a>(&self, headings: &'a [Heading]) -> impl Iterator<Item = &'a str> {
        self.path
            .iter()
            .filter_map(|&i| headings.get(i))
            .map(|h| h.text.as_str())
    }
}

/// Splits a body into passages of at most `max_chars` characters, in body order: each
/// section's text under its heading path (heading lines themselves left out), a long section
/// cut between paragraphs (blank lines outside fenced code), a paragraph longer than the cap
/// cut at a sentence end, a line break or a space. Whitespace-only sections give nothing.
/// `headings` are the body's headings in order, as [`parse`] finds them.
pub fn passages(body: &str, headings: &[Heading], max_chars: usize) -> Vec<Passage> {
    let max_chars = max_chars.max(1);
    let mut out = Vec::new();
    let mut path: Vec<usize> = Vec::new();
    let first = headings.first().map_or(body.len(), |h| h.start);
    split_section(body, 0..first, &path, max_chars, &mut out);
    for (i, h) in headings.iter().enumerate() {
        while path.last().is_some_and(|&j| headings[j].level >= h.level) {
            path.pop();
        }
        path.push(i);
        let end = headings.get(i + 1).map_or(body.len(), |n| n.start);
        split_section(body, h.end..end, &path, max_chars, &mut out);
    }
    out
}

/// Adds the passages of one section (`range` in `body`) to `out`.
fn split_section(
    body: &str,
    range: Range<usize>,
    path: &[usize],
    max: usize,
    out: &mut Vec<Passage>,
) {
    // Offsets come from the parser (on a copy with comments blanked); never trust them to lie
    // on character boundaries or in order.
    let end = floor_boundary(body, range.end);
    let start = floor_boundary(body, range.start.min(end));
    let Some(r) = trimmed(body, start..end) else {
        return;
    };
    let mut push = |r: Range<usize>| {
        if let Some(r) = trimmed(body, r) {
            out.push(Passage {
                path: path.to_vec(),
                range: r,
            });
        }
    };
    if body[r.clone()].chars().count() <= max {
        push(r);
        return;
    }
    // Greedily pack whole paragraphs; a paragraph over the cap is cut on its own.
    let mut cur: Option<(Range<usize>, usize)> = None;
    for block in blocks(body, r) {
        let chars = body[block.clone()].chars().count();
        if let Some((c, n)) = &mut cur {
            let joined = *n + body[c.end..block.start].chars().count() + chars;
            if joined <= max {
                c.end = block.end;
                *n = joined;
                continue;
            }
            push(c.clone());
            cur = None;
        }
        if chars <= max {
            cur = Some((block, chars));
        } else {
            for piece in cut(body, block, max) {
                push(piece);
            }
        }
    }
    if let Some((c, _)) = cur {
        push(c);
    }
}

/// The paragraphs of `range`: runs of non-blank lines, where a blank line inside a fenced
/// code block (```` ``` ```` or `~~~`, also in a list or quote) does not end one.
fn blocks(body: &str, range: Range<usize>) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = range.start;
    let mut fence: Option<(u8, usize)> = None;
    let mut pos = range.start;
    for line in body[range].split_inclusive('\n') {
        let line_start = pos;
        pos += line.len();
        let content = line.trim_end();
        if content.trim_start().is_empty() && fence.is_none() {
            if let Some(s) = start.take() {
                out.push(s..end);
            }
            continue;
        }
        let marker = content.trim_start_matches(|c: char| c == '>' || c.is_whitespace());
        match (fence, fence_of(marker)) {
            (None, Some((c, n, info))) if !(c == b'`' && info.contains('`')) => {
                fence = Some((c, n));
            }
            (Some((open, len)), Some((c, n, info)))
                if c == open && n >= len && info.trim().is_empty() =>
            {
                fence = None;
            }
            _ => {}
        }
        start.get_or_insert(line_start + (line.len() - line.trim_start().len()));
        end = line_start + content.len();
    }
    if let Some(s) = start {
        out.push(s..end);
    }
    out
}

/// Fenced blocks a plugin runs to list other notes (Dataview, Tasks, search): what they hold
/// is a query, not what the note says.
const QUERY_FENCES: &str = "dataview dataviewjs query tasks";

/// Whether a passage's text says nothing a question could be answered from: only tags,
/// punctuation and query blocks ([`QUERY_FENCES`]), as in a note that keeps its facts in its
/// properties ("#games" and "....", or a person's note that is a Dataview table of meetings).
pub fn says_nothing(text: &str) -> bool {
    let mut query_fence: Option<(u8, usize)> = None;
    for line in text.lines() {
        let line = line.trim_start();
        if let Some((c, n)) = query_fence {
            if fence_of(line).is_some_and(|(d, m, rest)| d == c && m >= n && rest.trim().is_empty())
            {
                query_fence = None;
            }
            continue;
        }
        if let Some((c, n, info)) = fence_of(line) {
            let language = info.split_whitespace().next().unwrap_or("");
            if QUERY_FENCES
                .split(' ')
                .any(|q| q.eq_ignore_ascii_case(language))
            {
                query_fence = Some((c, n));
                continue;
            }
        }
        let says = line
            .split_whitespace()
            .filter(|word| !word.starts_with('#'))
            .any(|word| word.chars().any(char::is_alphanumeric));
        if says {
            return false;
        }
    }
    true
}

/// A fence line's character, length and the text after the fence.
fn fence_of(line: &str) -> Option<(u8, usize, &str)> {
    let c = *line.as_bytes().first()?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = line.bytes().take_while(|&b| b == c).count();
    (n >= 3).then(|| (c, n, &line[n..]))
}

/// Cuts an over-long paragraph into pieces of at most `max` characters, each ending at the
/// last sentence end in its second half, else the last line break there, else the last space,
/// else exactly at the cap (one endless word).
fn cut(body: &str, range: Range<usize>, max: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut s = range.start;
    while s < range.end {
        let rest = &body[s..range.end];
        let Some((limit, _)) = rest.char_indices().nth(max) else {
            out.push(s..range.end);
            break;
        };
        let window = &rest[..limit];
        let half = limit / 2;
        let sentence = window
            .char_indices()
            .rev()
            .take_while(|&(i, _)| i >= half)
            .find(|&(i, c)| {
                let after = &rest[i + c.len_utf8()..];
                matches!(c, '。' | '！' | '？')
                    || (matches!(c, '.' | '!' | '?')
                        && after.chars().next().is_none_or(char::is_whitespace))
            })
            .map(|(i, c)| i + c.len_utf8());
        let at = sentence
            .or_else(|| window.rfind('\n').filter(|&i| i >= half))
            .or_else(|| window.rfind(char::is_whitespace))
            .filter(|&i| i > 0)
            .unwrap_or(limit);
        out.push(s..s + at);
        s += at;
        s += body[s..range.end].len() - body[s..range.end].trim_start().len();
    }
    out
}

/// `range` without leading and trailing whitespace; `None` when nothing else is left.
fn trimmed(body: &str, range: Range<usize>) -> Option<Range<usize>> {
    let text = body.get(range.clone())?;
    let start = range.start + (text.len() - text.trim_start().len());
    let end = range.start + text.trim_end().len();
    (start < end).then_some(start..end)
}

/// The largest character boundary of `s` at or before `i`.
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "---\ntags: [Fm/Tag]\nrelated: \"[[Fm Link]]\"\n---\n# Title #inhead\n\
Body #real and [[Target#Sec|shown]] and [md](Other%20Note.md).\n\n```\n#notatag [[NotALink]]\n```\n\
`#inline` %%#comment [[Hidden]]%% $#math$ <span style=\"color:#dcddde\">x</span>\n\
<!-- #htmlcomment -->\n\n    #indented\n\n## Sub\ntext\n# Next\n";

    #[test]
    fn tags_skip_code_comments_math_html() {
        let p = parse(NOTE);
        assert_eq!(p.tags, vec!["fm/tag", "inhead", "real"]);
    }

    #[test]
    fn links_from_body_and_frontmatter() {
        let p = parse(NOTE);
        let paths: Vec<_> = p.links.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(paths, vec!["Target", "Other Note.md", "Fm Link"]);
    }

    #[test]
    fn sections() {
        let p = parse(NOTE);
        let body = &NOTE[p.body_start..];
        assert_eq!(p.headings.len(), 3);
        let s = section(body, &p.headings, "## sub").unwrap();
        assert_eq!(s, "## Sub\ntext\n");
        let s = section(body, &p.headings, "Title #inhead").unwrap();
        assert!(s.ends_with("text\n"));
    }

    /// Passages as (heading path joined by " > ", text).
    fn split(text: &str, max: usize) -> Vec<(String, String)> {
        let p = parse(text);
        let body = &text[p.body_start..];
        passages(body, &p.headings, max)
            .iter()
            .map(|x| {
                let path: Vec<&str> = x.heading_path(&p.headings).collect();
                (path.join(" > "), x.text(body).to_string())
            })
            .collect()
    }

    #[test]
    fn passages_follow_nested_headings_and_respect_the_cap() {
        let para = |w: &str| format!("{w} ").repeat(20).trim_end().to_string() + ".";
        let text = format!(
            "---\ntags: [x]\n---\nIntro line.\n\n# Top\n\nUnder top.\n\n## Long\n\n{}\n\n{}\n\n{}\n\n\
             ### Deep\nDeep text.\n## Empty\n   \n\n## Last ##\nLast text.\n",
            para("alpha"),
            para("beta"),
            para("gamma")
        );
        let got = split(&text, 260);
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "",
                "Top",
                "Top > Long",
                "Top > Long",
                "Top > Long > Deep",
                "Top > Last"
            ],
            "{got:#?}"
        );
        assert_eq!(got[0].1, "Intro line.");
        assert_eq!(got[1].1, "Under top.");
        // The first two paragraphs (120 and 100 characters) fit in 260 together with the blank
        // line between them; the third starts the next passage. No passage holds a heading line.
        assert_eq!(got[2].1, format!("{}\n\n{}", para("alpha"), para("beta")));
        assert_eq!(got[3].1, para("gamma"));
        assert_eq!(got[4].1, "Deep text.");
        assert_eq!(got[5].1, "Last text.");
        for (_, t) in &got {
            assert!(t.chars().count() <= 260 && !t.contains('#'), "{t}");
        }
        // With room for everything, each section is one passage.
        assert_eq!(split(&text, 10_000).len(), 5);
    }

    #[test]
    fn over_long_paragraphs_are_cut_at_sentence_ends_then_spaces() {
        let sentence = "Ünïcode words make one sentence here. ";
        let text = format!("# H\n{}\n", sentence.repeat(30));
        let got = split(&text, 100);
        assert!(got.len() >= 12, "{got:#?}");
        for (path, t) in &got {
            assert_eq!(path, "H");
            assert!(t.chars().count() <= 100, "{t}");
            assert!(t.starts_with("Ünïcode") && t.ends_with("here."), "{t:?}");
        }
        // No sentence end: cut at a space; one endless word: cut at the cap.
        let got = split(&format!("{}\n", "word ".repeat(50)), 32);
        assert!(
            got.iter()
                .all(|(_, t)| t.chars().count() <= 32 && t.ends_with("word"))
        );
        assert_eq!(got.iter().map(|(_, t)| t.len() + 1).sum::<usize>(), 250);
        let got = split(&"x".repeat(70), 32);
        let lens: Vec<usize> = got.iter().map(|(_, t)| t.len()).collect();
        assert_eq!(lens, [32, 32, 6]);
    }

    #[test]
    fn tags_dots_and_queries_say_nothing() {
        assert!(says_nothing("#games #genre/action"));
        assert!(says_nothing("...."));
        assert!(says_nothing(
            "```dataview\nTABLE WITHOUT ID file.link\nFROM [[]]\n```\n\n````query\nbirthday\n````"
        ));
        assert!(!says_nothing("#books\n\npagesRead:: 55"));
        assert!(!says_nothing("```rust\nfn main() {}\n```"));
        // A query block ends at its fence; what follows is read.
        assert!(!says_nothing("```dataview\nLIST\n```\nMet at the gym."));
    }

    #[test]
    fn fenced_code_is_not_split_at_its_blank_lines() {
        let code = "```rust\nfn a() {}\n\n\nfn b() {}\n```";
        let indented = "  ~~~\n  one\n\n  two\n  ~~~";
        let text =
            format!("# Code\n\nBefore the code.\n\n{code}\n\nAfter.\n\n{indented}\n\nEnd.\n");
        let got: Vec<String> = split(&text, 40).into_iter().map(|(_, t)| t).collect();
        // Each fence stays whole in one passage (packed with its neighbours when they fit).
        assert_eq!(got.len(), 3, "{got:#?}");
        assert_eq!(got[1], code);
        assert!(got[2].contains(indented.trim_start()), "{got:#?}");
        // An inline ```code``` span opens no fence.
        let text = "```inline``` span\n\nsecond paragraph here\n";
        assert_eq!(split(text, 25).len(), 2);
    }

    #[test]
    fn passages_skip_setext_underlines_comments_and_blank_notes() {
        let got = split("Title\n=====\n\nText under a setext heading.\n", 100);
        assert_eq!(
            got,
            [(
                "Title".to_string(),
                "Text under a setext heading.".to_string()
            )]
        );
        assert!(split("---\na: 1\n---\n\n  \n", 100).is_empty());
        assert!(split("# Only a heading\n\n## And another\n", 100).is_empty());
        // A heading inside a comment is no heading: its text stays in the passage.
        let got = split("# Real\nkept %%\n# fake\n%% too\n", 100);
        assert_eq!(
            got,
            [("Real".to_string(), "kept %%\n# fake\n%% too".to_string())]
        );
    }
}
