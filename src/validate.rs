//! Checks a parsed tool call against the live tool list before it runs: the tool exists, the
//! arguments are declared parameters, the required ones are there, each value has its declared
//! type. A failure is text written for the model to read and fix on its next attempt (with the
//! closest name when it misspelled one), never a Rust error shown to the user.
//!
//! Parsing (`parse.rs`) only reads what the model wrote; this module judges it.

use serde_json::Value;

use crate::tool::{ToolCall, ToolSpec};

/// Checks a parsed call against the live tool list. The `Err` text is written for the model: it
/// names the problem and lists the valid choices, so the next attempt can fix it.
///
/// Checks, in order: the tool exists; every argument is a declared parameter; every required
/// parameter is present; each value has the declared JSON type (and is one of its `enum` values).
/// `None` is accepted for an optional parameter (Python's "use the default").
pub fn check_call(call: &ToolCall, tools: &[ToolSpec]) -> Result<(), String> {
    let Some(spec) = tools.iter().find(|t| t.name == call.name) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let mut message = format!("There is no tool named `{}`.", call.name);
        if let Some(close) = closest(&call.name, &names) {
            message.push_str(&format!(" Did you mean `{close}`?"));
        }
        if names.is_empty() {
            message.push_str(" No tools are available; answer in plain text.");
        } else {
            message.push_str(&format!(" Available tools: {}.", names.join(", ")));
        }
        return Err(message);
    };
    let params: Vec<(&str, &Value)> = spec.parameters().collect();
    let required = spec.required();
    for key in call.arguments.keys() {
        if !params.iter().any(|(name, _)| name == key) {
            let mut message = format!("`{}` has no parameter `{key}`.", spec.name);
            let names: Vec<&str> = params.iter().map(|(n, _)| *n).collect();
            if let Some(close) = closest(key, &names) {
                message.push_str(&format!(" Did you mean `{close}`?"));
            }
            if params.is_empty() {
                message.push_str(&format!(" It takes no arguments: call {}().", spec.name));
            } else {
                message.push_str(&format!(
                    " Its parameters are: {}.",
                    describe_params(&params, &required)
                ));
            }
            return Err(message);
        }
    }
    for name in &required {
        if !call.arguments.contains_key(*name) {
            let schema = params.iter().find(|(n, _)| n == name).map(|(_, s)| *s);
            let mut message = format!("`{}` needs the parameter `{name}`", spec.name);
            if let Some(kind) = schema.and_then(type_name) {
                message.push_str(&format!(" ({kind})"));
            }
            if let Some(description) = schema
                .and_then(|s| s.get("description"))
                .and_then(Value::as_str)
            {
                // The sentence ends once, however the server ended its description.
                message.push_str(&format!(": {}", description.trim_end_matches('.')));
            }
            message.push('.');
            return Err(message);
        }
    }
    for (key, value) in &call.arguments {
        let schema = params
            .iter()
            .find(|(n, _)| n == key)
            .map(|(_, s)| *s)
            .unwrap_or(&Value::Null);
        if value.is_null() && !required.contains(&key.as_str()) {
            continue;
        }
        if let Err(why) = check_value(value, schema) {
            return Err(format!("Parameter `{key}` of `{}` {why}.", spec.name));
        }
    }
    Ok(())
}

/// `name (required, string), other (integer)`.
fn describe_params(params: &[(&str, &Value)], required: &[&str]) -> String {
    params
        .iter()
        .map(|(name, schema)| {
            let mut notes = Vec::new();
            if required.contains(name) {
                notes.push("required".to_string());
            }
            if let Some(kind) = type_name(schema) {
                notes.push(kind);
            }
            if notes.is_empty() {
                name.to_string()
            } else {
                format!("{name} ({})", notes.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The schema's declared type(s) as words, e.g. `string` or `integer or null`.
fn type_name(schema: &Value) -> Option<String> {
    match schema.get("type")? {
        Value::String(t) => Some(t.clone()),
        Value::Array(ts) => Some(
            ts.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" or "),
        ),
        _ => None,
    }
}

/// `Err` completes "Parameter `x` of `tool` …".
fn check_value(value: &Value, schema: &Value) -> Result<(), String> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            let list: Vec<String> = options.iter().map(Value::to_string).collect();
            return Err(format!("must be one of {}, got {value}", list.join(", ")));
        }
        return Ok(());
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    if types.iter().any(|t| has_type(value, t)) {
        if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
            for (i, item) in items.iter().enumerate() {
                check_value(item, item_schema).map_err(|why| format!("item {i} {why}"))?;
            }
        }
        return Ok(());
    }
    Err(format!(
        "must be {}, got {}",
        with_article(&types.join(" or ")),
        describe_value(value)
    ))
}

fn has_type(value: &Value, kind: &str) -> bool {
    match kind {
        "string" => value.is_string(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" | "dict" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn with_article(kind: &str) -> String {
    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {kind}")
    } else {
        format!("a {kind}")
    }
}

fn describe_value(value: &Value) -> String {
    match value {
        Value::Null => "None".to_string(),
        Value::Bool(b) => format!("the boolean {}", if *b { "True" } else { "False" }),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => format!("the string {value}"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a dict".to_string(),
    }
}

/// The candidate within edit distance 2 (case-insensitive) of `word`, if exactly one is closest.
fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word = word.to_lowercase();
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(&word, &c.to_lowercase()), *c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn search_tool() -> ToolSpec {
        ToolSpec {
            name: "search_notes".into(),
            description: "Search.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to look for."},
                    "limit": {"type": "integer"},
                    "sort": {"enum": ["score", "date"]}
                },
                "required": ["query"]
            }),
        }
    }

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments: arguments.as_object().unwrap().clone(),
        }
    }

    #[test]
    fn a_misspelled_name_gets_the_closest_one() {
        assert_eq!(
            closest("get_wether", &["get_weather", "search"]),
            Some("get_weather")
        );
        assert_eq!(closest("frobnicate", &["get_weather", "search"]), None);
        let why = check_call(
            &call("search_note", json!({"query": "x"})),
            &[search_tool()],
        );
        assert_eq!(
            why.unwrap_err(),
            "There is no tool named `search_note`. Did you mean `search_notes`? \
             Available tools: search_notes."
        );
    }

    #[test]
    fn arguments_are_held_to_the_schema() {
        let tools = [search_tool()];
        assert!(
            check_call(
                &call("search_notes", json!({"query": "x", "limit": 3})),
                &tools
            )
            .is_ok()
        );
        assert!(
            check_call(
                &call("search_notes", json!({"query": "x", "limit": null})),
                &tools
            )
            .is_ok()
        );
        let why = |args| check_call(&call("search_notes", args), &tools).unwrap_err();
        assert_eq!(
            why(json!({"limit": 3})),
            "`search_notes` needs the parameter `query` (string): Words to look for."
        );
        assert_eq!(
            why(json!({"query": "x", "limt": 3})),
            "`search_notes` has no parameter `limt`. Did you mean `limit`? Its parameters are: \
             query (required, string), limit (integer), sort."
        );
        assert_eq!(
            why(json!({"query": "x", "limit": "three"})),
            "Parameter `limit` of `search_notes` must be an integer, got the string \"three\"."
        );
        assert_eq!(
            why(json!({"query": "x", "sort": "name"})),
            "Parameter `sort` of `search_notes` must be one of \"score\", \"date\", got \"name\"."
        );
    }
}
