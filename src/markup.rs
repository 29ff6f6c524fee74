//! Obsidian markup as the text a reader sees, for readers that are not Obsidian: a model reading
//! a source, a person reading a quiz item. Wikilinks become the text Obsidian shows for them,
//! embeds and comments go, and the marks that only style or address text (callout types, bold,
//! highlight, HTML tags, block ids, footnote marks) are dropped. Every word of the text stays,
//! and so do Markdown's lines, lists and tables: a model reads those well, and they cost little.
//!
//! Code (fenced blocks and inline spans) is left as written: there the marks are the text, as in
//! a note that explains the syntax. Links are found by the vault server's own scanner
//! ([`obsidian_kb::links`]), so a link is read here exactly as the server reads it.

use std::ops::Range;
use std::sync::LazyLock;

use obsidian_kb::links::{LinkKind, scan_wikilinks};
use regex::{Captures, Regex};

/// `text` with Obsidian's markup rendered as plain text, code left as written.
pub fn plain(text: &str) -> String {
    static BLANK_LINES: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\n[ \t]*(?:\n[ \t]*)+\n").expect("valid regex"));
    let mut out = String::with_capacity(text.len());
    let mut prose = String::new();
    for (piece, code) in code_and_prose(text) {
        if code {
            out.push_str(&prose_as_plain(&prose));
            prose.clear();
            out.push_str(piece);
        } else {
            prose.push_str(piece);
        }
    }
    out.push_str(&prose_as_plain(&prose));
    BLANK_LINES.replace_all(&out, "\n\n").trim().to_string()
}

/// `text` cut into code (fenced blocks, inline spans) and the prose around it, in order.
fn code_and_prose(text: &str) -> Vec<(&str, bool)> {
    let mut pieces = Vec::new();
    let mut prose_start = 0;
    let mut fence: Option<(usize, &str)> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(marker)) => fence = Some((start, marker)),
            (Some((open, marker)), _) if start > open && trimmed.starts_with(marker) => {
                push_piece(&mut pieces, text, prose_start..open, false);
                push_piece(&mut pieces, text, open..at, true);
                prose_start = at;
                fence = None;
            }
            (Some(_), _) => {}
            (None, None) => {
                // Inline spans: a run of backticks closed by a run as long, on the same line.
                let mut i = 0;
                while let Some(open) = line[i..].find('`').map(|o| i + o) {
                    let ticks = line[open..].bytes().take_while(|&b| b == b'`').count();
                    let run = &line[open..open + ticks];
                    let Some(close) = line[open + ticks..].find(run).map(|c| open + ticks + c)
                    else {
                        break;
                    };
                    push_piece(&mut pieces, text, prose_start..start + open, false);
                    push_piece(&mut pieces, text, start + open..start + close + ticks, true);
                    prose_start = start + close + ticks;
                    i = close + ticks;
                }
            }
        }
    }
    // An unclosed fence runs to the end, as Markdown reads it.
    match fence {
        Some((open, _)) => {
            push_piece(&mut pieces, text, prose_start..open, false);
            push_piece(&mut pieces, text, open..text.len(), true);
        }
        None => push_piece(&mut pieces, text, prose_start..text.len(), false),
    }
    pieces
}

fn push_piece<'a>(
    pieces: &mut Vec<(&'a str, bool)>,
    text: &'a str,
    span: Range<usize>,
    code: bool,
) {
    if !span.is_empty() {
        pieces.push((&text[span], code));
    }
}

/// Prose with Obsidian's markup rendered as plain text.
fn prose_as_plain(text: &str) -> String {
    static COMMENT: LazyLock<Regex> =
        // An unclosed `%%` runs to the end, as Obsidian reads it.
        LazyLock::new(|| Regex::new(r"(?s)%%.*?(?:%%|\z)").expect("valid regex"));
    static MARKDOWN_LINK: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(!?)\[([^\]\n]*)\]\([^)\n]*\)").expect("valid regex"));
    static CALLOUT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?m)^((?:[ \t]*>[ \t]?)+)\[![\w-]+\][+-]?[ \t]*").expect("valid regex")
    });
    static STYLE: LazyLock<Regex> = LazyLock::new(|| {
        // Bold, highlight and HTML tags; `<` not followed by a letter or `/` is left alone
        // (`a < b`).
        Regex::new(r"\*\*|==|</?[A-Za-z][^<>\n]*>").expect("valid regex")
    });
    static BLOCK_ID: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)[ \t]*\^[A-Za-z0-9-]+[ \t]*$").expect("valid regex"));
    static FOOTNOTE_MARK: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\[\^[^\]\s]+\]").expect("valid regex"));

    let text = COMMENT.replace_all(text, "");
    let text = wikilinks_as_shown(&text);
    let text = MARKDOWN_LINK.replace_all(&text, |c: &Captures| {
        if c[1].is_empty() {
            c[2].to_string()
        } else {
            String::new()
        }
    });
    let text = CALLOUT.replace_all(&text, "$1");
    let text = STYLE.replace_all(&text, "");
    let text = BLOCK_ID.replace_all(&text, "");
    FOOTNOTE_MARK.replace_all(&text, "").into_owned()
}

/// `text` with each wikilink replaced by what Obsidian shows for it (its display text, else
/// `Note > Heading`, the note's name or the heading) and each embed removed.
fn wikilinks_as_shown(text: &str) -> String {
    let mut links = Vec::new();
    let mut spans = Vec::new();
    scan_wikilinks(text, LinkKind::Wiki, &mut links, &mut spans);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (link, span) in links.iter().zip(spans) {
        out.push_str(&text[at..span.start]);
        at = span.end;
        if link.embed {
            continue;
        }
        let inner = &text[span.start + 2..span.end - 2];
        if let Some(pipe) = inner.find('|') {
            out.push_str(inner[pipe + 1..].trim());
            continue;
        }
        let name = link.path.rsplit('/').next().unwrap_or("");
        let name = name.strip_suffix(".md").unwrap_or(name);
        // A block reference (`#^id`) shows the note's name; a heading chain its last heading.
        let heading = link
            .subpath
            .as_deref()
            .filter(|s| !s.starts_with('^'))
            .and_then(|s| s.rsplit('#').next());
        match (name.is_empty(), heading) {
            (true, Some(heading)) => out.push_str(heading),
            (false, Some(heading)) => {
                out.push_str(name);
                out.push_str(" > ");
                out.push_str(heading);
            }
            (_, None) => out.push_str(name),
        }
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn wikilinks_read_as_obsidian_shows_them() {
        assert_eq!(
            plain(
                "See [[Core plugins|core plugin]], [[Folder/Settings.md]] and [[#Sync history]]."
            ),
            "See core plugin, Settings and Sync history."
        );
        assert_eq!(
            plain("Open [[Plans and storage limits#Storage]] or [[Note#^abc123]]."),
            "Open Plans and storage limits > Storage or Note."
        );
        assert_eq!(plain("| [[Note\\|alias]] | x |"), "| alias | x |");
    }

    #[test]
    fn embeds_images_and_comments_go() {
        assert_eq!(
            plain("Before ![[image.png|100]] after ![alt](pic.png).%%hidden [[Link]]%% End"),
            "Before  after . End"
        );
        assert_eq!(plain("Kept %%never closed\nstill hidden"), "Kept");
    }

    #[test]
    fn style_marks_go_and_the_words_stay() {
        assert_eq!(
            plain("> [!info]+ Info\n> Kept for **7 days**, ==always==, <u>two weeks</u>. ^note-1"),
            "> Info\n> Kept for 7 days, always, two weeks."
        );
        assert_eq!(plain("A fact.[^1] And a < b."), "A fact. And a < b.");
        assert_eq!(
            plain("Read the [guide](https://example.com/guide) first."),
            "Read the guide first."
        );
    }

    #[test]
    fn code_is_left_as_written() {
        assert_eq!(
            plain("Type `==text==` or ``a ` [[b]]`` to **mark** it."),
            "Type `==text==` or ``a ` [[b]]`` to mark it."
        );
        assert_eq!(
            plain("Run:\n```md\n**bold** [[Link]]\n```\nthen [[Done]]."),
            "Run:\n```md\n**bold** [[Link]]\n```\nthen Done."
        );
        assert_eq!(plain("~~~\n==open fence"), "~~~\n==open fence");
    }

    #[test]
    fn lists_and_tables_keep_their_lines() {
        let text = "1. Open **Settings**.\n2. Select [[File recovery]].\n\n\n\n| a | b |";
        assert_eq!(
            plain(text),
            "1. Open Settings.\n2. Select File recovery.\n\n| a | b |"
        );
    }
}
