//! Sentence embeddings in-process through llama.cpp: a GGUF embedding model (a BERT such as
//! all-MiniLM-L6-v2) with the pooling it declares, batched, L2-normalised. The only module that
//! touches `llama_cpp_2`.
//!
//! A llama.cpp context is not shareable, so the model has two threads, each with its own
//! context and queue: one for search queries at normal priority, one for the background
//! indexer at idle priority (it and the compute threads llama.cpp starts from it). Indexing
//! takes only the cores nothing else wants, so it never slows a model that is reading a prompt
//! or writing an answer; a query never waits behind an indexing batch, nor for idle cores:
//! a person is waiting for it, and on a busy machine an idle-priority query was starved until
//! the search timed out.

use std::collections::VecDeque;
use std::io::Read;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use sha2::{Digest, Sha256};

use crate::gguf_meta;
use crate::language::Language;
use crate::models;

/// Tokens one llama.cpp batch holds: every sequence of a batch must fit in it whole (the
/// attention is not causal).
/// A BERT has no KV cache: each batch attends over all of its tokens, masked per sequence, so
/// attention grows with the square of the batch. 512 embeds the help vault 1.2× as fast as
/// 2,048 on 2 threads; 256 is no faster.
const BATCH_TOKENS: usize = 512;
/// Sequences one batch holds at most.
const BATCH_SEQUENCES: usize = 32;
/// Tokens kept of one text: all-MiniLM-L6-v2 was trained on 256 (sentence-transformers'
/// `max_seq_length`); a passage is at most [`crate::api::PASSAGE_CHARS`] characters anyway.
const MAX_TEXT_TOKENS: usize = 256;
const _: () = assert!(
    MAX_TEXT_TOKENS <= BATCH_TOKENS,
    "a text must fit in one batch"
);

/// Why the embedding model cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The file is missing, unreadable or not a GGUF embedding model.
    #[error("embedding model {path}: {reason}")]
    Load {
        /// The path as given.
        path: PathBuf,
        /// What went wrong, in words.
        reason: String,
    },
    /// llama.cpp failed while embedding.
    #[error("embedding failed: {0}")]
    Compute(String),
    /// The embedding thread has stopped (it failed to start, or the server is shutting down).
    #[error("the embedding thread has stopped")]
    Stopped,
}

/// llama.cpp's backend, initialised on first use. llama.cpp allows one per process, so this is
/// the one: recall's engine takes it from here too (a second `LlamaBackend::init` would fail
/// in a process that both embeds and generates). Its logs go to `tracing`.
pub fn llama_backend() -> Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A request to the embedding thread: texts in, one vector per text out.
struct Job {
    texts: Vec<String>,
    reply: mpsc::Sender<Result<Vec<Vec<f32>>, EmbedError>>,
}

/// One embedding thread's queue.
#[derive(Default)]
struct Lane {
    queue: Mutex<LaneQueue>,
    wake: Condvar,
}

#[derive(Default)]
struct LaneQueue {
    jobs: VecDeque<Job>,
    closed: bool,
}

impl Lane {
    fn push(&self, job: Job) {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .jobs
            .push_back(job);
        self.wake.notify_one();
    }

    /// The next job, or `None` once the lane is closed.
    fn next(&self) -> Option<Job> {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if q.closed {
                return None;
            }
            if let Some(job) = q.jobs.pop_front() {
                return Some(job);
            }
            q = self.wake.wait(q).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn close(&self) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.wake.notify_all();
    }
}

/// Which of the two threads: what it serves and at what priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Search queries, at normal priority.
    Query,
    /// The indexer's batches, at idle priority.
    Background,
}

/// What the [`Embedder`] handles share with the threads.
#[derive(Default)]
struct Shared {
    queries: Lane,
    background: Lane,
    /// Tokens read so far, queries included: with a clock, the embedder's rate.
    tokens: AtomicU64,
}

impl Shared {
    fn lane(&self, role: Role) -> &Lane {
        match role {
            Role::Query => &self.queries,
            Role::Background => &self.background,
        }
    }
}

/// Closes the lanes when the last [`Embedder`] clone is dropped, which ends the threads.
struct Handle(Arc<Shared>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.queries.close();
        self.0.background.close();
    }
}

/// A loaded embedding model and the thread that runs it. Cheap to clone; the thread ends when
/// the last clone is dropped.
#[derive(Clone)]
pub struct Embedder {
    handle: Arc<Handle>,
    info: Arc<ModelInfo>,
}

/// What identifies a model's vectors: cached vectors are only reused under the same identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// The file name, for logs and the server's status.
    pub name: String,
    /// SHA-256 of the whole file, hex: the same bytes give the same vectors, whatever the path.
    pub sha256: String,
    /// Vector length.
    pub dim: usize,
    /// The languages the model was trained on, as ISO 639-1 codes: the GGUF's
    /// `general.languages`, else those of the known model with this file name
    /// ([`crate::models::KNOWN_MODELS`]); `None` when neither says.
    pub languages: Option<Vec<String>>,
}

impl ModelInfo {
    /// Whether the model's vectors can be trusted for a text in `language` (`None`: not one of
    /// [`Language`]'s, taken as covered, as is every language of a model that declares none).
    pub fn covers(&self, language: Option<Language>) -> bool {
        match (language, &self.languages) {
            (Some(language), Some(declared)) => declared.iter().any(|l| l == language.code()),
            _ => true,
        }
    }
}

impl Embedder {
    /// Loads the GGUF at `path` and starts its thread with `threads` compute threads.
    pub fn load(path: &Path, threads: usize) -> Result<Embedder, EmbedError> {
        let fail = |reason: String| EmbedError::Load {
            path: path.to_path_buf(),
            reason,
        };
        let sha256 = file_sha256(path).map_err(|e| fail(e.to_string()))?;
        let backend = llama_backend().map_err(fail)?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| fail(format!("llama.cpp cannot load it ({e})")))?;
        let dim = usize::try_from(model.n_embd_out()).unwrap_or(0);
        if dim == 0 {
            return Err(fail("it declares no embedding size".into()));
        }
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let languages = gguf_meta::string_array(path, "general.languages")
            .map_err(|e| fail(format!("its header cannot be read ({e})")))?
            .or_else(|| {
                let known = models::KNOWN_MODELS.iter().find(|m| m.file == name)?;
                Some(known.languages.iter().map(|l| l.to_string()).collect())
            });
        let info = Arc::new(ModelInfo {
            name,
            sha256,
            dim,
            languages,
        });
        let model = Arc::new(model);
        let shared = Arc::new(Shared::default());
        let handle = Handle(shared.clone());
        let threads = i32::try_from(threads.max(1)).unwrap_or(1);
        // Each context is made on the thread that uses it, so its error comes back here.
        let (ready_tx, ready_rx) = mpsc::channel();
        for role in [Role::Query, Role::Background] {
            let (model, shared, ready) = (model.clone(), shared.clone(), ready_tx.clone());
            std::thread::Builder::new()
                .name(format!("embed-{role:?}").to_lowercase())
                .spawn(move || run(&model, role, threads, &shared, ready))
                .map_err(|e| fail(e.to_string()))?;
        }
        drop(ready_tx);
        for _ in 0..2 {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(reason)) => return Err(fail(reason)),
                Err(_) => return Err(fail("an embedding thread ended at start".into())),
            }
        }
        Ok(Embedder {
            handle: Arc::new(handle),
            info,
        })
    }

    /// The model's identity.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Tokens the model has read since it loaded, queries included.
    pub fn tokens_read(&self) -> u64 {
        self.handle.0.tokens.load(Ordering::Relaxed)
    }

    /// Embeds a search query on the query thread: it never waits behind background work.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed_queries(vec![text.to_string()])?;
        v.pop().ok_or(EmbedError::Stopped)
    }

    /// Embeds a batch on the query thread, for a search in progress.
    pub fn embed_queries(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.submit(texts, Role::Query)
    }

    /// Embeds a batch for the index, on the idle-priority thread.
    pub fn embed_batch(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.submit(texts, Role::Background)
    }

    fn submit(&self, texts: Vec<String>, role: Role) -> Result<Vec<Vec<f32>>, EmbedError> {
        let (reply, rx) = mpsc::channel();
        self.handle.0.lane(role).push(Job { texts, reply });
        rx.recv().map_err(|_| EmbedError::Stopped)?
    }
}

fn file_sha256(path: &Path) -> std::io::Result<String> {
    let (mut file, magic) = open_gguf(path)?;
    let mut hasher = Sha256::new();
    hasher.update(magic);
    std::io::copy(&mut file, &mut hasher)?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// Whether `path` is a GGUF file at all (its magic): checked when the server starts, so that
/// a wrong file is a clear error then rather than a search that silently never ranks by
/// meaning. The errors name no path.
pub fn check_model_file(path: &Path) -> std::io::Result<()> {
    open_gguf(path).map(drop)
}

/// `path` opened, past its GGUF magic.
fn open_gguf(path: &Path) -> std::io::Result<(std::fs::File, [u8; 4])> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| std::io::Error::new(e.kind(), e.kind().to_string()))?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a file"));
    }
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic)
        .map_err(|_| std::io::Error::other("file is too short to be a GGUF model"))?;
    if &magic != b"GGUF" {
        return Err(std::io::Error::other("not a GGUF file"));
    }
    Ok((file, magic))
}

/// One embedding thread: its lane's jobs in order, until the lane closes.
fn run(
    model: &LlamaModel,
    role: Role,
    threads: i32,
    shared: &Shared,
    ready: mpsc::Sender<Result<(), String>>,
) {
    if role == Role::Background {
        // Before the context exists: llama.cpp's compute threads inherit the priority.
        yield_to_everything_else();
    }
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(BATCH_TOKENS as u32))
        .with_n_batch(BATCH_TOKENS as u32)
        .with_n_ubatch(BATCH_TOKENS as u32)
        .with_n_seq_max(BATCH_SEQUENCES as u32)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_embeddings(true);
    let Ok(backend) = llama_backend() else { return };
    let mut ctx = match model.new_context(backend, params) {
        Ok(ctx) => ctx,
        Err(e) => {
            let _ = ready.send(Err(format!("llama.cpp cannot make a context for it ({e})")));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let lane = shared.lane(role);
    while let Some(job) = lane.next() {
        let result = embed_all(model, &mut ctx, &job.texts, &shared.tokens);
        let _ = job.reply.send(result);
    }
}

/// Lowers the calling thread to idle priority (Linux's `SCHED_IDLE`: it runs only on a core
/// that nothing else wants; elsewhere the lowest priority there is). Threads it starts
/// inherit that.
fn yield_to_everything_else() {
    use thread_priority::{ThreadPriority, ThreadSchedulePolicy};
    #[cfg(target_os = "linux")]
    let lowered = thread_priority::set_thread_priority_and_policy(
        thread_priority::thread_native_id(),
        ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(thread_priority::NormalThreadSchedulePolicy::Idle),
    );
    #[cfg(not(target_os = "linux"))]
    let lowered = thread_priority::set_current_thread_priority(ThreadPriority::Min);
    if let Err(e) = lowered {
        tracing::info!("embedding runs at normal priority ({e:?})");
    }
}

/// Embeds `texts` in as few llama.cpp batches as fit, in order.
fn embed_all(
    model: &LlamaModel,
    ctx: &mut llama_cpp_2::context::LlamaContext<'_>,
    texts: &[String],
    tokens_read: &AtomicU64,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let vocab = model.vocab();
    let tokenized: Vec<_> = texts
        .iter()
        .map(|t| {
            let mut tokens = vocab.tokenize(t.as_bytes(), true, false);
            if tokens.len() > MAX_TEXT_TOKENS {
                // Keep the closing [SEP]: BERT's pooled vector expects it.
                let last = tokens[tokens.len() - 1];
                tokens.truncate(MAX_TEXT_TOKENS - 1);
                tokens.push(last);
            }
            tokens
        })
        .collect();
    let mut out = Vec::with_capacity(texts.len());
    let mut start = 0;
    while start < tokenized.len() {
        let mut end = start;
        let mut used = 0;
        while end < tokenized.len()
            && end - start < BATCH_SEQUENCES
            && used + tokenized[end].len() <= BATCH_TOKENS
        {
            used += tokenized[end].len();
            end += 1;
        }
        let mut batch = LlamaBatch::new(BATCH_TOKENS, BATCH_SEQUENCES as i32);
        for (seq, tokens) in tokenized[start..end].iter().enumerate() {
            batch
                .add_sequence(tokens, seq as i32, true)
                .map_err(|e| EmbedError::Compute(e.to_string()))?;
        }
        ctx.clear_kv_cache();
        ctx.decode(&mut batch)
            .map_err(|e| EmbedError::Compute(e.to_string()))?;
        tokens_read.fetch_add(used as u64, Ordering::Relaxed);
        for seq in 0..end - start {
            let v = ctx.embeddings_seq_ith(seq as i32).map_err(|_| {
                EmbedError::Compute("no pooled embedding (a non-pooling model?)".into())
            })?;
            out.push(normalized(v));
        }
        start = end;
    }
    Ok(out)
}

fn normalized(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        return v.to_vec();
    }
    v.iter().map(|x| x / norm).collect()
}
