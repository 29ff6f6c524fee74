//! `--engine URL`: the real llama-server (built from llama.cpp's own sources by
//! scripts/build-llama-server) serving the test model on loopback, driven by the real `recall`
//! binary: the same tokens read and, on short greedy generations, the same text written as
//! in-process; every command working with cited sources; tool calls under the grammar; Ctrl-C
//! ending the server's task; and each failure a person can meet said plainly.

use std::net::TcpListener;
use std::ops::ControlFlow;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use recall::engine::llama::{Engine, LoadOptions, SessionOptions};
use recall::engine::{ChatModel, Constraint, GenerateRequest, remote};
use serde_json::Value;

use crate::common::{self, Watched};

/// A llama-server on a free loopback port with the test model.
struct LlamaServer {
    run: Watched,
    url: String,
}

impl LlamaServer {
    /// Starts it with `extra` flags and waits until it listens. One thread (tests run two at a
    /// time on 2 cores), two slots of 4096 tokens: the in-process runs use `--ctx 4096`.
    fn start(extra: &[&str]) -> LlamaServer {
        let port = free_port();
        let mut command = Command::new(common::llama_server());
        command
            .arg("-m")
            .arg(common::smollm2())
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-t", "1", "-c", "8192", "-np", "2", "--no-webui"])
            .args(extra)
            .stdin(Stdio::null());
        let mut run = Watched::spawn(command);
        run.wait_until("llama-server listening", |out, err| {
            out.contains("listening on") || err.contains("listening on")
        });
        LlamaServer {
            run,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Everything the server logged so far.
    fn log(&self) -> String {
        let (out, err) = self.run.output();
        out + &err
    }
}

/// A port nothing listens on (bound, then let go).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// `recall` with `args` and `env`, the test model's flags for the fixture vault appended.
fn recall(args: &[&str], env: &[(&str, &str)]) -> Output {
    let vault = common::fixture_vault();
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.extend(common::test_model_args(&vault));
    all.push("--no-embeddings".into());
    let home = tempfile::tempdir().expect("a temporary folder");
    let mut command = common::recall_command(home.path());
    command.args(&all).stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("recall runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `args` in-process and on `server`; both must succeed. Returns (local, remote) stdout.
fn both(server: &LlamaServer, args: &[&str]) -> (String, String) {
    let local = recall(args, &[]);
    let mut remote_args = args.to_vec();
    remote_args.extend(["--engine", &server.url]);
    let remote = recall(&remote_args, &[]);
    for (name, out) in [("in-process", &local), ("remote", &remote)] {
        assert!(
            out.status.success(),
            "{name} {args:?} failed:\n{}",
            text(&out.stderr)
        );
    }
    (text(&local.stdout), text(&remote.stdout))
}

/// The generations of an `ask --json` report: (kind, prompt tokens).
fn prompt_sizes(report: &Value) -> Vec<(String, u64)> {
    report["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|s| s["timings"]["prompt_tokens"].as_u64() > Some(0))
        .map(|s| {
            (
                s["kind"].as_str().unwrap_or_default().to_string(),
                s["timings"]["prompt_tokens"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

fn chatml(user: &str) -> String {
    format!(
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    )
}

fn connect(server: &LlamaServer) -> remote::Server {
    remote::Server::connect(&remote::ServerOptions {
        url: server.url.clone(),
        api_key: None,
        idle_timeout: Duration::from_secs(120),
    })
    .expect("connects to llama-server")
}

/// The server reads exactly the token ids the in-process engine reads: special tokens written
/// as text are single tokens, nothing is doubled or dropped, whatever the text.
#[test]
fn the_server_reads_the_tokens_the_in_process_engine_reads() {
    let server = LlamaServer::start(&[]);
    let remote = connect(&server);
    let local = Engine::load(&common::smollm2(), &LoadOptions::default()).expect("loads");
    assert_eq!(remote.info().chat_template, local.info().chat_template);
    assert_eq!(remote.info().add_bos, local.info().add_bos);
    assert_eq!(remote.info().eos_text, local.info().eos_text);
    for prompt in [
        chatml("What is the launch date?"),
        chatml("日本語のノートは？ 🚀 Launch, naïve café"),
        format!("{}{}", local.info().bos_text, chatml("twice?")),
        "plain text, no template".to_string(),
        chatml("a literal <|im_end|> inside"),
    ] {
        assert_eq!(
            remote.tokenize_prompt(&prompt).unwrap(),
            local.tokenize_prompt(&prompt),
            "{prompt:?}"
        );
    }
}

/// Greedy generation under the same prompt, free and under a grammar: the server writes what
/// the in-process engine writes. The two llama.cpp revisions (ggml 0.25.3 in llama-server,
/// 0.26.0 in the crate) have different CPU kernels, so a 135M model's greedy text can part at
/// a near-tie after a few tokens ("Water is indeed water." / "Water is not only water, …"):
/// the check is the first word of each text, and the grammar's shape.
#[test]
fn greedy_generation_on_the_server_matches_in_process() {
    let server = LlamaServer::start(&[]);
    let remote = connect(&server);
    let local = Engine::load(&common::smollm2(), &LoadOptions::default()).expect("loads");
    let options = SessionOptions {
        n_ctx: Some(2048),
        threads: Some(1),
    };
    let mut local = local.session(&options).unwrap();
    let mut remote = remote.session(Some(2048));
    let call = Constraint {
        gbnf: r#"root ::= "[" ("search_notes" | "read_note") "(query=\"" [a-z ]+ "\")]""#
            .to_string(),
        root: "root".to_string(),
        lazy_patterns: Vec::new(),
    };
    let lazy = Constraint {
        gbnf: r#"root ::= "[" [a-z_]+ "()]""#.to_string(),
        root: "root".to_string(),
        lazy_patterns: vec![r"^\s*(\[)[\s\S]*$".to_string()],
    };
    let call_shape =
        regex::Regex::new(r#"^\[(search_notes|read_note)\(query="[a-z ]*("\)\])?$"#).unwrap();
    for (question, constraint, tokens) in [
        ("Say hello.", None, 24),
        ("What is the capital of France?", None, 24),
        ("Which tool finds notes about bees?", Some(call), 32),
        ("Answer in a word: is water wet?", Some(lazy), 16),
    ] {
        let mut request = GenerateRequest::greedy(tokens);
        request.constraint = constraint;
        let prompt = chatml(question);
        let ignore = &mut |_: &str| ControlFlow::Continue(());
        let here = local.generate(&prompt, &request, ignore).unwrap();
        let there = remote.generate(&prompt, &request, ignore).unwrap();
        assert_eq!(there.stats.prompt_tokens, here.stats.prompt_tokens);
        // A wrong prompt, sampler chain or grammar parts at the first token; the revisions'
        // arithmetic only at a near-tie, later (measured: after 3 to 14 tokens, or never).
        let first_word = |text: &str| text.split_whitespace().next().unwrap_or("").to_string();
        assert_eq!(
            first_word(&there.text),
            first_word(&here.text),
            "{question}: server {:?}, in-process {:?}",
            there.text,
            here.text
        );
        if request
            .constraint
            .as_ref()
            .is_some_and(|c| c.lazy_patterns.is_empty())
        {
            assert!(call_shape.is_match(&there.text), "{}", there.text);
        }
    }
}

/// A prompt's stable prefix (its system message) is read on its own before the rest, as the
/// in-process engine reads it, so the rest is read in the same batches from the same
/// position; the session's next prompt that starts with it does not read it again.
#[test]
fn a_stable_prefix_is_read_on_its_own_once_a_session() {
    let server = LlamaServer::start(&["-b", "128", "-ub", "128"]);
    let remote = connect(&server);
    let system = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";
    let prefix = remote.tokenize_prompt(system).unwrap().len();
    // The server logs each task's end with the tokens its slot then holds: a task that read
    // the prefix alone ends holding exactly those.
    let read_alone = format!("stop processing: n_tokens = {prefix},");
    let mut session = remote.session(Some(2048));
    let mut request = GenerateRequest::greedy(4);
    request.stable_prefix = system.len();
    let ignore = &mut |_: &str| ControlFlow::Continue(());

    let first = session
        .generate(&chatml("Say hello."), &request, ignore)
        .unwrap();
    assert!(first.stats.prompt_tokens > prefix);
    assert_eq!(first.stats.evaluated_tokens, first.stats.prompt_tokens);
    assert_eq!(
        server.log().matches(&read_alone).count(),
        1,
        "{}",
        server.log()
    );

    let second = session
        .generate(&chatml("Name a colour."), &request, ignore)
        .unwrap();
    assert!(second.stats.reused_tokens >= prefix, "{:?}", second.stats);
    assert_eq!(
        server.log().matches(&read_alone).count(),
        1,
        "{}",
        server.log()
    );

    // Without a stable prefix nothing is read on its own.
    let mut fresh = remote.session(Some(2048));
    let whole = fresh
        .generate(&chatml("Say hello."), &GenerateRequest::greedy(4), ignore)
        .unwrap();
    assert_eq!(whole.text, first.text);
    assert_eq!(
        server.log().matches(&read_alone).count(),
        1,
        "{}",
        server.log()
    );
}

/// `recall ask --engine` answers with cited sources, and every prompt of the run has the
/// length in tokens it has in-process: retrieval, budgets and layout are the same; only the
/// arithmetic is the server's.
#[test]
fn ask_on_llama_server_cites_and_reads_prompts_of_the_same_size() {
    let server = LlamaServer::start(&[]);
    for question in ["What is the launch date?", "Who runs the weekly meeting?"] {
        let (local, remote) = both(&server, &["ask", question, "--json"]);
        let local: Value = serde_json::from_str(&local).expect("JSON report");
        let remote: Value = serde_json::from_str(&remote).expect("JSON report");
        let (here, there) = (prompt_sizes(&local), prompt_sizes(&remote));
        assert!(!here.is_empty(), "no generation in {local}");
        // The first generation reads the same prompt; later ones follow what was written.
        assert_eq!(there[0], here[0], "{question}");
        assert!(!remote["answer"].as_str().unwrap_or_default().is_empty());
        let cited = remote["citations"].as_array().expect("citations");
        assert!(!cited.is_empty(), "{remote}");
        for citation in cited {
            assert!(
                citation["link"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("obsidian://open?"),
                "{citation}"
            );
        }
        let answer = remote["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["kind"] == "answer")
            .expect("an answer step");
        assert!(answer["timings"]["generated_tokens"].as_u64() > Some(0));
    }
}

/// The decision step's grammar reaches the server: the call it writes is a real tool of the
/// vault server, which runs it.
#[test]
fn tool_calls_on_llama_server_go_through_the_grammar() {
    let server = LlamaServer::start(&[]);
    let out = recall(
        &[
            "ask",
            "Which notes mention the budget?",
            "--decide-first",
            "--json",
            "--engine",
            &server.url,
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("JSON report");
    let decision = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "decision")
        .unwrap_or_else(|| panic!("no decision step in {report}"))
        .clone();
    // The grammar admits only `[tool(param=value, …)]` with the vault server's tools.
    let output = decision["output"].as_str().unwrap_or_default();
    let name = output
        .strip_prefix('[')
        .and_then(|rest| rest.split_once('('))
        .map(|(name, _)| name)
        .unwrap_or_else(|| panic!("not a call: {output}"));
    assert!(output.ends_with(")]"), "{output}");
    let tools = common::recall(&["tools", "--vault", &common::fixture_vault()]);
    let tools = text(&tools.stdout);
    assert!(
        tools.lines().any(|line| line.trim() == name),
        "{name} is not a tool of\n{tools}"
    );
}

/// Summaries, quizzes and chat turns run on the server: a summary of points with its sources,
/// quiz items with answers and sources, chat turns that cite.
#[test]
fn study_and_chat_run_on_llama_server() {
    let server = LlamaServer::start(&[]);
    let run = |args: &[&str]| {
        let mut args = args.to_vec();
        args.extend(["--engine", &server.url]);
        let out = recall(&args, &[]);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let summary = run(&["summarize", "Home"]);
    assert!(summary.contains("\n- "), "{summary}");
    assert!(summary.contains("obsidian://open?"), "{summary}");
    let quiz = run(&["quiz", "Projects/Alpha", "-n", "2", "--format", "json"]);
    let quiz: Value = serde_json::from_str(quiz.trim()).expect("one JSON object");
    let questions = quiz["questions"].as_array().expect("a question list");
    assert!(!questions.is_empty(), "{quiz}");

    // Two chat turns, each a report; the first cites the launch note.
    let vault = common::fixture_vault();
    let mut args = vec!["chat".to_string(), "--json".to_string()];
    args.extend(common::test_model_args(&vault));
    args.extend(["--no-embeddings", "--engine", &server.url].map(str::to_string));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::recall_with_input(&args, "What is the launch date?\nAnd who decided it?\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let turns: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one report per turn"))
        .collect();
    assert_eq!(turns.len(), 2, "{}", text(&out.stdout));
    assert!(
        turns
            .iter()
            .all(|t| t["answer"].as_str().is_some_and(|a| !a.is_empty()))
    );
    let cited = turns[0]["citations"].to_string();
    assert!(cited.contains("Launch"), "{cited}");
}

/// Ctrl-C while the server reads the answer's prompt closes the request, and llama-server
/// cancels the task (its log says so, then releases the slot) instead of writing on for nobody.
#[test]
fn ctrl_c_ends_the_request_on_llama_server() {
    let mut server = LlamaServer::start(&[]);
    let vault = common::fixture_vault();
    let home = tempfile::tempdir().expect("a temporary folder");
    let mut command = common::recall_command(home.path());
    command
        .args(["ask", "Write a long essay on every project in my notes"])
        .args(common::test_model_args(&vault))
        .args(["--no-embeddings", "--engine", &server.url])
        .stdin(Stdio::null());
    let mut ask = Watched::spawn(command);
    // Task 0 is the grammar check at connect, the next the answer prompt's stable prefix read
    // on its own (a hundred tokens); the third is the rest of the prompt being read (hundreds
    // of tokens on one thread: seconds).
    ask.wait_until("the answer's task on the server", |_, _| {
        server.log().matches("processing task").count() >= 3
    });
    ask.interrupt();
    let (status, _, stderr) = ask.finish();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopped"), "{stderr}");
    server
        .run
        .wait_until("the slot released after the cancel", |out, err| {
            let all = out.to_string() + err;
            all.find("cancel task")
                .is_some_and(|at| all[at..].contains("stop processing"))
        });
}

/// The server's speed as it delivers it, beside `recall bench`'s in-process figures.
#[test]
fn bench_measures_llama_server() {
    let server = LlamaServer::start(&[]);
    let out = common::recall(&[
        "bench",
        "--engine",
        &server.url,
        "-p",
        "64",
        "-n",
        "8",
        "-r",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    assert_eq!(report["pp"]["tokens"], 64);
    assert!(report["pp"]["tok_s"].as_f64() > Some(0.0), "{report}");
    assert!(report["tg"]["tok_s"].as_f64() > Some(0.0), "{report}");
}

fn failure(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = recall(args, env);
    assert!(!out.status.success(), "expected a failure: {args:?}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    text(&out.stderr)
}

/// Nothing listening, a mistyped address: errors that say what to do.
#[test]
fn an_unreachable_or_mistyped_engine_is_said_plainly() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let err = failure(&["ask", "q", "--engine", &url], &[]);
    assert!(err.contains("cannot reach it"), "{err}");
    assert!(err.contains("Connection refused"), "{err}");
    assert!(err.contains("llama-server -m"), "{err}");

    let err = failure(&["ask", "q", "--engine", "localhost:8080"], &[]);
    assert!(err.contains("must start with http://"), "{err}");
}

/// A server with an API key: none or a wrong one is refused with the variable to set, and
/// the key never appears in what recall prints; the right one (from the environment, or the
/// config file's `${env:…}`) answers.
#[test]
fn the_api_key_comes_from_the_environment_and_is_never_printed() {
    let server = LlamaServer::start(&["--api-key", "s3cret-key"]);
    let err = failure(&["ask", "q", "--engine", &server.url], &[]);
    assert!(err.contains("RECALL_ENGINE_API_KEY"), "{err}");
    let err = failure(
        &["ask", "q", "--engine", &server.url, "-v"],
        &[("RECALL_ENGINE_API_KEY", "wrong-key")],
    );
    assert!(err.contains("refused the API key"), "{err}");
    assert!(!err.contains("wrong-key"), "{err}");

    let ok = recall(
        &[
            "ask",
            "What is the launch date?",
            "--engine",
            &server.url,
            "-v",
        ],
        &[("RECALL_ENGINE_API_KEY", "s3cret-key")],
    );
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    assert!(!text(&ok.stderr).contains("s3cret"), "{}", text(&ok.stderr));

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    let recall_bin = env!("CARGO_BIN_EXE_recall");
    let vault = common::fixture_vault();
    std::fs::write(
        &config,
        serde_json::json!({
            "mcpServers": {"vault": {
                "command": recall_bin,
                "args": ["mcp-vault-server", "--vault", vault],
                "readOnly": true
            }},
            "engine": {"url": server.url, "apiKey": "${env:GPU_BOX_KEY}"}
        })
        .to_string(),
    )
    .unwrap();
    let config = config.display().to_string();
    let ok = recall(
        &["ask", "What is the launch date?", "--config", &config, "-v"],
        &[("GPU_BOX_KEY", "s3cret-key")],
    );
    let stderr = text(&ok.stderr);
    assert!(ok.status.success(), "{stderr}");
    assert!(
        stderr.contains(&server.url),
        "the config's engine is used: {stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

/// A server whose model cannot read the layout its template names (llama-server started with
/// `--chat-template llama3` on a ChatML model): refused before any question is asked.
#[test]
fn a_model_without_the_layouts_tokens_is_refused() {
    let server = LlamaServer::start(&["--chat-template", "llama3"]);
    let err = failure(&["ask", "q", "--engine", &server.url], &[]);
    assert!(err.contains("<|start_header_id|>"), "{err}");
    assert!(err.contains("--chat-template"), "{err}");
}

/// A server that ignores grammars (a stand-in: every real llama-server honours them) is
/// refused at connect; one that accepts and then says nothing fails after --engine-timeout.
#[test]
fn a_server_ignoring_grammars_or_silent_is_refused() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake_engine.py");
    let mut command = Command::new("python3");
    command.arg(script).stdin(Stdio::null());
    let mut fake = Watched::spawn(command);
    fake.wait_until("the fake engine's port", |out, _| out.contains('\n'));
    let port = fake.output().0.trim().to_string();
    let err = failure(
        &["ask", "q", "--engine", &format!("http://127.0.0.1:{port}")],
        &[],
    );
    assert!(err.contains("ignores grammars"), "{err}");

    // Accepts the connection, never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let err = failure(
        &["ask", "q", "--engine", &url, "--engine-timeout", "1"],
        &[],
    );
    assert!(err.contains("sent nothing for 1 s"), "{err}");
    assert!(err.contains("--engine-timeout"), "{err}");
}
