//! Shared harness for the integration tests: a temp copy of the fixture vault with the nasty
//! cases git cannot hold (symlinks in and out, a canary outside the vault, a non-UTF-8 name, a
//! binary `.md`, a 300 KB note), and an MCP client talking to the real `obsidian-kb` binary.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult, ReadResourceRequestParams};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};

/// Text of the canary files outside the vault; must never come back.
pub const CANARY: &str = "CANARY-9c1f3e-outside-the-vault";

/// A prepared temp directory: `<tmp>/vault` (the fixture copy), `<tmp>/secret/canary.md`,
/// `<tmp>/vault-secret/Secret.md`.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub vault: PathBuf,
    pub stderr_log: PathBuf,
}

impl Fixture {
    /// The absolute temp path, which must never appear in a response.
    pub fn abs(&self) -> String {
        self.dir.path().to_string_lossy().into_owned()
    }
}

fn fixture_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/vault")
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Builds the fixture.
pub fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    copy_dir(&fixture_src(), &vault);
    let secret = dir.path().join("secret");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("canary.md"), format!("# Canary\n\n{CANARY}\n")).unwrap();
    std::fs::write(secret.join("canary.txt"), CANARY).unwrap();
    let sibling = dir.path().join("vault-secret");
    std::fs::create_dir_all(&sibling).unwrap();
    std::fs::write(sibling.join("Secret.md"), format!("# Secret\n\n{CANARY}\n")).unwrap();

    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::symlink;
        // In-vault file symlink: followed (a note under the link's name).
        symlink("Archive/Old.md", vault.join("Linked Old.md")).unwrap();
        // Out-of-vault symlinks: never followed.
        symlink(secret.join("canary.md"), vault.join("escape.md")).unwrap();
        symlink("../secret/canary.md", vault.join("Relative Escape.md")).unwrap();
        symlink(&secret, vault.join("EscapeDir")).unwrap();
        symlink(&sibling, vault.join("SiblingDir")).unwrap();
        // In-vault directory symlink (a loop): not descended.
        symlink(".", vault.join("LoopDir")).unwrap();
        // Non-UTF-8 file name.
        let bad = std::ffi::OsStr::from_bytes(b"bad-\xff-name.md");
        std::fs::write(vault.join(bad), "# Bad name\n\nnonutf8only\n").unwrap();
    }
    // A binary file named .md.
    std::fs::write(
        vault.join("Binary.md"),
        b"\x00\x01\x02binary\x00garbage\xff\xfe",
    )
    .unwrap();
    // A 300 KB note.
    let mut big = String::from("---\ntags: [big]\n---\n# Big Note\n\n");
    let mut i = 0;
    while big.len() < 300_000 {
        big.push_str(&format!(
            "Line {i:06} of the big note talks about lighthouses and fog.\n"
        ));
        i += 1;
    }
    big.push_str("The final sentence mentions the word quokka.\n");
    std::fs::write(vault.join("Big Note.md"), big).unwrap();

    let stderr_log = dir.path().join("stderr.log");
    Fixture {
        dir,
        vault,
        stderr_log,
    }
}

pub type Client = RunningService<RoleClient, ()>;

/// Points the server at an empty Hugging Face cache and an empty local models folder under
/// `dir`, so that what a test sees does not depend on an embedding model being on this
/// machine (the source tree's `models/` holds one).
pub fn without_found_models(cmd: &mut std::process::Command, dir: &Path) {
    cmd.env("HF_HOME", dir.join("hf"))
        .env("RECALL_MODELS_DIR", dir.join("no-models"))
        .env_remove("HF_HUB_CACHE")
        .env_remove("OBSIDIAN_KB_EMBEDDING_MODEL");
}

/// Spawns `obsidian-kb --vault <vault>` and connects.
pub async fn connect(fx: &Fixture) -> Client {
    let log = std::fs::File::create(&fx.stderr_log).unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_obsidian-kb"));
    cmd.arg("--vault")
        .arg(&fx.vault)
        .env("RUST_LOG", "info,obsidian_kb=debug");
    without_found_models(cmd.as_std_mut(), fx.dir.path());
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    ().serve(transport).await.expect("connect to obsidian-kb")
}

/// Calls a tool with JSON arguments.
pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    try_call(client, tool, args)
        .await
        .expect("call_tool transport")
}

/// Calls a tool; returns the JSON-RPC error as text when there is one.
pub async fn try_call(client: &Client, tool: &str, args: Value) -> Result<CallToolResult, String> {
    let Value::Object(map) = args else {
        panic!("args must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
        .map_err(|e| format!("{e:?}"))
}

/// The structured content of a successful result.
pub fn structured(r: &CallToolResult) -> Map<String, Value> {
    assert_ne!(r.is_error, Some(true), "tool failed: {}", text(r));
    match r.structured_content.clone() {
        Some(Value::Object(m)) => m,
        other => panic!("no structured content: {other:?}"),
    }
}

/// The text content of a result.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads a resource; the contents' text, or the error.
pub async fn read_resource(client: &Client, uri: &str) -> Result<String, String> {
    match client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
    {
        Ok(r) => Ok(serde_json::to_string(&r).unwrap()),
        Err(e) => Err(format!("{e:?}")),
    }
}

/// URIs from a list of `{uri, ...}` objects.
pub fn uris(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x["uri"].as_str().unwrap().to_string())
        .collect()
}

/// The server's status resource (`obsidian-kb://status`), decoded.
pub async fn status(c: &Client) -> Value {
    let read = c
        .read_resource(ReadResourceRequestParams::new("obsidian-kb://status"))
        .await
        .unwrap();
    let json = serde_json::to_value(&read.contents[0]).unwrap();
    assert_eq!(json["uri"], "obsidian-kb://status");
    serde_json::from_str(json["text"].as_str().unwrap()).unwrap()
}
