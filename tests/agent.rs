//! The agent loop, deterministic: a scripted model drives the real bundled vault server (a real
//! `recall mcp-vault-server` child over stdio) on the fixture vault, and server-everything for a
//! tool slow enough to interrupt.

mod common;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use recall::agent::{Agent, AgentError, AgentOptions, RefuseAll, Turn};
use recall::config::{self, ServerSpec};
use recall::engine::scripted::ScriptedModel;
use recall::mcp::McpManager;
use recall::prompt::{ChatTemplate, Message, Role};

fn fixture_vault() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vault")
}

struct Rig {
    runtime: tokio::runtime::Runtime,
    manager: McpManager,
    template: ChatTemplate,
}

fn rig(vault: &Path) -> Rig {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = config::builtin_for(Path::new(env!("CARGO_BIN_EXE_recall")), vault).unwrap();
    let manager = runtime.block_on(McpManager::start(&config.servers));
    Rig {
        runtime,
        manager,
        template: ChatTemplate::llama3(),
    }
}

impl Rig {
    fn ask(
        &self,
        model: &mut ScriptedModel,
        options: AgentOptions,
        question: &str,
    ) -> (Turn, Vec<Message>) {
        let mut approver = RefuseAll;
        let mut agent = Agent {
            model,
            answer_model: None,
            host: &self.manager,
            runtime: &self.runtime,
            template: &self.template,
            approver: &mut approver,
            options,
        };
        let mut conversation = Vec::new();
        let mut streamed = String::new();
        let turn = agent
            .ask(&mut conversation, question, &mut |t| {
                streamed.push_str(t);
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(streamed.trim(), turn.answer);
        (turn, conversation)
    }
}

fn ipython_messages(conversation: &[Message]) -> Vec<&str> {
    conversation
        .iter()
        .filter(|m| m.role == Role::Ipython)
        .map(|m| m.content.as_str())
        .collect()
}

#[test]
fn search_then_read_then_answer_cites_the_note_read() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[search_notes(query="launch")]"#,
            r#"<|python_tag|>[read_note(uri="note://🚀 Launch")]"#,
            "The launch is described in the note.",
            "The launch note says what it says.",
        ],
        8192,
    );
    let (turn, conversation) = rig.ask(
        &mut model,
        AgentOptions::default(),
        "What about the launch?",
    );
    assert_eq!(turn.answer, "The launch note says what it says.");
    let names: Vec<&str> = turn
        .steps
        .iter()
        .flat_map(|s| s.calls.iter().map(|c| c.name.as_str()))
        .collect();
    assert_eq!(names, ["search_notes", "read_note"]);
    assert!(
        turn.steps
            .iter()
            .flat_map(|s| &s.calls)
            .all(|c| c.ok && c.server.as_deref() == Some("vault"))
    );
    assert_eq!(turn.citations.len(), 1);
    assert_eq!(turn.citations[0].uri, "note://🚀 Launch");

    // Schemas only on decision steps; the answer prompt has the results but no schemas.
    let answer_prompt = model.prompts.last().unwrap();
    assert!(model.prompts[0].contains("\"name\": \"search_notes\""));
    assert!(!answer_prompt.contains("\"name\": \"search_notes\""));
    assert!(!answer_prompt.contains("Here is a list of functions"));
    assert!(answer_prompt.contains("<|start_header_id|>ipython<|end_header_id|>"));
    assert_eq!(ipython_messages(&conversation).len(), 2);
    // The decision that came out as prose ends the loop; the answer step writes the answer.
    assert_eq!(
        turn.steps.iter().filter(|s| s.kind == "decision").count(),
        3
    );
}

#[test]
fn a_malformed_call_is_fed_back_and_the_fixed_call_runs() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[search_notes(query="launch"]"#,
            r#"[search_notes(query="launch")]"#,
            "Done.",
            "Here is what I found.",
        ],
        8192,
    );
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "Find the launch.");
    let results = ipython_messages(&conversation);
    assert!(
        results[0].starts_with("Error: your tool call could not be read"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("note://"), "{}", results[1]);
    assert_eq!(turn.steps[1].calls.len(), 1);
    assert!(turn.steps[1].calls[0].ok);
    // Nothing was read, so the citations are the search hits the model saw.
    assert!(!turn.citations.is_empty());
}

#[test]
fn unknown_tools_and_bad_arguments_come_back_as_errors_the_model_can_fix() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[delete_note(uri="Home")]"#,
            r#"[read_note(path="Home")]"#,
            r#"[read_note(uri="../../etc/passwd")]"#,
            "ok",
            "I could not do that.",
        ],
        8192,
    );
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "Delete Home.");
    let results = ipython_messages(&conversation);
    assert!(
        results[0].contains("read_note"),
        "unknown tool lists the real ones: {}",
        results[0]
    );
    assert!(results[1].starts_with("Error"), "{}", results[1]);
    assert!(results[2].starts_with("Error"), "{}", results[2]);
    assert!(
        !results[2].contains("root:"),
        "no file outside the vault is read"
    );
    assert!(turn.steps.iter().flat_map(|s| &s.calls).all(|c| !c.ok));
    assert!(turn.citations.is_empty());
}

#[test]
fn the_same_call_twice_forces_the_answer() {
    let rig = rig(&fixture_vault());
    let call = r#"[read_note(uri="Home")]"#;
    let mut model = ScriptedModel::new([call, call, "Home says hello."], 8192);
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "What is in Home?");
    assert_eq!(turn.answer, "Home says hello.");
    let results = ipython_messages(&conversation);
    assert!(results.last().unwrap().contains("Do not call it again"));
    // Two decisions and the answer: the repeated call was not run.
    assert_eq!(turn.steps.len(), 3);
    assert_eq!(turn.steps[1].calls.len(), 0);
}

#[test]
fn an_a_b_a_b_cycle_forces_the_answer() {
    let rig = rig(&fixture_vault());
    let a = r#"[read_note(uri="Home")]"#;
    let b = r#"[search_notes(query="home")]"#;
    let mut model = ScriptedModel::new([a, b, a, b, "Enough."], 8192);
    let options = AgentOptions {
        max_steps: 10,
        ..AgentOptions::default()
    };
    let (turn, _) = rig.ask(&mut model, options, "Loop?");
    assert_eq!(turn.answer, "Enough.");
    assert_eq!(turn.steps.len(), 5);
    assert!(
        turn.steps[3].calls.is_empty(),
        "the fourth decision closed the cycle and ran nothing"
    );
}

#[test]
fn the_step_cap_forces_the_answer() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[search_notes(query="one")]"#,
            r#"[search_notes(query="two")]"#,
            "Capped.",
        ],
        8192,
    );
    let options = AgentOptions {
        max_steps: 2,
        ..AgentOptions::default()
    };
    let (turn, _) = rig.ask(&mut model, options, "Go on forever.");
    assert_eq!(turn.answer, "Capped.");
    assert_eq!(turn.steps.len(), 3);
    assert_eq!(model.prompts.len(), 3);
}

#[test]
fn a_long_result_is_cut_to_the_context_with_a_note_on_paging() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..3000)
        .map(|i| format!("Line {i} of a long note.\n"))
        .collect();
    std::fs::write(dir.path().join("Long.md"), body).unwrap();
    let rig = rig(dir.path());
    let mut model = ScriptedModel::new(
        [r#"[read_note(uri="Long", max_chars=60000)]"#, "ok", "Long."],
        2048,
    );
    let options = AgentOptions {
        answer_tokens: 256,
        ..AgentOptions::default()
    };
    let (_, conversation) = rig.ask(&mut model, options, "Read Long.");
    let result = ipython_messages(&conversation)[0];
    assert!(
        result.contains("[cut:"),
        "{}",
        &result[result.len().saturating_sub(200)..]
    );
    assert!(
        result.contains("read_note(uri=\"note://Long\", offset="),
        "{}",
        &result[result.len() - 200..]
    );
    // The whole conversation still fits the 2048-token context.
    let prompt = rig.template.answer(&conversation).unwrap();
    assert!(prompt.text.len().div_ceil(4) < 2048);
}

#[test]
fn a_server_killed_mid_conversation_is_an_error_then_restarted() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[search_notes(query="home")]"#,
            r#"[read_note(uri="Home")]"#,
            r#"[read_note(uri="Gamma")]"#,
            "done",
            "Recovered.",
        ],
        8192,
    );
    // A first turn uses the server; then it dies between turns.
    let pid = rig.manager.server_pid("vault").unwrap();
    let mut first = ScriptedModel::new([r#"[search_notes(query="home")]"#, "x", "first"], 8192);
    rig.ask(&mut first, AgentOptions::default(), "warm up");
    std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "Still there?");
    let calls: Vec<_> = turn.steps.iter().flat_map(|s| &s.calls).collect();
    assert_eq!(calls.len(), 3);
    assert!(
        calls.last().unwrap().ok,
        "a later call succeeds after the restart"
    );
    assert_eq!(turn.answer, "Recovered.");
}

#[test]
fn a_separate_answer_model_gets_only_answer_prompts() {
    let rig = rig(&fixture_vault());
    let mut decider = ScriptedModel::new([r#"[search_notes(query="launch")]"#, "Answering."], 8192);
    let mut answerer = ScriptedModel::new(["From the notes."], 8192);
    let mut approver = RefuseAll;
    let mut agent = Agent {
        model: &mut decider,
        answer_model: Some(&mut answerer),
        host: &rig.manager,
        runtime: &rig.runtime,
        template: &rig.template,
        approver: &mut approver,
        options: AgentOptions::default(),
    };
    let mut conversation = Vec::new();
    let turn = agent
        .ask(&mut conversation, "What about the launch?", &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(turn.answer, "From the notes.");
    assert_eq!(decider.prompts.len(), 2);
    assert!(
        decider
            .prompts
            .iter()
            .all(|p| p.contains("\"name\": \"search_notes\""))
    );
    assert_eq!(answerer.prompts.len(), 1);
    assert!(!answerer.prompts[0].contains("\"name\": \"search_notes\""));
}

#[test]
fn ctrl_c_during_a_tool_call_ends_the_turn() {
    // server-everything's slow tool runs for a minute; Ctrl-C (the flag) comes after a moment.
    // The scripted model never looks at the flag, so only the call's cancellation can end the
    // turn early, and the turn ending with `Cancelled` is the proof.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut everything = ServerSpec::new(
        "everything",
        "node",
        vec![common::everything_server_js(), "stdio".into()],
    );
    everything.read_only = true;
    let manager = runtime.block_on(McpManager::start(&[everything]));
    let template = ChatTemplate::llama3();
    let mut model = ScriptedModel::new(
        [
            r#"[trigger-long-running-operation(duration=60, steps=2)]"#,
            "never reached",
        ],
        8192,
    );
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(500));
        flag.store(true, Ordering::Relaxed);
    });
    let mut approver = RefuseAll;
    let mut agent = Agent {
        model: &mut model,
        answer_model: None,
        host: &manager,
        runtime: &runtime,
        template: &template,
        approver: &mut approver,
        options: AgentOptions {
            cancel: Some(cancel),
            ..AgentOptions::default()
        },
    };
    let mut conversation = Vec::new();
    let asked = agent.ask(&mut conversation, "Run the slow thing", &mut |_| {
        ControlFlow::Continue(())
    });
    assert!(
        matches!(asked, Err(AgentError::Cancelled)),
        "{:?}",
        asked.map(|t| t.answer)
    );
    assert_eq!(model.prompts.len(), 1, "no step after the cancelled call");
    runtime.block_on(manager.shutdown());
}

#[test]
fn an_answer_that_is_a_tool_call_is_withheld_not_shown() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[search_notes(query="launch")]"#,
            "I have what I need.",
            r#"[read_note(uri="Launch Plan")]"#,
        ],
        8192,
    );
    // Rig::ask also checks that what streamed equals the answer: here, nothing.
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "When is the launch?");
    assert_eq!(turn.answer, "");
    let withheld = turn.withheld.expect("the call is kept aside");
    assert!(withheld.starts_with("[read_note("), "{withheld}");
    assert!(
        !turn.citations.is_empty(),
        "the notes found still count as read"
    );
}
