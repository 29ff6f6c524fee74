//! Names: how a link target or a caller's note reference becomes a note, the way Obsidian
//! resolves `[[wikilinks]]` (path, shortest unique path, bare name closest to the linking note,
//! aliases; NFC-normalised and case-insensitive), plus the forgiving-but-safe cleanup of
//! references typed by a model (`note://` URIs, percent-encoding, `[[brackets]]`).
//!
//! **Invariant:** a reference only ever resolves to a note already in the index; nothing here
//! touches the file system, and hostile forms (`..`, absolute, `file://`, backslashes, drive
//! letters, NUL, encoded dots, hidden folders) are refused before lookup.

use std::collections::{HashMap, HashSet};

use unicode_normalization::UnicodeNormalization;

/// NFC + lowercase: the comparison form of names and paths.
pub fn fold(s: &str) -> String {
    s.nfc().flat_map(char::to_lowercase).collect()
}

/// NFC only: the display form of names and paths.
pub fn nfc(s: &str) -> String {
    s.nfc().collect()
}

/// `s` without a trailing `.md` (any case).
pub fn strip_md(s: &str) -> &str {
    let b = s.as_bytes();
    if b.len() >= 3 && b[b.len() - 3..].eq_ignore_ascii_case(b".md") {
        &s[..s.len() - 3]
    } else {
        s
    }
}

/// What a link points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A note in the index.
    Note(u32),
    /// A non-note file in the vault (image, PDF, canvas).
    Attachment,
    /// Nothing (yet).
    Unresolved,
}

/// Why a caller's reference did not give one note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefError {
    /// The reference has a forbidden form; the text says which (never echoes the input).
    Rejected(&'static str),
    /// No note matches.
    NotFound,
    /// Several notes match equally well.
    Ambiguous(Vec<u32>),
}

/// Lookup tables from names to note ids.
#[derive(Debug, Default)]
pub struct Names {
    by_path: HashMap<String, Vec<u32>>,
    by_name: HashMap<String, Vec<u32>>,
    by_alias: HashMap<String, Vec<u32>>,
    /// Note id → (folded path, the key as written).
    paths: HashMap<u32, (String, String)>,
    attachments: HashSet<String>,
    attachment_names: HashMap<String, u32>,
}

/// The parts of a note that names are built from.
pub struct NoteNames<'a> {
    /// NFC key: vault-relative path without `.md`.
    pub key: &'a str,
    /// Title (file name without `.md`).
    pub title: &'a str,
    /// Aliases from frontmatter.
    pub aliases: &'a [String],
}

fn push(map: &mut HashMap<String, Vec<u32>>, k: String, id: u32) {
    let v = map.entry(k).or_default();
    if !v.contains(&id) {
        v.push(id);
    }
}

fn pull(map: &mut HashMap<String, Vec<u32>>, k: &str, id: u32) {
    if let Some(v) = map.get_mut(k) {
        v.retain(|x| *x != id);
        if v.is_empty() {
            map.remove(k);
        }
    }
}

fn folder_of(key: &str) -> &str {
    key.rfind('/').map_or("", |i| &key[..i])
}

impl Names {
    /// Registers a note.
    pub fn add(&mut self, id: u32, n: &NoteNames<'_>) {
        let path = fold(n.key);
        push(&mut self.by_path, path.clone(), id);
        push(&mut self.by_name, fold(n.title), id);
        for a in n.aliases {
            push(&mut self.by_alias, fold(a), id);
        }
        self.paths.insert(id, (path, n.key.to_string()));
    }

    /// Unregisters a note (pass the same names it was added with).
    pub fn remove(&mut self, id: u32, n: &NoteNames<'_>) {
        pull(&mut self.by_path, &fold(n.key), id);
        pull(&mut self.by_name, &fold(n.title), id);
        for a in n.aliases {
            pull(&mut self.by_alias, &fold(a), id);
        }
        self.paths.remove(&id);
    }

    /// Registers a non-note file (vault-relative path).
    pub fn add_attachment(&mut self, rel: &str) {
        let f = fold(rel);
        let name = f.rsplit('/').next().unwrap_or(&f).to_string();
        if self.attachments.insert(f) {
            *self.attachment_names.entry(name).or_default() += 1;
        }
    }

    /// Unregisters a non-note file.
    pub fn remove_attachment(&mut self, rel: &str) {
        let f = fold(rel);
        if self.attachments.remove(&f) {
            let name = f.rsplit('/').next().unwrap_or(&f).to_string();
            if let Some(c) = self.attachment_names.get_mut(&name) {
                *c -= 1;
                if *c == 0 {
                    self.attachment_names.remove(&name);
                }
            }
        }
    }

    /// Whether a non-note file is registered.
    pub fn has_attachment(&self, rel: &str) -> bool {
        self.attachments.contains(&fold(rel))
    }

    /// Every registered attachment path (folded).
    pub fn attachments(&self) -> impl Iterator<Item = &String> {
        self.attachments.iter()
    }

    /// Every attachment path (folded) under a folded folder prefix.
    pub fn attachments_under(&self, folded_dir: &str) -> Vec<String> {
        let prefix = format!("{folded_dir}/");
        self.attachments
            .iter()
            .filter(|a| a.starts_with(&prefix) || *a == folded_dir)
            .cloned()
            .collect()
    }

    /// The notes whose folded path ends in `/{tail}` (a partial path such as `b/Note`).
    fn ending_in(&self, tail: &str) -> Vec<u32> {
        let suffix = format!("/{tail}");
        self.paths
            .iter()
            .filter(|(_, (folded, _))| folded.ends_with(&suffix))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Picks one of several candidate notes for a link written in `from_folder` (folded):
    /// the one sharing the longest folder prefix, then the shortest path, then by name.
    fn closest(&self, ids: &[u32], from_folder: &str) -> Option<u32> {
        ids.iter().copied().min_by_key(|id| {
            let p = self.paths.get(id).map_or("", |(p, _)| p.as_str());
            let shared = folder_of(p)
                .split('/')
                .zip(from_folder.split('/'))
                .take_while(|(a, b)| a == b && !a.is_empty())
                .count();
            (usize::MAX - shared, p.len(), p.to_string())
        })
    }

    /// Resolves a link path (as written, decoded) from a note in folder `from_folder` (folded).
    pub fn resolve_link(&self, path: &str, from_folder: &str) -> Target {
        let p = fold(path.trim());
        let p = p.trim_start_matches('/');
        let p = p.strip_prefix("./").unwrap_or(p);
        if p.is_empty() {
            return Target::Unresolved;
        }
        let note_p = strip_md(p);
        let found = if note_p.contains('/') {
            let joined = join_relative(from_folder, note_p);
            self.by_path
                .get(&joined)
                .or_else(|| self.by_path.get(note_p))
                .and_then(|ids| self.closest(ids, from_folder))
                .or_else(|| self.closest(&self.ending_in(note_p), from_folder))
        } else {
            self.by_name
                .get(note_p)
                .and_then(|ids| self.closest(ids, from_folder))
        };
        if let Some(id) = found.or_else(|| {
            self.by_alias
                .get(p)
                .and_then(|ids| self.closest(ids, from_folder))
        }) {
            return Target::Note(id);
        }
        let name = p.rsplit('/').next().unwrap_or(p);
        if self.attachments.contains(p) || self.attachment_names.contains_key(name) {
            return Target::Attachment;
        }
        Target::Unresolved
    }

    /// Resolves a caller's reference: a `note://` URI (encoded or not), a vault-relative path
    /// (with or without `.md`), a `[[wikilink]]`, a bare note name or an alias.
    pub fn resolve_ref(&self, input: &str) -> Result<u32, RefError> {
        let forms = clean_ref(input)?;
        for form in &forms {
            if let Some(r) = self.lookup(form) {
                return r;
            }
        }
        // `Note#Heading`: forgive a heading suffix.
        for form in &forms {
            if let Some((head, _)) = form.split_once('#')
                && let Some(r) = self.lookup(head.trim())
            {
                return r;
            }
        }
        Err(RefError::NotFound)
    }

    fn lookup(&self, form: &str) -> Option<Result<u32, RefError>> {
        let f = fold(form);
        let p = strip_md(&f);
        if p.is_empty() {
            return None;
        }
        let pick = |ids: &Vec<u32>| -> Result<u32, RefError> {
            if ids.len() == 1 {
                return Ok(ids[0]);
            }
            // Same path in different case or normalisation: prefer the exact spelling.
            let exact = nfc(strip_md(form));
            if let Some(id) = ids
                .iter()
                .find(|id| self.paths.get(id).is_some_and(|(_, k)| *k == exact))
            {
                return Ok(*id);
            }
            let mut ids = ids.clone();
            ids.sort_by_key(|id| self.paths.get(id).map(|(p, _)| p.clone()));
            Err(RefError::Ambiguous(ids))
        };
        if let Some(ids) = self.by_path.get(p) {
            return Some(pick(ids));
        }
        if !p.contains('/') {
            if let Some(ids) = self.by_name.get(p) {
                return Some(pick(ids));
            }
        } else {
            let ids = self.ending_in(p);
            if !ids.is_empty() {
                return Some(pick(&ids));
            }
        }
        self.by_alias.get(&f).map(pick)
    }
}

/// Joins a relative link path onto a folder, resolving `.`/`..` as strings (clamped at the
/// vault root: link text can never name anything outside it).
fn join_relative(folder: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = if rel.starts_with("../") || rel.starts_with("./") {
        folder.split('/').filter(|s| !s.is_empty()).collect()
    } else {
        Vec::new()
    };
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// Cleans a caller's reference into the forms to try, or refuses it.
pub fn clean_ref(input: &str) -> Result<Vec<String>, RefError> {
    if input.contains('\0') {
        return Err(RefError::Rejected(
            "NUL bytes are not allowed in a note reference",
        ));
    }
    let mut s = input
        .trim()
        .trim_matches(|c| matches!(c, '"' | '\'' | '`' | '<' | '>'))
        .trim();
    s = s.strip_prefix('!').unwrap_or(s);
    if let Some(inner) = s.strip_prefix("[[").and_then(|x| x.strip_suffix("]]")) {
        s = inner.split('|').next().unwrap_or(inner).trim();
    }
    if s.is_empty() {
        return Err(RefError::Rejected("the note reference is empty"));
    }
    let lower = s.to_ascii_lowercase();
    let raw = if lower.starts_with("note:") {
        let rest = &s[5..];
        rest.strip_prefix("//").unwrap_or(rest)
    } else if has_scheme(s) {
        return Err(RefError::Rejected(
            "only note:// URIs, vault-relative paths and note names are accepted (no file:// or other schemes)",
        ));
    } else {
        s
    };
    let mut forms = vec![raw.to_string()];
    if raw.contains('%') {
        let decoded = percent_encoding::percent_decode_str(raw)
            .decode_utf8_lossy()
            .into_owned();
        let dl = decoded.to_ascii_lowercase();
        if ["%2e", "%2f", "%5c", "%00", "%25"]
            .iter()
            .any(|e| dl.contains(e))
        {
            return Err(RefError::Rejected(
                "double-encoded characters are not allowed in a note reference",
            ));
        }
        if decoded != raw {
            forms.insert(0, decoded);
        }
    }
    for f in &forms {
        check_safe(f)?;
    }
    Ok(forms)
}

fn has_scheme(s: &str) -> bool {
    let Some(i) = s.find("://") else { return false };
    let scheme = &s[..i];
    !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn check_safe(f: &str) -> Result<(), RefError> {
    if f.contains('\0') {
        return Err(RefError::Rejected(
            "NUL bytes are not allowed in a note reference",
        ));
    }
    if f.contains('\\') {
        return Err(RefError::Rejected(
            "backslashes are not allowed; use / between folders",
        ));
    }
    if f.starts_with('/') || f.starts_with('~') {
        return Err(RefError::Rejected(
            "absolute paths are not accepted; use a vault-relative path",
        ));
    }
    let b = f.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err(RefError::Rejected(
            "drive-letter paths are not accepted; use a vault-relative path",
        ));
    }
    for comp in f.split('/') {
        let c = comp.trim();
        if c == ".." || c == "." {
            return Err(RefError::Rejected(
                "`.` and `..` path segments are not allowed",
            ));
        }
        if c.starts_with('.') {
            return Err(RefError::Rejected(
                "hidden files and folders are not part of the vault",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        let mut n = Names::default();
        let notes: [(&str, &str, &[&str]); 5] = [
            ("Home", "Home", &["Start"]),
            ("A/Note", "Note", &[]),
            ("B/Note", "Note", &[]),
            ("B/Deep/Other", "Other", &[]),
            ("Café", "Café", &[]),
        ];
        for (i, (k, t, a)) in notes.iter().enumerate() {
            let aliases: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            n.add(
                i as u32,
                &NoteNames {
                    key: k,
                    title: t,
                    aliases: &aliases,
                },
            );
        }
        n.add_attachment("img/pic.png");
        n
    }

    #[test]
    fn links_resolve_like_obsidian() {
        let n = names();
        assert_eq!(n.resolve_link("home", ""), Target::Note(0));
        assert_eq!(n.resolve_link("Home.md", ""), Target::Note(0));
        assert_eq!(n.resolve_link("Note", "b/deep"), Target::Note(2));
        assert_eq!(n.resolve_link("Note", ""), Target::Note(1));
        assert_eq!(n.resolve_link("Deep/Other", ""), Target::Note(3));
        assert_eq!(n.resolve_link("../Note", "b/deep"), Target::Note(2));
        assert_eq!(n.resolve_link("start", ""), Target::Note(0));
        assert_eq!(n.resolve_link("pic.png", ""), Target::Attachment);
        assert_eq!(n.resolve_link("Missing", ""), Target::Unresolved);
        assert_eq!(n.resolve_link("Cafe\u{301}", ""), Target::Note(4));
    }

    #[test]
    fn refs_are_forgiving() {
        let n = names();
        assert_eq!(n.resolve_ref("note://A/Note"), Ok(1));
        assert_eq!(n.resolve_ref("note://B%2FDeep%2FOther"), Ok(3));
        assert_eq!(n.resolve_ref("note://Caf%C3%A9"), Ok(4));
        assert_eq!(n.resolve_ref("A/Note.md"), Ok(1));
        assert_eq!(n.resolve_ref("[[Home|x]]"), Ok(0));
        assert_eq!(n.resolve_ref(" 'start' "), Ok(0));
        assert_eq!(n.resolve_ref("Home#Section"), Ok(0));
        assert_eq!(n.resolve_ref("Note"), Err(RefError::Ambiguous(vec![1, 2])));
        assert_eq!(n.resolve_ref("Nope"), Err(RefError::NotFound));
    }

    #[test]
    fn hostile_refs_are_rejected() {
        let n = names();
        for bad in [
            "../etc/passwd",
            "/etc/passwd",
            "file:///etc/passwd",
            "C:\\x",
            "c:/x",
            "a\\b",
            "%2e%2e/x",
            "%252e%252e/x",
            "a/\0b",
            ".obsidian/app",
            "note://../x",
            "~/x",
            "note:///etc/passwd",
            "a/./b",
            "http://x/y",
        ] {
            assert!(
                matches!(n.resolve_ref(bad), Err(RefError::Rejected(_))),
                "{bad:?}"
            );
        }
    }
}
