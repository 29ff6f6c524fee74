//! Keeps the index current: each of the vault's own folders is watched on its own (never
//! through a symlink, never a hidden folder), and a thread waits for a quiet moment (debounce)
//! after changes, then re-reads just the changed paths.
//!
//! Why not notify's recursive mode: it follows symlinked folders (`ln -s /usr` in a vault made
//! 15,000 watches and fed file names from outside the vault into the index) and gives up on
//! the whole vault, naming it by absolute path, when one folder cannot be read. Here an
//! unreadable folder is skipped with a vault-relative warning.
//!
//! When the vault folder itself disappears (deleted, moved, unmounted) the server answers with
//! an error (see `server.rs`) and this thread looks for the folder every [`RECHECK`]; once it is
//! back, it is watched afresh and re-indexed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use notify::event::ModifyKind;
use notify::{Config, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::index::{BuildStats, SharedIndex, VaultIndex};
use crate::vault::{self, Vault};

/// How long the vault must be quiet before changes are applied.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// How often a missing vault folder is looked for.
pub const RECHECK: Duration = Duration::from_millis(500);

type Events = Receiver<notify::Result<notify::Event>>;

/// A running watcher; dropping it stops watching (and ends its thread).
pub struct VaultWatcher {
    _watching: Arc<Mutex<Watching>>,
}

/// The notify watcher and the folders it watches (absolute; never logged or returned).
struct Watching {
    watcher: RecommendedWatcher,
    dirs: BTreeSet<PathBuf>,
}

impl Watching {
    /// A fresh watcher feeding a fresh channel (a recovered vault starts over: the old
    /// watches may follow the folder wherever it was moved).
    fn new() -> notify::Result<(Self, Events)> {
        let (tx, rx) = channel();
        let watcher = RecommendedWatcher::new(tx, Config::default().with_follow_symlinks(false))?;
        let dirs = BTreeSet::new();
        Ok((Self { watcher, dirs }, rx))
    }

    /// Watches `dir` and every real, non-hidden folder under it that is not watched yet;
    /// returns how many watches were added. Symlinks are never followed; a folder that cannot
    /// be watched is skipped with a warning that names it vault-relative.
    fn watch_tree(&mut self, vault: &Vault, dir: &Path) -> usize {
        let mut added = 0;
        let walker = walkdir::WalkDir::new(dir)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| {
                e.file_type().is_dir()
                    && (e.depth() == 0 || !e.file_name().to_str().is_some_and(hidden_name))
            });
        for entry in walker {
            // A folder that cannot be listed was already reported when watching it failed.
            let Ok(entry) = entry else { continue };
            let path = entry.path();
            if self.dirs.contains(path) {
                continue;
            }
            match self.watcher.watch(path, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.dirs.insert(path.to_path_buf());
                    added += 1;
                }
                Err(e) => {
                    let limit = matches!(e.kind, notify::ErrorKind::MaxFilesWatch);
                    tracing::warn!(
                        folder = %display_rel(vault, path),
                        "not watched, changes in it are not seen: {}",
                        reason(&e)
                    );
                    if limit {
                        break;
                    }
                }
            }
        }
        added
    }

    /// Forgets the watches on `dir` and below (gone, or moved out of the vault: its watches
    /// would report the new place's files under the old names).
    fn unwatch_tree(&mut self, dir: &Path) {
        let under: Vec<PathBuf> = self
            .dirs
            .range(dir.to_path_buf()..)
            .take_while(|d| d.starts_with(dir))
            .cloned()
            .collect();
        for d in under {
            let _ = self.watcher.unwatch(&d);
            self.dirs.remove(&d);
        }
    }
}

/// Dot-folders (`.obsidian`, `.git`, `.trash`) are not part of the vault; not watched.
fn hidden_name(name: &str) -> bool {
    name.starts_with('.')
}

/// A folder's name for a log line: vault-relative, lossy, `.` for the root.
fn display_rel(vault: &Vault, path: &Path) -> String {
    match path.strip_prefix(vault.root()) {
        Ok(p) if p.as_os_str().is_empty() => ".".into(),
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(_) => "(outside the vault)".into(),
    }
}

/// Why a watch failed, without notify's text (which names absolute paths).
fn reason(e: &notify::Error) -> String {
    match &e.kind {
        notify::ErrorKind::Io(io) => format!("{:?}", io.kind()),
        notify::ErrorKind::PathNotFound => "it vanished".into(),
        notify::ErrorKind::MaxFilesWatch => {
            "the limit on watches is reached (raise fs.inotify.max_user_watches)".into()
        }
        notify::ErrorKind::WatchNotFound => "no such watch".into(),
        notify::ErrorKind::InvalidConfig(_) => "invalid configuration".into(),
        notify::ErrorKind::Generic(_) => "watcher error".into(),
    }
}

/// Starts watching; the returned watcher stops when dropped.
pub fn start(index: SharedIndex) -> Result<VaultWatcher, crate::Error> {
    let vault = index
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .vault()
        .clone();
    let (mut watching, rx) = Watching::new().map_err(|e| crate::Error::Watch(reason(&e)))?;
    let watches = watching.watch_tree(&vault, vault.root());
    if watches == 0 {
        return Err(crate::Error::Watch(
            "the vault folder cannot be watched".into(),
        ));
    }
    tracing::debug!(folders = watches, "watching the vault");
    let watching = Arc::new(Mutex::new(watching));
    let weak = Arc::downgrade(&watching);
    std::thread::Builder::new()
        .name("vault-watch".into())
        .spawn(move || run(index, vault, weak, rx))
        .map_err(|e| crate::Error::Watch(format!("cannot start the watcher thread: {e}")))?;
    Ok(VaultWatcher {
        _watching: watching,
    })
}

/// Changed paths collected over one debounce window.
#[derive(Default)]
struct Batch {
    paths: BTreeSet<PathBuf>,
    rescan: bool,
}

impl Batch {
    /// Keeps what can change the index: anything happening to a note, files and folders
    /// appearing, disappearing or renamed, and folders whose permissions changed. Reads
    /// (`open`/`close`) and writes to other files are dropped here, so a log file kept in the
    /// vault (this server's own stderr, say) does not wake the indexer on every line.
    fn take(&mut self, vault: &Vault, ev: notify::Result<notify::Event>) {
        let ev = match ev {
            Ok(ev) => ev,
            Err(_) => {
                self.rescan = true;
                return;
            }
        };
        if ev.need_rescan() {
            self.rescan = true;
        }
        let (structural, metadata) = match ev.kind {
            EventKind::Access(_) => return,
            EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any) => (false, false),
            EventKind::Modify(ModifyKind::Metadata(_)) => (false, true),
            _ => (true, false),
        };
        // The root's own watch reports it deleted or moved away (its folder is gone, or was
        // replaced); a touch or chmod of it changes nothing.
        let root_gone = matches!(
            ev.kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        );
        for p in ev.paths {
            if p == vault.root() {
                if root_gone {
                    self.paths.insert(p);
                }
                continue;
            }
            // Outside the vault, non-UTF-8, or hidden: not the index's business.
            let Some(rel) = vault.rel_of(&p) else {
                continue;
            };
            if vault::is_hidden_rel(&rel) {
                continue;
            }
            let keep = structural
                || vault::is_note_rel(&rel)
                || (metadata && std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()));
            if keep {
                self.paths.insert(p);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.paths.is_empty() && !self.rescan
    }
}

/// The watcher thread: debounce, then apply; and the missing-vault state.
fn run(index: SharedIndex, vault: Vault, watching: Weak<Mutex<Watching>>, mut rx: Events) {
    let root = vault.root().to_path_buf();
    let mut missing = false;
    loop {
        let mut batch = Batch::default();
        if missing {
            match rx.recv_timeout(RECHECK) {
                Ok(ev) => batch.take(&vault, ev),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            if watching.strong_count() == 0 {
                return;
            }
            if !root.is_dir() {
                continue;
            }
            let Some(new_rx) = restart(&index, &vault, &watching) else {
                return;
            };
            rx = new_rx;
            missing = false;
            continue;
        }
        match rx.recv() {
            Ok(ev) => batch.take(&vault, ev),
            Err(_) => return,
        }
        if batch.is_empty() {
            continue;
        }
        loop {
            match rx.recv_timeout(DEBOUNCE) {
                Ok(ev) => batch.take(&vault, ev),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        if !root.is_dir() {
            tracing::error!(
                "the vault folder is missing (deleted, moved or unmounted); tools answer with an error until it is back"
            );
            missing = true;
            continue;
        }
        if batch.paths.contains(&root) {
            // The root was replaced (deleted or moved, and something put back in its place
            // within one debounce): its watches are gone or point elsewhere; start over.
            let Some(new_rx) = restart(&index, &vault, &watching) else {
                return;
            };
            rx = new_rx;
            continue;
        }
        let Some(current) = watching.upgrade() else {
            return;
        };
        let mut w = current.lock().unwrap_or_else(|p| p.into_inner());
        if batch.rescan {
            w.watch_tree(&vault, &root);
            drop(w);
            drop(current);
            let stats = rebuild(&index, &vault);
            tracing::info!(notes = stats.notes, "vault rescanned after lost events");
            continue;
        }
        // New folders are watched before they are walked (by `refresh` below), so a file
        // created in one meanwhile is seen by one or the other.
        for p in &batch.paths {
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => {
                    w.watch_tree(&vault, p);
                }
                Ok(_) => {}
                Err(_) => w.unwatch_tree(p),
            }
        }
        drop(w);
        drop(current);
        let mut idx = index.write().unwrap_or_else(|p| p.into_inner());
        let rels: BTreeSet<String> = batch.paths.iter().filter_map(|p| idx.rel_of(p)).collect();
        for rel in &rels {
            idx.refresh(rel);
        }
        // Debug, not info: with stderr kept in the vault, an info line per change would be a
        // change of its own.
        tracing::debug!(
            changed = rels.len(),
            notes = idx.len(),
            "vault changes applied"
        );
    }
}

/// Watches the vault afresh and rebuilds the index (the vault folder is back after going
/// missing, or was replaced). `None` when the watcher was dropped meanwhile or cannot be made.
fn restart(index: &SharedIndex, vault: &Vault, watching: &Weak<Mutex<Watching>>) -> Option<Events> {
    let shared = watching.upgrade()?;
    let (mut fresh, rx) = match Watching::new() {
        Ok(w) => w,
        Err(e) => {
            tracing::error!("file watching stopped: {}", reason(&e));
            return None;
        }
    };
    fresh.watch_tree(vault, vault.root());
    // The old watcher goes with its watches, wherever the old folder went.
    *shared.lock().unwrap_or_else(|p| p.into_inner()) = fresh;
    drop(shared);
    let stats = rebuild(index, vault);
    tracing::info!(notes = stats.notes, "the vault folder is back; re-indexed");
    Some(rx)
}

/// Builds a fresh index without holding the lock (tools keep answering from the old one
/// meanwhile), then swaps it in.
fn rebuild(index: &SharedIndex, vault: &Vault) -> BuildStats {
    let (fresh, stats) = VaultIndex::build(vault.clone());
    *index.write().unwrap_or_else(|p| p.into_inner()) = fresh;
    stats
}
