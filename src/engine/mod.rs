//! The local LLM engine: everything between a rendered prompt and the text the model produced.
//!
//! The agent asks only "generate from this prompt, stream, stop"; it never touches llama.cpp.
//! [`llama`] is the one module that imports `llama_cpp_2`. [`catalog`] turns a model name into a
//! GGUF file on disk (path, `hf:` reference or alias). [`stream`] is the UTF-8 and stop-string
//! logic, kept pure so it can be tested without a model.
//!
//! Cancellation is an engine concept: a [`GenerateRequest`] carries a [`CancellationToken`],
//! checked between prompt batches and before each generated token, and work the user stopped
//! ends with the [`Cancelled`] error, whoever runs it (the agent loop, the study commands).
//!
//! **Architecture invariant:** a [`ChatModel`] keeps one conversation's KV cache; each call to
//! [`ChatModel::generate`] evaluates only the tokens after the longest common prefix with what is
//! already cached, and reports both counts in [`GenerationStats`].

pub mod catalog;
pub mod llama;
pub mod prompt_cache;
pub mod remote;
pub mod replay;
pub mod scripted;
pub mod stream;

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

pub use tokio_util::sync::CancellationToken;

/// The user stopped the work (Ctrl-C) before it finished: a generation, a tool call, a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stopped")]
pub struct Cancelled;

/// How to pick each next token.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    /// 0 means greedy (deterministic).
    pub temperature: f32,
    /// Nucleus sampling; 1.0 disables it.
    pub top_p: f32,
    /// Drops tokens below this fraction of the best token's probability; 0 disables it.
    pub min_p: f32,
    /// Seed for the random sampler (ignored when greedy).
    pub seed: u32,
}

impl Default for Sampling {
    fn default() -> Self {
        // Llama 3.2's generation_config.json: temperature 0.6, top_p 0.9.
        Sampling {
            temperature: 0.6,
            top_p: 0.9,
            min_p: 0.05,
            seed: 0x5EED,
        }
    }
}

/// A llama.cpp (GBNF) grammar that constrains generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// The grammar text.
    pub gbnf: String,
    /// Its start rule.
    pub root: String,
    /// Empty: the grammar holds from the first token. Otherwise the grammar is lazy: output is
    /// free until one of these regexes matches the whole text generated so far; the grammar then
    /// applies from the regex's first capture group on.
    pub lazy_patterns: Vec<String>,
}

/// One generation request.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    /// Upper bound on generated tokens.
    pub max_tokens: usize,
    /// Sampling settings.
    pub sampling: Sampling,
    /// Generation ends when the output contains one of these; the stop string is not returned.
    pub stop: Vec<String>,
    /// Optional grammar.
    pub constraint: Option<Constraint>,
    /// Cancelled (by Ctrl-C) to end this generation early: checked between prompt batches and
    /// before each token; the generation then ends with [`StopReason::Cancelled`].
    pub cancel: CancellationToken,
    /// Bytes at the start of the prompt that are the same on every run (`Prompt::stable_len`):
    /// read on their own before the rest (in-process and on a server alike, so both compute in
    /// the same batches), and kept on disk by a session with a prompt cache. 0: none.
    pub stable_prefix: usize,
}

impl GenerateRequest {
    /// A request with default sampling, no stop strings, no grammar.
    pub fn new(max_tokens: usize) -> GenerateRequest {
        GenerateRequest {
            max_tokens,
            sampling: Sampling::default(),
            stop: Vec::new(),
            constraint: None,
            // Nobody else holds it: this request is never cancelled unless the caller swaps in
            // a token of its own.
            cancel: CancellationToken::new(),
            stable_prefix: 0,
        }
    }

    /// A request that always takes the most likely token (deterministic).
    pub fn greedy(max_tokens: usize) -> GenerateRequest {
        GenerateRequest {
            sampling: Sampling {
                temperature: 0.0,
                ..Sampling::default()
            },
            ..GenerateRequest::new(max_tokens)
        }
    }

    /// The text of `prompt`'s stable prefix, when it has one with text after it.
    pub fn stable_text<'p>(&self, prompt: &'p str) -> Option<&'p str> {
        let end = self.stable_prefix;
        (end > 0 && end < prompt.len() && prompt.is_char_boundary(end)).then(|| &prompt[..end])
    }
}

/// How many of a prompt's `tokens` are its stable prefix, given the prefix's own tokens: all of
/// them when they begin `tokens` and leave some after (they do when the prefix ends before a
/// special token); else 0, and the prompt is read in one go.
pub(crate) fn stable_prefix_len<T: PartialEq>(prefix: &[T], tokens: &[T]) -> usize {
    if prefix.len() < tokens.len() && tokens.starts_with(prefix) {
        prefix.len()
    } else {
        if !prefix.is_empty() {
            tracing::debug!("the stable prefix does not end on a token boundary; not split");
        }
        0
    }
}

/// Why generation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model ended its turn (`<|eot_id|>`, or the model's end-of-generation token).
    EndOfTurn,
    /// The model ended a message expecting a tool result (Llama 3's `<|eom_id|>`).
    EndOfMessage,
    /// A requested stop string appeared.
    StopString(String),
    /// `max_tokens` was reached.
    MaxTokens,
    /// The context window filled up.
    ContextFull,
    /// [`GenerateRequest::cancel`] was cancelled (while the prompt was read or the reply
    /// written); the text is what was generated until then.
    Cancelled,
    /// The `on_text` callback asked to stop.
    StoppedByCaller,
}

/// Counts and timings of one generation; this is what makes KV reuse observable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenerationStats {
    /// Tokens in the prompt.
    pub prompt_tokens: usize,
    /// Prompt tokens already in the KV cache (not evaluated again), restored ones included.
    pub reused_tokens: usize,
    /// Prompt tokens whose KV state was loaded from the on-disk prompt cache.
    pub restored_tokens: usize,
    /// Prompt tokens evaluated by this call.
    pub evaluated_tokens: usize,
    /// Tokens generated.
    pub generated_tokens: usize,
    /// Time spent evaluating the prompt.
    pub prompt_time: Duration,
    /// Time spent generating.
    pub generation_time: Duration,
}

/// What the model produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The generated text (without end-of-generation tokens or the stop string).
    pub text: String,
    /// Why generation ended.
    pub stop: StopReason,
    /// Counts and timings.
    pub stats: GenerationStats,
}

/// How likely one token of a text was after a prompt ([`ChatModel::score`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenScore {
    /// The token as text (a piece of a character when the token splits one).
    pub text: String,
    /// Its natural log-probability, at most 0.
    pub log_prob: f32,
}

/// What [`ChatModel::choose`] chose: the likeliest choice as a completion (empty when
/// cancelled), and the odds of each choice, in order, summing to 1 (empty when cancelled,
/// or when a model that only generates replied none of them).
#[derive(Debug, Clone)]
pub struct Chosen {
    pub completion: Completion,
    pub odds: Vec<f32>,
}

/// Errors of the engine. Each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The model file is missing, unreadable, not GGUF, or llama.cpp refused it.
    #[error("cannot load model {path}: {reason}")]
    ModelLoad {
        /// The file as given.
        path: String,
        /// What went wrong and what to do.
        reason: String,
    },
    /// The prompt does not fit the context window.
    #[error(
        "prompt of {prompt_tokens} tokens does not fit the context of {n_ctx} tokens (raise --ctx or shorten the input)"
    )]
    ContextOverflow {
        /// Tokens in the prompt.
        prompt_tokens: usize,
        /// The context size.
        n_ctx: usize,
    },
    /// The grammar did not compile.
    #[error("grammar rejected by llama.cpp: {0}")]
    Grammar(String),
    /// llama.cpp failed while running.
    #[error("llama.cpp failed: {0}")]
    Backend(String),
    /// The remote engine (`--engine URL`) is unreachable, refused, or not what Recall needs.
    #[error("engine {url}: {reason}")]
    Remote {
        /// The server's address, without credentials.
        url: String,
        /// What went wrong and what to do.
        reason: String,
    },
}

/// A chat model with one conversation's KV cache: the seam between the agent and llama.cpp.
///
/// [`llama::Session`] (in-process) and [`remote::Session`] (a llama-server) are the real
/// implementations, chosen per run through [`Session`]; [`scripted::ScriptedModel`] replays
/// canned replies for deterministic agent-loop tests.
pub trait ChatModel {
    /// Generates a continuation of `prompt` (a fully rendered prompt, special tokens as text),
    /// calling `on_text` with each piece of final text as soon as it is decoded. `on_text`
    /// returning `Break` ends generation with [`StopReason::StoppedByCaller`].
    fn generate(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Completion, EngineError>;

    /// Which of `choices` (each a reply the request's grammar allows, told apart by its first
    /// token) `prompt` gets, and how likely each is. By default the reply generated is
    /// certain and the others have no chance; the in-process model reads the odds from its
    /// logits.
    fn choose(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        choices: &[&str],
    ) -> Result<Chosen, EngineError> {
        let completion = self.generate(prompt, request, &mut |_| ControlFlow::Continue(()))?;
        let reply = completion.text.trim();
        let odds = if choices.iter().any(|c| c.eq_ignore_ascii_case(reply)) {
            let certain = |choice: &&str| f32::from(u8::from(choice.eq_ignore_ascii_case(reply)));
            choices.iter().map(certain).collect()
        } else {
            Vec::new()
        };
        Ok(Chosen { completion, odds })
    }

    /// How likely each token of `continuation` (no special tokens) is after `prompt`: what
    /// the grounding check compares with and without the sources. `None` from a model that
    /// cannot say (a remote server generates but scores no given text).
    fn score(
        &mut self,
        prompt: &str,
        continuation: &str,
        request: &GenerateRequest,
    ) -> Result<Option<Vec<TokenScore>>, EngineError> {
        let _ = (prompt, continuation, request);
        Ok(None)
    }

    /// Number of tokens `text` takes (special tokens parsed), for budgeting prompts.
    fn count_tokens(&self, text: &str) -> usize;

    /// The context window in tokens.
    fn context_size(&self) -> usize;
}

/// What the engine says about its model: the GGUF file's metadata, or a server's report of it.
#[derive(Debug, Clone, Default)]
pub struct ModelInfo {
    /// The file it was loaded from (on the server's machine, for a remote engine).
    pub path: PathBuf,
    /// `general.name`, or the file name.
    pub name: String,
    /// The chat template embedded in the file, if any.
    pub chat_template: Option<String>,
    /// The context length the model was trained with.
    pub n_ctx_train: u32,
    /// Parameter count.
    pub n_params: u64,
    /// Size of the weights in bytes.
    pub size_bytes: u64,
    /// Text of the BOS token (e.g. `<|begin_of_text|>`).
    pub bos_text: String,
    /// Text of the EOS token (e.g. `<|eot_id|>` or `<|im_end|>`).
    pub eos_text: String,
    /// Whether the tokenizer adds BOS by itself (`tokenizer.ggml.add_bos_token`).
    pub add_bos: bool,
}

/// Speed of one test over its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct Throughput {
    /// Tokens per repetition.
    pub tokens: usize,
    /// Mean tokens per second.
    pub mean: f64,
    /// Sample standard deviation of tokens per second.
    pub sd: f64,
}

impl Throughput {
    pub(crate) fn of(tokens: usize, samples: &[f64]) -> Throughput {
        let n = samples.len() as f64;
        let mean = if samples.is_empty() {
            0.0
        } else {
            samples.iter().sum::<f64>() / n
        };
        let sd = if samples.len() < 2 {
            0.0
        } else {
            (samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        };
        Throughput { tokens, mean, sd }
    }
}

/// Results of a speed test ([`llama::Engine::bench`], [`remote::Server::bench`]).
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// Threads used.
    pub threads: i32,
    /// Prompt processing.
    pub pp: Throughput,
    /// Token generation.
    pub tg: Throughput,
}

/// The model a run uses: llama.cpp in this process, or a llama.cpp server (`--engine URL`)
/// for a model larger than the laptop. Everything above the engine (prompts, grammars, tools,
/// citations) is the same for both.
pub enum Model {
    /// A GGUF file loaded in-process.
    Local(llama::Engine),
    /// A llama-server on this machine or another.
    Remote(remote::Server),
}

impl Model {
    /// What the engine says about its model.
    pub fn info(&self) -> &ModelInfo {
        match self {
            Model::Local(engine) => engine.info(),
            Model::Remote(server) => server.info(),
        }
    }

    /// Where the model runs, for messages: the file, or the server's address.
    pub fn location(&self) -> String {
        match self {
            Model::Local(engine) => engine.info().path.display().to_string(),
            Model::Remote(server) => server.url(),
        }
    }

    /// The markers among `markers` (a prompt layout's special tokens, written as text) that
    /// are not single tokens of this model's vocabulary: a model that reads them as text was
    /// not trained on that layout.
    pub fn unknown_tokens<'a>(&self, markers: &[&'a str]) -> Result<Vec<&'a str>, EngineError> {
        let mut unknown = Vec::new();
        for &marker in markers {
            let single = match self {
                Model::Local(engine) => engine.is_single_token(marker),
                Model::Remote(server) => server.is_single_token(marker)?,
            };
            if !single {
                unknown.push(marker);
            }
        }
        Ok(unknown)
    }

    /// A conversation with its own context (a local KV cache, or the server's prompt cache).
    pub fn session(&self, options: &llama::SessionOptions) -> Result<Session<'_>, EngineError> {
        Ok(match self {
            Model::Local(engine) => Session::Local(engine.session(options)?),
            Model::Remote(server) => Session::Remote(server.session(options.n_ctx)),
        })
    }
}

/// One conversation on a [`Model`].
pub enum Session<'m> {
    /// In-process.
    Local(llama::Session<'m>),
    /// On a llama-server.
    Remote(remote::Session<'m>),
    /// Either, its replies replayed from a bench's records where it has them.
    Replay(Box<replay::Replay<Session<'m>>>),
}

impl Session<'_> {
    /// Forgets the cached conversation: the next call reads its whole prompt (a remote session
    /// caches nothing itself; the server matches prefixes on every request).
    pub fn reset(&mut self) {
        match self {
            Session::Local(session) => session.reset(),
            Session::Remote(_) => {}
            Session::Replay(replay) => replay.inner_mut().reset(),
        }
    }
}

impl ChatModel for Session<'_> {
    fn generate(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Completion, EngineError> {
        match self {
            Session::Local(session) => session.generate(prompt, request, on_text),
            Session::Remote(session) => session.generate(prompt, request, on_text),
            Session::Replay(session) => session.generate(prompt, request, on_text),
        }
    }

    fn choose(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        choices: &[&str],
    ) -> Result<Chosen, EngineError> {
        match self {
            Session::Local(session) => session.choose(prompt, request, choices),
            Session::Remote(session) => session.choose(prompt, request, choices),
            Session::Replay(session) => session.choose(prompt, request, choices),
        }
    }

    fn score(
        &mut self,
        prompt: &str,
        continuation: &str,
        request: &GenerateRequest,
    ) -> Result<Option<Vec<TokenScore>>, EngineError> {
        match self {
            Session::Local(session) => session.score(prompt, continuation, request),
            Session::Remote(session) => session.score(prompt, continuation, request),
            Session::Replay(session) => session.score(prompt, continuation, request),
        }
    }

    fn count_tokens(&self, text: &str) -> usize {
        match self {
            Session::Local(session) => session.count_tokens(text),
            Session::Remote(session) => session.count_tokens(text),
            Session::Replay(session) => session.count_tokens(text),
        }
    }

    fn context_size(&self) -> usize {
        match self {
            Session::Local(session) => session.context_size(),
            Session::Remote(session) => session.context_size(),
            Session::Replay(session) => session.context_size(),
        }
    }
}
