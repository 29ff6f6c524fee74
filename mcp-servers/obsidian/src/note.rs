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
    let want = normalize_heading(name);
    let idx = headings
        .iter()
        .position(|h| normalize_heading(&h.text) == want)?;
    let h = &headings[idx];
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
}
