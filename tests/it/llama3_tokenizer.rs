//! Checks rendered Llama 3.2 prompts at the token level with Meta's real `tokenizer.json`: every
//! special token is one id, there is exactly one BOS, and the ids equal what Meta's reference
//! encoder (`ChatFormat.encode_dialog_prompt`) assembles message by message.
//!
//! Needs `models/llama3.2-tokenizer/tokenizer.json`; fails (never skips) with the command to fetch
//! it when missing.

use recall::prompt::{ChatTemplate, Message, Role};
use recall::tool::ToolSpec;
use serde_json::json;
use tokenizers::Tokenizer;

const BEGIN_OF_TEXT: u32 = 128000;
const START_HEADER: u32 = 128006;
const END_HEADER: u32 = 128007;
const EOM: u32 = 128008;
const EOT: u32 = 128009;
const PYTHON_TAG: u32 = 128010;

fn tokenizer() -> Tokenizer {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/llama3.2-tokenizer/tokenizer.json"
    );
    if !std::path::Path::new(path).exists() {
        panic!("{path} is missing: run scripts/fetch-llama3-tokenizer (or scripts/setup) first");
    }
    Tokenizer::from_file(path).unwrap_or_else(|e| panic!("cannot load {path}: {e}"))
}

/// Tokenizes as the engine must: no added specials (the text carries its BOS), specials parsed.
fn encode(tok: &Tokenizer, text: &str) -> Vec<u32> {
    tok.encode(text, false)
        .expect("tokenizes")
        .get_ids()
        .to_vec()
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "get_weather".into(),
            description: "Get weather info for places".into(),
            input_schema: json!({"type": "object", "properties": {
                "city": {"type": "string", "description": "The name of the city to get the weather for"},
                "metric": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
            }, "required": ["city"]}),
        },
        ToolSpec {
            name: "search_notes".into(),
            description: "Search the vault's notes".into(),
            input_schema: json!({"type": "object", "properties": {
                "query": {"type": "string"}, "limit": {"type": "integer", "default": 5}
            }, "required": ["query"]}),
        },
    ]
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You are Recall, answering from the user's notes."),
        Message::user("What is the weather in SF? Also find my notes on \"travel\"."),
        Message::assistant(
            "<|python_tag|>[get_weather(city=\"San Francisco\"), search_notes(query='travel')]",
        ),
        Message::ipython("\"25 C\""),
        Message::ipython("[{\"path\": \"Trips/SF.md\", \"score\": 0.9}]"),
    ]
}

/// Meta's reference assembly: BOS, then per message header + "\n\n" + content + eot, then the
/// assistant header; each piece encoded on its own.
fn meta_reference(tok: &Tokenizer, messages: &[Message]) -> Vec<u32> {
    let header = |role: &str| {
        let mut ids = vec![START_HEADER];
        ids.extend(encode(tok, role));
        ids.push(END_HEADER);
        ids.extend(encode(tok, "\n\n"));
        ids
    };
    let mut ids = vec![BEGIN_OF_TEXT];
    for m in messages {
        ids.extend(header(m.role.as_str()));
        let content = match m.content.strip_prefix("<|python_tag|>") {
            Some(rest) if m.role == Role::Assistant => {
                ids.push(PYTHON_TAG);
                rest
            }
            _ => m.content.as_str(),
        };
        ids.extend(encode(tok, content));
        ids.push(EOT);
    }
    ids.extend(header("assistant"));
    ids
}

#[test]
fn every_special_token_is_one_id() {
    let tok = tokenizer();
    for (text, id) in [
        ("<|begin_of_text|>", BEGIN_OF_TEXT),
        ("<|start_header_id|>", START_HEADER),
        ("<|end_header_id|>", END_HEADER),
        ("<|eom_id|>", EOM),
        ("<|eot_id|>", EOT),
        ("<|python_tag|>", PYTHON_TAG),
    ] {
        assert_eq!(encode(&tok, text), [id], "{text}");
        assert_eq!(tok.token_to_id(text), Some(id), "{text}");
    }
}

#[test]
fn decision_prompt_tokens_match_metas_encoder() {
    let tok = tokenizer();
    let prompt = ChatTemplate::llama3()
        .decision(&conversation(), &tools())
        .unwrap();
    assert!(prompt.contains_bos);
    let ids = encode(&tok, &prompt.text);

    assert_eq!(ids[0], BEGIN_OF_TEXT);
    assert_eq!(
        ids.iter().filter(|&&i| i == BEGIN_OF_TEXT).count(),
        1,
        "exactly one BOS"
    );
    // system (instructions + tools + system prompt), user, assistant, 2 × ipython, generation header.
    assert_eq!(ids.iter().filter(|&&i| i == START_HEADER).count(), 6);
    assert_eq!(ids.iter().filter(|&&i| i == END_HEADER).count(), 6);
    assert_eq!(ids.iter().filter(|&&i| i == EOT).count(), 5);
    assert_eq!(ids.iter().filter(|&&i| i == PYTHON_TAG).count(), 1);
    assert!(ids.ends_with(&[
        START_HEADER,
        tok.token_to_id("assistant").unwrap(),
        END_HEADER,
        271
    ]));

    let head = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n";
    let system = &prompt.text[head.len()..prompt.text.find("<|eot_id|>").unwrap()];
    let mut messages = vec![Message::system(system)];
    messages.extend(conversation().into_iter().skip(1));
    assert_eq!(ids, meta_reference(&tok, &messages));
}

#[test]
fn answer_prompt_tokens_match_metas_encoder() {
    let tok = tokenizer();
    let prompt = ChatTemplate::llama3().answer(&conversation()).unwrap();
    let ids = encode(&tok, &prompt.text);
    assert_eq!(
        ids.iter().filter(|&&i| i == BEGIN_OF_TEXT).count(),
        1,
        "exactly one BOS"
    );
    assert_eq!(ids, meta_reference(&tok, &conversation()));
    // No schemas or instructions on the answer step.
    assert!(!prompt.text.contains("Here is a list of functions"));
}

#[test]
fn adding_specials_again_would_double_the_bos() {
    // The pitfall `Prompt::contains_bos` exists for: Llama 3's post-processor prepends BOS.
    let tok = tokenizer();
    let prompt = ChatTemplate::llama3()
        .answer(&[Message::user("hi")])
        .unwrap();
    let ids = tok
        .encode(prompt.text.as_str(), true)
        .unwrap()
        .get_ids()
        .to_vec();
    assert_eq!(&ids[..2], [BEGIN_OF_TEXT, BEGIN_OF_TEXT]);
}

/// What the decision prompt's fixed part (instructions, the bundled vault server's real tool
/// schemas, the system prompt) costs in Llama 3.2 tokens. It was 1,347 tokens with Meta's 4-space
/// indented JSON and `null` types; the budget keeps whitespace and `null`s from coming back.
#[test]
fn the_decision_prompts_fixed_part_spends_no_tokens_on_whitespace_or_null() {
    use recall::mcp::McpManager;
    use recall::tool::ToolHost;
    let tok = tokenizer();
    let vault = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sample-vault");
    let config =
        recall::config::builtin_for(std::path::Path::new(env!("CARGO_BIN_EXE_recall")), &vault)
            .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let manager = runtime.block_on(McpManager::start(&config.servers));
    let tools = manager.tools();
    runtime.block_on(manager.shutdown());
    assert_eq!(tools.len(), 5);

    let conversation = [
        Message::system(recall::agent::SYSTEM_PROMPT.trim()),
        Message::user("When is the biology midterm?"),
    ];
    let prompt = ChatTemplate::llama3()
        .decision(&conversation, &tools)
        .unwrap();
    let system_end = prompt.text.find("<|eot_id|>").unwrap() + "<|eot_id|>".len();
    let count = |text: &str| encode(&tok, text).len();
    let schemas = recall::prompt::tools_json(&tools);
    let fixed = count(&prompt.text[..system_end]);
    eprintln!(
        "decision prompt: {} tokens; fixed part {fixed} (schemas {}, system prompt {})",
        count(&prompt.text),
        count(&schemas),
        count(recall::agent::SYSTEM_PROMPT.trim())
    );
    for (tool, line) in tools.iter().zip(schemas.lines().skip(1)) {
        eprintln!("  {}: {} tokens", tool.name, count(line));
    }

    assert!(prompt.text.contains(&schemas));
    let lines: Vec<&str> = schemas.lines().collect();
    assert_eq!(
        lines.len(),
        tools.len() + 2,
        "one tool per line:\n{schemas}"
    );
    for line in &lines[1..lines.len() - 1] {
        let tool: serde_json::Value =
            serde_json::from_str(line.trim_end_matches(',')).expect("each line is a tool");
        assert_eq!(tool["parameters"]["type"], "dict");
    }
    // (A description may say "null"; a type or a default may not.)
    assert!(
        !schemas.contains("\"null\"") && !schemas.contains(": null"),
        "{schemas}"
    );
    assert!(!schemas.contains("  "), "no indentation: {schemas}");
    // 1,094 at stop 6; 1,127 since `search_notes` took `passages`, 1,164 since `excerpt`,
    // 1,300 since it and `list_notes` took `from` and `to` (the prompt cache keeps this part
    // across runs).
    assert!(fixed <= 1300, "the fixed part grew to {fixed} tokens");
}
