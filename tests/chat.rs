//! `recall chat` end to end: the real binary on the real SmolLM2 model and the bundled vault
//! server, fed from a pipe (so plain lines, no line editor).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

#[test]
fn chat_keeps_a_conversation_across_turns_and_commands() {
    let model = common::smollm2();
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("s.json");
    let vault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vault");
    let mut child = Command::new(env!("CARGO_BIN_EXE_recall"))
        .args(["chat", "--model"])
        .arg(&model)
        .arg("--vault")
        .arg(&vault)
        .args(["--temp", "0", "--ctx", "4096", "--max-tokens", "48"])
        // One decision step per turn: the loop has its own tests, and debug llama.cpp is slow.
        .args(["--max-steps", "1"])
        .env_remove("RECALL_VAULT")
        .env_remove("RECALL_MODEL")
        .env("HF_HUB_OFFLINE", "1")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_STATE_HOME", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
