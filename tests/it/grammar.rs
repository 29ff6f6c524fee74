//! Tests the generated GBNF: its text obeys llama.cpp's rules (names, definitions), and a small
//! GBNF interpreter here accepts exactly the call lists it should; every accepted list also parses
//! and passes `check_call`. One test feeds the same lists through llama.cpp's own grammar sampler
//! on `models/tiny-llama3.gguf` (the real Llama 3.2 vocabulary), so both engines agree.

use std::collections::{BTreeSet, HashMap};

use recall::grammar::{ANSWER_GBNF, ToolGrammar, VERDICT_GBNF, ValueDomains, citation_gbnf};
use recall::parse::{Reply, parse_reply};
use recall::tool::ToolSpec;
use recall::validate::check_call;
use regex::Regex;
use serde_json::json;

fn spec(name: &str, schema: serde_json::Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} tool"),
        input_schema: schema,
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        spec(
            "get_weather",
            json!({"type": "object", "properties": {
                "city": {"type": "string"},
                "metric": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            }, "required": ["city"]}),
        ),
        spec(
            "search_notes",
            json!({"type": "object", "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "fuzzy": {"type": "boolean"},
                "score": {"type": ["number", "null"]}
            }, "required": ["query"]}),
        ),
        spec("list_tags", json!({"type": "object", "properties": {}})),
        spec(
            "vault.read-note",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        spec(
            "any_args",
            json!({"type": "object", "properties": {"x": {}, "o": {"type": "object"}}}),
        ),
    ]
}

#[test]
fn no_tools_no_grammar() {
    assert_eq!(ToolGrammar::new(&[]), None);
}

#[test]
fn rule_names_are_valid_and_every_reference_is_defined() {
    let g = ToolGrammar::new(&tools()).unwrap();
    let rules = parse_gbnf(&g.gbnf);
    let name_ok = Regex::new(r"^[A-Za-z0-9-]+$").unwrap();
    for name in rules.keys() {
        assert!(name_ok.is_match(name), "bad rule name {name:?}");
    }
    assert!(rules.contains_key(g.root));
    fn refs(e: &Expr, out: &mut Vec<String>) {
        match e {
            Expr::Rule(n) => out.push(n.clone()),
            Expr::Seq(v) | Expr::Alt(v) => v.iter().for_each(|e| refs(e, out)),
            Expr::Repeat(e, _, _) => refs(e, out),
            Expr::Lit(_) | Expr::Class(..) => {}
        }
    }
    let mut all = Vec::new();
    rules.values().for_each(|e| refs(e, &mut all));
    for name in all {
        assert!(
            rules.contains_key(&name),
            "undefined rule {name}\n{}",
            g.gbnf
        );
    }
    assert!(
        g.gbnf.contains(r#"tool-get-weather ::= "get_weather(""#),
        "{}",
        g.gbnf
    );
    assert!(
        g.gbnf.contains(r#""\"celsius\"" | "'celsius'""#),
        "{}",
        g.gbnf
    );
}

#[test]
fn grammar_admits_exactly_the_valid_calls() {
    let tools = tools();
    let g = ToolGrammar::new(&tools).unwrap();
    let rules = parse_gbnf(&g.gbnf);
    let accepts = |text: &str| {
        let chars: Vec<char> = text.chars().collect();
        matches(&rules, &Expr::Rule(g.root.into()), &chars, 0).contains(&chars.len())
    };
    for text in GOOD {
        assert!(accepts(text), "should accept {text}");
        let Reply::Calls(calls) = parse_reply(text, &tools) else {
            panic!("{text} does not parse")
        };
        for call in &calls {
            assert_eq!(check_call(call, &tools), Ok(()), "{text}");
        }
    }
    for text in BAD {
        assert!(!accepts(text), "should reject {text}");
    }
}

#[test]
fn triggers_fire_only_when_the_reply_starts_a_call() {
    let g = ToolGrammar::new(&tools()).unwrap();
    assert_eq!(g.root, "root");
    assert_eq!(g.trigger_words, ["<|python_tag|>"]);
    let pattern = Regex::new(&g.trigger_patterns[0]).unwrap();
    for (text, start) in [
        ("[", Some(0)),
        ("  [get", Some(2)),
        ("<|python_tag|>", Some(0)),
        ("\n<|python_tag|>[x", Some(1)),
    ] {
        let got = pattern.captures(text).map(|c| c.get(1).unwrap().start());
        assert_eq!(got, start, "{text:?}");
    }
    for text in ["Hello", "Hello [x(", "The list [1] <|python_tag|>"] {
        assert!(!pattern.is_match(text), "{text:?} should not trigger");
    }
}

const GOOD: [&str; 11] = [
    r#"[get_weather(city="Paris")]"#,
    r#"<|python_tag|>[get_weather(city='San Francisco', metric='celsius'), get_weather(city="Seattle", metric="fahrenheit")]"#,
    r#"[search_notes(query="x", limit=5, tags=["a", 'b'], fuzzy=True, score=-1.5e3)]"#,
    r#"[search_notes(query="x",fuzzy=False)]"#,
    r#"[search_notes(query="x", score=None)]"#,
    r#"[search_notes(query="x", tags=[])]"#,
    r#"[list_tags()]"#,
    r#"[list_tags(), vault.read-note(path="a \"b\" \\ \u00e9 日本")]"#,
    r#"[any_args(x={"k": [1, None, 'v']}, o={})]"#,
    r#"[any_args()]"#,
    r#"[any_args(o={'a': True})]"#,
];

const BAD: [&str; 18] = [
    "Hello",
    "[]",
    "[get_weather()]",
    r#"[get_weather(metric="celsius")]"#,
    r#"[get_weather(city="x", metric="kelvin")]"#,
    r#"[get_weather(city=Paris)]"#,
    r#"[get_weather(city="x", town="y")]"#,
    r#"[nope()]"#,
    r#"[search_notes(query="x", limit="5")]"#,
    r#"[search_notes(query="x", limit=1.5)]"#,
    r#"[search_notes(query="x", tags=[1])]"#,
    r#"[search_notes(query="x", fuzzy=true)]"#,
    r#"[search_notes(query="x",)]"#,
    r#"[search_notes(limit=5, query="x")]"#,
    r#"[search_notes(query="x", fuzzy=True, limit=5)]"#,
    r#"[list_tags()] trailing"#,
    r#"[list_tags(x=1)]"#,
    "[get_weather(city=\"x\ny\")]",
];

#[test]
fn llama_cpp_agrees_with_the_grammar() {
    use llama_cpp_2::model::LlamaModel;
    use llama_cpp_2::model::params::LlamaModelParams;
    use llama_cpp_2::sampling::LlamaSampler;
    use llama_cpp_2::token::LlamaToken;

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/models/tiny-llama3.gguf");
    assert!(
        std::path::Path::new(path).exists(),
        "{path} is missing: run scripts/make-tiny-llama3-gguf (or scripts/setup) first"
    );
    // The process's one backend: the engine tests in this binary use it too (a second
    // `LlamaBackend::init` fails).
    let backend = obsidian_kb::embed::llama_backend().unwrap();
    let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default()).unwrap();
    assert!(model.vocab().is_eog(LlamaToken(128009)));
    let g = ToolGrammar::new(&tools()).unwrap();
    let admits = |sampler: LlamaSampler, text: &str| admits(&model, sampler, text);
    let strict =
        || LlamaSampler::grammar(&model, &g.gbnf, g.root).expect("llama.cpp parses the grammar");
    let lazy = || {
        LlamaSampler::grammar_lazy_patterns(&model, &g.gbnf, g.root, &g.trigger_patterns, &[])
            .expect("llama.cpp takes the lazy grammar")
    };
    for text in GOOD {
        assert!(admits(strict(), text), "llama.cpp should accept {text}");
        assert!(admits(lazy(), text), "lazy llama.cpp should accept {text}");
    }
    for text in BAD {
        assert!(!admits(strict(), text), "llama.cpp should reject {text}");
    }
    // Lazy: free text stays free, a reply that starts a call is held to the grammar.
    for text in [
        "Hello, the weather is fine.",
        "Notes: [a](b) and [c(d)]",
        "I will call [nope()]",
    ] {
        assert!(
            admits(lazy(), text),
            "lazy grammar should leave {text:?} alone"
        );
    }
    for text in [
        "[nope()]",
        " [get_weather()]",
        "<|python_tag|>[list_tags(x=1)]",
    ] {
        assert!(!admits(lazy(), text), "lazy grammar should reject {text:?}");
    }
    let words = LlamaSampler::grammar_lazy(&model, &g.gbnf, g.root, &g.trigger_words, &[]).unwrap();
    assert!(!admits(words, "<|python_tag|>[nope()]"));
    // Negative control: llama.cpp does reject a rule name with `_` (its parser prints
    // "error parsing grammar: expecting newline or end at _b" to stderr: expected).
    assert!(LlamaSampler::grammar(&model, "root ::= a_b\na_b ::= \"x\"", "root").is_err());
    llama_cpp_agrees_on_bounds_references_and_answers(&model);
}

/// The vault server's shape: a note reference, a bounded limit, an optional section.
fn vault_tools() -> Vec<ToolSpec> {
    vec![
        spec(
            "search_notes",
            json!({"type": "object", "properties": {
                "query": {"type": "string"},
                "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 50}
            }, "required": ["query"]}),
        ),
        spec(
            "read_note",
            json!({"type": "object", "properties": {
                "uri": {"type": "string"},
                "section": {"type": ["string", "null"]}
            }, "required": ["uri"]}),
        ),
    ]
}

fn known(uris: &[&str]) -> ValueDomains {
    let mut domains = ValueDomains::new();
    domains
        .entry("read_note".into())
        .or_default()
        .insert("uri".into(), uris.iter().map(|u| json!(u)).collect());
    domains
}

const KNOWN_GOOD: [&str; 5] = [
    r#"[search_notes(query="x", limit=1)]"#,
    r#"[search_notes(query="x", limit=50)]"#,
    r#"[read_note(uri="note://A b")]"#,
    r#"[read_note(uri='note://Café', section="Goals")]"#,
    r#"[search_notes(query="x", limit=None), read_note(uri="note://A b")]"#,
];

const KNOWN_BAD: [&str; 5] = [
    r#"[search_notes(query="x", limit=0)]"#,
    r#"[search_notes(query="x", limit=51)]"#,
    r#"[search_notes(query="x", limit=100000)]"#,
    r#"[read_note(uri="note://Invented")]"#,
    r#"[read_note(uri="A b")]"#,
];

#[test]
fn bounds_and_known_references_hold_the_arguments() {
    let tools = vault_tools();
    let g = ToolGrammar::with_domains(&tools, &known(&["note://A b", "note://Café"])).unwrap();
    let rules = parse_gbnf(&g.gbnf);
    let accepts = |text: &str| {
        let chars: Vec<char> = text.chars().collect();
        matches(&rules, &Expr::Rule(g.root.into()), &chars, 0).contains(&chars.len())
    };
    for text in KNOWN_GOOD {
        assert!(accepts(text), "should accept {text}");
    }
    for text in KNOWN_BAD {
        assert!(!accepts(text), "should reject {text}");
    }
    // With no reference known yet, read_note cannot be called at all.
    let g = ToolGrammar::with_domains(&tools, &known(&[])).unwrap();
    assert!(!g.gbnf.contains("read_note("), "{}", g.gbnf);
    assert!(g.gbnf.contains("search_notes("));
}

#[test]
fn sections_and_offsets_are_held_to_what_was_seen_and_max_chars_is_left_out() {
    let tools = vec![spec(
        "read_note",
        json!({"type": "object", "properties": {
            "uri": {"type": "string"},
            "section": {"type": ["string", "null"]},
            "offset": {"type": ["integer", "null"], "minimum": 0},
            "max_chars": {"type": ["integer", "null"], "minimum": 1}
        }, "required": ["uri"]}),
    )];
    let mut domains = known(&["note://A"]);
    let read = domains.get_mut("read_note").unwrap();
    read.insert(
        "section".into(),
        vec![json!("Goals"), json!("Step 1: set up")],
    );
    read.insert("offset".into(), vec![json!(6000)]);
    read.insert("max_chars".into(), vec![]);
    let g = ToolGrammar::with_domains(&tools, &domains).unwrap();
    let rules = parse_gbnf(&g.gbnf);
    let accepts = |text: &str| {
        let chars: Vec<char> = text.chars().collect();
        matches(&rules, &Expr::Rule(g.root.into()), &chars, 0).contains(&chars.len())
    };
    for good in [
        r#"[read_note(uri="note://A")]"#,
        r#"[read_note(uri="note://A", section="Goals")]"#,
        r#"[read_note(uri="note://A", section='Step 1: set up', offset=6000)]"#,
    ] {
        assert!(accepts(good), "should accept {good}");
    }
    for bad in [
        r#"[read_note(uri="note://A", section="Midterm")]"#,
        r#"[read_note(uri="note://A", offset=100)]"#,
        r#"[read_note(uri="note://A", offset="6000")]"#,
        r#"[read_note(uri="note://A", max_chars=500)]"#,
    ] {
        assert!(!accepts(bad), "should reject {bad}");
    }
}

#[test]
fn answer_grammar_admits_prose_and_citations_but_no_call() {
    let accepts = |text: &str| gbnf_accepts(ANSWER_GBNF, text);
    for text in ANSWERS {
        assert!(accepts(text), "should accept {text:?}");
    }
    for text in NOT_ANSWERS {
        assert!(!accepts(text), "should reject {text:?}");
    }
}

const ANSWERS: [&str; 5] = [
    "The midterm is on March 3 [1].",
    "Source [2] says room 204.",
    "  \nYes: see [1], [3].",
    "Le café est fermé.",
    "A list: [a] and [read_note(x)] later is fine.",
];

const NOT_ANSWERS: [&str; 6] = [
    r#"[read_note(uri="x")]"#,
    "[1] Exams (note://Exams)",
    r#"  [search_notes(query="x")]"#,
    "<|python_tag|>[x()]",
    "",
    "   ",
];

/// Whether the interpreter below matches all of `text` from the grammar's `root`.
fn gbnf_accepts(gbnf: &str, text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    matches(&parse_gbnf(gbnf), &Expr::Rule("root".into()), &chars, 0).contains(&chars.len())
}

/// Whether llama.cpp's sampler takes every token of `text` and then allows end-of-turn.
fn admits(
    model: &llama_cpp_2::model::LlamaModel,
    mut sampler: llama_cpp_2::sampling::LlamaSampler,
    text: &str,
) -> bool {
    use llama_cpp_2::token::LlamaToken;
    use llama_cpp_2::token::data::LlamaTokenData;
    use llama_cpp_2::token::data_array::LlamaTokenDataArray;

    let eot = LlamaToken(128009);
    for token in model.vocab().tokenize(text.as_bytes(), false, true) {
        if sampler.try_accept(token).is_err() {
            return false;
        }
    }
    let mut end = LlamaTokenDataArray::new(vec![LlamaTokenData::new(eot, 1.0, 0.0)], false);
    sampler.apply(&mut end);
    end.data[0].logit() > f32::NEG_INFINITY
}

/// Part of `llama_cpp_agrees_with_the_grammar` (llama.cpp's backend starts once per process).
fn llama_cpp_agrees_on_bounds_references_and_answers(model: &llama_cpp_2::model::LlamaModel) {
    use llama_cpp_2::sampling::LlamaSampler;

    let admits = |sampler: LlamaSampler, text: &str| admits(model, sampler, text);
    let g =
        ToolGrammar::with_domains(&vault_tools(), &known(&["note://A b", "note://Café"])).unwrap();
    let calls = || LlamaSampler::grammar(model, &g.gbnf, g.root).expect("llama.cpp parses it");
    for text in KNOWN_GOOD {
        assert!(admits(calls(), text), "llama.cpp should accept {text}");
    }
    for text in KNOWN_BAD {
        assert!(!admits(calls(), text), "llama.cpp should reject {text}");
    }
    let answer = || LlamaSampler::grammar(model, ANSWER_GBNF, "root").expect("llama.cpp parses it");
    for text in ANSWERS {
        assert!(admits(answer(), text), "llama.cpp should accept {text:?}");
    }
    for text in NOT_ANSWERS {
        assert!(!admits(answer(), text), "llama.cpp should reject {text:?}");
    }
    let cite =
        || LlamaSampler::grammar(model, &citation_gbnf(12), "root").expect("llama.cpp parses it");
    for text in CITATIONS {
        assert!(admits(cite(), text), "llama.cpp should accept {text:?}");
    }
    for text in NOT_CITATIONS {
        assert!(!admits(cite(), text), "llama.cpp should reject {text:?}");
    }
    let verdict =
        || LlamaSampler::grammar(model, VERDICT_GBNF, "root").expect("llama.cpp parses it");
    for text in VERDICTS {
        assert!(admits(verdict(), text), "llama.cpp should accept {text:?}");
    }
    for text in NOT_VERDICTS {
        assert!(!admits(verdict(), text), "llama.cpp should reject {text:?}");
    }
}

/// The figure check's reply: one word.
const VERDICTS: [&str; 2] = ["yes", "no"];
const NOT_VERDICTS: [&str; 4] = ["Yes", "yes.", "maybe", "no, it is about the landlord"];

#[test]
fn the_verdict_grammar_admits_yes_or_no() {
    for text in VERDICTS {
        assert!(gbnf_accepts(VERDICT_GBNF, text), "should accept {text:?}");
    }
    for text in NOT_VERDICTS {
        assert!(!gbnf_accepts(VERDICT_GBNF, text), "should reject {text:?}");
    }
}

/// Replies to "which sources did your answer come from?" with 12 sources given.
const CITATIONS: [&str; 5] = ["[1]", "[12]", "[3, 1]", "[1, 2, 3, 4, 5]", "none"];
const NOT_CITATIONS: [&str; 9] = [
    "[0]",
    "none [1]",
    "[13]",
    "[]",
    "1",
    "[1, 2, 3, 4, 5, 6]",
    "[1,2]",
    "Source [1]",
    "[1] and more",
];

#[test]
fn citation_grammar_admits_only_the_numbers_given() {
    let gbnf = citation_gbnf(12);
    let accepts = |text: &str| gbnf_accepts(&gbnf, text);
    for text in CITATIONS {
        assert!(accepts(text), "should accept {text:?}");
    }
    for text in NOT_CITATIONS {
        assert!(!accepts(text), "should reject {text:?}");
    }
}

// --- A small GBNF interpreter: enough of llama.cpp's syntax for what grammar.rs writes.

#[derive(Debug, Clone)]
enum Expr {
    Lit(Vec<char>),
    /// Negated?, ranges.
    Class(bool, Vec<(char, char)>),
    Rule(String),
    Seq(Vec<Expr>),
    Alt(Vec<Expr>),
    Repeat(Box<Expr>, usize, Option<usize>),
}

fn parse_gbnf(text: &str) -> HashMap<String, Expr> {
    let mut rules = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (name, body) = line
            .split_once(" ::= ")
            .unwrap_or_else(|| panic!("not a rule: {line}"));
        let chars: Vec<char> = body.chars().collect();
        let mut pos = 0;
        let expr = parse_alt(&chars, &mut pos);
        assert_eq!(pos, chars.len(), "trailing text in rule {name}: {body}");
        assert!(
            rules.insert(name.to_string(), expr).is_none(),
            "rule {name} defined twice"
        );
    }
    rules
}

fn skip_ws(s: &[char], pos: &mut usize) {
    while *pos < s.len() && s[*pos] == ' ' {
        *pos += 1;
    }
}

fn parse_alt(s: &[char], pos: &mut usize) -> Expr {
    let mut alts = vec![parse_seq(s, pos)];
    while *pos < s.len() && s[*pos] == '|' {
        *pos += 1;
        alts.push(parse_seq(s, pos));
    }
    if alts.len() == 1 {
        alts.pop().unwrap()
    } else {
        Expr::Alt(alts)
    }
}

fn parse_seq(s: &[char], pos: &mut usize) -> Expr {
    let mut items = Vec::new();
    loop {
        skip_ws(s, pos);
        if *pos >= s.len() || s[*pos] == '|' || s[*pos] == ')' {
            break;
        }
        let atom = match s[*pos] {
            '"' => {
                *pos += 1;
                let mut lit = Vec::new();
                while s[*pos] != '"' {
                    lit.push(escaped(s, pos));
                }
                *pos += 1;
                Expr::Lit(lit)
            }
            '[' => {
                *pos += 1;
                let negated = s[*pos] == '^';
                if negated {
                    *pos += 1;
                }
                let mut ranges = Vec::new();
                while s[*pos] != ']' {
                    let lo = escaped(s, pos);
                    let hi = if s[*pos] == '-' && s[*pos + 1] != ']' {
                        *pos += 1;
                        escaped(s, pos)
                    } else {
                        lo
                    };
                    ranges.push((lo, hi));
                }
                *pos += 1;
                Expr::Class(negated, ranges)
            }
            '(' => {
                *pos += 1;
                let inner = parse_alt(s, pos);
                skip_ws(s, pos);
                assert_eq!(s[*pos], ')');
                *pos += 1;
                inner
            }
            _ => {
                let start = *pos;
                while *pos < s.len() && (s[*pos].is_ascii_alphanumeric() || s[*pos] == '-') {
                    *pos += 1;
                }
                assert!(
                    *pos > start,
                    "unexpected {:?} in {}",
                    s[*pos],
                    s.iter().collect::<String>()
                );
                Expr::Rule(s[start..*pos].iter().collect())
            }
        };
        let item = match s.get(*pos) {
            Some('?') => Expr::Repeat(Box::new(atom), 0, Some(1)),
            Some('*') => Expr::Repeat(Box::new(atom), 0, None),
            Some('+') => Expr::Repeat(Box::new(atom), 1, None),
            Some('{') => {
                let end = s[*pos..].iter().position(|c| *c == '}').unwrap() + *pos;
                let spec: String = s[*pos + 1..end].iter().collect();
                let (lo, hi) = match spec.split_once(',') {
                    Some((lo, "")) => (lo.parse().unwrap(), None),
                    Some((lo, hi)) => (lo.parse().unwrap(), Some(hi.parse().unwrap())),
                    None => (spec.parse().unwrap(), Some(spec.parse().unwrap())),
                };
                *pos = end;
                Expr::Repeat(Box::new(atom), lo, hi)
            }
            _ => {
                items.push(atom);
                continue;
            }
        };
        *pos += 1;
        items.push(item);
    }
    if items.len() == 1 {
        items.pop().unwrap()
    } else {
        Expr::Seq(items)
    }
}

fn escaped(s: &[char], pos: &mut usize) -> char {
    let c = s[*pos];
    *pos += 1;
    if c != '\\' {
        return c;
    }
    let e = s[*pos];
    *pos += 1;
    match e {
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'x' | 'u' => {
            let n = if e == 'x' { 2 } else { 4 };
            let hex: String = s[*pos..*pos + n].iter().collect();
            *pos += n;
            char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap()
        }
        other => other,
    }
}

/// Every position where `e` can end when started at `pos`.
fn matches(rules: &HashMap<String, Expr>, e: &Expr, s: &[char], pos: usize) -> BTreeSet<usize> {
    match e {
        Expr::Lit(lit) => {
            let end = pos + lit.len();
            if end <= s.len() && s[pos..end] == lit[..] {
                BTreeSet::from([end])
            } else {
                BTreeSet::new()
            }
        }
        Expr::Class(negated, ranges) => match s.get(pos) {
            Some(c) if ranges.iter().any(|(lo, hi)| lo <= c && c <= hi) != *negated => {
                BTreeSet::from([pos + 1])
            }
            _ => BTreeSet::new(),
        },
        Expr::Rule(name) => matches(rules, &rules[name], s, pos),
        Expr::Alt(alts) => alts
            .iter()
            .flat_map(|a| matches(rules, a, s, pos))
            .collect(),
        Expr::Seq(items) => items.iter().fold(BTreeSet::from([pos]), |ends, item| {
            ends.into_iter()
                .flat_map(|p| matches(rules, item, s, p))
                .collect()
        }),
        Expr::Repeat(inner, lo, hi) => {
            let mut out = BTreeSet::new();
            let mut frontier = BTreeSet::from([pos]);
            let mut count = 0;
            loop {
                if count >= *lo {
                    out.extend(frontier.iter().copied());
                }
                if hi.is_some_and(|h| count >= h) || frontier.is_empty() {
                    break;
                }
                let next: BTreeSet<usize> = frontier
                    .iter()
                    .flat_map(|p| matches(rules, inner, s, *p))
                    .filter(|p| count < *lo || !out.contains(p))
                    .collect();
                if next.is_empty() || count > s.len() {
                    break;
                }
                frontier = next;
                count += 1;
            }
            out
        }
    }
}
