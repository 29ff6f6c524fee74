//! `recall chat` end to end: the real binary on the real SmolLM2 model and the bundled vault
//! server, fed from a pipe (so plain lines, no line editor).

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// `recall chat` on the real SmolLM2 model and the fixture vault, greedy, one decision step
/// per turn (the loop has its own tests, and debug llama.cpp is slow), no configuration but
/// `flags`, its state under `state`, and every stream piped.
fn piped_chat(state: &Path, flags: &[&str]) -> Command {
    let vault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vault");
    let mut command = Command::new(env!("CARGO_BIN_EXE_recall"));
    command
        .args(["chat", "--model"])
        .arg(common::smollm2())
        .arg("--vault")
        .arg(&vault)
        .args(["--temp", "0", "--ctx", "4096", "--max-steps", "1"])
        .args(flags)
        .env_remove("RECALL_VAULT")
        .env_remove("RECALL_MODEL")
        .env_remove("RECALL_ENGINE")
        .env("HF_HUB_OFFLINE", "1")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

#[test]
fn chat_keeps_a_conversation_across_turns_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("s.json");
    let mut child = piped_chat(dir.path(), &["--max-tokens", "48"])
        .spawn()
        .expect("recall runs");
    let saved_path = saved.display();
    let script = [
        "What does the launch note say?",
        &format!("/save {saved_path}"),
        "/reset",
        &format!("/load {saved_path}"),
        "/tools",
        "/frobnicate",
        "Who is on the team?",
        "/quit",
        "not read: the chat has ended",
    ]
    .join("\n")
        + "\n";
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let both = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(out.status.success(), "{both}");
    assert!(!stderr.contains("panicked"), "{both}");

    let file: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(file["version"], 1);
    let messages = file["messages"].as_array().unwrap();
    assert!(messages.len() >= 4, "{file:#}");
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages[1]["content"], "What does the launch note say?");
    assert_eq!(messages.last().unwrap()["role"], "assistant");

    assert!(stdout.contains("search_notes"), "{both}");
    assert!(stderr.contains("loaded"), "{both}");
    assert!(stderr.contains("unknown command /frobnicate"), "{both}");
}

/// `recall chat` on a real terminal (a pseudo-terminal from `tests/pty_run.py`), the way a person
/// runs it: Ctrl-C is the byte 0x03 typed at the terminal, which the kernel turns into SIGINT
/// for the terminal's foreground process group. It must stop the turn running and nothing
/// else: the vault server recall started runs in a process group of its own, so the same server
/// process lives on and answers the next turn's search.
#[test]
fn ctrl_c_at_a_terminal_stops_one_turn_and_the_server_lives_on() {
    let model = common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new("python3");
    command
        .arg(root.join("tests/pty_run.py"))
        .arg(env!("CARGO_BIN_EXE_recall"))
        .args(["chat", "--model"])
        .arg(&model)
        .arg("--vault")
        .arg(root.join("tests/sample-vault"))
        .args(["--temp", "0", "--ctx", "4096", "--max-tokens", "200"])
        // A decision step in every turn: turn 1 is stopped while it reads its prompt.
        .args(["--max-steps", "1", "--decide-first"])
        .env_remove("RECALL_VAULT")
        .env_remove("RECALL_MODEL")
        .env_remove("RECALL_ENGINE")
        .env("HF_HUB_OFFLINE", "1")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_STATE_HOME", dir.path())
        .env("TERM", "xterm")
        // The prompt log's lines say where a turn is (they are written before each generation).
        .env("RUST_LOG", "warn,recall::prompt=debug")
        .stdin(Stdio::piped());
    let mut chat = common::Watched::spawn(command);
    let mut keyboard = chat.child.stdin.take().unwrap();
    let mut type_keys = |keys: &[u8]| {
        keyboard.write_all(keys).unwrap();
        keyboard.flush().unwrap();
    };

    chat.wait_until("the line editor's prompt", |out, _| out.contains("you> "));
    let (out, _) = chat.output();
    let recall: u32 = out
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid line in {out:?}"));
    let servers = common::children_running(recall, "mcp-vault-server");
    let [server] = servers[..] else {
        panic!("expected one vault server child of {recall}, found {servers:?}")
    };
    let recall_group = common::stat(recall).unwrap().pgrp;
    assert_ne!(common::stat(server).unwrap().pgrp, recall_group);

    // The terminal's output holds recall's stdout and stderr both; each turn is read from
    // where the output stood when its question was typed.
    let question = "What do my notes say about the biology midterm and how to prepare for it?";

    // Turn 1: Ctrl-C while the decision prompt is read.
    let start = chat.output().0.len();
    type_keys(format!("{question}\r").as_bytes());
    chat.wait_until("turn 1's decision step", |o, _| {
        o[start..].contains("decision prompt:")
    });
    type_keys(b"\x03");
    chat.wait_until("turn 1's end", |o, _| turn_ended(&o[start..]));
    assert_stopped(&chat.output().0[start..]);
    assert!(common::running(server), "the server died with turn 1");

    // Turn 2: Ctrl-C while the answer is being written.
    let start = chat.output().0.len();
    type_keys(format!("{question}\r").as_bytes());
    chat.wait_until("turn 2's answer step", |o, _| {
        o[start..].contains("answer prompt:")
    });
    type_keys(b"\x03");
    chat.wait_until("turn 2's end", |o, _| turn_ended(&o[start..]));
    assert_stopped(&chat.output().0[start..]);
    assert!(common::running(server), "the server died with turn 2");

    // Turn 3 runs to its end: its opening search went to the same server, so it has sources.
    let start = chat.output().0.len();
    type_keys(format!("{question}\r").as_bytes());
    chat.wait_until("turn 3's end", |o, _| turn_ended(&o[start..]));
    let (out, _) = chat.output();
    let turn3 = &out[start..];
    assert!(!turn3.contains("recall: "), "{}", common::tail(turn3));
    assert!(turn3.contains("Sources"), "{}", common::tail(turn3));
    assert!(turn3.contains("obsidian://open"), "{}", common::tail(turn3));
    assert_eq!(
        common::children_running(recall, "mcp-vault-server"),
        [server],
        "the same server process served every turn"
    );
    assert!(!out.contains("MCP server stopped"), "{out}");

    type_keys(b"/quit\r");
    let (status, out, _) = chat.finish();
    assert!(status.success(), "{out}");
    assert!(out.trim_end().ends_with("exit 0"), "{}", common::tail(&out));
    assert!(!out.contains("panicked"), "{}", common::tail(&out));
    // recall's shutdown ended the server before recall exited.
    assert!(!common::running(server), "the server outlived recall");
}

/// A turn's output ends with the next prompt after its sources, or after a `recall: ` line
/// (stopped, or an error).
fn turn_ended(output: &str) -> bool {
    ["Sources", "recall: "].iter().any(|end| {
        output
            .rsplit_once(end)
            .is_some_and(|(_, rest)| rest.contains("you> "))
    })
}

/// The turn was stopped: it said so, and showed no sources as if it had answered.
fn assert_stopped(turn: &str) {
    assert!(turn.contains("\nrecall: stopped"), "{}", common::tail(turn));
    assert!(!turn.contains("Sources"), "{}", common::tail(turn));
}
