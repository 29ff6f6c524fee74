//! Resolving a study target (a note, a folder or a search query) into whole notes, read through
//! the vault server's tools (never from files), with a line on stderr saying what was chosen.

use std::collections::HashSet;

use anyhow::{Context, Result, bail};
use obsidian_kb::api;

use crate::markup;
use crate::tool::ToolHost;
use crate::vault::{VaultClient, VaultError, note_path};

/// Most notes a folder target brings in; a summary of more would say little about each.
const MAX_NOTES: usize = 50;
/// Search hits used when the target is neither a note nor a folder.
const SEARCH_HITS: usize = 5;
/// Characters per `read_note` page (the server's maximum).
const READ_PAGE: usize = 100_000;

/// One note, read whole through the vault server.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceNote {
    /// Its `note://` URI, as the server gave it.
    pub uri: String,
    /// Its title.
    pub title: String,
    /// Its `obsidian://open` link, as the server gave it.
    pub link: String,
    /// Its text (without frontmatter), with Obsidian's markup rendered as plain text: what
    /// the model reads, so that what it writes holds no `[[links]]` either.
    pub content: String,
}

/// The vault server's tools, for reading whole notes, folders and searches.
struct Vault<'a, H> {
    client: VaultClient<'a, H>,
}

impl<'a, H: ToolHost> Vault<'a, H> {
    fn new(runtime: &'a tokio::runtime::Runtime, host: &'a H) -> Result<Self> {
        let client = VaultClient::new(runtime, host).context(
            "no vault server is available: summarize and quiz need one \
             (pass --vault DIR, or name obsidian-kb in the config)",
        )?;
        Ok(Vault { client })
    }

    /// The whole note, page by page; `None` when the server knows no such note.
    fn read_whole(&self, reference: &str) -> Result<Option<SourceNote>> {
        let params = api::ReadParams {
            uri: reference.to_string(),
            max_chars: Some(READ_PAGE),
            ..api::ReadParams::default()
        };
        let mut page: api::ReadOutput = match self.client.call(api::READ_NOTE, &params) {
            Ok(page) => page,
            Err(VaultError::Failed { text, .. }) => {
                tracing::debug!("{reference:?} is not a note: {text}");
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let mut note = SourceNote {
            uri: page.uri.clone(),
            title: page.title.clone(),
            link: page.link.clone(),
            content: std::mem::take(&mut page.content),
        };
        while let Some(offset) = page.next_offset {
            let params = api::ReadParams {
                uri: note.uri.clone(),
                offset: Some(offset),
                max_chars: Some(READ_PAGE),
                ..api::ReadParams::default()
            };
            page = self
                .client
                .call(api::READ_NOTE, &params)
                .with_context(|| format!("reading {} at offset {offset} failed", note.uri))?;
            note.content.push_str(&page.content);
        }
        note.content = markup::plain(&note.content);
        Ok(Some(note))
    }

    /// Notes in `folder` (subfolders included), at most `MAX_NOTES + 1` to detect the cap.
    fn folder(&self, folder: &str) -> Result<Vec<String>> {
        let mut uris = Vec::new();
        let mut params = api::ListParams {
            folder: Some(folder.to_string()),
            limit: Some(MAX_NOTES + 1),
            ..api::ListParams::default()
        };
        loop {
            let page: api::ListOutput = match self.client.call(api::LIST_NOTES, &params) {
                Ok(page) => page,
                Err(VaultError::Failed { text, .. }) => {
                    tracing::debug!("{folder:?} is not a folder: {text}");
                    return Ok(uris);
                }
                Err(e) => return Err(e.into()),
            };
            uris.extend(page.notes.into_iter().map(|n| n.uri));
            params.cursor = page.next_cursor;
            if params.cursor.is_none() || uris.len() > MAX_NOTES {
                return Ok(uris);
            }
        }
    }

    fn search(&self, query: &str) -> Result<Vec<String>> {
        let params = api::SearchParams {
            query: query.to_string(),
            limit: Some(SEARCH_HITS),
            ..api::SearchParams::default()
        };
        let page: api::SearchOutput = self.client.call(api::SEARCH_NOTES, &params)?;
        let mut uris: Vec<String> = Vec::new();
        // A study target is a name or a topic the person typed: notes that share its words.
        // Search by meaning always finds some nearest note, even for a typo or nonsense.
        for hit in page
            .hits
            .into_iter()
            .filter(|h| h.matched != api::Matched::Meaning)
        {
            if !uris.contains(&hit.uri) {
                uris.push(hit.uri);
            }
        }
        Ok(uris)
    }
}

/// True when `target` names `note` exactly: its vault path or file name (with or without
/// `.md`, any case), or its URI; not merely an alias or a title.
fn names_note_exactly(target: &str, note: &SourceNote) -> bool {
    let path = note_path(&note.uri);
    let target = target.trim().trim_start_matches("note://");
    let target = target.strip_suffix(".md").unwrap_or(target);
    let file = path.rsplit('/').next().unwrap_or(path);
    target.eq_ignore_ascii_case(path) || target.eq_ignore_ascii_case(file)
}

/// Each of `uris` read whole, or `None` for one the vault no longer holds.
pub fn read_notes<H: ToolHost>(
    runtime: &tokio::runtime::Runtime,
    host: &H,
    uris: &[String],
) -> Result<Vec<Option<SourceNote>>> {
    let vault = Vault::new(runtime, host)?;
    uris.iter()
        .map(|uri| Ok(vault.read_whole(uri)?.filter(|note| note.uri == *uri)))
        .collect()
}

/// Resolves a target to notes: a note (URI, path, name or alias), else a folder, else the best
/// search hits; each read whole.
pub fn gather_notes<H: ToolHost>(
    runtime: &tokio::runtime::Runtime,
    host: &H,
    target: &str,
) -> Result<Vec<SourceNote>> {
    let target = target.trim();
    if target.is_empty() {
        bail!("the target is empty: name a note, a folder, or words to search for");
    }
    let vault = Vault::new(runtime, host)?;
    let note = vault.read_whole(target)?;
    // A note named exactly so wins; else a folder named exactly so wins over a note that only
    // matched by alias ("Obsidian Sync" the folder, not "Introduction to Obsidian Sync").
    if let Some(note) = note.as_ref().filter(|n| names_note_exactly(target, n)) {
        eprintln!("recall: using the note {}", note.uri);
        return Ok(vec![note.clone()]);
    }
    let mut uris = vault.folder(target)?;
    if let Some(note) = note {
        if uris.is_empty() {
            eprintln!(
                "recall: using the note {} (its name or alias matches)",
                note.uri
            );
            return Ok(vec![note]);
        }
        eprintln!(
            "recall: {target:?} is a folder and also matches the note {} by alias; using the folder",
            note.uri
        );
    }
    let how = if uris.is_empty() {
        uris = vault.search(target)?;
        format!("the notes a search for {target:?} found")
    } else {
        format!("the notes in folder {target:?}")
    };
    if uris.is_empty() {
        bail!(
            "nothing in the vault matches {target:?}: it is not a note, a folder, or words any \
             note contains (see `recall call list_notes` for what is there)"
        );
    }
    if uris.len() > MAX_NOTES {
        uris.truncate(MAX_NOTES);
        eprintln!(
            "recall: {target:?} holds more than {MAX_NOTES} notes; using the first {MAX_NOTES}"
        );
    }
    let mut seen = HashSet::new();
    let mut notes = Vec::new();
    for uri in uris {
        if !seen.insert(uri.clone()) {
            continue;
        }
        match vault.read_whole(&uri)? {
            Some(note) => notes.push(note),
            None => eprintln!("recall: cannot read {uri}; leaving it out"),
        }
    }
    if notes.is_empty() {
        bail!("none of {how} could be read");
    }
    eprintln!(
        "recall: no note is named {target:?}; using {how} ({})",
        notes.len()
    );
    Ok(notes)
}
