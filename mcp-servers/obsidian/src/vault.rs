//! The vault on disk: walking it, deciding what is a note, and opening files read-only without
//! ever leaving the vault root.
//!
//! **Invariant:** every path this module hands out is vault-relative, and every file it opens is
//! checked, after resolving symlinks, to lie inside the canonical vault root (compared component by
//! component, so `/vault` never matches `/vault-secret`). Nothing here writes.
//!
//! Symlink policy: a symlinked *file* whose target stays inside the vault (and outside hidden
//! folders) is a note under the link's own path; a symlink whose target leaves the vault is
//! skipped; symlinked *directories* are never descended (avoids loops and duplicate notes).

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use crate::dates::NoteFormats;
use crate::language::Language;

/// Largest note file that is read; anything bigger is skipped (notes are text, not data dumps).
pub const MAX_NOTE_BYTES: u64 = 8 * 1024 * 1024;

/// Notes [`Vault::language`] reads at most.
pub const LANGUAGE_SAMPLE_NOTES: usize = 64;
/// Bytes of each note [`Vault::language`] reads at most.
pub const LANGUAGE_SAMPLE_BYTES: usize = 4096;

/// Platform constants the standard library does not name (the workspace denies `unsafe` and
/// takes no `libc` for two numbers).
mod sys {
    /// `O_NONBLOCK`: opening a named pipe for reading without it waits for a writer, forever.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub const O_NONBLOCK: i32 = 0o4000;
    /// `O_NONBLOCK`: opening a named pipe for reading without it waits for a writer, forever.
    #[cfg(any(
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "netbsd",
        target_os = "openbsd",
        target_os = "dragonfly"
    ))]
    pub const O_NONBLOCK: i32 = 0x4;
    /// `ELOOP`: too many levels of symbolic links.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub const ELOOP: i32 = 40;
    /// `ELOOP`: too many levels of symbolic links.
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub const ELOOP: i32 = 62;
}

/// Why a file could not be read or was left out of the index. Messages carry vault-relative
/// paths only.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The file does not exist (any more).
    #[error("`{0}` no longer exists in the vault")]
    Gone(String),
    /// The file resolves outside the vault or into a hidden folder.
    #[error("`{0}` is outside the vault")]
    Outside(String),
    /// The file looks binary: NUL bytes, or too many control characters and invalid UTF-8
    /// sequences for text (see [`looks_binary`]).
    #[error("`{0}` is not a text file")]
    Binary(String),
    /// The path is not a regular file (a named pipe, socket or device put where a note was):
    /// reading one could block forever, so it is never opened for reading.
    #[error("`{0}` is not a regular file")]
    NotAFile(String),
    /// The file is larger than [`MAX_NOTE_BYTES`].
    #[error("`{0}` is too large ({1} bytes)")]
    TooLarge(String, u64),
    /// Parsing the note failed unexpectedly (a bug in a parser; the note is skipped, not fatal).
    #[error("`{0}` could not be parsed")]
    Unparsable(String),
    /// Some other I/O failure; only the error kind is kept (its text may name absolute paths).
    #[error("`{0}` could not be read ({1:?})")]
    Io(String, std::io::ErrorKind),
}

/// A note file found by [`Vault::walk`].
#[derive(Debug, Clone)]
pub struct FoundFile {
    /// Vault-relative path with `/` separators, as stored on disk (not normalised).
    pub rel: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Last modification time.
    pub modified: Option<SystemTime>,
}

/// The result of walking the vault.
#[derive(Debug, Default)]
pub struct WalkResult {
    /// Markdown notes.
    pub notes: Vec<FoundFile>,
    /// Other files (attachments) that links may point at, vault-relative.
    pub attachments: Vec<String>,
    /// Files or folders left out, with a reason (vault-relative, lossy for non-UTF-8 names).
    pub skipped: Vec<(String, &'static str)>,
}

/// A vault root, canonicalised once at start.
#[derive(Debug, Clone)]
pub struct Vault {
    root: PathBuf,
    /// How its periodic notes are named, from its settings as they were at start.
    note_formats: NoteFormats,
}

/// Whether a vault-relative path names something Obsidian hides: any component starting with a
/// dot, or the `.trash` folder (which starts with a dot too).
pub fn is_hidden_rel(rel: &str) -> bool {
    rel.split('/').any(|c| c.starts_with('.') || c.is_empty())
}

/// Whether a vault-relative path is a note (`*.md`, case-insensitive extension).
pub fn is_note_rel(rel: &str) -> bool {
    let b = rel.as_bytes();
    b.len() > 3 && b[b.len() - 3..].eq_ignore_ascii_case(b".md")
}

/// Why a vault folder cannot be served now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// It is not there (deleted, moved, unmounted) or is not a folder.
    Missing,
    /// It is there but cannot be listed (its permissions): not an empty vault.
    Unreadable,
}

impl Unavailable {
    /// What a tool call answers meanwhile.
    pub fn message(self) -> &'static str {
        match self {
            Unavailable::Missing => {
                "The vault folder is missing (deleted, moved or unmounted); the vault is served again once it is back."
            }
            Unavailable::Unreadable => {
                "The vault folder cannot be read (its permissions); the vault is served again once it can be."
            }
        }
    }
}

/// Whether the folder at `root` can be served now, and why not. Lists it (one `getdents`), so
/// that a folder this process may not read is never taken for an empty one.
pub fn unavailable(root: &Path) -> Option<Unavailable> {
    if !root.is_dir() {
        return Some(Unavailable::Missing);
    }
    match std::fs::read_dir(root) {
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Unavailable::Missing),
        Err(_) => Some(Unavailable::Unreadable),
    }
}

impl Vault {
    /// Opens a vault root; fails when it is not a readable directory.
    pub fn open(root: &Path) -> Result<Self, crate::Error> {
        let root = root.canonicalize().map_err(crate::Error::VaultUnreadable)?;
        if !root.is_dir() {
            return Err(crate::Error::VaultNotADirectory);
        }
        // A folder that cannot be listed would index as an empty vault, with no word of why.
        std::fs::read_dir(&root).map_err(crate::Error::VaultUnreadable)?;
        let note_formats = NoteFormats::of_vault(&root);
        Ok(Self { root, note_formats })
    }

    /// How the vault names its daily, weekly and monthly notes.
    pub fn note_formats(&self) -> &NoteFormats {
        &self.note_formats
    }

    /// The canonical root (never sent to a client).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The vault's name as Obsidian knows it: the root folder's own name (never the path to
    /// it), for `obsidian://` links; empty for a root without one (`/`).
    pub fn name(&self) -> String {
        self.root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Turns an absolute path under the root into a vault-relative `/`-separated string;
    /// `None` for paths outside the root or with non-UTF-8 components.
    pub fn rel_of(&self, path: &Path) -> Option<String> {
        let rest = path.strip_prefix(&self.root).ok()?;
        let mut parts = Vec::new();
        for c in rest.components() {
            match c {
                Component::Normal(s) => parts.push(s.to_str()?),
                _ => return None,
            }
        }
        if parts.is_empty() {
            return None;
        }
        Some(parts.join("/"))
    }

    /// The language most of the vault's text is written in ([`Language::detect`] over a
    /// sample: its script, else its words): up to [`LANGUAGE_SAMPLE_NOTES`] notes spread over
    /// the vault, the first [`LANGUAGE_SAMPLE_BYTES`] of each. `None` for a vault in English or
    /// a language Recall does not tell, or one with no readable note. Reads a few hundred
    /// kilobytes at most, so a caller choosing an embedding model can afford it at start.
    pub fn language(&self) -> Option<Language> {
        self.language_of(&self.walk().notes)
    }

    /// [`Vault::language`] of a walk already made.
    pub fn language_of(&self, notes: &[FoundFile]) -> Option<Language> {
        let step = notes.len().div_ceil(LANGUAGE_SAMPLE_NOTES).max(1);
        let mut sample = String::new();
        for note in notes.iter().step_by(step) {
            let Ok(text) = self.read_note(&note.rel) else {
                continue;
            };
            let mut end = text.len().min(LANGUAGE_SAMPLE_BYTES);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            sample.push_str(&text[..end]);
            sample.push('\n');
        }
        Language::detect(&sample)
    }

    /// Walks the whole vault.
    pub fn walk(&self) -> WalkResult {
        self.walk_under(&self.root)
    }

    /// Walks the subtree at `dir` (an absolute path inside the root).
    pub fn walk_under(&self, dir: &Path) -> WalkResult {
        let mut out = WalkResult::default();
        let root = &self.root;
        let walker = walkdir::WalkDir::new(dir)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| {
                e.depth() == 0 || !e.file_name().to_str().is_some_and(|n| n.starts_with('.'))
            });
        for entry in walker {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    // Name it vault-relative (lossily), never absolute; the root itself is ".".
                    let name = match e.path().map(|p| p.strip_prefix(root)) {
                        Some(Ok(p)) if p.as_os_str().is_empty() => ".".to_string(),
                        Some(Ok(p)) => p.to_string_lossy().into_owned(),
                        _ => "(an entry outside the listing)".to_string(),
                    };
                    // walkdir reports a folder it cannot list after yielding the folder itself.
                    let is_dir = e.path().is_some_and(|p| p.is_dir());
                    out.skipped
                        .push((name, unreadable_reason(e.io_error(), is_dir)));
                    continue;
                }
            };
            if entry.depth() == 0 {
                continue;
            }
            let path = entry.path();
            let Some(rel) = self.rel_of(path) else {
                let lossy = path
                    .strip_prefix(root)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.skipped.push((lossy, "file name is not valid UTF-8"));
                continue;
            };
            if is_hidden_rel(&rel) {
                continue;
            }
            let ft = entry.file_type();
            if ft.is_dir() {
                continue;
            }
            let meta = if ft.is_symlink() {
                match self.check_inside(path) {
                    Ok(target) => match std::fs::metadata(&target) {
                        Ok(m) if m.is_dir() => {
                            out.skipped.push((rel, "directory symlink (not followed)"));
                            continue;
                        }
                        Ok(m) => m,
                        Err(_) => {
                            out.skipped.push((rel, "dangling symlink"));
                            continue;
                        }
                    },
                    Err(CheckError::Outside) => {
                        out.skipped.push((rel, "symlink leaves the vault"));
                        continue;
                    }
                    Err(CheckError::Unresolvable(e)) => {
                        let why = match e.kind() {
                            std::io::ErrorKind::NotFound => "dangling symlink",
                            _ => unreadable_reason(Some(&e), false),
                        };
                        out.skipped.push((rel, why));
                        continue;
                    }
                }
            } else {
                match entry.metadata() {
                    Ok(m) => m,
                    Err(_) => {
                        out.skipped.push((rel, "unreadable metadata"));
                        continue;
                    }
                }
            };
            if !meta.is_file() {
                continue;
            }
            if is_note_rel(&rel) {
                out.notes.push(FoundFile::of(rel, &meta));
            } else {
                out.attachments.push(rel);
            }
        }
        out
    }

    /// Whether the folder holding `rel` is a real folder of the vault, reached without a
    /// symlink (watcher events name paths as they were watched; a path that now runs through a
    /// symlink must not be followed). `None` when that folder does not exist (any more).
    pub fn parent_is_real(&self, rel: &str) -> Option<bool> {
        let abs = self.root.join(rel);
        let parent = abs.parent()?;
        // The root is canonical, so a parent without symlinks canonicalises to itself.
        parent.canonicalize().ok().map(|c| c == parent)
    }

    /// Whether `rel` is a file the walk would list (an attachment or a note): a regular file,
    /// or an in-vault symlink to one.
    pub fn is_listed_file(&self, rel: &str) -> bool {
        self.checked_path(rel)
            .and_then(|p| std::fs::metadata(p).map_err(|e| io_err(rel, e)))
            .is_ok_and(|m| m.is_file())
    }

    /// Stats one vault-relative note path (following an in-vault symlink).
    pub fn stat(&self, rel: &str) -> Result<FoundFile, VaultError> {
        let path = self.checked_path(rel)?;
        let meta = std::fs::metadata(&path).map_err(|e| io_err(rel, e))?;
        if !meta.is_file() {
            return Err(VaultError::Gone(rel.into()));
        }
        Ok(FoundFile::of(rel.to_string(), &meta))
    }

    /// Reads a note as text. `rel` must be vault-relative with `/` separators; the resolved file
    /// must lie inside the vault and be a regular file (a pipe is refused without waiting on
    /// it). A little invalid UTF-8 is decoded lossily; a binary file is refused.
    pub fn read_note(&self, rel: &str) -> Result<String, VaultError> {
        let path = self.checked_path(rel)?;
        let file = open_read_only(&path).map_err(|e| io_err(rel, e))?;
        // Checked on the opened file, not the path: the file may have been swapped meanwhile.
        let meta = file.metadata().map_err(|e| io_err(rel, e))?;
        if !meta.is_file() {
            return Err(if meta.is_dir() {
                VaultError::Gone(rel.into())
            } else {
                VaultError::NotAFile(rel.into())
            });
        }
        if meta.len() > MAX_NOTE_BYTES {
            return Err(VaultError::TooLarge(rel.into(), meta.len()));
        }
        let mut buf = Vec::with_capacity(meta.len() as usize);
        file.take(MAX_NOTE_BYTES)
            .read_to_end(&mut buf)
            .map_err(|e| io_err(rel, e))?;
        if looks_binary(&buf) {
            return Err(VaultError::Binary(rel.into()));
        }
        Ok(match String::from_utf8(buf) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// Builds the absolute path for a vault-relative one, refusing anything that is not plain
    /// `Normal` components, is hidden, or resolves (through symlinks) outside the root.
    fn checked_path(&self, rel: &str) -> Result<PathBuf, VaultError> {
        if rel.is_empty() || rel.contains('\0') || rel.contains('\\') || is_hidden_rel(rel) {
            return Err(VaultError::Outside(rel.into()));
        }
        let mut path = self.root.clone();
        for c in Path::new(rel).components() {
            match c {
                Component::Normal(s) => path.push(s),
                _ => return Err(VaultError::Outside(rel.into())),
            }
        }
        let canonical = self.check_inside(&path).map_err(|e| match e {
            CheckError::Unresolvable(e) => io_err(rel, e),
            CheckError::Outside => VaultError::Outside(rel.into()),
        })?;
        Ok(canonical)
    }

    /// Canonicalises `path` and checks that it lies inside the root and not in a hidden folder.
    fn check_inside(&self, path: &Path) -> Result<PathBuf, CheckError> {
        let canonical = path.canonicalize().map_err(CheckError::Unresolvable)?;
        // Path::starts_with compares whole components: /vault does not prefix /vault-secret.
        if !canonical.starts_with(&self.root) || canonical == self.root {
            return Err(CheckError::Outside);
        }
        let rest = canonical
            .strip_prefix(&self.root)
            .map_err(|_| CheckError::Outside)?;
        for c in rest.components() {
            match c {
                Component::Normal(s) if !s.to_string_lossy().starts_with('.') => {}
                _ => return Err(CheckError::Outside),
            }
        }
        Ok(canonical)
    }
}

enum CheckError {
    /// Resolving failed: missing, a symlink loop, a path too long, no permission.
    Unresolvable(std::io::Error),
    /// It resolves outside the root or into a hidden folder.
    Outside,
}

impl FoundFile {
    /// A file found at `rel` with these metadata.
    pub fn of(rel: String, meta: &Metadata) -> Self {
        Self {
            rel,
            bytes: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

fn io_err(rel: &str, e: std::io::Error) -> VaultError {
    if e.kind() == std::io::ErrorKind::NotFound {
        VaultError::Gone(rel.into())
    } else {
        VaultError::Io(rel.into(), e.kind())
    }
}

/// Opens a file for reading only, without blocking in `open` when it turns out to be a named
/// pipe (a note can be replaced by one between the index and the read). On a regular file
/// `O_NONBLOCK` changes nothing.
fn open_read_only(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "netbsd",
        target_os = "openbsd",
        target_os = "dragonfly"
    ))]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(sys::O_NONBLOCK);
    }
    options.open(path)
}

/// Whether file contents look binary rather than like a note: any NUL byte, more than one
/// byte in fifty a control character (other than tab, newlines, form feed and escape), or more
/// than three bytes in ten outside valid UTF-8. Text in a legacy 8-bit encoding has no control
/// characters and an invalid byte per accented letter (well under three in ten), so it stays a
/// note, decoded lossily; compressed or executable data, with or without NUL bytes, has about
/// one control character in ten and half its bytes invalid.
pub fn looks_binary(bytes: &[u8]) -> bool {
    if bytes.contains(&0) {
        return true;
    }
    let (mut control, mut invalid) = (0usize, 0usize);
    for chunk in bytes.utf8_chunks() {
        invalid += chunk.invalid().len();
        control += chunk
            .valid()
            .bytes()
            .filter(|&b| {
                (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || b == 0x7f
            })
            .count();
    }
    control * 50 > bytes.len() || invalid * 10 > bytes.len() * 3
}

/// Why a walked entry could not be read, for the skipped list (never the error's own text,
/// which may hold an absolute path).
fn unreadable_reason(e: Option<&std::io::Error>, is_dir: bool) -> &'static str {
    match e.map(std::io::Error::kind) {
        Some(std::io::ErrorKind::PermissionDenied) if is_dir => {
            "folder not readable (permission denied)"
        }
        Some(std::io::ErrorKind::PermissionDenied) => "not readable (permission denied)",
        Some(std::io::ErrorKind::InvalidFilename) => "path too long",
        Some(std::io::ErrorKind::NotFound) => "vanished while listing",
        _ if e.and_then(std::io::Error::raw_os_error) == Some(sys::ELOOP) => "symlink loop",
        _ if is_dir => "folder not readable",
        _ => "not readable",
    }
}

/// Formats a time as an RFC 3339 UTC timestamp (`2024-05-01T12:00:00Z`).
pub fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_and_note_rules() {
        assert!(is_hidden_rel(".obsidian/app.json"));
        assert!(is_hidden_rel("a/.trash/x.md"));
        assert!(is_hidden_rel("a//b.md"));
        assert!(!is_hidden_rel("a/b.md"));
        assert!(is_note_rel("a/B.MD"));
        assert!(!is_note_rel(".md"));
        assert!(!is_note_rel("x.canvas"));
    }

    #[test]
    fn rfc3339_known_values() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_714_564_800);
        assert_eq!(rfc3339(t), "2024-05-01T12:00:00Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn name_is_the_real_folder_name_only() {
        let dir = tempfile::tempdir().unwrap();
        let vault = dir.path().join("My Vault");
        std::fs::create_dir_all(vault.join("sub")).unwrap();
        assert_eq!(
            Vault::open(&vault.join("sub/..")).unwrap().name(),
            "My Vault"
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&vault, dir.path().join("link")).unwrap();
            assert_eq!(
                Vault::open(&dir.path().join("link")).unwrap().name(),
                "My Vault"
            );
        }
    }

    #[test]
    fn a_vault_written_mostly_in_chinese_says_so_one_in_english_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "a.md",
            "# Sync\nObsidian Sync keeps your notes in step across devices.",
        );
        write("b.md", "Snapshots are kept for a year.");
        let vault = Vault::open(dir.path()).unwrap();
        assert_eq!(vault.language(), None);

        // Chinese notes with English names among them (Obsidian, Markdown) are Chinese.
        write(
            "同步/快照.md",
            "# 快照\nObsidian Sync 会保留笔记的快照，标准版保留一个月。",
        );
        write(
            "同步/设置.md",
            "在设置中打开 Markdown 编辑器，然后选择同步的文件夹和文件类型。",
        );
        write(
            "同步/常见问题.md",
            "同步的文件大小上限是多少？标准版为五兆字节，增强版更大。",
        );
        assert_eq!(vault.language(), Some(Language::Chinese));
    }

    #[test]
    fn a_vault_in_latin_letters_is_told_by_its_words() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| std::fs::write(dir.path().join(rel), text).unwrap();
        write(
            "Umzug.md",
            "# Umzug\nDie neue Wohnung liegt im dritten Stock. Die Kisten kommen am Freitag, \
             der Vermieter bringt die Schlüssel mit.",
        );
        write(
            "Garten.md",
            "Im Garten wachsen dieses Jahr Bohnen und Kartoffeln. Nach dem Regen war alles grün.",
        );
        let vault = Vault::open(dir.path()).unwrap();
        assert_eq!(vault.language(), Some(Language::German));
    }

    #[test]
    fn prefix_is_by_component() {
        let dir = tempfile::tempdir().unwrap();
        let vault = dir.path().join("vault");
        let secret = dir.path().join("vault-secret");
        std::fs::create_dir_all(&vault).unwrap();
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::write(secret.join("s.md"), "secret").unwrap();
        std::fs::write(vault.join("a.md"), "hello").unwrap();
        let v = Vault::open(&vault).unwrap();
        assert_eq!(v.read_note("a.md").unwrap(), "hello");
        assert!(v.read_note("../vault-secret/s.md").is_err());
        assert!(v.read_note("/etc/passwd").is_err());
    }
}

#[cfg(all(test, target_os = "linux"))]
mod hostile_files {
    use super::*;

    fn vault() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("v");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("ok.md"), "# Ok\n").unwrap();
        (dir, root)
    }

    fn skipped(v: &Vault) -> Vec<(String, &'static str)> {
        v.walk().skipped
    }

    #[test]
    fn a_pipe_in_place_of_a_note_is_refused_without_waiting_for_a_writer() {
        let (_dir, root) = vault();
        let status = std::process::Command::new("mkfifo")
            .arg(root.join("pipe.md"))
            .status()
            .unwrap();
        assert!(status.success());
        let v = Vault::open(&root).unwrap();
        // On a thread, so that a regression fails here instead of hanging the suite.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(v.read_note("pipe.md")).unwrap());
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("read_note blocked on a named pipe");
        assert!(matches!(got, Err(VaultError::NotAFile(_))), "{got:?}");
        assert_eq!(
            got.unwrap_err().to_string(),
            "`pipe.md` is not a regular file"
        );
    }

    #[test]
    fn symlink_loops_and_dangling_links_are_named_for_what_they_are() {
        let (dir, root) = vault();
        std::os::unix::fs::symlink("b.md", root.join("a.md")).unwrap();
        std::os::unix::fs::symlink("a.md", root.join("b.md")).unwrap();
        std::os::unix::fs::symlink("nowhere.md", root.join("dangling.md")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        let v = Vault::open(&root).unwrap();
        let s = skipped(&v);
        assert!(s.contains(&("a.md".into(), "symlink loop")), "{s:?}");
        assert!(s.contains(&("b.md".into(), "symlink loop")), "{s:?}");
        assert!(
            s.contains(&("dangling.md".into(), "dangling symlink")),
            "{s:?}"
        );
        assert!(
            s.contains(&("out".into(), "symlink leaves the vault")),
            "{s:?}"
        );
    }

    #[test]
    fn an_over_long_path_is_skipped_under_its_vault_relative_name() {
        let (_dir, root) = vault();
        // 25 nested folders of 200 characters: well past PATH_MAX (4096), made with relative
        // steps (an absolute mkdir that long fails).
        let seg = "d".repeat(200);
        let script = format!(
            "for i in $(seq 25); do mkdir {seg} && cd -P {seg} || exit 1; done; echo deep > n.md"
        );
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(status.success());
        let v = Vault::open(&root).unwrap();
        let s = skipped(&v);
        let long: Vec<_> = s
            .iter()
            .filter(|(_, why)| *why == "path too long")
            .collect();
        assert!(!long.is_empty(), "{s:?}");
        for (name, _) in long {
            assert!(name.starts_with(&format!("{seg}/{seg}/")), "{name}");
            assert!(!name.contains(&*root.to_string_lossy()));
        }
        assert!(!s.iter().any(|(n, _)| n.contains("unreadable entry")));
    }

    #[test]
    fn binary_files_without_nul_bytes_are_not_notes_but_legacy_text_is() {
        let (_dir, root) = vault();
        // Bytes 1..=255 over and over: no NUL, mostly invalid UTF-8 and control characters.
        let junk: Vec<u8> = (0..20_000u32).map(|i| (i % 255 + 1) as u8).collect();
        std::fs::write(root.join("junk.md"), &junk).unwrap();
        // Latin-1 French: an invalid byte every few words is still a note, decoded lossily.
        let latin1: Vec<u8> = "Le caf\u{e9} est pr\u{ea}t, d\u{e9}j\u{e0} servi. "
            .repeat(50)
            .chars()
            .map(|c| c as u32 as u8)
            .collect();
        std::fs::write(root.join("latin1.md"), &latin1).unwrap();
        let v = Vault::open(&root).unwrap();
        assert!(matches!(v.read_note("junk.md"), Err(VaultError::Binary(_))));
        assert!(
            v.read_note("latin1.md")
                .unwrap()
                .contains("Le caf\u{fffd} est")
        );
        assert!(looks_binary(b"\x00"));
        assert!(looks_binary(b"\x01\x02\x03 text"));
        assert!(!looks_binary(
            "# Note\n\ttabbed \x1b[1m ansi \u{1f680}\r\n".as_bytes()
        ));
        assert!(!looks_binary(b""));
    }
}
