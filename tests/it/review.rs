//! `recall quiz --save` and `recall review`, end to end: the real binary, the real vault server
//! over a copy of the sample vault, the real test model grading, a deck file in a temporary
//! folder, and a clock the test sets (`--now`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, recall, recall_with_input};

/// A time long after any card here was saved: every new card is due then.
const LATER: &str = "2100-01-01T00:00:00Z";
/// A year after that: every card reviewed at `LATER` is due again.
const YEAR_AFTER: &str = "2101-01-01T00:00:00Z";

/// The sample vault, copied (the test edits and deletes notes).
fn vault_copy(dir: &Path) -> String {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sample-vault");
    let to = dir.join("vault");
    copy_tree(&from, &to);
    to.display().to_string()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `recall ARGS --deck DECK` on `vault` with the test model, `input` on stdin.
fn run(vault: &str, deck: &Path, args: &[&str], input: &str) -> (bool, String, String) {
    let deck = deck.display().to_string();
    let flags = common::test_model_args(vault);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--deck", &deck]);
    all.extend(flags.iter().map(String::as_str));
    let output = recall_with_input(&all, input);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A copy of the sample vault and a deck file, in a temporary folder.
struct Setup {
    _dir: tempfile::TempDir,
    vault: String,
    deck: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        Setup {
            vault: vault_copy(dir.path()),
            deck: dir.path().join("deck.json"),
            _dir: dir,
        }
    }

    /// `quiz Mitochondria -n COUNT --format json --save`: its stdout and stderr.
    fn save_quiz(&self, count: &str) -> (String, String) {
        let quiz = [
            "quiz",
            "Mitochondria",
            "-n",
            count,
            "--format",
            "json",
            "--save",
        ];
        let (ok, stdout, stderr) = run(&self.vault, &self.deck, &quiz, "");
        assert!(ok, "{stderr}");
        (stdout, stderr)
    }
}

/// `review --json` at `now`: the due list.
fn due(vault: &str, deck: &Path, now: &str) -> Value {
    let (ok, stdout, stderr) = run(vault, deck, &["review", "--json", "--now", now], "");
    assert!(ok, "{stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn saved_questions_are_reviewed_graded_and_scheduled_by_a_clock_the_test_sets() {
    let setup = Setup::new();
    let (vault, deck) = (setup.vault.as_str(), setup.deck.as_path());

    // Two questions saved; the same quiz again adds none.
    let (stdout, stderr) = setup.save_quiz("2");
    let written = serde_json::from_str::<Value>(stdout.trim()).unwrap()["questions"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        stderr.contains(&format!("saved {written} new cards")),
        "{stderr}"
    );
    let (_, stderr) = setup.save_quiz("2");
    assert!(stderr.contains("saved 0 new cards"), "{stderr}");

    // All due at once, each with its source and its paragraph; no model is needed to list them.
    let listed = due(vault, deck, LATER);
    let cards = listed["due"].as_array().unwrap();
    assert_eq!(cards.len(), written, "{listed}");
    for card in cards {
        assert_eq!(card["source"]["uri"], "note://Cells/Mitochondria", "{card}");
        assert!(
            card["source"]["link"]
                .as_str()
                .unwrap()
                .starts_with("obsidian://open?vault=vault&file=Cells%2FMitochondria"),
            "{card}"
        );
        assert_eq!(card["reviews"], 0, "{card}");
    }

    // Review: one typed answer per card, each graded and scheduled.
    let answers = "They make ATP.\n".repeat(written);
    let (ok, stdout, stderr) = run(vault, deck, &["review", "--now", LATER], &answers);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.matches("\nCard ").count(), written, "{stdout}");
    // Each grade follows the answer prompt (`> `), which the piped answer does not end.
    let graded = stdout
        .lines()
        .map(|l| l.trim_start_matches("> "))
        .filter(|l| {
            ["correct: ", "partly: ", "wrong: "]
                .iter()
                .any(|g| l.starts_with(g))
        })
        .count();
    assert_eq!(graded, written, "{stdout}");
    assert_eq!(
        stdout.matches("Next review: 2100-").count(),
        written,
        "{stdout}"
    );
    assert!(!stdout.contains("has changed"), "{stdout}");

    // Nothing due at the same time any more; all of it a year later, once reviewed.
    assert_eq!(due(vault, deck, LATER)["due"].as_array().unwrap().len(), 0);
    let again = due(vault, deck, YEAR_AFTER);
    let cards = again["due"].as_array().unwrap();
    assert_eq!(cards.len(), written, "{again}");
    assert!(cards.iter().all(|c| c["reviews"] == 1), "{again}");
    let (ok, stdout, _) = run(vault, deck, &["review", "--now", LATER], "");
    assert!(ok && stdout.starts_with("Nothing is due"), "{stdout}");
}

#[test]
fn a_card_whose_note_changed_or_vanished_says_so_and_end_of_input_keeps_the_deck() {
    let setup = Setup::new();
    let (vault, deck) = (setup.vault.as_str(), setup.deck.as_path());
    setup.save_quiz("1");
    let saved = std::fs::read_to_string(deck).unwrap();

    // The note is rewritten: the card says its answer may be out of date. No input: the
    // review ends at once, and the deck is as it was.
    let note = Path::new(vault).join("Cells/Mitochondria.md");
    std::fs::write(&note, "# Mitochondria\n\nRewritten from scratch.\n").unwrap();
    let (ok, stdout, stderr) = run(vault, deck, &["review", "--now", LATER], "");
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("its note has changed since this card was saved"),
        "{stdout}"
    );
    assert!(stdout.contains("Reviewed 0 of 1 due."), "{stdout}");
    assert_eq!(std::fs::read_to_string(deck).unwrap(), saved);

    // The note is gone: the card says so.
    std::fs::remove_file(&note).unwrap();
    let (ok, stdout, stderr) = run(vault, deck, &["review", "--now", LATER], "");
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("its note, note://Cells/Mitochondria, is no longer in the vault"),
        "{stdout}"
    );
}

#[test]
fn a_deck_that_is_not_a_deck_is_a_clear_error_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let deck = dir.path().join("deck.json");
    std::fs::write(&deck, "{\"not\": \"a deck\"}").unwrap();
    let output = recall(&["review", "--json", "--deck", &deck.display().to_string()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not a deck file"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(deck).unwrap(),
        "{\"not\": \"a deck\"}"
    );
    let output = recall(&["review", "--json", "--now", "tomorrow"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("RFC 3339"), "{stderr}");
}
