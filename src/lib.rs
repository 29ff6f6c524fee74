//! Recall: a fully local agent for a private Obsidian vault.
//!
//! Data flows one way: question → [`prompt`] → [`engine`] (decode) → [`parse`] → route → MCP →
//! result → prompt. See `ARCHITECTURE.md` for the map.

pub mod tool;

/// Runs the command line; returns the process exit code.
pub fn run() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
