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

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// Largest note file that is read; anything bigger is skipped (notes are text, not data dumps).
pub const MAX_NOTE_BYTES: u64 = 8 * 1024 * 1024;

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
    /// The file looks binary (contains NUL bytes).
    #[error("`{0}` is not a text file")]
    Binary(String),
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

impl Vault {
    /// Opens a vault root; fails when it is not a readable directory.
    pub fn open(root: &Path) -> anyhow::Result<Self> {
        let root = root
            .canonicalize()
            .map_err(|e| anyhow::anyhow!("vault directory cannot be opened: {e}"))?;
        anyhow::ensure!(root.is_dir(), "vault path is not a directory");
        Ok(Self { root })
    }

    /// The canonical root (never sent to a client).
    pub fn root(&self) -> &Path {
        &self.root
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
                Err(_) => {
                    out.skipped
                        .push(("(unreadable entry)".into(), "unreadable"));
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
                    Err(_) => {
                        out.skipped.push((rel, "symlink leaves the vault"));
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
                out.notes.push(found(rel, &meta));
            } else {
                out.attachments.push(rel);
            }
        }
        out
    }

    /// Stats one vault-relative note path (following an in-vault symlink).
    pub fn stat(&self, rel: &str) -> Result<FoundFile, VaultError> {
        let path = self.checked_path(rel)?;
        let meta = std::fs::metadata(&path).map_err(|e| io_err(rel, e))?;
        if !meta.is_file() {
            return Err(VaultError::Gone(rel.into()));
        }
        Ok(found(rel.to_string(), &meta))
    }

    /// Reads a note as text. `rel` must be vault-relative with `/` separators; the resolved file
    /// must lie inside the vault. Invalid UTF-8 is decoded lossily; NUL bytes mean binary.
    pub fn read_note(&self, rel: &str) -> Result<String, VaultError> {
        let path = self.checked_path(rel)?;
        let file = File::open(&path).map_err(|e| io_err(rel, e))?;
        let meta = file.metadata().map_err(|e| io_err(rel, e))?;
        if !meta.is_file() {
            return Err(VaultError::Gone(rel.into()));
        }
        if meta.len() > MAX_NOTE_BYTES {
            return Err(VaultError::TooLarge(rel.into(), meta.len()));
        }
        let mut buf = Vec::with_capacity(meta.len() as usize);
        file.take(MAX_NOTE_BYTES)
            .read_to_end(&mut buf)
            .map_err(|e| io_err(rel, e))?;
        if buf.contains(&0) {
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
            CheckError::Missing => VaultError::Gone(rel.into()),
            CheckError::Outside => VaultError::Outside(rel.into()),
        })?;
        Ok(canonical)
    }

    /// Canonicalises `path` and checks that it lies inside the root and not in a hidden folder.
    fn check_inside(&self, path: &Path) -> Result<PathBuf, CheckError> {
        let canonical = path.canonicalize().map_err(|_| CheckError::Missing)?;
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
    Missing,
    Outside,
}

fn found(rel: String, meta: &Metadata) -> FoundFile {
    FoundFile {
        rel,
        bytes: meta.len(),
        modified: meta.modified().ok(),
    }
}

fn io_err(rel: &str, e: std::io::Error) -> VaultError {
    if e.kind() == std::io::ErrorKind::NotFound {
        VaultError::Gone(rel.into())
    } else {
        VaultError::Io(rel.into(), e.kind())
    }
}

/// Formats a time as an RFC 3339 UTC timestamp (`2024-05-01T12:00:00Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
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
