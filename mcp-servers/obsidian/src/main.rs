//! The `obsidian-kb` binary: serves one vault over MCP on stdio. Logs go to stderr.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// A read-only MCP server over an Obsidian vault (MCP on stdin/stdout, logs on stderr).
#[derive(Debug, Parser)]
#[command(name = "obsidian-kb", version)]
struct Args {
    /// The vault directory.
    #[arg(long, env = "OBSIDIAN_KB_VAULT")]
    vault: PathBuf,
    /// A GGUF embedding model (e.g. all-MiniLM-L6-v2) for search by meaning as well as by
    /// words: a path, or hf:OWNER/REPO/FILE.gguf from the shared Hugging Face cache (this
    /// server never downloads; `recall --embedding-model hf:…` or `huggingface-cli download`
    /// fetch it). Passages are embedded in the background; search is by words until then.
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
    let embedding_model = match args.embedding_model.filter(|_| !args.no_embeddings) {
        Some(name) => match model_file(&name) {
            Ok(path) => Some(path),
            Err(e) => {
                eprintln!("obsidian-kb: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let options = obsidian_kb::ServeOptions {
        vault: args.vault,
        embedding_model,
        cache_dir: args.cache_dir,
        embedding_wait: std::time::Duration::from_millis(args.embedding_wait_ms),
    };
    match obsidian_kb::serve_stdio(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("obsidian-kb: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--embedding-model`: a path, or `hf:OWNER/REPO/FILE.gguf` in the shared Hugging Face cache
/// (`HF_HOME`, `HF_HUB_CACHE`). Only looked up: a vault server has no business on the network.
fn model_file(name: &str) -> Result<PathBuf, String> {
    let Some(reference) = name.strip_prefix("hf:") else {
        return Ok(PathBuf::from(name));
    };
    let Some((repo, file)) = reference
        .split_once('/')
        .and_then(|(owner, rest)| {
            let (repo, file) = rest.split_once('/')?;
            Some((format!("{owner}/{repo}"), file))
        })
        .filter(|(repo, file)| !repo.starts_with('/') && !repo.ends_with('/') && !file.is_empty())
    else {
        return Err(format!(
            "bad embedding model reference '{name}': expected hf:OWNER/REPO/FILE.gguf"
        ));
    };
    hf_hub::Cache::from_env()
        .model(repo.clone())
        .get(file)
        .ok_or_else(|| {
            format!(
                "{repo}/{file} is not in the Hugging Face cache, and obsidian-kb never downloads: \
                 fetch it once with `recall tools --vault VAULT --embedding-model {name}` or \
                 `huggingface-cli download {repo} {file}`, or pass a path"
            )
        })
}
