//! `recall mcp-vault-server`: the bundled vault server (`obsidian-kb`), run as a child process
//! of this binary.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// `recall mcp-vault-server`: the bundled vault server, as a child process of this binary.
pub fn mcp_vault_server(vault: PathBuf, embedding_model: Option<PathBuf>) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    // Its searches never wait for embedding: the model commands wait for it themselves, with
    // a progress bar, when little is left (`crate::embedding`).
    runtime.block_on(obsidian_kb::serve_stdio(obsidian_kb::ServeOptions {
        embedding_model,
        ..obsidian_kb::ServeOptions::new(vault)
    }))?;
    Ok(())
}
