//! The agent loop, deterministic: a scripted model drives the real bundled vault server (a real
//! `recall mcp-vault-server` child over stdio) on the fixture vault, and server-everything for a
//! tool slow enough to interrupt.

use crate::common;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use recall::agent::{Agent, AgentError, AgentOptions, AnswerCheck, QuestionKind, RefuseAll, Turn};
use recall::config::{self, ServerSpec};
use recall::engine::CancellationToken;
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
    rig_with(vault, Vec::new())
}

/// A vault of `notes` (path, text) in a temporary folder, kept while the guard lives.
fn temp_vault(notes: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    for (rel, text) in notes {
        let path = vault.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    (dir, vault)
}

/// The vault server and server-everything: tools of another server than the vault's.
fn rig_with_another_server(vault: &Path) -> Rig {
    let mut everything = ServerSpec::new(
        "everything",
        "node",
        vec![common::everything_server_js(), "stdio".into()],
    );
    everything.read_only = true;
    rig_with(vault, vec![everything])
}

fn rig_with(vault: &Path, others: Vec<ServerSpec>) -> Rig {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut config = config::builtin_for(Path::new(env!("CARGO_BIN_EXE_recall")), vault).unwrap();
    config.servers.extend(others);
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
        let mut conversation = Vec::new();
        let turn = self.ask_in(model, options, &mut conversation, question);
        (turn, conversation)
    }

    /// One more turn of `conversation`.
    fn ask_in(
        &self,
        model: &mut ScriptedModel,
        options: AgentOptions,
        conversation: &mut Vec<Message>,
        question: &str,
    ) -> Turn {
        let mut approver = RefuseAll;
        let mut agent = Agent::new(
            model,
            &self.manager,
            &self.runtime,
            &self.template,
            &mut approver,
            options,
        );
        let mut streamed = String::new();
        let turn = agent
            .ask(conversation, question, &mut |t| {
                streamed.push_str(t);
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(streamed.trim(), turn.answer);
        turn
    }
}

/// The loop with a decision step before every answer, as `--decide-first` runs it: what the
/// decision steps do (grammars, calls, repeats, caps) is tested through it.
fn decide_first() -> AgentOptions {
    AgentOptions {
        answer_first: false,
        ..AgentOptions::default()
    }
}

fn ipython_messages(conversation: &[Message]) -> Vec<&str> {
    conversation
        .iter()
        .filter(|m| m.role == Role::Ipython)
        .map(|m| m.content.as_str())
        .collect()
}

/// The URIs of the sources an answer cites, in citation order.
fn cited_uris(turn: &Turn) -> Vec<&str> {
    turn.citations
        .iter()
        .filter(|c| c.cited)
        .map(|c| c.uri.as_str())
        .collect()
}

fn call_names(turn: &Turn) -> Vec<&str> {
    turn.steps
        .iter()
        .flat_map(|s| s.calls.iter().map(|c| c.name.as_str()))
        .collect()
}

/// Retrieval first, then the answer at once: one generation, no tool schemas.
#[test]
fn retrieval_first_then_the_answer_from_the_numbered_passages() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(["A checklist for the club [1]."], 8192);
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "launch checklist");
    assert_eq!(model.prompts.len(), 1);

    // The opening search is the question as asked, recorded as a step of its own.
    assert_eq!(turn.steps[0].kind, "retrieve");
    let search = &turn.steps[0].calls[0];
    assert_eq!(search.name, "search_notes");
    assert_eq!(search.arguments["query"], "launch checklist");
    assert!(search.ok && search.notes.contains(&"note://🚀 Launch".to_string()));
    assert_eq!(
        conversation[2].content,
        r#"[search_notes(query="launch checklist", limit=5, excerpt=100)]"#
    );
    // The answer step sees the numbered passages, under headers without the URI only a call
    // would need.
    let first = &model.prompts[0];
    assert!(first.contains("[1] 🚀 Launch\n"), "{first}");
    assert!(!first.contains("note://"), "{first}");
    assert!(
        first.contains("Launch checklist for the rocket club"),
        "{first}"
    );
    // The answer step: no schemas, the closing instruction with the question, and a grammar
    // that cannot open a call.
    let answer_prompt = model.prompts.last().unwrap();
    assert!(!answer_prompt.contains("Here is a list of functions"));
    assert!(
        !answer_prompt.contains("[search_notes("),
        "the answer step sees results, not calls"
    );
    assert!(
        answer_prompt
            .contains("Answer this question from the numbered sources above: launch checklist")
    );
    let answer_grammar = model.constraints.last().unwrap().as_ref().unwrap();
    assert_eq!(answer_grammar.gbnf, recall::grammar::ANSWER_GBNF);
    assert!(
        answer_grammar.lazy_patterns.is_empty(),
        "the answer grammar is strict"
    );
    // Citations are what the answer cites, with heading-level links.
    assert_eq!(turn.answer, "A checklist for the club [1].");
    assert_eq!(turn.citations.len(), 1);
    let cited = &turn.citations[0];
    assert!(cited.cited && cited.number == 1 && cited.uri == "note://🚀 Launch");
    assert!(
        cited.link.starts_with("obsidian://open?vault=vault&file="),
        "{}",
        cited.link
    );
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "answer"]
    );

    // With `--decide-first`, the first decision sees the same passages.
    let mut model = ScriptedModel::new(["I have enough.", "A checklist for the club [1]."], 8192);
    let (turn, _) = rig.ask(&mut model, decide_first(), "launch checklist");
    assert!(model.prompts[0].contains("[1] 🚀 Launch (note://🚀 Launch)\n"));
    assert!(model.prompts[0].contains("Here is a list of functions"));
    assert!(
        !model.prompts[1].contains("note://"),
        "{}",
        model.prompts[1]
    );
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "decision", "answer"]
    );
}

/// A passage is one section; the answer may be elsewhere. "The notes do not say" is held back
/// from the user; said again after more passages of the leading notes, the model gets a
/// decision step when another server's tools could bring what the vault did not, and what it
/// reads yields the answer shown.
#[test]
fn the_notes_not_saying_is_held_back_while_the_model_looks_further() {
    let rig = rig_with_another_server(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            "The notes do not say.",
            "The notes do not say.",
            r#"[read_note(uri="note://Projects/Beta")]"#,
            "I have enough.",
            "First prototype the valve board [5].",
        ],
        8192,
    );
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "Kettleby field trial");
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        [
            "retrieve", "answer", "retrieve", "answer", "decision", "decision", "answer"
        ]
    );
    assert_eq!(turn.steps[1].output, "The notes do not say.");
    assert_eq!(turn.steps[3].output, "The notes do not say.");
    // The decision step had the schemas; the held answers are in no prompt and were never
    // shown (`rig.ask` checks that what was streamed is the final answer).
    assert!(!model.prompts[1].contains("Here is a list of functions"));
    assert!(model.prompts[2].contains("Here is a list of functions"));
    assert!(
        model
            .prompts
            .iter()
            .all(|p| !p.contains("The notes do not say."))
    );
    assert!(
        conversation
            .iter()
            .all(|m| m.content != "The notes do not say.")
    );
    let read = &turn.steps[4].calls[0];
    assert!(read.ok && read.name == "read_note");
    let last = model.prompts.last().unwrap();
    assert!(last.contains("Prototype the valve board."), "{last}");
    // The note read is a source whose header names its folder, as the answer step reads it.
    assert!(last.contains("] Projects › Beta\n"), "{last}");
    assert_eq!(turn.answer, "First prototype the valve board [5].");
    let cited: Vec<_> = turn.citations.iter().filter(|c| c.cited).collect();
    assert_eq!(cited.len(), 1);
    assert_eq!(cited[0].uri, "note://Projects/Beta");
}

/// Before any decision, the agent reads further passages of the leading notes itself (a
/// 1.5B model asked to look further only repeats the opening search) and the model answers
/// again from them. Passages shown already are named, not repeated.
#[test]
fn the_notes_not_saying_brings_more_passages_of_the_leading_notes_first() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        ["The notes do not say.", "The controller ships by June [4]."],
        8192,
    );
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "Kettleby field trial");
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "answer", "retrieve", "answer"]
    );
    let wider = &turn.steps[2].calls[0];
    assert_eq!(wider.name, "search_notes");
    assert_eq!(wider.arguments["query"], "Kettleby field trial");
    assert_eq!(wider.arguments["passages"], 3);
    let results = ipython_messages(&conversation);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[1].contains("Ship the irrigation controller by June."));
    assert!(
        results[1].contains("Beta › Goals › Q2 (note://Projects/Beta): as above."),
        "{}",
        results[1]
    );
    assert_eq!(results[1].matches("Field trial in Kettleby.").count(), 0);
    let last = model.prompts.last().unwrap();
    assert!(last.contains("Ship the irrigation controller by June."));
    let cited: Vec<_> = turn.citations.iter().filter(|c| c.cited).collect();
    assert_eq!(cited.len(), 1);
    assert_eq!(cited[0].heading_path, ["Beta", "Goals"]);
}

#[test]
fn note_references_are_held_to_uris_already_seen() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[get_links(uri="note://🚀 Launch")]"#,
            "Enough.",
            "It links to Alpha [1].",
        ],
        8192,
    );
    let (turn, _) = rig.ask(&mut model, decide_first(), "launch checklist");
    assert_eq!(call_names(&turn), ["search_notes", "get_links"]);
    let grammar = |i: usize| model.constraints[i].as_ref().unwrap().gbnf.clone();
    // Before get_links: read_note and get_links take only the URIs the search returned.
    let first = grammar(0);
    assert!(first.contains(r#""\"note://🚀 Launch\"""#), "{first}");
    assert!(!first.contains("note://Projects/Alpha"), "{first}");
    // After it, the note it links to is a valid reference too.
    assert!(
        grammar(1).contains("note://Projects/Alpha"),
        "{}",
        grammar(1)
    );
    // The tools come most useful first.
    let tools_at = |name: &str| {
        model.prompts[0]
            .find(&format!("\"name\": \"{name}\""))
            .unwrap()
    };
    assert!(tools_at("search_notes") < tools_at("read_note"));
    assert!(tools_at("read_note") < tools_at("get_links"));
    assert!(tools_at("get_links") < tools_at("list_notes"));
}

#[test]
fn a_note_read_becomes_a_numbered_source_the_answer_can_cite() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"<|python_tag|>[read_note(uri="note://Gamma")]"#,
            "The gamma note is read.",
            "It has a footnote at the end [2].",
        ],
        8192,
    );
    let (turn, conversation) = rig.ask(&mut model, decide_first(), "footnote text");
    assert_eq!(call_names(&turn), ["search_notes", "read_note"]);
    assert!(
        turn.steps
            .iter()
            .flat_map(|s| &s.calls)
            .all(|c| c.ok && c.server.as_deref() == Some("vault"))
    );
    let results = ipython_messages(&conversation);
    let read = results[1];
    let number: usize = read[1..read.find(']').unwrap()].parse().unwrap();
    assert!(
        read.contains("Gamma (note://Gamma)") && read.contains("The footnote text."),
        "{read}"
    );
    // The answer cites [2]: exactly that source, whatever it is.
    assert_eq!(turn.citations.len(), 1);
    assert_eq!(turn.citations[0].number, 2);
    assert!(turn.citations[0].cited);
    if number == 2 {
        assert_eq!(turn.citations[0].uri, "note://Gamma");
    }
}

#[test]
fn a_malformed_call_is_fed_back_and_the_fixed_call_runs() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[search_notes(query="launch"]"#,
            r#"[search_notes(query="rocket")]"#,
            "Done.",
            "Here is what I found.",
            // Asked which sources it used, it names one it was never given.
            "[9]",
        ],
        8192,
    );
    let (turn, conversation) = rig.ask(&mut model, decide_first(), "Find the launch.");
    let results = ipython_messages(&conversation);
    assert!(
        results[1].starts_with("Error: your tool call could not be read"),
        "{}",
        results[1]
    );
    assert!(results[2].contains("note://"), "{}", results[2]);
    assert_eq!(turn.steps[2].calls.len(), 1);
    assert!(turn.steps[2].calls[0].ok);
    // The answer cites nothing and the attribution names no real source: the sources it was
    // given are listed, marked uncited, and the answer is left as written.
    assert_eq!(turn.answer, "Here is what I found.");
    assert!(!turn.citations.is_empty());
    assert!(turn.citations.iter().all(|c| !c.cited));
    assert_eq!(turn.steps.last().unwrap().kind, "answer");
}

/// An answer that cites no source by number is followed by one question: which sources did it
/// come from? The reply can hold only numbers of sources given (a grammar); they join the
/// answer, are streamed, and become its citations.
#[test]
fn an_uncited_answer_is_asked_for_its_sources() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        ["The club launches after the checklist is done.", "[1]"],
        8192,
    );
    // (`Rig::ask` also checks that what was streamed is the answer, numbers included.)
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "launch checklist");
    assert_eq!(
        turn.answer,
        "The club launches after the checklist is done. [1]"
    );
    assert_eq!(conversation.last().unwrap().content, turn.answer);
    assert_eq!(turn.citations.len(), 1);
    assert!(turn.citations[0].cited && turn.citations[0].uri == "note://🚀 Launch");
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "answer", "attribute"]
    );

    // The question follows the answer in the answer's own context, without tool schemas, and
    // the reply is held to the source numbers given.
    let asked = model.prompts.last().unwrap();
    assert!(asked.contains("The club launches after the checklist is done."));
    assert!(
        asked.contains("Which of the numbered sources 1 to "),
        "{asked}"
    );
    assert!(!asked.contains("Here is a list of functions"));
    let grammar = model.constraints.last().unwrap().as_ref().unwrap();
    let given = turn.citations[0].number.max(1);
    assert!(
        grammar.gbnf.contains(&format!("\"{given}\"")),
        "{}",
        grammar.gbnf
    );
    assert!(grammar.lazy_patterns.is_empty());
}

/// A list of source headers copied from the prompt names every source, not the ones the
/// answer used: its marks cite nothing, so the model is asked which sources it used. (Here
/// the one source, as given and as a list item: the header of a source never given would
/// name what no source holds, and be stopped as any made-up name.)
#[test]
fn an_answer_that_copies_the_source_list_is_asked_which_it_used() {
    let rig = rig(&fixture_vault());
    let answer = "The club launches after the checklist is done.\n\n\
                  [1] 🚀 Launch (note://🚀 Launch)\n- [1] 🚀 Launch";
    let mut model = ScriptedModel::new([answer, "[1]"], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "launch checklist");
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "answer", "attribute"],
        "{}",
        turn.answer
    );
    assert_eq!(turn.answer, format!("{answer} [1]"));
    assert_eq!(turn.citations.len(), 1, "{:?}", turn.citations);
    assert!(turn.citations[0].cited && turn.citations[0].uri == "note://🚀 Launch");
}

/// An answer of the model's own followed by sources copied under their headers: each header's
/// mark vouches for what is under it, and the attribution step is asked about the opening
/// alone. The answer stays as shown; the opening's source joins the citations.
#[test]
fn an_unmarked_opening_before_copied_sources_is_attributed() {
    let rig = rig(&fixture_vault());
    let question = "Kettleby field trial";
    let opening = "The solar pump for the village delivers 1,200 litres per hour.";
    let answer = format!("{opening}\n\n[2] Beta › Goals › Q2 (note://Projects/Beta)\nA trial.");
    let mut model = ScriptedModel::new([answer.as_str(), "[1]"], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "answer", "attribute"]
    );
    let asked = model.prompts.last().unwrap();
    assert!(
        asked.contains(opening) && !asked.contains("A trial."),
        "{asked}"
    );
    assert_eq!(turn.answer, answer);
    let cited = cited_uris(&turn);
    assert!(
        cited.contains(&"note://Projects/Alpha"),
        "{:?}",
        turn.citations
    );

    // A lead-in before the copied sources states nothing: nobody is asked.
    let answer = "To see it, look here:\n\n[2] Beta › Goals › Q2 (note://Projects/Beta)\nA trial.";
    let mut model = ScriptedModel::new([answer], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert_eq!(model.prompts.len(), 1);
    assert!(turn.citations.iter().any(|c| c.cited));
}

/// "The notes do not say" came from no source; "none" names none: both leave the sources
/// listed as uncited, and the first is never asked at all. The passages the search found
/// closest follow "the notes do not say", quoted, so the reader sees where it looked.
#[test]
fn an_answer_from_no_source_gets_no_citation() {
    let rig = rig(&fixture_vault());
    // Held back; with the vault's tools alone there is no decision step (it would only search
    // again), so it stands. The second reading of the best source finds nothing either.
    let mut model = ScriptedModel::new(["The notes do not say.", "The notes do not say."], 8192);
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "launch date");
    assert_eq!(
        model.prompts.len(),
        2,
        "no attribution question, no second answer beside the second reading"
    );
    // The wider search ran and found nothing new: nothing was added for the model to read.
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "retrieve", "reread", "answer"]
    );
    let (said, quoted) = turn.answer.split_once("\n\n").unwrap();
    assert_eq!(said, "The notes do not say.");
    assert!(
        quoted.starts_with("The most relevant passages:\n[1] "),
        "{quoted}"
    );
    assert!(turn.fallback);
    assert!(!turn.citations.is_empty());
    assert!(turn.citations.iter().all(|c| !c.cited));
    // The conversation keeps what the reader saw.
    assert_eq!(conversation.last().unwrap().content, turn.answer);

    let mut model = ScriptedModel::new(["It is windy.", "none"], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "launch date");
    assert_eq!(model.prompts.len(), 2);
    assert_eq!(turn.answer, "It is windy.");
    assert!(turn.citations.iter().all(|c| !c.cited));
}

/// A small model reading several cut sources says the notes do not say when the first holds
/// the answer; the best source alone, whole, is read again, with "the notes do not say" asked
/// for in English (a sentence in the question's language is what such a model copies). The
/// second answer is shown only when its words come from that source.
#[test]
fn a_second_reading_of_the_best_source_finds_what_the_first_missed() {
    let rig = rig(&fixture_vault());
    let question = "泡绿茶的水应该多热？";
    let answer = "泡绿茶的水温是八十度，每次冲泡两分钟 [1]。";
    let mut model = ScriptedModel::new(["笔记中没有说明。", answer], 8192);
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), question);
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "retrieve", "answer", "answer"]
    );
    assert_eq!(turn.steps[2].output, "笔记中没有说明。");
    assert_eq!(turn.answer, answer, "only the second answer was shown");
    assert!(!turn.fallback);
    assert_eq!(cited_uris(&turn), ["note://中文笔记"]);
    assert_eq!(conversation.last().unwrap().content, answer);
    let reading = model.prompts.last().unwrap();
    assert!(
        reading.contains("] 中文笔记 › 绿茶\n泡绿茶的水温是八十度"),
        "{reading}"
    );
    assert!(reading.contains("written in Chinese"), "{reading}");
    assert!(reading.contains("Use only source 1."), "{reading}");
    assert!(
        reading.contains("answer that the notes do not say.")
            && !reading.contains("笔记中没有说明"),
        "{reading}"
    );
    assert!(
        !reading.contains("Here is a list of functions"),
        "{reading}"
    );

    // An answer the source does not bear out is made up: the first answer stands, with the
    // sources quoted after it.
    let made_up = "水应该是一百二十度的蒸汽，用铜壶加热三十分钟 [1]。";
    let mut model = ScriptedModel::new(["笔记中没有说明。", made_up], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert!(
        turn.answer
            .starts_with("笔记中没有说明。\n\n最相关的段落："),
        "{}",
        turn.answer
    );
    assert!(!turn.answer.contains("铜壶"), "{}", turn.answer);
    assert!(turn.fallback);
    assert!(turn.citations.iter().all(|c| !c.cited));
    assert_eq!(turn.steps[2].kind, "reread");
    assert_eq!(turn.steps[2].output, made_up);
}

/// Recall's own sentence for the notes not saying, written by the model in the question's
/// language, is no invention: German capitalises its nouns ("Notizen"), and the turn ends with
/// that sentence and the closest passages, not with a reason naming a made-up "Notizen".
#[test]
fn the_notes_not_saying_in_german_names_nothing_made_up() {
    let (_dir, vault) = temp_vault(&[(
        "Garten/Beete.md",
        "# Beete\n\nDie Tomaten stehen im zweiten Beet, die Bohnen am Zaun.\n",
    )]);
    let rig = rig(&vault);
    let lacking = "Die Notizen sagen nichts dazu.";
    let mut model = ScriptedModel::new([lacking; 5], 8192);
    let (turn, _) = rig.ask(
        &mut model,
        AgentOptions::default(),
        "Wann haben wir die Gurken im Garten gepflanzt?",
    );
    assert!(
        turn.answer.starts_with(&format!("{lacking}\n\n")),
        "{}",
        turn.answer
    );
    assert!(!turn.answer.contains("keine nennt"), "{}", turn.answer);
    assert!(turn.fallback);
}

/// A question too short for its words alone to say its language ("wo stehen die bohnen") is
/// answered in the language of the notes it is asked of, when it likely is in it: the answer
/// step asks for German, and Recall's own lines are German.
#[test]
fn a_short_question_beside_german_notes_is_answered_in_german() {
    let (_dir, vault) = temp_vault(&[(
        "Garten/Beete.md",
        "# Beete\n\nDie Tomaten stehen im zweiten Beet, die Bohnen am Zaun. Die Gurken kommen \
         erst im Mai ins Hochbeet, wenn es keinen Frost mehr gibt.\n",
    )]);
    let rig = rig(&vault);
    let lacking = "Die Notizen sagen nichts dazu.";
    let mut model = ScriptedModel::new([lacking; 5], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "wo stehen die bohnen");
    let prompt = &model.prompts[0];
    assert!(prompt.contains("written in German"), "{prompt}");
    assert!(
        turn.answer
            .starts_with(&format!("{lacking}\n\nDie passendsten Stellen:")),
        "{}",
        turn.answer
    );
}

#[test]
fn an_answer_that_cites_is_not_asked_again() {
    let rig = rig(&fixture_vault());
    // A second reply would be the attribution's; there must be none.
    let mut model = ScriptedModel::new(["Check the fins first [1]."], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "launch checklist");
    assert_eq!(turn.answer, "Check the fins first [1].");
    assert_eq!(model.prompts.len(), 1);
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
    let (turn, conversation) = rig.ask(&mut model, decide_first(), "Delete Home.");
    let results = ipython_messages(&conversation);
    assert!(
        results[1].contains("read_note"),
        "unknown tool lists the real ones: {}",
        results[1]
    );
    assert!(results[2].starts_with("Error"), "{}", results[2]);
    assert!(results[3].starts_with("Error"), "{}", results[3]);
    assert!(
        !results[3].contains("root:"),
        "no file outside the vault is read"
    );
    let model_calls = turn
        .steps
        .iter()
        .filter(|s| s.kind == "decision")
        .flat_map(|s| &s.calls);
    assert!(model_calls.clone().count() == 3 && model_calls.into_iter().all(|c| !c.ok));
}

#[test]
fn the_same_call_twice_forces_the_answer() {
    let rig = rig(&fixture_vault());
    let call = r#"[read_note(uri="Home")]"#;
    let mut model = ScriptedModel::new([call, call, "Home says hello."], 8192);
    let (turn, conversation) = rig.ask(&mut model, decide_first(), "What is in Home?");
    assert_eq!(turn.answer, "Home says hello.");
    // The search, two decisions and the answer: the repeated call was not run, nor kept in
    // the conversation for the answer step to copy.
    assert_eq!(ipython_messages(&conversation).len(), 2);
    assert_eq!(turn.steps.len(), 4);
    assert_eq!(turn.steps[2].calls.len(), 0);
}

#[test]
fn copying_the_opening_search_counts_as_a_repeat() {
    let rig = rig(&fixture_vault());
    let copy = r#"[search_notes(query="launch checklist", limit=5, excerpt=100)]"#;
    let mut model = ScriptedModel::new([copy, "A checklist for the club [1]."], 8192);
    let (turn, _) = rig.ask(&mut model, decide_first(), "launch checklist");
    assert_eq!(turn.steps.len(), 3);
    assert!(turn.steps[1].calls.is_empty(), "the copy was not run");
    assert_eq!(turn.answer, "A checklist for the club [1].");
}

#[test]
fn a_call_made_before_in_the_turn_forces_the_answer() {
    let rig = rig(&fixture_vault());
    let a = r#"[read_note(uri="Home")]"#;
    let b = r#"[search_notes(query="home")]"#;
    let mut model = ScriptedModel::new([a, b, a, "Enough."], 8192);
    let options = AgentOptions {
        max_steps: 10,
        ..decide_first()
    };
    let (turn, _) = rig.ask(&mut model, options, "Loop?");
    assert_eq!(turn.answer, "Enough.");
    assert_eq!(turn.steps.len(), 5);
    assert!(
        turn.steps[3].calls.is_empty(),
        "the third decision repeated the first and ran nothing"
    );
}

#[test]
fn the_step_cap_forces_the_answer() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[search_notes(query="one")]"#,
            r#"[search_notes(query="two")]"#,
            "Capped [1].",
        ],
        8192,
    );
    let options = AgentOptions {
        max_steps: 2,
        ..decide_first()
    };
    let (turn, _) = rig.ask(&mut model, options, "Go on forever.");
    assert_eq!(turn.answer, "Capped [1].");
    assert_eq!(turn.steps.len(), 4);
    assert_eq!(model.prompts.len(), 3);
}

#[test]
fn a_long_note_is_paged_by_the_server_to_fit_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..3000)
        .map(|i| format!("Line {i} of a long note.\n"))
        .collect();
    std::fs::write(dir.path().join("Long.md"), body).unwrap();
    let rig = rig(dir.path());
    let mut model = ScriptedModel::new(
        [
            r#"[read_note(uri="note://Long", max_chars=60000)]"#,
            "ok",
            "Its lines are numbered.",
        ],
        4096,
    );
    let options = AgentOptions {
        answer_tokens: 256,
        ..decide_first()
    };
    let (turn, conversation) = rig.ask(&mut model, options, "a long note");
    // The read asked for 60,000 characters; the agent lowered it to what the context holds.
    let read = &turn.steps[1].calls[0];
    let sent = read.arguments["max_chars"].as_u64().unwrap();
    // (How much fits depends on the size of the tool schemas in the decision prompt.)
    assert!((1000..8000).contains(&sent), "{sent}");
    let result = ipython_messages(&conversation)[1];
    assert!(
        result.contains("read_note(uri=\"note://Long\", offset="),
        "{}",
        &result[result.len().saturating_sub(200)..]
    );
    // The whole conversation still fits the 4096-token context.
    let prompt = rig.template.answer(&conversation).unwrap();
    assert!(prompt.text.len().div_ceil(4) < 4096);
}

#[test]
fn a_server_killed_mid_conversation_is_an_error_then_restarted() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            r#"[read_note(uri="Home")]"#,
            r#"[read_note(uri="Gamma")]"#,
            "done",
            "Recovered.",
        ],
        8192,
    );
    // A first turn uses the server; then it dies between turns.
    let pid = rig.manager.server_pid("vault").unwrap();
    let mut first = ScriptedModel::new(["x", "first"], 8192);
    rig.ask(&mut first, AgentOptions::default(), "warm up");
    std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (turn, _) = rig.ask(&mut model, decide_first(), "Still there?");
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
    let mut decider = ScriptedModel::new([r#"[search_notes(query="rocket")]"#, "Answering."], 8192);
    let mut answerer = ScriptedModel::new(["It is on Friday [1]."], 8192);
    let mut approver = RefuseAll;
    let mut agent = Agent::new(
        &mut decider,
        &rig.manager,
        &rig.runtime,
        &rig.template,
        &mut approver,
        decide_first(),
    )
    .with_answer_model(&mut answerer);
    let mut conversation = Vec::new();
    let turn = agent
        .ask(&mut conversation, "What about the launch?", &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(turn.answer, "It is on Friday [1].");
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
    let cancel = CancellationToken::new();
    let ctrl_c = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(500));
        ctrl_c.cancel();
    });
    let mut approver = RefuseAll;
    let mut agent = Agent::new(
        &mut model,
        &manager,
        &runtime,
        &template,
        &mut approver,
        AgentOptions {
            cancel,
            ..AgentOptions::default()
        },
    );
    let mut conversation = Vec::new();
    let asked = agent.ask(&mut conversation, "Run the slow thing", &mut |_| {
        ControlFlow::Continue(())
    });
    assert!(
        matches!(asked, Err(AgentError::Cancelled(_))),
        "{:?}",
        asked.map(|t| t.answer)
    );
    assert_eq!(model.prompts.len(), 1, "no step after the cancelled call");
    runtime.block_on(manager.shutdown());
}

#[test]
fn an_empty_answer_quotes_the_best_sources_instead() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new([""], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "launch checklist");
    assert!(turn.fallback);
    assert!(
        turn.answer
            .starts_with("The model wrote no answer. The most relevant passages:\n[1] 🚀 Launch"),
        "{}",
        turn.answer
    );
    assert!(!turn.citations.is_empty());
}

/// A question in Japanese gets Recall's own lines in Japanese, around the note's own words.
#[test]
fn an_empty_answer_to_a_japanese_question_quotes_in_japanese() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new([""], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "東京タワーの高さは？");
    assert!(turn.fallback);
    assert!(
        turn.answer
            .starts_with("モデルは回答を書きませんでした。最も関連する箇所：\n[1] 日本語ノート"),
        "{}",
        turn.answer
    );
    assert!(turn.answer.contains("333メートル"), "{}", turn.answer);
}

/// A Korean question finds the Korean note by its words; the answer step asks for Korean, and
/// a Korean answer's citation stands on the note's words.
#[test]
fn a_korean_question_is_answered_in_korean_from_the_korean_note() {
    let rig = rig(&fixture_vault());
    let answer = "마지막 5분에 넣습니다 [1].";
    let mut model = ScriptedModel::new([answer], 8192);
    let (turn, _) = rig.ask(
        &mut model,
        AgentOptions::default(),
        "김치찌개에 두부는 언제 넣나요?",
    );
    let prompt = &model.prompts[0];
    assert!(prompt.contains("[1] 한국어 노트 › 김치찌개"), "{prompt}");
    assert!(prompt.contains("written in Korean"), "{prompt}");
    assert!(!turn.fallback, "{}", turn.answer);
    assert_eq!(turn.answer, answer);
    let cited = cited_uris(&turn);
    assert_eq!(cited, ["note://한국어 노트"], "{:?}", turn.citations);
}

/// "不可以" (no) with only the question's words is a bare verdict in Chinese as "No" is in
/// English: the reader gets it, then what the notes say, under Chinese lines.
#[test]
fn a_bare_chinese_no_gets_the_best_sources_quoted_in_chinese() {
    let rig = rig(&fixture_vault());
    let question = "泡绿茶可以用沸水吗？";
    let mut model = ScriptedModel::new(["不可以，泡绿茶不可以用沸水 [1]。"], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert!(turn.fallback, "{}", turn.answer);
    assert!(
        turn.answer
            .contains("这个回答只有“是”或“否”；以下是笔记中的内容。最相关的段落：\n[1] 中文笔记"),
        "{}",
        turn.answer
    );
    assert!(turn.answer.contains("八十度"), "{}", turn.answer);

    // With the note's own fact, the same "no" is an answer.
    let answer = "不可以，水温应该是八十度 [1]。";
    let mut model = ScriptedModel::new([answer], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert!(!turn.fallback, "{}", turn.answer);
    assert_eq!(turn.answer, answer);
}

/// "The launch checklist is [2]." tells the reader nothing, and its number is a guess: it is
/// the model not finding the answer. It is never shown: the turn goes on as after "the notes
/// do not say": it looks further, reads the best source again, and says the notes do not say
/// with the closest passages quoted, none of them cited.
#[test]
fn an_answer_of_only_the_question_own_words_is_the_notes_not_saying() {
    let rig = rig(&fixture_vault());
    // The question restated, twice.
    let (first, again) = (
        "The launch checklist is [2].",
        "The launch checklist is [1].",
    );
    let mut model = ScriptedModel::new([first, again], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "launch checklist");
    assert_eq!(model.prompts.len(), 2, "no attribution question");
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "retrieve", "reread", "answer"]
    );
    assert_eq!(turn.steps[3].output, first);
    let (said, quoted) = turn.answer.split_once("\n\n").unwrap();
    assert_eq!(said, "The notes do not say.");
    assert!(
        quoted.starts_with("The most relevant passages:\n[1] 🚀 Launch"),
        "{quoted}"
    );
    assert!(turn.fallback);
    assert!(
        turn.citations.iter().all(|c| !c.cited),
        "{:?}",
        turn.citations
    );

    // The same starts going on to words of their own are answers, shown as written.
    for answer in [
        "The launch checklist is the fins, the parachute and the igniter [1].",
        "The sources do not mention a date, but the launch checklist is the fins, the \
         parachute and the igniter [1].",
    ] {
        let mut model = ScriptedModel::new([answer], 8192);
        let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "launch checklist");
        assert!(!turn.fallback, "{}", turn.answer);
        assert_eq!(turn.answer, answer);
    }
}

/// "Yes, you can <the question>." is a verdict and nothing more, which a small model gives also
/// where its source says no: the reader gets the verdict, then what the notes say.
#[test]
fn a_bare_yes_gets_the_best_sources_quoted() {
    let rig = rig(&fixture_vault());
    let question = "Does the rocket club have a launch checklist?";
    let mut model = ScriptedModel::new(["Yes, the rocket club has a launch checklist [1]."], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert!(turn.fallback);
    assert!(
        turn.answer.starts_with(
            "Yes, the rocket club has a launch checklist [1].\n\nThat answer is a bare yes or \
             no; here is what the notes say. The most relevant passages:\n[1] 🚀 Launch"
        ),
        "{}",
        turn.answer
    );
    assert_eq!(model.prompts.len(), 1, "no attribution question");
    assert!(turn.citations.iter().any(|c| c.cited && c.number == 1));

    // A yes with the notes' own words stands alone.
    let answer = "Yes: it lists the fins, the parachute and the igniter [1].";
    let mut model = ScriptedModel::new([answer], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert!(!turn.fallback);
    assert_eq!(turn.answer, answer);
}

#[test]
fn an_answer_of_copied_source_headers_is_the_notes_not_saying() {
    let rig = rig(&fixture_vault());
    // A 135M model's habit: the prompt's source headers, numbered anew, as the whole answer.
    // It says nothing of its own: the notes do not say, and the closest passages follow.
    let copied = "1. [2] Alpha (note://Projects/Alpha)\n2. [3] Alpha";
    // (The wider search reads more: the answer is written again, then the second reading.)
    let mut model = ScriptedModel::new([copied, copied, copied], 8192);
    let question = "How much water does the village pump deliver?";
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert!(turn.fallback, "{}", turn.answer);
    assert!(
        turn.answer
            .starts_with("The notes do not say.\n\nThe most relevant passages:\n[1] Alpha"),
        "{}",
        turn.answer
    );
    assert!(
        turn.answer.contains("1,200 litres per hour"),
        "{}",
        turn.answer
    );
}

#[test]
fn without_a_vault_server_the_loop_starts_with_the_model() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut time = ServerSpec::new(
        "time",
        common::time_server_bin(),
        vec!["--local-timezone".into(), "UTC".into()],
    );
    time.read_only = true;
    let manager = runtime.block_on(McpManager::start(&[time]));
    let template = ChatTemplate::llama3();
    let mut model = ScriptedModel::new(
        [
            r#"[get_current_time(timezone="UTC")]"#,
            "Done.",
            "It is now.",
        ],
        8192,
    );
    let mut approver = RefuseAll;
    let mut agent = Agent::new(
        &mut model,
        &manager,
        &runtime,
        &template,
        &mut approver,
        AgentOptions::default(),
    );
    let mut conversation = Vec::new();
    let turn = agent
        .ask(&mut conversation, "What time is it?", &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(turn.steps[0].kind, "decision");
    assert_eq!(turn.steps[0].calls[0].name, "get_current_time");
    assert!(turn.steps[0].calls[0].ok);
    // Must call first: the first decision's grammar is strict.
    assert!(
        model.constraints[0]
            .as_ref()
            .unwrap()
            .lazy_patterns
            .is_empty()
    );
    assert!(turn.citations.is_empty());
    runtime.block_on(manager.shutdown());
}

/// A figure that no source holds is made up, however it is cited: it is never shown. The turn
/// says the notes do not say, looks further as after any such answer, and a second reading
/// that makes the figure up again is no answer either. A figure a source holds, in another
/// form, is shown as written.
#[test]
fn an_answer_with_a_figure_from_nowhere_is_never_shown() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(
        [
            "$75,000 a year, paid monthly [1].",
            "The pump costs 75,000 dollars [1].",
        ],
        8192,
    );
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "pump salary");
    // The turn looked further (a wider search), and its second answer too was closed at the
    // invented figure: the words before it stay, as the user read them.
    let kinds: Vec<_> = turn.steps.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, ["retrieve", "answer", "retrieve", "answer"]);
    assert!(turn.answer.starts_with("The pump costs"), "{}", turn.answer);
    assert!(!turn.answer.contains("75,000 dollars"), "{}", turn.answer);
    let said = "The notes do not say: none of them gives 75,000.\n\n";
    let (_, quoted) = turn.answer.split_once(said).unwrap();
    assert!(
        quoted.starts_with("The most relevant passages:"),
        "{quoted}"
    );
    assert!(turn.citations.iter().all(|c| !c.cited));
    assert!(
        conversation
            .iter()
            .all(|m| !m.content.contains("a year, paid"))
    );

    let mut model = ScriptedModel::new(["The pump delivers 1200 litres per hour [1]."], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "pump litres per hour");
    assert_eq!(turn.answer, "The pump delivers 1200 litres per hour [1].");
    assert!(turn.citations.iter().any(|c| c.cited));
}

/// A date the question names is no fact of the notes for being asked: an answer that states
/// it about a source that does not hold it answers about another day, and is never shown;
/// why is told as the passages found not mentioning that day, not as a date made up.
#[test]
fn a_day_asked_about_that_no_source_holds_is_no_answer() {
    let rig = rig(&fixture_vault());
    let answer = "On 3 March 2022 the pump delivered 1,200 litres per hour [1].";
    let mut model = ScriptedModel::new([answer; 5], 8192);
    let question = "How much water did the pump deliver on 3 March 2022?";
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert!(
        turn.answer.contains(
            "The notes do not say: none of the passages found mentions the 3 March 2022 \
                 of your question."
        ),
        "{}",
        turn.answer
    );
    assert!(
        !turn.answer.contains("litres per hour [1]"),
        "{}",
        turn.answer
    );
    assert!(turn.citations.iter().all(|c| !c.cited));

    // The pump's own figure, without the day, answers a question without one. Asked of a
    // day that no note is dated on, it stands on no source naming that day: the notes do
    // not say what the pump did then (the closest passages follow).
    let answer = "The pump delivers 1,200 litres per hour [1].";
    let mut model = ScriptedModel::new([answer], 8192);
    let (turn, _) = rig.ask(
        &mut model,
        AgentOptions::default(),
        "How much water does the pump deliver?",
    );
    assert_eq!(turn.answer, answer);
    let mut model = ScriptedModel::new([answer; 5], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    assert!(
        turn.answer.starts_with("The notes do not say"),
        "{}",
        turn.answer
    );
}

/// A date asked about someone named must stand where they are: a daily note's day is no
/// answer to "When is Ravi's birthday?" where that day's note speaks of Elif's. The same
/// day is an answer to when Ravi called, which that note's lines say.
#[test]
fn a_fact_about_somebody_else_is_no_answer_about_the_one_asked() {
    let (_dir, vault) = temp_vault(&[
        (
            "Journal/2025-02-14.md",
            "- Elif's birthday, baklava for the office\n- Valentine's dinner at Héron\n",
        ),
        (
            "Journal/2025-04-11.md",
            "- 17:00 video call with Ravi, he got promoted\n",
        ),
    ]);
    let rig = rig(&vault);
    let invented = "Ravi's birthday is on February 14, 2025 [1].";
    let mut model = ScriptedModel::new([invented; 5], 8192);
    let (turn, _) = rig.ask(
        &mut model,
        AgentOptions::default(),
        "When is Ravi's birthday?",
    );
    assert!(
        turn.answer
            .contains("The notes do not say: none of them gives February 14"),
        "{}",
        turn.answer
    );
    assert!(!turn.answer.contains("2025 [1]"), "{}", turn.answer);
    assert!(turn.citations.iter().all(|c| !c.cited));

    let answer = "Ravi called on 11 April 2025 at 17:00 [1].";
    let mut model = ScriptedModel::new([answer], 8192);
    let (turn, _) = rig.ask(
        &mut model,
        AgentOptions::default(),
        "When did Ravi call me?",
    );
    assert_eq!(turn.answer, answer);
}

/// A follow-up may state a figure that an earlier turn's results gave the model: it is no
/// invention, though this turn's search did not bring it.
#[test]
fn a_follow_up_may_state_a_figure_from_an_earlier_turn() {
    let rig = rig(&fixture_vault());
    let mut conversation = Vec::new();
    let mut model = ScriptedModel::new(["It delivers 1,200 litres per hour [1]."], 8192);
    rig.ask_in(
        &mut model,
        AgentOptions::default(),
        &mut conversation,
        "pump litres per hour",
    );
    let mut model = ScriptedModel::new(["The club's launch needs the 1,200 litres [1]."], 8192);
    let turn = rig.ask_in(
        &mut model,
        AgentOptions::default(),
        &mut conversation,
        "launch checklist",
    );
    assert_eq!(turn.answer, "The club's launch needs the 1,200 litres [1].");
}

/// A follow-up's answer step reads an earlier turn's search results exactly as that turn's
/// answer step did (the same text, so the model's cache of it is kept), though this turn's
/// sources are other passages under the same numbers.
#[test]
fn a_follow_up_reads_earlier_results_as_the_turn_that_fetched_them() {
    let rig = rig(&fixture_vault());
    let mut conversation = Vec::new();
    let results = |prompt: &str| -> Vec<String> {
        prompt
            .split("ipython<|end_header_id|>\n\n")
            .skip(1)
            .map(|r| r.split("<|eot_id|>").next().unwrap().to_string())
            .collect()
    };
    let mut first = ScriptedModel::new(["It delivers 1,200 litres per hour [1]."], 8192);
    rig.ask_in(
        &mut first,
        AgentOptions::default(),
        &mut conversation,
        "pump litres per hour",
    );
    let mut second = ScriptedModel::new(["The club's launch needs the 1,200 litres [1]."], 8192);
    rig.ask_in(
        &mut second,
        AgentOptions::default(),
        &mut conversation,
        "launch checklist",
    );
    let earlier = results(first.prompts.last().unwrap());
    let later = results(second.prompts.last().unwrap());
    assert_eq!(later.len(), 2, "{later:?}");
    assert_eq!(later[0], earlier[0]);
    assert!(!later[0].contains("note://"), "{}", later[0]);
    assert_ne!(later[1], later[0], "this turn's sources are other passages");
}

/// A follow-up that points back with a pronoun ("What voltage does it need?") is searched with
/// the question it leans on, though it has words of its own, and the answer step is asked it
/// as typed. A question that asks something new is searched as asked.
#[test]
fn a_follow_up_pointing_back_is_searched_with_the_question_before() {
    let (_dir, vault) = temp_vault(&[
        (
            "Garden pump.md",
            "The garden pump delivers 1,200 litres per hour.\n\nPower: 12 V.\n",
        ),
        ("Voltage.md", "Mains voltage in the house is 230 V.\n"),
        ("Bike.md", "The bike was serviced in March.\n"),
    ]);
    let rig = rig(&vault);
    let searched = |turn: &Turn| {
        let search = turn.steps.iter().find(|s| s.kind == "retrieve").unwrap();
        search.calls[0].arguments["query"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = "How much water does the garden pump deliver?";
    let follow_up = "What voltage does it need?";
    let mut conversation = Vec::new();
    let mut model = ScriptedModel::new(["1,200 litres per hour [1]."], 8192);
    rig.ask_in(
        &mut model,
        AgentOptions::default(),
        &mut conversation,
        first,
    );
    let mut model = ScriptedModel::new(["12 V [1]."], 8192);
    let turn = rig.ask_in(
        &mut model,
        AgentOptions::default(),
        &mut conversation,
        follow_up,
    );
    assert_eq!(searched(&turn), format!("{first} {follow_up}"));
    assert_eq!(cited_uris(&turn), ["note://Garden pump"]);
    assert_eq!(turn.answer, "12 V [1].");
    let kinds: Vec<&str> = turn.steps.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, ["retrieve", "answer"]);
    // The answer step is asked the follow-up as typed.
    let answer_prompt = model.prompts.last().unwrap();
    assert!(
        answer_prompt.contains(&format!("from the numbered sources above: {follow_up}")),
        "{answer_prompt}"
    );
    let mut model = ScriptedModel::new(["In March [1]."], 8192);
    let own = "When was the bike last serviced?";
    let turn = rig.ask_in(&mut model, AgentOptions::default(), &mut conversation, own);
    assert_eq!(searched(&turn), own);
}

/// "And the next day?" names a day by the one the conversation was about: it is searched
/// within that next day, and a further "the day before" counts from there.
#[test]
fn a_follow_up_naming_the_next_day_is_searched_within_it() {
    let (_dir, vault) = temp_vault(&[
        ("Daily/2021-05-11.md", "We eat ramen with Ana.\n"),
        ("Daily/2021-05-12.md", "We eat pizza at work.\n"),
        ("Daily/2021-05-13.md", "Salad by the river.\n"),
    ]);
    let rig = rig(&vault);
    let mut conversation = Vec::new();
    let dated_search = |turn: &Turn| {
        let search = turn.steps.iter().find(|s| s.kind == "retrieve").unwrap();
        let arguments = &search.calls[0].arguments;
        (arguments["from"].clone(), arguments["to"].clone())
    };
    for (question, answer, day) in [
        ("What did I eat on 12 May 2021?", "Pizza [1].", "2021-05-12"),
        ("And the next day?", "Salad [1].", "2021-05-13"),
        ("And the day before that?", "Pizza [1].", "2021-05-12"),
    ] {
        let mut model = ScriptedModel::new([answer], 8192);
        let turn = rig.ask_in(
            &mut model,
            AgentOptions::default(),
            &mut conversation,
            question,
        );
        assert_eq!(dated_search(&turn), (day.into(), day.into()), "{question}");
        // A follow-up's answer step is told the day it means.
        let answer_prompt = model.prompts.last().unwrap();
        assert_eq!(
            answer_prompt.contains(&format!("It asks about {day}.")),
            question.starts_with("And"),
            "{question}: {answer_prompt}"
        );
        assert_eq!(
            cited_uris(&turn),
            [format!("note://Daily/{day}")],
            "{question}"
        );
    }
}

/// A follow-up naming another note by its title than the question it leans on is searched
/// without the earlier note's name, so the note it names comes first, and one saying nothing
/// else ("And Terraria?") is the question before asked of it; one naming no note ("And on
/// Plus?") is searched with the whole question before it.
#[test]
fn a_follow_up_naming_another_note_is_searched_for_it() {
    let (_dir, vault) = temp_vault(&[
        (
            "Games/Stardew Valley.md",
            "---\nprice: 14.99\n---\nA farming game, bought on sale.\n",
        ),
        (
            "Games/Terraria.md",
            "---\nprice: 9.99\n---\nA sandbox game.\n",
        ),
    ]);
    let rig = rig(&vault);
    let mut conversation = Vec::new();
    let searched = |turn: &Turn| {
        let search = turn.steps.iter().find(|s| s.kind == "retrieve").unwrap();
        let call = &search.calls[0];
        (call.arguments["query"].clone(), call.notes[0].clone())
    };
    let mut model = ScriptedModel::new(["It cost 14.99 [1]."; 5], 8192);
    let first = "How much did Stardew Valley cost?";
    rig.ask_in(
        &mut model,
        AgentOptions::default(),
        &mut conversation,
        first,
    );
    let mut model = ScriptedModel::new(["Terraria cost 9.99 [1]."; 5], 8192);
    let turn = rig.ask_in(
        &mut model,
        AgentOptions::default(),
        &mut conversation,
        "And Terraria?",
    );
    // Saying nothing but the note, it is the question before asked of that note: searched
    // and answered so.
    let terraria = "note://Games/Terraria".to_string();
    let meant = "How much did Terraria cost?";
    assert_eq!(searched(&turn), (meant.into(), terraria.clone()));
    let asked = format!("sources above: {meant}");
    assert!(model.prompts.iter().any(|p| p.contains(&asked)));
    let mut model = ScriptedModel::new(["It cost 9.99 [1]."; 5], 8192);
    let turn = rig.ask_in(
        &mut model,
        AgentOptions::default(),
        &mut conversation,
        "And on sale?",
    );
    assert_eq!(
        searched(&turn).0,
        "How much did  cost? And Terraria? And on sale?"
    );
}

/// A follow-up naming nothing but another day ("And the night before?") is the question
/// before asked of that day: searched within it and answered so.
#[test]
fn a_follow_up_naming_another_day_is_asked_of_that_day() {
    let (_dir, vault) = temp_vault(&[
        ("Daily/2022-01-19.md", "# 19 Jan\n\ngotosleep:: 22:42\n"),
        ("Daily/2022-01-20.md", "# 20 Jan\n\ngotosleep:: 23:16\n"),
    ]);
    let rig = rig(&vault);
    let mut conversation = Vec::new();
    let mut model = ScriptedModel::new(["At 23:16 [1]."; 5], 8192);
    rig.ask_in(
        &mut model,
        AgentOptions::default(),
        &mut conversation,
        "What time did I go to bed on 20 January 2022?",
    );
    let mut model = ScriptedModel::new(["At 22:42 [1]."; 5], 8192);
    let turn = rig.ask_in(
        &mut model,
        AgentOptions::default(),
        &mut conversation,
        "And the night before?",
    );
    let meant = "What time did I go to bed on 19 January 2022?";
    let search = turn.steps.iter().find(|s| s.kind == "retrieve").unwrap();
    let call = &search.calls[0];
    assert_eq!(call.arguments["query"], meant);
    assert_eq!(call.arguments["from"], "2022-01-19");
    assert_eq!(call.notes[0], "note://Daily/2022-01-19");
    let asked = format!("sources above: {meant}");
    assert!(model.prompts.iter().any(|p| p.contains(&asked)));
    assert_eq!(turn.answer, "At 22:42 [1].");
}

/// An answer naming some items of a list in the source it cites is followed by the items it
/// left out, as the note writes them, and the conversation keeps them; an answer naming all
/// of them, or one, stands as written.
#[test]
fn the_items_an_answer_leaves_out_of_a_list_it_names_follow_it() {
    let (_dir, vault) = temp_vault(&[(
        "Gift ideas.md",
        "# Gift ideas\n\nFor Dad:\n\n- gardening gloves (size M)\n\
         - the new Camilla Läckberg paperback\n- theatre tickets for the two of us\n",
    )]);
    let rig = rig(&vault);
    let answer = "Dad would like the new Camilla Läckberg paperback or theatre tickets [1].";
    let mut model = ScriptedModel::new([answer], 8192);
    let (turn, conversation) = rig.ask(&mut model, AgentOptions::default(), "gift ideas for dad?");
    assert_eq!(
        turn.answer,
        format!("{answer}\n\nAlso in that list [1]:\n- gardening gloves (size M)")
    );
    assert!(!turn.fallback);
    assert_eq!(cited_uris(&turn), ["note://Gift ideas"]);
    assert_eq!(conversation.last().unwrap().content, turn.answer);

    for answer in [
        "Gardening gloves, the Camilla Läckberg paperback or theatre tickets [1].",
        "Theatre tickets for the two of you [1].",
    ] {
        let mut model = ScriptedModel::new([answer], 8192);
        let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "gift ideas for dad?");
        assert_eq!(turn.answer, answer);
    }
}

/// A question naming a day is searched within it first (relative days counted from the
/// options' `today`), and the question as asked fills the passages left; a period no note is
/// about leaves no trace in the conversation, and the answer step is told no note is of it.
#[test]
fn a_question_naming_a_day_is_searched_within_it_first() {
    let (_dir, vault) = temp_vault(&[
        ("Daily/2021-05-11.md", "We eat ramen with Ana.\n"),
        ("Daily/2021-05-12.md", "We eat pizza at work.\n"),
        ("Recipes.md", "What I eat most: ramen, pizza, salad.\n"),
    ]);
    let rig = rig(&vault);
    let options = || AgentOptions {
        today: "2021-05-12".parse().unwrap(),
        ..AgentOptions::default()
    };
    let mut model = ScriptedModel::new(["Ramen with Ana [1]."], 8192);
    let (turn, conversation) = rig.ask(&mut model, options(), "What did I eat yesterday?");
    let searches: Vec<_> = turn.steps.iter().filter(|s| s.kind == "retrieve").collect();
    assert_eq!(searches.len(), 2);
    let dated = &searches[0].calls[0].arguments;
    assert_eq!(
        (&dated["from"], &dated["to"]),
        (&"2021-05-11".into(), &"2021-05-11".into())
    );
    assert_eq!(searches[0].calls[0].notes, ["note://Daily/2021-05-11"]);
    assert!(searches[1].calls[0].arguments.get("from").is_none());
    assert_eq!(cited_uris(&turn), ["note://Daily/2021-05-11"]);
    assert!(
        model.prompts[0].contains("[1] Daily › 2021-05-11 (Tuesday 11 May 2021)\n"),
        "{}",
        model.prompts[0]
    );

    // No note is about 1 January 1999: only the search without a period is in the prompt,
    // and an answer from a source that does not name that day is none.
    let mut model = ScriptedModel::new(["Ramen [1]."; 5], 8192);
    let (turn, conversation_1999) =
        rig.ask(&mut model, options(), "What did I eat on 1 January 1999?");
    let searches: Vec<_> = turn.steps.iter().filter(|s| s.kind == "retrieve").collect();
    assert_eq!(searches[0].calls[0].arguments["from"], "1999-01-01");
    assert!(searches[1].calls[0].arguments.get("from").is_none());
    let calls: Vec<_> = conversation_1999
        .iter()
        .filter(|m| m.role == Role::Assistant && m.content.starts_with("[search_notes("))
        .collect();
    assert!(!calls.is_empty());
    assert!(
        calls.iter().all(|call| !call.content.contains("from=")),
        "{calls:?}"
    );
    assert_eq!(ipython_messages(&conversation).len(), 2);
    // The answer step is told so; a day with a note is not said to have none.
    let undated = "No note is dated on the day it asks about.";
    assert!(model.prompts[0].contains(undated), "{}", model.prompts[0]);
    assert!(
        turn.answer.starts_with("The notes do not say"),
        "{}",
        turn.answer
    );
    let mut model = ScriptedModel::new(["Ramen with Ana [1]."], 8192);
    rig.ask(&mut model, options(), "What did I eat yesterday?");
    assert!(!model.prompts[0].contains(undated), "{}", model.prompts[0]);

    // A day named without its year is the latest one first, then the same day a year
    // before, while none has a note (asked in 2023 of notes of 2021); the days with none
    // leave no trace in the conversation.
    let later = AgentOptions {
        today: "2023-06-01".parse().unwrap(),
        ..AgentOptions::default()
    };
    let mut model = ScriptedModel::new(["Pizza at work [1]."], 8192);
    let (turn, conversation) = rig.ask(&mut model, later, "what did I eat on 12 May?");
    let days: Vec<_> = turn
        .steps
        .iter()
        .filter(|s| s.kind == "retrieve")
        .filter_map(|s| s.calls[0].arguments.get("from"))
        .collect();
    assert_eq!(days, ["2023-05-12", "2022-05-12", "2021-05-12"]);
    assert_eq!(cited_uris(&turn), ["note://Daily/2021-05-12"]);
    assert_eq!(ipython_messages(&conversation).len(), 2);
}

/// A question pointing at someone by what they did reads the note the day's line links to,
/// properties first, and is told who is meant: their note answers what the day's does not,
/// and the answer cites both.
#[test]
fn someone_pointed_at_is_found_by_the_link_in_the_line_described() {
    let (_dir, vault) = temp_vault(&[
        (
            "Daily/2022-08-11.md",
            "Bought stamps.\nI chatted to [[Elias]] at the ferry terminal.\n",
        ),
        (
            "People/Elias.md",
            "---\nbirthday: 1984-06-14\n---\n# Elias\nKnows ferries.\n",
        ),
        ("Ferries.md", "The ferry terminal opens at six.\n"),
    ]);
    let rig = rig(&vault);
    let mut model = ScriptedModel::new(["Elias was born on 1984-06-14 [4].", "yes"], 8192);
    let question = "When's the birthday of the person I chatted to at the ferry terminal?";
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), question);
    let reads: Vec<_> = turn
        .steps
        .iter()
        .flat_map(|s| &s.calls)
        .filter(|c| c.name == "read_note")
        .collect();
    assert_eq!(reads.len(), 1, "{:?}", turn.steps);
    // Read where the vault server resolves the link.
    assert_eq!(reads[0].arguments["uri"], "People/Elias");
    let prompt = &model.prompts[0];
    let elias = prompt
        .find("] People › Elias\nbirthday: 1984-06-14\n")
        .unwrap_or_else(|| panic!("{prompt}"));
    let number = prompt[..elias].rsplit('[').next().unwrap();
    assert!(
        prompt.contains(&format!(
            "The person it asks about is Elias (source {number})."
        )),
        "{prompt}"
    );
    assert_eq!(number, "4");
    assert_eq!(turn.answer, "Elias was born on 1984-06-14 [4].");
    // The figure check reads his note's line knowing who the question means.
    let check = &model.prompts[1];
    assert!(
        check.contains("birthday: 1984-06-14\n\nAnswer: Elias was born on 1984-06-14.\n(The person it asks about is Elias.)"),
        "{check}"
    );
    // The day's note that says who is meant is cited beside theirs.
    assert_eq!(
        cited_uris(&turn),
        ["note://People/Elias", "note://Daily/2022-08-11"]
    );

    // A question naming whom it asks about follows no link.
    let mut model = ScriptedModel::new(["At six [1]."], 8192);
    let (turn, _) = rig.ask(
        &mut model,
        AgentOptions::default(),
        "When does the ferry terminal open?",
    );
    assert!(call_names(&turn).iter().all(|name| *name != "read_note"));
    assert!(!model.prompts[0].contains("it asks about"));
}

/// A figure asked for that stands in the notes, but in a line about something else, is no
/// answer: the model reads the line it stands in beside the answer's sentence, and "no" makes
/// the answer "the notes do not say". The figure is never shown as the answer, while it
/// waits for the check or after it.
#[test]
fn a_figure_from_a_line_about_something_else_is_no_answer() {
    let (_dir, vault) = temp_vault(&[
        (
            "Home.md",
            "# Home\n\n## Landlord\nHenk de Vries\n- phone: 06 4410 2287\n",
        ),
        (
            "People/Lotte Smit.md",
            "# Lotte Smit\n\n- phone: +31 6 4182 7730\n",
        ),
    ]);
    let rig = rig(&vault);
    let invented = "The physio's phone number is 06 4410 2287 [1].";
    let mut model = ScriptedModel::new(
        [
            invented,
            "no",
            "The notes do not say.",
            "The notes do not say.",
        ],
        8192,
    );
    let (turn, _) = rig.ask(
        &mut model,
        AgentOptions::default(),
        "What's my physio's phone number?",
    );
    let check = &model.prompts[1];
    assert!(
        check.contains("Notes, Home › Landlord:\nHenk de Vries\n- phone: 06 4410 2287")
            && check.contains("Answer: The physio's phone number is 06 4410 2287."),
        "{check}"
    );
    assert_eq!(
        model.constraints[1].as_ref().map(|c| c.gbnf.as_str()),
        Some(recall::grammar::VERDICT_GBNF)
    );
    let said = turn.answer.split("\n\n").next().unwrap();
    assert_eq!(
        said,
        "The notes do not say: the 06 4410 2287 they hold is about something else."
    );
    assert!(
        turn.steps
            .iter()
            .any(|s| s.kind == "check" && s.output == "no")
    );
    assert!(turn.citations.iter().all(|c| !c.cited));

    // Said of the one asked about, the same kind of line is the answer.
    let answer = "Lotte's phone number is +31 6 4182 7730 [1].";
    let mut model = ScriptedModel::new([answer, "yes"], 8192);
    let (turn, _) = rig.ask(
        &mut model,
        AgentOptions::default(),
        "What's Lotte's phone number?",
    );
    assert!(model.prompts[1].contains("Notes, Lotte Smit:\n- phone: +31 6 4182 7730"));
    assert_eq!(turn.answer, answer);
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "answer", "check"]
    );
    assert_eq!(cited_uris(&turn), ["note://People/Lotte Smit"]);
}

/// Read by the model (`--question-kind model`), what a question asks for needs no question
/// word Recall knows: asked in German for a phone number, the model names the kind first,
/// and a number from a line about somebody else is no answer, as in English.
#[test]
fn the_model_reads_what_a_question_in_any_language_asks_for() {
    let (_dir, vault) = temp_vault(&[(
        "Wohnung.md",
        "# Wohnung\n\n## Vermieter\nHenk de Vries\n- Telefonnummer: 06 4410 2287\n",
    )]);
    let rig = rig(&vault);
    // No noun past the first word: a German noun's capital reads as a name no source holds.
    let invented = "Sie ist unter 06 4410 2287 erreichbar [1].";
    let mut model = ScriptedModel::new(
        [
            "phone",
            invented,
            "no",
            "Die Notizen sagen nichts dazu.",
            "Die Notizen sagen nichts dazu.",
        ],
        8192,
    );
    let options = AgentOptions {
        question_kind: QuestionKind::Model,
        ..AgentOptions::default()
    };
    let question = "Wie lautet die Telefonnummer meiner Physiotherapeutin?";
    let (turn, _) = rig.ask(&mut model, options, question);
    assert!(
        model.prompts[0].contains("kind of answer") && model.prompts[0].contains(question),
        "{}",
        model.prompts[0]
    );
    let kinds = model.constraints[0].as_ref().map(|c| c.gbnf.as_str());
    assert!(kinds.is_some_and(|g| g.contains("\"phone\"") && g.contains("\"other\"")));
    assert!(
        model.prompts[2]
            .contains("Wohnung › Vermieter:\nHenk de Vries\n- Telefonnummer: 06 4410 2287"),
        "{}",
        model.prompts[2]
    );
    assert!(
        turn.steps
            .iter()
            .any(|s| s.kind == "check" && s.output == "no")
    );
    assert!(!turn.answer.contains(invented), "{}", turn.answer);
    assert!(turn.citations.iter().all(|c| !c.cited));
}

/// A question in Chinese names whom it asks about by a note's title or alias, which no
/// capital marks: a figure the notes give somebody else is no answer about them ("妈 生日"
/// on a gift list, for 婷婷, the alias of 杨小婷), and one her own note gives is.
#[test]
fn a_name_the_vault_knows_picks_out_whom_a_chinese_question_asks_about() {
    let (_dir, vault) = temp_vault(&[
        (
            "People/杨小婷.md",
            "---\naliases: [婷婷]\nbirthday: 2003-11-02\n---\n# 杨小婷\n\n表妹，小姨的女儿。\n",
        ),
        (
            "Lists/礼物清单.md",
            "- 妈 生日（4月23日）：颈椎按摩仪 送了\n- 婷婷 考研加油礼物？还没想好\n",
        ),
    ]);
    let rig = rig(&vault);
    let invented = "婷婷的生日是4月23日。[1]";
    let mut model = ScriptedModel::new([invented; 5], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "婷婷生日是几号？");
    assert!(turn.answer.contains("笔记中没有说明"), "{}", turn.answer);
    assert!(turn.citations.iter().all(|c| !c.cited));

    let hers = "婷婷的生日是2003-11-02。[1]";
    let mut model = ScriptedModel::new([hers, "yes"], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), "婷婷生日是几号？");
    assert_eq!(turn.answer, hers);
}

/// A name asked for that stands in a line naming nothing the question asks about is no
/// answer, without a model call: asked the chiropodist's name, a name from a line about a
/// girlfriend. A name from the line that names the chiropodist stands.
#[test]
fn a_name_from_a_line_about_something_else_is_no_answer() {
    let (_dir, vault) = temp_vault(&[
        (
            "Daily/2023-11-11.md",
            "- Oisín has a girlfriend apparently. won't tell us her name\n",
        ),
        (
            "Daily/2023-10-02.md",
            "- foot check for mam, the chiropodist was Nuala Byrne, lovely\n",
        ),
    ]);
    let rig = rig(&vault);
    let asked = "whats the chiropodists name";
    let wrong = "The chiropodist's name is Oisín [1].";
    let mut model = ScriptedModel::new([wrong; 5], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), asked);
    assert!(
        turn.answer
            .contains("The notes do not say: the Oisín they hold is about something else."),
        "{}",
        turn.answer
    );
    assert!(turn.citations.iter().all(|c| !c.cited));

    let right = "The chiropodist was Nuala Byrne [1].";
    let mut model = ScriptedModel::new([right], 8192);
    let (turn, _) = rig.ask(&mut model, AgentOptions::default(), asked);
    assert_eq!(turn.answer, right);
}

/// The turn checked by the sources' gain (`--grounding gain`).
fn by_gain() -> AgentOptions {
    AgentOptions {
        answer_check: AnswerCheck::Gain { threshold: 1.0 },
        ..AgentOptions::default()
    }
}

/// An answer the sources made likely is shown once it is read: each of its words far likelier
/// after them (scored first) than after the question alone (scored second).
#[test]
fn an_answer_the_sources_raise_is_shown_after_the_gain_check() {
    let rig = rig(&fixture_vault());
    let mut model =
        ScriptedModel::new(["The field trial is in Kettleby [1]."], 8192).with_scores([-0.1, -5.0]);
    let (turn, _) = rig.ask(&mut model, by_gain(), "Kettleby field trial");
    assert_eq!(turn.answer, "The field trial is in Kettleby [1].");
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "answer", "ground"]
    );
    let ground: serde_json::Value = serde_json::from_str(&turn.steps[2].output).unwrap();
    assert!(
        (ground["mean_gain"].as_f64().unwrap() - 4.9).abs() < 1e-3,
        "{ground}"
    );
    // The second score was read without the sources, asked the question plainly.
    let alone = &model.prompts[model.prompts.len() - 1];
    assert!(!alone.contains("note://") && !alone.contains("Field trial in Kettleby."));
    assert!(alone.contains("Kettleby field trial"), "{alone}");
    let with = &model.prompts[model.prompts.len() - 2];
    assert!(with.contains("Field trial in Kettleby."), "{with}");
}

/// An answer as likely without the sources as with them came from the model: it is never
/// shown, and the turn goes on as after "the notes do not say" (more passages, a second
/// reading), ending with that and the closest passages, none of them cited.
#[test]
fn an_answer_the_sources_do_not_raise_is_the_notes_not_saying() {
    let rig = rig(&fixture_vault());
    let invented = "The trial runs in Cork with Declan [1].";
    let mut model = ScriptedModel::new([invented, invented, invented], 8192)
        .with_scores([-3.0, -3.0, -3.0, -3.0, -3.0, -3.0]);
    let (turn, conversation) = rig.ask(&mut model, by_gain(), "Kettleby field trial");
    assert!(!turn.answer.contains("Cork"), "{}", turn.answer);
    let notes_lack_it = recall::language::answer_lines(None).notes_lack_it;
    assert!(turn.answer.starts_with(notes_lack_it), "{}", turn.answer);
    assert!(turn.citations.iter().all(|c| !c.cited));
    assert!(conversation.iter().all(|m| !m.content.contains("Cork")));
    let kinds: Vec<_> = turn.steps.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "ground").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "retrieve").count(),
        2,
        "{kinds:?}"
    );
}

/// A model that cannot score a given text (a remote server) leaves the answer unchecked.
#[test]
fn an_answer_no_model_can_score_stands_unchecked() {
    let rig = rig(&fixture_vault());
    let mut model = ScriptedModel::new(["The field trial is in Kettleby [1]."], 8192);
    let (turn, _) = rig.ask(&mut model, by_gain(), "Kettleby field trial");
    assert_eq!(turn.answer, "The field trial is in Kettleby [1].");
    assert_eq!(
        turn.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["retrieve", "answer"]
    );
}
