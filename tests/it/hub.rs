//! Models named `hf:OWNER/REPO/FILE` go through the real hf-hub download code against a local
//! stand-in for the hub (`tests/mock_hub.py`, at `HF_ENDPOINT`): the file lands in the standard
//! cache layout under `HF_HOME`, a connection dropped mid-download is resumed, and the cached
//! model then runs with the hub gone.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

const REPO: &str = "test/smol";
const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// What tests/mock_hub.py answers as the repo's commit.
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
/// The test model's SHA-256 (as scripts/fetch-test-model checks it).
const SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// A port nothing listens on (discard).
const DEAD_ENDPOINT: &str = "http://127.0.0.1:9";

/// The mock hub process and the requests it has seen.
struct MockHub {
    child: Child,
    endpoint: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl MockHub {
    /// Serves the test model; the first download response is cut after `cut_after` bytes.
    fn start(cut_after: u64) -> MockHub {
        MockHub::serve(REPO, &common::smollm2(), Some(cut_after))
    }

    /// Serves `file` in `repo`, the first response cut after `cut_after` bytes if given.
    fn serve(repo: &str, file: &Path, cut_after: Option<u64>) -> MockHub {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mock_hub.py");
        let mut command = Command::new("python3");
        command.arg(script).arg(repo).arg(file);
        if let Some(cut_after) = cut_after {
            command.arg("--cut-after").arg(cut_after.to_string());
        }
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the mock hub");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = lines.next().expect("the mock hub prints its port").unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                seen.lock().unwrap().push(line);
            }
        });
        MockHub {
            child,
            endpoint: format!("http://127.0.0.1:{}", port.trim()),
            requests,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for MockHub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `recall bench` on the hub model (it loads the model and runs a few tokens), with the cache
/// in `home`, the hub at `endpoint`, and the offline switch as given.
fn bench_from_hub(home: &Path, endpoint: &str, offline: bool) -> Output {
    let model = format!("hf:{REPO}/{FILE}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_recall"));
    command
        .args(["bench", "--model", &model, "-p", "8", "-n", "4", "-r", "1"])
        .args(["--threads", "2", "--json"])
        .env_remove("RECALL_MODEL")
        .env_remove("RECALL_ENGINE")
        .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
        .env("HF_HOME", home)
        .env("HF_ENDPOINT", endpoint);
    if offline {
        command.env("HF_HUB_OFFLINE", "1");
    } else {
        command.env_remove("HF_HUB_OFFLINE");
    }
    command.output().expect("recall runs")
}

fn assert_benched(output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(report["pp"]["tokens"], 8, "{report}");
    assert_eq!(report["tg"]["tokens"], 4, "{report}");
}

#[test]
fn a_hub_model_downloads_resumes_after_a_dropped_connection_then_runs_offline() {
    let home = tempfile::tempdir().unwrap();
    let hub = MockHub::start(5_000_000);
    assert_benched(&bench_from_hub(home.path(), &hub.endpoint, false));

    // Resumed: after the cut, a range request picks up past the start of the file.
    let requests = hub.requests();
    let resumed = requests.iter().any(|r| {
        r.rsplit_once("bytes=")
            .and_then(|(_, range)| range.strip_suffix('-'))
            .and_then(|start| start.parse::<u64>().ok())
            .is_some_and(|start| start > 0)
    });
    assert!(resumed, "no resumed range request: {requests:?}");

    // The standard cache layout, holding exactly the served bytes.
    let cached = home
        .path()
        .join("hub/models--test--smol/snapshots")
        .join(COMMIT)
        .join(FILE);
    assert!(cached.is_file(), "{} missing", cached.display());
    recall::engine::catalog::check_sha256(&cached, SHA256).expect("the cached file is whole");
    let partial = walk(&home.path().join("hub"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "part"))
        .collect::<Vec<_>>();
    assert!(partial.is_empty(), "leftover partial files: {partial:?}");

    // With the hub gone, the cache serves: declared offline, and merely unreachable.
    drop(hub);
    assert_benched(&bench_from_hub(home.path(), DEAD_ENDPOINT, true));
    assert_benched(&bench_from_hub(home.path(), DEAD_ENDPOINT, false));
}

#[test]
fn an_unreachable_hub_or_an_offline_miss_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let unreachable = bench_from_hub(home.path(), DEAD_ENDPOINT, false);
    let offline = bench_from_hub(home.path(), DEAD_ENDPOINT, true);
    for (output, says) in [
        (&unreachable, "cannot download"),
        (&offline, "HF_HUB_OFFLINE is set"),
    ] {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(stderr.contains(&format!("{REPO}/{FILE}")), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// `--embedding-model hf:…` goes through the same hub code as `--model`: the file lands in the
/// cache and the vault server searches by meaning with it. A chat model's alias is refused.
#[test]
fn an_embedding_model_from_the_hub_reaches_the_vault_server() {
    const EMBED_REPO: &str = "test/minilm";
    let home = tempfile::tempdir().unwrap();
    let model = common::minilm();
    let hub = MockHub::serve(EMBED_REPO, &model, None);
    let file = model.file_name().unwrap().to_str().unwrap();
    let search = |embedding_model: &str| {
        Command::new(env!("CARGO_BIN_EXE_recall"))
            .args(["--json", "call", "--vault", &common::fixture_vault()])
            .args(["--embedding-model", embedding_model])
            .args(["search_notes", r#"{"query": "water pump"}"#])
            .env_remove("RECALL_EMBEDDING_MODEL")
            .env_remove("HF_HUB_OFFLINE")
            .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
            .env("HF_HOME", home.path())
            .env("HF_ENDPOINT", &hub.endpoint)
            .output()
            .expect("recall runs")
    };

    let output = search(&format!("hf:{EMBED_REPO}/{file}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    // `embedded` is the embedding progress: only a server with a model reports it.
    assert!(report["structured"]["embedded"].is_object(), "{report}");
    let cached = home
        .path()
        .join("hub/models--test--minilm/snapshots")
        .join(COMMIT)
        .join(file);
    assert!(cached.is_file(), "{} missing", cached.display());

    let refused = search("smollm2-135m");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("'smollm2-135m' is a chat model"),
        "{stderr}"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
