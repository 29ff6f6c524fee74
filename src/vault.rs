//! The vault server's tools as typed calls. Which exposed tool is `search_notes`, `read_note`, …
//! is found by where each routes (so a `server__` prefix changes nothing), and results are read
//! through `obsidian_kb::api`, the server's own types: the agent and the study commands never
//! look at tool names or JSON keys themselves.

use std::collections::HashMap;

use obsidian_kb::api;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::grammar::ValueDomains;
use crate::tool::ToolHost;
use crate::tool::{ToolCall, ToolOutput, ToolSpec};

/// The tools of one vault server, under the names this run exposes them by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultTools {
    /// The configured server's name.
    pub server: String,
    /// API tool name (`api::SEARCH_NOTES`, …) → exposed name.
    exposed: HashMap<&'static str, String>,
}

/// Why a vault tool's result could not be read.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The tool said the call failed; the text says why.
    #[error("{tool} failed: {text}")]
    Failed {
        /// The exposed tool name.
        tool: String,
        /// The server's words.
        text: String,
    },
    /// The result has no structured content, or not of the contract's shape.
    #[error("{tool} returned a result of an unexpected shape: {why}")]
    Shape {
        /// The exposed tool name.
        tool: String,
        /// What did not fit.
        why: String,
    },
}

/// A vault tool's result, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum VaultResult {
    /// Passages from `search_notes`.
    Search(api::SearchOutput),
    /// A note (or one section) from `read_note`.
    Read(api::ReadOutput),
    /// Links and backlinks from `get_links`.
    Links(api::LinksOutput),
    /// A page of `list_notes`.
    List(api::ListOutput),
}

impl VaultResult {
    /// The `note://` URIs the result carries, in order, each once: passages' notes, the note
    /// read, linked and linking notes, listed notes.
    pub fn notes(&self) -> Vec<String> {
        let uris: Vec<&str> = match self {
            VaultResult::Search(out) => out.hits.iter().map(|h| h.uri.as_str()).collect(),
            VaultResult::Read(out) => vec![out.uri.as_str()],
            VaultResult::Links(out) => out
                .outgoing
                .iter()
                .filter_map(|l| l.uri.as_deref())
                .chain(out.backlinks.iter().map(|b| b.uri.as_str()))
                .collect(),
            VaultResult::List(out) => out.notes.iter().map(|n| n.uri.as_str()).collect(),
        };
        let mut notes: Vec<String> = Vec::new();
        for uri in uris {
            if !notes.iter().any(|n| n == uri) {
                notes.push(uri.to_string());
            }
        }
        notes
    }
}

impl VaultTools {
    /// The vault server among `host`'s: the server that offers `search_notes`, with every
    /// contract tool it offers. `None` when no server does.
    pub fn find(host: &impl ToolHost) -> Option<VaultTools> {
        let routed: Vec<(String, crate::tool::ToolRoute)> = host
            .tools()
            .into_iter()
            .filter_map(|t| Some((t.name.clone(), host.route(&t.name)?)))
            .collect();
        let server = routed
            .iter()
            .find(|(_, r)| r.tool == api::SEARCH_NOTES)?
            .1
            .server
            .clone();
        let exposed = routed
            .into_iter()
            .filter(|(_, r)| r.server == server)
            .filter_map(|(name, r)| {
                let api_name = api::TOOLS_BY_USEFULNESS
                    .into_iter()
                    .find(|t| *t == r.tool)?;
                Some((api_name, name))
            })
            .collect();
        Some(VaultTools { server, exposed })
    }

    /// The exposed name of API tool `api_name`, if the server offers it.
    pub fn name(&self, api_name: &str) -> Option<&str> {
        self.exposed.get(api_name).map(String::as_str)
    }

    /// The API name of the exposed tool `exposed`, if it is one of this server's.
    fn api_name(&self, exposed: &str) -> Option<&'static str> {
        self.exposed
            .iter()
            .find(|(_, name)| *name == exposed)
            .map(|(api_name, _)| *api_name)
    }

    /// A call of API tool `api_name` with `params`; `None` when the server lacks the tool.
    pub fn call(&self, api_name: &str, params: &impl Serialize) -> Option<ToolCall> {
        let arguments = match serde_json::to_value(params) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        Some(ToolCall {
            name: self.name(api_name)?.to_string(),
            arguments,
        })
    }

    /// Decodes the output of `call` when it is a call of one of this server's tools that
    /// succeeded; `None` for other tools, failed calls and tools whose results carry no sources.
    pub fn result(&self, call: &ToolCall, out: &ToolOutput) -> Option<VaultResult> {
        if out.is_error {
            return None;
        }
        let decoded = match self.api_name(&call.name)? {
            api::SEARCH_NOTES => decode(call, out).map(VaultResult::Search),
            api::READ_NOTE => decode(call, out).map(VaultResult::Read),
            api::GET_LINKS => decode(call, out).map(VaultResult::Links),
            api::LIST_NOTES => decode(call, out).map(VaultResult::List),
            _ => return None,
        };
        decoded.inspect_err(|e| tracing::warn!("{e}")).ok()
    }

    /// `call` with its `max_chars` lowered to `max_chars` when it reads a note: a note longer
    /// than the context can hold is then paged by the server (with an exact `next_offset`)
    /// instead of cut mid-text. Other calls come back unchanged.
    pub fn limit_read(&self, call: &ToolCall, max_chars: usize) -> ToolCall {
        if self.api_name(&call.name) != Some(api::READ_NOTE) {
            return call.clone();
        }
        let Ok(mut params) =
            serde_json::from_value::<api::ReadParams>(Value::Object(call.arguments.clone()))
        else {
            return call.clone();
        };
        let asked = params.max_chars.unwrap_or(api::DEFAULT_READ_CHARS);
        params.max_chars = Some(asked.min(max_chars).max(1));
        self.call(api::READ_NOTE, &params)
            .unwrap_or_else(|| call.clone())
    }

    /// Whether `tools` holds one that another server than this one offers (as `host` routes
    /// it): a tool that could bring what a vault search did not.
    pub fn others_offered(&self, host: &impl ToolHost, tools: &[ToolSpec]) -> bool {
        tools
            .iter()
            .any(|t| host.route(&t.name).is_some_and(|r| r.server != self.server))
    }

    /// The tools with this server's first, most useful first (search, read, links, …): small
    /// models lean towards what they read first.
    pub fn order(&self, tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
        let rank = |t: &ToolSpec| {
            self.api_name(&t.name)
                .and_then(|n| api::TOOLS_BY_USEFULNESS.iter().position(|u| *u == n))
                .unwrap_or(api::TOOLS_BY_USEFULNESS.len())
        };
        let mut tools = tools;
        tools.sort_by_key(rank);
        tools
    }

    /// The grammar domains for the decision step: note references held to `references` (the
    /// URIs this conversation has seen; with none, those tools cannot be called), `read_note`'s
    /// section to `sections` seen and its offset to `offsets` a paged read gave (each left out
    /// when none is known), and `max_chars` left out (recall sizes reads to the context itself).
    /// Small models invent headings and page through notes with made-up offsets; each such
    /// call fails or repeats and costs a decision step.
    pub fn argument_domains(
        &self,
        references: &[String],
        sections: &[String],
        offsets: &[usize],
    ) -> ValueDomains {
        let mut domains = ValueDomains::new();
        let strings = |values: &[String]| values.iter().map(|v| Value::from(v.as_str())).collect();
        for (tool, param) in api::NOTE_REFERENCE_PARAMS {
            if let Some(name) = self.name(tool) {
                domains
                    .entry(name.to_string())
                    .or_default()
                    .insert(param.to_string(), strings(references));
            }
        }
        if let Some(name) = self.name(api::READ_NOTE) {
            let read = domains.entry(name.to_string()).or_default();
            read.insert(api::READ_SECTION.to_string(), strings(sections));
            read.insert(
                api::READ_OFFSET.to_string(),
                offsets.iter().map(|&o| Value::from(o)).collect(),
            );
            read.insert(api::READ_MAX_CHARS.to_string(), Vec::new());
        }
        domains
    }
}

/// The vault path of a note's `note://` URI as the vault tools return it (`note://Folder/Note`
/// → `Folder/Note`); anything else as it is.
pub fn note_path(uri: &str) -> &str {
    uri.strip_prefix("note://").unwrap_or(uri)
}

/// The output's structured content as `T`, or why not.
pub fn decode<T: DeserializeOwned>(call: &ToolCall, out: &ToolOutput) -> Result<T, VaultError> {
    if out.is_error {
        return Err(VaultError::Failed {
            tool: call.name.clone(),
            text: out.text.clone(),
        });
    }
    let shape = |why: String| VaultError::Shape {
        tool: call.name.clone(),
        why,
    };
    let value = out
        .structured
        .clone()
        .ok_or_else(|| shape("no structured content".to_string()))?;
    serde_json::from_value(value).map_err(|e| shape(e.to_string()))
}

/// Runs calls of one vault server's tools from synchronous code (the study commands).
pub struct VaultClient<'a, H> {
    runtime: &'a tokio::runtime::Runtime,
    host: &'a H,
    /// The server's tools.
    pub tools: VaultTools,
}

impl<'a, H: ToolHost> VaultClient<'a, H> {
    /// The client of `host`'s vault server, or `None` when there is none.
    pub fn new(runtime: &'a tokio::runtime::Runtime, host: &'a H) -> Option<Self> {
        Some(VaultClient {
            runtime,
            host,
            tools: VaultTools::find(host)?,
        })
    }

    /// Calls API tool `api_name` and decodes its result as `T`.
    pub fn call<T: DeserializeOwned>(
        &self,
        api_name: &str,
        params: &impl Serialize,
    ) -> Result<T, VaultError> {
        let call = self
            .tools
            .call(api_name, params)
            .ok_or_else(|| VaultError::Failed {
                tool: api_name.to_string(),
                text: format!("server {} offers no {api_name} tool", self.tools.server),
            })?;
        let out = self.runtime.block_on(self.host.call(&call));
        decode(&call, &out)
    }
}
