//! Resolving a study target (a note, a folder, a period or a search query) into whole notes,
//! read through the vault server's tools (never from files), with a line on stderr saying what
//! was chosen.

use std::collections::HashSet;

use anyhow::{Context, Result, bail};
use chrono::NaiveDate;
use obsidian_kb::api;
use obsidian_kb::dates::{self, Period};

use crate::markup;
use crate::tool::ToolHost;
use crate::vault::{VaultClient, VaultError, note_path};

/// Most notes a folder target brings in; a summary of more would say little about each.
const MAX_NOTES: usize = 50;
/// Search hits used when the target is neither a note nor a folder.
const SEARCH_HITS: usize = 5;
/// Characters per `read_note` page (the server's maximum).
const READ_PAGE: usize = 100_000;
/// Words that only say "my notes of" around a period: "my notes from last week" names the
/// period, not a search for "notes".
const PERIOD_WORDS: &str = "\
    my notes note from of in on during for the what i wrote journal diary daily entries days \
    的 笔记 日记 の ノート";

/// What a study command is pointed at: a note, a folder, a period or words to search for, and
/// the days its notes must be about (`--from`/`--to`).
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// What the person typed; empty when only `--from`/`--to` were given.
    pub target: String,
    /// The days of `--from`/`--to`, either open-ended.
    pub period: Option<Period>,
    /// The day relative periods ("last week") count from.
    pub today: NaiveDate,
}

impl Scope {
    /// What the notes are, as a heading says it: the target, and the period's days.
    pub fn label(&self) -> String {
        match (self.target.is_empty(), self.asked_period()) {
            (true, Some(period)) => period_text(&period),
            (false, Some(period)) if !self.target.contains(&period_text(&period)) => {
                format!("{} ({})", self.target, period_text(&period))
            }
            _ => self.target.clone(),
        }
    }

    /// `--from`/`--to`, else the one period the target names.
    fn asked_period(&self) -> Option<Period> {
        self.period
            .or_else(|| dates::period_named(&self.target, self.today))
    }

    /// The period asked and the target's words left to search for, when a period is asked.
    /// The words are the target's without the period's and [`PERIOD_WORDS`]; with `--from`
    /// and `--to`, the target whole.
    fn period_and_words(&self) -> Option<(Period, String)> {
        if let Some(period) = self.period {
            return Some((period, self.target.trim().to_string()));
        }
        let mentions = dates::mentioned(&self.target, self.today);
        let period = mentions
            .iter()
            .map(|m| m.period)
            .reduce(|a, b| a.span(&b))?;
        let mut rest = String::new();
        let mut at = 0;
        for m in &mentions {
            rest.push_str(&self.target[at..m.start]);
            rest.push(' ');
            at = m.end;
        }
        rest.push_str(&self.target[at..]);
        let words: Vec<&str> = rest
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .filter(|w| {
                let mut w = w.to_lowercase();
                // Chinese and Japanese write no spaces: their fillers are cut out of the word.
                for filler in PERIOD_WORDS.split_whitespace().filter(|f| !f.is_ascii()) {
                    w = w.replace(filler, "");
                }
                // A letter alone is what "week's" leaves.
                let letter = w.is_ascii() && w.len() < 2;
                !w.is_empty() && !letter && !PERIOD_WORDS.split_whitespace().any(|f| f == w)
            })
            .collect();
        Some((period, words.join(" ")))
    }
}

/// A period as a person reads it: one day, or its first and last.
fn period_text(period: &Period) -> String {
    if period.from == NaiveDate::MIN {
        format!("up to {}", period.to)
    } else if period.to == NaiveDate::MAX {
        format!("from {}", period.from)
    } else {
        period.to_string()
    }
}

/// A period as the vault tools take it: either bound left out when open.
fn period_bounds(period: Option<Period>) -> (Option<String>, Option<String>) {
    let Some(period) = period else {
        return (None, None);
    };
    let from = (period.from != NaiveDate::MIN).then(|| period.from.to_string());
    let to = (period.to != NaiveDate::MAX).then(|| period.to.to_string());
    (from, to)
}

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

    /// Notes in `folder` (subfolders included; every folder when `None`) about a day of
    /// `period` (any when `None`), at most `MAX_NOTES + 1` to detect the cap.
    fn list(&self, folder: Option<&str>, period: Option<Period>) -> Result<Vec<String>> {
        let mut uris = Vec::new();
        let (from, to) = period_bounds(period);
        let mut params = api::ListParams {
            folder: folder.map(str::to_string),
            from,
            to,
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

    fn search(&self, query: &str, period: Option<Period>) -> Result<Vec<String>> {
        let (from, to) = period_bounds(period);
        let params = api::SearchParams {
            query: query.to_string(),
            limit: Some(SEARCH_HITS),
            from,
            to,
            ..api::SearchParams::default()
        };
        let page: api::SearchOutput = self.client.call(api::SEARCH_NOTES, &params)?;
        let mut uris: Vec<String> = Vec::new();
        // A study target is a name or a topic the person typed: notes that share its words.
        // Search by meaning always finds some nearest note, even for a typo or nonsense; and a
        // note only about a day of the period shares none of them.
        for hit in page
            .hits
            .into_iter()
            .filter(|h| matches!(h.matched, api::Matched::Words | api::Matched::Both))
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

/// No note answers to a study target: the user's to change, not a failure of Recall.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NothingMatches(String);

/// Resolves a scope to notes: a note (URI, path, name or alias), else a folder (kept to
/// `--from`/`--to`), else the notes of the period the target names (those its other words find
/// when it has any), else the best search hits; each read whole.
pub fn gather_notes<H: ToolHost>(
    runtime: &tokio::runtime::Runtime,
    host: &H,
    scope: &Scope,
) -> Result<Vec<SourceNote>> {
    let target = scope.target.trim();
    if target.is_empty() && scope.period.is_none() {
        bail!("the target is empty: name a note, a folder, a period, or words to search for");
    }
    let vault = Vault::new(runtime, host)?;
    let mut uris = Vec::new();
    let mut how = String::new();
    if !target.is_empty() {
        let note = vault.read_whole(target)?;
        // A note named exactly so wins; else a folder named exactly so wins over a note that
        // only matched by alias ("Obsidian Sync" the folder, not "Introduction to Obsidian Sync").
        if let Some(note) = note.as_ref().filter(|n| names_note_exactly(target, n)) {
            if scope.period.is_some() {
                eprintln!(
                    "recall: {target:?} is a note; --from and --to keep only folders and searches to a period"
                );
            }
            eprintln!("recall: using the note {}", note.uri);
            return Ok(vec![note.clone()]);
        }
        uris = vault.list(Some(target), scope.period)?;
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
        if !uris.is_empty() {
            how = format!("the notes in folder {target:?}");
        }
    }
    if uris.is_empty() {
        match scope.period_and_words() {
            Some((period, words)) if words.is_empty() => {
                uris = vault.list(None, Some(period))?;
                how = format!("the notes about {}", period_text(&period));
            }
            Some((period, words)) => {
                uris = vault.search(&words, Some(period))?;
                how = format!(
                    "the notes about {} a search for {words:?} found",
                    period_text(&period)
                );
            }
            None => {
                uris = vault.search(target, None)?;
                how = format!("the notes a search for {target:?} found");
            }
        }
    }
    if uris.is_empty() {
        if let Some((period, words)) = scope.period_and_words().filter(|(_, w)| !w.is_empty()) {
            return Err(NothingMatches(format!(
                "no note about {} holds the words {words:?} (without them, the target names \
                 the period's notes: \"{}\")",
                period_text(&period),
                period_text(&period)
            ))
            .into());
        }
        if let Some(period) = scope.asked_period() {
            return Err(NothingMatches(format!(
                "no note in the vault matches {:?} about {}: no daily note, date property, \
                 dated heading or file time falls in it (see `recall call list_notes`)",
                scope.target,
                period_text(&period)
            ))
            .into());
        }
        return Err(NothingMatches(format!(
            "nothing in the vault matches {target:?}: it is not a note, a folder, or words any \
             note contains (see `recall call list_notes` for what is there)"
        ))
        .into());
    }
    if uris.len() > MAX_NOTES {
        uris.truncate(MAX_NOTES);
        eprintln!(
            "recall: {} holds more than {MAX_NOTES} notes; using the first {MAX_NOTES}",
            scope.label()
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
    if target.is_empty() {
        eprintln!("recall: using {how} ({})", notes.len());
    } else {
        eprintln!(
            "recall: no note is named {target:?}; using {how} ({})",
            notes.len()
        );
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(target: &str) -> Scope {
        Scope {
            target: target.to_string(),
            period: None,
            today: NaiveDate::from_ymd_opt(2026, 11, 27).unwrap(),
        }
    }

    fn days(from: &str, to: &str) -> Period {
        Period {
            from: from.parse().unwrap(),
            to: to.parse().unwrap(),
        }
    }

    #[test]
    fn a_target_that_only_names_a_period_lists_its_days() {
        let last_week = days("2026-11-16", "2026-11-22");
        for target in [
            "last week",
            "my notes from last week",
            "Last week's journal",
        ] {
            assert_eq!(
                scope(target).period_and_words(),
                Some((last_week, String::new())),
                "{target}"
            );
        }
        assert_eq!(
            scope("上周的笔记").period_and_words(),
            Some((last_week, String::new()))
        );
        assert_eq!(
            scope("September 2025").period_and_words(),
            Some((days("2025-09-01", "2025-09-30"), String::new()))
        );
    }

    #[test]
    fn other_words_beside_a_period_are_searched_within_it() {
        assert_eq!(
            scope("running in September 2025").period_and_words(),
            Some((days("2025-09-01", "2025-09-30"), "running".to_string()))
        );
        assert_eq!(scope("Photosynthesis").period_and_words(), None);
    }

    #[test]
    fn from_and_to_keep_the_whole_target_as_words() {
        let mut asked = scope("Projects");
        asked.period = Some(days("2025-09-01", "2025-09-30"));
        assert_eq!(
            asked.period_and_words(),
            Some((days("2025-09-01", "2025-09-30"), "Projects".to_string()))
        );
        assert_eq!(asked.label(), "Projects (2025-09-01 to 2025-09-30)");
        asked.target.clear();
        asked.period = Some(Period {
            from: "2025-09-01".parse().unwrap(),
            to: NaiveDate::MAX,
        });
        assert_eq!(asked.label(), "from 2025-09-01");
        assert_eq!(
            period_bounds(asked.period),
            (Some("2025-09-01".to_string()), None)
        );
    }

    #[test]
    fn a_label_names_the_days_a_relative_period_stands_for() {
        assert_eq!(
            scope("last week").label(),
            "last week (2026-11-16 to 2026-11-22)"
        );
        assert_eq!(scope("2025-09-28").label(), "2025-09-28");
        assert_eq!(scope("Photosynthesis").label(), "Photosynthesis");
    }
}
