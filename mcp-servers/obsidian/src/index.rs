//! The in-memory vault index: every note's metadata, names, links, tags and search terms,
//! built in parallel at start and updated one file at a time afterwards.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Instant, SystemTime};

use crate::api;
use crate::dates::{self, NoteDateSources, NoteFormats, Period};
use crate::language::Language;
use crate::links::Link;
use crate::note::{self, ParsedNote};
use crate::resolve::{self, Names, NoteNames, RefError, Target};
use crate::search::{DocTerms, SearchIndex, Tokenizer};
use crate::tags;
use crate::vault::{self, FoundFile, Vault, VaultError};

mod ranked;

pub use ranked::{Hit, HitPassage, NoteFilter};

/// One indexed note.
#[derive(Debug)]
pub struct NoteEntry {
    /// On-disk vault-relative path (what is opened).
    pub rel: String,
    /// NFC vault-relative path without `.md`: the URI path.
    pub key: String,
    /// File name without `.md`, NFC.
    pub title: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Last modification time.
    pub modified: Option<SystemTime>,
    /// Parsed structure.
    pub parsed: ParsedNote,
    /// The full text at index time (search hits show passages of it).
    pub text: String,
    /// Title and aliases in comparison form (NFC, lowercase).
    folded_names: Vec<String>,
    /// The key in comparison form.
    folded_key: String,
    /// The days and periods the note is about (`dates::note_periods`), sorted.
    pub periods: Vec<Period>,
    /// Where in [`Self::text`] its properties passage stands, when it has one
    /// ([`properties_passage`]): found once, when the note is read.
    properties: Option<std::ops::Range<usize>>,
    /// Unique to this reading of the note: a re-read note gets a new one, so whoever keeps
    /// something derived from the note (its passage vectors) knows when to redo it.
    pub version: u64,
}

impl NoteEntry {
    /// The note's URI, `note://<key>`.
    pub fn uri(&self) -> String {
        format!("note://{}", self.key)
    }

    /// The note's URI percent-encoded (a valid RFC 3986 URI, for resources).
    pub fn resource_uri(&self) -> String {
        const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
            .remove(b'-')
            .remove(b'.')
            .remove(b'_')
            .remove(b'~')
            .remove(b'/');
        format!(
            "note://{}",
            percent_encoding::utf8_percent_encode(&self.key, KEEP)
        )
    }

    /// The folded folder of the note ("" at the root).
    fn folded_folder(&self) -> String {
        resolve::fold(self.key.rfind('/').map_or("", |i| &self.key[..i]))
    }

    /// The body (text after frontmatter).
    pub fn body(&self) -> &str {
        self.text.get(self.parsed.body_start..).unwrap_or("")
    }

    /// The note cut into passages (sections, long ones split, then its properties, last so
    /// that the note's opening stays its first passage), as search hits show them; each
    /// passage's range is in [`Self::text`].
    pub fn passages(&self) -> Vec<note::Passage> {
        let start = self.parsed.body_start;
        let body = note::passages(self.body(), &self.parsed.headings, api::PASSAGE_CHARS)
            .into_iter()
            .map(|p| note::Passage {
                range: p.range.start + start..p.range.end + start,
                ..p
            });
        let properties = self.properties.clone().map(|range| note::Passage {
            path: Vec::new(),
            range,
        });
        body.chain(properties).collect()
    }

    /// Whether the note's last passage is its properties.
    pub fn has_properties_passage(&self) -> bool {
        self.properties.is_some()
    }

    /// The heading path (without empty headings) and text of passage `p`.
    pub fn passage_parts(&self, p: &note::Passage) -> (Vec<String>, String) {
        let path = p
            .heading_path(&self.parsed.headings)
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .collect();
        (path, p.text(&self.text).to_string())
    }

    /// What is embedded for each passage: the title, the heading path and the text, so a
    /// section is found by what its note and headings say it is about. A note without body
    /// text gives one text, its title, so it can still be found by meaning.
    pub fn embedding_texts(&self) -> Vec<String> {
        let passages = self.passages();
        if passages.is_empty() {
            return vec![self.title.clone()];
        }
        let title = note::normalize_heading(&self.title);
        passages
            .iter()
            .map(|p| {
                let (path, text) = self.passage_parts(p);
                let mut s = self.title.clone();
                for h in path.iter().filter(|h| note::normalize_heading(h) != title) {
                    s.push_str(" › ");
                    s.push_str(h);
                }
                s.push('\n');
                s.push_str(&text);
                s
            })
            .collect()
    }

    fn names(&self) -> NoteNames<'_> {
        NoteNames {
            key: &self.key,
            title: &self.title,
            aliases: &self.parsed.frontmatter.aliases,
        }
    }
}

/// Counts from a full build.
#[derive(Debug, Default, Clone)]
pub struct BuildStats {
    /// Notes indexed.
    pub notes: usize,
    /// Attachments seen.
    pub attachments: usize,
    /// Files skipped.
    pub skipped: usize,
    /// Total note bytes.
    pub bytes: u64,
    /// Wall time.
    pub elapsed: std::time::Duration,
    /// Threads that read and parsed notes.
    pub threads: usize,
    /// Wall time of the walk (listing files).
    pub walk_elapsed: std::time::Duration,
    /// Wall time of the walk plus the parallel read/parse/tokenise phase (the rest is merging).
    pub parse_elapsed: std::time::Duration,
}

/// An outgoing link and what it resolves to.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The link as written.
    pub link: Link,
    /// What it points at.
    pub target: Target,
}

/// A note file the index left out (too large, binary, unparsable), as it was when that was
/// decided: a caller asking for it is told why, and it is read again only once it changes.
#[derive(Debug, Clone)]
pub struct SkippedNote {
    /// Size in bytes.
    pub bytes: u64,
    /// Last modification time.
    pub modified: Option<SystemTime>,
    /// Why it was left out (vault-relative wording, as [`VaultError`] writes it).
    pub reason: String,
}

/// The vault index.
#[derive(Debug)]
pub struct VaultIndex {
    vault: Vault,
    slots: Vec<Option<NoteEntry>>,
    /// Notes found on disk but left out, by on-disk relative path.
    skipped: HashMap<String, SkippedNote>,
    free: Vec<u32>,
    by_rel: HashMap<String, u32>,
    ordered: BTreeMap<(String, String), u32>,
    names: Names,
    search: SearchIndex,
    /// The language of most of the vault's text when the index was built: its search terms'
    /// stop words and stemmer ([`Tokenizer::for_language`]).
    language: Option<Language>,
    /// Bumped by every change of the notes, so a watcher of the index can tell cheaply
    /// whether anything changed since it last looked.
    generation: u64,
}

/// The shared, live index: the server reads it, the watcher updates it, the semantic job
/// embeds what changed in it.
pub type SharedIndex = Arc<RwLock<VaultIndex>>;

/// A note read and parsed off-lock, or why it could not be.
type Prepared = Result<(NoteEntry, DocTerms), (String, VaultError)>;

fn key_of(rel: &str) -> String {
    resolve::nfc(resolve::strip_md(rel))
}

fn prepare(
    vault: &Vault,
    f: FoundFile,
    tok: &mut Tokenizer,
) -> Result<(NoteEntry, DocTerms), VaultError> {
    let text = vault.read_note(&f.rel)?;
    let rel = f.rel.clone();
    // A parser panic on one odd file skips that file; it must not take the server down.
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        analyse(f, text, vault.note_formats(), tok)
    }))
    .map_err(|_| VaultError::Unparsable(rel))
}

/// Parses and tokenises one note's text.
fn analyse(
    f: FoundFile,
    text: String,
    formats: &NoteFormats,
    tok: &mut Tokenizer,
) -> (NoteEntry, DocTerms) {
    let parsed = note::parse(&text);
    let key = key_of(&f.rel);
    let title = key.rsplit('/').next().unwrap_or(&key).to_string();
    let title_field = format!("{title}\n{}", parsed.frontmatter.aliases.join("\n"));
    // Headings, plus the folder names: a note in `Templates/` is about templates.
    let mut headings: Vec<&str> = parsed.headings.iter().map(|h| h.text.as_str()).collect();
    headings.extend(
        key.rsplit_once('/')
            .map_or("", |(folder, _)| folder)
            .split('/'),
    );
    let tags_field = parsed.tags.join(" ").replace('/', " ");
    let body = text.get(parsed.body_start..).unwrap_or("");
    // Properties are shown as a passage but not searched as the note's words: counted in, a
    // help page's `description` moved word ranking on the holdout questions (keyword shown
    // 50 → 47 of 60), with no weight at all too, by their document frequencies alone.
    let terms = DocTerms::build(tok, [&title_field, &headings.join("\n"), &tags_field, body]);
    let periods = dates::note_periods(
        formats,
        &NoteDateSources {
            key: &key,
            properties: parsed.frontmatter.properties.as_ref(),
            body,
            headings: &headings[..parsed.headings.len()],
            modified: f.modified,
        },
    );
    static VERSIONS: AtomicU64 = AtomicU64::new(1);
    let mut folded_names = vec![resolve::fold(&title)];
    folded_names.extend(parsed.frontmatter.aliases.iter().map(|a| resolve::fold(a)));
    let properties = properties_passage(&text, &parsed);
    let entry = NoteEntry {
        properties,
        folded_key: resolve::fold(&key),
        folded_names,
        rel: f.rel,
        key,
        title,
        bytes: f.bytes,
        modified: f.modified,
        parsed,
        text,
        periods,
        version: VERSIONS.fetch_add(1, Ordering::Relaxed),
    };
    (entry, terms)
}

/// Properties that say how Obsidian shows or files a note rather than what it holds: a note
/// with only these has no properties passage (search has its aliases and tags already).
const INTERNAL_PROPERTIES: [&str; 8] = [
    "aliases",
    "alias",
    "tags",
    "tag",
    "cssclasses",
    "cssclass",
    "permalink",
    "publish",
];

/// Where the note's properties stand in `text`, as a passage of their own as written (the
/// YAML between the `---` lines): in a personal vault they hold much of what a note says (a day's mood, a book's
/// author, a task's due date). None when the note has no property beyond the internal ones.
fn properties_passage(text: &str, parsed: &ParsedNote) -> Option<std::ops::Range<usize>> {
    let properties = parsed.frontmatter.properties.as_ref()?;
    let says_something = properties.iter().any(|(key, value)| {
        !INTERNAL_PROPERTIES.contains(&key.to_lowercase().as_str())
            && !matches!(value, serde_json::Value::Null)
            && value.as_str() != Some("")
    });
    if !says_something {
        return None;
    }
    let (yaml, _) = crate::frontmatter::split(text);
    let yaml = yaml?;
    // `split` hands back a slice of `text`: its place is its distance from the start.
    let start = yaml.as_ptr() as usize - text.as_ptr() as usize;
    let trimmed = yaml.trim();
    let start = start + (yaml.len() - yaml.trim_start().len());
    (!trimmed.is_empty()).then(|| start..start + trimmed.len())
}

impl VaultIndex {
    /// Walks and indexes the whole vault, parsing notes on all cores.
    pub fn build(vault: Vault) -> (Self, BuildStats) {
        let t0 = Instant::now();
        let walk = vault.walk();
        let language = vault.language_of(&walk.notes);
        let walk_elapsed = t0.elapsed();
        for (rel, why) in &walk.skipped {
            tracing::info!(path = %rel, reason = why, "skipped");
        }
        // At least 4 threads even on 2 cores: with a cold page cache the reads wait on the disk,
        // and more readers overlap the waits (6,500 notes on 2 cores: 1.22 s -> 0.84 s).
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(4, 8);
        // Threads take the next file from a shared counter (file sizes vary too much for even
        // chunks); each keeps its own tokenizer, which the merge below needs back.
        let next = AtomicUsize::new(0);
        let per_thread: Vec<(Vec<(usize, Prepared)>, Tokenizer)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (vault, files, next) = (&vault, &walk.notes, &next);
                    s.spawn(move || {
                        let mut tok = Tokenizer::for_language(language);
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(f) = files.get(i) else { break };
                            let prepared =
                                prepare(vault, f.clone(), &mut tok).map_err(|e| (f.rel.clone(), e));
                            done.push((i, prepared));
                        }
                        (done, tok)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("an indexing thread panicked"))
                .collect()
        });
        // Insert in walk order, so that note numbers do not depend on thread timing.
        let mut tokenizers = Vec::with_capacity(per_thread.len());
        let mut ordered: Vec<Option<(usize, Prepared)>> = Vec::new();
        ordered.resize_with(walk.notes.len(), || None);
        for (t, (done, tok)) in per_thread.into_iter().enumerate() {
            tokenizers.push(tok);
            for (i, prepared) in done {
                ordered[i] = Some((t, prepared));
            }
        }
        let mut idx = Self {
            vault,
            slots: Vec::new(),
            skipped: HashMap::new(),
            free: Vec::new(),
            by_rel: HashMap::new(),
            ordered: BTreeMap::new(),
            names: Names::default(),
            search: SearchIndex::default(),
            language,
            generation: 0,
        };
        let parse_elapsed = t0.elapsed();
        let mut stats = BuildStats {
            threads,
            walk_elapsed,
            parse_elapsed,
            skipped: walk.skipped.len(),
            ..Default::default()
        };
        for (i, slot) in ordered.into_iter().enumerate() {
            let Some((t, prepared)) = slot else { continue };
            match prepared {
                Ok((entry, terms)) => {
                    stats.bytes += entry.bytes;
                    idx.insert(entry, terms, &mut tokenizers[t]);
                }
                Err((rel, e)) => {
                    stats.skipped += 1;
                    tracing::warn!(path = %rel, "skipped: {e}");
                    idx.skip(&walk.notes[i], &e);
                }
            }
        }
        for a in &walk.attachments {
            idx.names.add_attachment(a);
        }
        stats.notes = idx.by_rel.len();
        stats.attachments = walk.attachments.len();
        stats.elapsed = t0.elapsed();
        (idx, stats)
    }

    fn insert(&mut self, entry: NoteEntry, terms: DocTerms, tok: &mut Tokenizer) -> u32 {
        let id = match self.by_rel.get(&entry.rel) {
            Some(&id) => {
                self.unlink(id);
                id
            }
            None => match self.free.pop() {
                Some(id) => id,
                None => {
                    self.slots.push(None);
                    (self.slots.len() - 1) as u32
                }
            },
        };
        self.skipped.remove(&entry.rel);
        self.names.add(id, &entry.names());
        self.search.insert(id, terms, tok);
        self.by_rel.insert(entry.rel.clone(), id);
        self.ordered
            .insert((entry.key.clone(), entry.rel.clone()), id);
        self.slots[id as usize] = Some(entry);
        self.generation += 1;
        id
    }

    /// Drops a note's names and ordering (the slot is reused by the caller or freed).
    fn unlink(&mut self, id: u32) {
        if let Some(old) = self.slots[id as usize].take() {
            self.names.remove(id, &old.names());
            self.ordered.remove(&(old.key.clone(), old.rel.clone()));
            self.search.remove(id);
            self.by_rel.remove(&old.rel);
            self.generation += 1;
        }
    }

    /// A tokenizer that reads text as the index does.
    pub fn tokenizer(&self) -> Tokenizer {
        Tokenizer::for_language(self.language)
    }

    /// A number that changes whenever a note is added, changed or removed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Every note, in no particular order.
    pub fn notes(&self) -> impl Iterator<Item = &NoteEntry> {
        self.slots.iter().flatten()
    }

    /// A note's id by its on-disk vault-relative path.
    pub fn id_of(&self, rel: &str) -> Option<u32> {
        self.by_rel.get(rel).copied()
    }

    /// The vault.
    pub fn vault(&self) -> &Vault {
        &self.vault
    }

    /// A note by id.
    pub fn get(&self, id: u32) -> Option<&NoteEntry> {
        self.slots.get(id as usize).and_then(Option::as_ref)
    }

    /// Number of notes.
    pub fn len(&self) -> usize {
        self.by_rel.len()
    }

    /// Whether there are no notes.
    pub fn is_empty(&self) -> bool {
        self.by_rel.is_empty()
    }

    /// Number of distinct search terms.
    pub fn term_count(&self) -> usize {
        self.search.terms()
    }

    /// Re-reads one vault-relative path (note or attachment) after a change on disk: indexes
    /// it when it is there, forgets it (and anything under it) when it is not.
    pub fn refresh(&mut self, rel: &str) {
        if vault::is_hidden_rel(rel) {
            return;
        }
        // A path that now runs through a symlinked folder is not the vault's: the walk never
        // descends one, and its files may lie anywhere.
        if self.vault.parent_is_real(rel) == Some(false) {
            return;
        }
        let abs = self.vault.root().join(rel);
        match std::fs::symlink_metadata(&abs) {
            Ok(m) if m.is_dir() => {
                let walk = self.vault.walk_under(&abs);
                let present: std::collections::HashSet<&str> =
                    walk.notes.iter().map(|f| f.rel.as_str()).collect();
                let prefix = format!("{rel}/");
                let stale: Vec<String> = self
                    .by_rel
                    .keys()
                    .filter(|r| r.starts_with(&prefix) && !present.contains(r.as_str()))
                    .cloned()
                    .collect();
                for r in stale {
                    self.remove(&r);
                }
                for f in walk.notes {
                    self.upsert(f);
                }
                for a in walk.attachments {
                    self.names.add_attachment(&a);
                }
            }
            Ok(_) if vault::is_note_rel(rel) => match self.vault.stat(rel) {
                Ok(f) => self.upsert(f),
                Err(e) => {
                    tracing::info!(path = %rel, "not indexed: {e}");
                    self.remove(rel);
                }
            },
            // Only what the walk would list: a symlink to a folder or out of the vault is not an
            // attachment.
            Ok(_) if self.vault.is_listed_file(rel) => self.names.add_attachment(rel),
            Ok(_) => self.names.remove_attachment(rel),
            Err(_) => {
                self.remove(rel);
                self.names.remove_attachment(rel);
                let prefix = format!("{rel}/");
                let under: Vec<String> = self
                    .by_rel
                    .keys()
                    .filter(|r| r.starts_with(&prefix))
                    .cloned()
                    .collect();
                for r in under {
                    self.remove(&r);
                }
                for a in self.names.attachments_under(&resolve::fold(rel)) {
                    self.names.remove_attachment(&a);
                }
            }
        }
    }

    fn upsert(&mut self, f: FoundFile) {
        let found = f.clone();
        let mut tok = self.tokenizer();
        match prepare(&self.vault, f, &mut tok) {
            Ok((entry, terms)) => {
                self.insert(entry, terms, &mut tok);
                tracing::debug!(path = %found.rel, "indexed");
            }
            Err(e) => {
                tracing::info!(path = %found.rel, "not indexed: {e}");
                self.remove(&found.rel);
                self.skip(&found, &e);
            }
        }
    }

    /// Records a note file left out, and why.
    fn skip(&mut self, f: &FoundFile, why: &VaultError) {
        let skipped = SkippedNote {
            bytes: f.bytes,
            modified: f.modified,
            reason: why.to_string(),
        };
        self.skipped.insert(f.rel.clone(), skipped);
    }

    /// The note file left out that a caller's reference names (by path, with or without `.md`,
    /// or by file name), if any: so that asking for it says why it is not there.
    pub fn skipped_note(&self, input: &str) -> Option<&SkippedNote> {
        let forms = resolve::clean_ref(input).ok()?;
        self.skipped.iter().find_map(|(rel, s)| {
            let key = resolve::fold(resolve::strip_md(rel));
            let name = key.rsplit('/').next().unwrap_or(&key);
            forms
                .iter()
                .map(|f| resolve::fold(resolve::strip_md(f)))
                .any(|f| f == key || f == name)
                .then_some(s)
        })
    }

    /// The vault-relative paths whose files differ between `walk` (the files on disk now) and
    /// the index: notes new, changed (size or modification time) or gone, attachments new or
    /// gone. A skipped note counts as unchanged until its size or time changes.
    pub fn out_of_date(&self, walk: &vault::WalkResult) -> Vec<String> {
        let mut stale = Vec::new();
        let mut on_disk = HashSet::with_capacity(walk.notes.len());
        for f in &walk.notes {
            on_disk.insert(f.rel.as_str());
            let seen = match self.by_rel.get(&f.rel).and_then(|&id| self.get(id)) {
                Some(e) => Some((e.bytes, e.modified)),
                None => self.skipped.get(&f.rel).map(|s| (s.bytes, s.modified)),
            };
            if seen != Some((f.bytes, f.modified)) {
                stale.push(f.rel.clone());
            }
        }
        let gone = self.by_rel.keys().chain(self.skipped.keys());
        stale.extend(gone.filter(|r| !on_disk.contains(r.as_str())).cloned());
        let attachments: HashSet<String> =
            walk.attachments.iter().map(|a| resolve::fold(a)).collect();
        stale.extend(
            walk.attachments
                .iter()
                .filter(|a| !self.names.has_attachment(a))
                .cloned(),
        );
        stale.extend(
            self.names
                .attachments()
                .filter(|a| !attachments.contains(*a))
                .cloned(),
        );
        stale.sort_unstable();
        stale.dedup();
        stale
    }

    /// Forgets one note by its on-disk relative path.
    pub fn remove(&mut self, rel: &str) {
        self.skipped.remove(rel);
        if let Some(&id) = self.by_rel.get(rel) {
            self.unlink(id);
            self.free.push(id);
            tracing::debug!(path = %rel, "removed");
        }
    }

    /// Resolves a caller's note reference.
    pub fn resolve_ref(&self, input: &str) -> Result<u32, RefError> {
        self.names.resolve_ref(input)
    }

    /// Names of notes whose title loosely resembles `input` (for "did you mean").
    pub fn suggest(&self, input: &str, n: usize) -> Vec<u32> {
        let terms = self.tokenizer().query_terms(input);
        self.search
            .search(&terms, |_| true)
            .into_iter()
            .take(n)
            .map(|s| s.doc)
            .collect()
    }

    /// Outgoing links of a note, resolved.
    pub fn outgoing(&self, id: u32) -> Vec<Outgoing> {
        let Some(e) = self.get(id) else {
            return Vec::new();
        };
        let folder = e.folded_folder();
        e.parsed
            .links
            .iter()
            .map(|l| Outgoing {
                link: l.clone(),
                target: self.link_target(id, &folder, l),
            })
            .collect()
    }

    /// A note's outgoing links with each target once (in the order written), only the first
    /// `max` resolved, and how many distinct targets there are in all. Linear in the number of
    /// links: a note with 100,000 links costs one hash-set pass, not a comparison of every
    /// pair, and resolving (which can scan every path) is spent on what is shown only.
    pub fn outgoing_distinct(&self, id: u32, max: usize) -> (Vec<Outgoing>, usize) {
        let Some(e) = self.get(id) else {
            return (Vec::new(), 0);
        };
        let folder = e.folded_folder();
        // A link resolves by its path alone, so one target written twice resolves the same.
        let mut seen = std::collections::HashSet::new();
        let mut shown = Vec::new();
        for l in &e.parsed.links {
            if seen.insert((l.target.as_str(), l.path.as_str())) && shown.len() < max {
                shown.push(Outgoing {
                    link: l.clone(),
                    target: self.link_target(id, &folder, l),
                });
            }
        }
        (shown, seen.len())
    }

    /// What a link written in note `id` (in folded folder `folder`) points at.
    fn link_target(&self, id: u32, folder: &str, l: &Link) -> Target {
        if l.path.is_empty() {
            Target::Note(id)
        } else {
            self.names.resolve_link(&l.path, folder)
        }
    }

    /// Notes linking to `id` (each once, in listing order).
    pub fn backlinks(&self, id: u32) -> Vec<u32> {
        let Some(target) = self.get(id) else {
            return Vec::new();
        };
        // Cheap pre-filter: the link's last path segment must be the title or an alias.
        let mut wanted: Vec<String> = vec![resolve::fold(&target.title)];
        wanted.extend(
            target
                .parsed
                .frontmatter
                .aliases
                .iter()
                .map(|a| resolve::fold(a)),
        );
        let mut out = Vec::new();
        for &src in self.ordered.values() {
            if src == id {
                continue;
            }
            let Some(e) = self.get(src) else { continue };
            let folder = e.folded_folder();
            let hit = e.parsed.links.iter().any(|l| {
                if l.path.is_empty() {
                    return false;
                }
                let f = resolve::fold(&l.path);
                let last = resolve::strip_md(f.rsplit('/').next().unwrap_or(&f));
                (wanted.iter().any(|w| w == last) || wanted.contains(&f))
                    && self.names.resolve_link(&l.path, &folder) == Target::Note(id)
            });
            if hit {
                out.push(src);
            }
        }
        out
    }

    /// Notes in stable (path) order after the cursor key, filtered; returns the page and the
    /// last key when more remain.
    pub fn list(
        &self,
        filter: &NoteFilter,
        after: Option<&(String, String)>,
        limit: usize,
    ) -> (Vec<u32>, Option<(String, String)>) {
        let keep = filter.prepared();
        let range: Box<dyn Iterator<Item = (&(String, String), &u32)>> = match after {
            Some(k) => Box::new(self.ordered.range((
                std::ops::Bound::Excluded(k.clone()),
                std::ops::Bound::Unbounded,
            ))),
            None => Box::new(self.ordered.iter()),
        };
        let mut out = Vec::new();
        let mut last = None;
        for (k, &id) in range {
            let Some(e) = self.get(id) else { continue };
            if !keep.keeps(e) {
                continue;
            }
            if out.len() == limit {
                return (out, last);
            }
            out.push(id);
            last = Some(k.clone());
        }
        (out, None)
    }

    /// Tag counts (notes per tag), sorted by count then name, filtered by prefix.
    pub fn tags(&self, prefix: Option<&str>) -> Vec<(String, usize)> {
        let prefix = prefix.map(tags::normalize).unwrap_or_default();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for e in self.slots.iter().flatten() {
            for t in &e.parsed.tags {
                if t.starts_with(&prefix) {
                    *counts.entry(t.as_str()).or_default() += 1;
                }
            }
        }
        let mut v: Vec<(String, usize)> = counts
            .into_iter()
            .map(|(t, c)| (t.to_string(), c))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// Rebuilds from scratch (after the watcher lost events).
    pub fn rebuild(&mut self) -> BuildStats {
        let (mut fresh, stats) = Self::build(self.vault.clone());
        // Never the number a watcher last saw: the notes may all have changed.
        fresh.generation += self.generation + 1;
        *self = fresh;
        stats
    }

    /// The vault-relative path of an absolute path under the root, if any.
    pub fn rel_of(&self, p: &Path) -> Option<String> {
        self.vault.rel_of(p)
    }
}

/// A folder filter in comparison form: accepts `Folder`, `Folder/`, `/Folder`, `note://Folder`.
fn folder_filter(f: &str) -> String {
    let f = f.trim();
    let f = f.strip_prefix("note://").unwrap_or(f);
    resolve::fold(f.trim_matches('/'))
}
