//! Shared helpers for the integration tests: where the real test models live.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_file(relative: &str, fetch_with: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    assert!(
        path.is_file(),
        "{} is missing: run `{fetch_with}` first (CI always does)",
        path.display()
    );
    path
}

/// SmolLM2-135M-Instruct Q4_1: the real model every engine test runs on.
pub fn smollm2() -> PathBuf {
    repo_file(
        "models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "scripts/fetch-test-model",
    )
}

/// The tiny random-weight GGUF with Llama 3.2's real vocabulary and special tokens.
pub fn tiny_llama3() -> PathBuf {
    repo_file(
        "models/tiny-llama3.gguf",
        "scripts/fetch-llama3-tokenizer && scripts/make-tiny-llama3-gguf",
    )
}

/// `mcp-server-time` from PyPI, a third-party MCP server.
pub fn time_server_bin() -> String {
    peer(".venv-peers/bin/mcp-server-time")
}

/// The entry script of `@modelcontextprotocol/server-everything` from npm (run with `node`).
pub fn everything_server_js() -> String {
    peer(".peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn peer(relative: &str) -> String {
    let path = repo_file(relative, "scripts/install-peers");
    path.to_str().expect("UTF-8 repo path").to_owned()
}

/// The fixture vault every end-to-end test runs on.
pub fn fixture_vault() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vault")
        .display()
        .to_string()
}

/// Runs the `recall` binary with no user config, no env defaults, the hub offline, and a prompt
/// cache of its own that is gone afterwards (never the user's).
pub fn recall(args: &[&str]) -> Output {
    let cache = tempfile::tempdir().expect("a temporary folder");
    Command::new(env!("CARGO_BIN_EXE_recall"))
        .args(args)
        .env_remove("RECALL_VAULT")
        .env_remove("RECALL_MODEL")
        .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
        .env("HF_HUB_OFFLINE", "1")
        .env("RECALL_PROMPT_CACHE_DIR", cache.path())
        .output()
        .expect("recall runs")
}
