//! Shared helpers for the integration tests: where the real test models live.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo_file(relative: &str, fetch_with: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    assert!(
        path.is_file(),
        "{} is missing: run `{fetch_with}` first (CI always does)",
        path.display()
    );
    path
}

/// SmolLM2-135M-Instruct Q4_1: the real model every engine test runs on.
pub fn smollm2() -> PathBuf {
    repo_file(
        "models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "scripts/fetch-test-model",
    )
}

/// all-MiniLM-L6-v2 as a GGUF: the vault server's embedding model.
pub fn minilm() -> PathBuf {
    repo_file(
        "models/all-MiniLM-L6-v2.gguf",
        "scripts/fetch-embedding-model",
    )
}

/// The tiny random-weight GGUF with Llama 3.2's real vocabulary and special tokens.
pub fn tiny_llama3() -> PathBuf {
    repo_file(
        "models/tiny-llama3.gguf",
        "scripts/fetch-llama3-tokenizer && scripts/make-tiny-llama3-gguf",
    )
}

/// llama.cpp's `llama-server`, built from its sources: the remote engine's peer.
pub fn llama_server() -> PathBuf {
    repo_file(
        ".tools/llama-server/bin/llama-server",
        "scripts/build-llama-server",
    )
}

/// `mcp-server-time` from PyPI, a third-party MCP server.
pub fn time_server_bin() -> String {
    peer(".venv-peers/bin/mcp-server-time")
}

/// The entry script of `@modelcontextprotocol/server-everything` from npm (run with `node`).
pub fn everything_server_js() -> String {
    peer(".peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn peer(relative: &str) -> String {
    let path = repo_file(relative, "scripts/install-peers");
    path.to_str().expect("UTF-8 repo path").to_owned()
}

/// The fixture vault every end-to-end test runs on.
pub fn fixture_vault() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vault")
        .display()
        .to_string()
}

/// The flags that run a model command on `vault` with the test model, greedy, in a small
/// context with short outputs.
pub fn test_model_args(vault: &str) -> Vec<String> {
    let model = smollm2().display().to_string();
    [
        "--model",
        &model,
        "--vault",
        vault,
        "--temp",
        "0",
        "--ctx",
        "4096",
        "--max-tokens",
        "160",
    ]
    .map(str::to_string)
    .to_vec()
}

/// Runs the `recall` binary with no user config, no env defaults, the hub offline, and a prompt
/// cache and data folder of its own that are gone afterwards (never the user's).
pub fn recall(args: &[&str]) -> Output {
    recall_with_input(args, "")
}

/// The `recall` binary with none of the user's settings: no config file, no `RECALL_*` defaults
/// (a `RECALL_ENGINE` of the developer's would send every test to a server), the hub offline,
/// and its data and prompt cache under `home`.
pub fn recall_command(home: &Path) -> Command {
    recall_command_at(Path::new(env!("CARGO_BIN_EXE_recall")), home)
}

/// [`recall_command`] running the binary at `exe` (a copy of the built one).
pub fn recall_command_at(exe: &Path, home: &Path) -> Command {
    let mut command = Command::new(exe);
    command
        .env_remove("RECALL_VAULT")
        .env_remove("RECALL_MODEL")
        .env_remove("RECALL_DECK")
        .env_remove("RECALL_ENGINE")
        .env_remove("RECALL_ENGINE_API_KEY")
        .env("XDG_CONFIG_HOME", "/nonexistent-recall-test-config")
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HF_HUB_OFFLINE", "1")
        .env("RECALL_PROMPT_CACHE_DIR", home.join("prompt-cache"));
    command
}

/// [`recall`] with `input` on its stdin.
pub fn recall_with_input(args: &[&str], input: &str) -> Output {
    let home = tempfile::tempdir().expect("a temporary folder");
    let mut child = recall_command(home.path())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("recall runs");
    let mut stdin = child.stdin.take().expect("a stdin pipe");
    stdin.write_all(input.as_bytes()).expect("input written");
    drop(stdin);
    child.wait_with_output().expect("recall ends")
}

/// A child process whose stdout and stderr are collected as they arrive, so a test can wait for
/// a point in its run (a log line, the first streamed text) and act there.
pub struct Watched {
    /// The process.
    pub child: std::process::Child,
    seen: std::sync::Arc<std::sync::Mutex<(Vec<u8>, Vec<u8>)>>,
    news: std::sync::mpsc::Receiver<()>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Watched {
    /// Spawns `command` with stdout and stderr piped (stdin as the command says).
    pub fn spawn(mut command: Command) -> Watched {
        use std::io::Read;
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the command starts");
        let seen = std::sync::Arc::new(std::sync::Mutex::new((Vec::new(), Vec::new())));
        let (tell, news) = std::sync::mpsc::channel();
        let stdout: Box<dyn Read + Send> = Box::new(child.stdout.take().unwrap());
        let stderr: Box<dyn Read + Send> = Box::new(child.stderr.take().unwrap());
        let mut readers = Vec::new();
        for (index, mut pipe) in [stdout, stderr].into_iter().enumerate() {
            let seen = seen.clone();
            let tell = tell.clone();
            readers.push(std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut buf) {
                    let mut seen = seen.lock().unwrap();
                    let stream = if index == 0 { &mut seen.0 } else { &mut seen.1 };
                    stream.extend_from_slice(&buf[..n]);
                    let _ = tell.send(());
                }
                let _ = tell.send(());
            }));
        }
        Watched {
            child,
            seen,
            news,
            readers,
        }
    }

    /// Stdout and stderr so far.
    pub fn output(&self) -> (String, String) {
        let seen = self.seen.lock().unwrap();
        (
            String::from_utf8_lossy(&seen.0).into_owned(),
            String::from_utf8_lossy(&seen.1).into_owned(),
        )
    }

    /// Blocks until `ready(stdout, stderr)` holds. Panics with the output if the process ends
    /// first, or after 10 minutes (a hung run, not a slow one).
    pub fn wait_until(&mut self, what: &str, ready: impl Fn(&str, &str) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
        loop {
            let (stdout, stderr) = self.output();
            if ready(&stdout, &stderr) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // The pipes may still hold the last words: read them all before giving up.
                for reader in self.readers.drain(..) {
                    reader.join().expect("a reader thread");
                }
                let (stdout, stderr) = self.output();
                if ready(&stdout, &stderr) {
                    return;
                }
                panic!("ended ({status}) before {what}\nstdout:\n{stdout}\nstderr:\n{stderr}");
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                !left.is_zero(),
                "no {what} after 10 minutes\nstdout:\n{stdout}\nstderr:\n{stderr}"
            );
            let _ = self
                .news
                .recv_timeout(left.min(std::time::Duration::from_millis(500)));
        }
    }

    /// Sends SIGINT to the process alone (not its group), as `kill -INT` does.
    pub fn interrupt(&self) {
        self.signal(nix::sys::signal::Signal::SIGINT);
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, signal).expect("the signal sent");
    }

    /// Waits for the exit; returns the status, stdout and stderr.
    pub fn finish(mut self) -> (std::process::ExitStatus, String, String) {
        let status = self.child.wait().expect("the process ends");
        // The readers end at EOF, after the last bytes.
        for reader in self.readers.drain(..) {
            reader.join().expect("a reader thread");
        }
        let (stdout, stderr) = self.output();
        (status, stdout, stderr)
    }
}

impl Drop for Watched {
    /// A test that failed midway leaves no process behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What `/proc/PID/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// `R`, `S`, `Z`, …
    pub state: char,
    /// Its parent.
    pub ppid: u32,
    /// Its process group.
    pub pgrp: u32,
}

/// The process `pid` as `/proc` shows it, or `None` once it is gone.
pub fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

/// True while `pid` runs (a zombie has ended; only its parent's wait is missing).
pub fn running(pid: u32) -> bool {
    stat(pid).is_some_and(|s| s.state != 'Z')
}

/// The running children of `parent` whose command line contains `needle`.
pub fn children_running(parent: u32, needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| stat(pid).is_some_and(|s| s.ppid == parent && s.state != 'Z'))
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

/// The last 3,000 bytes of `text` (from a character boundary), for assertion messages.
pub fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(3000);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    &text[start..]
}
