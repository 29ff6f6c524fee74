//! One function per command: each takes the parsed flags, does its job, and writes the result
//! to stdout (the answer) or stderr (progress, logs).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::cli::{GlobalArgs, ModelArgs};
use crate::engine::catalog::{self, CatalogError};
use crate::engine::llama::{BenchOptions, Engine, LoadOptions};

/// Resolves `--model` to a file (downloading if needed) and loads it.
pub fn load_model(args: &ModelArgs) -> Result<Engine> {
    let progress = std::io::stderr().is_terminal();
    let path = match (
        catalog::resolve_model(&args.model, progress),
        &args.fallback_model,
    ) {
        (
            Err(err @ (CatalogError::Download { .. } | CatalogError::NotCached { .. })),
            Some(fallback),
        ) => {
            tracing::warn!("{err}; using {fallback} instead");
            eprintln!(
                "recall: {} is not available offline; using {fallback}",
                args.model
            );
            catalog::resolve_model(fallback, progress)?
        }
        (result, _) => result?,
    };
    let engine = Engine::load(
        &path,
        &LoadOptions {
            gpu_layers: args.gpu_layers,
            progress,
        },
    )?;
    tracing::info!(
        model = %engine.info().name,
        path = %path.display(),
        "model loaded"
    );
    Ok(engine)
}

/// `recall bench`: pp/tg tokens per second, mean ± sd, like `llama-bench`.
pub fn bench(
    global: &GlobalArgs,
    args: &ModelArgs,
    n_prompt: usize,
    n_gen: usize,
    repetitions: usize,
) -> Result<()> {
    let engine = load_model(args)?;
    let report = engine.bench(&BenchOptions {
        n_prompt,
        n_gen,
        repetitions: repetitions.max(1),
        threads: args.threads,
    })?;
    let mut out = std::io::stdout().lock();
    if global.json {
        let json = serde_json::json!({
            "model": engine.info().name,
            "threads": report.threads,
            "pp": {"tokens": report.pp.tokens, "tok_s": report.pp.mean, "sd": report.pp.sd},
            "tg": {"tokens": report.tg.tokens, "tok_s": report.tg.mean, "sd": report.tg.sd},
        });
        writeln!(out, "{json}")?;
        return Ok(());
    }
    let info = engine.info();
    writeln!(
        out,
        "| model | size | params | threads | test | t/s |\n| --- | ---: | ---: | ---: | ---: | ---: |"
    )?;
    for (name, t) in [("pp", &report.pp), ("tg", &report.tg)] {
        if t.tokens == 0 {
            continue;
        }
        writeln!(
            out,
            "| {} | {:.2} MiB | {:.2} M | {} | {}{} | {:.2} ± {:.2} |",
            info.name,
            info.size_bytes as f64 / (1024.0 * 1024.0),
            info.n_params as f64 / 1e6,
            report.threads,
            name,
            t.tokens,
            t.mean,
            t.sd
        )?;
    }
    Ok(())
}

/// `recall models`: the catalog and where each model would come from.
pub fn models() -> Result<()> {
    let mut out = std::io::stdout().lock();
    for (alias, entry) in catalog::catalog() {
        let local = catalog::local_model_dirs()
            .into_iter()
            .map(|d| d.join(&entry.file))
            .find(|p| p.is_file());
        let cached = hf_cached(&entry.repo, &entry.file);
        let place = match (local, cached) {
            (Some(p), _) => format!("local: {}", p.display()),
            (None, Some(_)) => "in the Hugging Face cache".to_string(),
            (None, None) => format!("downloads from hf:{}/{}", entry.repo, entry.file),
        };
        let default = if alias == catalog::DEFAULT_MODEL {
            " (default)"
        } else {
            ""
        };
        writeln!(
            out,
            "{alias}{default}\n    {}\n    {place}",
            entry.description
        )?;
    }
    Ok(())
}

fn hf_cached(repo: &str, file: &str) -> Option<PathBuf> {
    hf_hub::Cache::from_env().model(repo.to_string()).get(file)
}

/// `recall mcp-vault-server`: the bundled vault server, as a child process of this binary.
pub fn mcp_vault_server(vault: PathBuf) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(obsidian_kb::serve_stdio(vault))
}
