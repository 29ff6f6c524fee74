//! Body tags per Obsidian's rules: `#` at a line start or after whitespace, then letters, digits,
//! `_`, `-`, `/` or non-ASCII letters/emoji, with at least one non-digit. The caller masks out
//! code, comments, math and HTML first (see `note.rs`).

/// Whether `c` may appear in a tag.
fn is_tag_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/');
    }
    !c.is_whitespace() && !is_unicode_punct(c)
}

/// Non-ASCII punctuation that ends a tag (CJK and general punctuation, Latin-1 symbols).
fn is_unicode_punct(c: char) -> bool {
    matches!(c as u32,
        0x00A0..=0x00BF | 0x2000..=0x206F | 0x3000..=0x303F | 0xFF01..=0xFF0F | 0xFF1A..=0xFF20
        | 0xFF3B..=0xFF40 | 0xFF5B..=0xFF65)
}

/// Finds body tags in already-masked text; pushes them without `#`, as written.
pub fn scan(text: &str, out: &mut Vec<String>) {
    let mut prev: Option<char> = None;
    let mut after_tag = false;
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if c == '#' && (after_tag || prev.is_none_or(char::is_whitespace)) {
            let start = i + 1;
            let mut end = start;
            while let Some(&(j, d)) = iter.peek() {
                if !is_tag_char(d) {
                    break;
                }
                end = j + d.len_utf8();
                iter.next();
            }
            let tag = text[start..end].trim_end_matches('/');
            after_tag = false;
            if tag.chars().any(|d| !d.is_ascii_digit() && d != '/') {
                out.push(tag.to_string());
                after_tag = true;
            }
            prev = text[..end].chars().next_back();
            continue;
        }
        after_tag = false;
        prev = Some(c);
    }
}

/// The canonical form of a tag for comparing and counting: no `#`, lowercase.
pub fn normalize(tag: &str) -> String {
    tag.trim().trim_start_matches('#').to_lowercase()
}

/// Whether a note tag matches a tag filter: equal, or nested under it (`a/b` matches `a`).
pub fn matches_filter(tag: &str, filter: &str) -> bool {
    tag == filter
        || (tag.len() > filter.len()
            && tag.starts_with(filter)
            && tag.as_bytes()[filter.len()] == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(t: &str) -> Vec<String> {
        let mut v = Vec::new();
        scan(t, &mut v);
        v
    }

    #[test]
    fn obsidian_tag_rules() {
        assert_eq!(
            tags("#a #b/c d#e (#f) #1984 #y1984 #1990s"),
            vec!["a", "b/c", "y1984", "1990s"]
        );
        assert_eq!(tags("#a#b"), vec!["a", "b"]);
        assert_eq!(tags("# Heading"), Vec::<String>::new());
        assert_eq!(
            tags("#日本語、次 #🚀launch #café."),
            vec!["日本語", "🚀launch", "café"]
        );
        assert_eq!(tags("http://x.com/#frag"), Vec::<String>::new());
        assert_eq!(tags("line\n#start"), vec!["start"]);
    }

    #[test]
    fn filters_and_case() {
        assert!(matches_filter("a/b", "a"));
        assert!(!matches_filter("ab", "a"));
        assert_eq!(normalize("#Project/Alpha"), "project/alpha");
    }
}
