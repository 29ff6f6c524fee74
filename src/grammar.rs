//! Builds the llama.cpp GBNF grammar that constrains a tool-decision reply to a well-formed call
//! list `[name(param=value, ...), ...]` naming only the live tools and their declared parameters,
//! with values of the declared JSON types. Pure text generation; the engine hands the result to
//! llama.cpp's lazy grammar sampler.
//!
//! Lazy mode is what keeps free text free: the grammar only starts constraining once the reply
//! begins with `[` or `<|python_tag|>` (see [`ToolGrammar::trigger_patterns`]).
//!
//! Arguments are held to what the caller knows is valid: integers to the schema's `minimum` and
//! `maximum`, and any parameter the caller gives a [`ValueDomains`] entry to those exact values
//! (note references, headings and offsets: only those seen in this conversation). [`ANSWER_GBNF`] is the other side:
//! an answer that cannot open a call.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::tool::ToolSpec;

/// The grammar for one tool list, plus what llama.cpp's lazy sampler needs to trigger it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolGrammar {
    /// GBNF text (rule names use only `[A-Za-z0-9-]`, as llama.cpp requires).
    pub gbnf: String,
    /// The start rule.
    pub root: &'static str,
    /// For `LlamaSampler::grammar_lazy_patterns`: regexes matched against the whole reply so far
    /// (anchored `^…$`, so llama.cpp uses `std::regex_match`); the grammar is fed from the start
    /// of the first capture group. They fire only when the reply *begins* (after whitespace) with
    /// `[` or `<|python_tag|>`, so a plain answer, even one containing `[`, stays unconstrained.
    pub trigger_patterns: Vec<String>,
    /// For `LlamaSampler::grammar_lazy` (words are searched anywhere in the reply, so `[` cannot
    /// be one: an answer quoting a list would trigger it). Prefer `trigger_patterns`.
    pub trigger_words: Vec<String>,
}

/// The start rule's name.
pub const ROOT: &str = "root";

/// Exact values allowed for some parameters (strings, integers…), by tool name then parameter
/// name. A tool whose required parameter has an empty domain cannot be called and is left out
/// of the grammar; an optional parameter with an empty domain is left out of its tool.
pub type ValueDomains = HashMap<String, HashMap<String, Vec<Value>>>;

/// A reply that is prose, never a call: after optional whitespace it may not start with `[`
/// (a call, or a small model copying the numbered source list instead of answering) or `<`
/// (`<|python_tag|>`). Everything after the first character is free, citations `[1]` included.
pub const ANSWER_GBNF: &str = r#"root ::= [ \t\n]* first rest
first ::= [^\[<\x00-\x20]
rest ::= [^\x00]*
"#;

/// A verdict: `yes` or `no` (`agent::figure`'s check of the line an answer's figure stands in).
pub const VERDICT_GBNF: &str = r#"root ::= "yes" | "no"
"#;

/// Source numbers in brackets, `[2]` or `[1, 3]` (at most five), each one of `1..=count`, or
/// `none`: what the model may reply when asked which sources an uncited answer came from.
pub fn citation_gbnf(count: usize) -> String {
    let numbers: Vec<String> = (1..=count.max(1)).map(|n| format!("\"{n}\"")).collect();
    format!(
        "root ::= \"[\" number (\", \" number){{0,4}} \"]\" | \"none\"\nnumber ::= {}\n",
        numbers.join(" | ")
    )
}

/// Shared value rules. Strings are Python/JSON literals in either quote style; booleans and null
/// are Python's (`True`, `False`, `None`, as Meta's examples write them). Repetition counts are
/// bounded so a small model cannot loop on digits.
const PRIMITIVES: &str = r#"sep ::= "," " "?
sp ::= " "?
string ::= dq-string | sq-string
dq-string ::= "\"" dq-char* "\""
dq-char ::= [^"\\\x7F\x00-\x1F] | "\\" escape
sq-string ::= "'" sq-char* "'"
sq-char ::= [^'\\\x7F\x00-\x1F] | "\\" escape
escape ::= ["'\\/bfnrt] | "u" [0-9a-fA-F]{4}
integer ::= "-"? ("0" | [1-9] [0-9]{0,17})
number ::= integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "True" | "False"
null ::= "None"
value ::= string | number | boolean | null | list | dict
list ::= "[" sp (value (sep value)*)? sp "]"
dict ::= "{" sp (string sp ":" sp value (sep string sp ":" sp value)*)? sp "}"
"#;

impl ToolGrammar {
    /// The grammar admitting a call list over `tools`, or `None` when there are no tools (nothing
    /// could be called, so nothing should be constrained).
    ///
    /// Each call names a tool and gives its arguments by keyword: required parameters first in
    /// declared order, then any subset of the optional ones in declared order. Values follow the
    /// parameter's schema: `enum`/`const` become alternatives of literals, `type` (or a list of
    /// types, or `anyOf`/`oneOf`) picks the value rules, arrays use their `items` schema, objects
    /// and untyped parameters take any value.
    pub fn new(tools: &[ToolSpec]) -> Option<ToolGrammar> {
        Self::with_domains(tools, &ValueDomains::new())
    }

    /// Like [`ToolGrammar::new`], with the parameters named in `domains` held to those values.
    pub fn with_domains(tools: &[ToolSpec], domains: &ValueDomains) -> Option<ToolGrammar> {
        let mut builder = Builder::default();
        for name in PRIMITIVES
            .lines()
            .filter_map(|l| l.split_once(" ::= "))
            .map(|(n, _)| n)
        {
            builder.used.insert(name.to_string());
        }
        builder.used.insert(ROOT.to_string());
        builder.used.insert("call-list".to_string());
        builder.used.insert("call".to_string());

        let mut seen = HashSet::new();
        let mut calls = Vec::new();
        let mut named = Vec::new();
        let no_domains = HashMap::new();
        for tool in tools.iter().filter(|t| seen.insert(t.name.as_str())) {
            let tool_domains = domains.get(&tool.name).unwrap_or(&no_domains);
            if let Some(rule) = builder.tool(tool, tool_domains) {
                calls.push(rule);
                named.push(tool.name.as_str());
            }
        }
        if calls.is_empty() {
            return None;
        }

        let mut gbnf = String::new();
        let _ = writeln!(gbnf, "# Tool calls for: {}", named.join(", "));
        let _ = writeln!(
            gbnf,
            "{ROOT} ::= {}? call-list",
            literal(crate::parse::PYTHON_TAG)
        );
        let _ = writeln!(gbnf, "call-list ::= \"[\" call (sep call)* \"]\"");
        let _ = writeln!(gbnf, "call ::= {}", calls.join(" | "));
        for (name, body) in &builder.rules {
            let _ = writeln!(gbnf, "{name} ::= {body}");
        }
        gbnf.push_str(PRIMITIVES);
        Some(ToolGrammar {
            gbnf,
            root: ROOT,
            trigger_patterns: vec![r"^\s*(<\|python_tag\|>|\[)[\s\S]*$".to_string()],
            trigger_words: vec![crate::parse::PYTHON_TAG.to_string()],
        })
    }
}

/// Collects generated rules under unique, valid names.
#[derive(Default)]
struct Builder {
    rules: Vec<(String, String)>,
    used: HashSet<String>,
}

impl Builder {
    /// A fresh rule name from `base` (sanitized; `-2`, `-3`… on collision).
    fn fresh(&mut self, base: &str) -> String {
        let base = rule_name(base);
        let mut name = base.clone();
        let mut n = 2;
        while !self.used.insert(name.clone()) {
            name = format!("{base}-{n}");
            n += 1;
        }
        name
    }

    fn add(&mut self, base: &str, body: String) -> String {
        let name = self.fresh(base);
        self.rules.push((name.clone(), body));
        name
    }

    /// Adds the rules for one tool; returns its rule name, or `None` when a required parameter
    /// has an empty domain (no valid call exists).
    fn tool(&mut self, tool: &ToolSpec, domains: &HashMap<String, Vec<Value>>) -> Option<String> {
        let required = tool.required();
        let empty = |p: &str| domains.get(p).is_some_and(Vec::is_empty);
        if required.iter().any(|p| empty(p)) {
            return None;
        }
        let name = self.fresh(&format!("tool-{}", tool.name));
        let params: Vec<(&str, &Value)> = tool.parameters().filter(|(p, _)| !empty(p)).collect();
        let (req, opt): (Vec<_>, Vec<_>) = params.iter().partition(|(p, _)| required.contains(p));

        let kv = |b: &mut Builder, (param, schema): &(&str, &Value)| -> String {
            let value = match domains.get(*param) {
                Some(values) => {
                    let alts: Vec<String> = values.iter().map(python_literal_alts).collect();
                    b.add(&format!("{name}-{param}-known"), alts.join(" | "))
                }
                None => b.value(&format!("{name}-{param}"), schema),
            };
            b.add(
                &format!("{name}-{param}-kv"),
                format!("{} {value}", literal(&format!("{param}="))),
            )
        };
        let req_seq: Vec<String> = req.iter().map(|p| kv(self, p)).collect();
        // Optional parameters: from-i ::= kv-i (sep from-(i+1))? | from-(i+1), so any subset in
        // declared order is admitted with commas only between present arguments.
        let mut from_next: Option<String> = None;
        for p in opt.iter().rev() {
            let kv = kv(self, p);
            let body = match &from_next {
                Some(next) => format!("{kv} (sep {next})? | {next}"),
                None => kv,
            };
            from_next = Some(self.add(&format!("{name}-opt"), body));
        }
        let args = match (req_seq.is_empty(), from_next) {
            (true, None) => String::new(),
            (true, Some(opt)) => format!(" {opt}?"),
            (false, None) => format!(" {}", req_seq.join(" sep ")),
            (false, Some(opt)) => format!(" {} (sep {opt})?", req_seq.join(" sep ")),
        };
        let body = format!("{}{args} \")\"", literal(&format!("{}(", tool.name)));
        self.rules.push((name.clone(), body));
        Some(name)
    }

    /// A GBNF expression for a value matching `schema` (adding rules named after `hint`).
    fn value(&mut self, hint: &str, schema: &Value) -> String {
        if let Some(options) = schema
            .get("enum")
            .and_then(Value::as_array)
            .filter(|o| !o.is_empty())
        {
            let alts: Vec<String> = options.iter().map(python_literal_alts).collect();
            return self.add(&format!("{hint}-enum"), alts.join(" | "));
        }
        if let Some(constant) = schema.get("const") {
            return format!("({})", python_literal_alts(constant));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = schema
                .get(key)
                .and_then(Value::as_array)
                .filter(|o| !o.is_empty())
            {
                let alts: Vec<String> = options.iter().map(|s| self.value(hint, s)).collect();
                return self.add(&format!("{hint}-any"), alts.join(" | "));
            }
        }
        let types: Vec<&str> = match schema.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if types.is_empty() {
            return "value".to_string();
        }
        let alts: Vec<String> = types
            .iter()
            .map(|t| match *t {
                "string" => "string".to_string(),
                "integer" => match integer_bounds(schema) {
                    Some((min, max)) => {
                        self.add(&format!("{hint}-int"), integer_range(min, max).join(" | "))
                    }
                    None => "integer".to_string(),
                },
                "number" | "float" => "number".to_string(),
                "boolean" => "boolean".to_string(),
                "null" => "null".to_string(),
                "array" => match schema.get("items").filter(|i| i.is_object()) {
                    Some(items) => {
                        let item = self.value(&format!("{hint}-item"), items);
                        self.add(
                            &format!("{hint}-list"),
                            format!("\"[\" sp ({item} (sep {item})*)? sp \"]\""),
                        )
                    }
                    None => "list".to_string(),
                },
                "object" | "dict" => "dict".to_string(),
                _ => "value".to_string(),
            })
            .collect();
        if alts.len() == 1 {
            alts.into_iter().next().unwrap_or_default()
        } else {
            format!("({})", alts.join(" | "))
        }
    }
}

/// The schema's inclusive integer bounds when both are known and `minimum` is not negative
/// (what the vault server declares for limits and offsets); `None` leaves any integer.
fn integer_bounds(schema: &Value) -> Option<(u64, u64)> {
    let bound = |key: &str| {
        let v = schema.get(key)?;
        v.as_u64().or_else(|| {
            v.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        })
    };
    let (min, max) = (bound("minimum")?, bound("maximum")?);
    (min <= max).then_some((min, max))
}

/// GBNF alternatives (each a sequence of digit classes) matching exactly the decimal integers
/// in `min..=max`, without leading zeros: the usual split by digit count, then by leading digit.
fn integer_range(min: u64, max: u64) -> Vec<String> {
    let mut alts = Vec::new();
    let mut low = min;
    while low <= max {
        let digits = low.to_string().len() as u32;
        let top = 10u64.checked_pow(digits).map_or(u64::MAX, |p| p - 1);
        let high = max.min(top);
        same_length(
            &low.to_string(),
            &high.to_string(),
            String::new(),
            &mut alts,
        );
        match high.checked_add(1) {
            Some(next) if high < max => low = next,
            _ => break,
        }
    }
    alts
}

/// Alternatives for the numbers from `low` to `high`, two digit strings of equal length, each
/// prefixed by `prefix`.
fn same_length(low: &str, high: &str, prefix: String, alts: &mut Vec<String>) {
    let class = |a: u8, b: u8| {
        if a == b {
            format!("\"{}\"", a as char)
        } else {
            format!("[{}-{}]", a as char, b as char)
        }
    };
    let any = |n: usize| " [0-9]".repeat(n);
    let (l, h) = (low.as_bytes(), high.as_bytes());
    let Some((&l0, l_rest)) = l.split_first() else {
        alts.push(prefix.trim().to_string());
        return;
    };
    let h0 = h[0];
    let h_rest = &h[1..];
    let n = l_rest.len();
    if l0 == h0 {
        let prefix = format!("{prefix} {}", class(l0, l0));
        same_length(&low[1..], &high[1..], prefix, alts);
        return;
    }
    let low_full = l_rest.iter().all(|&d| d == b'0');
    let high_full = h_rest.iter().all(|&d| d == b'9');
    // The first digit's own range with every tail, widened to l0 or h0 when their tails are full.
    let first = if low_full { l0 } else { l0 + 1 };
    let last = if high_full { h0 } else { h0 - 1 };
    if !low_full {
        let prefix = format!("{prefix} {}", class(l0, l0));
        same_length(&low[1..], &"9".repeat(n), prefix, alts);
    }
    if first <= last {
        alts.push(
            format!("{prefix} {}{}", class(first, last), any(n))
                .trim()
                .to_string(),
        );
    }
    if !high_full {
        let prefix = format!("{prefix} {}", class(h0, h0));
        same_length(&"0".repeat(n), &high[1..], prefix, alts);
    }
}

/// A GBNF rule name: ASCII letters, digits and `-` only (llama.cpp rejects `_`, `.`, …).
fn rule_name(raw: &str) -> String {
    let mut out = String::new();
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    if out.is_empty() {
        "x".to_string()
    } else {
        out.to_string()
    }
}

/// A GBNF string literal matching `text` exactly.
fn literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The ways a model may write a JSON value as a Python literal, as GBNF alternatives: strings in
/// either quote style, `True`/`False`, `None`, numbers as JSON writes them.
fn python_literal_alts(value: &Value) -> String {
    match value {
        Value::String(s) => {
            let dq = format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
            let sq = format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
            format!("{} | {}", literal(&dq), literal(&sq))
        }
        Value::Bool(b) => literal(if *b { "True" } else { "False" }),
        Value::Null => literal("None"),
        other => literal(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_are_sanitized() {
        assert_eq!(rule_name("tool-get_weather"), "tool-get-weather");
        assert_eq!(rule_name("a..b__c"), "a-b-c");
        assert_eq!(rule_name("_"), "x");
    }

    /// Every number up to a bound, checked against the alternatives read as regexes.
    #[test]
    fn integer_ranges_admit_exactly_their_numbers() {
        for (min, max) in [
            (0, 9),
            (1, 50),
            (1, 500),
            (0, 100_000),
            (7, 7),
            (15, 1234),
            (0, 0),
        ] {
            let alts = integer_range(min, max);
            let pattern = alts
                .iter()
                .map(|a| a.replace([' ', '"'], ""))
                .collect::<Vec<_>>()
                .join("|");
            let re = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
            for n in 0..=(max + 20).min(200_000) {
                assert_eq!(
                    re.is_match(&n.to_string()),
                    (min..=max).contains(&n),
                    "{n} in {min}..={max}: {pattern}"
                );
            }
            assert!(!re.is_match(&format!("0{min}")), "leading zero admitted");
        }
    }

    #[test]
    fn literals_escape_quotes_and_controls() {
        assert_eq!(literal("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(
            python_literal_alts(&Value::from("it's")),
            r#""\"it's\"" | "'it\\'s'""#
        );
    }
}
