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
//!
//! Events alone can miss changes: a folder moved away and made again under its old name within
//! one debounce (sync tools and `git checkout` do this) left the new folder unwatched, and a
//! storm of edits can overflow the kernel's queue. So a watch is keyed by the folder's identity
//! (device and inode), not only its path, and between events the thread **reconciles**: it
//! re-watches replaced folders, then compares every note's size and modification time with the
//! index and re-reads what differs ([`RECONCILE_EVERY`], stretched on large vaults so that it
//! never takes more than 2% of a core). Search converges to the files on disk, always.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use notify::event::ModifyKind;
use notify::{Config, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::index::{BuildStats, SharedIndex, VaultIndex};
use crate::vault::{self, Vault};

/// How long the vault must be quiet before changes are applied.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// The longest changes wait under a steady stream of edits.
pub const DEBOUNCE_MAX: Duration = Duration::from_secs(1);

/// How often a missing vault folder is looked for.
pub const RECHECK: Duration = Duration::from_millis(500);

/// How often, at most, the files on disk are compared with the index. A pass that takes longer
/// than 1/50 of this waits 50 times its own length before the next (a 10,000-note vault).
pub const RECONCILE_EVERY: Duration = Duration::from_secs(2);

type Events = Receiver<notify::Result<notify::Event>>;

/// A running watcher; dropping it stops watching (and ends its thread).
pub struct VaultWatcher {
    _watching: Arc<Mutex<Watching>>,
}

/// The notify watcher and the folders it watches (absolute; never logged or returned), each
/// with the identity of the folder that was there when it was watched.
struct Watching {
    watcher: RecommendedWatcher,
    dirs: BTreeMap<PathBuf, DirId>,
}

/// What tells one folder from another put at the same path: device and inode where there are
/// such; elsewhere every folder at a path counts as the same one (events alone then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirId(u64, u64);

impl DirId {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self(meta.dev(), meta.ino())
    }

    #[cfg(not(unix))]
    fn of(_meta: &std::fs::Metadata) -> Self {
        Self(0, 0)
    }

    /// The folder now at `path` (not through a symlink), if one is.
    fn at(path: &Path) -> Option<Self> {
        std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_dir())
            .map(|m| Self::of(&m))
    }
}

impl Watching {
    /// A fresh watcher feeding a fresh channel (a recovered vault starts over: the old
    /// watches may follow the folder wherever it was moved).
    fn new() -> notify::Result<(Self, Events)> {
        let (tx, rx) = channel();
        let watcher = RecommendedWatcher::new(tx, Config::default().with_follow_symlinks(false))?;
        let dirs = BTreeMap::new();
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
            if self.dirs.contains_key(path) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            match self.watcher.watch(path, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.dirs.insert(path.to_path_buf(), DirId::of(&meta));
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
            .take_while(|(d, _)| d.starts_with(dir))
            .map(|(d, _)| d.clone())
            .collect();
        for d in under {
            let _ = self.watcher.unwatch(&d);
            self.dirs.remove(&d);
        }
    }

    /// Forgets the watches of each of `dirs` (and below) that is gone or is now another folder
    /// than the one watched (moved away, and a new one made in its place). All are forgotten
    /// before anything is watched again: a watch names a folder by inode, so the folder moved
    /// away keeps its old watch under its old name, and watching it under its new name first
    /// would share that watch, which forgetting the old name then removes.
    fn forget_replaced<'a>(&mut self, dirs: impl IntoIterator<Item = &'a PathBuf>) {
        let replaced: Vec<&PathBuf> = dirs
            .into_iter()
            .filter(|d| {
                self.dirs
                    .get(*d)
                    .is_some_and(|watched| DirId::at(d) != Some(*watched))
            })
            .collect();
        for d in replaced {
            self.unwatch_tree(d);
        }
    }

    /// Brings the watches in line with the folders on disk: replaced or vanished folders
    /// forgotten, unwatched ones watched. Returns how many watches were added.
    fn resync(&mut self, vault: &Vault) -> usize {
        let all: Vec<PathBuf> = self.dirs.keys().cloned().collect();
        self.forget_replaced(&all);
        self.watch_tree(vault, vault.root())
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
    /// Returns whether the event was kept (it changes the index, or asks for a rescan).
    fn take(&mut self, vault: &Vault, ev: notify::Result<notify::Event>) -> bool {
        let ev = match ev {
            Ok(ev) => ev,
            Err(_) => {
                self.rescan = true;
                return true;
            }
        };
        let mut kept = ev.need_rescan();
        self.rescan |= kept;
        let (structural, metadata) = match ev.kind {
            EventKind::Access(_) => return kept,
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
                    kept = true;
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
                kept = true;
            }
        }
        kept
    }

    fn is_empty(&self) -> bool {
        self.paths.is_empty() && !self.rescan
    }
}

/// The watcher thread: debounce, then apply; and the missing-vault state.
fn run(index: SharedIndex, vault: Vault, watching: Weak<Mutex<Watching>>, mut rx: Events) {
    let root = vault.root().to_path_buf();
    let mut missing = false;
    let mut next_reconcile = Instant::now() + RECONCILE_EVERY;
    loop {
        let mut batch = Batch::default();
        if missing {
            match rx.recv_timeout(RECHECK) {
                Ok(ev) => {
                    batch.take(&vault, ev);
                }
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
        match rx.recv_timeout(next_reconcile.saturating_duration_since(Instant::now())) {
            Ok(ev) => {
                batch.take(&vault, ev);
            }
            Err(RecvTimeoutError::Timeout) if vault::unavailable(&root).is_none() => {
                let Some(took) = reconcile(&index, &vault, &watching) else {
                    return;
                };
                next_reconcile = Instant::now() + (took * 50).max(RECONCILE_EVERY);
                continue;
            }
            // The vault folder went with no event for it (unmounted): said below.
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if batch.is_empty() && root.is_dir() {
            continue;
        }
        // Quiet means no event the batch keeps: a client reading the vault (every tool call
        // lists its folder) must not hold changes back. Nor may endless edits: a batch is
        // applied after DEBOUNCE_MAX at the latest.
        let latest = Instant::now() + DEBOUNCE_MAX;
        let mut quiet_from = Instant::now() + DEBOUNCE;
        loop {
            let until = quiet_from.min(latest);
            match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(ev) => {
                    if batch.take(&vault, ev) {
                        quiet_from = Instant::now() + DEBOUNCE;
                    }
                }
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
        // Folders gone or replaced lose their watches first; then new folders (and those put
        // in the place of others) are watched before they are walked (by `refresh` below), so
        // a file created in one meanwhile is seen by one or the other.
        w.forget_replaced(&batch.paths);
        for p in &batch.paths {
            if DirId::at(p).is_some() {
                w.watch_tree(&vault, p);
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

/// Compares the folders and notes on disk with the watches and the index, and applies what the
/// events did not bring. Returns how long it took; `None` when the watcher was dropped.
fn reconcile(
    index: &SharedIndex,
    vault: &Vault,
    watching: &Weak<Mutex<Watching>>,
) -> Option<Duration> {
    let t0 = Instant::now();
    let current = watching.upgrade()?;
    let watched = current
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .resync(vault);
    drop(current);
    // Walked without the lock: tools keep answering meanwhile.
    let walk = vault.walk();
    let stale = index
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .out_of_date(&walk);
    if !stale.is_empty() {
        let mut idx = index.write().unwrap_or_else(|p| p.into_inner());
        for rel in &stale {
            idx.refresh(rel);
        }
        drop(idx);
        tracing::info!(
            changed = stale.len(),
            folders = watched,
            "the vault was compared with the index and the differences re-read"
        );
    }
    Some(t0.elapsed())
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
