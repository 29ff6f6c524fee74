//! Keeps the index current: a `notify` watcher on the vault root feeds changed paths to a
//! thread that waits for a quiet moment (debounce), then re-reads just those paths.

use std::collections::BTreeSet;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};

use crate::server::SharedIndex;

/// How long the vault must be quiet before changes are applied.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// Starts watching; the returned watcher stops when dropped.
pub fn start(index: SharedIndex) -> anyhow::Result<notify::RecommendedWatcher> {
    let root = index
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .vault()
        .root()
        .to_path_buf();
    let (tx, rx) = channel::<notify::Result<notify::Event>>();
    let mut watcher = notify::recommended_watcher(tx)?;
    watcher.watch(&root, RecursiveMode::Recursive)?;
    std::thread::Builder::new()
        .name("vault-watch".into())
        .spawn(move || {
            loop {
                let first = match rx.recv() {
                    Ok(ev) => ev,
                    Err(_) => return,
                };
                let mut paths = BTreeSet::new();
                let mut rescan = false;
                let mut take = |ev: notify::Result<notify::Event>| match ev {
                    Ok(ev) => {
                        if ev.need_rescan() {
                            rescan = true;
                        }
                        if !matches!(ev.kind, EventKind::Access(_)) {
                            paths.extend(ev.paths);
                        }
                    }
                    Err(_) => rescan = true,
                };
                take(first);
                loop {
                    match rx.recv_timeout(DEBOUNCE) {
                        Ok(ev) => take(ev),
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                let mut idx = index.write().unwrap_or_else(|p| p.into_inner());
                if rescan {
                    let stats = idx.rebuild();
                    tracing::info!(notes = stats.notes, "vault rescanned after lost events");
                    continue;
                }
                let rels: BTreeSet<String> = paths.iter().filter_map(|p| idx.rel_of(p)).collect();
                if rels.is_empty() {
                    continue;
                }
                for rel in &rels {
                    idx.refresh(rel);
                }
                tracing::info!(
                    changed = rels.len(),
                    notes = idx.len(),
                    "vault changes applied"
                );
            }
        })?;
    Ok(watcher)
}
