//! `recall mcp-vault-server`: the bundled vault server (`obsidian-kb`), run as a child process
//! of this binary.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// How long the bundled server's searches wait for its first embedding pass: recall's first
/// question is asked right after the server starts, and a small or cached vault is embedded
/// well within this; a large vault's first pass is not waited for past it.
const VAULT_EMBEDDING_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// `recall mcp-vault-server`: the bundled vault server, as a child process of this binary.
pub fn mcp_vault_server(vault: PathBuf, embedding_model: Option<PathBuf>) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(obsidian_kb::serve_stdio(obsidian_kb::ServeOptions {
        embedding_model,
        embedding_wait: VAULT_EMBEDDING_WAIT,
        ..obsidian_kb::ServeOptions::new(vault)
    }))?;
    Ok(())
}
