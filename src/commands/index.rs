//! `recall index`: embeds the whole vault for search by meaning up front, with a progress bar,
//! through the vault server itself (the very index and vector cache the model commands use).
//! Stopped with Ctrl-C, the server keeps what it embedded and the next run goes on from there.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::{GlobalArgs, ServerArgs};
use crate::config::ConfigSource;
use crate::embedding::{self, Readiness};
use crate::engine::Cancelled;
use crate::session::{Interrupt, start_servers_on};

/// `recall index`: waits for every passage to have a vector, then prints one summary line (or,
/// with `--json`, the summary as JSON).
pub fn index(global: &GlobalArgs, servers: &ServerArgs) -> Result<()> {
    let started = Instant::now();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    // Before the servers start: a Ctrl-C must stop the wait, not kill recall, so that the
    // server is shut down properly and saves its vectors.
    let interrupt = Interrupt::install(&runtime);
    let (manager, config) = start_servers_on(&runtime, servers)?;
    let source = config.source;
    let readiness = embedding::prepare(&runtime, &manager, &interrupt.token(), None);
    // The server saves what it embedded as it stops.
    runtime.block_on(manager.shutdown());
    let (status, notes, embedded_now) = match readiness {
        Ok(Readiness::Ready {
            status,
            notes,
            embedded_now,
            ..
        }) => (status, notes, embedded_now),
        Ok(Readiness::WordsOnly) => bail!(
            "the vault server searches by words alone: there is no embedding model \
             (scripts/fetch-embedding-model puts the default in models/, or pass \
             --embedding-model)"
        ),
        Ok(Readiness::Failed(status)) => bail!(
            "embedding failed: {}",
            status.error.as_deref().unwrap_or("no reason given")
        ),
        Ok(Readiness::Pending(_)) => unreachable!("an unbounded wait ends ready or failed"),
        Err(Cancelled) => {
            eprintln!(
                "recall: stopped; what was embedded is kept, and `recall index` goes on from there"
            );
            return Err(Cancelled.into());
        }
    };
    let summary = IndexSummary {
        notes,
        passages: status.total,
        embedded_now,
        from_cache: status.total.saturating_sub(embedded_now),
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        model: status.model.unwrap_or_default(),
        // The bundled server caches where obsidian-kb does by default; a configured server
        // may have been told otherwise.
        cache_dir: match source {
            ConfigSource::BuiltIn => obsidian_kb::default_cache_dir(),
            ConfigSource::File(_) => None,
        },
    };
    let mut out = std::io::stdout().lock();
    if global.json {
        writeln!(out, "{}", serde_json::to_string(&summary)?)?;
    } else {
        writeln!(
            out,
            "{} notes, {} passages embedded for search by meaning ({} now, {} from the cache) \
             in {:.1} s with {}; {}",
            summary.notes,
            summary.passages,
            summary.embedded_now,
            summary.from_cache,
            summary.seconds,
            summary.model,
            match &summary.cache_dir {
                Some(dir) => format!("vectors cached in {}", dir.display()),
                None => "vectors cached where the configured server keeps them".into(),
            }
        )?;
    }
    Ok(())
}

/// What `recall index --json` prints.
#[derive(Serialize)]
struct IndexSummary {
    notes: usize,
    passages: usize,
    embedded_now: usize,
    from_cache: usize,
    seconds: f64,
    model: String,
    cache_dir: Option<PathBuf>,
}
