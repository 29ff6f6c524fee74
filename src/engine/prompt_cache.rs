//! The prompt cache on disk: the KV state of a prompt's stable prefix (the system message and the
//! tool schemas), kept across runs so the next `recall ask` starts where the last one was after
//! reading them. Files only: llama.cpp writes and reads the state itself (`llama.rs`); this module
//! keys, validates, stores atomically and evicts.
//!
//! A file is llama.cpp's sequence state file (its own magic, the prefix tokens, the KV cells)
//! followed by a trailer of ours: magic, format version, token count, the length of llama.cpp's
//! part, the key, and the SHA-256 of llama.cpp's part. Nothing is handed to llama.cpp before the
//! whole file checks out: a truncated, corrupt, foreign or stale file is ignored (a debug log line
//! says why) and rewritten after the prefix is evaluated again. Files are only ever replaced
//! whole (a temporary file in the same folder, then a rename), so a reader never sees half of
//! one. The folder is bounded: after each write the least recently used files go until the total
//! fits [`PromptCache::max_bytes`].

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// Default bound on the folder: a 1.5B model's prefix state is about 40 MB, a 3B model's 150 MB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
/// Our trailer's magic.
const MAGIC: &[u8; 8] = b"RECALLKV";
/// Bumped whenever the trailer or what the key covers changes.
const FORMAT: u32 = 2;
/// magic + format + token count + llama.cpp's length + key + checksum.
const TRAILER_LEN: usize = 8 + 4 + 4 + 8 + 32 + 32;
/// Extension of cache files; nothing else in the folder is counted or evicted.
const EXTENSION: &str = "kv";
/// A temporary file this old was left by a run that died mid-write.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Where prompt states are kept and how much room they may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCache {
    dir: PathBuf,
    max_bytes: u64,
}

/// What a cached state is valid for: a hash of the model file, the context parameters and the
/// prefix tokens. Equal keys mean the state can stand in for evaluating the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheKey([u8; 32]);

impl CacheKey {
    /// The key of `tokens` evaluated under `identity` (model file and context parameters, as
    /// the engine describes them).
    pub fn new(identity: &str, tokens: &[i32]) -> CacheKey {
        let mut hash = Sha256::new();
        hash.update(FORMAT.to_le_bytes());
        hash.update((identity.len() as u64).to_le_bytes());
        hash.update(identity.as_bytes());
        for token in tokens {
            hash.update(token.to_le_bytes());
        }
        CacheKey(hash.finalize().into())
    }

    fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl PromptCache {
    /// A cache in `dir` (created on the first write), bounded by [`DEFAULT_MAX_BYTES`].
    pub fn new(dir: impl Into<PathBuf>) -> PromptCache {
        PromptCache {
            dir: dir.into(),
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// The same cache bounded by `max_bytes` in all.
    pub fn with_max_bytes(self, max_bytes: u64) -> PromptCache {
        PromptCache { max_bytes, ..self }
    }

    /// The platform cache folder's `recall/prompt-cache` (`$XDG_CACHE_HOME` or `~/.cache` on
    /// Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows).
    pub fn default_dir() -> Option<PathBuf> {
        dirs::cache_dir().map(|d| d.join("recall").join("prompt-cache"))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The bound on the folder's cache files, in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The file that holds (or will hold) the state for `key`.
    pub fn path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}.{EXTENSION}", key.hex()))
    }

    /// The file for `key` when it exists and checks out for exactly `tokens`; `None` otherwise
    /// (a debug line says why when there was a file). A hit counts as a use for eviction.
    pub fn find(&self, key: &CacheKey, tokens: &[i32]) -> Option<PathBuf> {
        let path = self.path(key);
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::debug!("prompt cache: cannot open {}: {e}", path.display());
                return None;
            }
        };
        match check(&mut file, key, tokens) {
            Ok(()) => {
                // Least recently used goes first: a hit is a use.
                let _ = file.set_modified(SystemTime::now());
                Some(path)
            }
            Err(reason) => {
                tracing::debug!(
                    "prompt cache: ignoring {} ({reason}); it will be rewritten",
                    path.display()
                );
                None
            }
        }
    }

    /// Stores the state for `key`: `write` (llama.cpp) fills a temporary file in the folder, the
    /// trailer is appended, and the file is renamed into place; then the folder is trimmed to
    /// its bound. Returns the bytes stored.
    pub fn store(
        &self,
        key: &CacheKey,
        tokens: &[i32],
        write: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<u64, String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let temp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(&self.dir)
            .map_err(|e| format!("cannot create a file in {}: {e}", self.dir.display()))?;
        write(temp.path())?;
        // llama.cpp wrote through its own handle: reopen to hash what is on disk.
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(temp.path())
            .map_err(|e| format!("cannot reopen the state file: {e}"))?;
        let (payload_len, checksum) =
            hash_prefix(&mut file, None).map_err(|e| format!("cannot read the state: {e}"))?;
        let trailer = Trailer {
            tokens: tokens.len() as u32,
            payload_len,
            key: *key,
            checksum,
        };
        file.write_all(&trailer.to_bytes())
            .map_err(|e| format!("cannot write the state: {e}"))?;
        drop(file);
        let path = self.path(key);
        temp.persist(&path)
            .map_err(|e| format!("cannot move the state to {}: {e}", path.display()))?;
        self.evict(&path);
        Ok(payload_len + TRAILER_LEN as u64)
    }

    /// Deletes the least recently used cache files until the rest fit the bound; `keep` (the
    /// file just written) stays even when it alone is over it. Temporary files left by a run
    /// that died mid-write go too.
    fn evict(&self, keep: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut files = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let name = entry.file_name();
            if name.to_string_lossy().starts_with(".tmp-") {
                if now.duration_since(modified).unwrap_or_default() > STALE_TEMP {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            if path.extension().is_some_and(|e| e == EXTENSION) {
                files.push((modified, meta.len(), path));
            }
        }
        let mut total: u64 = files.iter().map(|(_, len, _)| len).sum();
        files.sort();
        for (_, len, path) in files {
            if total <= self.max_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    tracing::debug!("prompt cache: evicted {}", path.display());
                    total -= len;
                }
                Err(e) => tracing::debug!("prompt cache: cannot evict {}: {e}", path.display()),
            }
        }
    }
}

struct Trailer {
    tokens: u32,
    payload_len: u64,
    key: CacheKey,
    checksum: [u8; 32],
}

impl Trailer {
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(TRAILER_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        out.extend_from_slice(&self.tokens.to_le_bytes());
        out.extend_from_slice(&self.payload_len.to_le_bytes());
        out.extend_from_slice(&self.key.0);
        out.extend_from_slice(&self.checksum);
        out
    }

    fn parse(bytes: &[u8; TRAILER_LEN]) -> Result<Trailer, String> {
        let (magic, rest) = bytes.split_at(8);
        if magic != MAGIC {
            return Err("not a recall prompt cache file".into());
        }
        let u32_at = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().expect("4 bytes"));
        if u32_at(0) != FORMAT {
            return Err(format!("format {} (this build writes {FORMAT})", u32_at(0)));
        }
        Ok(Trailer {
            tokens: u32_at(4),
            payload_len: u64::from_le_bytes(rest[8..16].try_into().expect("8 bytes")),
            key: CacheKey(rest[16..48].try_into().expect("32 bytes")),
            checksum: rest[48..80].try_into().expect("32 bytes"),
        })
    }
}

/// Checks a cache file against what the caller expects, before llama.cpp reads a byte of it.
fn check(file: &mut File, key: &CacheKey, tokens: &[i32]) -> Result<(), String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len < TRAILER_LEN as u64 {
        return Err(format!("{len} bytes, too short"));
    }
    let mut raw = [0u8; TRAILER_LEN];
    file.seek(SeekFrom::Start(len - TRAILER_LEN as u64))
        .and_then(|_| file.read_exact(&mut raw))
        .map_err(|e| e.to_string())?;
    let trailer = Trailer::parse(&raw)?;
    if trailer.key != *key {
        return Err("written for another model, context or prefix".into());
    }
    if trailer.tokens as usize != tokens.len() {
        return Err(format!(
            "{} tokens, expected {}",
            trailer.tokens,
            tokens.len()
        ));
    }
    if trailer.payload_len + TRAILER_LEN as u64 != len {
        return Err(format!(
            "{len} bytes, its trailer says {}",
            trailer.payload_len + TRAILER_LEN as u64
        ));
    }
    // llama.cpp's header: magic, version, token count, then the tokens.
    let mut header = vec![0u8; 12 + 4 * tokens.len()];
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_exact(&mut header))
        .map_err(|e| format!("cannot read the tokens: {e}"))?;
    let count = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    let stored = header[12..]
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")));
    if count as usize != tokens.len() || !stored.eq(tokens.iter().copied()) {
        return Err("its tokens are not the prefix".into());
    }
    file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let (_, checksum) = hash_prefix(file, Some(trailer.payload_len)).map_err(|e| e.to_string())?;
    if checksum != trailer.checksum {
        return Err("checksum mismatch (corrupt)".into());
    }
    Ok(())
}

/// SHA-256 of the first `limit` bytes of `file` from where it stands (all of it when `None`).
fn hash_prefix(file: &mut File, limit: Option<u64>) -> std::io::Result<(u64, [u8; 32])> {
    let mut reader: Box<dyn Read> = match limit {
        Some(limit) => Box::new((&mut *file).take(limit)),
        None => Box::new(&mut *file),
    };
    let mut hash = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hash.update(&buffer[..n]);
        total += n as u64;
    }
    if limit.is_some_and(|l| l != total) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "truncated",
        ));
    }
    Ok((total, hash.finalize().into()))
}
