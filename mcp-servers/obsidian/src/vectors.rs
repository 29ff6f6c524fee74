//! Passage vectors: the in-memory store searched by cosine similarity, and its cache file on
//! disk (outside the vault) so a restart re-embeds nothing unchanged.
//!
//! A vector is keyed by a hash of exactly what was embedded (title, heading path and passage
//! text), so an edit re-embeds only the passages whose text changed, and two identical
//! passages share one vector.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

/// The hash of one embedded text.
pub type TextHash = u64;

/// First bytes of a cache file; the last byte is the format version.
const MAGIC: &[u8; 8] = b"OKBVEC\x00\x01";
/// Bytes before the entries: magic, model SHA-256, vault key, dimension, count.
const HEADER: usize = 8 + 32 + 32 + 4 + 8;
/// Bytes after the entries: SHA-256 of everything before them.
const TRAILER: usize = 32;

/// The hash under which the vector of `text` is stored: the first 8 bytes of its SHA-256
/// (stable across builds and platforms, unlike `std`'s hasher).
pub fn text_hash(text: &str) -> TextHash {
    let digest = Sha256::digest(text.as_bytes());
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// One note's passages as last embedded.
#[derive(Debug, Clone)]
pub struct NoteVectors {
    /// The index's version of the note these hashes were computed from.
    pub version: u64,
    /// One hash per passage, in note order.
    pub passages: Vec<TextHash>,
}

/// Every note's passage hashes and every known vector.
///
/// Vectors are kept as one signed byte per element and a scale (element ≈ scale × byte), one
/// after another in one array. A search reads every vector: in bytes, 30,000 passages of 384
/// elements are 11 MB instead of 46, read in one pass from start to end; scattered floats kept
/// the search waiting on memory, not on arithmetic. Rounding moves a cosine by about 0.001,
/// next to gaps between passages of 0.01 and more.
#[derive(Debug, Default)]
pub struct VectorStore {
    /// By the note's vault-relative path.
    pub notes: HashMap<String, NoteVectors>,
    /// The row of each embedded text. Keyed by hashes already, so hashed again only cheaply.
    rows: FxHashMap<TextHash, usize>,
    /// Elements per vector (0 until the first).
    dim: usize,
    /// Every row's bytes, `dim` a row.
    values: Vec<i8>,
    /// Every row's scale.
    scales: Vec<f32>,
}

/// The scale that maps `v`'s largest element to `limit`, rounded integers of `v / scale`
/// then fitting in ±`limit`.
fn scale_to(v: &[f32], limit: f32) -> f32 {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max > 0.0 { max / limit } else { 1.0 }
}

/// `v` as bytes, and the scale that brings them back.
fn quantize(v: &[f32]) -> (f32, impl Iterator<Item = i8> + '_) {
    let scale = scale_to(v, f32::from(i8::MAX));
    (scale, v.iter().map(move |x| (x / scale).round() as i8))
}

/// The dot product of a row with `query`, in integers: the compiler vectorizes an integer sum,
/// where a float sum must add in order.
fn dot(row: &[i8], scale: f32, query: &QueryInts) -> f32 {
    let sum: i32 = query
        .values
        .iter()
        .zip(row)
        .map(|(&a, &b)| i32::from(a) * i32::from(b))
        .sum();
    sum as f32 * query.scale * scale
}

/// A query vector rounded to 16-bit integers (error about 1e-5 of its largest element), small
/// enough that a dot product with a stored row of its length stays within `i32`.
struct QueryInts {
    scale: f32,
    values: Vec<i16>,
}

impl QueryInts {
    fn new(query: &[f32]) -> Self {
        let limit = (i32::MAX as f32 / (f32::from(i8::MAX) * query.len().max(1) as f32))
            .min(f32::from(i16::MAX))
            .floor();
        let scale = scale_to(query, limit);
        QueryInts {
            scale,
            values: query.iter().map(|x| (x / scale).round() as i16).collect(),
        }
    }
}

/// How near one note's passages are to a query vector.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteMatch {
    /// The note's vault-relative path.
    pub rel: String,
    /// Cosine similarity of its best passage.
    pub score: f32,
    /// Cosine similarity of each of the note's passages, in note order (`None` where a
    /// passage has no vector yet), so a caller can weigh meaning against words per passage.
    pub similarities: Vec<Option<f32>>,
    /// The note version the passage was cut from.
    pub version: u64,
}

impl VectorStore {
    /// Whether a text hash has its vector.
    pub fn contains(&self, hash: TextHash) -> bool {
        self.rows.contains_key(&hash)
    }

    /// Stores a vector (rounded to bytes). All vectors of a store have one length (one
    /// model); one of another length is not stored.
    pub fn insert(&mut self, hash: TextHash, vector: &[f32]) {
        if self.dim == 0 {
            self.dim = vector.len();
        }
        if vector.len() != self.dim || self.dim == 0 {
            return;
        }
        let (scale, bytes) = quantize(vector);
        match self.rows.get(&hash) {
            Some(&row) => {
                let at = row * self.dim;
                for (slot, b) in self.values[at..at + self.dim].iter_mut().zip(bytes) {
                    *slot = b;
                }
                self.scales[row] = scale;
            }
            None => {
                self.rows.insert(hash, self.scales.len());
                self.values.extend(bytes);
                self.scales.push(scale);
            }
        }
    }

    /// Every stored vector, as floats again.
    fn vectors(&self) -> impl Iterator<Item = (TextHash, impl Iterator<Item = f32> + '_)> + '_ {
        self.rows.iter().map(|(&hash, &row)| {
            let scale = self.scales[row];
            let bytes = &self.values[row * self.dim..(row + 1) * self.dim];
            (hash, bytes.iter().map(move |&b| f32::from(b) * scale))
        })
    }

    /// Passages known, and how many of them have a vector.
    pub fn progress(&self) -> (usize, usize) {
        let mut total = 0;
        let mut done = 0;
        for n in self.notes.values() {
            total += n.passages.len();
            done += n
                .passages
                .iter()
                .filter(|h| self.rows.contains_key(h))
                .count();
        }
        (done, total)
    }

    /// Whether any passage has a vector yet.
    pub fn has_vectors(&self) -> bool {
        !self.rows.is_empty()
    }

    /// Drops vectors no note refers to any more (the rows left close up).
    pub fn prune(&mut self) {
        let live: std::collections::HashSet<TextHash> = self
            .notes
            .values()
            .flat_map(|n| n.passages.iter().copied())
            .collect();
        if self.rows.keys().all(|h| live.contains(h)) {
            return;
        }
        let dim = self.dim;
        let mut kept = VectorStore {
            dim,
            ..VectorStore::default()
        };
        for (hash, &row) in &self.rows {
            if live.contains(hash) {
                kept.rows.insert(*hash, kept.scales.len());
                kept.values
                    .extend_from_slice(&self.values[row * dim..(row + 1) * dim]);
                kept.scales.push(self.scales[row]);
            }
        }
        self.rows = kept.rows;
        self.values = kept.values;
        self.scales = kept.scales;
    }

    /// Every note with at least one embedded passage, scored by its best passage for `query`
    /// (a unit vector), best first; only notes `keep` accepts. Brute force, every row in one
    /// pass, then each note's passages looked up: 6,500 notes of five passages are ~12 M
    /// multiply-adds, a few milliseconds.
    pub fn rank(&self, query: &[f32], keep: impl Fn(&str) -> bool) -> Vec<NoteMatch> {
        if self.dim == 0 || query.len() != self.dim {
            return Vec::new();
        }
        let query = QueryInts::new(query);
        let row_scores: Vec<f32> = self
            .values
            .chunks_exact(self.dim)
            .zip(&self.scales)
            .map(|(row, &scale)| dot(row, scale, &query))
            .collect();
        let mut out = Vec::new();
        for (rel, note) in &self.notes {
            if !keep(rel) {
                continue;
            }
            let similarities: Vec<Option<f32>> = note
                .passages
                .iter()
                .map(|h| self.rows.get(h).map(|&row| row_scores[row]))
                .collect();
            let best = similarities.iter().flatten().copied().reduce(f32::max);
            if let Some(score) = best {
                out.push(NoteMatch {
                    rel: rel.clone(),
                    score,
                    version: note.version,
                    similarities,
                });
            }
        }
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.rel.cmp(&b.rel)));
        out
    }
}

/// Where one vault's vectors for one model are cached, and what a valid file must say.
#[derive(Debug, Clone)]
pub struct CacheFile {
    path: PathBuf,
    model: [u8; 32],
    vault: [u8; 32],
    dim: usize,
}

/// Why a cache file was not used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// No file yet.
    #[error("no cache file")]
    Missing,
    /// Could not read or write it.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// It is not a cache file of this vault and model, or it is damaged.
    #[error("ignored: {0}")]
    Invalid(&'static str),
}

impl CacheFile {
    /// The cache of `vault_root` (canonical) for the model with SHA-256 `model_sha256` (hex)
    /// and vector length `dim`, under `cache_dir`. The file name carries both keys, so two
    /// vaults or two models never share a file; the header repeats them in full.
    pub fn new(cache_dir: &Path, vault_root: &Path, model_sha256: &str, dim: usize) -> Self {
        let vault: [u8; 32] = Sha256::digest(vault_root.as_os_str().as_encoded_bytes()).into();
        let model: [u8; 32] = Sha256::digest(model_sha256.as_bytes()).into();
        let name = format!("{}-{}.vectors", hex(&vault[..8]), hex(&model[..8]));
        CacheFile {
            path: cache_dir.join(name),
            model,
            vault,
            dim,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the cached vectors. Anything but a complete, checksummed file of this vault,
    /// model and dimension is an error, and the caller starts afresh.
    pub fn load(&self) -> Result<HashMap<TextHash, Box<[f32]>>, CacheError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(CacheError::Missing),
            Err(e) => return Err(e.into()),
        };
        if bytes.len() < HEADER + TRAILER || &bytes[..8] != MAGIC {
            return Err(CacheError::Invalid("not a vector cache of this version"));
        }
        let (body, trailer) = bytes.split_at(bytes.len() - TRAILER);
        if Sha256::digest(body).as_slice() != trailer {
            return Err(CacheError::Invalid(
                "checksum mismatch (truncated or damaged)",
            ));
        }
        if body[8..40] != self.model || body[40..72] != self.vault {
            return Err(CacheError::Invalid("another model's or vault's vectors"));
        }
        let dim = u32::from_le_bytes(body[72..76].try_into().expect("4 bytes")) as usize;
        let count = u64::from_le_bytes(body[76..84].try_into().expect("8 bytes"));
        let entry = 8 + 4 * dim;
        if dim != self.dim
            || usize::try_from(count)
                .ok()
                .and_then(|c| c.checked_mul(entry))
                != Some(body.len() - HEADER)
        {
            return Err(CacheError::Invalid("wrong vector size or count"));
        }
        let mut out = HashMap::with_capacity(count as usize);
        for chunk in body[HEADER..].chunks_exact(entry) {
            let hash = u64::from_le_bytes(chunk[..8].try_into().expect("8 bytes"));
            let vector: Box<[f32]> = chunk[8..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect();
            out.insert(hash, vector);
        }
        Ok(out)
    }

    /// Writes `store`'s vectors: to a temporary file beside the cache, then renamed over it,
    /// so a reader (or a crash) never sees half a file.
    pub fn save(&self, store: &VectorStore) -> Result<(), CacheError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut body = Vec::with_capacity(HEADER + store.rows.len() * (8 + 4 * self.dim));
        body.extend_from_slice(MAGIC);
        body.extend_from_slice(&self.model);
        body.extend_from_slice(&self.vault);
        body.extend_from_slice(&(self.dim as u32).to_le_bytes());
        let count = if store.dim == self.dim {
            store.rows.len()
        } else {
            0
        };
        body.extend_from_slice(&(count as u64).to_le_bytes());
        // As floats, as the format has always been: bytes read back give the same bytes.
        for (hash, vector) in store.vectors().take(count) {
            body.extend_from_slice(&hash.to_le_bytes());
            for x in vector {
                body.extend_from_slice(&x.to_le_bytes());
            }
        }
        let checksum = Sha256::digest(&body);
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(&body)?;
        file.write_all(&checksum)?;
        file.as_file().sync_all()?;
        file.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(entries: &[(TextHash, [f32; 2])]) -> VectorStore {
        let mut s = VectorStore::default();
        for (h, v) in entries {
            s.insert(*h, v);
        }
        s
    }

    fn near(a: f32, b: f32) -> bool {
        (a - b).abs() < 0.005
    }

    #[test]
    fn a_saved_cache_loads_back_and_a_damaged_or_foreign_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CacheFile::new(dir.path(), Path::new("/v"), "abc", 2);
        assert!(matches!(cache.load(), Err(CacheError::Missing)));
        let s = store(&[(1, [0.6, 0.8]), (2, [1.0, 0.0])]);
        cache.save(&s).unwrap();
        let loaded = cache.load().unwrap();
        assert_eq!(loaded.len(), 2);
        let v = &loaded[&1];
        assert!(near(v[0], 0.6) && v[1] == 0.8, "{v:?}");
        // What was read back and saved again is the same to the bit.
        let mut again = VectorStore::default();
        again.insert(1, v);
        let first = std::fs::read(cache.path()).unwrap();
        let entry = |bytes: &[u8]| bytes[HEADER..HEADER + 8 + 4 * 2].to_vec();
        let saved = |s: &VectorStore| {
            cache.save(s).unwrap();
            std::fs::read(cache.path()).unwrap()
        };
        let one = store(&[(1, [0.6, 0.8])]);
        assert_eq!(entry(&saved(&again)), entry(&saved(&one)));
        std::fs::write(cache.path(), first).unwrap();

        // Another model or vault maps to another file, and a copied file is still refused.
        let other = CacheFile::new(dir.path(), Path::new("/v"), "abd", 2);
        assert_ne!(other.path(), cache.path());
        std::fs::copy(cache.path(), other.path()).unwrap();
        assert!(matches!(other.load(), Err(CacheError::Invalid(_))));

        // Truncated, or one flipped byte: refused.
        let bytes = std::fs::read(cache.path()).unwrap();
        std::fs::write(cache.path(), &bytes[..bytes.len() - 5]).unwrap();
        assert!(matches!(cache.load(), Err(CacheError::Invalid(_))));
        let mut flipped = bytes.clone();
        flipped[HEADER + 9] ^= 1;
        std::fs::write(cache.path(), &flipped).unwrap();
        assert!(matches!(cache.load(), Err(CacheError::Invalid(_))));
        std::fs::write(cache.path(), b"garbage").unwrap();
        assert!(matches!(cache.load(), Err(CacheError::Invalid(_))));
    }

    #[test]
    fn rank_scores_each_note_by_its_best_passage_best_note_first() {
        let mut s = store(&[(1, [1.0, 0.0]), (2, [0.0, 1.0]), (3, [0.6, 0.8])]);
        s.notes.insert(
            "a.md".into(),
            NoteVectors {
                version: 1,
                passages: vec![1, 2],
            },
        );
        s.notes.insert(
            "b.md".into(),
            NoteVectors {
                version: 1,
                passages: vec![3, 99],
            },
        );
        let ranked = s.rank(&[0.0, 1.0], |_| true);
        let sims = |m: &NoteMatch| -> Vec<Option<f32>> {
            // Rounded to what the bytes can tell apart.
            let round = |x: f32| (x * 100.0).round() / 100.0;
            m.similarities.iter().map(|x| x.map(round)).collect()
        };
        assert_eq!(ranked[0].rel, "a.md");
        assert!(near(ranked[0].score, 1.0), "{ranked:?}");
        assert_eq!(sims(&ranked[0]), vec![Some(0.0), Some(1.0)]);
        assert_eq!(ranked[1].rel, "b.md");
        assert!(near(ranked[1].score, 0.8), "{ranked:?}");
        assert_eq!(sims(&ranked[1]), vec![Some(0.8), None]);
        assert_eq!(s.progress(), (3, 4));
        let ranked = s.rank(&[0.0, 1.0], |rel| rel == "b.md");
        assert_eq!(ranked.len(), 1);
        s.notes.remove("a.md");
        s.prune();
        assert!(!s.contains(1) && s.contains(3));
    }
}
