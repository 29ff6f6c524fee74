//! Search by meaning: keeps every passage's vector in step with the index, in the background,
//! and ranks notes by cosine similarity to a query.
//!
//! The server answers from the first moment with words alone; this job embeds passages a
//! batch at a time (queries go ahead of it, see [`crate::embed`]), and search turns hybrid
//! once every passage has a vector: a meaning ranking over part of the vault ranked the right
//! note lower than words alone did (measured on a fresh cache), so a partial one is never
//! fused. It reuses the on-disk cache, so a restart embeds nothing unchanged, and after an
//! edit only the passages whose text changed; stopped, it saves what it has, so the next start
//! goes on from there.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use crate::api;
use crate::embed::{EmbedError, Embedder};
use crate::index::SharedIndex;
use crate::language::Language;
use crate::vectors::{CacheError, CacheFile, NoteMatch, NoteVectors, TextHash, VectorStore};

/// Texts sent to the model at once: small, so a stop waits for little.
const BATCH: usize = 16;
/// How often the job looks for changed notes when idle.
const POLL: Duration = Duration::from_millis(500);
/// How often a long build reports progress and saves what it has.
const CHECKPOINT: Duration = Duration::from_secs(30);

/// Where semantic search stands, for the server's status and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Passages with a vector.
    pub embedded: usize,
    /// Passages in the vault.
    pub total: usize,
    /// Whether the vault's passages have been counted (not while the model loads).
    pub counted: bool,
    /// Vectors this run took from the cache.
    pub from_cache: usize,
    /// Why embedding stopped, if it did.
    pub failed: Option<String>,
    /// Seconds until every passage has a vector, at this pass's rate so far.
    pub eta_seconds: Option<u64>,
    /// Tokens the embedding model has read since it loaded, queries included.
    pub tokens: u64,
}

impl Progress {
    /// Every passage has its vector: a ranking by meaning covers the whole vault.
    pub fn complete(&self) -> bool {
        self.counted && self.embedded == self.total
    }
}

/// How far the job has come: the first pass, then following changes, then stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    FirstPass,
    Following,
    Ended,
}

/// The current pass's pace: when it began and how many it has embedded.
#[derive(Debug, Clone, Copy)]
struct Pace {
    started: Instant,
    embedded: usize,
}

/// The vectors of one vault and the model that makes them.
pub struct Semantic {
    /// Set once the model has loaded (in the background: the server does not wait for it).
    embedder: OnceLock<Embedder>,
    store: RwLock<VectorStore>,
    /// `store.progress()` as of its last change (`None` until the first count): counting
    /// walks every passage, too slow to do for every search of a large vault.
    counts: Mutex<Option<(usize, usize)>>,
    /// The pass under way, for its estimate of the time left.
    pace: Mutex<Option<Pace>>,
    failed: Mutex<Option<String>>,
    /// Where the job is; the first pass ends once every passage is embedded and the cache
    /// saved (or embedding was given up).
    stage: Mutex<Stage>,
    stage_changed: Condvar,
    /// Asked to stop: the job saves what it has and ends.
    stop: AtomicBool,
    /// The vector cache, once the model has loaded (for [`Semantic::stop`] to save to).
    cache: OnceLock<CacheFile>,
    /// Vectors taken from the cache so far.
    from_cache: AtomicUsize,
}

/// What the background job needs to begin.
#[derive(Debug, Clone)]
pub struct SemanticOptions {
    /// The GGUF embedding model.
    pub model: PathBuf,
    /// Where vector caches live (a folder of their own, outside the vault); `None`: no cache.
    pub cache_dir: Option<PathBuf>,
    /// Compute threads for embedding.
    pub threads: usize,
}

impl SemanticOptions {
    /// `model` on every core (indexing runs at idle priority, so it takes only
    /// what nothing else wants, see [`crate::embed`]), caching vectors in `cache_dir`.
    pub fn new(model: PathBuf, cache_dir: Option<PathBuf>) -> Self {
        SemanticOptions {
            model,
            cache_dir,
            threads: std::thread::available_parallelism().map_or(1, usize::from),
        }
    }
}

impl Semantic {
    /// Starts the background job over `index`: load the model, then embed every passage and
    /// follow changes. The job ends when the returned value is dropped.
    pub fn start(index: SharedIndex, options: SemanticOptions) -> Arc<Self> {
        let semantic = Arc::new(Semantic {
            embedder: OnceLock::new(),
            store: RwLock::new(VectorStore::default()),
            counts: Mutex::new(None),
            pace: Mutex::new(None),
            failed: Mutex::new(None),
            stage: Mutex::new(Stage::FirstPass),
            stage_changed: Condvar::new(),
            stop: AtomicBool::new(false),
            cache: OnceLock::new(),
            from_cache: AtomicUsize::new(0),
        });
        let weak = Arc::downgrade(&semantic);
        let spawned = std::thread::Builder::new()
            .name("semantic-index".into())
            .spawn(move || {
                begin(&index, &weak, &options);
                if let Some(s) = weak.upgrade() {
                    s.reach(Stage::Ended);
                }
            });
        if let Err(e) = spawned {
            semantic.fail(format!("cannot start the embedding job: {e}"));
            semantic.reach(Stage::Ended);
        }
        semantic
    }

    /// Stops the job: the batch being embedded is finished, what is new is saved to the
    /// cache, and the job ends. Waits at most `timeout` for that; when the job has not ended
    /// by then (its batch runs at idle priority, and a busy machine may give it no core for a
    /// long while), saves what was embedded before that batch itself. Returns whether what was
    /// embedded is saved (or there is no cache to save to).
    pub fn stop(&self, timeout: Duration) -> bool {
        self.stop.store(true, Ordering::SeqCst);
        if self.wait_for(Stage::Ended, timeout) {
            return true;
        }
        let Some(cache) = self.cache.get() else {
            return true;
        };
        tracing::info!("embedding stopped; what was embedded is kept");
        save(self, cache)
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Waits at most `timeout` for the first pass over the vault to end, so that a client
    /// that can afford to wait (recall's first question) gets hybrid results from a small or
    /// already-cached vault; a large vault being embedded for the first time is not waited for
    /// beyond `timeout`. Returns whether the pass has ended.
    pub fn wait_for_first_pass(&self, timeout: Duration) -> bool {
        self.wait_for(Stage::Following, timeout)
    }

    /// Waits at most `timeout` for the job to reach `stage` (or a later one).
    fn wait_for(&self, stage: Stage, timeout: Duration) -> bool {
        let now = self.stage.lock().unwrap_or_else(|p| p.into_inner());
        let (now, _) = self
            .stage_changed
            .wait_timeout_while(now, timeout, |now| *now < stage)
            .unwrap_or_else(|p| p.into_inner());
        *now >= stage
    }

    /// Moves the job on to `stage` (never back) and wakes whoever waits for it.
    fn reach(&self, stage: Stage) {
        let mut now = self.stage.lock().unwrap_or_else(|p| p.into_inner());
        *now = (*now).max(stage);
        self.stage_changed.notify_all();
    }

    fn fail(&self, why: String) {
        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }

    /// How far embedding has come.
    pub fn progress(&self) -> Progress {
        let counts = *self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let (embedded, total) = counts.unwrap_or_default();
        let pace = *self.pace.lock().unwrap_or_else(|p| p.into_inner());
        let eta_seconds = pace.filter(|p| p.embedded > 0).and_then(|p| {
            let per_second = p.embedded as f64 / p.started.elapsed().as_secs_f64();
            let left = total.saturating_sub(embedded);
            (left > 0).then(|| (left as f64 / per_second).ceil() as u64)
        });
        Progress {
            embedded,
            total,
            counted: counts.is_some(),
            from_cache: self.from_cache.load(Ordering::SeqCst),
            failed: self
                .failed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            eta_seconds,
            tokens: self.embedder.get().map_or(0, Embedder::tokens_read),
        }
    }

    /// Where search by meaning stands, as the status resource says it.
    pub fn status(&self) -> api::EmbeddingStatus {
        let progress = self.progress();
        let model = self.model_name();
        let state = match &progress.failed {
            Some(_) => api::EmbeddingState::Failed,
            None if model.is_none() || !progress.counted => api::EmbeddingState::Loading,
            None if progress.complete() => api::EmbeddingState::Ready,
            None => api::EmbeddingState::Embedding,
        };
        api::EmbeddingStatus {
            model,
            state,
            passages: progress.embedded,
            total: progress.total,
            from_cache: progress.from_cache,
            error: progress.failed,
            eta_seconds: progress.eta_seconds,
        }
    }

    /// The model file's name, once it has loaded.
    pub fn model_name(&self) -> Option<String> {
        self.embedder.get().map(|e| e.info().name.clone())
    }

    /// Whether a ranking by meaning may be fused for `query`: not when the model does not cover
    /// its language. All-MiniLM-L6-v2 knows English only: fused with its ranking, Chinese
    /// questions found their note in the top five for 37 of 60 against 59 of 60 by words
    /// alone (obsidian-kb-bench retrieval, the Chinese help vault). A language told by its
    /// script alone: fused with all-MiniLM's ranking, German and French questions lose nothing
    /// (hit@1 19 and 20 of 36 against 19 and 18 by words alone), so they keep it.
    pub fn covers(&self, query: &str) -> bool {
        self.embedder
            .get()
            .is_none_or(|e| e.info().covers(Language::of(query)))
    }

    /// Every note, best match for `query` first, or `None` until every passage has a vector.
    pub fn rank(&self, query: &str) -> Result<Option<Vec<NoteMatch>>, EmbedError> {
        let Some(embedder) = self.embedder.get() else {
            return Ok(None);
        };
        if !self.progress().complete() || !self.read_store().has_vectors() {
            return Ok(None);
        }
        let q = embedder.embed_query(query)?;
        Ok(Some(self.read_store().rank(&q, |_| true)))
    }

    /// Each text's similarity in meaning to `query` (cosine; all embedded at once on the query
    /// thread), or `None` while no model is loaded or when it does not cover the query's
    /// language. Needs no vault vector: it serves a search's first hits while the vault is
    /// still being embedded.
    pub fn similarities(
        &self,
        query: &str,
        texts: &[&str],
    ) -> Result<Option<Vec<f32>>, EmbedError> {
        let Some(embedder) = self.embedder.get() else {
            return Ok(None);
        };
        if texts.is_empty() || !self.covers(query) {
            return Ok(None);
        }
        let mut batch = Vec::with_capacity(texts.len() + 1);
        batch.push(query.to_string());
        batch.extend(texts.iter().map(|t| t.to_string()));
        let vectors = embedder.embed_queries(batch)?;
        let (q, rest) = vectors.split_first().ok_or(EmbedError::Stopped)?;
        Ok(Some(
            rest.iter()
                .map(|v| v.iter().zip(q).map(|(a, b)| a * b).sum())
                .collect(),
        ))
    }

    /// Counts the store's progress afresh; called under its write lock after every change.
    fn recount(&self, store: &VectorStore) {
        *self.counts.lock().unwrap_or_else(|p| p.into_inner()) = Some(store.progress());
    }

    fn read_store(&self) -> std::sync::RwLockReadGuard<'_, VectorStore> {
        self.store.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_store(&self) -> std::sync::RwLockWriteGuard<'_, VectorStore> {
        self.store.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// A note whose passages must be (re)computed: its path, version and embedding texts.
struct Changed {
    rel: String,
    version: u64,
    texts: Vec<String>,
}

/// Loads the model, then runs the job; a model that does not load leaves search lexical.
fn begin(index: &SharedIndex, semantic: &Weak<Semantic>, options: &SemanticOptions) {
    let embedder = match Embedder::load(&options.model, options.threads) {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!("semantic search off: {e}");
            if let Some(s) = semantic.upgrade() {
                s.fail(e.to_string());
            }
            return;
        }
    };
    let info = embedder.info().clone();
    tracing::info!(model = %info.name, dim = info.dim, "embedding model loaded");
    let root = index
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .vault()
        .root()
        .to_path_buf();
    let cache = match options.cache_dir.as_deref() {
        // The vault is never written to, so a cache folder inside it is refused.
        Some(dir)
            if dir
                .canonicalize()
                .or_else(|_| std::path::absolute(dir))
                .is_ok_and(|d| d.starts_with(&root)) =>
        {
            tracing::warn!("the cache folder is inside the vault; vectors will not be cached");
            None
        }
        Some(dir) => Some(CacheFile::new(dir, &root, &info.sha256, info.dim)),
        None => {
            tracing::info!(
                "no cache folder (neither XDG_CACHE_HOME nor HOME); vectors will not be cached"
            );
            None
        }
    };
    match semantic.upgrade() {
        Some(s) => {
            let _ = s.embedder.set(embedder);
            if let Some(cache) = &cache {
                let _ = s.cache.set(cache.clone());
            }
        }
        None => return,
    }
    run(index, semantic, cache);
}

/// The job: whenever the index changes, bring the store in step, embed what is missing, save.
fn run(index: &SharedIndex, semantic: &Weak<Semantic>, cache: Option<CacheFile>) {
    let mut cached = match cache.as_ref().map(CacheFile::load) {
        Some(Ok(v)) => {
            tracing::info!(vectors = v.len(), "vector cache loaded");
            v
        }
        Some(Err(CacheError::Missing)) | None => HashMap::new(),
        Some(Err(e)) => {
            // Never trusted: rebuilt, and rewritten once the vault is embedded.
            tracing::info!("vector cache not used ({e}); embedding afresh");
            HashMap::new()
        }
    };
    let mut seen = None;
    loop {
        let Some(semantic) = semantic.upgrade() else {
            return;
        };
        if semantic.stopping() {
            return;
        }
        let generation = index.read().unwrap_or_else(|p| p.into_inner()).generation();
        if seen != Some(generation) {
            let first = seen.is_none();
            seen = Some(generation);
            let (pending, removed) = sync(index, &semantic, &mut cached);
            // The file needs writing when it lacks vectors, or holds some no note needs now.
            let stale = removed > 0 || (first && !cached.is_empty());
            cached.clear();
            let embedded = embed(&semantic, pending, cache.as_ref());
            if let Some(cache) = &cache
                && (embedded > 0 || stale)
            {
                save(&semantic, cache);
            }
            // After the save, so whoever waited for the first pass finds it on disk too.
            if first && !semantic.stopping() {
                semantic.reach(Stage::Following);
            }
        }
        if semantic.stopping() {
            return;
        }
        drop(semantic);
        std::thread::sleep(POLL);
    }
}

/// Brings the store's note list in step with the index; returns the texts that need a vector
/// (taking those the cache has) and how many notes were dropped. Note texts are copied out under the index's read lock and
/// cut into passages after it is released.
fn sync(
    index: &SharedIndex,
    semantic: &Semantic,
    cached: &mut HashMap<TextHash, Box<[f32]>>,
) -> (Vec<(TextHash, String)>, usize) {
    let (changed, live): (Vec<Changed>, HashSet<String>) = {
        let idx = index.read().unwrap_or_else(|p| p.into_inner());
        let store = semantic.read_store();
        let live = idx.notes().map(|e| e.rel.clone()).collect();
        let changed = idx
            .notes()
            .filter(|e| {
                store
                    .notes
                    .get(&e.rel)
                    .is_none_or(|n| n.version != e.version)
            })
            .map(|e| Changed {
                rel: e.rel.clone(),
                version: e.version,
                texts: e.embedding_texts(),
            })
            .collect();
        (changed, live)
    };
    let mut store = semantic.write_store();
    let before = store.notes.len();
    store.notes.retain(|rel, _| live.contains(rel));
    let removed = before - store.notes.len();
    let mut pending = Vec::new();
    let mut queued = HashSet::new();
    for c in changed {
        let mut passages = Vec::with_capacity(c.texts.len());
        for text in c.texts {
            let hash = crate::vectors::text_hash(&text);
            passages.push(hash);
            if store.contains(hash) {
                continue;
            }
            if let Some(v) = cached.remove(&hash) {
                store.insert(hash, &v);
                semantic.from_cache.fetch_add(1, Ordering::SeqCst);
            } else if queued.insert(hash) {
                pending.push((hash, text));
            }
        }
        store.notes.insert(
            c.rel,
            NoteVectors {
                version: c.version,
                passages,
            },
        );
    }
    store.prune();
    semantic.recount(&store);
    (pending, removed)
}

/// Embeds `pending` a batch at a time into the store, until done or asked to stop; returns
/// how many were embedded.
fn embed(
    semantic: &Semantic,
    pending: Vec<(TextHash, String)>,
    cache: Option<&CacheFile>,
) -> usize {
    if pending.is_empty() {
        return 0;
    }
    let Some(embedder) = semantic.embedder.get() else {
        return 0;
    };
    let total = pending.len();
    let started = Instant::now();
    let mut checkpoint = Instant::now();
    let mut done = 0;
    tracing::info!(passages = total, "embedding passages in the background");
    for chunk in pending.chunks(BATCH) {
        if semantic.stopping() {
            break;
        }
        let texts = chunk.iter().map(|(_, t)| t.clone()).collect();
        let vectors = match embedder.embed_batch(texts) {
            Ok(vectors) => vectors,
            Err(EmbedError::Stopped) => break,
            Err(e) => {
                tracing::warn!("{e}; embedding that batch's passages one by one");
                match one_by_one(embedder, chunk) {
                    Some(vectors) => vectors,
                    None => break,
                }
            }
        };
        {
            let mut store = semantic.write_store();
            for ((hash, _), v) in chunk.iter().zip(vectors) {
                store.insert(*hash, &v);
            }
            semantic.recount(&store);
        }
        done += chunk.len();
        *semantic.pace.lock().unwrap_or_else(|p| p.into_inner()) = Some(Pace {
            started,
            embedded: done,
        });
        if checkpoint.elapsed() >= CHECKPOINT {
            checkpoint = Instant::now();
            tracing::info!(done, total, "embedding passages");
            if let Some(cache) = cache {
                save(semantic, cache);
            }
        }
    }
    *semantic.pace.lock().unwrap_or_else(|p| p.into_inner()) = None;
    tracing::info!(
        passages = done,
        ms = started.elapsed().as_millis() as u64,
        "{}",
        if done == total {
            "passages embedded; search is hybrid"
        } else {
            "embedding stopped; what was embedded is kept"
        }
    );
    done
}

/// The vectors of a batch that failed as a whole, each text on its own; a text that fails
/// alone gets a zero vector (it ranks by words alone), so one bad passage never keeps the
/// vault from being complete. `None` when the embedding thread has stopped.
fn one_by_one(embedder: &Embedder, chunk: &[(TextHash, String)]) -> Option<Vec<Vec<f32>>> {
    let dim = embedder.info().dim;
    let mut vectors = Vec::with_capacity(chunk.len());
    for (_, text) in chunk {
        match embedder.embed_batch(vec![text.clone()]) {
            Ok(mut v) => vectors.push(v.pop().unwrap_or_else(|| vec![0.0; dim])),
            Err(EmbedError::Stopped) => return None,
            Err(e) => {
                tracing::warn!("a passage cannot be embedded ({e}); it is found by words alone");
                vectors.push(vec![0.0; dim]);
            }
        }
    }
    Some(vectors)
}

/// Writes the store to the cache; returns whether it could.
fn save(semantic: &Semantic, cache: &CacheFile) -> bool {
    match cache.save(&semantic.read_store()) {
        Ok(()) => {
            tracing::debug!("vector cache saved");
            true
        }
        Err(e) => {
            tracing::warn!("cannot save the vector cache: {e}");
            false
        }
    }
}
