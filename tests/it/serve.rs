//! `recall serve` end to end: the real binary on the test model, asked over HTTP by real
//! clients: the official OpenAI Python SDK, curl, and a socket that hangs up mid-answer.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{self, Watched};

/// A running `recall serve` and its base URL (`http://127.0.0.1:PORT/v1`).
pub struct Server {
    run: Watched,
    pub base: String,
    _home: tempfile::TempDir,
}

/// Starts `recall serve` on a free port with the test model on `vault`, and waits for the line
/// that says where it listens.
fn start(vault: &Path, max_tokens: &str) -> Server {
    start_with_key(vault, max_tokens, None)
}

/// [`start`], asking every request for `api_key` when one is given.
pub fn start_with_key(vault: &Path, max_tokens: &str, api_key: Option<&str>) -> Server {
    let home = tempfile::tempdir().expect("a temporary folder");
    let mut command = Command::new(env!("CARGO_BIN_EXE_recall"));
    command
        .args(["serve", "--port", "0", "--model"])
        .arg(common::smollm2())
        .arg("--vault")
        .arg(vault)
        .args(["--temp", "0", "--ctx", "4096", "--max-tokens", max_tokens])
        .arg("--no-embeddings")
        .env_remove("RECALL_VAULT")
        .env_remove("RECALL_MODEL")
        .env_remove("RECALL_ENGINE")
        .env_remove("RECALL_API_KEY")
        .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
        .env("HF_HUB_OFFLINE", "1")
        .env("RECALL_PROMPT_CACHE_DIR", home.path().join("prompt-cache"))
        .env("RECALL_DECK", home.path().join("deck.json"))
        .env("RUST_LOG", "warn");
    if let Some(key) = api_key {
        command.env("RECALL_API_KEY", key);
    }
    let mut run = Watched::spawn(command);
    run.wait_until("the serving line", |_, err| err.contains("/v1 (model"));
    let (_, stderr) = run.output();
    let base = stderr
        .split_once("serving the vault at ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {stderr}"))
        .to_string();
    Server {
        run,
        base,
        _home: home,
    }
}

impl Server {
    /// Ctrl-C: the server ends cleanly (exit 0, nothing panicked); returns its stderr.
    pub fn stop(self) -> String {
        self.run.interrupt();
        let (status, _, stderr) = self.run.finish();
        assert!(status.success(), "{status}\n{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        stderr
    }

    /// What the server has written to stderr so far.
    pub fn stderr(&self) -> String {
        self.run.output().1
    }

    /// `host:port`.
    pub fn authority(&self) -> &str {
        self.base
            .trim_start_matches("http://")
            .trim_end_matches("/v1")
    }
}

/// Runs curl with `args`; returns what it printed (headers included where `-i` asks).
fn curl(args: &[&str]) -> String {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "600"])
        .args(args)
        .output()
        .expect("curl runs");
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

pub const QUESTION: &str = "What does the launch note say?";

fn question_body(stream: bool) -> String {
    serde_json::json!({
        "model": "recall",
        "stream": stream,
        "messages": [{"role": "user", "content": QUESTION}],
    })
    .to_string()
}

#[test]
fn the_openai_sdk_and_curl_get_cited_answers_streamed_and_whole() {
    let server = start(Path::new(&common::fixture_vault()), "160");

    // The official SDK, as Obsidian Copilot or Open WebUI would use it.
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-peers/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/install-peers",
        python.display()
    );
    let sdk = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve_clients.py"))
        .args([&server.base, QUESTION])
        .output()
        .expect("python runs");
    assert!(
        sdk.status.success(),
        "the SDK failed: {}",
        String::from_utf8_lossy(&sdk.stderr)
    );
    let seen: Value = serde_json::from_slice(&sdk.stdout).expect("the script's JSON");
    assert_eq!(seen["models"], serde_json::json!(["recall"]));
    for way in ["whole", "streamed"] {
        let reply = &seen[way];
        // `length`: the test model often writes up to its bound.
        let finish = reply["finish_reason"].as_str();
        assert!(matches!(finish, Some("stop" | "length")), "{way}: {reply}");
        let content = reply["content"].as_str().expect("content");
        let citations = reply["recall"]["citations"]
            .as_array()
            .unwrap_or_else(|| panic!("{way}: no citations in {reply}"));
        assert!(!citations.is_empty(), "{way}: {reply}");
        // Every source in the data is in the text as a link a person can click.
        for c in citations {
            let link = c["link"].as_str().expect("a link");
            assert!(link.starts_with("obsidian://open?vault="), "{link}");
            assert!(content.contains(&format!("(<{link}>)")), "{way}: {content}");
            assert!(c["uri"].as_str().unwrap().starts_with("note://"));
        }
        assert!(content.contains("\n\nSources"), "{way}: {content}");
    }
    assert!(seen["streamed"]["chunks"].as_u64().unwrap() > 2);
    assert!(seen["whole"]["usage"]["prompt_tokens"].as_u64().unwrap() > 0);

    // curl: the models list, a stream as raw server-sent events, a browser's preflight, and
    // a page of a stranger's origin.
    let models: Value = serde_json::from_str(&curl(&[&format!("{}/models", server.base)])).unwrap();
    assert_eq!(models["data"][0]["id"], "recall");
    let completions = format!("{}/chat/completions", server.base);
    let body = question_body(true);
    let events = curl(&[
        "-N",
        "-H",
        "Content-Type: application/json",
        "-d",
        &body,
        &completions,
    ]);
    assert!(events.starts_with("data: {"), "{events}");
    assert!(events.trim_end().ends_with("data: [DONE]"), "{events}");
    let preflight = curl(&[
        "-i",
        "-X",
        "OPTIONS",
        "-H",
        "Origin: app://obsidian.md",
        "-H",
        "Access-Control-Request-Method: POST",
        "-H",
        "Access-Control-Request-Headers: authorization,content-type",
        &completions,
    ])
    .to_lowercase();
    assert!(
        preflight.contains("access-control-allow-origin: app://obsidian.md"),
        "{preflight}"
    );
    let stranger = curl(&[
        "-i",
        "-H",
        "Origin: https://evil.example",
        "-H",
        "Content-Type: application/json",
        "-d",
        &question_body(false),
        &completions,
    ]);
    assert!(stranger.starts_with("HTTP/1.1 403"), "{stranger}");

    let stderr = server.stop();
    // Three questions reached the model (two by the SDK, one by curl); the stranger's did not.
    assert_eq!(stderr.matches(": answered in ").count(), 3, "{stderr}");
}

/// A question that keeps the test model writing a while (see `cli.rs`), streamed from its first
/// words: it asks no name or figure, whose answer is withheld until it is checked ("where it
/// is" asks a name).
pub const LONG_QUESTION: &str = "Explain in detail what my notes say about mitosis, meiosis, the \
    cell cycle and the biology midterm: which chapters it covers and how to prepare for it, \
    step by step.";

#[test]
fn a_client_that_hangs_up_mid_answer_stops_its_turn_and_the_next_is_answered() {
    let vault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sample-vault");
    let server = start(&vault, "400");
    let body = serde_json::json!({
        "stream": true,
        "messages": [{"role": "user", "content": LONG_QUESTION}],
    })
    .to_string();
    let mut socket = std::net::TcpStream::connect(server.authority()).expect("a connection");
    write!(
        socket,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        server.authority(),
        body.len()
    )
    .unwrap();
    // Read until the answer itself streams (the first chunk, the role, comes at once).
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while String::from_utf8_lossy(&seen)
        .matches("\"content\":\"")
        .count()
        < 2
    {
        let n = socket.read(&mut buffer).expect("the stream");
        assert!(
            n > 0,
            "the stream ended: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..n]);
    }
    drop(socket);

    // The next question is answered: the worker is free again.
    let answer = curl(&[
        "-H",
        "Content-Type: application/json",
        "-d",
        &question_body(false),
        &format!("{}/chat/completions", server.base),
    ]);
    let answer: Value = serde_json::from_str(&answer).expect("a completion");
    assert!(
        answer["choices"][0]["message"]["content"].is_string(),
        "{answer}"
    );

    let stderr = server.stop();
    assert!(
        stderr.contains("#1: stopped: the client went away"),
        "{stderr}"
    );
    assert!(stderr.contains("#2: answered in "), "{stderr}");
}

/// Posts `body` to the chat endpoint; returns the status line's code and the body.
fn post(server: &Server, body: &str) -> (u16, Value) {
    post_to(server, "chat/completions", body)
}

/// Posts `body` to `path` under `/v1/`; returns the status line's code and the body.
fn post_to(server: &Server, path: &str, body: &str) -> (u16, Value) {
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), body).unwrap();
    let out = curl(&[
        "-w",
        "\n%{http_code}",
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        &format!("@{}", file.path().display()),
        &format!("{}/{path}", server.base),
    ]);
    let (json, code) = out.rsplit_once('\n').expect("a status code");
    let value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    (code.parse().expect("a status code"), value)
}

#[test]
fn a_history_of_ten_thousand_messages_is_answered_and_an_endless_question_refused() {
    let server = start(Path::new(&common::fixture_vault()), "48");
    // 10,000 short messages before the question (400 KB): the oldest are folded away by
    // bisection (each try renders and counts the whole prompt, once a turn took minutes).
    let mut messages: Vec<Value> = (0..5_000)
        .flat_map(|i| {
            [
                serde_json::json!({"role": "user", "content": format!("Note {i} of my list?")}),
                serde_json::json!({"role": "assistant", "content": format!("Item {i} noted.")}),
            ]
        })
        .collect();
    messages.push(serde_json::json!({"role": "user", "content": QUESTION}));
    let body = serde_json::json!({"messages": messages}).to_string();
    let (code, answer) = post(&server, &body);
    assert_eq!(code, 200, "{answer}");
    assert!(
        answer["choices"][0]["message"]["content"].is_string(),
        "{answer}"
    );

    // A question that cannot fit the context even alone is the client's error, streamed or
    // not, and the server answers the next one.
    for stream in [true, false] {
        let endless = "Tell me about the launch again and again. ".repeat(20_000);
        let body = serde_json::json!({
            "stream": stream,
            "messages": [{"role": "user", "content": endless}],
        })
        .to_string();
        let (code, error) = post(&server, &body);
        assert_eq!(code, 400, "{error}");
        assert_eq!(error["error"]["code"], "context_length_exceeded", "{error}");
    }
    let (code, _) = post(&server, &question_body(false));
    assert_eq!(code, 200);
    let stderr = server.stop();
    assert!(stderr.contains("#1: shortened "), "{stderr}");
    assert!(
        stderr.contains("#2: refused: the question does not fit"),
        "{stderr}"
    );
}

#[test]
fn the_study_endpoints_tell_a_target_that_names_nothing_from_a_changed_deck() {
    let server = start(Path::new(&common::fixture_vault()), "48");
    let nothing = serde_json::json!({"target": "qqzzxxvvkk"}).to_string();
    for path in ["recall/summarize", "recall/quiz"] {
        let (code, error) = post_to(&server, path, &nothing);
        assert_eq!(code, 404, "{path}: {error}");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("qqzzxxvvkk"), "{path}: {error}");
    }
    let (code, error) = post_to(
        &server,
        "recall/quiz",
        r#"{"target": "Launch", "count": 0}"#,
    );
    assert_eq!(code, 400, "{error}");
    // The deck is empty: card 0 asks nothing, so the page's view of it is out of date.
    let grade = r#"{"card": 0, "question": "What is it?", "answer": "It is."}"#;
    let (code, error) = post_to(&server, "recall/review/grade", grade);
    assert_eq!(code, 409, "{error}");
    let stderr = server.stop();
    assert!(stderr.contains("failed after"), "{stderr}");
}
