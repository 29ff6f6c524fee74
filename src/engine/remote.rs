//! A llama.cpp server (`llama-server`, on this machine or another) as the engine, for a model
//! larger than the laptop holds.
//!
//! Nothing about the prompts changes: Recall renders every prompt itself, the server's own
//! `/tokenize` turns it into token ids (special tokens parsed, BOS added only where the local
//! engine would add it), and the ids go to the native `/completion` endpoint, so the model reads
//! exactly the tokens it would read in-process. Grammars go as its `grammar` field (lazy ones
//! as `grammar_lazy` with full-match pattern triggers, the same semantics as in-process),
//! sampling as an explicit sampler chain equal to the local one. The reply streams as
//! server-sent events; dropping the request closes the connection, which llama-server takes as
//! the end of the task (Ctrl-C, a caller's stop).
//!
//! There is no KV cache to keep here: `cache_prompt` lets the server reuse the longest prefix
//! a slot already holds (it picks the slot by prefix similarity, so a decision session and an
//! answer session land on slots of their own when it has two or more).

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    BenchReport, CancellationToken, ChatModel, Completion, Constraint, EngineError,
    GenerateRequest, GenerationStats, ModelInfo, Sampling, StopReason, Throughput,
};

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Its base URL, e.g. `http://127.0.0.1:8080` (a trailing `/v1` is accepted and dropped).
    pub url: String,
    /// Sent as `Authorization: Bearer …` (llama-server's `--api-key`); never printed.
    pub api_key: Option<String>,
    /// How long the server may stay silent (no token, no progress) before the request fails.
    pub idle_timeout: Duration,
}

/// Time to open a connection: a server on the network answers within this or is not there.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A connected llama-server and what it says about its model.
pub struct Server {
    /// A runtime of its own: the engine is called from blocking code (the agent loop, the
    /// study commands), and Ctrl-C must be able to interrupt a read.
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    base: reqwest::Url,
    api_key: Option<String>,
    idle_timeout: Duration,
    info: ModelInfo,
    /// Tokens in each of the server's slots (its `--ctx-size` divided among `--parallel`
    /// slots, unless the KV cache is unified).
    n_ctx: usize,
    n_vocab: Option<usize>,
}

/// `GET /props`, the parts used.
#[derive(Debug, Deserialize)]
struct Props {
    #[serde(default)]
    chat_template: String,
    #[serde(default)]
    bos_token: String,
    #[serde(default)]
    eos_token: String,
    #[serde(default)]
    model_path: String,
    #[serde(default)]
    model_alias: String,
    default_generation_settings: GenerationSettings,
}

#[derive(Debug, Deserialize)]
struct GenerationSettings {
    n_ctx: usize,
}

/// `GET /v1/models`: llama-server adds the model's shape under `meta`.
#[derive(Debug, Default, Deserialize)]
struct Models {
    #[serde(default)]
    data: Vec<ModelEntry>,
}

#[derive(Debug, Deserialize)]
struct ModelEntry {
    #[serde(default)]
    meta: Option<ModelMeta>,
}

#[derive(Debug, Deserialize)]
struct ModelMeta {
    n_vocab: Option<usize>,
    n_ctx_train: Option<u32>,
    n_params: Option<u64>,
    size: Option<u64>,
}

/// One event of a streamed `/completion`.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(default)]
    content: String,
    #[serde(default)]
    stop: bool,
    #[serde(default)]
    stop_type: String,
    #[serde(default)]
    stopping_word: String,
    #[serde(default)]
    tokens_predicted: usize,
    timings: Option<Timings>,
    error: Option<Value>,
}

/// llama-server's `timings` of a finished request.
#[derive(Debug, Default, Deserialize)]
struct Timings {
    #[serde(default)]
    cache_n: usize,
    #[serde(default)]
    prompt_n: usize,
    #[serde(default)]
    prompt_ms: f64,
    #[serde(default)]
    predicted_n: usize,
    #[serde(default)]
    predicted_ms: f64,
}

impl Server {
    /// Connects, reads the model's chat template, special tokens and context, and checks that
    /// the server honours grammars (a server that ignored them would let a small model write
    /// calls to tools that do not exist).
    pub fn connect(options: &ServerOptions) -> Result<Server, EngineError> {
        let base = base_url(&options.url)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| EngineError::Backend(format!("cannot start the async runtime: {e}")))?;
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| EngineError::Backend(format!("cannot start an HTTP client: {e}")))?;
        let mut server = Server {
            runtime,
            client,
            base,
            api_key: options.api_key.clone(),
            idle_timeout: options.idle_timeout,
            info: ModelInfo::default(),
            n_ctx: 0,
            n_vocab: None,
        };
        let props: Props = server.get_json("props").map_err(|err| match err {
            RemoteError::Status(404, _) => server.error(
                "it has no /props: Recall drives llama.cpp's llama-server (other \
                 OpenAI-compatible servers do not take its grammars or raw prompts)",
            ),
            other => server.failed(other),
        })?;
        // Older servers have no `meta`; the figures are then unknown, not wrong.
        let meta = server
            .get_json::<Models>("v1/models")
            .ok()
            .and_then(|models| models.data.into_iter().next())
            .and_then(|model| model.meta);
        let add_bos = !server
            .tokenize("", true)
            .map_err(|err| server.failed(err))?
            .is_empty();
        let path = std::path::PathBuf::from(&props.model_path);
        // Without `--alias`, llama-server reports the path as the alias.
        let name = if props.model_alias.is_empty() || props.model_alias == props.model_path {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| props.model_path.clone())
        } else {
            props.model_alias.clone()
        };
        server.n_ctx = props.default_generation_settings.n_ctx;
        server.n_vocab = meta.as_ref().and_then(|m| m.n_vocab);
        server.info = ModelInfo {
            path,
            name,
            chat_template: Some(props.chat_template).filter(|t| !t.trim().is_empty()),
            n_ctx_train: meta
                .as_ref()
                .and_then(|m| m.n_ctx_train)
                .unwrap_or(server.n_ctx as u32),
            n_params: meta.as_ref().and_then(|m| m.n_params).unwrap_or(0),
            size_bytes: meta.as_ref().and_then(|m| m.size).unwrap_or(0),
            bos_text: props.bos_token,
            eos_text: props.eos_token,
            add_bos,
        };
        server.check_grammar()?;
        Ok(server)
    }

    /// What the server says about its model (`path` is the file on the server's machine).
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The server's address, without any credentials written into it: safe to print.
    pub fn url(&self) -> String {
        shown(&self.base)
    }

    /// A conversation on the server, within `n_ctx` tokens (at most the server's slot size).
    pub fn session(&self, n_ctx: Option<u32>) -> Session<'_> {
        let n_ctx = match n_ctx {
            Some(asked) if (asked as usize) < self.n_ctx => asked as usize,
            Some(asked) => {
                if asked as usize > self.n_ctx {
                    tracing::warn!(
                        "--ctx {asked} is more than the server's {} tokens a slot: using {}",
                        self.n_ctx,
                        self.n_ctx
                    );
                }
                self.n_ctx
            }
            None => self.n_ctx,
        };
        Session {
            server: self,
            n_ctx,
            held: Vec::new(),
        }
    }

    /// Token ids of a rendered prompt, laid out as the local engine lays them out: special
    /// tokens written as text become single tokens, and BOS is added only when the model wants
    /// it and the prompt does not already start with it.
    pub fn tokenize_prompt(&self, prompt: &str) -> Result<Vec<i32>, EngineError> {
        let add_bos = self.info.add_bos && !prompt.starts_with(&self.info.bos_text);
        self.tokenize(prompt, add_bos)
            .map_err(|err| self.failed(err))
    }

    /// Whether `text` is one token of the server's vocabulary (special tokens parsed).
    pub fn is_single_token(&self, text: &str) -> Result<bool, EngineError> {
        let tokens = self.tokenize(text, false).map_err(|err| self.failed(err))?;
        Ok(tokens.len() == 1)
    }

    /// Prompt processing and generation speed as the server delivers them over HTTP: each
    /// repetition sends `n_prompt` token ids uncached with one token to write, then a
    /// one-token prompt with `n_gen` tokens to write, and reads the server's own timings.
    pub fn bench(
        &self,
        n_prompt: usize,
        n_gen: usize,
        repetitions: usize,
    ) -> Result<BenchReport, EngineError> {
        let n_vocab = self.n_vocab.unwrap_or(32_000);
        // The same fixed pattern as the local bench: any ids will do, equal runs compare.
        let prompt: Vec<i32> = (0..n_prompt.max(1))
            .map(|i| ((i * 7919 + 13) % n_vocab) as i32)
            .collect();
        let mut pp = Vec::new();
        let mut tg = Vec::new();
        for _ in 0..repetitions.max(1) {
            if n_prompt > 0 {
                let t = self.timed(&prompt, 1)?;
                pp.push(t.prompt_n as f64 / (t.prompt_ms / 1000.0));
            }
            if n_gen > 0 {
                let t = self.timed(&prompt[..1], n_gen)?;
                tg.push(t.predicted_n as f64 / (t.predicted_ms / 1000.0));
            }
        }
        Ok(BenchReport {
            // Threads are the server's setting, not known here.
            threads: 0,
            pp: Throughput::of(n_prompt, &pp),
            tg: Throughput::of(n_gen, &tg),
        })
    }

    /// One uncached, greedy, unstopped request; the server's timings of it.
    fn timed(&self, prompt: &[i32], n_predict: usize) -> Result<Timings, EngineError> {
        let body = json!({
            "prompt": prompt,
            "n_predict": n_predict,
            "cache_prompt": false,
            "ignore_eos": true,
            "samplers": ["temperature"],
            "temperature": 0.0,
        });
        let reply: Value = self
            .post_json("completion", &body)
            .map_err(|err| self.failed(err))?;
        serde_json::from_value::<Timings>(reply["timings"].clone())
            .map_err(|e| self.error(&format!("its reply has no timings: {e}")))
    }

    /// A one-token generation under the grammar `root ::= "7"` must write `7`.
    fn check_grammar(&self) -> Result<(), EngineError> {
        let prompt = self.tokenize_prompt("Write a word:")?;
        let body = json!({
            "prompt": prompt,
            "n_predict": 1,
            "cache_prompt": false,
            "samplers": ["temperature"],
            "temperature": 0.0,
            "grammar": "root ::= \"7\"",
        });
        let reply: Value = self
            .post_json("completion", &body)
            .map_err(|err| self.failed(err))?;
        match reply["content"].as_str() {
            Some("7") => Ok(()),
            other => Err(self.error(&format!(
                "it ignores grammars (asked for \"7\" under a grammar, it wrote {}): Recall \
                 needs them to keep a small model to real tools",
                other.map_or("nothing".to_string(), |t| format!("{t:?}"))
            ))),
        }
    }

    fn tokenize(&self, text: &str, add_special: bool) -> Result<Vec<i32>, RemoteError> {
        #[derive(Deserialize)]
        struct Tokens {
            tokens: Vec<i32>,
        }
        let body = json!({ "content": text, "add_special": add_special, "parse_special": true });
        self.post_json::<Tokens>("tokenize", &body)
            .map(|t| t.tokens)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let url = self.base.join(path).expect("endpoint paths are relative");
        let builder = self.client.request(method, url);
        match &self.api_key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, RemoteError> {
        self.call(self.request(reqwest::Method::GET, path))
    }

    fn post_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<T, RemoteError> {
        self.call(self.request(reqwest::Method::POST, path).json(body))
    }

    /// Sends `request` and reads its whole JSON reply, within the idle time-out.
    fn call<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, RemoteError> {
        self.runtime.block_on(self.fetch(request))
    }

    /// [`Server::call`]'s work, for callers already on the runtime.
    async fn fetch<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, RemoteError> {
        let response = tokio::time::timeout(self.idle_timeout, request.send())
            .await
            .map_err(|_| RemoteError::Silent)??;
        read_json(response).await
    }

    /// An error about this server, said so a person can act on it.
    fn error(&self, reason: &str) -> EngineError {
        EngineError::Remote {
            url: self.url(),
            reason: reason.to_string(),
        }
    }

    fn failed(&self, err: RemoteError) -> EngineError {
        let reason = match err {
            RemoteError::Unreachable(detail) => format!(
                "cannot reach it ({detail}); is llama-server running there? \
                 (llama-server -m MODEL.gguf --host ADDRESS --port PORT)"
            ),
            RemoteError::Silent => format!(
                "it sent nothing for {} s (busy with other requests, or stuck); raise \
                 --engine-timeout to wait longer",
                self.idle_timeout.as_secs()
            ),
            RemoteError::Status(401, _) => {
                "it refused the API key: set RECALL_ENGINE_API_KEY to the key llama-server was \
                 started with (--api-key)"
                    .to_string()
            }
            RemoteError::Status(503, message) => {
                format!("it is not ready ({message}); it may still be loading its model: try again")
            }
            RemoteError::Status(status, message) => format!("HTTP {status}: {message}"),
            RemoteError::Reply(detail) => format!("unexpected reply: {detail}"),
        };
        self.error(&reason)
    }
}

/// What can go wrong talking to the server, before it is said for a person.
#[derive(Debug)]
enum RemoteError {
    /// No connection (refused, no route, DNS, TLS).
    Unreachable(String),
    /// Nothing arrived within the idle time-out.
    Silent,
    /// An HTTP error status and the server's message.
    Status(u16, String),
    /// A reply that is not what llama-server sends.
    Reply(String),
}

impl From<reqwest::Error> for RemoteError {
    fn from(err: reqwest::Error) -> Self {
        if err.is_connect() || err.is_request() {
            // reqwest's message names the URL; the innermost source says why (connection
            // refused, no such host…).
            let mut detail = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(inner) = source {
                detail = inner.to_string();
                source = inner.source();
            }
            RemoteError::Unreachable(detail)
        } else if err.is_timeout() {
            RemoteError::Silent
        } else {
            RemoteError::Reply(err.without_url().to_string())
        }
    }
}

/// The body of a successful reply as `T`, or the server's error message.
async fn read_json<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
) -> Result<T, RemoteError> {
    let status = response.status();
    let body = response.bytes().await?;
    if !status.is_success() {
        return Err(RemoteError::Status(status.as_u16(), error_message(&body)));
    }
    serde_json::from_slice(&body).map_err(|e| RemoteError::Reply(e.to_string()))
}

/// llama-server's `{"error": {"message": …}}`, or the body itself, shortened.
fn error_message(body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(message) = parsed
        .as_ref()
        .and_then(|v| v["error"]["message"].as_str().or(v["error"].as_str()))
    {
        return message.to_string();
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None if text.is_empty() => "no message".to_string(),
        None => text.to_string(),
    }
}

/// The server's base URL from what the person typed: http(s) only, with a trailing slash so
/// endpoints join below it, and without a trailing `/v1` (the address OpenAI clients are given).
fn base_url(given: &str) -> Result<reqwest::Url, EngineError> {
    let invalid = |reason: String| EngineError::Remote {
        url: given.to_string(),
        reason,
    };
    let mut url = reqwest::Url::parse(given.trim()).map_err(|e| {
        invalid(format!(
            "not a URL ({e}); give the server's address, e.g. http://127.0.0.1:8080"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(
            "the address must start with http:// or https://, e.g. http://127.0.0.1:8080"
                .to_string(),
        ));
    }
    let path = url.path().trim_end_matches('/');
    let path = path.strip_suffix("/v1").unwrap_or(path).to_string();
    url.set_path(&format!("{path}/"));
    url.set_query(None);
    url.set_fragment(None);
    Ok(url)
}

/// `url` without user name or password, for messages.
fn shown(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.as_str().trim_end_matches('/').to_string()
}

/// The body of a `/completion` request: the local engine's sampler chain spelled out, so that
/// the server's defaults (top-k 40, repetition penalties, DRY…) play no part.
fn completion_body(tokens: &[i32], request: &GenerateRequest) -> Result<Value, EngineError> {
    let Sampling {
        temperature,
        top_p,
        min_p,
        seed,
    } = request.sampling;
    let samplers: &[&str] = if temperature <= 0.0 {
        // Temperature 0 keeps only the most likely token: greedy.
        &["temperature"]
    } else {
        &["top_p", "min_p", "temperature"]
    };
    let mut body = json!({
        "prompt": tokens,
        "n_predict": request.max_tokens,
        "stream": true,
        "cache_prompt": true,
        "return_progress": true,
        "samplers": samplers,
        "temperature": temperature.max(0.0),
        "top_p": top_p,
        "min_p": min_p,
        "seed": seed,
        "stop": request.stop,
    });
    if let Some(constraint) = &request.constraint {
        grammar_fields(constraint, &mut body)?;
    }
    Ok(body)
}

/// A [`Constraint`] as llama-server's grammar fields.
fn grammar_fields(constraint: &Constraint, body: &mut Value) -> Result<(), EngineError> {
    if constraint.root != "root" {
        // llama-server always starts at `root`.
        return Err(EngineError::Grammar(format!(
            "a server grammar must start at `root`, not `{}`",
            constraint.root
        )));
    }
    body["grammar"] = json!(constraint.gbnf);
    if !constraint.lazy_patterns.is_empty() {
        // Type 3 is COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL: the pattern must match the whole
        // reply so far, and the grammar applies from its first group, as in-process.
        let triggers: Vec<Value> = constraint
            .lazy_patterns
            .iter()
            .map(|p| json!({ "type": 3, "value": p }))
            .collect();
        body["grammar_lazy"] = json!(true);
        body["grammar_triggers"] = json!(triggers);
    }
    Ok(())
}

/// One conversation on the server. It holds no state of its own: the server's prompt cache
/// does what a local session's KV cache does.
pub struct Session<'s> {
    server: &'s Server,
    n_ctx: usize,
    /// The prompt this session last had the server read: a stable prefix it begins with is in
    /// the server's slot already.
    held: Vec<i32>,
}

/// What a streamed generation came to, before it is a [`Completion`].
struct Streamed {
    text: String,
    stop: StopReason,
    generated: usize,
    timings: Timings,
}

impl Session<'_> {
    /// Has the server read `prefix` alone (`n_predict` 0: the one token it still samples is
    /// dropped), so that the rest of the prompt is read from where the prefix ends, in the
    /// batches the in-process engine reads it in. `None` when `cancel` fired first.
    async fn read_prefix(
        &self,
        prefix: &[i32],
        cancel: &CancellationToken,
    ) -> Result<Option<Timings>, RemoteError> {
        let server = self.server;
        let body = json!({
            "prompt": prefix,
            "n_predict": 0,
            "cache_prompt": true,
            "samplers": ["temperature"],
            "temperature": 0.0,
        });
        let request = server
            .request(reqwest::Method::POST, "completion")
            .json(&body);
        let reply: Value = tokio::select! {
            reply = server.fetch(request) => reply?,
            () = cancel.cancelled() => return Ok(None),
        };
        serde_json::from_value(reply["timings"].clone())
            .map(Some)
            .map_err(|e| RemoteError::Reply(format!("its reply has no timings: {e}")))
    }

    /// Streams one `/completion`, handing text to `on_text`, until the server stops, the caller
    /// breaks, or `cancel` fires (then the connection is closed, which stops the server's task).
    async fn stream(
        &self,
        body: Value,
        cancel: &CancellationToken,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Streamed, RemoteError> {
        let server = self.server;
        let mut streamed = Streamed {
            text: String::new(),
            stop: StopReason::Cancelled,
            generated: 0,
            timings: Timings::default(),
        };
        let send = server
            .request(reqwest::Method::POST, "completion")
            .json(&body)
            .send();
        let response = tokio::select! {
            response = tokio::time::timeout(server.idle_timeout, send) => {
                response.map_err(|_| RemoteError::Silent)??
            }
            () = cancel.cancelled() => return Ok(streamed),
        };
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let body = response.bytes().await?;
            return Err(RemoteError::Status(status, error_message(&body)));
        }
        let mut chunks = response.bytes_stream();
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let chunk = tokio::select! {
                chunk = tokio::time::timeout(server.idle_timeout, chunks.next()) => {
                    chunk.map_err(|_| RemoteError::Silent)?
                }
                () = cancel.cancelled() => return Ok(streamed),
            };
            let Some(chunk) = chunk else {
                return Err(RemoteError::Reply(
                    "the stream ended before the generation did".to_string(),
                ));
            };
            pending.extend_from_slice(&chunk?);
            // Server-sent events: one `data: {json}` line per event, blank lines between.
            while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let Some(data) = line.trim_ascii().strip_prefix(b"data: ") else {
                    continue;
                };
                let event: Event = serde_json::from_slice(data)
                    .map_err(|e| RemoteError::Reply(format!("an event that is not JSON: {e}")))?;
                if let Some(error) = event.error {
                    let message = error["message"].as_str().map(str::to_string);
                    return Err(RemoteError::Status(
                        error["code"].as_u64().unwrap_or(500) as u16,
                        message.unwrap_or_else(|| error.to_string()),
                    ));
                }
                streamed.generated = streamed.generated.max(event.tokens_predicted);
                if !event.content.is_empty() {
                    streamed.text.push_str(&event.content);
                    if on_text(&event.content).is_break() {
                        // Dropping the stream closes the connection: the server stops.
                        streamed.stop = StopReason::StoppedByCaller;
                        return Ok(streamed);
                    }
                }
                if event.stop {
                    streamed.timings = event.timings.unwrap_or_default();
                    streamed.generated = streamed.timings.predicted_n.max(streamed.generated);
                    streamed.stop = match event.stop_type.as_str() {
                        "word" => StopReason::StopString(event.stopping_word),
                        "limit" => StopReason::MaxTokens,
                        _ => {
                            // The server counts the end-of-turn token; the local engine does
                            // not count it as text generated.
                            streamed.generated = streamed.generated.saturating_sub(1);
                            StopReason::EndOfTurn
                        }
                    };
                    return Ok(streamed);
                }
            }
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
        let server = self.server;
        let tokens = server.tokenize_prompt(prompt)?;
        if tokens.is_empty() || tokens.len() >= self.n_ctx {
            return Err(EngineError::ContextOverflow {
                prompt_tokens: tokens.len(),
                n_ctx: self.n_ctx,
            });
        }
        let prefix = match request.stable_text(prompt) {
            Some(text) => super::stable_prefix_len(&server.tokenize_prompt(text)?, &tokens),
            None => 0,
        };
        let body = completion_body(&tokens, request)?;
        let started = Instant::now();
        // As in-process: a stable prefix the slot does not hold yet is read on its own first,
        // so the rest is read in the same batches (the server's `-b`/`-ub`) from the same
        // position, and greedy tokens match the in-process engine's.
        let mut read_first = None;
        if prefix > 0 && !self.held.starts_with(&tokens[..prefix]) {
            self.held.clear();
            let timings = server
                .runtime
                .block_on(self.read_prefix(&tokens[..prefix], &request.cancel))
                .map_err(|err| server.failed(err))?;
            let Some(timings) = timings else {
                return Ok(Completion {
                    text: String::new(),
                    stop: StopReason::Cancelled,
                    stats: GenerationStats {
                        prompt_tokens: tokens.len(),
                        prompt_time: started.elapsed(),
                        ..GenerationStats::default()
                    },
                });
            };
            self.held = tokens[..prefix].to_vec();
            read_first = Some(timings);
        }
        let streamed = server
            .runtime
            .block_on(self.stream(body, &request.cancel, on_text));
        self.held = if streamed.is_ok() {
            tokens.clone()
        } else {
            Vec::new()
        };
        let streamed = streamed.map_err(|err| server.failed(err))?;
        let mut stop = streamed.stop;
        if stop == StopReason::MaxTokens
            && streamed.generated < request.max_tokens
            && tokens.len() + streamed.generated + 1 >= self.n_ctx
        {
            stop = StopReason::ContextFull;
        }
        let timings = &streamed.timings;
        let first = read_first.unwrap_or_default();
        // A finished request has the server's own timings; a stopped one only the wall clock.
        let (prompt_time, generation_time) = if timings.prompt_ms > 0.0 {
            (
                Duration::from_secs_f64((first.prompt_ms + timings.prompt_ms) / 1000.0),
                Duration::from_secs_f64(timings.predicted_ms / 1000.0),
            )
        } else {
            (started.elapsed(), Duration::ZERO)
        };
        // What the slot held before this call: of the prefix, when that was read first.
        let held = if first.prompt_n > 0 {
            first.cache_n
        } else {
            timings.cache_n
        };
        let reused = held.min(tokens.len());
        let evaluated = if timings.prompt_n > 0 {
            first.prompt_n + timings.prompt_n
        } else {
            tokens.len() - reused
        };
        Ok(Completion {
            text: streamed.text,
            stop,
            stats: GenerationStats {
                prompt_tokens: tokens.len(),
                reused_tokens: reused,
                restored_tokens: 0,
                evaluated_tokens: evaluated,
                generated_tokens: streamed.generated,
                prompt_time,
                generation_time,
            },
        })
    }

    fn count_tokens(&self, text: &str) -> usize {
        match self.server.tokenize(text, false) {
            Ok(tokens) => tokens.len(),
            Err(err) => {
                // Budgets only: the next generation reports the server's failure itself.
                tracing::warn!("{}", self.server.failed(err));
                text.len().div_ceil(4)
            }
        }
    }

    fn context_size(&self) -> usize {
        self.n_ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_accepts_what_people_paste() {
        for (given, base) in [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/"),
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/"),
            ("https://gpu.lan/llama/v1/", "https://gpu.lan/llama/"),
            ("http://box:8080/?x=1#y", "http://box:8080/"),
        ] {
            assert_eq!(base_url(given).unwrap().as_str(), base, "{given}");
        }
        for bad in ["127.0.0.1:8080", "ftp://box/", "not a url", ""] {
            let err = base_url(bad).unwrap_err().to_string();
            assert!(err.contains("e.g. http://127.0.0.1:8080"), "{bad}: {err}");
        }
    }

    #[test]
    fn credentials_in_the_url_are_never_shown() {
        let url = base_url("http://me:secret@box:8080/v1").unwrap();
        let text = shown(&url);
        assert_eq!(text, "http://box:8080");
        assert!(!text.contains("secret"));
    }

    #[test]
    fn greedy_and_sampled_requests_spell_out_the_local_sampler_chain() {
        let greedy = completion_body(&[1, 2], &GenerateRequest::greedy(8)).unwrap();
        assert_eq!(greedy["samplers"], json!(["temperature"]));
        assert_eq!(greedy["temperature"], json!(0.0));
        assert_eq!(greedy["prompt"], json!([1, 2]));
        assert_eq!(greedy["n_predict"], json!(8));
        assert!(greedy.get("grammar").is_none());

        let sampled = completion_body(&[1], &GenerateRequest::new(4)).unwrap();
        assert_eq!(
            sampled["samplers"],
            json!(["top_p", "min_p", "temperature"])
        );
        assert_eq!(sampled["seed"], json!(Sampling::default().seed));
    }

    #[test]
    fn lazy_grammars_become_full_match_pattern_triggers() {
        let mut request = GenerateRequest::greedy(8);
        request.constraint = Some(Constraint {
            gbnf: "root ::= \"[\" [a-z]+ \"]\"".to_string(),
            root: "root".to_string(),
            lazy_patterns: vec![r"^\s*(\[)[\s\S]*$".to_string()],
        });
        let body = completion_body(&[1], &request).unwrap();
        assert_eq!(body["grammar_lazy"], json!(true));
        assert_eq!(
            body["grammar_triggers"],
            json!([{ "type": 3, "value": r"^\s*(\[)[\s\S]*$" }])
        );

        request.constraint.as_mut().unwrap().root = "start".to_string();
        assert!(matches!(
            completion_body(&[1], &request),
            Err(EngineError::Grammar(_))
        ));
    }

    #[test]
    fn error_messages_come_from_the_servers_error_shape_or_the_body() {
        assert_eq!(
            error_message(br#"{"error":{"code":400,"message":"bad grammar","type":"x"}}"#),
            "bad grammar"
        );
        assert_eq!(error_message(b"  Not Found \n"), "Not Found");
        assert_eq!(error_message(b""), "no message");
        assert!(error_message("x".repeat(500).as_bytes()).ends_with('…'));
    }
}
