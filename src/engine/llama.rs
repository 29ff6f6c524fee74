//! llama.cpp in-process: loads a GGUF model, keeps a conversation's KV cache, samples (optionally
//! under a grammar), streams text, and runs the `recall bench` measurements.
//!
//! **Architecture invariant:** this is the only module that imports `llama_cpp_2`.

use std::io::Read;
use std::num::NonZeroU32;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use super::prompt_cache::{CacheKey, PromptCache};
use super::stream::TextStream;
use super::{
    BenchReport, CancellationToken, ChatModel, Chosen, Completion, Constraint, EngineError,
    GenerateRequest, GenerationStats, ModelInfo, Sampling, StopReason, Throughput, TokenScore,
};

/// Largest context used when `--ctx` is not given: the trained context is often 128k, far more
/// KV cache than a laptop should allocate for a vault question.
pub const DEFAULT_CTX_CAP: u32 = 8192;

/// Prompt tokens decoded per batch. Cancellation is checked between batches, so this bounds how
/// long Ctrl-C waits while a prompt is read: one batch, 128 / the model's prompt tok/s.
/// Measured (SmolLM2-135M, 2 threads, a 1917-token prompt, Ctrl-C 0.3 s in): batches of 512
/// without the check, 200–207 tok/s and 8.9–9.4 s from Ctrl-C to exit; with it, 1.6 s; batches
/// of 128, 193 tok/s (within run-to-run noise) and 0.2 s; of 64, 163 tok/s.
const PROMPT_BATCH: u32 = 128;

/// How to load a model.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Layers to offload to the GPU (needs a GPU feature at build time).
    pub gpu_layers: u32,
    /// Show a progress bar on stderr (only makes sense on a terminal).
    pub progress: bool,
}

/// How to set up a conversation's context.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Context size in tokens; `None` picks the trained context capped at [`DEFAULT_CTX_CAP`].
    pub n_ctx: Option<u32>,
    /// CPU threads; `None` uses every available core.
    pub threads: Option<i32>,
}

/// A loaded model. Cheap to share by reference; each conversation gets a [`Session`].
pub struct Engine {
    model: LlamaModel,
    info: ModelInfo,
    /// Which model file this is and how it runs, for prompt cache keys.
    identity: String,
    /// Llama 3's `<|eom_id|>`, when the vocabulary has it: it ends a message, not the turn.
    eom: Option<LlamaToken>,
}

/// llama.cpp's backend: one per process, shared with the vault server's embedder (which owns
/// it, see `obsidian_kb::embed::llama_backend`).
fn backend() -> Result<&'static LlamaBackend, EngineError> {
    obsidian_kb::embed::llama_backend().map_err(EngineError::Backend)
}

/// Checks the file before llama.cpp sees it, so a wrong file is a clear error and not a crash.
fn check_gguf(path: &Path) -> Result<(), EngineError> {
    let fail = |reason: String| EngineError::ModelLoad {
        path: path.display().to_string(),
        reason,
    };
    // Before opening: a folder reads as "too short", and a named pipe would block the open.
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(fail(
                "this is a folder; give the .gguf file inside it (or an alias from `recall models`)"
                    .to_string(),
            ));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(fail(
                "not a regular file (a pipe, socket or device); give a .gguf file".to_string(),
            ));
        }
        _ => {}
    }
    let mut file = std::fs::File::open(path).map_err(|e| {
        fail(match e.kind() {
            std::io::ErrorKind::NotFound => {
                "no such file (give a .gguf path, hf:OWNER/REPO/FILE.gguf, or an alias from `recall models`)".to_string()
            }
            _ => e.to_string(),
        })
    })?;
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic)
        .map_err(|_| fail("file is too short to be a GGUF model".to_string()))?;
    if &magic != b"GGUF" {
        return Err(fail(
            "not a GGUF file (llama.cpp needs .gguf; convert or download a GGUF build)".to_string(),
        ));
    }
    Ok(())
}

impl Engine {
    /// Loads a GGUF model.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<Engine, EngineError> {
        check_gguf(path)?;
        let backend = backend()?;
        let mut params = LlamaModelParams::default().with_n_gpu_layers(options.gpu_layers);
        let bar = options.progress.then(load_progress_bar);
        if let Some(bar) = bar.clone() {
            params = params.with_progress_callback(move |p: f32| {
                bar.set_position((p * 100.0) as u64);
                true
            });
        }
        let model = LlamaModel::load_from_file(backend, path, &params).map_err(|e| {
            EngineError::ModelLoad {
                path: path.display().to_string(),
                reason: format!(
                    "llama.cpp could not load it ({e}); the file may be truncated or of an unsupported architecture (see --verbose)"
                ),
            }
        })?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let vocab = model.vocab();
        let piece = |t: LlamaToken| {
            String::from_utf8_lossy(&vocab.token_to_piece(t, true, None)).into_owned()
        };
        let name = model.meta_val_str("general.name").ok().unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let info = ModelInfo {
            path: path.to_path_buf(),
            name,
            chat_template: model.meta_val_str("tokenizer.chat_template").ok(),
            n_ctx_train: model.n_ctx_train(),
            n_params: model.n_params(),
            size_bytes: model.size(),
            bos_text: piece(vocab.bos()),
            eos_text: piece(vocab.eos()),
            add_bos: vocab.should_add_bos(),
        };
        let eom = match vocab.tokenize(b"<|eom_id|>", false, true).as_slice() {
            [t] if vocab.is_eog(*t) => Some(*t),
            _ => None,
        };
        let identity = model_identity(path, options);
        Ok(Engine {
            model,
            info,
            identity,
            eom,
        })
    }

    /// What the file says about itself.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Tokenizes a rendered prompt: special tokens written as text become single tokens, and BOS
    /// is added only when the model wants it and the prompt does not already start with it
    /// (a Llama 3 template writes `<|begin_of_text|>` itself: adding another would double it).
    pub fn tokenize_prompt(&self, prompt: &str) -> Vec<i32> {
        self.tokens(prompt).into_iter().map(|t| t.0).collect()
    }

    fn tokens(&self, prompt: &str) -> Vec<LlamaToken> {
        let add_bos = self.info.add_bos && !prompt.starts_with(&self.info.bos_text);
        self.model
            .vocab()
            .tokenize(prompt.as_bytes(), add_bos, true)
    }

    /// Whether `text` is one token of this vocabulary (special tokens parsed): a prompt layout's
    /// markers must be, or the model reads them as ordinary text.
    pub fn is_single_token(&self, text: &str) -> bool {
        self.model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .len()
            == 1
    }

    /// The text of one token id, special tokens included.
    pub fn token_text(&self, token: i32) -> String {
        String::from_utf8_lossy(
            &self
                .model
                .vocab()
                .token_to_piece(LlamaToken(token), true, None),
        )
        .into_owned()
    }

    /// Starts a conversation with its own context and KV cache.
    pub fn session(&self, options: &SessionOptions) -> Result<Session<'_>, EngineError> {
        let n_ctx = options
            .n_ctx
            .unwrap_or_else(|| self.info.n_ctx_train.min(DEFAULT_CTX_CAP))
            .max(64);
        let ctx = self.context(n_ctx, options.threads, PROMPT_BATCH)?;
        let n_batch = ctx.n_batch() as usize;
        let identity = format!(
            "{}; n_ctx={}; n_batch={n_batch}; n_ubatch={}; threads={}",
            self.identity,
            ctx.n_ctx(),
            ctx.n_ubatch(),
            options.threads.unwrap_or_else(default_threads)
        );
        Ok(Session {
            engine: self,
            ctx,
            cached: Vec::new(),
            batch: LlamaBatch::new(n_batch, 1),
            n_batch,
            prompt_cache: None,
            identity,
        })
    }

    fn context(
        &self,
        n_ctx: u32,
        threads: Option<i32>,
        n_batch: u32,
    ) -> Result<LlamaContext<'_>, EngineError> {
        let threads = threads.unwrap_or_else(default_threads);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_batch)
            .with_n_ubatch(n_batch.min(512))
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        self.model.new_context(backend()?, params).map_err(|e| {
            EngineError::Backend(format!("cannot create a context of {n_ctx} tokens: {e}"))
        })
    }

    /// Measures prompt processing and generation speed the way llama.cpp's `llama-bench` does:
    /// `pp` decodes `n_prompt` tokens in one batch, `tg` decodes `n_gen` tokens one at a time,
    /// each on an empty cache, after one warm-up run, `repetitions` times.
    pub fn bench(&self, options: &BenchOptions) -> Result<BenchReport, EngineError> {
        let n_ctx = (options.n_prompt + options.n_gen).max(64) as u32;
        let mut ctx = self.context(n_ctx, options.threads, options.n_prompt.max(1) as u32)?;
        let n_vocab = self.model.n_vocab();
        // Any token ids will do; llama-bench uses random ones. A fixed pattern keeps runs equal.
        let token = |i: usize| LlamaToken(((i * 7919 + 13) % n_vocab as usize) as i32);
        let mut batch = LlamaBatch::new(options.n_prompt.max(1), 1);

        let mut run_pp = |ctx: &mut LlamaContext<'_>| -> Result<Duration, EngineError> {
            ctx.clear_kv_cache();
            batch.clear();
            for i in 0..options.n_prompt {
                batch
                    .add(token(i), i as i32, &[0], i + 1 == options.n_prompt)
                    .map_err(|e| EngineError::Backend(e.to_string()))?;
            }
            let start = Instant::now();
            ctx.decode(&mut batch)
                .map_err(|e| EngineError::Backend(e.to_string()))?;
            ctx.synchronize();
            Ok(start.elapsed())
        };
        let mut single = LlamaBatch::new(1, 1);
        let mut run_tg = |ctx: &mut LlamaContext<'_>| -> Result<Duration, EngineError> {
            ctx.clear_kv_cache();
            let start = Instant::now();
            for i in 0..options.n_gen {
                single.clear();
                single
                    .add(token(i), i as i32, &[0], true)
                    .map_err(|e| EngineError::Backend(e.to_string()))?;
                ctx.decode(&mut single)
                    .map_err(|e| EngineError::Backend(e.to_string()))?;
            }
            ctx.synchronize();
            Ok(start.elapsed())
        };

        let mut pp = Vec::new();
        let mut tg = Vec::new();
        if options.n_prompt > 0 {
            run_pp(&mut ctx)?;
            for _ in 0..options.repetitions {
                pp.push(options.n_prompt as f64 / run_pp(&mut ctx)?.as_secs_f64());
            }
        }
        if options.n_gen > 0 {
            run_tg(&mut ctx)?;
            for _ in 0..options.repetitions {
                tg.push(options.n_gen as f64 / run_tg(&mut ctx)?.as_secs_f64());
            }
        }
        Ok(BenchReport {
            threads: options.threads.unwrap_or_else(default_threads),
            pp: Throughput::of(options.n_prompt, &pp),
            tg: Throughput::of(options.n_gen, &tg),
        })
    }
}

/// What a prompt cache key must know of the model: the file (canonical path, size, modification
/// time: a stat, where hashing a multi-GB file would cost more than the cache saves, and a header
/// hash would not tell apart two fine-tunes of one architecture), how it runs (GPU layers compute
/// the state on another backend), the exact llama.cpp binding (its state format), and the build
/// that computes the state ([`build_identity`]).
fn model_identity(path: &Path, options: &LoadOptions) -> String {
    format!(
        "model={}; gpu_layers={}; llama-cpp-2={LLAMA_CPP_2}; type_k=f16; type_v=f16; build={}",
        file_identity(path),
        options.gpu_layers,
        build_identity()
    )
}

/// Which build computes the state: the running executable, into which llama.cpp is linked. Two
/// builds of one llama.cpp version differ in numerics (the CPU features and compiler flags
/// chosen when it was compiled), and a state one build left changed the greedy answers of
/// another (measured on the help vault). Any rebuild reads the fixed prompt once more.
fn build_identity() -> String {
    std::env::current_exe().map_or_else(|_| "unknown".to_string(), |exe| file_identity(&exe))
}

/// A file as its canonical path, size and modification time.
fn file_identity(path: &Path) -> String {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let (bytes, modified) = std::fs::metadata(&canonical).map_or((0, 0), |m| {
        let modified = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        (m.len(), modified)
    });
    format!(
        "{} ({bytes} bytes, mtime_ns {modified})",
        canonical.display()
    )
}

/// The binding's version as pinned in Cargo.toml (`=`), so a bump invalidates every cached state.
const LLAMA_CPP_2: &str = "0.1.160";

fn default_threads() -> i32 {
    std::thread::available_parallelism().map_or(4, |n| n.get() as i32)
}

fn load_progress_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(100);
    bar.set_style(
        indicatif::ProgressStyle::with_template("loading model {bar:30} {pos:>3}%")
            .expect("static template is valid"),
    );
    bar
}

/// What `recall bench` measures.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Prompt tokens for the pp test (llama-bench `-p`).
    pub n_prompt: usize,
    /// Generated tokens for the tg test (llama-bench `-n`).
    pub n_gen: usize,
    /// Repetitions of each test (llama-bench `-r`).
    pub repetitions: usize,
    /// CPU threads (llama-bench `-t`).
    pub threads: Option<i32>,
}

/// One conversation on a loaded model: a context whose KV cache is reused across calls.
pub struct Session<'e> {
    engine: &'e Engine,
    ctx: LlamaContext<'e>,
    /// Tokens whose keys and values are in the cache, in position order.
    cached: Vec<LlamaToken>,
    batch: LlamaBatch<'static>,
    n_batch: usize,
    /// Where the KV state of stable prompt prefixes is kept across runs, when it is.
    prompt_cache: Option<PromptCache>,
    /// The model and context parameters, for prompt cache keys.
    identity: String,
}

impl Session<'_> {
    /// Forgets the KV cache; the next call evaluates its whole prompt.
    pub fn reset(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
    }

    /// Evaluates `tokens[keep..]` after dropping cache positions from `keep` on; leaves the
    /// logits of the last token ready for sampling. `cancel` is checked before each batch: a
    /// cancelled evaluation returns `Break`, with the batches done so far kept in the cache.
    fn evaluate(
        &mut self,
        tokens: &[LlamaToken],
        keep: usize,
        cancel: &CancellationToken,
    ) -> Result<ControlFlow<()>, EngineError> {
        self.ctx
            .kv_cache_seq_rm(0, Some(keep as u32), None)
            .map_err(|e| EngineError::Backend(format!("cannot trim the KV cache: {e}")))?;
        self.cached.truncate(keep);
        for (chunk_index, chunk) in tokens[keep..].chunks(self.n_batch).enumerate() {
            if cancel.is_cancelled() {
                return Ok(ControlFlow::Break(()));
            }
            let start = keep + chunk_index * self.n_batch;
            self.decode_chunk(chunk, |i| start + i + 1 == tokens.len())?;
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Reads `chunk` (at most a batch) into the KV cache after the tokens there, keeping the
    /// logits of the tokens at the indices `logits` picks.
    fn decode_chunk(
        &mut self,
        chunk: &[LlamaToken],
        logits: impl Fn(usize) -> bool,
    ) -> Result<(), EngineError> {
        let start = self.cached.len();
        self.batch.clear();
        for (i, token) in chunk.iter().enumerate() {
            self.batch
                .add(*token, (start + i) as i32, &[0], logits(i))
                .map_err(|e| EngineError::Backend(e.to_string()))?;
        }
        self.ctx
            .decode(&mut self.batch)
            .map_err(|e| EngineError::Backend(format!("decode failed: {e}")))?;
        self.cached.extend_from_slice(chunk);
        Ok(())
    }

    /// Reads `prompt` into the KV cache after the prefix it shares with what is there, its
    /// stable prefix from the prompt cache when that holds it, leaving the logits of its
    /// last token ready; the statistics of the reading. `Break` with them when
    /// `request.cancel` stopped it.
    fn read_prompt(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
    ) -> Result<ControlFlow<GenerationStats, GenerationStats>, EngineError> {
        let tokens = self.engine.tokens(prompt);
        let n_ctx = self.ctx.n_ctx() as usize;
        if tokens.is_empty() || tokens.len() >= n_ctx {
            return Err(EngineError::ContextOverflow {
                prompt_tokens: tokens.len(),
                n_ctx,
            });
        }
        let common = self
            .cached
            .iter()
            .zip(&tokens)
            .take_while(|(a, b)| a == b)
            .count();
        // At least one token must be evaluated to get fresh logits.
        let keep = common.min(tokens.len() - 1);
        let started = Instant::now();
        let prefix = self.stable_prefix(prompt, request, &tokens);
        let evaluated = self.evaluate_with_prefix(&tokens, prefix, keep, &request.cancel)?;
        let prompt_time = started.elapsed();
        Ok(match evaluated {
            ControlFlow::Continue((keep, restored)) => ControlFlow::Continue(GenerationStats {
                prompt_tokens: tokens.len(),
                reused_tokens: keep,
                restored_tokens: restored,
                evaluated_tokens: tokens.len() - keep,
                prompt_time,
                ..GenerationStats::default()
            }),
            ControlFlow::Break(()) => ControlFlow::Break(GenerationStats {
                prompt_tokens: tokens.len(),
                reused_tokens: keep.min(self.cached.len()),
                evaluated_tokens: self.cached.len().saturating_sub(keep),
                prompt_time,
                ..GenerationStats::default()
            }),
        })
    }

    fn sample_next(
        &mut self,
        chain: &mut LlamaSampler,
        grammar: Option<&mut LlamaSampler>,
    ) -> Result<LlamaToken, EngineError> {
        let idx = self.batch.n_tokens() - 1;
        let token = chain.sample(&self.ctx, idx);
        let Some(grammar) = grammar else {
            return Ok(token);
        };
        // Checking the one chosen token against the grammar is far cheaper than masking the whole
        // vocabulary every step; only when the grammar rejects it do we pay for the full mask.
        let mut single =
            LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
        single.apply_sampler(grammar);
        let token = if single.data[0].logit().is_finite() {
            token
        } else {
            let mut all = self.ctx.token_data_array_ith(idx);
            all.apply_sampler(grammar);
            all.apply_sampler(chain);
            all.selected_token()
                .ok_or_else(|| EngineError::Backend("the grammar allows no token here".into()))?
        };
        // End-of-generation ends the reply; llama.cpp's grammar refuses to accept it as text.
        if !self.engine.model.vocab().is_eog(token) {
            grammar
                .try_accept(token)
                .map_err(|e| EngineError::Grammar(e.to_string()))?;
        }
        Ok(token)
    }

    fn grammar_sampler(&self, constraint: &Constraint) -> Result<LlamaSampler, EngineError> {
        let model = &self.engine.model;
        let sampler = if constraint.lazy_patterns.is_empty() {
            LlamaSampler::grammar(model, &constraint.gbnf, &constraint.root)
        } else {
            LlamaSampler::grammar_lazy_patterns(
                model,
                &constraint.gbnf,
                &constraint.root,
                &constraint.lazy_patterns,
                &[],
            )
        };
        sampler.map_err(|e| EngineError::Grammar(e.to_string()))
    }
}

/// The prompt cache: stable prefixes evaluated once, then loaded from disk on later runs.
impl Session<'_> {
    /// Keeps the KV state of stable prompt prefixes in `cache` across runs (see
    /// [`GenerateRequest::stable_prefix`]).
    pub fn use_prompt_cache(&mut self, cache: PromptCache) {
        self.prompt_cache = Some(cache);
    }

    /// Tokens of `request`'s stable prefix when they are a proper prefix of `tokens`; else 0.
    fn stable_prefix(
        &self,
        prompt: &str,
        request: &GenerateRequest,
        tokens: &[LlamaToken],
    ) -> usize {
        match request.stable_text(prompt) {
            Some(text) => super::stable_prefix_len(&self.engine.tokens(text), tokens),
            None => 0,
        }
    }

    /// Evaluates `tokens` after `keep`, the first `prefix` tokens on their own: loaded from the
    /// prompt cache when it holds them, else evaluated and stored there. Evaluating the rest
    /// from the same position either way makes a warm run compute exactly what a cold one does
    /// (same batches, same KV), so greedy decoding gives the same tokens. Returns the tokens
    /// now reused and how many of them came from disk; `Break` when `cancel` stopped it (a
    /// prefix cut short is not stored).
    fn evaluate_with_prefix(
        &mut self,
        tokens: &[LlamaToken],
        prefix: usize,
        keep: usize,
        cancel: &CancellationToken,
    ) -> Result<ControlFlow<(), (usize, usize)>, EngineError> {
        if keep >= prefix {
            let evaluated = self.evaluate(tokens, keep, cancel)?;
            return Ok(evaluated.map_continue(|()| (keep, 0)));
        }
        if self.restore_prefix(&tokens[..prefix]) {
            let evaluated = self.evaluate(tokens, prefix, cancel)?;
            return Ok(evaluated.map_continue(|()| (prefix, prefix)));
        }
        // A file that failed to load leaves the cache empty.
        let keep = keep.min(self.cached.len());
        if self.evaluate(&tokens[..prefix], keep, cancel)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
        self.store_prefix(&tokens[..prefix]);
        let evaluated = self.evaluate(tokens, prefix, cancel)?;
        Ok(evaluated.map_continue(|()| (keep, 0)))
    }

    fn cache_key(&self, prefix: &[LlamaToken]) -> (CacheKey, Vec<i32>) {
        let ids: Vec<i32> = prefix.iter().map(|t| t.0).collect();
        (CacheKey::new(&self.identity, &ids), ids)
    }

    /// Loads the prefix's state from the cache into an empty sequence; false (and an empty
    /// cache) when there is none or it does not check out.
    fn restore_prefix(&mut self, prefix: &[LlamaToken]) -> bool {
        let Some(cache) = &self.prompt_cache else {
            return false;
        };
        let started = Instant::now();
        let (key, ids) = self.cache_key(prefix);
        let Some(path) = cache.find(&key, &ids) else {
            return false;
        };
        let checked = started.elapsed();
        self.reset();
        match self.ctx.state_seq_load_file(&path, 0, prefix.len()) {
            Ok((loaded, _)) if loaded == prefix => {
                self.cached = prefix.to_vec();
                tracing::debug!(
                    "prompt cache: {} tokens restored in {:?} (checking the file {checked:?})",
                    prefix.len(),
                    started.elapsed()
                );
                true
            }
            Ok(_) => {
                tracing::debug!("prompt cache: {} held other tokens", path.display());
                self.reset();
                false
            }
            Err(e) => {
                tracing::debug!("prompt cache: llama.cpp refused {}: {e}", path.display());
                self.reset();
                false
            }
        }
    }

    /// Stores the state of the sequence, which holds exactly `prefix`, in the cache; failure
    /// only costs the next run the prefix's evaluation.
    fn store_prefix(&self, prefix: &[LlamaToken]) {
        let Some(cache) = &self.prompt_cache else {
            return;
        };
        let started = Instant::now();
        let (key, ids) = self.cache_key(prefix);
        let stored = cache.store(&key, &ids, |path| {
            self.ctx
                .state_seq_save_file(path, 0, prefix)
                .map(|_| ())
                .map_err(|e| format!("llama.cpp could not save the state: {e}"))
        });
        match stored {
            Ok(bytes) => tracing::debug!(
                "prompt cache: {} tokens stored ({bytes} bytes) in {:?}",
                prefix.len(),
                started.elapsed()
            ),
            Err(e) => tracing::debug!("prompt cache: not stored: {e}"),
        }
    }
}

/// How likely one text is after a prompt, token by token.
impl Session<'_> {
    /// The log-probability the model gives each token of `continuation` (tokenized on its
    /// own, no special tokens) after `prompt`: how well the prompt predicts the text, as a
    /// reader of (passage, question) pairs scores a passage by the question it predicts.
    /// The continuation stays in the KV cache after the prompt; none is scored when
    /// `request.cancel` stopped the reading.
    pub fn continuation_logprobs(
        &mut self,
        prompt: &str,
        continuation: &str,
        request: &GenerateRequest,
    ) -> Result<Vec<TokenScore>, EngineError> {
        if self.read_prompt(prompt, request)?.is_break() {
            return Ok(Vec::new());
        }
        let vocab = self.engine.model.vocab();
        let tokens = vocab.tokenize(continuation.as_bytes(), false, false);
        if tokens.is_empty() {
            return Ok(Vec::new());
        }
        let n_ctx = self.ctx.n_ctx() as usize;
        if self.cached.len() + tokens.len() >= n_ctx {
            return Err(EngineError::ContextOverflow {
                prompt_tokens: self.cached.len() + tokens.len(),
                n_ctx,
            });
        }
        let log_prob = |logits: &[f32], token: LlamaToken| {
            let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = logits.iter().map(|l| (l - top).exp()).sum();
            logits[token.0 as usize] - top - sum.ln()
        };
        let text = |token: LlamaToken| {
            String::from_utf8_lossy(&vocab.token_to_piece(token, false, None)).into_owned()
        };
        let mut scores = vec![TokenScore {
            text: text(tokens[0]),
            log_prob: log_prob(
                self.ctx.get_logits_ith(self.batch.n_tokens() - 1),
                tokens[0],
            ),
        }];
        // Every token but the last is read with its logits, which predict the one after it.
        let reading = &tokens[..tokens.len() - 1];
        for (chunk_index, chunk) in reading.chunks(self.n_batch).enumerate() {
            self.decode_chunk(chunk, |_| true)?;
            for i in 0..chunk.len() {
                let next = tokens[chunk_index * self.n_batch + i + 1];
                scores.push(TokenScore {
                    text: text(next),
                    log_prob: log_prob(self.ctx.get_logits_ith(i as i32), next),
                });
            }
        }
        Ok(scores)
    }
}

/// Softmax of `logits`.
fn softmax(logits: &[f32]) -> Vec<f32> {
    let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = logits.iter().map(|l| (l - top).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.into_iter().map(|e| e / sum).collect()
}

fn sampler_chain(sampling: &Sampling) -> LlamaSampler {
    if sampling.temperature <= 0.0 {
        return LlamaSampler::greedy();
    }
    LlamaSampler::chain_simple([
        LlamaSampler::top_p(sampling.top_p, 1),
        LlamaSampler::min_p(sampling.min_p, 1),
        LlamaSampler::temp(sampling.temperature),
        LlamaSampler::dist(sampling.seed),
    ])
}

impl ChatModel for Session<'_> {
    fn generate(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Completion, EngineError> {
        let read = match self.read_prompt(prompt, request)? {
            ControlFlow::Continue(read) => read,
            ControlFlow::Break(stats) => {
                return Ok(Completion {
                    text: String::new(),
                    stop: StopReason::Cancelled,
                    stats,
                });
            }
        };
        let n_ctx = self.ctx.n_ctx() as usize;

        let mut chain = sampler_chain(&request.sampling);
        let mut grammar = request
            .constraint
            .as_ref()
            .map(|c| self.grammar_sampler(c))
            .transpose()?;
        let mut stream = TextStream::new(&request.stop);
        let vocab = self.engine.model.vocab();
        let mut generated = 0;
        let mut piece = Vec::new();
        let started = Instant::now();
        let stop = loop {
            if request.cancel.is_cancelled() {
                break StopReason::Cancelled;
            }
            if generated >= request.max_tokens {
                break StopReason::MaxTokens;
            }
            let token = self.sample_next(&mut chain, grammar.as_mut())?;
            if vocab.is_eog(token) {
                break if Some(token) == self.engine.eom {
                    StopReason::EndOfMessage
                } else {
                    StopReason::EndOfTurn
                };
            }
            generated += 1;
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, true, None);
            let pushed = stream.push(&piece);
            let flow = if pushed.text.is_empty() {
                ControlFlow::Continue(())
            } else {
                on_text(&pushed.text)
            };
            if let Some(stop) = pushed.stopped_on {
                break StopReason::StopString(stop);
            }
            if flow.is_break() {
                break StopReason::StoppedByCaller;
            }
            let pos = self.cached.len();
            if pos + 1 >= n_ctx {
                break StopReason::ContextFull;
            }
            self.decode_chunk(&[token], |_| true)?;
        };
        if !matches!(stop, StopReason::StopString(_)) {
            let tail = stream.finish();
            if !tail.is_empty() {
                // Generation is over either way; the callback only sees the last text.
                let _ = on_text(&tail);
            }
        }
        Ok(Completion {
            text: stream.text().to_string(),
            stop,
            stats: GenerationStats {
                generated_tokens: generated,
                generation_time: started.elapsed(),
                ..read
            },
        })
    }

    /// The odds of each choice, read from the logits of its first token after the prompt
    /// (softmax over those tokens alone): where greedy decoding gives only the likelier word.
    fn choose(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        choices: &[&str],
    ) -> Result<Chosen, EngineError> {
        let stats = match self.read_prompt(prompt, request)? {
            ControlFlow::Continue(read) => read,
            ControlFlow::Break(stats) => {
                return Ok(Chosen {
                    completion: Completion {
                        text: String::new(),
                        stop: StopReason::Cancelled,
                        stats,
                    },
                    odds: Vec::new(),
                });
            }
        };
        let started = Instant::now();
        let logits = self.ctx.get_logits_ith(self.batch.n_tokens() - 1);
        let vocab = self.engine.model.vocab();
        let mut firsts = Vec::with_capacity(choices.len());
        for choice in choices {
            let first = vocab
                .tokenize(choice.as_bytes(), false, false)
                .first()
                .copied()
                .ok_or_else(|| EngineError::Backend(format!("{choice:?} has no tokens")))?;
            firsts.push(logits[first.0 as usize]);
        }
        let odds = softmax(&firsts);
        let likeliest = odds
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map_or("", |(i, _)| choices[i]);
        Ok(Chosen {
            completion: Completion {
                text: likeliest.to_string(),
                stop: StopReason::EndOfTurn,
                stats: GenerationStats {
                    generated_tokens: 1,
                    generation_time: started.elapsed(),
                    ..stats
                },
            },
            odds,
        })
    }

    fn score(
        &mut self,
        prompt: &str,
        continuation: &str,
        request: &GenerateRequest,
    ) -> Result<Option<Vec<TokenScore>>, EngineError> {
        self.continuation_logprobs(prompt, continuation, request)
            .map(Some)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.engine.tokens(text).len()
    }

    fn context_size(&self) -> usize {
        self.ctx.n_ctx() as usize
    }
}
