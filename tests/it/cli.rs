//! The `recall` binary end to end: the real SmolLM2 model, the real bundled vault server over
//! stdio, a real third-party MCP server (mcp-server-time), real files.

use crate::common;

use common::{fixture_vault, recall};

use std::path::{Path, PathBuf};

use serde_json::Value;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn peers_config(dir: &Path) -> PathBuf {
    let time_server = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-peers/bin/mcp-server-time");
    assert!(
        time_server.is_file(),
        "{} is missing: run scripts/install-peers first",
        time_server.display()
    );
    let config = serde_json::json!({
        "mcpServers": {
            "notes": {
                "command": env!("CARGO_BIN_EXE_recall"),
                "args": ["mcp-vault-server", "--vault", fixture_vault()],
                "readOnly": true
            },
            "time": {
                "command": time_server,
                "args": ["--local-timezone", "UTC"],
                "readOnly": true
            }
        }
    });
    let path = dir.join("config.json");
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    path
}

#[test]
fn ask_with_the_real_model_answers_in_prose_and_cites_only_sources_it_was_given() {
    let model = common::smollm2();
    let out = recall(&[
        "ask",
        "--json",
        "--model",
        model.to_str().unwrap(),
        "--vault",
        &fixture_vault(),
        "--temp",
        "0",
        "--ctx",
        "4096",
        "--max-tokens",
        "96",
        "What does the launch note say?",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    // The answer grammar holds even a 135M model to prose: never empty, never a call.
    let answer = run["answer"].as_str().unwrap();
    assert!(!answer.trim().is_empty(), "{run:#}");
    assert!(
        !answer.trim_start().starts_with("[")
            || answer.trim_start()[1..].starts_with(|c: char| c.is_ascii_digit()),
        "{answer}"
    );
    assert!(!answer.contains("<|python_tag|>"), "{answer}");
    let steps = run["steps"].as_array().unwrap();
    // The turn ends with the answer, or with the attribution step that asks an answer citing
    // no number where it came from.
    let kinds: Vec<&str> = steps.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert!(
        kinds.ends_with(&["answer"]) || kinds.ends_with(&["answer", "attribute"]),
        "{kinds:?}"
    );
    // Retrieval first: the question itself was searched before the model decided anything.
    assert_eq!(steps[0]["kind"], "retrieve");
    let search = &steps[0]["calls"][0];
    assert_eq!(search["server"], "vault");
    assert_eq!(
        search["arguments"]["query"],
        "What does the launch note say?"
    );
    assert!(!search["notes"].as_array().unwrap().is_empty(), "{run:#}");
    // Every cited note came back from a call that succeeded in this run.
    let outputs: Vec<&Value> = steps
        .iter()
        .flat_map(|s| s["calls"].as_array().unwrap())
        .collect();
    let citations = run["citations"].as_array().unwrap();
    assert!(!citations.is_empty(), "{run:#}");
    for citation in citations {
        let uri = citation["uri"].as_str().unwrap();
        assert!(uri.starts_with("note://"), "{uri}");
        assert!(
            citation["link"]
                .as_str()
                .unwrap()
                .starts_with("obsidian://open?vault=vault&file=")
        );
        let returned = outputs
            .iter()
            .any(|c| c["ok"] == true && c["notes"].as_array().unwrap().iter().any(|n| n == uri));
        assert!(returned, "{uri} was cited but no call returned it: {run:#}");
    }
    // KV reuse is visible: a second decision reuses the first one's prompt. (The opening
    // search generates nothing, and the answer runs on a context of its own.)
    let answer_step = steps.iter().rfind(|s| s["kind"] == "answer").unwrap();
    let timings = &answer_step["timings"];
    assert!(timings["prompt_tokens"].as_u64().unwrap() > 0);
    let decisions: Vec<&Value> = steps.iter().filter(|s| s["kind"] == "decision").collect();
    if decisions.len() > 1 {
        let reused: u64 = decisions[1..]
            .iter()
            .map(|s| s["timings"]["prompt_tokens_reused"].as_u64().unwrap())
            .sum();
        assert!(reused > 0, "{run:#}");
    }
}

/// What the model reads of a source is plain text cut to the question: a long passage after
/// the first keeps the sentence that bears on it, with an ellipsis for the rest; links read as
/// their words and callout marks are gone (through the real agent, server and model).
#[test]
fn ask_shows_the_model_its_sources_as_plain_text_cut_to_the_question() {
    let dir = tempfile::tempdir().expect("temp dir");
    let vault = dir.path().join("vault");
    std::fs::create_dir(&vault).unwrap();
    std::fs::write(
        vault.join("Snapshots.md"),
        "# Snapshots\nSnapshots are kept for 7 days by [[File recovery|the recovery plugin]].\n",
    )
    .unwrap();
    let filler = [
        "The ribbon on the left holds icons for common actions.",
        "Themes change the colours and fonts of the whole app.",
        "Hotkeys can be assigned to any command in the settings.",
        "Canvas lays out cards on an infinite board.",
        "Graph view draws the notes as dots and their links as lines.",
        "Workspaces save the layout of panes for later.",
        "Outline lists the headings of the current note.",
        "Bookmarks keep searches, notes and headings a click away.",
    ];
    let backups = format!(
        "# Backups\n{}\n> [!info]+ Tip\n> Old snapshots are kept outside the vault, see [[Settings#Files]].\n{}\nThe zebra icon opens the about page.\n",
        filler.join(" "),
        filler.join(" ")
    );
    std::fs::write(vault.join("Backups.md"), backups).unwrap();
    let transcript = dir.path().join("transcript.jsonl");
    let model = common::smollm2();
    let out = recall(&[
        "ask",
        "--json",
        "--model",
        model.to_str().unwrap(),
        "--vault",
        vault.to_str().unwrap(),
        "--no-embeddings",
        "--temp",
        "0",
        "--max-tokens",
        "16",
        "--transcript",
        transcript.to_str().unwrap(),
        "How long are snapshots kept?",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entry: Value = serde_json::from_str(
        std::fs::read_to_string(&transcript)
            .unwrap()
            .lines()
            .last()
            .expect("a transcript line"),
    )
    .unwrap();
    let results = entry["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "ipython")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no search result: {entry:#}"))
        .to_string();
    let first = results.find("[1] Snapshots").expect("Snapshots first");
    let second = results.find("[2] Backups").expect("Backups second");
    assert!(first < second, "{results}");
    let backups = &results[second..];
    assert!(
        backups.contains("Old snapshots are kept outside the vault, see Settings > Files."),
        "{backups}"
    );
    assert!(backups.contains('…'), "{backups}");
    assert!(!backups.contains("zebra"), "{backups}");
    assert!(backups.chars().count() < 600, "{backups}");
    assert!(
        results[..second].contains("by the recovery plugin."),
        "{results}"
    );
    for mark in ["[[", "]]", "[!info]"] {
        assert!(!results.contains(mark), "{mark} in {results}");
    }
}

/// `recall ask` twice on one prompt cache: the second run loads the decision and answer prefixes
/// from disk and writes the same greedy tokens; another build does not load them;
/// `--no-prompt-cache` writes nothing.
#[test]
fn ask_restores_its_prompt_prefixes_from_the_cache_and_answers_the_same() {
    let model = common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let ask_with = |exe: &Path, extra: &[&str]| -> Value {
        let mut args = vec![
            "ask",
            "--json",
            "--model",
            model.to_str().unwrap(),
            "--vault",
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sample-vault"),
            "--temp",
            "0",
            "--ctx",
            "4096",
            "--max-steps",
            "1",
            "--max-tokens",
            "24",
            // Both prompt kinds, so both prefixes are cached.
            "--decide-first",
        ];
        args.extend_from_slice(extra);
        args.push("When is the biology midterm?");
        let home = tempfile::tempdir().unwrap();
        let out = common::recall_command_at(exe, home.path())
            .args(&args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("one JSON object")
    };
    let built = Path::new(env!("CARGO_BIN_EXE_recall"));
    let ask = |extra: &[&str]| ask_with(built, extra);
    let restored = |run: &Value, kind: &str| -> u64 {
        run["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["kind"] == kind)
            .map(|s| s["timings"]["prompt_tokens_restored"].as_u64().unwrap())
            .sum()
    };
    let outputs = |run: &Value| -> Vec<Value> {
        run["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["output"].clone())
            .collect()
    };

    let flag = ["--prompt-cache-dir", cache.to_str().unwrap()];
    let cold = ask(&flag);
    assert_eq!(restored(&cold, "decision") + restored(&cold, "answer"), 0);
    let stored = std::fs::read_dir(&cache).unwrap().count();
    assert_eq!(stored, 2, "one prefix per prompt kind");

    let warm = ask(&flag);
    assert!(restored(&warm, "decision") > 1000, "{warm:#}");
    assert!(restored(&warm, "answer") > 0, "{warm:#}");
    assert_eq!(warm["answer"], cold["answer"]);
    assert_eq!(outputs(&warm), outputs(&cold));

    // Another build (a copy of the binary stands in for one: another file, another modification
    // time) reads the prefixes itself: its llama.cpp may compute them differently.
    let rebuilt = dir.path().join("recall-rebuilt");
    std::fs::copy(built, &rebuilt).unwrap();
    let other = ask_with(&rebuilt, &flag);
    assert_eq!(restored(&other, "decision") + restored(&other, "answer"), 0);
    assert_eq!(other["answer"], cold["answer"]);
    // Its own states are stored beside the first build's.
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 4);

    let unused = dir.path().join("unused");
    let off = ask(&[
        "--no-prompt-cache",
        "--prompt-cache-dir",
        unused.to_str().unwrap(),
    ]);
    assert_eq!(restored(&off, "decision") + restored(&off, "answer"), 0);
    assert!(!unused.exists(), "--no-prompt-cache wrote a cache");
    assert_eq!(off["answer"], cold["answer"]);
}

#[test]
fn tools_from_two_real_servers_are_listed_and_routed() {
    let dir = tempfile::tempdir().unwrap();
    let config = peers_config(dir.path());
    let config = config.to_str().unwrap();

    let out = recall(&["tools", "--json", "--config", config]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers: Vec<&str> = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["server"].as_str().unwrap())
        .collect();
    assert!(
        servers.contains(&"notes") && servers.contains(&"time"),
        "{listing:#}"
    );

    let out = recall(&[
        "call",
        "--config",
        config,
        "search_notes",
        r#"{"query": "launch"}"#,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("note://"),
        "{}",
        text(&out.stdout)
    );

    let out = recall(&[
        "call",
        "--json",
        "--config",
        config,
        "get_current_time",
        r#"{"timezone": "UTC"}"#,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["is_error"], false);
    assert!(
        result["text"].as_str().unwrap().contains("UTC"),
        "{result:#}"
    );
}

#[test]
fn render_prints_the_decision_prompt_without_a_model() {
    let out = recall(&["render", "--vault", &fixture_vault(), "What is in Home?"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let prompt = text(&out.stdout);
    assert!(prompt.starts_with("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"));
    assert_eq!(prompt.matches("<|begin_of_text|>").count(), 1);
    assert!(prompt.contains("\"name\": \"search_notes\""));
    assert!(
        prompt.ends_with(
            "What is in Home?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
        )
    );
}

#[test]
fn bad_input_is_one_clear_error() {
    let vault = fixture_vault();
    let cases: [(&[&str], &str); 5] = [
        (
            &["ask", "--model", "/nowhere/m.gguf", "--vault", &vault, "q"],
            "no such file",
        ),
        (
            &["ask", "--model", "llama9", "--vault", &vault, "q"],
            "unknown model 'llama9'",
        ),
        (&["ask", "--vault", &vault, "q"], "HF_HUB_OFFLINE"),
        (
            &["call", "--vault", &vault, "search_notes", "not json"],
            "JSON object",
        ),
        (&["tools", "--vault", "/nowhere/vault"], "/nowhere/vault"),
    ];
    for (args, expected) in cases {
        let out = recall(args);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }

    // A folder or a named pipe as the model: named for what it is, and the pipe is never
    // opened (that would wait for a writer forever).
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("model.gguf");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let folder = dir.path().to_str().unwrap();
    for (model, expected) in [
        (folder, "this is a folder"),
        (fifo.to_str().unwrap(), "not a regular file"),
    ] {
        let out = recall(&["ask", "--model", model, "--vault", &vault, "q"]);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{model}: {stderr}");
        assert!(stderr.contains(expected), "{model}: {stderr}");
    }

    let broken = dir.path().join("config.json");
    std::fs::write(
        &broken,
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": }\n  }\n}\n",
    )
    .unwrap();
    let out = recall(&["tools", "--config", broken.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("config.json:3:"),
        "{}",
        text(&out.stderr)
    );

    // The only server cannot start: nothing to answer from, so no answer (and no model load).
    let dead = dir.path().join("dead.json");
    std::fs::write(
        &dead,
        r#"{"mcpServers": {"notes": {"command": "/nowhere/no-such-server"}}}"#,
    )
    .unwrap();
    let model = common::smollm2().display().to_string();
    let out = recall(&[
        "ask",
        "--config",
        dead.to_str().unwrap(),
        "--model",
        &model,
        "q",
    ]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("server notes failed to start"), "{stderr}");
    assert!(stderr.contains("no tool server started"), "{stderr}");
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
}

/// server-everything's `get-env` dumps its whole environment: recall's secrets must not be in
/// it, only the SDK clients' default variables, the config's `env` and what `inheritEnv` names.
/// The server is not `readOnly`, and `recall call` runs it without `--yes`: the person typed it.
#[test]
fn servers_get_only_the_default_environment_plus_what_the_config_names() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    let spec = serde_json::json!({
        "mcpServers": {
            "dump": {
                "command": "node",
                "args": [common::everything_server_js(), "stdio"],
                "env": {"DUMP_MARK": "set-by-config"},
                "inheritEnv": ["RECALL_TEST_PASSED_THROUGH"]
            }
        }
    });
    std::fs::write(&config, spec.to_string()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_recall"))
        .args(["call", "--json", "--config", config.to_str().unwrap()])
        .args(["get-env", "{}"])
        .env("HF_TOKEN", "hf_secret_value")
        .env("AWS_SECRET_ACCESS_KEY", "aws_secret_value")
        .env("GITHUB_TOKEN", "gh_secret_value")
        .env("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock")
        .env("RECALL_TEST_PASSED_THROUGH", "named-in-config")
        .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let env: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    let env = env.as_object().unwrap();
    let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
    names.sort();
    let allowed = [
        "DUMP_MARK",
        "HOME",
        "LOGNAME",
        "PATH",
        "RECALL_TEST_PASSED_THROUGH",
        "SHELL",
        "TERM",
        "USER",
    ];
    for name in &names {
        assert!(
            allowed.contains(name),
            "{name} reached the server: {names:?}"
        );
    }
    assert_eq!(env["DUMP_MARK"], "set-by-config");
    assert_eq!(env["RECALL_TEST_PASSED_THROUGH"], "named-in-config");
    assert!(env.contains_key("PATH"), "{names:?}");
    for secret in ["hf_secret", "aws_secret", "gh_secret", "ssh-agent"] {
        assert!(
            !result["text"].as_str().unwrap().contains(secret),
            "{secret} leaked"
        );
    }
}

/// A question that makes every phase of `ask` take a while on the test model: a long decision
/// prompt to read (its opening search finds many passages) and a long answer to write.
const LONG_QUESTION: &str = "Explain in detail what my notes say about mitosis, meiosis, the \
    cell cycle and the biology midterm: when and where it is, which chapters it covers, and how \
    to prepare for it, step by step.";

/// `recall ask` on the sample vault with the real model; the prompt log is on, since its lines
/// (`decision prompt:`, `answer prompt:`) mark where the run is.
fn ask_watched(json: bool) -> common::Watched {
    common::Watched::spawn(ask_command(json))
}

/// The command [`ask_watched`] runs.
fn ask_command(json: bool) -> std::process::Command {
    let vault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sample-vault");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_recall"));
    command
        .args(["ask", "--model"])
        .arg(common::smollm2())
        .arg("--vault")
        .arg(&vault)
        .args(["--temp", "0", "--ctx", "4096", "--max-tokens", "400"])
        .args(["--max-steps", "1"])
        .args(json.then_some("--json"))
        .arg(LONG_QUESTION)
        .env_remove("RECALL_VAULT")
        .env_remove("RECALL_MODEL")
        .env_remove("RECALL_ENGINE")
        .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
        .env("HF_HUB_OFFLINE", "1")
        .env("RUST_LOG", "warn,recall::prompt=debug");
    command
}

/// The run ended as stopped: exit 130 and `recall: stopped`. Returns its stdout.
fn assert_stopped(run: common::Watched) -> String {
    let (status, stdout, stderr) = run.finish();
    let both = format!(
        "stdout:\n{stdout}\nstderr (end):\n{}",
        common::tail(&stderr)
    );
    assert_eq!(status.code(), Some(130), "{both}");
    assert!(stderr.lines().any(|l| l == "recall: stopped"), "{both}");
    assert!(!stderr.contains("panicked"), "{both}");
    stdout
}

/// Ctrl-C right after the vault server started, before any prompt (the model may be loading):
/// the run stops with 130, and the server is ended with it, not left to notice its closed input.
/// The terminal closing (SIGHUP) and a polite kill (SIGTERM) stop it the same way.
#[test]
fn ctrl_c_before_the_first_prompt_stops_ask_and_ends_its_server() {
    use nix::sys::signal::Signal;
    for signal in [Signal::SIGINT, Signal::SIGHUP, Signal::SIGTERM] {
        let mut command = ask_command(false);
        command.env("RUST_LOG", "warn,recall::mcp=info");
        let mut run = common::Watched::spawn(command);
        run.wait_until("the server's start", |_, err| {
            err.contains("MCP server started")
        });
        let (_, stderr) = run.output();
        let server: u32 = stderr
            .split_once("pid=Some(")
            .and_then(|(_, rest)| rest.split_once(')'))
            .and_then(|(pid, _)| pid.parse().ok())
            .unwrap_or_else(|| panic!("no server pid in {stderr}"));
        run.signal(signal);
        let stdout = assert_stopped(run);
        assert_eq!(stdout, "", "{signal}: nothing was answered");
        assert!(
            !common::running(server),
            "{signal}: the vault server outlived recall"
        );
    }
}

#[test]
fn ctrl_c_while_ask_reads_the_decision_prompt_stops_it_with_130() {
    let mut command = ask_command(true);
    command.arg("--decide-first");
    let mut run = common::Watched::spawn(command);
    run.wait_until("the decision step", |_, err| {
        err.contains("decision prompt:")
    });
    run.interrupt();
    let stdout = assert_stopped(run);
    assert_eq!(stdout, "", "--json reports nothing for a stopped run");
}

#[test]
fn ctrl_c_while_the_answer_streams_stops_ask_with_130_and_no_sources() {
    let mut run = ask_watched(false);
    run.wait_until("the answer streaming", |out, _| !out.trim().is_empty());
    run.interrupt();
    let stdout = assert_stopped(run);
    // The cut answer is ended by a newline and is not presented as an answer with sources.
    assert!(stdout.ends_with('\n'), "{stdout:?}");
    assert!(!stdout.contains("Sources"), "{stdout}");
}

#[test]
fn ctrl_c_during_the_answer_of_a_json_ask_prints_no_report() {
    let mut run = ask_watched(true);
    run.wait_until("the answer step", |_, err| err.contains("answer prompt:"));
    run.interrupt();
    let stdout = assert_stopped(run);
    assert_eq!(stdout, "", "--json reports nothing for a stopped run");
}
