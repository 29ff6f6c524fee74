//! The MCP face of the index: five read-only tools and the notes as resources. The only file
//! that imports `rmcp`. Every tool answers with a compact text rendering for the model plus
//! `structuredContent` matching its declared output schema; bad input is an `isError` result
//! whose text says what to do next, never a crash.
//!
//! **Invariant:** nothing returned here contains an absolute path: notes are named by
//! `note://` URIs and errors by vault-relative paths, and rejected input is never echoed.

use std::fmt::Write as _;
use std::sync::{Arc, RwLock};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, Implementation, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::index::VaultIndex;
use crate::note;
use crate::resolve::{RefError, Target};
use crate::vault::{VaultError, rfc3339};

/// The shared, live index.
pub type SharedIndex = Arc<RwLock<VaultIndex>>;

const RESOURCE_PAGE: usize = 200;
const MAX_LIMIT: usize = 500;
const MAX_READ_CHARS: usize = 100_000;

/// Accepts an integer, a numeric string or null (small models quote numbers).
fn lenient_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
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
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchParams {
    /// Words or a natural-language question to look for in titles, aliases, headings, tags and text.
    pub query: String,
    /// How many hits to return (default 5, at most 500).
    #[serde(default, deserialize_with = "lenient_usize")]
    pub limit: Option<usize>,
    /// Only notes in this folder (vault-relative, e.g. `Projects/2024`), including subfolders.
    #[serde(default)]
    pub folder: Option<String>,
    /// Only notes with this tag (without `#`); nested tags match their parent (`a` finds `a/b`).
    #[serde(default)]
    pub tag: Option<String>,
}

/// `list_notes` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListParams {
    /// Only notes in this folder (vault-relative), including subfolders.
    #[serde(default)]
    pub folder: Option<String>,
    /// Only notes with this tag (without `#`).
    #[serde(default)]
    pub tag: Option<String>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size (default 50, at most 500).
    #[serde(default, deserialize_with = "lenient_usize")]
    pub limit: Option<usize>,
}

/// `read_note` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadParams {
    /// The note: a `note://` URI, a vault-relative path, or a note name or alias.
    pub uri: String,
    /// Only the section under this heading (heading text, without `#`).
    #[serde(default)]
    pub section: Option<String>,
    /// Character offset to continue from (the `next_offset` of the previous call).
    #[serde(default, deserialize_with = "lenient_usize")]
    pub offset: Option<usize>,
    /// Most characters to return (default 6000, at most 100000).
    #[serde(default, deserialize_with = "lenient_usize")]
    pub max_chars: Option<usize>,
}

/// `get_links` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LinksParams {
    /// The note: a `note://` URI, a vault-relative path, or a note name or alias.
    pub uri: String,
}

/// `list_tags` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TagsParams {
    /// Only tags starting with this text (without `#`).
    #[serde(default)]
    pub prefix: Option<String>,
}

/// One search hit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchHit {
    /// The note's URI.
    pub uri: String,
    /// The note's title.
    pub title: String,
    /// Relevance (higher is better).
    pub score: f64,
    /// About 200 characters around the best match.
    pub snippet: String,
}

/// `search_notes` output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOutput {
    /// Hits, best first.
    pub hits: Vec<SearchHit>,
}

/// One note in a listing.
#[derive(Debug, Serialize, JsonSchema)]
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
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListOutput {
    /// Notes in path order.
    pub notes: Vec<NoteSummary>,
    /// Pass as `cursor` to get the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// `read_note` output.
#[derive(Debug, Serialize, JsonSchema)]
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
}

/// An outgoing link.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OutgoingLink {
    /// The link target as written (`Note#Heading`, `img.png`).
    pub target: String,
    /// The note it resolves to; null for unresolved links and non-note files.
    pub uri: Option<String>,
}

/// A note linking here.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Backlink {
    /// The linking note's URI.
    pub uri: String,
    /// The linking note's title.
    pub title: String,
}

/// `get_links` output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LinksOutput {
    /// The note's URI.
    pub uri: String,
    /// Links in this note (wikilinks, embeds, markdown links, frontmatter links).
    pub outgoing: Vec<OutgoingLink>,
    /// Notes that link to this note.
    pub backlinks: Vec<Backlink>,
}

/// A tag and how many notes carry it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TagCount {
    /// The tag (lowercase, without `#`; nested tags use `/`).
    pub tag: String,
    /// Number of notes with this tag.
    pub count: usize,
}

/// `list_tags` output.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TagsOutput {
    /// Tags, most used first.
    pub tags: Vec<TagCount>,
}

/// The MCP server.
#[derive(Clone)]
pub struct KbServer {
    index: SharedIndex,
    tool_router: ToolRouter<Self>,
}

fn ok<T: Serialize>(text: String, value: &T) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = serde_json::to_value(value).ok();
    r
}

fn fail(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

fn clamp_limit(l: Option<usize>, default: usize) -> usize {
    l.unwrap_or(default).clamp(1, MAX_LIMIT)
}

fn encode_cursor(k: &(String, String)) -> String {
    let raw = format!("{}\u{0}{}", k.0, k.1);
    raw.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_cursor(c: &str) -> Option<(String, String)> {
    let c = c.trim();
    if !c.len().is_multiple_of(2) || c.len() > 8192 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..c.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(c.get(i..i + 2)?, 16).ok())
        .collect();
    let s = String::from_utf8(bytes?).ok()?;
    let (a, b) = s.split_once('\u{0}')?;
    Some((a.to_string(), b.to_string()))
}

impl KbServer {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, VaultIndex> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves a reference or explains why not (candidates for ambiguity, suggestions for misses).
    fn resolve(&self, idx: &VaultIndex, input: &str) -> Result<u32, String> {
        match idx.resolve_ref(input) {
            Ok(id) => Ok(id),
            Err(RefError::Rejected(why)) => Err(format!("Refused: {why}.")),
            Err(RefError::Ambiguous(ids)) => {
                let mut s = String::from(
                    "Several notes match that name; call again with one of these URIs:",
                );
                for id in ids.iter().take(20) {
                    if let Some(e) = idx.get(*id) {
                        let _ = write!(s, "\n- {}", e.uri());
                    }
                }
                Err(s)
            }
            Err(RefError::NotFound) => {
                let mut s = String::from(
                    "No note matches that reference. Use a URI from search_notes or list_notes.",
                );
                let sugg = idx.suggest(input, 3);
                if !sugg.is_empty() {
                    s.push_str(" Did you mean:");
                    for id in sugg {
                        if let Some(e) = idx.get(id) {
                            let _ = write!(s, "\n- {}", e.uri());
                        }
                    }
                }
                Err(s)
            }
        }
    }

    /// Reads a note's current text from disk; a vanished note is dropped from the index.
    fn load(&self, rel: &str) -> Result<String, String> {
        let vault = self.read().vault().clone();
        match vault.read_note(rel) {
            Ok(t) => Ok(t),
            Err(e) => {
                if matches!(e, VaultError::Gone(_) | VaultError::Outside(_))
                    && let Ok(mut w) = self.index.write()
                {
                    w.refresh(rel);
                }
                Err(format!("{e}."))
            }
        }
    }
}

/// `schema` without the integer formats schemars writes for Rust types (`uint`, `uint32`,
/// `uint64`, …): JSON Schema defines none of them, and validating clients (ajv in the MCP
/// Inspector) warn about each on every listing. The `minimum: 0` beside them says the same.
fn portable_schema(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut schema = schema.clone();
    drop_rust_formats(&mut schema);
    schema
}

fn drop_rust_formats(schema: &mut Map<String, Value>) {
    let rust_only = |f: &str| f.starts_with("uint") || matches!(f, "int" | "int8" | "int16");
    if schema
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(rust_only)
    {
        schema.remove("format");
    }
    for value in schema.values_mut() {
        match value {
            Value::Object(sub) => drop_rust_formats(sub),
            Value::Array(items) => items
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(drop_rust_formats),
            _ => {}
        }
    }
}

#[tool_router]
impl KbServer {
    /// Creates a server over a shared index.
    pub fn new(index: SharedIndex) -> Self {
        let mut tool_router = Self::tool_router();
        for route in tool_router.map.values_mut() {
            let tool = &mut route.attr;
            tool.input_schema = Arc::new(portable_schema(&tool.input_schema));
            if let Some(output) = &tool.output_schema {
                tool.output_schema = Some(Arc::new(portable_schema(output)));
            }
        }
        Self { index, tool_router }
    }

    #[tool(
        description = "Full-text search over the vault's notes (titles, aliases, headings, tags, text). Accepts keywords or a natural-language question. Returns ranked hits with note URIs and snippets; read a hit with read_note.",
        output_schema = schema_for_output::<SearchOutput>(),
        annotations(title = "Search notes", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn search_notes(
        &self,
        Parameters(p): Parameters<SearchParams>,
    ) -> Result<CallToolResult, ErrorData> {
        if p.query.trim().is_empty() {
            return Ok(fail(
                "The query is empty; give words or a question to search for.",
            ));
        }
        if p.query.len() > 2000 {
            return Ok(fail("The query is too long (at most 2000 bytes)."));
        }
        let limit = clamp_limit(p.limit, 5);
        let idx = self.read();
        let hits = idx.search(&p.query, limit, p.folder.as_deref(), p.tag.as_deref());
        let out = SearchOutput {
            hits: hits
                .iter()
                .filter_map(|h| {
                    let e = idx.get(h.id)?;
                    Some(SearchHit {
                        uri: e.uri(),
                        title: e.title.clone(),
                        score: (f64::from(h.score) * 1000.0).round() / 1000.0,
                        snippet: h.snippet.clone(),
                    })
                })
                .collect(),
        };
        let mut text = String::new();
        if out.hits.is_empty() {
            text.push_str(
                "No matching notes. Try other words, or list_notes / list_tags to browse.",
            );
        }
        for (i, h) in out.hits.iter().enumerate() {
            let _ = writeln!(
                text,
                "{}. {} ({}) score {:.2}\n   {}",
                i + 1,
                h.title,
                h.uri,
                h.score,
                h.snippet
            );
        }
        Ok(ok(text.trim_end().to_string(), &out))
    }

    #[tool(
        description = "List notes in path order, optionally only those in a folder or with a tag. Pages with an opaque cursor.",
        output_schema = schema_for_output::<ListOutput>(),
        annotations(title = "List notes", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_notes(
        &self,
        Parameters(p): Parameters<ListParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = clamp_limit(p.limit, 50);
        let after = match p.cursor.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
            Some(c) => match decode_cursor(c) {
                Some(k) => Some(k),
                None => {
                    return Ok(fail(
                        "That cursor is not valid; pass next_cursor from a previous list_notes call, or omit it.",
                    ));
                }
            },
            None => None,
        };
        let idx = self.read();
        let (ids, next) = idx.list(p.folder.as_deref(), p.tag.as_deref(), after.as_ref(), limit);
        let out = ListOutput {
            notes: ids
                .iter()
                .filter_map(|id| {
                    let e = idx.get(*id)?;
                    Some(NoteSummary {
                        uri: e.uri(),
                        title: e.title.clone(),
                        tags: e.parsed.tags.clone(),
                        bytes: e.bytes,
                        modified: e.modified.map(rfc3339),
                    })
                })
                .collect(),
            next_cursor: next.as_ref().map(encode_cursor),
        };
        let mut text = format!(
            "{} notes{}",
            out.notes.len(),
            if out.next_cursor.is_some() {
                " (more: pass next_cursor)"
            } else {
                ""
            }
        );
        for n in &out.notes {
            let _ = write!(text, "\n- {}", n.uri);
            if !n.tags.is_empty() {
                let _ = write!(text, "  #{}", n.tags.join(" #"));
            }
        }
        if let Some(c) = &out.next_cursor {
            let _ = write!(text, "\nnext_cursor: {c}");
        }
        Ok(ok(text, &out))
    }

    #[tool(
        description = "Read a note (by note:// URI, vault path, or note name/alias): frontmatter plus text. Use `section` for one heading's section, and `offset` to continue a long note.",
        output_schema = schema_for_output::<ReadOutput>(),
        annotations(title = "Read note", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn read_note(
        &self,
        Parameters(p): Parameters<ReadParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let (rel, uri, title) = {
            let idx = self.read();
            let id = match self.resolve(&idx, &p.uri) {
                Ok(id) => id,
                Err(e) => return Ok(fail(e)),
            };
            let Some(e) = idx.get(id) else {
                return Ok(fail("That note was just removed."));
            };
            (e.rel.clone(), e.uri(), e.title.clone())
        };
        let text = match self.load(&rel) {
            Ok(t) => t,
            Err(e) => return Ok(fail(e)),
        };
        let parsed = note::parse(&text);
        let body = text.get(parsed.body_start..).unwrap_or("");
        let part = match p
            .section
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(name) => match note::section(body, &parsed.headings, name) {
                Some(s) => s,
                None => {
                    let mut msg =
                        String::from("No section with that heading. Headings in this note:");
                    for h in parsed.headings.iter().take(50) {
                        let _ = write!(msg, "\n{} {}", "#".repeat(h.level as usize), h.text);
                    }
                    if parsed.headings.is_empty() {
                        msg.push_str(" (none)");
                    }
                    return Ok(fail(msg));
                }
            },
            None => body,
        };
        let total = part.chars().count();
        let offset = p.offset.unwrap_or(0);
        if offset > total {
            return Ok(fail(format!(
                "offset {offset} is past the end (the text has {total} characters)."
            )));
        }
        let max = p.max_chars.unwrap_or(6000).clamp(1, MAX_READ_CHARS);
        let content: String = part.chars().skip(offset).take(max).collect();
        let end = offset + content.chars().count();
        let next_offset = (end < total).then_some(end);
        let out = ReadOutput {
            uri,
            title,
            frontmatter: parsed.frontmatter.properties.clone(),
            frontmatter_error: parsed.frontmatter.error.clone(),
            content,
            next_offset,
            total_chars: total,
        };
        let mut text = format!("# {} ({})\n", out.title, out.uri);
        if let Some(fm) = &out.frontmatter
            && !fm.is_empty()
        {
            let _ = writeln!(text, "frontmatter: {}", Value::Object(fm.clone()));
        }
        if let Some(err) = &out.frontmatter_error {
            let _ = writeln!(text, "frontmatter unreadable: {err}");
        }
        text.push_str(&out.content);
        if let Some(n) = out.next_offset {
            let _ = write!(
                text,
                "\n[… {} more characters; call read_note again with offset={n}]",
                total - n
            );
        }
        Ok(ok(text, &out))
    }

    #[tool(
        description = "Links of a note: outgoing links (wikilinks, embeds, markdown and frontmatter links; uri null when unresolved or not a note) and backlinks (notes linking to it).",
        output_schema = schema_for_output::<LinksOutput>(),
        annotations(title = "Get links", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn get_links(
        &self,
        Parameters(p): Parameters<LinksParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let idx = self.read();
        let id = match self.resolve(&idx, &p.uri) {
            Ok(id) => id,
            Err(e) => return Ok(fail(e)),
        };
        let Some(e) = idx.get(id) else {
            return Ok(fail("That note was just removed."));
        };
        let mut outgoing: Vec<OutgoingLink> = Vec::new();
        for o in idx.outgoing(id) {
            let uri = match o.target {
                Target::Note(t) => idx.get(t).map(|n| n.uri()),
                _ => None,
            };
            if !outgoing
                .iter()
                .any(|x| x.target == o.link.target && x.uri == uri)
            {
                outgoing.push(OutgoingLink {
                    target: o.link.target,
                    uri,
                });
            }
        }
        let backlinks: Vec<Backlink> = idx
            .backlinks(id)
            .into_iter()
            .filter_map(|b| {
                idx.get(b).map(|n| Backlink {
                    uri: n.uri(),
                    title: n.title.clone(),
                })
            })
            .collect();
        let out = LinksOutput {
            uri: e.uri(),
            outgoing,
            backlinks,
        };
        let mut text = format!("{}\noutgoing ({}):", out.uri, out.outgoing.len());
        for o in &out.outgoing {
            let _ = write!(
                text,
                "\n- [[{}]] -> {}",
                o.target,
                o.uri.as_deref().unwrap_or("(unresolved or not a note)")
            );
        }
        let _ = write!(text, "\nbacklinks ({}):", out.backlinks.len());
        for b in &out.backlinks {
            let _ = write!(text, "\n- {}", b.uri);
        }
        Ok(ok(text, &out))
    }

    #[tool(
        description = "All tags in the vault (frontmatter and body, lowercase, nested with /) with how many notes carry each, most used first; optionally only those starting with a prefix.",
        output_schema = schema_for_output::<TagsOutput>(),
        annotations(title = "List tags", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_tags(
        &self,
        Parameters(p): Parameters<TagsParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let idx = self.read();
        let out = TagsOutput {
            tags: idx
                .tags(p.prefix.as_deref())
                .into_iter()
                .map(|(tag, count)| TagCount { tag, count })
                .collect(),
        };
        let mut text = format!("{} tags", out.tags.len());
        for t in &out.tags {
            let _ = write!(text, "\n#{} ({})", t.tag, t.count);
        }
        Ok(ok(text, &out))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for KbServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("obsidian-kb", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Read-only access to one Obsidian vault. Start with search_notes (keywords or a question), \
                 then read_note on a hit's uri. Notes are named note://<vault path without .md>; names and \
                 aliases work too. get_links shows links and backlinks; list_tags and list_notes browse.",
            )
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let after = match request.and_then(|r| r.cursor) {
            Some(c) => Some(
                decode_cursor(&c)
                    .ok_or_else(|| ErrorData::invalid_params("invalid cursor", None))?,
            ),
            None => None,
        };
        let idx = self.read();
        let (ids, next) = idx.list(None, None, after.as_ref(), RESOURCE_PAGE);
        let resources = ids
            .iter()
            .filter_map(|id| idx.get(*id))
            .map(|e| {
                Resource::new(e.resource_uri(), e.key.clone())
                    .with_title(e.title.clone())
                    .with_mime_type("text/markdown")
                    .with_size(e.bytes)
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next.as_ref().map(encode_cursor);
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("note://{path}", "note")
                .with_title("Vault note")
                .with_description(
                    "A note by its vault-relative path without .md, e.g. note://Folder/My Note",
                )
                .with_mime_type("text/markdown"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (rel, uri) = {
            let idx = self.read();
            let id = self
                .resolve(&idx, &request.uri)
                .map_err(|e| ErrorData::resource_not_found(e, None))?;
            let e = idx
                .get(id)
                .ok_or_else(|| ErrorData::resource_not_found("note was just removed", None))?;
            (e.rel.clone(), e.resource_uri())
        };
        let text = self
            .load(&rel)
            .map_err(|e| ErrorData::resource_not_found(e, None))?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("text/markdown"),
        ])
        .into())
    }
}
