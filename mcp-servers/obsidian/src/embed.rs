//! Sentence embeddings in-process through llama.cpp: a GGUF embedding model (a BERT such as
//! all-MiniLM-L6-v2) with the pooling it declares, batched, L2-normalised. The only module that
//! touches `llama_cpp_2`.
//!
//! One thread owns the model's context (a llama.cpp context is not shareable) and serves two
//! queues: queries first, then the background indexer's batches, so a search never waits for
//! more than the batch being computed. That thread, and the compute threads llama.cpp starts
//! from it, run at idle priority: embedding takes only the cores nothing else wants, so it
//! never slows a model that is reading a prompt or writing an answer, yet has the whole
//! machine between a model's steps and when nothing else runs.

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

/// Tokens one llama.cpp batch holds: every sequence of a batch must fit in it whole (the
/// attention is not causal), and it bounds how long a query waits behind background work.
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

/// The two queues the embedding thread serves, queries first.
#[derive(Default)]
struct Queues {
    queries: VecDeque<Job>,
    background: VecDeque<Job>,
    closed: bool,
}

/// What the [`Embedder`] handles share with the thread.
struct Shared {
    queues: Mutex<Queues>,
    wake: Condvar,
    /// Tokens read so far, queries included: with a clock, the embedder's rate.
    tokens: AtomicU64,
}

/// Closes the queues when the last [`Embedder`] clone is dropped, which ends the thread.
struct Handle(Arc<Shared>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0
            .queues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .closed = true;
        self.0.wake.notify_all();
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
        let info = Arc::new(ModelInfo {
            name: path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            sha256,
            dim,
        });
        let shared = Arc::new(Shared {
            queues: Mutex::new(Queues::default()),
            wake: Condvar::new(),
            tokens: AtomicU64::new(0),
        });
        // The context is made on the thread that uses it, so its error comes back here.
        let (ready_tx, ready_rx) = mpsc::channel();
        let threads = i32::try_from(threads.max(1)).unwrap_or(1);
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("embed".into())
            .spawn(move || run(model, threads, &thread_shared, ready_tx))
            .map_err(|e| fail(e.to_string()))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Embedder {
                handle: Arc::new(Handle(shared)),
                info,
            }),
            Ok(Err(reason)) => Err(fail(reason)),
            Err(_) => Err(fail("the embedding thread ended at start".into())),
        }
    }

    /// The model's identity.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Tokens the model has read since it loaded, queries included.
    pub fn tokens_read(&self) -> u64 {
        self.handle.0.tokens.load(Ordering::Relaxed)
    }

    /// Embeds a search query, ahead of any background work.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.submit(vec![text.to_string()], true)?;
        v.pop().ok_or(EmbedError::Stopped)
    }

    /// Embeds a batch for the index (behind queries).
    pub fn embed_batch(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.submit(texts, false)
    }

    fn submit(&self, texts: Vec<String>, query: bool) -> Result<Vec<Vec<f32>>, EmbedError> {
        let (reply, rx) = mpsc::channel();
        let shared = &self.handle.0;
        {
            let mut q = shared.queues.lock().unwrap_or_else(|p| p.into_inner());
            let job = Job { texts, reply };
            if query {
                q.queries.push_back(job);
            } else {
                q.background.push_back(job);
            }
        }
        shared.wake.notify_one();
        rx.recv().map_err(|_| EmbedError::Stopped)?
    }
}

fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a file"));
    }
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic)
        .map_err(|_| std::io::Error::other("file is too short to be a GGUF model"))?;
    if &magic != b"GGUF" {
        return Err(std::io::Error::other("not a GGUF file"));
    }
    let mut hasher = Sha256::new();
    hasher.update(magic);
    std::io::copy(&mut file, &mut hasher)?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// The embedding thread: queries first, then background batches, until the queues close.
fn run(model: LlamaModel, threads: i32, shared: &Shared, ready: mpsc::Sender<Result<(), String>>) {
    // Before the context exists: llama.cpp's compute threads inherit the priority.
    yield_to_everything_else();
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
    loop {
        let job = {
            let mut q = shared.queues.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if q.closed {
                    return;
                }
                if let Some(job) = q.queries.pop_front().or_else(|| q.background.pop_front()) {
                    break job;
                }
                q = shared.wake.wait(q).unwrap_or_else(|p| p.into_inner());
            }
        };
        let result = embed_all(&model, &mut ctx, &job.texts, &shared.tokens);
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
