//! The path-attack suite: well over 100 hostile inputs across every tool and `resources/read`.
//! No response may contain a byte of the canary files outside the vault or the absolute temp
//! path, every note reference must fail cleanly, and the server must keep serving.

use crate::common;

use common::*;
use serde_json::json;

fn hostile(abs: &str) -> Vec<String> {
    let mut v: Vec<String> = [
        "../secret/canary",
        "../secret/canary.md",
        "../../secret/canary.md",
        "../../../../../../etc/passwd",
        "/etc/passwd",
        "/etc/shadow",
        "file:///etc/passwd",
        "note://../secret/canary",
        "note:///etc/passwd",
        "note://..%2Fsecret%2Fcanary",
        "note://%2e%2e/secret/canary",
        "%2e%2e/secret/canary",
        "%2E%2E%2Fsecret%2Fcanary",
        "%252e%252e%252fsecret%252fcanary",
        "note://%252e%252e/secret/canary",
        "..%2fsecret%2fcanary",
        "..%5csecret%5ccanary",
        "..\\secret\\canary",
        "..\\..\\secret\\canary.md",
        "C:\\Windows\\win.ini",
        "C:/Windows/win.ini",
        "c:secret",
        "\\\\server\\share\\canary",
        "Home\0.md",
        "Home.md\0../../secret/canary",
        "%00",
        "note://Home%00.md",
        "escape",
        "escape.md",
        "note://escape",
        "Relative Escape",
        "EscapeDir/canary",
        "EscapeDir/canary.md",
        "note://EscapeDir/canary",
        "SiblingDir/Secret",
        "SiblingDir/Secret.md",
        "../vault-secret/Secret",
        "../vault-secret/Secret.md",
        "note://../vault-secret/Secret",
        "LoopDir/Home",
        "LoopDir/LoopDir/Home",
        ".obsidian/hidden",
        ".obsidian/hidden.md",
        ".obsidian/app.json",
        "note://.obsidian/hidden",
        ".trash/Deleted",
        "note://.trash/Deleted",
        ".hidden-note",
        ".hidden-note.md",
        "Projects/../../secret/canary",
        "Projects/%2e%2e/%2e%2e/secret/canary",
        "Projects/./../../secret/canary",
        "~/.ssh/id_rsa",
        "~root",
        "....//....//secret/canary",
        "..%c0%af..%c0%afsecret%c0%afcanary",
        "..%252f..%252fsecret",
        "note://",
        "note:",
        "",
        "   ",
        "[[../secret/canary]]",
        "![[../secret/canary]]",
        "[[/etc/passwd]]",
        "`../secret/canary`",
        "\"../secret/canary\"",
        "secret/canary",
        "canary",
        "Canary",
        "Secret",
        "Binary",
        "Binary.md",
        "bad-\u{fffd}-name",
        "Big Note/../../secret/canary",
        "Home/../../secret/canary",
        "http://localhost/etc/passwd",
        "smb://server/share",
        "data:text/plain,hi",
        "javascript:alert(1)",
        "note://localhost/etc/passwd",
        "note:////etc/passwd",
        "note:\\\\..\\secret",
        "/proc/self/environ",
        "/proc/self/cwd/secret/canary.md",
        "/dev/zero",
        "/dev/stdin",
        "note://%2Fetc%2Fpasswd",
        "note://%5C..%5Csecret",
        "Projects/..",
        "Projects/../..",
        "..",
        ".",
        "./Home",
        "Home/.",
        "note://Projects/%2E%2E/%2E%2E/secret/canary",
        "%c0%ae%c0%ae/secret/canary",
        r"\\?\C:\secret",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend([
        format!("{abs}/secret/canary.md"),
        format!("{abs}/secret/canary.txt"),
        format!("{abs}/vault/Home.md"),
        format!("{abs}/vault/../secret/canary.md"),
        format!("{abs}/vault-secret/Secret.md"),
        format!("file://{abs}/secret/canary.md"),
        format!("note://{abs}/secret/canary"),
        format!("note://{}/secret/canary", abs.trim_start_matches('/')),
        format!("{}/secret/canary", abs.trim_start_matches('/')),
        format!("{}/vault/Home", abs.trim_start_matches('/')),
        "a/".repeat(5000),
        "%".repeat(300),
        "\u{202e}../secret/canary".to_string(),
    ]);
    v
}

fn check(fx: &Fixture, what: &str, s: &str) {
    assert!(!s.contains(CANARY), "canary leaked via {what}: {s}");
    assert!(!s.contains("CANARY"), "canary leaked via {what}: {s}");
    assert!(
        !s.contains(&fx.abs()),
        "absolute path leaked via {what}: {s}"
    );
    assert!(!s.contains("/tmp/"), "absolute path leaked via {what}: {s}");
    // obsidian:// links percent-encode their path: an absolute one would show as `%2Ftmp%2F`.
    assert!(
        !s.to_ascii_lowercase().contains("%2ftmp%2f"),
        "absolute path leaked (encoded) via {what}: {s}"
    );
}

#[tokio::test]
async fn hostile_inputs_never_leak() {
    let fx = fixture();
    let c = connect(&fx).await;
    let inputs = hostile(&fx.abs());
    let mut attempts = 0;
    for input in &inputs {
        for tool in ["read_note", "get_links"] {
            let r = try_call(&c, tool, json!({"uri": input})).await;
            attempts += 1;
            let s = match &r {
                Ok(res) => {
                    assert_eq!(
                        res.is_error,
                        Some(true),
                        "{tool}({input:?}) resolved: {}",
                        text(res)
                    );
                    serde_json::to_string(res).unwrap()
                }
                Err(e) => e.clone(),
            };
            check(&fx, &format!("{tool}({input:?})"), &s);
        }
        let r = read_resource(&c, input).await;
        attempts += 1;
        match r {
            Ok(s) => panic!("resources/read({input:?}) succeeded: {s}"),
            Err(e) => check(&fx, &format!("resources/read({input:?})"), &e),
        }
        for (tool, args) in [
            ("read_note", json!({"uri": "Home", "section": input})),
            ("search_notes", json!({"query": input})),
            (
                "search_notes",
                json!({"query": "canary secret", "folder": input}),
            ),
            ("search_notes", json!({"query": "canary", "tag": input})),
            ("list_notes", json!({"folder": input})),
            ("list_notes", json!({"tag": input})),
            ("list_notes", json!({"cursor": input})),
            ("list_tags", json!({"prefix": input})),
        ] {
            let r = try_call(&c, tool, args.clone()).await;
            attempts += 1;
            let s = match &r {
                Ok(res) => serde_json::to_string(res).unwrap(),
                Err(e) => e.clone(),
            };
            check(&fx, &format!("{tool}({args})"), &s);
        }
    }
    // Wrong types and oversized values are protocol or tool errors, never crashes.
    for (tool, args) in [
        ("read_note", json!({"uri": 42})),
        ("read_note", json!({"uri": ["../secret/canary"]})),
        ("read_note", json!({"uri": {"path": "../secret/canary"}})),
        ("read_note", json!({})),
        ("read_note", json!({"uri": "Home", "offset": -5})),
        ("read_note", json!({"uri": "Home", "offset": "../secret"})),
        ("read_note", json!({"uri": "Home", "max_chars": 1e30})),
        ("read_note", json!({"uri": "Home", "offset": 99999999})),
        ("search_notes", json!({"query": "x".repeat(100_000)})),
        ("search_notes", json!({"query": null})),
        ("list_notes", json!({"limit": "lots"})),
        ("get_links", json!({"uri": null})),
    ] {
        let r = try_call(&c, tool, args.clone()).await;
        attempts += 1;
        let s = match &r {
            Ok(res) => serde_json::to_string(res).unwrap(),
            Err(e) => e.clone(),
        };
        check(&fx, &format!("{tool}({args})"), &s);
    }
    assert!(attempts >= 100, "only {attempts} attempts");
    assert!(inputs.len() >= 100, "only {} hostile inputs", inputs.len());

    // Still serving, and the listing never shows anything outside.
    let s = structured(&call(&c, "search_notes", json!({"query": "solar pump Kettleby"})).await);
    assert_eq!(s["hits"][0]["uri"], "note://Projects/Alpha");
    let all = c.list_all_resources().await.unwrap();
    for r in &all {
        check(&fx, "resources/list", &r.uri);
        assert!(
            !r.uri.contains("escape") && !r.uri.contains("Secret") && !r.uri.contains("canary")
        );
    }
    c.cancel().await.unwrap();
    let log = std::fs::read_to_string(&fx.stderr_log).unwrap();
    check(&fx, "stderr log", &log);
}
