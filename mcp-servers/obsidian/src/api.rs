//! The vault tools' contract: tool names, parameters and results, shared by the server (which
//! derives their schemas from these types) and by clients in Rust (recall reads results through
//! them instead of poking at JSON keys). Pure data plus the `obsidian://` link format.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// `search_notes`: passages ranked by relevance.
pub const SEARCH_NOTES: &str = "search_notes";
/// `read_note`: a note's text, or one section of it.
pub const READ_NOTE: &str = "read_note";
/// `get_links`: outgoing links and backlinks of a note.
pub const GET_LINKS: &str = "get_links";
/// `list_notes`: notes in path order, paged.
pub const LIST_NOTES: &str = "list_notes";
/// `list_tags`: tags with counts.
pub const LIST_TAGS: &str = "list_tags";

/// The tools, most useful first for answering a question (the order a client should show them).
pub const TOOLS_BY_USEFULNESS: [&str; 5] =
    [SEARCH_NOTES, READ_NOTE, GET_LINKS, LIST_NOTES, LIST_TAGS];

/// Parameters that name a note (`note://` URI, path, name or alias), by tool.
pub const NOTE_REFERENCE_PARAMS: [(&str, &str); 2] = [(READ_NOTE, "uri"), (GET_LINKS, "uri")];

/// `read_note`'s parameters besides the note reference, as [`ReadParams`] names them.
pub const READ_SECTION: &str = "section";
/// See [`READ_SECTION`].
pub const READ_OFFSET: &str = "offset";
/// See [`READ_SECTION`].
pub const READ_MAX_CHARS: &str = "max_chars";

/// Characters `read_note` returns when `max_chars` is not given.
pub const DEFAULT_READ_CHARS: usize = 6000;

/// Most characters of passage text in one search hit.
pub const PASSAGE_CHARS: usize = 800;

/// Most entries in each list of a `get_links` result (outgoing, backlinks); the result's
/// `outgoing_total` and `backlinks_total` say how many there are in all.
pub const MAX_LINKS: usize = 500;

/// What Obsidian's URI scheme needs encoded: everything but unreserved characters (`/` too,
/// as its documentation asks).
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `obsidian://open?vault=…&file=…` for the note at vault path `rel` (with or without `.md`),
/// at `heading` when given (Obsidian opens `Note#Heading` at that heading).
pub fn obsidian_link(vault_name: &str, rel: &str, heading: Option<&str>) -> String {
    let file = rel.strip_suffix(".md").unwrap_or(rel);
    let file = match heading.filter(|h| !h.is_empty()) {
        Some(h) => format!("{file}#{h}"),
        None => file.to_string(),
    };
    format!(
        "obsidian://open?vault={}&file={}",
        utf8_percent_encode(vault_name, URI_COMPONENT),
        utf8_percent_encode(&file, URI_COMPONENT)
    )
}

/// `link` (an [`obsidian_link`] to a whole note, as `read_note` gives it) opened at `heading`
/// instead: what a client that read the note whole writes for a part of it. A link that
/// already names a heading is moved to the new one.
pub fn link_at_heading(link: &str, heading: &str) -> String {
    // The file is the last parameter; a vault's name may hold an encoded `#` too.
    let file = link.rfind("&file=").map_or(0, |at| at + "&file=".len());
    let note = match link[file..].find("%23") {
        Some(at) => &link[..file + at],
        None => link,
    };
    if heading.is_empty() {
        return note.to_string();
    }
    format!("{note}%23{}", utf8_percent_encode(heading, URI_COMPONENT))
}

/// Accepts an integer, a numeric string or null (small models quote numbers).
pub(crate) fn lenient_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum N {
        U(u64),
        I(i64),
        F(f64),
        S(String),
    }
    Ok(match Option::<N>::deserialize(d)? {
        None => None,
        Some(N::U(u)) => Some(u as usize),
        Some(N::I(i)) => Some(i.max(0) as usize),
        Some(N::F(f)) if f.is_finite() && f >= 0.0 => Some(f as usize),
        Some(N::F(_)) => Some(0),
        Some(N::S(s)) => Some(
            s.trim()
                .parse::<u64>()
                .map_err(|_| serde::de::Error::custom("expected a whole number"))?
                as usize,
        ),
    })
}

/// `search_notes` input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchParams {
    /// Words or a natural-language question to look for in titles, aliases, headings, tags and text.
    pub query: String,
    /// How many hits to return (default 5, at most 50).
    #[serde(
        default,
        deserialize_with = "lenient_usize",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
    /// Passages per note (default 1, at most 3), each a hit.
    #[serde(
        default,
        deserialize_with = "lenient_usize",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1, max = 3))]
    pub passages: Option<usize>,
    /// Only notes in this folder (vault-relative, e.g. `Projects/2024`), including subfolders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// Only notes with this tag (without `#`); nested tags match their parent (`a` finds `a/b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Only notes about a day from this date on: 2021-05-11, 2021-05 or 2021.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Only notes about a day up to this date, included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Also give each hit an excerpt: the sentences that bear on the query, in at most this
    /// many characters.
    #[serde(
        default,
        deserialize_with = "lenient_usize",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 50, max = 800))]
    pub excerpt: Option<usize>,
}

/// `list_notes` input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListParams {
    /// Only notes in this folder (vault-relative), including subfolders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// Only notes with this tag (without `#`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Only notes about a day from this date on: 2021-05-11, 2021-05 or 2021.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Only notes about a day up to this date, included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The `next_cursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size (default 50, at most 500).
    #[serde(
        default,
        deserialize_with = "lenient_usize",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<usize>,
}

/// `read_note` input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReadParams {
    /// The note: a `note://` URI, a vault-relative path, or a note name or alias.
    pub uri: String,
    /// Only the section under this heading (heading text, without `#`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Character offset to continue from (the `next_offset` of the previous call).
    #[serde(
        default,
        deserialize_with = "lenient_usize",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0, max = 100_000_000))]
    pub offset: Option<usize>,
    /// Most characters to return (default 6000, at most 100000).
    #[serde(
        default,
        deserialize_with = "lenient_usize",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1, max = 100_000))]
    pub max_chars: Option<usize>,
}

/// `get_links` input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LinksParams {
    /// The note: a `note://` URI, a vault-relative path, or a note name or alias.
    pub uri: String,
}

/// `list_tags` input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TagsParams {
    /// Only tags starting with this text (without `#`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// One search hit: the best-matching passage of one note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    /// The note's URI.
    pub uri: String,
    /// The note's title.
    pub title: String,
    /// The headings the passage sits under, outermost first; empty for text above the first
    /// heading. The last one is what `read_note`'s `section` takes.
    pub heading_path: Vec<String>,
    /// The passage: the section's text, or the matching part of a long section (at most
    /// [`PASSAGE_CHARS`] characters).
    pub passage: String,
    /// With `excerpt` asked: the passage's lines and sentences that bear most on the query, by
    /// its words and by meaning, in order, an ellipsis where text was left out
    /// ([`crate::excerpt`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    /// Relevance, higher is better: fused, 0..1 (by words only, BM25F unscaled); a note whose
    /// title or alias is the query adds 2.
    pub score: f64,
    /// `obsidian://open` link to the note at the passage's heading.
    pub link: String,
    /// What found it: `words`, `meaning` (similar in sense but sharing no ranked words), or
    /// `both`.
    #[serde(default)]
    pub matched: Matched,
}

/// What found a search hit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Matched {
    /// The word ranking alone.
    #[default]
    Words,
    /// The meaning ranking alone.
    Meaning,
    /// Both rankings.
    Both,
    /// Neither: the note is only about a day of the period asked for.
    Period,
}

/// `search_notes` output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchOutput {
    /// Hits, best first.
    pub hits: Vec<SearchHit>,
    /// How these hits were ranked: `hybrid` (words and meaning fused) or `lexical` (words
    /// alone: no embedding model, or not every passage has its vector yet).
    #[serde(default)]
    pub ranking: Ranking,
    /// Passages embedded so far and in all, while an embedding model is in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedded: Option<EmbeddingProgress>,
}

/// How search hits were ranked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Ranking {
    /// BM25F over titles, aliases, headings, tags and text.
    #[default]
    Lexical,
    /// BM25F and embedding similarity, fused by their scores, each scaled to 0..1.
    Hybrid,
}

/// How far the background embedding has come.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EmbeddingProgress {
    /// Passages with a vector.
    pub passages: usize,
    /// Passages in the vault.
    pub total: usize,
}

/// The URI of the server's status resource ([`Status`], JSON).
pub const STATUS_URI: &str = "obsidian-kb://status";

/// What the status resource says: the index and, with an embedding model, how far search by
/// meaning has come. A client reads it to tell a user why search is still by words alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Status {
    /// Notes in the index.
    pub notes: usize,
    /// False while the vault folder is missing; tools answer with an error until it returns.
    pub vault_available: bool,
    /// How a search would rank right now.
    pub ranking: Ranking,
    /// Search by meaning; absent without an embedding model.
    pub embedding: Option<EmbeddingStatus>,
}

/// The background embedding, as [`Status`] reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EmbeddingStatus {
    /// The model file's name, once it has loaded.
    pub model: Option<String>,
    /// Where the job is.
    pub state: EmbeddingState,
    /// Passages with a vector.
    pub passages: usize,
    /// Passages in the vault.
    pub total: usize,
    /// Passages whose vectors this run took from the cache (the rest it embedded).
    #[serde(default)]
    pub from_cache: usize,
    /// Why embedding stopped, when it failed (search stays by words).
    pub error: Option<String>,
    /// Seconds until every passage has a vector, at the rate of this pass so far; absent
    /// until the pass has embedded a batch, and once it is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<u64>,
}

/// Where the background embedding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingState {
    /// The model is loading, or the vault's passages are being counted.
    Loading,
    /// Passages are being embedded; search is by words until every one has a vector (a
    /// ranking by meaning over part of the vault ranks worse than words alone).
    Embedding,
    /// Every passage has a vector; edits are embedded as they come.
    Ready,
    /// The model could not load or embedding stopped; search is by words.
    Failed,
}

/// One note in a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NoteSummary {
    /// The note's URI.
    pub uri: String,
    /// The note's title.
    pub title: String,
    /// Its tags (lowercase, without `#`).
    pub tags: Vec<String>,
    /// File size in bytes.
    pub bytes: u64,
    /// Last modification time (RFC 3339, UTC).
    pub modified: Option<String>,
}

/// `list_notes` output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListOutput {
    /// Notes in path order.
    pub notes: Vec<NoteSummary>,
    /// Pass as `cursor` to get the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// `read_note` output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReadOutput {
    /// The note's URI.
    pub uri: String,
    /// The note's title.
    pub title: String,
    /// Frontmatter properties; null when absent or unreadable.
    pub frontmatter: Option<Map<String, Value>>,
    /// Why the frontmatter could not be read, if it could not.
    pub frontmatter_error: Option<String>,
    /// The text (body without frontmatter, or the requested section), from `offset`.
    pub content: String,
    /// Pass as `offset` to read on; null when the end was reached.
    pub next_offset: Option<usize>,
    /// Length of the whole body or section in characters.
    pub total_chars: usize,
    /// `obsidian://open` link to the note (at the section's heading when one was read).
    pub link: String,
}

/// An outgoing link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutgoingLink {
    /// The link target as written (`Note#Heading`, `img.png`).
    pub target: String,
    /// The note it resolves to; null for unresolved links and non-note files.
    pub uri: Option<String>,
}

/// A note linking here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Backlink {
    /// The linking note's URI.
    pub uri: String,
    /// The linking note's title.
    pub title: String,
}

/// `get_links` output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LinksOutput {
    /// The note's URI.
    pub uri: String,
    /// Links in this note (wikilinks, embeds, markdown links, frontmatter links), each target
    /// once, in the order written; the first [`MAX_LINKS`].
    pub outgoing: Vec<OutgoingLink>,
    /// Notes that link to this note, in path order; the first [`MAX_LINKS`].
    pub backlinks: Vec<Backlink>,
    /// How many distinct outgoing links the note has (more than `outgoing` holds when the list
    /// was cut at [`MAX_LINKS`]).
    #[serde(default)]
    pub outgoing_total: usize,
    /// How many notes link to this note (more than `backlinks` holds when the list was cut).
    #[serde(default)]
    pub backlinks_total: usize,
}

/// A tag and how many notes carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TagCount {
    /// The tag (lowercase, without `#`; nested tags use `/`).
    pub tag: String,
    /// Number of notes with this tag.
    pub count: usize,
}

/// `list_tags` output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TagsOutput {
    /// Tags, most used first.
    pub tags: Vec<TagCount>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_encode_every_reserved_character_and_keep_the_heading() {
        assert_eq!(
            obsidian_link("My Vault", "Folder/Note one.md", None),
            "obsidian://open?vault=My%20Vault&file=Folder%2FNote%20one"
        );
        assert_eq!(
            obsidian_link("v", "Café & co.md", Some("Step 1: setup")),
            "obsidian://open?vault=v&file=Caf%C3%A9%20%26%20co%23Step%201%3A%20setup"
        );
    }

    #[test]
    fn a_note_link_opens_at_a_heading_as_a_link_made_for_it() {
        let note = obsidian_link("My #1 Vault", "Café & co.md", None);
        let at = |h| obsidian_link("My #1 Vault", "Café & co.md", Some(h));
        assert_eq!(link_at_heading(&note, "Step 1: setup"), at("Step 1: setup"));
        assert_eq!(link_at_heading(&at("Old"), "New #2"), at("New #2"));
        assert_eq!(link_at_heading(&at("Old"), ""), note);
    }

    #[test]
    fn params_skip_unset_options_and_accept_quoted_numbers() {
        let p = SearchParams {
            query: "bread".into(),
            limit: Some(3),
            ..SearchParams::default()
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::json!({"query": "bread", "limit": 3})
        );
        let p: ReadParams =
            serde_json::from_value(serde_json::json!({"uri": "x", "offset": "12"})).unwrap();
        assert_eq!(p.offset, Some(12));
    }

    #[test]
    fn read_parameter_names_are_the_serialized_ones() {
        let p = ReadParams {
            uri: "x".into(),
            section: Some("s".into()),
            offset: Some(1),
            max_chars: Some(2),
        };
        let value = serde_json::to_value(&p).unwrap();
        for name in [READ_SECTION, READ_OFFSET, READ_MAX_CHARS] {
            assert!(
                value.get(name).is_some(),
                "{name} is not a read_note parameter"
            );
        }
    }
}
