//! `recall summarize` and `recall quiz` end to end: the real binary, the real SmolLM2 model and
//! the bundled vault server over stdio on the fixture vault. The 135M model writes poor text, so
//! these check structure (exit status, real sources, parseable output), not quality.

mod common;

use common::{fixture_vault, recall};

use std::collections::HashSet;
use std::process::Output;

use serde_json::Value;

/// Runs a model command with the small, deterministic settings every test here uses.
fn recall_with_model(args: &[&str]) -> Output {
    let model = common::smollm2().display().to_string();
    let vault = fixture_vault();
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "--model",
        &model,
        "--vault",
        &vault,
        "--temp",
        "0",
        "--ctx",
        "4096",
        "--max-tokens",
        "96",
    ]);
    recall(&all)
}

fn succeeded(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Every note URI of the fixture vault, as the vault server lists them.
fn vault_uris() -> HashSet<String> {
    let vault = fixture_vault();
    let output = recall(&[
        "call",
        "list_notes",
        r#"{"limit": 500}"#,
        "--vault",
        &vault,
        "--json",
    ]);
    let report: Value = serde_json::from_str(&succeeded(&output)).expect("call prints JSON");
    let uris: HashSet<String> = report["structured"]["notes"]
        .as_array()
        .expect("a note list")
        .iter()
        .map(|n| n["uri"].as_str().expect("a uri").to_string())
        .collect();
    assert!(uris.contains("note://Home"), "{uris:?}");
    uris
}

/// A strict RFC 4180 reader: quoted fields may hold commas, doubled quotes and line breaks.
fn read_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, '"') => panic!("a quote inside an unquoted field: {text:?}"),
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(!quoted, "an unterminated quoted field: {text:?}");
    assert!(
        field.is_empty() && row.is_empty(),
        "the last row has no line end: {text:?}"
    );
    rows
}

#[test]
fn summarize_a_note_prints_markdown_with_the_note_as_its_source() {
    let uris = vault_uris();
    let stdout = succeeded(&recall_with_model(&["summarize", "note://Home"]));
    assert!(stdout.starts_with("# Summary: note://Home\n"), "{stdout}");
    let (summary, sources) = stdout
        .split_once("\n## Sources\n")
        .expect("a Sources section");
    assert!(!summary.trim().is_empty(), "{stdout}");
    let listed: Vec<&str> = sources.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!listed.is_empty(), "{stdout}");
    for line in listed {
        let uri = line
            .strip_prefix("- ")
            .and_then(|l| l.rsplit_once(" ("))
            .and_then(|(_, rest)| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("not `- Title (uri)`: {line:?}"));
        assert!(uris.contains(uri), "{uri} is not in the vault");
    }
    assert!(sources.contains("(note://Home)"), "{stdout}");
}

#[test]
fn quiz_as_json_has_at_most_the_questions_asked_each_with_a_real_source() {
    let uris = vault_uris();
    let dir = tempfile::tempdir().expect("temp dir");
    let transcript = dir.path().join("transcript.jsonl");
    let transcript_arg = transcript.display().to_string();
    let stdout = succeeded(&recall_with_model(&[
        "quiz",
        "Home",
        "-n",
        "2",
        "--format",
        "json",
        "--transcript",
        &transcript_arg,
    ]));
    let report: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let questions = report["questions"].as_array().expect("a question list");
    assert!(
        (1..=2).contains(&questions.len()),
        "{} questions: {stdout}",
        questions.len()
    );
    for q in questions {
        assert!(!q["question"].as_str().expect("a question").is_empty());
        assert!(!q["answer"].as_str().expect("an answer").is_empty());
        assert!(!q["source"]["title"].as_str().expect("a title").is_empty());
        let uri = q["source"]["uri"].as_str().expect("a source uri");
        assert!(uris.contains(uri), "{uri} is not in the vault");
    }

    // The transcript holds the generations the questions were read from.
    let text = std::fs::read_to_string(&transcript).expect("a transcript file");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let entry: Value = serde_json::from_str(lines[0]).expect("a JSON line");
    assert_eq!(entry["command"], "quiz");
    assert_eq!(entry["target"], "Home");
    assert!(entry["error"].is_null(), "{entry}");
    let generations = entry["generations"].as_array().expect("generations");
    assert!(generations.len() >= questions.len(), "{entry}");
    let written: Vec<String> = generations
        .iter()
        .map(|g| {
            assert!(g["timings"]["generated_tokens"].as_u64() > Some(0), "{g}");
            format!(
                "{}{}",
                g["prefill"].as_str().unwrap(),
                g["reply"].as_str().unwrap()
            )
        })
        .collect();
    for q in questions {
        let question = q["question"].as_str().unwrap();
        assert!(
            written.iter().any(|w| w.contains(question)),
            "{question:?} is in no generation: {written:?}"
        );
    }
}

#[test]
fn quiz_for_anki_writes_csv_rows_of_front_back_and_source() {
    let uris = vault_uris();
    let stdout = succeeded(&recall_with_model(&[
        "quiz", "Home", "-n", "2", "--format", "anki",
    ]));
    let rows = read_csv(&stdout);
    assert!((1..=2).contains(&rows.len()), "{rows:?}");
    for row in &rows {
        assert_eq!(row.len(), 3, "{row:?}");
        assert!(!row[0].is_empty() && !row[1].is_empty(), "{row:?}");
        let uri = row[2]
            .rsplit_once(" (")
            .and_then(|(_, rest)| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("source is not `Title (uri)`: {:?}", row[2]));
        assert!(uris.contains(uri), "{uri} is not in the vault");
    }
}

#[test]
fn a_target_that_matches_nothing_fails_and_says_so_before_loading_a_model() {
    // The model path does not exist: the target must be looked up (and fail) first.
    let vault = fixture_vault();
    let output = recall(&[
        "summarize",
        "zzqx-nothing-here-qqzx",
        "--model",
        "/nonexistent/model.gguf",
        "--vault",
        &vault,
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("model.gguf"), "{stderr}");
    assert!(!output.status.success(), "{stderr}");
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        stderr.contains("nothing in the vault matches \"zzqx-nothing-here-qqzx\""),
        "{stderr}"
    );
}

/// "Obsidian Sync" is a folder and, by alias, a note elsewhere: the exact folder name wins, a
/// note named exactly wins over both, and stderr says which was chosen. The model path does
/// not exist, so the run stops right after the choice.
#[test]
fn an_exact_folder_name_wins_over_an_alias_and_the_choice_is_said() {
    let vault = tempfile::tempdir().unwrap();
    let root = vault.path();
    std::fs::create_dir(root.join("Obsidian Sync")).unwrap();
    std::fs::write(
        root.join("Obsidian Sync/Plans.md"),
        "# Plans\n\nTwo plans.\n",
    )
    .unwrap();
    std::fs::write(root.join("Obsidian Sync/Setup.md"), "# Setup\n\nLog in.\n").unwrap();
    std::fs::write(
        root.join("Introduction to Obsidian Sync.md"),
        "---\naliases: [Obsidian Sync]\n---\n# Intro\n\nSync keeps vaults alike.\n",
    )
    .unwrap();
    let choose = |target: &str| {
        let output = recall(&[
            "summarize",
            target,
            "--model",
            "/nonexistent/model.gguf",
            "--vault",
            root.to_str().unwrap(),
        ]);
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let stderr = choose("Obsidian Sync");
    assert!(
        stderr.contains("\"Obsidian Sync\" is a folder and also matches the note note://Introduction to Obsidian Sync by alias; using the folder"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the notes in folder \"Obsidian Sync\" (2)"),
        "{stderr}"
    );
    // The alias alone, with no folder of that name, still finds the note.
    let stderr = choose("introduction to obsidian sync");
    assert!(
        stderr.contains("using the note note://Introduction to Obsidian Sync"),
        "{stderr}"
    );
    // A note named exactly wins, and says so.
    let stderr = choose("Plans");
    assert!(
        stderr.contains("using the note note://Obsidian Sync/Plans"),
        "{stderr}"
    );
}
