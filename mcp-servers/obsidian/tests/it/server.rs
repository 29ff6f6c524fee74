//! End-to-end tests: the real `obsidian-kb` binary over stdio, driven by rmcp's client.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn tools_are_listed_with_object_schemas() {
    let fx = fixture();
    let c = connect(&fx).await;
    let tools = c.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "get_links",
            "list_notes",
            "list_tags",
            "read_note",
            "search_notes"
        ]
    );
    for t in &tools {
        assert_eq!(
            t.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            t.name
        );
        let out = t.output_schema.as_ref().expect("output schema");
        assert_eq!(out.get("type"), Some(&json!("object")), "{}", t.name);
        assert_eq!(
            t.annotations.as_ref().and_then(|a| a.read_only_hint),
            Some(true)
        );
    }
    let search = tools.iter().find(|t| t.name == "search_notes").unwrap();
    assert_eq!(search.input_schema["required"], json!(["query"]));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn search_ranks_and_filters() {
    let fx = fixture();
    let c = connect(&fx).await;
    let r = call(
        &c,
        "search_notes",
        json!({"query": "How many litres per hour does the pump deliver?"}),
    )
    .await;
    let hits = structured(&r)["hits"].clone();
    assert_eq!(hits[0]["uri"], "note://Projects/Alpha", "{hits}");
    assert!(hits[0]["passage"].as_str().unwrap().contains("litres"));
    assert_eq!(hits[0]["heading_path"], json!(["Alpha"]));
    assert!(text(&r).contains("note://Projects/Alpha"));

    // Title/alias matches weigh more than body mentions.
    let r = call(&c, "search_notes", json!({"query": "beta"})).await;
    assert_eq!(structured(&r)["hits"][0]["uri"], "note://Projects/Beta");
    let r = call(&c, "search_notes", json!({"query": "second project"})).await;
    assert_eq!(structured(&r)["hits"][0]["uri"], "note://Projects/Beta");

    // CJK, stemming, emoji names.
    let r = call(&c, "search_notes", json!({"query": "東京タワー"})).await;
    assert_eq!(structured(&r)["hits"][0]["uri"], "note://日本語ノート");
    let r = call(&c, "search_notes", json!({"query": "富士山"})).await;
    assert_eq!(structured(&r)["hits"][0]["uri"], "note://日本語ノート");
    // Korean and Chinese questions, as a person types them, find their note and its passage.
    let r = call(
        &c,
        "search_notes",
        json!({"query": "김치찌개에 두부는 언제 넣나요?"}),
    )
    .await;
    let hit = &structured(&r)["hits"][0];
    assert_eq!(hit["uri"], "note://한국어 노트", "{hit}");
    assert_eq!(
        hit["heading_path"],
        json!(["한국어 노트", "김치찌개"]),
        "{hit}"
    );
    assert!(hit["passage"].as_str().unwrap().contains("5분"), "{hit}");
    let r = call(&c, "search_notes", json!({"query": "泡绿茶用多少度的水？"})).await;
    let hit = &structured(&r)["hits"][0];
    assert_eq!(hit["uri"], "note://中文笔记", "{hit}");
    assert!(hit["passage"].as_str().unwrap().contains("八十度"), "{hit}");
    let r = call(&c, "search_notes", json!({"query": "launching rockets"})).await;
    assert_eq!(structured(&r)["hits"][0]["uri"], "note://🚀 Launch");

    // Broken YAML still has a searchable body; the 300 KB note too, its passage the match's.
    let r = call(&c, "search_notes", json!({"query": "zanzibar marmalade"})).await;
    assert_eq!(structured(&r)["hits"][0]["uri"], "note://Broken YAML");
    let r = call(&c, "search_notes", json!({"query": "quokka"})).await;
    let hit = structured(&r)["hits"][0].clone();
    assert_eq!(hit["uri"], "note://Big Note");
    let passage = hit["passage"].as_str().unwrap();
    assert!(
        passage.contains("quokka") && passage.chars().count() <= obsidian_kb::api::PASSAGE_CHARS,
        "{passage}"
    );
    assert_eq!(hit["heading_path"], json!(["Big Note"]));

    // Filters and limits (limit as a string is forgiven).
    let r = call(
        &c,
        "search_notes",
        json!({"query": "meeting", "folder": "Work"}),
    )
    .await;
    assert_eq!(uris(&structured(&r)["hits"]), ["note://Work/Meeting"]);
    let r = call(
        &c,
        "search_notes",
        json!({"query": "project", "tag": "project", "limit": "10"}),
    )
    .await;
    let u = uris(&structured(&r)["hits"]);
    assert!(
        u.contains(&"note://Projects/Alpha".to_string())
            && u.contains(&"note://Projects/Beta".to_string())
    );
    assert!(u.iter().all(|x| x.starts_with("note://Projects/")), "{u:?}");
    let r = call(&c, "search_notes", json!({"query": "the", "limit": 1})).await;
    assert!(structured(&r)["hits"].as_array().unwrap().len() <= 1);

    // Hidden notes never show up.
    for q in [
        "dotfolderonly",
        "trashonly",
        "dotfileonly",
        "nonutf8only",
        "garbage",
    ] {
        let r = call(&c, "search_notes", json!({"query": q})).await;
        assert!(structured(&r)["hits"].as_array().unwrap().is_empty(), "{q}");
    }
    let r = call(&c, "search_notes", json!({"query": "  "})).await;
    assert_eq!(r.is_error, Some(true));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn list_notes_pages_stably() {
    let fx = fixture();
    let c = connect(&fx).await;
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"limit": 3});
        if let Some(cur) = &cursor {
            args["cursor"] = json!(cur);
        }
        let s = structured(&call(&c, "list_notes", args).await);
        all.extend(uris(&s["notes"]));
        match s["next_cursor"].as_str() {
            Some(n) => cursor = Some(n.to_string()),
            None => break,
        }
    }
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted, "stable path order");
    sorted.dedup();
    assert_eq!(all.len(), sorted.len(), "no duplicates across pages");
    for want in [
        "note://Home",
        "note://Projects/Alpha",
        "note://Café",
        "note://日本語ノート",
        "note://Linked Old",
        "note://Big Note",
    ] {
        assert!(
            all.contains(&want.to_string()),
            "{want} missing from {all:?}"
        );
    }
    for gone in [
        "hidden", "Deleted", "escape", "Escape", "canary", "Secret", "bad-", "Binary", "LoopDir",
        "Board",
    ] {
        assert!(
            !all.iter().any(|u| u.contains(gone)),
            "{gone} listed: {all:?}"
        );
    }
    assert_eq!(all.len(), 20, "{all:?}");

    let s = structured(
        &call(
            &c,
            "list_notes",
            json!({"folder": "Projects", "tag": "project"}),
        )
        .await,
    );
    assert_eq!(
        uris(&s["notes"]),
        [
            "note://Projects/Alpha",
            "note://Projects/Beta",
            "note://Projects/Index"
        ]
    );
    let first = &s["notes"][0];
    assert_eq!(first["title"], "Alpha");
    assert!(first["bytes"].as_u64().unwrap() > 100);
    assert!(first["modified"].as_str().unwrap().ends_with('Z'));
    let r = call(&c, "list_notes", json!({"cursor": "not-a-cursor"})).await;
    assert_eq!(r.is_error, Some(true));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn read_note_accepts_every_reference_form() {
    let fx = fixture();
    let c = connect(&fx).await;
    for r in [
        "note://Projects/Beta",
        "note://Projects%2FBeta",
        "Projects/Beta",
        "Projects/Beta.md",
        "Beta",
        "beta",
        "[[Beta]]",
        "Second Project",
        "note://Second%20Project",
        " \"Beta\" ",
        "Beta#Goals",
    ] {
        let res = call(&c, "read_note", json!({"uri": r})).await;
        let s = structured(&res);
        assert_eq!(s["uri"], "note://Projects/Beta", "{r}");
        assert_eq!(s["frontmatter"]["aliases"], json!(["Second Project"]));
    }
    // NFD on disk, NFC (or NFD) asked.
    for r in ["Café", "Cafe\u{301}", "note://Caf%C3%A9"] {
        let s = structured(&call(&c, "read_note", json!({"uri": r})).await);
        assert_eq!(s["uri"], "note://Café", "{r:?}");
    }
    let s = structured(&call(&c, "read_note", json!({"uri": "日本語ノート"})).await);
    assert!(s["content"].as_str().unwrap().contains("333"));
    let s = structured(&call(&c, "read_note", json!({"uri": "🚀 Launch"})).await);
    assert!(s["content"].as_str().unwrap().contains("rocket club"));
    // In-vault symlink is followed.
    let s = structured(&call(&c, "read_note", json!({"uri": "Linked Old"})).await);
    assert!(s["content"].as_str().unwrap().contains("typewriters"));

    // Ambiguous names list candidates.
    let r = call(&c, "read_note", json!({"uri": "Meeting"})).await;
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(
        t.contains("note://Personal/Meeting") && t.contains("note://Work/Meeting"),
        "{t}"
    );
    let r = call(&c, "read_note", json!({"uri": "No Such Note"})).await;
    assert_eq!(r.is_error, Some(true));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn read_note_sections_paging_and_bad_files() {
    let fx = fixture();
    let c = connect(&fx).await;
    let s = structured(&call(&c, "read_note", json!({"uri": "Beta", "section": "Goals"})).await);
    let content = s["content"].as_str().unwrap();
    assert!(
        content.starts_with("## Goals") && content.contains("Q2") && !content.contains("Risks"),
        "{content}"
    );
    let s = structured(&call(&c, "read_note", json!({"uri": "Beta", "section": "q1"})).await);
    assert_eq!(
        s["content"].as_str().unwrap().trim(),
        "### Q1\n\nPrototype the valve board."
    );
    let r = call(&c, "read_note", json!({"uri": "Beta", "section": "Nope"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("## Goals"));

    // A 300 KB note pages by offset and reassembles exactly.
    let mut got = String::new();
    let mut offset = 0u64;
    let mut calls = 0;
    loop {
        let s = structured(
            &call(
                &c,
                "read_note",
                json!({"uri": "Big Note", "offset": offset, "max_chars": 50000}),
            )
            .await,
        );
        got.push_str(s["content"].as_str().unwrap());
        calls += 1;
        match s["next_offset"].as_u64() {
            Some(n) => offset = n,
            None => break,
        }
    }
    let disk = std::fs::read_to_string(fx.vault.join("Big Note.md")).unwrap();
    assert_eq!(
        got,
        disk.split_once("---\n# Big")
            .map(|(_, b)| format!("# Big{b}"))
            .unwrap()
    );
    assert!(calls >= 6);
    let s = structured(&call(&c, "read_note", json!({"uri": "Big Note"})).await);
    assert_eq!(s["content"].as_str().unwrap().chars().count(), 6000);
    assert_eq!(s["next_offset"], 6000);

    // Broken YAML: body served, frontmatter reported unreadable.
    let s = structured(&call(&c, "read_note", json!({"uri": "Broken YAML"})).await);
    assert_eq!(s["frontmatter"], Value::Null);
    assert!(s["frontmatter_error"].as_str().unwrap().contains("YAML"));
    assert!(s["content"].as_str().unwrap().contains("zanzibar"));

    // Binary .md is not a note.
    let r = call(&c, "read_note", json!({"uri": "Binary"})).await;
    assert_eq!(r.is_error, Some(true));

    // Deleted between index and read: a clear error, and the server keeps serving.
    std::fs::remove_file(fx.vault.join("Other Note.md")).unwrap();
    let r = call(&c, "read_note", json!({"uri": "Other Note"})).await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    let s = structured(&call(&c, "read_note", json!({"uri": "Home"})).await);
    assert_eq!(s["uri"], "note://Home");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn links_and_backlinks() {
    let fx = fixture();
    let c = connect(&fx).await;
    let s = structured(&call(&c, "get_links", json!({"uri": "Home"})).await);
    let out: Vec<(String, Option<String>)> = s["outgoing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["target"].as_str().unwrap().to_string(),
                o["uri"].as_str().map(String::from),
            )
        })
        .collect();
    let find = |t: &str| {
        out.iter()
            .find(|(x, _)| x == t)
            .unwrap_or_else(|| panic!("{t} not in {out:?}"))
            .1
            .clone()
    };
    assert_eq!(
        find("Projects/Alpha").as_deref(),
        Some("note://Projects/Alpha")
    );
    assert_eq!(find("Alpha").as_deref(), Some("note://Projects/Alpha"));
    assert_eq!(find("Beta#Goals").as_deref(), Some("note://Projects/Beta"));
    assert_eq!(
        find("Beta#Goals#Q1").as_deref(),
        Some("note://Projects/Beta")
    );
    assert_eq!(find("#Local heading").as_deref(), Some("note://Home"));
    assert_eq!(find("Gamma#^block1").as_deref(), Some("note://Gamma"));
    assert_eq!(
        find("Projects/Beta.md").as_deref(),
        Some("note://Projects/Beta")
    );
    assert_eq!(find("Other Note.md").as_deref(), Some("note://Other Note"));
    assert_eq!(find("Not Written Yet"), None);
    assert_eq!(find("pic.png"), None);
    assert_eq!(find("doc.pdf#page=3"), None);
    assert!(!out.iter().any(|(t, _)| t.contains("example.com")));
    assert!(
        !out.iter()
            .any(|(t, _)| t.contains("Hidden") || t.contains("Not A Link"))
    );

    let s = structured(&call(&c, "get_links", json!({"uri": "note://Projects/Alpha"})).await);
    let back = uris(&s["backlinks"]);
    for want in [
        "note://Home",
        "note://Projects/Beta",
        "note://Frontmatter Links",
        "note://🚀 Launch",
    ] {
        assert!(back.contains(&want.to_string()), "{want} not in {back:?}");
    }
    // Frontmatter links are outgoing links too.
    let s = structured(&call(&c, "get_links", json!({"uri": "Frontmatter Links"})).await);
    let targets: Vec<&str> = s["outgoing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["Alpha", "Home", "Missing From Frontmatter"]);
    // Relative markdown links and closest-name resolution from a deep folder.
    let s = structured(&call(&c, "get_links", json!({"uri": "Deep Note"})).await);
    let targets: Vec<(&str, &str)> = s["outgoing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["target"].as_str().unwrap(),
                o["uri"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert!(
        targets.contains(&("../../../Home.md", "note://Home")),
        "{targets:?}"
    );
    assert!(
        targets
            .iter()
            .any(|(t, u)| *t == "Meeting" && u.ends_with("/Meeting")),
        "{targets:?}"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn tags_follow_obsidian_rules() {
    let fx = fixture();
    let c = connect(&fx).await;
    let s = structured(&call(&c, "list_tags", json!({})).await);
    let tags: Vec<(String, u64)> = s["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tag"].as_str().unwrap().to_string(),
                t["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let has = |t: &str| tags.iter().any(|(x, _)| x == t);
    for t in [
        "hub",
        "meta/index",
        "project/alpha",
        "project/beta",
        "project",
        "active",
        "y1984",
        "1990s",
        "chain",
        "linked",
        "gamma",
        "callout-tag",
        "日本語",
        "旅行",
        "한국어",
        "요리",
        "中文",
        "茶",
        "🚀launch",
        "space",
        "coffee",
        "still-indexed",
        "old-style",
        "work",
        "archive",
        "big",
    ] {
        assert!(has(t), "missing tag {t}: {tags:?}");
    }
    for t in [
        "1984",
        "b",
        "paren",
        "comment-tag",
        "not-a-tag",
        "inline-tag",
        "indented-code-tag",
        "math-tag",
        "display-math",
        "html-comment-tag",
        "html-block-tag",
        "dcddde",
        "frag",
        "local",
        "bad",
        "",
    ] {
        assert!(!has(t), "unexpected tag {t:?}: {tags:?}");
    }
    // Case-insensitive: frontmatter `Active` and body `#Active` count once per note.
    assert!(tags.contains(&("active".to_string(), 1)));
    let s = structured(&call(&c, "list_tags", json!({"prefix": "#Project"})).await);
    let names: Vec<&str> = s["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tag"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("project")));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn resources_list_read_and_template() {
    let fx = fixture();
    let c = connect(&fx).await;
    let all = c.list_all_resources().await.unwrap();
    // The status first, then every note.
    assert_eq!(all.len(), 1 + 20);
    assert_eq!(all[0].uri, "obsidian-kb://status");
    assert_eq!(all[0].mime_type.as_deref(), Some("application/json"));
    let status = status(&c).await;
    assert_eq!(status["notes"], 20);
    assert_eq!(status["vault_available"], true);
    assert_eq!(status["ranking"], "lexical");
    assert_eq!(
        status["embedding"],
        Value::Null,
        "no model: no embedding status"
    );
    let home = all.iter().find(|r| r.uri == "note://Home").unwrap();
    assert_eq!(home.mime_type.as_deref(), Some("text/markdown"));
    assert!(all.iter().any(|r| r.uri == "note://Other%20Note"));
    let body = read_resource(&c, "note://Other%20Note").await.unwrap();
    assert!(body.contains("photosynthesis"));
    let body = read_resource(&c, "note://Projects/Alpha").await.unwrap();
    assert!(body.contains("Kettleby") && body.contains("note://Projects/Alpha"));
    assert!(read_resource(&c, "note://Nope").await.is_err());
    let templates = c.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "note://{path}");
    c.cancel().await.unwrap();
}

/// A vault of its own (the shared fixture's note counts stay as they are): a folder name and
/// a note name that need percent-encoding, nested sections, a long section, many small notes.
fn passage_vault() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("My Vault");
    std::fs::create_dir_all(vault.join("Recipes")).unwrap();
    std::fs::create_dir_all(vault.join("Filler")).unwrap();
    std::fs::write(
        vault.join("Recipes/Bread & Butter.md"),
        "---\ntags: [food]\n---\n# Bread & Butter\n\nNotes on baking at home.\n\n\
         ## Sourdough\n\n### Starter\nFeed the starter with rye flour every morning; it doubles \
         in six hours.\n\n### Baking\nBake at 250 °C in a Dutch oven for 20 minutes with the lid \
         on, then 25 minutes without.\n\n## Butter\nChurn cream until the buttermilk separates.\n",
    )
    .unwrap();
    let mut long = String::from("# Logbook\n\n## Voyage\n\n");
    for i in 0..40 {
        let extra = if i == 27 {
            " Today the crew finally reached the zeppelin hangar at dawn."
        } else {
            ""
        };
        long.push_str(&format!(
            "Entry {i}: the ship sailed on under a grey sky and calm seas, and the log was \
             kept as every day before.{extra}\n\n"
        ));
    }
    std::fs::write(vault.join("Logbook.md"), long).unwrap();
    for i in 0..60 {
        std::fs::write(
            vault.join(format!("Filler/Filler {i:02}.md")),
            format!("Filler note {i} about marmots.\n"),
        )
        .unwrap();
    }
    let stderr_log = dir.path().join("stderr.log");
    Fixture {
        dir,
        vault,
        stderr_log,
    }
}

#[tokio::test]
async fn search_returns_the_matching_section_with_its_heading_path_and_link() {
    let fx = passage_vault();
    let c = connect(&fx).await;
    for (q, path, starts) in [
        (
            "how long should bread bake in the oven",
            ["Bread & Butter", "Sourdough", "Baking"].as_slice(),
            "Bake at 250 °C",
        ),
        (
            "what flour feeds the starter",
            &["Bread & Butter", "Sourdough", "Starter"],
            "Feed the starter",
        ),
        (
            "churning buttermilk",
            &["Bread & Butter", "Butter"],
            "Churn cream",
        ),
    ] {
        let r = call(&c, "search_notes", json!({"query": q})).await;
        let s = structured(&r);
        let hit = &s["hits"][0];
        assert_eq!(hit["uri"], "note://Recipes/Bread & Butter", "{q}: {hit}");
        assert_eq!(hit["heading_path"], json!(path), "{q}: {hit}");
        let passage = hit["passage"].as_str().unwrap();
        assert!(
            passage.starts_with(starts) && !passage.contains('#'),
            "{q}: {passage}"
        );
        assert_eq!(s["hits"].as_array().unwrap().len(), 1, "one hit per note");
    }

    // The link: vault folder name and note path percent-encoded, `/` too, at the heading.
    let r = call(&c, "search_notes", json!({"query": "Dutch oven"})).await;
    let hit = &structured(&r)["hits"][0];
    assert_eq!(
        hit["link"],
        "obsidian://open?vault=My%20Vault&file=Recipes%2FBread%20%26%20Butter%23Baking"
    );
    // The text for the model: numbered, title then the path (the `# Title` heading not
    // repeated), the URI, then the passage.
    assert!(
        text(&r).starts_with(
            "1. Bread & Butter › Sourdough › Baking (note://Recipes/Bread & Butter)\nBake at 250 °C"
        ),
        "{}",
        text(&r)
    );

    // More passages per note: the best one first, then others of the same note, each a hit
    // of its own with its own heading and link; at most 3.
    let bake = "how long should bread bake in the oven";
    for (asked, given) in [(2, 2), (9, 3)] {
        let r = call(
            &c,
            "search_notes",
            json!({"query": bake, "limit": 1, "passages": asked}),
        )
        .await;
        let hits = structured(&r)["hits"].as_array().unwrap().clone();
        assert_eq!(hits.len(), given, "{hits:?}");
        assert!(
            hits.iter()
                .all(|h| h["uri"] == "note://Recipes/Bread & Butter")
        );
        assert_eq!(
            hits[0]["heading_path"],
            json!(["Bread & Butter", "Sourdough", "Baking"])
        );
        let paths: std::collections::HashSet<String> =
            hits.iter().map(|h| h["heading_path"].to_string()).collect();
        assert_eq!(paths.len(), given, "each a different passage: {hits:?}");
        assert_ne!(hits[0]["link"], hits[1]["link"]);
        assert!(text(&r).contains("\n\n2. Bread & Butter"), "{}", text(&r));
    }

    // A long section: the part holding the answer, within the cap, under the section's path.
    let r = call(&c, "search_notes", json!({"query": "zeppelin hangar"})).await;
    let hit = &structured(&r)["hits"][0];
    assert_eq!(hit["heading_path"], json!(["Logbook", "Voyage"]));
    let passage = hit["passage"].as_str().unwrap();
    assert!(
        passage.contains("zeppelin hangar")
            && passage.chars().count() <= obsidian_kb::api::PASSAGE_CHARS
            && passage.starts_with("Entry "),
        "{passage}"
    );
    assert_eq!(
        hit["link"],
        "obsidian://open?vault=My%20Vault&file=Logbook%23Voyage"
    );

    // An excerpt: the sentences that bear on the query, within the bound (the ellipses aside),
    // each from the passage, which stays whole; the text for the model shows the excerpt. A
    // bound under 50 is taken as 50.
    for (asked, bound) in [(120, 120), (10, 50)] {
        let r = call(
            &c,
            "search_notes",
            json!({"query": "zeppelin hangar", "excerpt": asked}),
        )
        .await;
        let hit = &structured(&r)["hits"][0];
        let excerpt = hit["excerpt"].as_str().unwrap();
        assert!(excerpt.contains("zeppelin hangar"), "{excerpt}");
        let pieces: Vec<&str> = excerpt
            .split('…')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        assert!(!pieces.is_empty(), "{excerpt}");
        for piece in &pieces {
            assert!(passage.contains(piece), "{piece:?} not in {passage}");
        }
        let kept: usize = pieces.iter().map(|p| p.chars().count()).sum();
        assert!(kept <= bound, "{kept} > {bound}: {excerpt}");
        assert_eq!(hit["passage"], passage);
        assert!(text(&r).contains(excerpt), "{}", text(&r));
        assert!(!text(&r).contains(passage), "{}", text(&r));
    }

    // Hits are separated by a blank line; the limit is clamped to 1..=50.
    let r = call(&c, "search_notes", json!({"query": "marmots", "limit": 3})).await;
    assert_eq!(text(&r).matches("\n\n").count(), 2, "{}", text(&r));
    assert!(text(&r).contains("\nFiller note"), "{}", text(&r));
    let r = call(
        &c,
        "search_notes",
        json!({"query": "marmots", "limit": 500}),
    )
    .await;
    assert_eq!(structured(&r)["hits"].as_array().unwrap().len(), 50);
    let r = call(&c, "search_notes", json!({"query": "marmots", "limit": 0})).await;
    assert_eq!(structured(&r)["hits"].as_array().unwrap().len(), 1);

    // read_note links to the note, or to the section's heading as written in the note.
    let s = structured(&call(&c, "read_note", json!({"uri": "Bread & Butter"})).await);
    assert_eq!(
        s["link"],
        "obsidian://open?vault=My%20Vault&file=Recipes%2FBread%20%26%20Butter"
    );
    let s = structured(
        &call(
            &c,
            "read_note",
            json!({"uri": "Bread & Butter", "section": "## baking"}),
        )
        .await,
    );
    assert!(s["content"].as_str().unwrap().starts_with("### Baking"));
    assert_eq!(
        s["link"],
        "obsidian://open?vault=My%20Vault&file=Recipes%2FBread%20%26%20Butter%23Baking"
    );
    c.cancel().await.unwrap();
}

async fn eventually(c: &Client, query: &str, want: Option<&str>) -> bool {
    for _ in 0..60 {
        let s = structured(&call(c, "search_notes", json!({"query": query})).await);
        let u = uris(&s["hits"]);
        let ok = match want {
            Some(w) => u.first().map(String::as_str) == Some(w),
            None => u.is_empty(),
        };
        if ok {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn watcher_follows_create_change_rename_delete() {
    let fx = fixture();
    let c = connect(&fx).await;
    std::fs::write(
        fx.vault.join("Projects/Fresh.md"),
        "# Fresh\n\nA brand new xylophone note.\n",
    )
    .unwrap();
    assert!(
        eventually(&c, "xylophone", Some("note://Projects/Fresh")).await,
        "create"
    );
    std::fs::write(
        fx.vault.join("Projects/Fresh.md"),
        "# Fresh\n\nNow about a vibraphone.\n",
    )
    .unwrap();
    assert!(
        eventually(&c, "vibraphone", Some("note://Projects/Fresh")).await,
        "change"
    );
    assert!(eventually(&c, "xylophone", None).await, "old text gone");
    std::fs::rename(
        fx.vault.join("Projects/Fresh.md"),
        fx.vault.join("Work/Renamed.md"),
    )
    .unwrap();
    assert!(
        eventually(&c, "vibraphone", Some("note://Work/Renamed")).await,
        "rename"
    );
    std::fs::create_dir_all(fx.vault.join("New Folder")).unwrap();
    std::fs::rename(
        fx.vault.join("Work/Renamed.md"),
        fx.vault.join("New Folder/Moved.md"),
    )
    .unwrap();
    assert!(
        eventually(&c, "vibraphone", Some("note://New Folder/Moved")).await,
        "move"
    );
    std::fs::remove_dir_all(fx.vault.join("New Folder")).unwrap();
    assert!(eventually(&c, "vibraphone", None).await, "delete");
    // Hidden folders stay invisible while watching.
    std::fs::write(fx.vault.join(".obsidian/late.md"), "# Late\n\nwombat\n").unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(eventually(&c, "wombat", None).await);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn logs_carry_no_absolute_paths() {
    let fx = fixture();
    let c = connect(&fx).await;
    let _ = call(&c, "read_note", json!({"uri": "Binary"})).await;
    c.cancel().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let log = std::fs::read_to_string(&fx.stderr_log).unwrap();
    assert!(log.contains("vault indexed"), "{log}");
    assert!(log.contains("symlink leaves the vault"), "{log}");
    assert!(!log.contains(&fx.abs()), "absolute path in logs:\n{log}");
    assert!(!log.contains(CANARY));
}

#[tokio::test]
async fn sample_vault_answers_demo_questions() {
    let dir = tempfile::tempdir().unwrap();
    let stderr_log = dir.path().join("stderr.log");
    let fx = Fixture {
        vault: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sample-vault"),
        dir,
        stderr_log,
    };
    let c = connect(&fx).await;
    for (q, want) in [
        (
            "Where is the midterm exam?",
            "note://Exam Prep/Exam Schedule",
        ),
        (
            "How long is human mitochondrial DNA?",
            "note://Cells/Mitochondria",
        ),
        (
            "What are the phases of mitosis?",
            "note://Processes/Mitosis",
        ),
        (
            "When are Dr Okafor's office hours?",
            "note://People/Dr Okafor",
        ),
        (
            "where does the calvin cycle happen",
            "note://Processes/Photosynthesis",
        ),
    ] {
        let s = structured(&call(&c, "search_notes", json!({"query": q, "limit": 3})).await);
        assert_eq!(s["hits"][0]["uri"], want, "{q}: {}", s["hits"]);
    }
    // The answer sits in one section of a multi-section note: that section's passage.
    let s = structured(
        &call(
            &c,
            "search_notes",
            json!({"query": "where does the calvin cycle happen"}),
        )
        .await,
    );
    let hit = &s["hits"][0];
    assert_eq!(
        hit["heading_path"],
        json!(["Photosynthesis", "Calvin cycle"])
    );
    assert!(hit["passage"].as_str().unwrap().contains("stroma"), "{hit}");
    assert_eq!(
        hit["link"],
        "obsidian://open?vault=sample-vault&file=Processes%2FPhotosynthesis%23Calvin%20cycle"
    );
    let s = structured(&call(&c, "list_notes", json!({})).await);
    assert_eq!(s["notes"].as_array().unwrap().len(), 12);
    c.cancel().await.unwrap();
}
