//! The llama.cpp path on Llama 3.2's real vocabulary: a tiny random-weight GGUF carrying the
//! real tokenizer, special tokens, `add_bos_token` and end-of-generation ids. Its text is noise;
//! its tokens are exactly Llama 3.2's.

use crate::common;

use std::ops::ControlFlow;

use recall::engine::llama::{Engine, LoadOptions, SessionOptions};
use recall::engine::{ChatModel, Constraint, GenerateRequest, Sampling, StopReason};
use recall::prompt::{ChatFamily, ChatTemplate, Message};
use recall::tool::ToolSpec;

const BOS: i32 = 128000;
const START_HEADER: i32 = 128006;
const END_HEADER: i32 = 128007;
const EOT: i32 = 128009;
const PYTHON_TAG: i32 = 128010;

fn load() -> Engine {
    Engine::load(&common::tiny_llama3(), &LoadOptions::default()).expect("tiny model loads")
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "search_notes".into(),
        description: "Search the notes.".into(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Words to find."}},
            "required": ["query"]
        }),
    }]
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You answer from notes."),
        Message::user("What is in Home?"),
        Message::assistant("<|python_tag|>[search_notes(query=\"home\")]"),
        Message::ipython("{\"hits\": []}"),
    ]
}

#[test]
fn the_gguf_is_recognised_as_llama3() {
    let engine = load();
    let info = engine.info();
    assert!(info.add_bos);
    assert_eq!(info.bos_text, "<|begin_of_text|>");
    let template = ChatTemplate::new(
        info.chat_template.as_deref(),
        &info.bos_text,
        &info.eos_text,
    )
    .unwrap();
    assert_eq!(template.family(), ChatFamily::Llama3);
}

#[test]
fn rendered_prompts_tokenize_with_one_bos_and_single_special_tokens() {
    let engine = load();
    let template = ChatTemplate::llama3();
    for prompt in [
        template.decision(&conversation(), &tools()).unwrap(),
        template.answer(&conversation()).unwrap(),
    ] {
        let ids = engine.tokenize_prompt(&prompt.text);
        assert_eq!(ids[0], BOS);
        assert_eq!(
            ids.iter().filter(|&&t| t == BOS).count(),
            1,
            "no double BOS"
        );
        // Five headers: system, user, assistant, ipython, and the open assistant header.
        assert_eq!(ids.iter().filter(|&&t| t == START_HEADER).count(), 5);
        assert_eq!(ids.iter().filter(|&&t| t == END_HEADER).count(), 5);
        assert_eq!(ids.iter().filter(|&&t| t == EOT).count(), 4);
        assert_eq!(ids.iter().filter(|&&t| t == PYTHON_TAG).count(), 1);
        // Round trip: the special tokens render back as the text they came from.
        let text: String = ids.iter().map(|&t| engine.token_text(t)).collect();
        assert_eq!(text, prompt.text);
    }
}

/// Once the grammar is complete only end-of-generation tokens remain: generation must stop on
/// Llama 3's `<|eot_id|>` or `<|eom_id|>` (which one depends on the random weights) and report
/// which, without either leaking into the text.
#[test]
fn stops_on_llama3_end_of_generation_tokens() {
    let engine = load();
    let mut session = engine
        .session(&SessionOptions {
            n_ctx: Some(1024),
            threads: Some(2),
        })
        .unwrap();
    let prompt = ChatTemplate::llama3().answer(&conversation()).unwrap();
    let mut request = GenerateRequest::greedy(16);
    request.constraint = Some(Constraint {
        gbnf: "root ::= \"Done.\"".into(),
        root: "root".into(),
        lazy_patterns: Vec::new(),
    });
    let done = session
        .generate(&prompt.text, &request, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(done.text, "Done.");
    assert!(
        matches!(done.stop, StopReason::EndOfTurn | StopReason::EndOfMessage),
        "{:?}",
        done.stop
    );
}

#[test]
fn the_tool_grammar_holds_on_the_real_vocabulary() {
    use recall::grammar::ToolGrammar;
    use recall::parse::{Reply, parse_reply};
    use recall::validate::check_call;

    let engine = load();
    let mut session = engine
        .session(&SessionOptions {
            n_ctx: Some(2048),
            threads: Some(2),
        })
        .unwrap();
    let tools = tools();
    let grammar = ToolGrammar::new(&tools).unwrap();
    let prompt = ChatTemplate::llama3()
        .decision(&conversation()[..2], &tools)
        .unwrap();
    for seed in 0..5 {
        let mut request = GenerateRequest::new(48);
        request.sampling = Sampling {
            temperature: 1.0,
            top_p: 1.0,
            min_p: 0.0,
            seed,
        };
        request.constraint = Some(Constraint {
            gbnf: grammar.gbnf.clone(),
            root: grammar.root.to_string(),
            lazy_patterns: Vec::new(),
        });
        let done = session
            .generate(&prompt.text, &request, &mut |_| ControlFlow::Continue(()))
            .unwrap();
        if done.stop == StopReason::MaxTokens {
            continue;
        }
        match parse_reply(&done.text, &tools) {
            Reply::Calls(calls) => calls.iter().for_each(|c| check_call(c, &tools).unwrap()),
            other => panic!("{:?}: {other:?}", done.text),
        }
    }
}
