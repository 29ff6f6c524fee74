//! `recall summarize` and `recall quiz` end to end: the real binary, the real SmolLM2 model and
//! the bundled vault server over stdio on the fixture and sample vaults; and the study grammars
//! on the real model through the library. The 135M model writes poor text, so these check
//! structure (exit status, counts, real sources, parseable output), not quality.

use crate::common;

use common::{fixture_vault, recall};

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::path::Path;
use std::process::Output;

use recall::engine::llama::{Engine, LoadOptions, SessionOptions};
use recall::engine::{ChatModel, GenerateRequest, StopReason};
use recall::prompt::{ChatTemplate, Message, StudyPrompt};
use recall::study::{
    Grammar, ItemBounds, grade_grammar, item_grammar, parse_grade, parse_item, parse_summary,
    summary_grammar,
};
use serde_json::{Value, json};

/// The sample vault of the README demo (a biology course).
fn sample_vault() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sample-vault")
        .display()
        .to_string()
}

/// Runs a model command with the small, deterministic settings every test here uses.
fn recall_with_model(args: &[&str]) -> Output {
    recall_on(&fixture_vault(), args)
}

/// Like [`recall_with_model`], on `vault`.
fn recall_on(vault: &str, args: &[&str]) -> Output {
    let flags = common::test_model_args(vault);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(flags.iter().map(String::as_str));
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
    let uris = uris_of(&fixture_vault());
    assert!(uris.contains("note://Home"), "{uris:?}");
    uris
}

/// Every note URI of `vault`, as the vault server lists them.
fn uris_of(vault: &str) -> HashSet<String> {
    let output = recall(&[
        "call",
        "list_notes",
        r#"{"limit": 500}"#,
        "--vault",
        vault,
        "--json",
    ]);
    let report: Value = serde_json::from_str(&succeeded(&output)).expect("call prints JSON");
    let uris: HashSet<String> = report["structured"]["notes"]
        .as_array()
        .expect("a note list")
        .iter()
        .map(|n| n["uri"].as_str().expect("a uri").to_string())
        .collect();
    assert!(!uris.is_empty());
    uris
}

/// The rows of CSV text, read strictly (RFC 4180 with CRLF line ends, every row of 3 fields)
/// by the `csv` crate.
fn read_csv(text: &str) -> Vec<Vec<String>> {
    assert!(text.is_empty() || text.ends_with("\r\n"), "{text:?}");
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|row| {
            let row = row.unwrap_or_else(|e| panic!("not CSV ({e}): {text:?}"));
            row.iter().map(str::to_string).collect()
        })
        .collect()
}

/// The label and link of a `[Title](obsidian://…)` or `[Title › Heading](obsidian://…)`
/// Markdown source.
fn source_link(source: &str) -> (&str, &str) {
    source
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(')'))
        .and_then(|s| s.rsplit_once("]("))
        .unwrap_or_else(|| panic!("source is not a Markdown link `[Title](…)`: {source:?}"))
}

/// Checks that `link` opens `file` (vault path without `.md`, as Obsidian's URI encodes it) of
/// the vault, at `heading` when one is given, and nothing else.
fn assert_opens(link: &str, file: &str, heading: Option<&str>) {
    let query = link
        .strip_prefix("obsidian://open?vault=")
        .unwrap_or_else(|| panic!("not an obsidian://open link: {link:?}"));
    let (_vault, at) = query
        .split_once("&file=")
        .unwrap_or_else(|| panic!("no file in {link:?}"));
    let expected = match heading {
        Some(heading) => format!("{file}%23{}", heading.replace(' ', "%20")),
        None => file.to_string(),
    };
    assert_eq!(at, expected, "{link}");
}

/// A summary as Markdown shows it, taken apart.
struct MarkdownSummary {
    /// Each point's text and the number of its source, if it names one.
    points: Vec<(String, Option<usize>)>,
    /// The numbered sources, `[label](link)` each, in order.
    numbered: Vec<(String, String)>,
    /// The notes read that no point was traced to.
    also_read: Vec<(String, String)>,
    /// The closing line: `Read 3 of 3 sections (2,345 words).` and which gave no point.
    read: String,
}

/// Reads `# Summary: TARGET`, the `- point [n]` lines, `## Sources` with `n. [label](link)`
/// lines, an optional `Also read:` list of `- [label](link)` and the closing `Read …` line, and
/// checks that every point's number names a listed source and every listed source is named by
/// a point.
fn markdown_summary(stdout: &str, target: &str) -> MarkdownSummary {
    let (summary, sources) = stdout
        .strip_prefix(&format!("# Summary: {target}\n\n"))
        .and_then(|s| s.split_once("\n## Sources\n"))
        .unwrap_or_else(|| panic!("not the summary layout: {stdout}"));
    let points: Vec<(String, Option<usize>)> = summary
        .lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let text = line
                .strip_prefix("- ")
                .unwrap_or_else(|| panic!("not a point: {line:?}"));
            let mark = text
                .rsplit_once(" [")
                .and_then(|(text, n)| Some((text, n.strip_suffix(']')?.parse::<usize>().ok()?)));
            match mark {
                Some((text, n)) => (text.to_string(), Some(n)),
                None => (text.to_string(), None),
            }
        })
        .collect();
    let (sources, read) = sources
        .trim_end()
        .rsplit_once("\n\nRead ")
        .unwrap_or_else(|| panic!("no closing `Read …` line: {stdout}"));
    assert!(!read.contains('\n'), "{stdout}");
    let (numbered, also_read) = sources
        .split_once("\nAlso read:\n")
        .unwrap_or((sources, ""));
    let link_of = |line: &str| {
        let (label, link) = source_link(line);
        (label.to_string(), link.to_string())
    };
    let numbered: Vec<(String, String)> = numbered
        .lines()
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(i, line)| {
            let source = line
                .strip_prefix(&format!("{}. ", i + 1))
                .unwrap_or_else(|| panic!("not source {}: {line:?}", i + 1));
            link_of(source)
        })
        .collect();
    let also_read = also_read
        .lines()
        .filter(|l| !l.is_empty())
        .map(|line| link_of(line.strip_prefix("- ").unwrap()))
        .collect();
    let marks: HashSet<usize> = points.iter().filter_map(|(_, n)| *n).collect();
    assert_eq!(
        marks,
        (1..=numbered.len()).collect::<HashSet<_>>(),
        "every point's number names a listed source, every source is named: {stdout}"
    );
    MarkdownSummary {
        points,
        numbered,
        also_read,
        read: format!("Read {read}"),
    }
}

#[test]
fn summarize_a_note_prints_markdown_with_each_point_traced_to_its_heading() {
    let stdout = succeeded(&recall_with_model(&["summarize", "note://Home"]));
    let summary = markdown_summary(&stdout, "note://Home");
    assert!(!summary.points.is_empty(), "{stdout}");
    // The one note is listed once: as the sections points were traced to, or else read.
    assert_eq!(
        summary.numbered.is_empty(),
        summary.also_read.len() == 1,
        "{stdout}"
    );
    for (label, link) in summary.numbered.iter().chain(&summary.also_read) {
        let heading = label.strip_prefix("Home › ");
        assert!(heading.is_some() || label == "Home", "{stdout}");
        assert_opens(link, "Home", heading);
    }
}

#[test]
fn quiz_as_json_has_the_questions_asked_each_with_a_real_source() {
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
    assert_eq!(questions.len(), 2, "{stdout}");
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
            assert_eq!(g["grammar"], "quiz-item", "{g}");
            // Why it stopped, as a name (never Rust's Debug text).
            let stop = g["stop"].as_str().expect("a stop name");
            assert!(
                stop.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{stop}"
            );
            g["reply"].as_str().unwrap().to_string()
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
fn quiz_for_anki_writes_csv_rows_of_front_back_source_and_link() {
    let stdout = succeeded(&recall_with_model(&[
        "quiz", "Home", "-n", "2", "--format", "anki",
    ]));
    let rows = read_csv(&stdout);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in &rows {
        assert_eq!(row.len(), 4, "{row:?}");
        assert!(!row[0].is_empty() && !row[1].is_empty(), "{row:?}");
        let heading = row[2].strip_prefix("Home › ");
        assert!(heading.is_some() || row[2] == "Home", "{row:?}");
        assert_opens(&row[3], "Home", heading);
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

/// A quiz of five on a note of the sample vault, as Markdown, JSON and Anki CSV: exactly five
/// items each time, each with a question, an answer and a source in the vault.
#[test]
fn quiz_of_five_on_a_sample_note_has_five_items_with_sources_in_every_format() {
    let vault = sample_vault();
    let uris = uris_of(&vault);
    let quiz = |format: &str| {
        succeeded(&recall_on(
            &vault,
            &["quiz", "Mitochondria", "-n", "5", "--format", format],
        ))
    };

    let md = quiz("md");
    assert!(md.starts_with("# Quiz: Mitochondria\n"), "{md}");
    let numbered: Vec<&str> = md
        .lines()
        .filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
        })
        .collect();
    assert_eq!(numbered.len(), 5, "{md}");
    for (i, line) in numbered.iter().enumerate() {
        assert!(line.starts_with(&format!("{}. ", i + 1)), "{md}");
        assert!(line.ends_with('?'), "a question ends with `?`: {line:?}");
    }
    assert_eq!(md.matches("\n   - Answer: ").count(), 5, "{md}");
    let sources: Vec<&str> = md
        .lines()
        .filter_map(|l| l.strip_prefix("   - Source: "))
        .collect();
    assert_eq!(sources.len(), 5, "{md}");
    for source in sources {
        let (label, link) = source_link(source);
        let heading = label.strip_prefix("Mitochondria › ");
        assert!(heading.is_some() || label == "Mitochondria", "{md}");
        assert_opens(link, "Cells%2FMitochondria", heading);
    }

    let json: Value = serde_json::from_str(quiz("json").trim()).expect("one JSON object");
    let questions = json["questions"].as_array().expect("a question list");
    assert_eq!(questions.len(), 5, "{json}");
    for q in questions {
        assert!(
            q["question"].as_str().is_some_and(|s| s.ends_with('?')),
            "{q}"
        );
        assert!(q["answer"].as_str().is_some_and(|s| !s.is_empty()), "{q}");
        assert_eq!(q["source"]["title"], "Mitochondria", "{q}");
        let uri = q["source"]["uri"].as_str().expect("a source uri");
        assert!(uris.contains(uri), "{uri} is not in the vault");
        // A heading, when given, is one of the note's own, and the link opens there.
        let heading = q["source"].get("heading").map(|h| h.as_str().unwrap());
        if let Some(heading) = heading {
            assert!(["Structure", "Own DNA"].contains(&heading), "{q}");
        }
        assert_opens(
            q["source"]["link"].as_str().expect("a source link"),
            "Cells%2FMitochondria",
            heading,
        );
    }

    let rows = read_csv(&quiz("anki"));
    assert_eq!(rows.len(), 5, "{rows:?}");
    for row in &rows {
        assert_eq!(row.len(), 4, "front, back, source, link: {row:?}");
        assert!(row[0].ends_with('?') && !row[1].is_empty(), "{row:?}");
        let heading = row[2].strip_prefix("Mitochondria › ");
        assert!(heading.is_some() || row[2] == "Mitochondria", "{row:?}");
        assert_opens(&row[3], "Cells%2FMitochondria", heading);
    }
}

#[test]
fn summarize_writes_a_bullet_list_and_json_carries_the_same_points() {
    let vault = sample_vault();
    let stdout = succeeded(&recall_on(&vault, &["summarize", "Photosynthesis"]));
    let summary = markdown_summary(&stdout, "Photosynthesis");
    assert!((1..=7).contains(&summary.points.len()), "{stdout}");
    for (text, _) in &summary.points {
        assert!(!text.trim().is_empty(), "{stdout}");
    }
    let headings = [
        "Light-dependent reactions",
        "Calvin cycle",
        "Photosynthesis",
    ];
    for (label, link) in summary.numbered.iter().chain(&summary.also_read) {
        let heading = label.strip_prefix("Photosynthesis › ");
        assert!(heading.is_some_and(|h| headings.contains(&h)) || label == "Photosynthesis");
        assert_opens(link, "Processes%2FPhotosynthesis", heading);
    }

    let json: Value = serde_json::from_str(
        succeeded(&recall_on(
            &vault,
            &["summarize", "Photosynthesis", "--json"],
        ))
        .trim(),
    )
    .expect("one JSON object");
    let texts: Vec<String> = summary
        .points
        .iter()
        .map(|(t, _)| format!("- {t}"))
        .collect();
    assert_eq!(json["summary"], texts.join("\n"), "{json}");
    // Each point carries the source its Markdown number names, or none where it has none.
    let points = json["points"].as_array().expect("points");
    assert_eq!(points.len(), summary.points.len(), "{json}");
    for (point, (text, number)) in points.iter().zip(&summary.points) {
        assert_eq!(point["text"], *text, "{json}");
        match number {
            Some(n) => assert_eq!(point["source"]["link"], summary.numbered[n - 1].1, "{json}"),
            None => assert!(point["source"].is_null(), "{json}"),
        }
    }
    let note_link = json["sources"][0]["link"].as_str().expect("a link");
    assert_opens(note_link, "Processes%2FPhotosynthesis", None);
    assert_eq!(
        json["sources"],
        json!([{"title": "Photosynthesis", "uri": "note://Processes/Photosynthesis", "link": note_link}])
    );
    assert_eq!(json["chunks"], 1);
    // A short note is read whole: its opening and its two sections.
    let read = &json["read"];
    assert_eq!(
        (&read["unit"], &read["read"], &read["of"]),
        (&json!("sections"), &json!(3), &json!(3)),
        "{json}"
    );
    assert!(
        summary.read.starts_with("Read 3 of 3 sections ("),
        "{}",
        summary.read
    );
}

/// A long note, eight sections of some 150 words, one topic each: summarized part by part,
/// its points are traced to sections across the whole note (a point's source is a section of
/// the part it was written from), and the summary says how much it read and which sections,
/// if any, gave no point.
#[test]
fn a_long_note_is_summarized_part_by_part_and_says_how_much_it_read() {
    let topics = [
        (
            "Apples",
            "apple orchards",
            "Apples ripen in autumn and keep for months in a cool cellar.",
        ),
        (
            "Bridges",
            "suspension bridges",
            "A suspension bridge hangs its deck from steel cables.",
        ),
        (
            "Comets",
            "comets",
            "A comet grows a bright tail of gas and dust near the sun.",
        ),
        (
            "Dolphins",
            "dolphins",
            "Dolphins find fish by echolocation, clicking and listening.",
        ),
        (
            "Engines",
            "steam engines",
            "A steam engine turns the pressure of boiling water into motion.",
        ),
        (
            "Forests",
            "rain forests",
            "Rain forests hold more than half of the species on land.",
        ),
        (
            "Glaciers",
            "glaciers",
            "Glaciers carve valleys as they slide downhill under their weight.",
        ),
        (
            "Harbors",
            "harbors",
            "A harbor shelters ships from waves behind a breakwater.",
        ),
    ];
    let mut text = String::from("# Field guide\n");
    for (heading, subject, fact) in topics {
        text.push_str(&format!("\n## {heading}\n\n{fact}"));
        for (i, aspect) in ["history", "science", "people", "future", "safety"]
            .iter()
            .enumerate()
        {
            text.push_str(&format!(
                " The {aspect} of {subject} is a subject of its own: study number {} covers it \
                 with care, and every reader of this guide learns one more thing about {subject} here.",
                i + 1
            ));
        }
        text.push('\n');
    }
    let words = text.split_whitespace().count();
    assert!(words > 1_000, "{words}");
    let vault = tempfile::tempdir().unwrap();
    std::fs::write(vault.path().join("Field guide.md"), &text).unwrap();
    let vault = vault.path().to_str().unwrap().to_string();

    let output = recall_on(&vault, &["summarize", "Field guide", "--json"]);
    let json: Value = serde_json::from_str(succeeded(&output).trim()).expect("one JSON object");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("recall: reading Field guide in 8 parts"),
        "{stderr}"
    );
    assert_eq!(json["chunks"], 8, "{json}");
    let read = &json["read"];
    assert_eq!(
        (&read["unit"], &read["read"], &read["of"], &read["words"]),
        (&json!("sections"), &json!(8), &json!(8), &json!(words)),
        "{json}"
    );
    // Every point is traced to one of the eight sections; together they reach both halves.
    let headings: Vec<&str> = topics.iter().map(|t| t.0).collect();
    let points = json["points"].as_array().expect("points");
    let mut traced = HashSet::new();
    for point in points {
        let heading = point["source"]["heading"]
            .as_str()
            .unwrap_or_else(|| panic!("a point without its section: {json}"));
        let index = headings
            .iter()
            .position(|h| *h == heading)
            .unwrap_or_else(|| panic!("not a section of the note: {heading}"));
        assert_opens(
            point["source"]["link"].as_str().unwrap(),
            "Field%20guide",
            Some(heading),
        );
        traced.insert(index);
    }
    assert!(traced.iter().any(|&i| i < 4), "{json}");
    assert!(traced.iter().any(|&i| i >= 4), "{json}");
    // The sections that gave no point are those no point is traced to, named.
    let without: HashSet<&str> = read["without_points"]
        .as_array()
        .expect("without_points")
        .iter()
        .map(|s| s["heading"].as_str().expect("a section's heading"))
        .collect();
    let silent: HashSet<&str> = (0..8)
        .filter(|i| !traced.contains(i))
        .map(|i| headings[i])
        .collect();
    assert_eq!(without, silent, "{json}");

    // Markdown says it at the end, in words.
    let stdout = succeeded(&recall_on(&vault, &["summarize", "Field guide"]));
    let summary = markdown_summary(&stdout, "Field guide");
    assert!(
        summary.read.starts_with(&format!(
            "Read 8 of 8 sections ({},{:03} words).",
            words / 1000,
            words % 1000
        )),
        "{stdout}"
    );
}

/// A folder is summarized note by note, none combined away: the report counts the notes read,
/// and names as giving no point exactly the notes no point is traced to.
#[test]
fn a_folder_is_summarized_note_by_note_and_says_which_notes_gave_points() {
    let vault = sample_vault();
    let output = recall_on(&vault, &["summarize", "Cells", "--json"]);
    let json: Value = serde_json::from_str(succeeded(&output).trim()).expect("one JSON object");
    assert_eq!(json["chunks"], 4, "{json}");
    let read = &json["read"];
    assert_eq!(
        (&read["unit"], &read["read"], &read["of"]),
        (&json!("notes"), &json!(4), &json!(4)),
        "{json}"
    );
    let folder: HashSet<String> = json["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .map(|s| s["uri"].as_str().expect("a uri").to_string())
        .collect();
    assert_eq!(folder.len(), 4, "{json}");
    assert!(
        folder.iter().all(|uri| uri.starts_with("note://Cells/")),
        "{json}"
    );
    let traced: HashSet<String> = json["points"]
        .as_array()
        .expect("points")
        .iter()
        .filter_map(|p| p["source"]["uri"].as_str().map(str::to_string))
        .collect();
    assert!(traced.is_subset(&folder), "{json}");
    assert!(!traced.is_empty(), "{json}");
    let without: HashSet<String> = read["without_points"]
        .as_array()
        .expect("without_points")
        .iter()
        .map(|s| s["uri"].as_str().expect("a uri").to_string())
        .collect();
    assert_eq!(
        without,
        folder.difference(&traced).cloned().collect::<HashSet<_>>(),
        "{json}"
    );
}

/// A period names the notes about its days: "last week" counted from `--today`, or the same
/// days by `--from`/`--to`; the summary reads those notes and no other. A period no note is
/// about, or bounds that are no dates, fail before the model loads, saying why.
#[test]
fn a_period_is_summarized_from_the_notes_about_its_days() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    std::fs::create_dir_all(vault.join("Daily")).unwrap();
    for (rel, text) in [
        (
            "Daily/2021-05-03.md",
            "## Morning\nRan 5 km along the river before work. The weather was cold and windy.\n\n\
             ## Evening\nMet Ana for ramen and talked about her move to Lisbon.\n",
        ),
        (
            "Daily/2021-05-05.md",
            "## Work\nFinished the draft of chapter two and sent it to Professor Lee.\n\n\
             ## Home\nThe plumber fixed the kitchen tap for 80 euros.\n",
        ),
        ("Daily/2021-05-11.md", "Bought a new bike helmet.\n"),
        ("Recipes.md", "Ramen: noodles, broth, a soft egg.\n"),
    ] {
        std::fs::write(vault.join(rel), text).unwrap();
    }
    let vault = vault.display().to_string();
    let week: HashSet<String> = ["note://Daily/2021-05-03", "note://Daily/2021-05-05"]
        .into_iter()
        .map(String::from)
        .collect();
    let sources = |args: &[&str]| -> HashSet<String> {
        let output = recall_on(&vault, args);
        let json: Value = serde_json::from_str(succeeded(&output).trim()).expect("one JSON object");
        json["sources"]
            .as_array()
            .expect("sources")
            .iter()
            .map(|s| s["uri"].as_str().expect("a uri").to_string())
            .collect()
    };
    let last_week = ["summarize", "last week", "--today", "2021-05-12", "--json"];
    assert_eq!(sources(&last_week), week);
    let by_days = [
        "summarize",
        "--from",
        "2021-05-03",
        "--to",
        "2021-05-09",
        "--json",
    ];
    assert_eq!(sources(&by_days), week);
    // Other words are searched within the period: ramen that week, not the recipe.
    let ramen = [
        "summarize",
        "ramen last week",
        "--today",
        "2021-05-12",
        "--json",
    ];
    assert_eq!(
        sources(&ramen),
        HashSet::from(["note://Daily/2021-05-03".to_string()])
    );
    let markdown = succeeded(&recall_on(
        &vault,
        &["summarize", "last week", "--today", "2021-05-12"],
    ));
    assert!(
        markdown.starts_with("# Summary: last week (2021-05-03 to 2021-05-09)\n"),
        "{markdown}"
    );

    for (args, why) in [
        (
            &["summarize", "--from", "2020-01", "--to", "2020-01"][..],
            "no note in the vault matches",
        ),
        (&["summarize", "--from", "2021-13"][..], "not a date"),
        (
            &["summarize", "--from", "2021-05-09", "--to", "2021-05-03"][..],
            "is after --to",
        ),
    ] {
        let output = recall_on(&vault, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(why), "{args:?}: {stderr}");
    }
}

/// Each study grammar, compiled by llama.cpp and generated under with the real model, gives a
/// reply its parser reads, and ends the turn on its own.
#[test]
fn the_study_grammars_hold_a_real_generation_to_what_their_parsers_read() {
    let engine =
        Engine::load(&common::smollm2(), &LoadOptions::default()).expect("test model loads");
    let info = engine.info();
    let template = ChatTemplate::new(
        info.chat_template.as_deref(),
        &info.bos_text,
        &info.eos_text,
    )
    .unwrap();
    let mut session = engine
        .session(&SessionOptions {
            n_ctx: Some(2048),
            threads: Some(2),
        })
        .unwrap();
    let note =
        std::fs::read_to_string(Path::new(&sample_vault()).join("Cells/Mitochondria.md")).unwrap();
    let mut generate = |system: StudyPrompt, user: StudyPrompt, vars: Value, grammar: &Grammar| {
        let system = template.study(system, &json!({})).unwrap();
        let user = template.study(user, &vars).unwrap();
        let prompt = template
            .answer(&[Message::system(system), Message::user(user)])
            .unwrap();
        let mut request = GenerateRequest::greedy(256);
        request.constraint = Some(grammar.constraint());
        let done = session
            .generate(&prompt.text, &request, &mut |_| ControlFlow::Continue(()))
            .unwrap();
        assert_eq!(done.stop, StopReason::EndOfTurn, "{:?}", done.text);
        done.text
    };

    let bounds = ItemBounds::for_tokens(256).unwrap();
    let reply = generate(
        StudyPrompt::Quiz,
        StudyPrompt::QuizNote,
        json!({"title": "Mitochondria", "text": note}),
        &item_grammar(bounds),
    );
    let item = parse_item(&reply).unwrap_or_else(|| panic!("no item in {reply:?}"));
    assert!(reply.starts_with("Q: "), "{reply:?}");
    assert!(item.question.ends_with('?') && item.question.chars().count() <= bounds.question);
    assert!(!item.answer.is_empty() && item.answer.chars().count() <= bounds.answer);

    let reply = generate(
        StudyPrompt::Summarize,
        StudyPrompt::Note,
        json!({"title": "Mitochondria", "text": note}),
        &summary_grammar(256),
    );
    let points = parse_summary(&reply, true);
    assert!((1..=7).contains(&points.len()), "{reply:?}");
    assert!(
        reply.lines().all(|l| l.starts_with("- ") && l.len() > 2),
        "{reply:?}"
    );

    let reply = generate(
        StudyPrompt::Grade,
        StudyPrompt::GradeUser,
        json!({"question": item.question, "answer": item.answer, "reply": "I do not know."}),
        &grade_grammar(256),
    );
    let (grade, why) = parse_grade(&reply);
    assert!(grade.is_some(), "{reply:?}");
    assert!(!why.is_empty(), "{reply:?}");
}

#[test]
fn a_second_quiz_run_restores_the_system_prompt_from_the_prompt_cache() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("prompt-cache").display().to_string();
    let run = |name: &str| -> Value {
        let transcript = dir.path().join(name).display().to_string();
        succeeded(&recall_with_model(&[
            "quiz",
            "Home",
            "-n",
            "1",
            "--format",
            "json",
            "--prompt-cache-dir",
            &cache,
            "--transcript",
            &transcript,
        ]));
        let text = std::fs::read_to_string(&transcript).expect("a transcript file");
        let entry: Value = serde_json::from_str(text.trim()).expect("one JSON line");
        entry["generations"][0].clone()
    };
    let cold = run("cold.jsonl");
    let warm = run("warm.jsonl");
    assert_eq!(cold["timings"]["prompt_tokens_restored"], 0, "{cold}");
    let restored = warm["timings"]["prompt_tokens_restored"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        restored > 20,
        "the quiz system prompt was not restored: {warm}"
    );
    // Greedy, same prompt: the restored state decodes the same reply.
    assert_eq!(cold["reply"], warm["reply"]);
}
