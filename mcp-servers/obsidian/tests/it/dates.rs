//! Search and listing kept to a period: notes dated by their daily-note name in the vault's
//! own format, an ISO date in a name, a weekly note, a date property, a dated field, a dated
//! heading, and, for a note with none of these, its file time.

use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::common::*;

fn journal_vault() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("Journal Vault");
    for folder in [".obsidian", "Journal", "Meetings", "Weekly", "Tasks"] {
        std::fs::create_dir_all(vault.join(folder)).unwrap();
    }
    let files = [
        (
            ".obsidian/daily-notes.json",
            r#"{"folder": "Journal", "format": "DD.MM.YYYY"}"#,
        ),
        ("Journal/11.05.2021.md", "Lunch with Ana at the harbour.\n"),
        ("Journal/12.05.2021.md", "Dentist, then lunch alone.\n"),
        (
            "Meetings/2021-05-11 Planning.md",
            "Budget for the garden shed.\n",
        ),
        ("Weekly/2021-W19.md", "A quiet week of reading.\n"),
        (
            "Tasks/Essay.md",
            "---\ndue: 2021-05-20\n---\nThe essay on moths.\n",
        ),
        ("Log.md", "- a concert on [when:: 2021-06-02] in the park\n"),
        (
            "Trips.md",
            "# Trips\n\n## Rome, 3 March 2021\n\nPasta every day.\n",
        ),
        ("Ideas.md", "Lunch ideas: soup, bread.\n"),
    ];
    for (rel, text) in files {
        std::fs::write(vault.join(rel), text).unwrap();
    }
    // Undated but by its file time: 1 January 2020, midday (any time zone keeps the day).
    let noon = SystemTime::UNIX_EPOCH + Duration::from_secs(1_577_880_000);
    std::fs::File::options()
        .write(true)
        .open(vault.join("Ideas.md"))
        .unwrap()
        .set_modified(noon)
        .unwrap();
    let stderr_log = dir.path().join("stderr.log");
    Fixture {
        dir,
        vault,
        stderr_log,
    }
}

fn hit_uris(r: &rmcp::model::CallToolResult) -> Vec<String> {
    uris(&structured(r)["hits"])
}

#[tokio::test]
async fn search_keeps_to_a_period() {
    let fx = journal_vault();
    let c = connect(&fx).await;
    // One day: its daily note in the vault's format, a meeting dated in its name and the
    // week that holds it; never the next day's note, though it matches the words too.
    let day = json!({"query": "lunch", "from": "2021-05-11", "to": "2021-05-11", "limit": 10});
    let got = hit_uris(&call(&c, "search_notes", day).await);
    assert_eq!(got[0], "note://Journal/11.05.2021", "{got:?}");
    for want in [
        "note://Meetings/2021-05-11 Planning",
        "note://Weekly/2021-W19",
    ] {
        assert!(got.iter().any(|u| u == want), "{want} not in {got:?}");
    }
    assert!(
        !got.iter()
            .any(|u| u.contains("12.05.2021") || u == "note://Ideas"),
        "{got:?}"
    );
    // A note about the day that shares no word with the query still comes, after the hits.
    let r = call(
        &c,
        "search_notes",
        json!({"query": "budget", "from": "2021-05-11", "to": "2021-05-11"}),
    )
    .await;
    let hits = structured(&r)["hits"].as_array().unwrap().clone();
    assert_eq!(hits[0]["uri"], "note://Meetings/2021-05-11 Planning");
    assert!(
        hits[1..].iter().all(|h| h["matched"] == "period"),
        "{hits:?}"
    );

    // A month, written as one: the due date, the dated field stays out (June).
    let month = json!({"query": "essay moths", "from": "2021-05", "to": "2021-05"});
    assert_eq!(
        hit_uris(&call(&c, "search_notes", month).await)[0],
        "note://Tasks/Essay"
    );
    let june = json!({"query": "concert", "from": "2021-06-01", "to": "2021-06-30"});
    assert_eq!(
        hit_uris(&call(&c, "search_notes", june).await),
        ["note://Log"]
    );
    let march = json!({"query": "pasta", "from": "2021-03-03", "to": "2021-03-03"});
    assert_eq!(
        hit_uris(&call(&c, "search_notes", march).await),
        ["note://Trips"]
    );
    // The file time dates a note with no other date; only `to` bounds the search.
    let before = json!({"query": "lunch", "to": "2020-12-31"});
    assert_eq!(
        hit_uris(&call(&c, "search_notes", before).await),
        ["note://Ideas"]
    );
}

#[tokio::test]
async fn list_notes_keeps_to_a_period_and_bad_dates_are_refused() {
    let fx = journal_vault();
    let c = connect(&fx).await;
    let r = call(
        &c,
        "list_notes",
        json!({"from": "2021-05-12", "to": "2021-05-31"}),
    )
    .await;
    assert_eq!(
        uris(&structured(&r)["notes"]),
        [
            "note://Journal/12.05.2021",
            "note://Tasks/Essay",
            "note://Weekly/2021-W19"
        ]
    );
    for (args, says) in [
        (
            json!({"query": "lunch", "from": "May 2021"}),
            "`from` is not a date",
        ),
        (
            json!({"query": "lunch", "to": "2021-13-01"}),
            "`to` is not a date",
        ),
        (
            json!({"query": "lunch", "from": "2021-06", "to": "2021-05"}),
            "is after `to`",
        ),
    ] {
        let r = call(&c, "search_notes", args.clone()).await;
        assert_eq!(r.is_error, Some(true), "{args}");
        assert!(text(&r).contains(says), "{args}: {}", text(&r));
    }
    let r = call(&c, "list_notes", json!({"from": "yesterday"})).await;
    assert_eq!(r.is_error, Some(true));
}

/// A note's properties are a passage of their own (after its sections): chosen first where no
/// section shares a word with the query, never over a section that does, unless that section
/// says nothing (tags, dots, a Dataview table); a note whose only properties are internal ones
/// (aliases, tags) has none.
#[tokio::test]
async fn properties_are_a_passage_that_sections_come_before() {
    let fx = journal_vault();
    let files = [
        (
            "Journal/13.05.2021.md",
            "---\nwellbeing:\n  mood: 1\n  mood-notes: gloomy\nsteps: 4120\n---\n# 13 May\n\nRain all day; read a novel.\n",
        ),
        (
            "Style.md",
            "---\ndescription: How to write pages.\naliases: [Writing]\n---\n# Style\n\n## Descriptions\n\nA description has at most 150 characters.\n",
        ),
        (
            "Plain.md",
            "---\ntags: [misc]\naliases: [Simple]\n---\nLentils and barley.\n",
        ),
        (
            "Games/Valheim.md",
            "---\ndeveloper: Iron Gate AB\nprice: 19.99\n---\n#games\n\n# Valheim\n\n....\n\n\
             ## Sessions\n\n```dataview\nLIST FROM [[Valheim]]\n```\n",
        ),
    ];
    std::fs::create_dir_all(fx.vault.join("Games")).unwrap();
    for (rel, body) in files {
        std::fs::write(fx.vault.join(rel), body).unwrap();
    }
    let c = connect(&fx).await;
    let r = call(
        &c,
        "search_notes",
        json!({"query": "how was my mood", "from": "2021-05-13", "to": "2021-05-13"}),
    )
    .await;
    let hit = &structured(&r)["hits"][0];
    assert_eq!(hit["uri"], "note://Journal/13.05.2021");
    assert!(
        hit["passage"]
            .as_str()
            .unwrap()
            .contains("mood-notes: gloomy"),
        "{hit}"
    );
    let r = call(&c, "search_notes", json!({"query": "description length"})).await;
    let hit = &structured(&r)["hits"][0];
    assert_eq!(hit["uri"], "note://Style");
    assert!(
        hit["passage"]
            .as_str()
            .unwrap()
            .starts_with("A description has"),
        "{hit}"
    );
    // The sections under the title say nothing: the properties are the passage shown.
    let r = call(&c, "search_notes", json!({"query": "Valheim sessions"})).await;
    let hit = &structured(&r)["hits"][0];
    assert_eq!(hit["uri"], "note://Games/Valheim");
    assert!(
        hit["passage"].as_str().unwrap().contains("price: 19.99"),
        "{hit}"
    );
    // Every passage of the plain note: its text alone.
    let r = call(
        &c,
        "search_notes",
        json!({"query": "lentils barley", "passages": 3}),
    )
    .await;
    let hits = structured(&r)["hits"].as_array().unwrap().clone();
    let plain: Vec<_> = hits.iter().filter(|h| h["uri"] == "note://Plain").collect();
    assert_eq!(plain.len(), 1, "{hits:?}");
}
