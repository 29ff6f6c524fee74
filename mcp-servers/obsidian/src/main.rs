//! The `obsidian-kb` binary: serves one vault over MCP on stdio, or over Streamable HTTP with
//! `--http`. Logs go to stderr.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use obsidian_kb::models::{self, ModelName};

/// A read-only MCP server over an Obsidian vault (MCP on stdin/stdout, or Streamable HTTP with
/// --http; logs on stderr).
#[derive(Debug, Parser)]
#[command(name = "obsidian-kb", version)]
struct Args {
    /// The vault directory.
    #[arg(long, env = "OBSIDIAN_KB_VAULT")]
    vault: PathBuf,
    /// A GGUF embedding model for search by meaning as well as by words: a path, an alias
    /// (bge-small-en-v1.5, granite-embedding-multilingual) or hf:OWNER/REPO/FILE.gguf, from
    /// the shared Hugging Face cache (this server never downloads; `recall --embedding-model`
    /// or `huggingface-cli download` fetch it). Default: the model `recall` gives its bundled
    /// server, from a local models folder ($RECALL_MODELS_DIR, else ./models or the source
    /// tree's), else bge-small-en-v1.5 when it is cached, else search by words alone. Passages
    /// are embedded in the background; search is by words until then.
    #[arg(long, env = "OBSIDIAN_KB_EMBEDDING_MODEL", value_name = "GGUF")]
    embedding_model: Option<String>,
    /// Search by words alone, even when an embedding model is configured.
    #[arg(long)]
    no_embeddings: bool,
    /// Where to cache passage vectors (default: the platform cache folder, e.g.
    /// ~/.cache/obsidian-kb). Never inside the vault.
    #[arg(long, env = "OBSIDIAN_KB_CACHE_DIR", value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// How long a search may wait for the vault's first embedding pass before answering by
    /// words alone (a small or cached vault is ready in a second or two).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    embedding_wait_ms: u64,
    /// Serve MCP over Streamable HTTP at http://HOST:PORT/mcp instead of stdio, until Ctrl-C.
    /// Loopback only (127.0.0.1:PORT, localhost:PORT, [::1]:PORT; port 0 picks a free one):
    /// the server has no authentication.
    #[arg(long, value_name = "HOST:PORT")]
    http: Option<String>,
    /// Also allow browser requests from this origin over --http (pages on this machine
    /// always may).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
                // notify's own log lines name absolute paths (a watch it could not remove
                // after a folder was deleted); the watcher reports what matters itself.
                .add_directive("notify=off".parse().expect("a valid directive")),
        )
        .init();
    let embedding_model = match args.embedding_model {
        _ if args.no_embeddings => None,
        Some(name) => match model_file(&name) {
            Ok(path) => Some(path),
            Err(e) => {
                eprintln!("obsidian-kb: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => default_model_file(&args.vault),
    };
    match &embedding_model {
        Some(path) => tracing::info!(
            "search by words and by meaning, with {}",
            path.file_name().unwrap_or_default().to_string_lossy()
        ),
        None if args.no_embeddings => tracing::info!("search by words alone (--no-embeddings)"),
        None => {}
    }
    let options = obsidian_kb::ServeOptions {
        vault: args.vault,
        embedding_model,
        cache_dir: args.cache_dir,
        embedding_wait: std::time::Duration::from_millis(args.embedding_wait_ms),
    };
    let transport = match &args.http {
        None => obsidian_kb::Transport::Stdio,
        Some(address) => match http_transport(address, args.allow_origin).await {
            Ok(transport) => transport,
            Err(e) => {
                eprintln!("obsidian-kb: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    match obsidian_kb::serve(options, transport).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("obsidian-kb: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--http HOST:PORT`: binds a loopback address, says where on stderr (the line a client or a
/// script waits for), and stops on Ctrl-C.
async fn http_transport(
    address: &str,
    extra_origins: Vec<String>,
) -> Result<obsidian_kb::Transport, String> {
    let addresses: Vec<std::net::SocketAddr> = tokio::net::lookup_host(address)
        .await
        .map_err(|e| format!("--http {address}: {e} (expected HOST:PORT, e.g. 127.0.0.1:8808)"))?
        .collect();
    let Some(first) = addresses.first() else {
        return Err(format!("--http {address} resolves to no address"));
    };
    if !addresses.iter().all(|a| a.ip().is_loopback()) {
        return Err(format!(
            "--http {address} is not a loopback address: obsidian-kb has no authentication, \
             so it serves this machine only (put a proxy with authentication in front of it \
             to reach it from elsewhere)"
        ));
    }
    let listener = tokio::net::TcpListener::bind(first)
        .await
        .map_err(|e| format!("cannot listen on {first}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.cancel();
        }
    });
    eprintln!("obsidian-kb: serving MCP (Streamable HTTP) at http://{bound}/mcp; Ctrl-C stops");
    Ok(obsidian_kb::Transport::Http {
        listener,
        extra_origins,
        shutdown,
    })
}

/// `--embedding-model`: a path, an alias of `obsidian_kb::models`, or
/// `hf:OWNER/REPO/FILE.gguf`; a hub file is looked up in the shared Hugging Face cache
/// (`HF_HOME`, `HF_HUB_CACHE`) only: a vault server has no business on the network.
fn model_file(name: &str) -> Result<PathBuf, String> {
    let (repo, file) = match models::parse_model_name(name)? {
        ModelName::Path(path) => return Ok(path),
        ModelName::Hub { repo, file } => (repo, file),
    };
    cached(&repo, &file).ok_or_else(|| {
        format!(
            "{repo}/{file} is not in the Hugging Face cache, and obsidian-kb never downloads: \
             fetch it once with `recall tools --vault VAULT --embedding-model {name}` or \
             `huggingface-cli download {repo} {file}`, or pass a path"
        )
    })
}

/// With no `--embedding-model`: the model recall gives its bundled server for this vault's
/// language, from a local models folder ([`models::find_local`]), so that a vault searches
/// alike from any client; else the default alias when the shared Hugging Face cache has it;
/// else none (search by words, and a line on stderr saying how to search by meaning).
fn default_model_file(vault: &std::path::Path) -> Option<PathBuf> {
    let language = obsidian_kb::Vault::open(vault)
        .ok()
        .and_then(|vault| vault.language());
    if let Some(found) = models::find_local(language) {
        return Some(found);
    }
    let default = models::known(models::DEFAULT_MODEL)?;
    let found = cached(default.repo, default.file);
    if found.is_none() {
        tracing::info!(
            "search by words alone: no --embedding-model, no {} in a local models folder \
             ($RECALL_MODELS_DIR, ./models, or the Recall source tree's, where its \
             scripts/setup puts it), and the default ({}) is not in the Hugging Face cache \
             (`huggingface-cli download {} {}` fetches it)",
            models::local_files(language)[0],
            default.alias,
            default.repo,
            default.file
        );
    }
    found
}

fn cached(repo: &str, file: &str) -> Option<PathBuf> {
    hf_hub::Cache::from_env().model(repo.to_string()).get(file)
}
