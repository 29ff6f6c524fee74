//! `obsidian-kb`: a read-only MCP server over an Obsidian vault.
//!
//! It indexes every note at start (in parallel), keeps the index current with a file watcher,
//! and serves five tools (`search_notes`, `list_notes`, `read_note`, `get_links`, `list_tags`)
//! plus every note as a `note://` resource. It never writes to the vault and never reads
//! outside it.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! obsidian_kb::serve_stdio("/path/to/vault".into()).await
//! # }
//! ```
#![deny(missing_docs)]

pub mod api;
pub mod frontmatter;
pub mod index;
pub mod links;
pub mod note;
pub mod resolve;
pub mod search;
pub mod server;
pub mod tags;
pub mod vault;
pub mod watch;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

pub use index::{BuildStats, VaultIndex};
pub use server::{KbServer, SharedIndex};
pub use vault::Vault;

/// Indexes `vault`, then answers MCP on stdin/stdout until the client closes the connection.
/// Logs go through `tracing` (the caller decides where; never stdout).
pub async fn serve_stdio(vault: PathBuf) -> anyhow::Result<()> {
    let index = open_index(vault).await?;
    let _watcher = match watch::start(index.clone()) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!("file watching unavailable, the index will not follow changes: {e}");
            None
        }
    };
    server::serve_stdio(index).await
}

/// Opens and indexes a vault (off the async runtime's worker threads).
pub async fn open_index(vault: PathBuf) -> anyhow::Result<SharedIndex> {
    let vault = Vault::open(&vault)?;
    let (index, stats) = tokio::task::spawn_blocking(move || VaultIndex::build(vault)).await?;
    tracing::info!(
        notes = stats.notes,
        attachments = stats.attachments,
        skipped = stats.skipped,
        bytes = stats.bytes,
        ms = stats.elapsed.as_millis() as u64,
        "vault indexed"
    );
    Ok(Arc::new(RwLock::new(index)))
}
