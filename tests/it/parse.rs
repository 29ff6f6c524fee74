//! Table test of `parse_reply` over good and bad model replies, `check_call`'s messages, and
//! generated replies (a fixed-seed generator, about a second): arbitrary and mutated text never
//! panics, and generated calls read back as written by `ToolCall::to_pythonic`.

use recall::parse::{Problem, Reply, parse_reply};
use recall::tool::{ToolCall, ToolSpec};
use recall::validate::check_call;
use serde_json::{Value, json};

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "get_weather".into(),
            description: "Get weather info for places".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The name of the city"},
                    "metric": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
                },
                "required": ["city"]
            }),
        },
        ToolSpec {
            name: "search_notes".into(),
            description: "Full-text search over the vault".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "fuzzy": {"type": "boolean"}
                },
                "required": ["query"]
            }),
        },
        ToolSpec {
            name: "list_tags".into(),
            description: "All tags".into(),
            input_schema: json!({"type": "object", "properties": {}}),
        },
        ToolSpec {
            name: "vault.read-note".into(),
            description: "Read one note".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        },
    ]
}

/// What a row expects.
enum Want {
    Answer(&'static str),
    /// JSON array of `{"name": .., "arguments": {..}}`.
    Calls(Value),
    /// A substring of the error's Display.
    Malformed(&'static str),
}
use Want::*;

fn calls(v: Value) -> Want {
    Calls(v)
}

#[test]
fn reply_table() {
    let rows: Vec<(&str, Want)> = vec![
        // --- plain answers
        (
            "The weather in San Francisco is 25 C.<|eot_id|>",
            Answer("The weather in San Francisco is 25 C."),
        ),
        ("  Hello there!  ", Answer("Hello there!")),
        ("", Answer("")),
        ("<|eot_id|>", Answer("")),
        (
            "See [the docs](https://x.y) for more.",
            Answer("See [the docs](https://x.y) for more."),
        ),
        (
            "Use [link(text)] syntax in notes.",
            Answer("Use [link(text)] syntax in notes."),
        ),
        ("A list: [1, 2, 3]", Answer("A list: [1, 2, 3]")),
        ("{\"not\": \"a call\"}", Answer("{\"not\": \"a call\"}")),
        // --- Meta's examples
        (
            "[get_weather(city='San Francisco', metric='celsius'), get_weather(city='Seattle', metric='celsius')]<|eot_id|>",
            calls(json!([
                {"name": "get_weather", "arguments": {"city": "San Francisco", "metric": "celsius"}},
                {"name": "get_weather", "arguments": {"city": "Seattle", "metric": "celsius"}}
            ])),
        ),
        (
            "<|python_tag|>[get_weather(city=\"San Francisco\", metric=\"celsius\")]<|eot_id|>",
            calls(
                json!([{"name": "get_weather", "arguments": {"city": "San Francisco", "metric": "celsius"}}]),
            ),
        ),
        (
            "[get_user_info(user_id=7890, special='black')]<|eot_id|>",
            calls(
                json!([{"name": "get_user_info", "arguments": {"user_id": 7890, "special": "black"}}]),
            ),
        ),
        // --- forms
        (
            "[list_tags()]",
            calls(json!([{"name": "list_tags", "arguments": {}}])),
        ),
        (
            "[ list_tags ( ) ]<|eom_id|>",
            calls(json!([{"name": "list_tags", "arguments": {}}])),
        ),
        (
            "<|python_tag|> [list_tags()]",
            calls(json!([{"name": "list_tags", "arguments": {}}])),
        ),
        (
            "[list_tags(), search_notes(query=\"x\")]",
            calls(
                json!([{"name": "list_tags", "arguments": {}}, {"name": "search_notes", "arguments": {"query": "x"}}]),
            ),
        ),
        (
            "[list_tags(),]",
            calls(json!([{"name": "list_tags", "arguments": {}}])),
        ),
        (
            "[search_notes(query='a',)]",
            calls(json!([{"name": "search_notes", "arguments": {"query": "a"}}])),
        ),
        (
            "I'll look that up.\n[search_notes(query=\"rust\")]",
            calls(json!([{"name": "search_notes", "arguments": {"query": "rust"}}])),
        ),
        (
            "[search_notes(query=\"rust\")] Searching now.",
            calls(json!([{"name": "search_notes", "arguments": {"query": "rust"}}])),
        ),
        (
            "[vault.read-note(path=\"Daily/2024-01-01.md\")]",
            calls(
                json!([{"name": "vault.read-note", "arguments": {"path": "Daily/2024-01-01.md"}}]),
            ),
        ),
        // --- strings
        (
            r#"[search_notes(query="a, b=c) [d]")]"#,
            calls(json!([{"name": "search_notes", "arguments": {"query": "a, b=c) [d]"}}])),
        ),
        (
            r#"[search_notes(query='it\'s "quoted"')]"#,
            calls(json!([{"name": "search_notes", "arguments": {"query": "it's \"quoted\""}}])),
        ),
        (
            r#"[search_notes(query="line\nbreak\ttab \\ \u00e9 \x41")]"#,
            calls(
                json!([{"name": "search_notes", "arguments": {"query": "line\nbreak\ttab \\ é A"}}]),
            ),
        ),
        (
            r#"[search_notes(query="C:\dir")]"#,
            calls(json!([{"name": "search_notes", "arguments": {"query": "C:\\dir"}}])),
        ),
        (
            "[search_notes(query=\"naïve café 日本\")]",
            calls(json!([{"name": "search_notes", "arguments": {"query": "naïve café 日本"}}])),
        ),
        // --- numbers and literals
        (
            "[f(a=1, b=-2, c=3.5, d=-0.25, e=1e3, g=+4, h=1_000)]",
            calls(
                json!([{"name": "f", "arguments": {"a": 1, "b": -2, "c": 3.5, "d": -0.25, "e": 1000.0, "g": 4, "h": 1000}}]),
            ),
        ),
        (
            "[f(a=True, b=False, c=None, d=true, e=false, f=null)]",
            calls(
                json!([{"name": "f", "arguments": {"a": true, "b": false, "c": null, "d": true, "e": false, "f": null}}]),
            ),
        ),
        (
            "[f(n=18446744073709551615)]",
            calls(json!([{"name": "f", "arguments": {"n": 18446744073709551615u64}}])),
        ),
        // --- nested values
        (
            "[search_notes(query='x', tags=['a', \"b\"], limit=5)]",
            calls(
                json!([{"name": "search_notes", "arguments": {"query": "x", "tags": ["a", "b"], "limit": 5}}]),
            ),
        ),
        (
            "[f(d={'k': [1, {\"n\": None}], 'e': {}}, t=(1, 2), l=[])]",
            calls(
                json!([{"name": "f", "arguments": {"d": {"k": [1, {"n": null}], "e": {}}, "t": [1, 2], "l": []}}]),
            ),
        ),
        (
            "[f(d={1: 'one'})]",
            calls(json!([{"name": "f", "arguments": {"d": {"1": "one"}}}])),
        ),
        // --- positional arguments map by schema order
        (
            "[get_weather('Paris', 'fahrenheit')]",
            calls(
                json!([{"name": "get_weather", "arguments": {"city": "Paris", "metric": "fahrenheit"}}]),
            ),
        ),
        (
            "[get_weather('Paris', metric='celsius')]",
            calls(
                json!([{"name": "get_weather", "arguments": {"city": "Paris", "metric": "celsius"}}]),
            ),
        ),
        // --- JSON-style call (Llama 3.1 format small models fall back to)
        (
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}<|eot_id|>",
            calls(json!([{"name": "get_weather", "arguments": {"city": "Oslo"}}])),
        ),
        (
            "<|python_tag|>{\"name\": \"list_tags\", \"arguments\": {}}",
            calls(json!([{"name": "list_tags", "arguments": {}}])),
        ),
        // --- malformed
        (
            "[get_weather(city=Paris)]",
            Malformed("`Paris` is not a value"),
        ),
        (
            "[get_weather(city=\"Paris)]",
            Malformed("missing its closing quote"),
        ),
        (
            "[get_weather(city=\"Paris\"",
            Malformed("the reply ended early; expected `,` or `)`"),
        ),
        (
            "[get_weather(city=\"Paris\")",
            Malformed("the reply ended early; expected `,` or `]`"),
        ),
        (
            "[get_weather(city=\"Paris\"; metric=1)]",
            Malformed("expected `,` or `)` after an argument"),
        ),
        (
            "[get_weather(city=\"Paris\") get_weather()]",
            Malformed("expected `,` or `]` after a call"),
        ),
        ("[]", Malformed("the call list [] is empty")),
        (
            "<|python_tag|>get_weather(city='x')",
            Malformed("expected `[` to start the call list"),
        ),
        ("<|python_tag|>", Malformed("the reply ended early")),
        (
            "[get_weather(city='a', 'b')]",
            Malformed("positional argument follows a keyword argument"),
        ),
        ("[mystery('a')]", Malformed("`mystery` is not a known tool")),
        (
            "[list_tags('a')]",
            Malformed("`list_tags` takes at most 0 argument(s)"),
        ),
        (
            "[get_weather(city='a', city='b')]",
            Malformed("the argument `city` is given twice"),
        ),
        ("[f(x=1.2.3)]", Malformed("`1.2.3` is not a valid number")),
        ("[f(x=-)]", Malformed("`-` is not a valid number")),
        ("[f(x=[1, 2)]", Malformed("expected `,` or `]` in a list")),
        ("[f(x={'a' 1})]", Malformed("expected `:` after a dict key")),
        (
            "[f(x={a: 1})]",
            Malformed("expected a quoted key in a dict"),
        ),
        ("[f(x=)]", Malformed("expected a value")),
        ("[f(x=@)]", Malformed("expected a value")),
        (
            "I will call it: [search_notes(query=)]",
            Malformed("expected a value"),
        ),
        (
            &*Box::leak(format!("[f(x={}{})]", "[".repeat(40), "]".repeat(40)).into_boxed_str()),
            Malformed("nested more than"),
        ),
    ];
    assert!(rows.len() >= 40, "table has {} rows", rows.len());
    let tools = tools();
    let mut failures = Vec::new();
    for (text, want) in &rows {
        let got = parse_reply(text, &tools);
        let ok = match (want, &got) {
            (Answer(a), Reply::Answer(b)) => a == b,
            (Calls(expected), Reply::Calls(calls)) => {
                let got: Vec<Value> =
                    calls.iter().map(|c| json!({"name": c.name, "arguments": Value::Object(c.arguments.clone())})).collect();
                Value::Array(got) == *expected
            }
            (Malformed(needle), Reply::Malformed { error }) => error.to_string().contains(needle),
            _ => false,
        };
        if !ok {
            failures.push(format!("{text:?}\n    got {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

#[test]
fn argument_order_is_kept() {
    let Reply::Calls(calls) = parse_reply("[f(z=1, a=2, m=3)]", &[]) else {
        panic!("not calls")
    };
    let keys: Vec<&str> = calls[0].arguments.keys().map(String::as_str).collect();
    assert_eq!(keys, ["z", "a", "m"]);
}

#[test]
fn error_points_at_the_problem() {
    let text = "[get_weather(city=Paris)]";
    let Reply::Malformed { error } = parse_reply(text, &tools()) else {
        panic!("not malformed")
    };
    assert_eq!(error.offset, text.find("Paris").unwrap());
    assert_eq!(error.problem, Problem::BareWord("Paris".into()));
    let message = error.to_string();
    assert!(message.contains("near `Paris)]`"), "{message}");
    assert!(
        message.contains("[tool_name(param1=\"value\", param2=2)]"),
        "{message}"
    );
}

#[test]
fn never_panics_on_prefixes_of_valid_replies() {
    let text = "<|python_tag|>[search_notes(query='é\\'x', tags=[\"a\", {'b': (1, -2.5e3)}], fuzzy=True), list_tags()]";
    let tools = tools();
    for (i, _) in text.char_indices() {
        let _ = parse_reply(&text[..i], &tools);
        let _ = parse_reply(&text[i..], &tools);
    }
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        name: name.into(),
        arguments: args.as_object().unwrap().clone(),
    }
}

#[test]
fn check_call_messages() {
    let tools = tools();
    let cases: Vec<(ToolCall, Result<(), &str>)> = vec![
        (call("get_weather", json!({"city": "Oslo"})), Ok(())),
        (
            call(
                "get_weather",
                json!({"city": "Oslo", "metric": "fahrenheit"}),
            ),
            Ok(()),
        ),
        (
            call("get_weather", json!({"city": "Oslo", "metric": null})),
            Ok(()),
        ),
        (
            call(
                "search_notes",
                json!({"query": "x", "limit": 3, "tags": ["a"], "fuzzy": true}),
            ),
            Ok(()),
        ),
        (
            call("search_notes", json!({"query": "x", "limit": 3.0})),
            Ok(()),
        ),
        (
            call("get_wether", json!({})),
            Err(
                "There is no tool named `get_wether`. Did you mean `get_weather`? Available tools: get_weather, search_notes, list_tags, vault.read-note.",
            ),
        ),
        (
            call("get_weather", json!({"town": "Oslo"})),
            Err(
                "`get_weather` has no parameter `town`. Its parameters are: city (required, string), metric (string).",
            ),
        ),
        (
            call("list_tags", json!({"x": 1})),
            Err("`list_tags` has no parameter `x`. It takes no arguments: call list_tags()."),
        ),
        (
            call("get_weather", json!({})),
            Err("`get_weather` needs the parameter `city` (string): The name of the city."),
        ),
        (
            call("get_weather", json!({"city": null})),
            Err("Parameter `city` of `get_weather` must be a string, got None."),
        ),
        (
            call("get_weather", json!({"city": "Oslo", "metric": "kelvin"})),
            Err(
                "Parameter `metric` of `get_weather` must be one of \"celsius\", \"fahrenheit\", got \"kelvin\".",
            ),
        ),
        (
            call("search_notes", json!({"query": "x", "limit": "5"})),
            Err("Parameter `limit` of `search_notes` must be an integer, got the string \"5\"."),
        ),
        (
            call("search_notes", json!({"query": "x", "limit": 2.5})),
            Err("Parameter `limit` of `search_notes` must be an integer, got the number 2.5."),
        ),
        (
            call("search_notes", json!({"query": "x", "tags": ["a", 1]})),
            Err("Parameter `tags` of `search_notes` item 1 must be a string, got the number 1."),
        ),
        (
            call("search_notes", json!({"query": "x", "fuzzy": "yes"})),
            Err("Parameter `fuzzy` of `search_notes` must be a boolean, got the string \"yes\"."),
        ),
    ];
    for (call, want) in cases {
        let got = check_call(&call, &tools);
        assert_eq!(
            got.as_ref().map_err(String::as_str).copied(),
            want,
            "{call:?}"
        );
    }
    let none = check_call(&call("x", json!({})), &[]).unwrap_err();
    assert_eq!(
        none,
        "There is no tool named `x`. No tools are available; answer in plain text."
    );
}

/// A small deterministic generator (xorshift64*): the same cases on every run, no dependency.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Text a model could write, and worse: call syntax, quotes, escapes, special tokens,
    /// multi-byte and control characters.
    fn text(&mut self, max_pieces: usize) -> String {
        const PIECES: &[&str] = &[
            "[",
            "]",
            "(",
            ")",
            "{",
            "}",
            ",",
            ":",
            "=",
            "\"",
            "'",
            "\\",
            "\\u",
            "\\x4",
            " ",
            "\n",
            "\t",
            "-",
            "+",
            ".",
            "e",
            "_",
            "0",
            "7",
            "1e309",
            "True",
            "None",
            "false",
            "search_notes",
            "list_tags",
            "get_weather",
            "vault.read-note",
            "query",
            "limit",
            "<|python_tag|>",
            "<|eot_id|>",
            "<|eom_id|>",
            "é",
            "日本",
            "🦀",
            "\u{0}",
            "\u{7f}",
            "\u{fffd}",
            "a",
            "Z",
            "name",
            "parameters",
            "arguments",
            "[]",
        ];
        let pieces = self.below(max_pieces + 1);
        (0..pieces).map(|_| *self.pick(PIECES)).collect()
    }

    fn string_value(&mut self) -> String {
        const CHARS: &[char] = &[
            'a', 'b', ' ', '"', '\'', '\\', '\n', '\t', '\r', '\u{0}', '\u{1f}', 'é', '日', '🦀',
            ']', ')', '(', '[', ',', '=', '{', '}', ':', '/', '\u{fffd}', 'u', 'x', '0',
        ];
        let len = self.below(12);
        (0..len).map(|_| *self.pick(CHARS)).collect()
    }

    fn value(&mut self, depth: usize) -> Value {
        let kinds = if depth >= 3 { 5 } else { 7 };
        match self.below(kinds) {
            0 => Value::String(self.string_value()),
            1 => Value::from(self.next() as i64 >> self.below(64)),
            2 => Value::Bool(self.below(2) == 0),
            3 => Value::Null,
            4 => {
                let x = (self.next() as i64 >> self.below(64)) as f64 / 8.0;
                serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
            }
            5 => Value::Array((0..self.below(4)).map(|_| self.value(depth + 1)).collect()),
            _ => Value::Object(
                (0..self.below(4))
                    .map(|i| (format!("{}{i}", self.string_value()), self.value(depth + 1)))
                    .collect(),
            ),
        }
    }

    /// A call to one of the test tools with keyword arguments of any kind.
    fn call(&mut self) -> ToolCall {
        const NAMES: &[&str] = &[
            "search_notes",
            "get_weather",
            "list_tags",
            "vault.read-note",
        ];
        const KEYS: &[&str] = &["query", "limit", "tags", "fuzzy", "city", "x_1", "_k", "A"];
        let mut arguments = serde_json::Map::new();
        for _ in 0..self.below(5) {
            let key = *self.pick(KEYS);
            let value = self.value(0);
            arguments.insert(key.to_string(), value);
        }
        ToolCall {
            name: self.pick(NAMES).to_string(),
            arguments,
        }
    }
}

/// Whatever the reply, the parser answers, and an error points inside the reply at a
/// character boundary with a message that renders.
fn assert_sane(text: &str, tools: &[ToolSpec]) {
    let _ = recall::parse::reply_start(text);
    if let Reply::Malformed { error } = parse_reply(text, tools) {
        assert!(error.offset <= text.len(), "{error:?} for {text:?}");
        assert!(
            text.is_char_boundary(error.offset),
            "{error:?} for {text:?}"
        );
        assert!(!error.to_string().is_empty());
    }
}

#[test]
fn generated_replies_never_panic_and_generated_calls_round_trip() {
    let tools = tools();
    let mut generate = Gen(0x5EED_CA11_0FF1_CE00);
    // Arbitrary text, alone and after a call list's opening.
    for _ in 0..10_000 {
        let text = generate.text(24);
        assert_sane(&text, &tools);
        assert_sane(&format!("[search_notes({text}"), &tools);
    }
    for _ in 0..4000 {
        let calls: Vec<ToolCall> = (0..1 + generate.below(3))
            .map(|_| generate.call())
            .collect();
        let written: Vec<String> = calls.iter().map(ToolCall::to_pythonic).collect();
        let list = format!("[{}]", written.join(", "));
        // What to_pythonic writes reads back as the same calls, with or without the tokens
        // around it that Llama 3 writes.
        for text in [
            list.clone(),
            format!("<|python_tag|>{list}<|eom_id|>"),
            format!("  {list}\n<|eot_id|>"),
        ] {
            assert_eq!(
                parse_reply(&text, &tools),
                Reply::Calls(calls.clone()),
                "{text}"
            );
        }
        // Mutated calls: a cut, a character dropped, a piece of syntax dropped in.
        let chars: Vec<(usize, char)> = list.char_indices().collect();
        let (at, c) = chars[generate.below(chars.len())];
        let cut = &list[..at];
        let dropped = format!("{}{}", &list[..at], &list[at + c.len_utf8()..]);
        let inserted = format!("{}{}{}", &list[..at], generate.text(2), &list[at..]);
        for text in [cut, &dropped, &inserted] {
            assert_sane(text, &tools);
        }
    }
}
