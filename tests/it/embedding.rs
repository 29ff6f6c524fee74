//! The first hour with a vault: `recall index`, and what a model command does on a vault whose
//! passages are not all embedded yet. Real SmolLM2, the real bundled vault server and the real
//! all-MiniLM-L6-v2 embedder, each run on a vector cache of its own.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// `recall ARGS` on the fixture vault with the vector cache under `cache` (XDG_CACHE_HOME).
fn recall_with_cache(cache: &Path, args: &[&str]) -> Output {
    let embedding_model = common::minilm();
    Command::new(env!("CARGO_BIN_EXE_recall"))
        .args(args)
        .args(["--vault", &common::fixture_vault()])
        .args(["--embedding-model", embedding_model.to_str().unwrap()])
        .env_remove("RECALL_VAULT")
        .env_remove("RECALL_MODEL")
        .env_remove("RECALL_ENGINE")
        .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
        .env("XDG_CACHE_HOME", cache)
        .env("HF_HUB_OFFLINE", "1")
        .env("RECALL_PROMPT_CACHE_DIR", cache.join("prompts"))
        .output()
        .expect("recall runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// The notes the opening search returned, in rank order.
fn retrieved(report: &Value) -> Vec<Value> {
    let step = &report["steps"][0];
    assert_eq!(step["kind"], "retrieve", "{report:#}");
    step["calls"][0]["notes"].as_array().unwrap().clone()
}

fn ask(cache: &Path, extra: &[&str]) -> Output {
    let model = common::smollm2();
    let mut args = vec![
        "ask",
        "--json",
        "--model",
        model.to_str().unwrap(),
        "--temp",
        "0",
        "--max-tokens",
        "48",
    ];
    args.extend_from_slice(extra);
    args.push("How do I keep the water pump running?");
    recall_with_cache(cache, &args)
}

#[test]
fn recall_index_embeds_the_vault_once_and_then_finds_it_in_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let first = json(&recall_with_cache(cache.path(), &["index", "--json"]));
    let passages = first["passages"].as_u64().unwrap();
    assert!(passages > 0, "{first}");
    assert_eq!(first["embedded_now"], passages, "{first}");
    assert_eq!(first["from_cache"], 0, "{first}");
    assert_eq!(first["model"], "all-MiniLM-L6-v2.gguf", "{first}");
    assert_eq!(
        first["cache_dir"],
        cache.path().join("obsidian-kb").to_str().unwrap(),
        "{first}"
    );
    assert!(
        std::fs::read_dir(cache.path().join("obsidian-kb"))
            .unwrap()
            .count()
            > 0,
        "no vector cache written"
    );

    let again = json(&recall_with_cache(cache.path(), &["index", "--json"]));
    assert_eq!(again["embedded_now"], 0, "{again}");
    assert_eq!(again["from_cache"], passages, "{again}");

    // Without --json: one summary line.
    let out = recall_with_cache(cache.path(), &["index"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.contains(&format!("{passages} passages embedded")),
        "{stdout}"
    );

    // No embedding model: nothing to index, and it says why.
    let out = Command::new(env!("CARGO_BIN_EXE_recall"))
        .args([
            "index",
            "--no-embeddings",
            "--vault",
            &common::fixture_vault(),
        ])
        .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("searches by words alone"),
        "{}",
        text(&out.stderr)
    );
}

/// The first question on a fresh cache is answered from the sources the steady state gives:
/// the small rest of the vault is embedded first (the search is hybrid, never a fusion over a
/// half-embedded vault), and a warm run finds the same. The rest is small, so it is waited
/// for even before the server has an estimate: the generous bound keeps a busy test machine
/// (the embedder runs at idle priority) from deciding the outcome.
#[test]
fn the_first_answer_on_a_fresh_cache_has_the_steady_state_sources() {
    let cache = tempfile::tempdir().unwrap();
    let fresh = ask(cache.path(), &["--embedding-wait", "600"]);
    let stderr = text(&fresh.stderr);
    assert!(
        !stderr.contains("answering by words"),
        "the fixture vault is small enough to wait for: {stderr}"
    );
    let fresh = json(&fresh);
    let warm = ask(cache.path(), &[]);
    assert!(
        !text(&warm.stderr).contains("search by meaning"),
        "nothing left to embed: {}",
        text(&warm.stderr)
    );
    let warm = json(&warm);
    assert_eq!(retrieved(&fresh), retrieved(&warm));
    assert_eq!(fresh["citations"], warm["citations"]);

    // Those are the sources of a search by words and meaning: the same call by hand, on the
    // now complete cache, ranks hybrid and returns them in that order.
    let call = json(&recall_with_cache(
        cache.path(),
        &[
            "--json",
            "call",
            "search_notes",
            r#"{"query": "How do I keep the water pump running?"}"#,
        ],
    ));
    assert_eq!(call["structured"]["ranking"], "hybrid", "{call}");
}

/// With no time to wait (`--embedding-wait 0`) a model command answers by words at once and
/// says so in one line, naming `recall index`.
#[test]
fn a_command_that_cannot_wait_answers_by_words_and_says_so() {
    let cache = tempfile::tempdir().unwrap();
    let out = ask(cache.path(), &["--embedding-wait", "0"]);
    let stderr = text(&out.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("search by meaning"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("answering by words now"), "{stderr}");
    assert!(said[0].contains("`recall index` finishes it"), "{stderr}");
    let report = json(&out);
    assert!(!retrieved(&report).is_empty(), "{report:#}");
}

/// With no `--embedding-model`, the vault's own text chooses: a vault written in Chinese or
/// German is embedded by the multilingual model, an English one by all-MiniLM (as good in English and
/// twice as fast). Both from the models folder, as scripts/setup leaves them.
#[test]
fn the_default_embedding_model_follows_the_language_of_the_vault() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("笔记");
    std::fs::create_dir_all(vault.join("同步")).unwrap();
    for (name, body) in [
        (
            "同步/快照.md",
            "# 快照\n同步会保留笔记的快照，标准版保留一个月，增强版保留一年。",
        ),
        (
            "同步/设置.md",
            "# 设置\n在设置中选择要同步的文件夹和文件类型，然后登录账户。",
        ),
        (
            "绿茶.md",
            "# 绿茶\n泡绿茶的水温是八十度，不要用沸水。每次冲泡两分钟。",
        ),
    ] {
        std::fs::write(vault.join(name), body).unwrap();
    }
    let index = |vault: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_recall"))
            .args(["index", "--json", "--vault", vault])
            .env_remove("RECALL_VAULT")
            .env_remove("RECALL_EMBEDDING_MODEL")
            .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env("HF_HUB_OFFLINE", "1")
            .output()
            .expect("recall runs");
        (json(&out), text(&out.stderr))
    };
    let (chinese, stderr) = index(vault.to_str().unwrap());
    assert_eq!(
        chinese["model"], "multilingual-e5-small.gguf",
        "{chinese} {stderr}"
    );
    assert_eq!(chinese["notes"], 3, "{chinese}");
    assert!(!stderr.contains("fetch-multilingual"), "{stderr}");
    let sample_vault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sample-vault");
    let (english, _) = index(sample_vault.to_str().unwrap());
    assert_eq!(english["model"], "all-MiniLM-L6-v2.gguf", "{english}");

    // Latin letters say nothing: a German vault is told by its words.
    let german = dir.path().join("Notizen");
    std::fs::create_dir_all(&german).unwrap();
    for (name, body) in [
        (
            "Fahrrad.md",
            "# Fahrrad\nDer hintere Reifen war platt, also habe ich ihn am Montag beim Laden \
             um die Ecke wechseln lassen. Das hat zwanzig Euro gekostet.",
        ),
        (
            "Balkon.md",
            "# Balkon\nIm Frühjahr kommen Tomaten und Kräuter in die großen Kästen. Die Erde \
             muss vorher gedüngt werden.",
        ),
    ] {
        std::fs::write(german.join(name), body).unwrap();
    }
    let (german, stderr) = index(german.to_str().unwrap());
    assert_eq!(
        german["model"], "multilingual-e5-small.gguf",
        "{german} {stderr}"
    );
}
