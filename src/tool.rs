//! The IO-free vocabulary every stage shares: what a tool is, what a call to it is, what came back.
//!
//! Nothing here knows about MCP, llama.cpp or prompts; those stages convert to and from these types.
//! [`ToolHost`] is the seam between the agent and whatever runs the tools (the MCP manager, or a
//! test's fake), as `engine::ChatModel` is the seam to the model.

use std::future::Future;

use serde_json::{Map, Value};

/// A tool the model may call, as its server declared it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model writes in a call (after any `server__` prefix was applied).
    pub name: String,
    /// What the tool does, shown to the model on the decision step.
    pub description: String,
    /// JSON Schema of the arguments: `{"type": "object", "properties": {..}, "required": [..]}`.
    /// Property order is the declared order (serde_json `preserve_order`), which maps positional
    /// arguments.
    pub input_schema: Value,
}

impl ToolSpec {
    /// The declared parameters in order, with their schemas.
    pub fn parameters(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.input_schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|props| props.iter().map(|(k, v)| (k.as_str(), v)))
    }

    /// Names of the parameters the schema marks as required.
    pub fn required(&self) -> Vec<&str> {
        self.input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

/// One call the model asked for: a tool name and its keyword arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name exactly as the model wrote it.
    pub name: String,
    /// Arguments by parameter name, in the order written.
    pub arguments: Map<String, Value>,
}

impl ToolCall {
    /// The call as Llama 3.2 writes one: `name(param="value", n=3)`, values as Python literals.
    pub fn to_pythonic(&self) -> String {
        let args: Vec<String> = self
            .arguments
            .iter()
            .map(|(k, v)| format!("{k}={}", python_literal(v)))
            .collect();
        format!("{}({})", self.name, args.join(", "))
    }
}

/// A JSON value as a Python literal (`True`, `None`, strings in double quotes with JSON escapes,
/// which Python reads the same).
fn python_literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), python_literal(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// What one call produced: text for the model, plus structured data when the server gave any.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text shown to the model in the `ipython` message.
    pub text: String,
    /// The server's `structuredContent`, if any.
    pub structured: Option<Value>,
    /// True when the call failed (the text then says why, for the model to read and fix).
    pub is_error: bool,
}

/// What the agent loop needs from a set of tools; `mcp::McpManager` is the real one, tests use fakes.
pub trait ToolHost: Sync {
    /// Every callable tool, under the name the model must use.
    fn tools(&self) -> Vec<ToolSpec>;

    /// Where `tool` goes, or `None` if no such tool is routed.
    fn route(&self, tool: &str) -> Option<ToolRoute>;

    /// Runs one call. Never fails: problems come back as an `is_error` output the model can read.
    fn call(&self, call: &ToolCall) -> impl Future<Output = ToolOutput> + Send;
}

/// Where one exposed tool name leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRoute {
    /// The configured server name.
    pub server: String,
    /// The tool's name on that server (without any prefix).
    pub tool: String,
    /// True when the server is configured `readOnly`, so calls need no approval.
    pub read_only: bool,
    /// True when the exposed name got a `server__` prefix because another server offers the same
    /// tool name.
    pub prefixed: bool,
}

/// One entry of the routing table: the tool as the model sees it plus its route.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutedTool {
    /// The tool under its exposed name.
    pub spec: ToolSpec,
    /// Where calls to it go.
    pub route: ToolRoute,
}
