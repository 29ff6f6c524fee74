//! The MCP face of the index: five read-only tools, the notes as resources, and a status
//! resource (`obsidian-kb://status`). With its modules (`pre_init`, `sessions`), the only
//! code that imports `rmcp`. Every tool answers with a compact text rendering for the model plus
//! `structuredContent` matching its declared output schema; bad input is an `isError` result
//! whose text says what to do next, never a crash.
//!
//! **Invariant:** nothing returned here contains an absolute path: notes are named by
//! `note://` URIs and errors by vault-relative paths, and rejected input is never echoed.
//!
//! Every tool call and resource read runs on the blocking pool, at most one per core at a
//! time (`KbServer::run`): index work is CPU-bound and file reads can stall, and neither may
//! hold the async workers that read requests and answer `ping`. The rest wait their turn.

use std::fmt::Write as _;
use std::sync::Arc;

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
use rmcp::{RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use crate::api::{
    self, Backlink, LinksOutput, LinksParams, ListOutput, ListParams, NoteSummary, OutgoingLink,
    ReadOutput, ReadParams, SearchHit, SearchOutput, SearchParams, TagCount, TagsOutput,
    TagsParams,
};
use crate::dates::Period;
use crate::index::{NoteFilter, SharedIndex, VaultIndex};
use crate::resolve::{RefError, Target};
use crate::semantic::Semantic;
use crate::vault::{VaultError, rfc3339};
use crate::{excerpt, note};

mod pre_init;
mod sessions;

pub use pre_init::PreInitFilter;
pub use sessions::{MAX_SESSIONS, SESSION_IDLE};

/// Serves `index` over MCP on stdin/stdout until the client closes the connection; search is
/// hybrid once `semantic` has vectors.
pub async fn serve_stdio(
    index: SharedIndex,
    semantic: Option<Arc<Semantic>>,
    embedding_wait: std::time::Duration,
) -> Result<(), crate::Error> {
    let (stdin, stdout) = rmcp::transport::stdio();
    let transport = PreInitFilter::new(rmcp::transport::async_rw::AsyncRwTransport::new_server(
        stdin, stdout,
    ));
    let service = KbServer::new(index, semantic)
        .with_embedding_wait(embedding_wait)
        .serve(transport)
        .await
        .map_err(|e| crate::Error::Session(e.to_string()))?;
    service
        .waiting()
        .await
        .map_err(|e| crate::Error::Session(e.to_string()))?;
    Ok(())
}

/// The browser origins allowed to call over HTTP: pages on this machine (the MCP Inspector's
/// web UI, say). The MCP specification asks HTTP servers to check `Origin` (DNS rebinding);
/// requests with no `Origin` (every non-browser client) pass.
pub const HTTP_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// Serves `index` over MCP Streamable HTTP at `/mcp` on `listener` until `shutdown`: each
/// client session gets its own handler on the one index. rmcp checks `Host` against loopback
/// names and `Origin` against [`HTTP_ORIGINS`] plus `extra_origins`. At most [`MAX_SESSIONS`]
/// sessions live at once, each closed after [`SESSION_IDLE`] without a message.
pub async fn serve_http(
    index: SharedIndex,
    semantic: Option<Arc<Semantic>>,
    embedding_wait: std::time::Duration,
    listener: tokio::net::TcpListener,
    extra_origins: Vec<String>,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), crate::Error> {
    let server = KbServer::new(index, semantic).with_embedding_wait(embedding_wait);
    let sessions = sessions::BoundedSessions::new(MAX_SESSIONS, SESSION_IDLE);
    serve_http_with(
        server,
        Arc::new(sessions),
        listener,
        extra_origins,
        shutdown,
    )
    .await
}

/// [`serve_http`] with its sessions kept by `sessions` (tests use a small cap and expiry).
async fn serve_http_with(
    server: KbServer,
    sessions: Arc<sessions::BoundedSessions>,
    listener: tokio::net::TcpListener,
    extra_origins: Vec<String>,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), crate::Error> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let port = listener
        .local_addr()
        .map_err(|e| crate::Error::Session(e.to_string()))?
        .port();
    let hosts = ["localhost", "127.0.0.1", "::1", "[::1]"];
    let allowed_hosts = hosts
        .iter()
        .map(|h| h.to_string())
        .chain(hosts.iter().map(|h| format!("{h}:{port}")));
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(
            HTTP_ORIGINS
                .iter()
                .map(|o| o.to_string())
                .chain(extra_origins),
        )
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
    let router = axum::Router::new().nest_service("/mcp", service);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(|e| crate::Error::Session(e.to_string()))
}

const RESOURCE_PAGE: usize = 200;
const MAX_LIMIT: usize = 500;
/// Most search hits per call (what the schema promises; each hit is a passage of up to
/// [`api::PASSAGE_CHARS`] characters).
const MAX_SEARCH_LIMIT: usize = 50;
/// Most passages of one note in a search result.
const MAX_PASSAGES_PER_NOTE: usize = 3;
/// The shortest excerpt asked for that is honoured: shorter is rarely a whole sentence.
const MIN_EXCERPT_CHARS: usize = 50;
const MAX_READ_CHARS: usize = 100_000;

/// The MCP server.
#[derive(Clone)]
pub struct KbServer {
    tools: Tools,
    /// Calls running on the blocking pool at once (one per core); the others wait here, as
    /// futures, not threads.
    limit: Arc<Semaphore>,
    tool_router: ToolRouter<Self>,
}

/// The blocking half of the server: everything that takes the index lock or touches the disk.
/// Cheap to clone (one `Arc`), so each call moves its own copy onto the blocking pool.
#[derive(Clone)]
struct Tools {
    index: SharedIndex,
    /// The vault's canonical root (fixed for the server's life), to check it still exists
    /// without taking the index lock.
    root: Arc<std::path::Path>,
    /// Search by meaning, when an embedding model was given.
    semantic: Option<Arc<Semantic>>,
    /// How long a search waits for the first embedding pass (see [`Semantic::wait_for_first_pass`]).
    embedding_wait: std::time::Duration,
}

fn ok<T: Serialize>(text: String, value: &T) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = serde_json::to_value(value).ok();
    r
}

fn fail(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

/// The period a tool's `from` and `to` ask for (either may be left out), or why it is none.
fn period_asked(from: Option<&str>, to: Option<&str>) -> Result<Option<Period>, String> {
    let bound = |name: &str, value: Option<&str>, end: bool| {
        match value.map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => Period::parse_bound(v, end).map(Some).ok_or_else(|| {
                format!("`{name}` is not a date: give one as 2021-05-11, a month as 2021-05 or a year as 2021 (got {v:?}).")
            }),
        }
    };
    let (from, to) = (bound("from", from, false)?, bound("to", to, true)?);
    Period::between(from, to).map_err(|(from, to)| {
        format!("`from` ({from}) is after `to` ({to}); give the earlier date as `from`.")
    })
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

impl Tools {
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
                if let Some(skipped) = idx.skipped_note(input) {
                    return Err(format!(
                        "That note is in the vault but was left out of the index: {}.",
                        skipped.reason
                    ));
                }
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
                if matches!(
                    e,
                    VaultError::Gone(_) | VaultError::Outside(_) | VaultError::NotAFile(_)
                ) && let Ok(mut w) = self.index.write()
                {
                    w.refresh(rel);
                }
                Err(format!("{e}."))
            }
        }
    }

    /// Why the vault cannot be served right now, if it cannot: its folder is gone (deleted,
    /// moved, unmounted) or cannot be read. Checked on every call, so the answer is an error
    /// rather than an empty vault; the watcher rebuilds the index when the folder comes back.
    fn vault_missing(&self) -> Option<&'static str> {
        crate::vault::unavailable(&self.root).map(crate::vault::Unavailable::message)
    }

    /// The status resource's content.
    fn status(&self) -> api::Status {
        let embedding = self.semantic.as_deref().map(Semantic::status);
        // Search ranks by meaning once every passage has a vector.
        let hybrid = embedding
            .as_ref()
            .is_some_and(|e| e.state == api::EmbeddingState::Ready && e.total > 0);
        api::Status {
            notes: self.read().len(),
            vault_available: self.vault_missing().is_none(),
            ranking: if hybrid {
                api::Ranking::Hybrid
            } else {
                api::Ranking::Lexical
            },
            embedding,
        }
    }

    fn search_notes(&self, p: SearchParams) -> Result<CallToolResult, ErrorData> {
        if p.query.trim().is_empty() {
            return Ok(fail(
                "The query is empty; give words or a question to search for.",
            ));
        }
        if p.query.len() > 2000 {
            return Ok(fail("The query is too long (at most 2000 bytes)."));
        }
        let period = match period_asked(p.from.as_deref(), p.to.as_deref()) {
            Ok(period) => period,
            Err(why) => return Ok(fail(why)),
        };
        let limit = p.limit.unwrap_or(5).clamp(1, MAX_SEARCH_LIMIT);
        let passages = p.passages.unwrap_or(1).clamp(1, MAX_PASSAGES_PER_NOTE);
        // The query is embedded before the index lock is taken: it may wait for a batch of
        // background embedding to finish.
        let semantic = self.semantic.as_deref().filter(|s| s.covers(&p.query));
        let by_meaning = match semantic.map(|s| {
            s.wait_for_first_pass(self.embedding_wait);
            s.rank(&p.query)
        }) {
            Some(Ok(ranked)) => ranked,
            Some(Err(e)) => {
                tracing::warn!("searching by words alone: {e}");
                None
            }
            None => None,
        };
        let idx = self.read();
        let hits = idx.search(
            &p.query,
            limit,
            passages,
            &NoteFilter {
                folder: p.folder.as_deref(),
                tag: p.tag.as_deref(),
                period,
            },
            by_meaning.as_deref(),
        );
        let vault_name = idx.vault().name();
        // One hit per passage: a note's further passages follow its best one.
        let mut found = Vec::new();
        for h in hits {
            let Some(e) = idx.get(h.id) else { continue };
            let score = (f64::from(h.score) * 1000.0).round() / 1000.0;
            for p in h.passages {
                let heading = p.heading_path.last().map(String::as_str);
                found.push(SearchHit {
                    uri: e.uri(),
                    title: e.title.clone(),
                    link: api::obsidian_link(&vault_name, &e.rel, heading),
                    heading_path: p.heading_path,
                    passage: p.text,
                    excerpt: None,
                    score,
                    matched: h.matched,
                });
            }
        }
        let mut out = SearchOutput {
            hits: found,
            ranking: if by_meaning.is_some() {
                api::Ranking::Hybrid
            } else {
                api::Ranking::Lexical
            },
            embedded: self.semantic.as_deref().map(|s| {
                let p = s.progress();
                api::EmbeddingProgress {
                    passages: p.embedded,
                    total: p.total,
                }
            }),
        };
        let tokenizer = idx.tokenizer();
        drop(idx);
        if let Some(bound) = p.excerpt {
            // Unit embeddings wait for the query thread, so the index lock is released first.
            let bound = bound.clamp(MIN_EXCERPT_CHARS, api::PASSAGE_CHARS);
            add_excerpts(&mut out.hits, &p.query, bound, semantic, tokenizer);
        }
        let mut text = String::new();
        if out.hits.is_empty() {
            text.push_str(
                "No matching notes. Try other words, or list_notes / list_tags to browse.",
            );
        }
        for (i, h) in out.hits.iter().enumerate() {
            render_hit(&mut text, i + 1, h);
        }
        Ok(ok(text.trim_end().to_string(), &out))
    }

    fn list_notes(&self, p: ListParams) -> Result<CallToolResult, ErrorData> {
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
        let period = match period_asked(p.from.as_deref(), p.to.as_deref()) {
            Ok(period) => period,
            Err(why) => return Ok(fail(why)),
        };
        let filter = NoteFilter {
            folder: p.folder.as_deref(),
            tag: p.tag.as_deref(),
            period,
        };
        let idx = self.read();
        let (ids, next) = idx.list(&filter, after.as_ref(), limit);
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

    fn read_note(&self, p: ReadParams) -> Result<CallToolResult, ErrorData> {
        let (rel, uri, title, vault_name) = {
            let idx = self.read();
            let id = match self.resolve(&idx, &p.uri) {
                Ok(id) => id,
                Err(e) => return Ok(fail(e)),
            };
            let Some(e) = idx.get(id) else {
                return Ok(fail("That note was just removed."));
            };
            (e.rel.clone(), e.uri(), e.title.clone(), idx.vault().name())
        };
        let text = match self.load(&rel) {
            Ok(t) => t,
            Err(e) => return Ok(fail(e)),
        };
        let parsed = note::parse(&text);
        let body = text.get(parsed.body_start..).unwrap_or("");
        let (part, heading) = match p
            .section
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(name) => match note::find_section(&parsed.headings, name)
                .and_then(|i| Some((note::section_at(body, &parsed.headings, i)?, i)))
            {
                // The link names the heading as written in the note, not as asked.
                Some((s, i)) => (s, Some(parsed.headings[i].text.as_str())),
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
            None => (body, None),
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
            link: api::obsidian_link(&vault_name, &rel, heading),
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

    fn get_links(&self, p: LinksParams) -> Result<CallToolResult, ErrorData> {
        let idx = self.read();
        let id = match self.resolve(&idx, &p.uri) {
            Ok(id) => id,
            Err(e) => return Ok(fail(e)),
        };
        let Some(e) = idx.get(id) else {
            return Ok(fail("That note was just removed."));
        };
        // Both lists are cut at MAX_LINKS (a note with 100,000 links once answered with 9 MB);
        // the totals say how many there are.
        let (shown, outgoing_total) = idx.outgoing_distinct(id, api::MAX_LINKS);
        let outgoing: Vec<OutgoingLink> = shown
            .into_iter()
            .map(|o| OutgoingLink {
                uri: match o.target {
                    Target::Note(t) => idx.get(t).map(|n| n.uri()),
                    _ => None,
                },
                target: o.link.target,
            })
            .collect();
        let backlink_ids = idx.backlinks(id);
        let backlinks: Vec<Backlink> = backlink_ids
            .iter()
            .take(api::MAX_LINKS)
            .filter_map(|&b| {
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
            outgoing_total,
            backlinks_total: backlink_ids.len(),
        };
        let count = |shown: usize, total: usize| {
            if shown < total {
                format!("{total}, the first {shown} shown")
            } else {
                total.to_string()
            }
        };
        let mut text = format!(
            "{}\noutgoing ({}):",
            out.uri,
            count(out.outgoing.len(), out.outgoing_total)
        );
        for o in &out.outgoing {
            let _ = write!(
                text,
                "\n- [[{}]] -> {}",
                o.target,
                o.uri.as_deref().unwrap_or("(unresolved or not a note)")
            );
        }
        let _ = write!(
            text,
            "\nbacklinks ({}):",
            count(out.backlinks.len(), out.backlinks_total)
        );
        for b in &out.backlinks {
            let _ = write!(text, "\n- {}", b.uri);
        }
        Ok(ok(text, &out))
    }

    fn list_tags(&self, p: TagsParams) -> Result<CallToolResult, ErrorData> {
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

/// Appends one search hit for the model, compactly: a numbered line with the title, the heading
/// path and the URI, then the passage, then a blank line. A first heading that only repeats
/// the title (the usual `# Title`) is left out of the line.
/// Each hit's excerpt within `bound` characters ([`excerpt::excerpts`]), its sentences weighed
/// by meaning too where `semantic` has a model for the query's language: every unit of every
/// hit embedded in one batch, on the query thread.
fn add_excerpts(
    hits: &mut [SearchHit],
    query: &str,
    bound: usize,
    semantic: Option<&Semantic>,
    tokenizer: crate::search::Tokenizer,
) {
    let passages: Vec<&str> = hits.iter().map(|h| h.passage.as_str()).collect();
    let units: Vec<Vec<&str>> = passages.iter().map(|p| excerpt::units(p)).collect();
    let all: Vec<&str> = units.iter().flatten().copied().collect();
    let similarities = match semantic.map(|s| s.similarities(query, &all)) {
        Some(Ok(found)) => found,
        Some(Err(e)) => {
            tracing::warn!("excerpts by words alone: {e}");
            None
        }
        None => None,
    };
    let meaning: Option<Vec<Vec<f32>>> = similarities.map(|similarities| {
        let mut rest = similarities.as_slice();
        units
            .iter()
            .map(|u| {
                let (row, tail) = rest.split_at(u.len());
                rest = tail;
                row.to_vec()
            })
            .collect()
    });
    let cuts = excerpt::excerpts(query, &passages, &[bound], meaning.as_deref(), tokenizer);
    for (hit, cut) in hits.iter_mut().zip(cuts) {
        hit.excerpt = Some(cut);
    }
}

fn render_hit(text: &mut String, n: usize, h: &SearchHit) {
    let _ = write!(text, "{n}. {}", h.title);
    let repeats_title =
        |s: &String| note::normalize_heading(s) == note::normalize_heading(&h.title);
    let skip = usize::from(h.heading_path.first().is_some_and(repeats_title));
    for heading in &h.heading_path[skip..] {
        let _ = write!(text, " › {heading}");
    }
    let _ = writeln!(text, " ({})", h.uri);
    let shown = h.excerpt.as_deref().unwrap_or(&h.passage);
    if !shown.is_empty() {
        let _ = writeln!(text, "{shown}");
    }
    text.push('\n');
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

impl KbServer {
    /// Runs `work` on the blocking pool once one of the per-core slots is free. Waiting for a
    /// slot costs no thread, so a flood of calls queues here while `ping` and cheap protocol
    /// messages are answered at once. A panic in `work` becomes an internal error for that
    /// call alone.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Tools) -> Result<T, ErrorData> + Send + 'static,
    ) -> Result<T, ErrorData> {
        let permit = self
            .limit
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ErrorData::internal_error("the server is shutting down", None))?;
        let tools = self.tools.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work(&tools)
        })
        .await
        .unwrap_or_else(|_| {
            // Not the panic's message: it may name an absolute path.
            tracing::error!("a request panicked; the server keeps serving");
            Err(ErrorData::internal_error(
                "the request failed unexpectedly; the server keeps serving",
                None,
            ))
        })
    }

    /// [`Self::run`] for a tool: a missing vault folder is an `isError` result.
    async fn run_tool(
        &self,
        work: impl FnOnce(&Tools) -> Result<CallToolResult, ErrorData> + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(move |t| match t.vault_missing() {
            Some(why) => Ok(fail(why)),
            None => work(t),
        })
        .await
    }
}

#[tool_router]
impl KbServer {
    /// How long a search may wait for the first embedding pass over the vault (default: not
    /// at all).
    pub fn with_embedding_wait(mut self, wait: std::time::Duration) -> Self {
        self.tools.embedding_wait = wait;
        self
    }

    /// Creates a server over a shared index, with search by meaning when `semantic` is given.
    pub fn new(index: SharedIndex, semantic: Option<Arc<Semantic>>) -> Self {
        let mut tool_router = Self::tool_router();
        for route in tool_router.map.values_mut() {
            let tool = &mut route.attr;
            tool.input_schema = Arc::new(portable_schema(&tool.input_schema));
            if let Some(output) = &tool.output_schema {
                tool.output_schema = Some(Arc::new(portable_schema(output)));
            }
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let root = Arc::from(
            index
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .vault()
                .root(),
        );
        Self {
            tools: Tools {
                index,
                root,
                semantic,
                embedding_wait: std::time::Duration::ZERO,
            },
            limit: Arc::new(Semaphore::new(cores)),
            tool_router,
        }
    }

    #[tool(
        description = "Full-text search over the vault's notes (titles, aliases, headings, tags, text). Accepts keywords or a natural-language question. Returns the best notes, each with its passage that best matches: note URI, title, heading path, passage text, score and an obsidian:// link. Read more of a hit with read_note (its `section` takes the last heading of the path).",
        output_schema = schema_for_output::<SearchOutput>(),
        annotations(title = "Search notes", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn search_notes(
        &self,
        Parameters(p): Parameters<SearchParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run_tool(move |t| t.search_notes(p)).await
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
        self.run_tool(move |t| t.list_notes(p)).await
    }

    #[tool(
        description = "Read a note (by note:// URI, vault path, or note name/alias): frontmatter plus text and an obsidian:// link. Use `section` (a heading, e.g. the last one of a search hit's heading path) to read just that section, and `offset` to continue a long note.",
        output_schema = schema_for_output::<ReadOutput>(),
        annotations(title = "Read note", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn read_note(
        &self,
        Parameters(p): Parameters<ReadParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run_tool(move |t| t.read_note(p)).await
    }

    #[tool(
        description = "Links of a note: outgoing links (wikilinks, embeds, markdown and frontmatter links; uri null when unresolved or not a note) and backlinks (notes linking to it). Each list holds at most 500 entries; outgoing_total and backlinks_total give the full counts.",
        output_schema = schema_for_output::<LinksOutput>(),
        annotations(title = "Get links", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn get_links(
        &self,
        Parameters(p): Parameters<LinksParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run_tool(move |t| t.get_links(p)).await
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
        self.run_tool(move |t| t.list_tags(p)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for KbServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("obsidian-kb", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Read-only access to one Obsidian vault. Start with search_notes (keywords or a question): \
                 each hit is a note's best-matching passage (note URI, title, heading path, passage text, \
                 score, obsidian:// link). {} For more, read_note on a hit's uri, with `section` set to a \
                 heading to read just that section. Notes are named note://<vault path without .md>; names \
                 and aliases work too. get_links shows links and backlinks; list_tags and list_notes browse.",
                match &self.tools.semantic {
                    Some(_) => "Search matches by words and by meaning (local embeddings; by words alone until the vault is embedded, see each result's `ranking`).",
                    None => "Search matches by words only (no embedding model).",
                }
            ))
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
        self.run(move |t| {
            if let Some(why) = t.vault_missing() {
                return Err(ErrorData::internal_error(why, None));
            }
            let idx = t.read();
            let (ids, next) = idx.list(&NoteFilter::default(), after.as_ref(), RESOURCE_PAGE);
            // The status leads the first page; the notes follow.
            let status = after.is_none().then(|| {
                Resource::new(api::STATUS_URI, "status")
                    .with_title("Index status")
                    .with_description(
                        "Notes indexed, whether search is by meaning yet, and embedding progress (JSON).",
                    )
                    .with_mime_type("application/json")
            });
            let notes = ids.iter().filter_map(|id| idx.get(*id)).map(|e| {
                Resource::new(e.resource_uri(), e.key.clone())
                    .with_title(e.title.clone())
                    .with_mime_type("text/markdown")
                    .with_size(e.bytes)
            });
            let resources = status.into_iter().chain(notes).collect();
            let mut result = ListResourcesResult::with_all_items(resources);
            result.next_cursor = next.as_ref().map(encode_cursor);
            Ok(result)
        })
        .await
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
        self.run(move |t| {
            if request.uri == api::STATUS_URI {
                // Answered even while the vault is missing: that is part of what it reports.
                let json = serde_json::to_string_pretty(&t.status())
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                return Ok(ReadResourceResult::new(vec![
                    ResourceContents::text(json, api::STATUS_URI)
                        .with_mime_type("application/json"),
                ])
                .into());
            }
            if let Some(why) = t.vault_missing() {
                return Err(ErrorData::internal_error(why, None));
            }
            let (rel, uri) = {
                let idx = t.read();
                let id = t
                    .resolve(&idx, &request.uri)
                    .map_err(|e| ErrorData::resource_not_found(e, None))?;
                let e = idx
                    .get(id)
                    .ok_or_else(|| ErrorData::resource_not_found("note was just removed", None))?;
                (e.rel.clone(), e.resource_uri())
            };
            let text = t
                .load(&rel)
                .map_err(|e| ErrorData::resource_not_found(e, None))?;
            Ok(ReadResourceResult::new(vec![
                ResourceContents::text(text, uri).with_mime_type("text/markdown"),
            ])
            .into())
        })
        .await
    }
}
