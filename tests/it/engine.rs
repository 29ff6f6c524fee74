//! The llama.cpp engine on the real SmolLM2 GGUF: load, stream, stop, KV reuse, grammar.

use crate::common;

use std::ops::ControlFlow;

use recall::engine::llama::{Engine, LoadOptions, SessionOptions};
use recall::engine::{
    ChatModel, Constraint, EngineError, GenerateRequest, Sampling, StopReason, TokenScore,
};

fn ignore(_: &str) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

fn chatml(user: &str) -> String {
    format!(
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    )
}

fn load() -> Engine {
    Engine::load(&common::smollm2(), &LoadOptions::default()).expect("test model loads")
}

fn session_options() -> SessionOptions {
    SessionOptions {
        n_ctx: Some(2048),
        threads: Some(2),
    }
}

#[test]
fn reads_metadata_of_the_test_model() {
    let engine = load();
    let info = engine.info();
    assert!(
        info.chat_template
            .as_deref()
            .unwrap_or("")
            .contains("<|im_start|>")
    );
    assert_eq!(info.n_ctx_train, 8192);
    assert!(!info.add_bos, "SmolLM2 does not add BOS");
}

#[test]
fn streams_what_it_returns_and_stops_at_end_of_turn() {
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let mut streamed = String::new();
    let done = session
        .generate(
            &chatml("Say hello."),
            &GenerateRequest::greedy(64),
            &mut |t| {
                streamed.push_str(t);
                ControlFlow::Continue(())
            },
        )
        .unwrap();
    assert_eq!(streamed, done.text);
    assert!(!done.text.is_empty());
    assert!(!done.text.contains("<|im_end|>"), "{:?}", done.text);
    assert!(
        matches!(done.stop, StopReason::EndOfTurn | StopReason::MaxTokens),
        "{:?}",
        done.stop
    );
    assert!(done.stats.generated_tokens > 0);
}

#[test]
fn max_tokens_and_stop_strings_end_generation() {
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let prompt = chatml("Count from 1 to 20, separated by commas.");
    let done = session
        .generate(&prompt, &GenerateRequest::greedy(3), &mut ignore)
        .unwrap();
    assert_eq!(done.stop, StopReason::MaxTokens);
    assert_eq!(done.stats.generated_tokens, 3);

    // Whatever greedy decoding writes first, stopping on its second character must cut there.
    let free = session
        .generate(&prompt, &GenerateRequest::greedy(8), &mut ignore)
        .unwrap();
    let second: String = free.text.chars().skip(1).take(1).collect();
    let mut request = GenerateRequest::greedy(8);
    request.stop = vec![second.clone()];
    let stopped = session.generate(&prompt, &request, &mut ignore).unwrap();
    assert_eq!(stopped.stop, StopReason::StopString(second));
    assert_eq!(stopped.text, free.text.chars().take(1).collect::<String>());
}

#[test]
fn second_call_evaluates_only_the_new_tokens() {
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let first_prompt = chatml("What is the capital of France?");
    let first = session
        .generate(&first_prompt, &GenerateRequest::greedy(16), &mut ignore)
        .unwrap();
    assert_eq!(first.stats.reused_tokens, 0);
    assert_eq!(first.stats.evaluated_tokens, first.stats.prompt_tokens);

    let follow_up = format!(
        "{first_prompt}{}<|im_end|>\n<|im_start|>user\nAnd of Italy?<|im_end|>\n<|im_start|>assistant\n",
        first.text
    );
    let second = session
        .generate(&follow_up, &GenerateRequest::greedy(16), &mut ignore)
        .unwrap();
    let new_tokens = engine.tokenize_prompt(&follow_up).len() - first.stats.prompt_tokens;
    assert!(
        second.stats.reused_tokens >= first.stats.prompt_tokens,
        "reused {} of a {}-token prefix",
        second.stats.reused_tokens,
        first.stats.prompt_tokens
    );
    assert!(second.stats.evaluated_tokens <= new_tokens);
    assert_eq!(
        second.stats.reused_tokens + second.stats.evaluated_tokens,
        second.stats.prompt_tokens
    );

    // The same prompt again reuses everything but the one token needed for fresh logits, and
    // greedy decoding gives the same text as on a cold cache.
    let again = session
        .generate(&follow_up, &GenerateRequest::greedy(16), &mut ignore)
        .unwrap();
    assert_eq!(again.stats.evaluated_tokens, 1);
    let mut cold = engine.session(&session_options()).unwrap();
    let cold_run = cold
        .generate(&follow_up, &GenerateRequest::greedy(16), &mut ignore)
        .unwrap();
    assert_eq!(again.text, cold_run.text);
    assert_eq!(second.text, cold_run.text);
}

#[test]
fn a_grammar_forces_its_language() {
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let mut request = GenerateRequest::greedy(40);
    request.constraint = Some(Constraint {
        gbnf: r#"root ::= "[" call ("," " "? call)* "]"
call ::= ("search_notes" | "read_note") "(query=\"" [a-z ]{1,20} "\")""#
            .to_string(),
        root: "root".to_string(),
        lazy_patterns: Vec::new(),
    });
    let done = session
        .generate(&chatml("Find my notes about bread."), &request, &mut ignore)
        .unwrap();
    let re = regex::Regex::new(r#"^\[(search_notes|read_note)\(query="[a-z ]{1,20}"\)(, ?(search_notes|read_note)\(query="[a-z ]{1,20}"\))*\]$"#).unwrap();
    assert!(
        re.is_match(&done.text) || done.stop == StopReason::MaxTokens,
        "{:?} {:?}",
        done.text,
        done.stop
    );
    assert!(done.text.starts_with("[search_notes(") || done.text.starts_with("[read_note("));
}

#[test]
fn a_lazy_grammar_leaves_free_text_free() {
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let mut request = GenerateRequest::greedy(24);
    request.constraint = Some(Constraint {
        gbnf: r#"root ::= "[" "done" "]""#.to_string(),
        root: "root".to_string(),
        lazy_patterns: vec![r"^\s*(\[)[\s\S]*".to_string()],
    });
    let unconstrained = session
        .generate(
            &chatml("Say hello."),
            &GenerateRequest::greedy(24),
            &mut ignore,
        )
        .unwrap();
    let constrained = session
        .generate(&chatml("Say hello."), &request, &mut ignore)
        .unwrap();
    assert!(!unconstrained.text.trim_start().starts_with('['));
    assert_eq!(constrained.text, unconstrained.text);
}

#[test]
fn cancel_ends_the_turn() {
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let request = GenerateRequest::greedy(64);
    request.cancel.cancel();
    let done = session
        .generate(&chatml("Tell a story."), &request, &mut ignore)
        .unwrap();
    assert_eq!(done.stop, StopReason::Cancelled);
    assert_eq!(done.stats.generated_tokens, 0);
}

#[test]
fn a_cancelled_prompt_is_not_read_and_the_session_goes_on() {
    let engine = load();
    // Several prompt batches long: cancellation is checked between them.
    let prompt = chatml(&"Tell me about cells and their parts. ".repeat(60));
    let mut session = engine.session(&session_options()).unwrap();
    let stopped = GenerateRequest::greedy(16);
    stopped.cancel.cancel();
    let done = session.generate(&prompt, &stopped, &mut ignore).unwrap();
    assert_eq!(done.stop, StopReason::Cancelled);
    assert!(done.stats.prompt_tokens > 300, "{:?}", done.stats);
    assert_eq!(done.stats.evaluated_tokens, 0, "{:?}", done.stats);
    assert_eq!(done.text, "");

    // The next request on the same session answers as a fresh session does.
    let again = session
        .generate(&prompt, &GenerateRequest::greedy(16), &mut ignore)
        .unwrap();
    let mut fresh = engine.session(&session_options()).unwrap();
    let expected = fresh
        .generate(&prompt, &GenerateRequest::greedy(16), &mut ignore)
        .unwrap();
    assert_eq!(again.text, expected.text);
    assert_ne!(again.stop, StopReason::Cancelled);
}

#[test]
fn an_oversized_prompt_is_an_error_not_a_crash() {
    let engine = load();
    let mut session = engine
        .session(&SessionOptions {
            n_ctx: Some(128), // llama.cpp rounds this up to its minimum
            threads: Some(2),
        })
        .unwrap();
    let long = chatml(&"word ".repeat(400));
    let err = session
        .generate(&long, &GenerateRequest::greedy(4), &mut ignore)
        .unwrap_err();
    assert!(
        matches!(err, EngineError::ContextOverflow { prompt_tokens, n_ctx } if prompt_tokens > n_ctx),
        "{err}"
    );
}

/// llama.cpp allows one backend per process: the vault server's embedder and recall's engine
/// share it, so one process can do both (each used to initialise its own; the second failed).
#[test]
fn one_process_can_embed_and_generate() {
    let embedder = obsidian_kb::embed::Embedder::load(&common::minilm(), 1)
        .expect("the embedding model loads");
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let completion = session
        .generate(&chatml("Say hi."), &GenerateRequest::new(4), &mut ignore)
        .unwrap();
    assert!(completion.stats.generated_tokens > 0);
    let vector = embedder.embed_query("a pump for the village").unwrap();
    assert_eq!(vector.len(), embedder.info().dim);
}

#[test]
fn bad_model_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.gguf");
    let err = Engine::load(&missing, &LoadOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("no such file"), "{err}");

    let not_gguf = dir.path().join("notes.gguf");
    std::fs::write(&not_gguf, "# not a model\n").unwrap();
    let err = Engine::load(&not_gguf, &LoadOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("not a GGUF file"), "{err}");

    // A real header with the rest cut off: llama.cpp must refuse it, not crash.
    let truncated = dir.path().join("truncated.gguf");
    let bytes = std::fs::read(common::smollm2()).unwrap();
    std::fs::write(&truncated, &bytes[..4096]).unwrap();
    let err = Engine::load(&truncated, &LoadOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cannot load model"), "{err}");
}

/// The tool grammar over the live tool list of the real vault server, on the real model, with
/// sampling at temperature 1 over many seeds: every reply parses and names only real tools and
/// parameters with values of the declared types.
#[test]
fn constrained_decisions_always_parse_and_name_only_real_tools() {
    use recall::grammar::ToolGrammar;
    use recall::mcp::McpManager;
    use recall::parse::{Reply, parse_reply};
    use recall::tool::ToolHost;
    use recall::validate::check_call;

    let vault = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vault");
    let config =
        recall::config::builtin_for(std::path::Path::new(env!("CARGO_BIN_EXE_recall")), &vault)
            .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let manager = runtime.block_on(McpManager::start(&config.servers));
    let tools = manager.tools();
    assert_eq!(tools.len(), 5);
    let grammar = ToolGrammar::new(&tools).unwrap();

    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let questions = [
        "Which notes mention the launch?",
        "Read my note called Home.",
        "What tags do I use?",
        "List the notes in the Projects folder.",
        "What links to Gamma?",
    ];
    let mut calls_seen = 0;
    for (i, question) in questions.iter().enumerate() {
        for seed in 0..4 {
            let mut request = GenerateRequest::new(96);
            request.sampling = Sampling {
                temperature: 1.0,
                top_p: 1.0,
                min_p: 0.0,
                seed: seed + 10 * i as u32,
            };
            request.constraint = Some(Constraint {
                gbnf: grammar.gbnf.clone(),
                root: grammar.root.to_string(),
                lazy_patterns: Vec::new(),
            });
            let done = session
                .generate(&chatml(question), &request, &mut ignore)
                .unwrap();
            if done.stop == StopReason::MaxTokens {
                // Cut off mid-call by the token limit: nothing to parse, but it must be a prefix
                // of a call list.
                assert!(done.text.starts_with('[') || done.text.starts_with("<|python_tag|>"));
                continue;
            }
            match parse_reply(&done.text, &tools) {
                Reply::Calls(calls) => {
                    for call in &calls {
                        check_call(call, &tools)
                            .unwrap_or_else(|e| panic!("{:?} failed the check: {e}", done.text));
                    }
                    calls_seen += calls.len();
                }
                other => panic!("{:?} did not parse as calls: {other:?}", done.text),
            }
        }
    }
    assert!(
        calls_seen >= 10,
        "only {calls_seen} complete calls in 20 replies"
    );
    runtime.block_on(manager.shutdown());
}

#[test]
fn the_callback_can_stop_generation() {
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let mut pieces = 0;
    let done = session
        .generate(
            &chatml("Tell a long story."),
            &GenerateRequest::greedy(64),
            &mut |_| {
                pieces += 1;
                if pieces == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )
        .unwrap();
    assert_eq!(done.stop, StopReason::StoppedByCaller);
    assert_eq!(pieces, 3);
}

/// The odds of a few replies come from the model's logits after the prompt: they sum to one,
/// the likeliest is what greedy decoding writes under a grammar allowing only those replies,
/// and a second reading of the same prompt, from the KV cache, gives the same odds.
#[test]
fn choosing_between_replies_agrees_with_greedy_generation() {
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let mut request = GenerateRequest::greedy(4);
    request.constraint = Some(Constraint {
        gbnf: recall::grammar::VERDICT_GBNF.to_string(),
        root: "root".to_string(),
        lazy_patterns: Vec::new(),
    });
    for question in [
        "Is Paris in France? Reply yes or no.",
        "Is ice hot? Reply yes or no.",
    ] {
        let prompt = chatml(question);
        let chosen = session.choose(&prompt, &request, &["yes", "no"]).unwrap();
        assert_eq!(chosen.odds.len(), 2);
        assert!(
            (chosen.odds.iter().sum::<f32>() - 1.0).abs() < 1e-4,
            "{:?}",
            chosen.odds
        );
        let likelier = if chosen.odds[0] >= chosen.odds[1] {
            "yes"
        } else {
            "no"
        };
        assert_eq!(chosen.completion.text, likelier);
        let generated = session.generate(&prompt, &request, &mut ignore).unwrap();
        assert_eq!(
            generated.text, likelier,
            "{question}: odds {:?}",
            chosen.odds
        );
        let again = session.choose(&prompt, &request, &["yes", "no"]).unwrap();
        assert!(again.completion.stats.reused_tokens > 0);
        assert!(
            (again.odds[0] - chosen.odds[0]).abs() < 1e-3,
            "{:?}",
            again.odds
        );
    }
}

/// A continuation's log-probabilities, token by token: one per token, none above zero, the
/// model's own greedy reply likelier than an unrelated text, and the same figures read again
/// once the KV cache holds the first continuation.
#[test]
fn scores_a_continuation_token_by_token() {
    let engine = load();
    let mut session = engine.session(&session_options()).unwrap();
    let prompt = chatml("What is the capital of France?");
    let request = GenerateRequest::greedy(8);
    let greedy = session
        .generate(&prompt, &request, &mut ignore)
        .unwrap()
        .text;
    assert!(!greedy.trim().is_empty());
    let mean = |scores: &[TokenScore]| {
        scores.iter().map(|s| s.log_prob).sum::<f32>() / scores.len() as f32
    };
    let own = session
        .continuation_logprobs(&prompt, &greedy, &request)
        .unwrap();
    assert!(!own.is_empty());
    assert!(
        own.iter()
            .all(|s| s.log_prob.is_finite() && s.log_prob <= 0.0),
        "{own:?}"
    );
    // The tokens' texts spell the continuation again.
    let spelled: String = own.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(spelled, greedy);
    let unrelated = "Bananas are sold by weight in the harbour on Tuesdays.";
    let other = session
        .continuation_logprobs(&prompt, unrelated, &request)
        .unwrap();
    assert!(
        mean(&own) > mean(&other),
        "{greedy:?} {own:?} against {other:?}"
    );
    let again = session
        .continuation_logprobs(&prompt, unrelated, &request)
        .unwrap();
    assert_eq!(again.len(), other.len());
    assert!(
        again
            .iter()
            .zip(&other)
            .all(|(a, b)| a.text == b.text && (a.log_prob - b.log_prob).abs() < 1e-3),
        "{again:?} against {other:?}"
    );
}
