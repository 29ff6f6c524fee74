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
    match obsidian_kb::serve_stdio(args.vault).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("obsidian-kb: {e:#}");
            ExitCode::FAILURE
        }
    }
}
