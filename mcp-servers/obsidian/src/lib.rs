//! `obsidian-kb`: a read-only MCP server over an Obsidian vault.
//!
//! It indexes every note at start (in parallel), keeps the index current with a file watcher,
//! and serves five tools (`search_notes`, `list_notes`, `read_note`, `get_links`, `list_tags`)
//! plus every note as a `note://` resource. It never writes to the vault and never reads
//! outside it.
//!
//! ```no_run
//! # async fn run() -> Result<(), obsidian_kb::Error> {
//! obsidian_kb::serve_stdio(obsidian_kb::ServeOptions::new("/path/to/vault".into())).await
//! # }
//! ```
#![deny(missing_docs)]

pub mod api;
pub mod dates;
pub mod embed;
pub mod excerpt;
pub mod frontmatter;
pub mod gguf_meta;
pub mod index;
pub mod language;
pub mod links;
pub mod models;
pub mod note;
mod passage_order;
pub mod resolve;
pub mod search;
pub mod semantic;
pub mod server;
pub mod tags;
pub mod vault;
pub mod vectors;
pub mod watch;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub use index::{BuildStats, SharedIndex, VaultIndex};
pub use semantic::{Semantic, SemanticOptions};
pub use server::KbServer;
pub use vault::Vault;

/// Why the server could not start, or why its session ended in error. The texts never name an
/// absolute path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The vault folder does not exist or cannot be read.
    #[error("vault directory cannot be opened: {0}")]
    VaultUnreadable(std::io::Error),
    /// The vault path names something other than a folder.
    #[error("vault path is not a directory")]
    VaultNotADirectory,
    /// Indexing stopped on a bug (a panic in a parser thread).
    #[error("indexing the vault failed: {0}")]
    Indexing(String),
    /// The embedding model named is no GGUF model (a missing file, or some other file).
    #[error("the embedding model cannot be used: {0}")]
    EmbeddingModel(std::io::Error),
    /// The file watcher could not start.
    #[error("{0}")]
    Watch(String),
    /// The MCP session failed (the transport broke, or the client broke the protocol).
    #[error("MCP session failed: {0}")]
    Session(String),
}

/// What to serve and how.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The vault folder.
    pub vault: PathBuf,
    /// A GGUF embedding model for search by meaning; `None`: search by words alone.
    pub embedding_model: Option<PathBuf>,
    /// Where to cache passage vectors; `None`: the platform cache folder
    /// (`$XDG_CACHE_HOME/obsidian-kb`, `~/.cache/obsidian-kb`).
    pub cache_dir: Option<PathBuf>,
    /// How long a search may wait for the first embedding pass over the vault before it
    /// answers by words alone (zero: never wait).
    pub embedding_wait: Duration,
}

impl ServeOptions {
    /// A vault served by words alone.
    pub fn new(vault: PathBuf) -> Self {
        ServeOptions {
            vault,
            embedding_model: None,
            cache_dir: None,
            embedding_wait: Duration::ZERO,
        }
    }
}

/// The platform's cache folder for this server (never inside a vault).
pub fn default_cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("obsidian-kb"))
}

/// Indexes the vault, then answers MCP on stdin/stdout until the client closes the connection.
/// With an embedding model, passages are embedded in the background and search turns hybrid
/// as they land. Logs go through `tracing` (the caller decides where; never stdout).
pub async fn serve_stdio(options: ServeOptions) -> Result<(), Error> {
    serve(options, Transport::Stdio).await
}

/// How a client reaches the server.
pub enum Transport {
    /// MCP on stdin/stdout, until the client closes stdin.
    Stdio,
    /// MCP Streamable HTTP at `/mcp` on an already bound listener (loopback: the caller
    /// refuses other addresses), until the token is cancelled.
    Http {
        /// Where to accept connections.
        listener: tokio::net::TcpListener,
        /// Browser origins allowed besides the loopback ones ([`server::HTTP_ORIGINS`]).
        extra_origins: Vec<String>,
        /// Cancelled to stop (Ctrl-C).
        shutdown: tokio_util::sync::CancellationToken,
    },
}

/// Indexes the vault, then answers MCP over `transport` until the client (stdio) or the
/// token (HTTP) ends it; the vectors this run embedded are saved for the next.
pub async fn serve(options: ServeOptions, transport: Transport) -> Result<(), Error> {
    if let Some(model) = &options.embedding_model {
        embed::check_model_file(model).map_err(Error::EmbeddingModel)?;
    }
    let index = open_index(options.vault).await?;
    let semantic = options.embedding_model.map(|model| {
        Semantic::start(
            index.clone(),
            SemanticOptions::new(model, options.cache_dir.or_else(default_cache_dir)),
        )
    });
    let _watcher = match watch::start(index.clone()) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!("file watching unavailable, the index will not follow changes: {e}");
            None
        }
    };
    let served = match transport {
        Transport::Stdio => {
            server::serve_stdio(index, semantic.clone(), options.embedding_wait).await
        }
        Transport::Http {
            listener,
            extra_origins,
            shutdown,
        } => {
            server::serve_http(
                index,
                semantic.clone(),
                options.embedding_wait,
                listener,
                extra_origins,
                shutdown,
            )
            .await
        }
    };
    if let Some(semantic) = semantic {
        // What this run embedded is kept for the next (the client allows a few seconds
        // between closing stdin and ending the process).
        let stopped = tokio::task::spawn_blocking(move || semantic.stop(SAVE_AT_EXIT)).await;
        if !matches!(stopped, Ok(true)) {
            tracing::warn!("this run's vectors could not be saved");
        }
    }
    served
}

/// How long the server waits at exit for the embedding job to finish its batch and save.
const SAVE_AT_EXIT: Duration = Duration::from_secs(2);

/// Opens and indexes a vault (off the async runtime's worker threads).
pub async fn open_index(vault: PathBuf) -> Result<SharedIndex, Error> {
    let vault = Vault::open(&vault)?;
    let (index, stats) = tokio::task::spawn_blocking(move || VaultIndex::build(vault))
        .await
        .map_err(|e| Error::Indexing(e.to_string()))?;
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
