//! Link syntax: wikilinks and embeds (`[[Note#Heading|shown]]`, `![[img.png|100]]`) found in
//! text, and markdown link destinations turned into link targets. Pure parsing; resolving a
//! target to a note is `resolve.rs`'s job.

use std::ops::Range;

/// Where a link was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// `[[...]]` in the body.
    Wiki,
    /// `[text](dest)` in the body.
    Markdown,
    /// A `[[...]]` inside a frontmatter property.
    Frontmatter,
}

/// One link as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The target as written, without display text (`Note#Heading`).
    pub target: String,
    /// The path part (`Note`, `Folder/Note.md`, `img.png`); empty for same-note links.
    pub path: String,
    /// The part after the first `#` (heading chain or `^blockid`), if any.
    pub subpath: Option<String>,
    /// Whether it is an embed (`![[...]]` or `![](...)`).
    pub embed: bool,
    /// Where it was written.
    pub kind: LinkKind,
}

/// Finds every wikilink/embed in `text`, pushing links and the byte spans they cover.
/// Wikilinks never span lines. Linear in the length of `text`: every byte is looked at a
/// bounded number of times, however many `[[` a line holds (a hostile 512 KB line of `[[`
/// once took 13 s here).
pub fn scan_wikilinks(
    text: &str,
    kind: LinkKind,
    out: &mut Vec<Link>,
    spans: &mut Vec<Range<usize>>,
) {
    let bytes = text.as_bytes();
    let mut i = 0;
    // End of the line holding `i` (exclusive), found once per line rather than once per `[[`.
    let mut line_end = 0;
    while let Some(off) = text[i..].find("[[") {
        let open = i + off;
        if open >= line_end {
            line_end = text[open..].find('\n').map_or(text.len(), |e| open + e);
        }
        let inner_start = open + 2;
        // The first `]]` after the opener closes it; with none on this line, no later `[[` on
        // the line can close either, so the scan moves to the next line.
        let Some(close_off) = text[inner_start..line_end].find("]]") else {
            i = line_end;
            continue;
        };
        let close = inner_start + close_off;
        // `[[a [[b]]`: the innermost opener before the close owns it.
        let open = match text[inner_start..close].rfind("[[") {
            Some(nested) => inner_start + nested,
            None => open,
        };
        let inner = &text[open + 2..close];
        let embed = open > 0 && bytes[open - 1] == b'!';
        // One span per link pushed, in the same order (callers zip them).
        if let Some(link) = parse_inner(inner, embed, kind) {
            out.push(link);
            spans.push(if embed { open - 1 } else { open }..close + 2);
        }
        i = close + 2;
    }
}

/// Parses the inside of `[[...]]`.
fn parse_inner(inner: &str, embed: bool, kind: LinkKind) -> Option<Link> {
    // Display text starts at the first `|` (written `\|` inside tables).
    let target = match inner.find('|') {
        Some(p) => inner[..p].strip_suffix('\\').unwrap_or(&inner[..p]),
        None => inner,
    }
    .trim();
    if target.is_empty() {
        return None;
    }
    let (path, subpath) = match target.find('#') {
        Some(p) => (target[..p].trim(), Some(target[p + 1..].trim().to_string())),
        None => (target, None),
    };
    Some(Link {
        target: target.to_string(),
        path: path.to_string(),
        subpath: subpath.filter(|s| !s.is_empty()),
        embed,
        kind,
    })
}

/// Turns a markdown link destination into a vault link, or `None` for external URLs and
/// same-page anchors. The destination is percent-decoded.
pub fn markdown_link(dest: &str, embed: bool) -> Option<Link> {
    let dest = dest.trim();
    if dest.is_empty() || dest.starts_with('#') || has_scheme(dest) || dest.starts_with("//") {
        return None;
    }
    let decoded = percent_encoding::percent_decode_str(dest)
        .decode_utf8_lossy()
        .into_owned();
    let (path, subpath) = match decoded.find('#') {
        Some(p) => (decoded[..p].to_string(), Some(decoded[p + 1..].to_string())),
        None => (decoded.clone(), None),
    };
    if path.is_empty() {
        return None;
    }
    Some(Link {
        target: decoded,
        path,
        subpath: subpath.filter(|s| !s.is_empty()),
        embed,
        kind: LinkKind::Markdown,
    })
}

/// Whether a destination starts with a URL scheme (`https:`, `mailto:`, `obsidian:`).
fn has_scheme(s: &str) -> bool {
    let Some(colon) = s.find(':') else {
        return false;
    };
    let scheme = &s[..colon];
    // One letter is a Windows drive, not a scheme; either way it is not a vault link.
    !scheme.is_empty()
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wl(text: &str) -> Vec<Link> {
        let mut out = Vec::new();
        scan_wikilinks(text, LinkKind::Wiki, &mut out, &mut Vec::new());
        out
    }

    #[test]
    fn wikilink_forms() {
        let l = wl("see [[Note]] and [[Folder/Note.md|shown]] and ![[img.png|100x145]]");
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].path, "Note");
        assert_eq!(l[1].path, "Folder/Note.md");
        assert!(l[2].embed);
        assert_eq!(l[2].path, "img.png");
        let l = wl("[[Note#H1#H2]] [[#Local]] [[N#^block]] [[T\\|alias]]");
        assert_eq!(l[0].subpath.as_deref(), Some("H1#H2"));
        assert_eq!(l[1].path, "");
        assert_eq!(l[1].subpath.as_deref(), Some("Local"));
        assert_eq!(l[2].subpath.as_deref(), Some("^block"));
        assert_eq!(l[3].path, "T");
        assert!(wl("[[broken\n]]").is_empty());
        assert_eq!(wl("[[a [[b]]")[0].path, "b");
    }

    /// The scan as first written (quadratic on lines full of `[[`): the reference semantics.
    fn naive(text: &str) -> Vec<(Link, Range<usize>)> {
        let (mut out, bytes, mut i) = (Vec::new(), text.as_bytes(), 0);
        while let Some(off) = text[i..].find("[[") {
            let open = i + off;
            let inner_start = open + 2;
            let line_end = text[inner_start..]
                .find('\n')
                .map_or(text.len(), |e| inner_start + e);
            let Some(close_off) = text[inner_start..line_end].find("]]") else {
                i = inner_start;
                continue;
            };
            let close = inner_start + close_off;
            let inner = &text[inner_start..close];
            if let Some(nested) = inner.rfind("[[") {
                i = inner_start + nested;
                continue;
            }
            let embed = open > 0 && bytes[open - 1] == b'!';
            if let Some(link) = parse_inner(inner, embed, LinkKind::Wiki) {
                out.push((link, if embed { open - 1 } else { open }..close + 2));
            }
            i = close + 2;
        }
        out
    }

    #[test]
    fn scan_matches_the_reference_on_random_bracket_soup() {
        let alphabet = ['[', '[', ']', ']', '!', '|', '#', '\n', 'a', 'b', ' '];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..3000 {
            let mut text = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            for _ in 0..(seed % 60) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            let (mut links, mut spans) = (Vec::new(), Vec::new());
            scan_wikilinks(&text, LinkKind::Wiki, &mut links, &mut spans);
            let got: Vec<(Link, Range<usize>)> = links.into_iter().zip(spans).collect();
            assert_eq!(got, naive(&text), "{text:?}");
        }
    }

    #[test]
    fn hostile_lines_of_openers_are_scanned_once() {
        // 512 KB of `[[` on one line: no link, and (before the fix) 13 s of rescanning.
        let soup = "[[".repeat(256 * 1024);
        assert!(wl(&soup).is_empty());
        // The same with a close at the very end: one link, owned by the last opener.
        let l = wl(&format!("{soup}x]]"));
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].path, "x");
        // Openers on one line never pair with a close on the next.
        assert!(wl(&format!("{soup}\n]]")).is_empty());
        // 100k links on one line are all found.
        let many: String = (0..100_000).map(|i| format!("[[n{i}]] ")).collect();
        let l = wl(&many);
        assert_eq!(l.len(), 100_000);
        assert_eq!(l[99_999].path, "n99999");
    }

    #[test]
    fn markdown_destinations() {
        let l = markdown_link("Other%20Note.md#Part", false).unwrap();
        assert_eq!(l.path, "Other Note.md");
        assert_eq!(l.subpath.as_deref(), Some("Part"));
        assert!(markdown_link("https://example.com", false).is_none());
        assert!(markdown_link("#anchor", false).is_none());
        assert!(markdown_link("mailto:a@b", false).is_none());
    }
}
