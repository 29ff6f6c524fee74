//! MCP over Streamable HTTP (`--http`) against the real binary, spoken as raw HTTP/1.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common;

/// `obsidian-kb --http 127.0.0.1:0` on a one-note vault; ended (killed) when dropped.
struct HttpServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl HttpServer {
    fn start() -> HttpServer {
        let dir = tempfile::tempdir().unwrap();
        let vault = dir.path().join("vault");
        std::fs::create_dir(&vault).unwrap();
        std::fs::write(vault.join("Home.md"), "# Home\n\nhello\n").unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_obsidian-kb"));
        common::without_found_models(&mut command, dir.path());
        let mut child = command
            .arg("--vault")
            .arg(&vault)
            .args(["--no-embeddings", "--http", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        // Reads stderr to its end, so that the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some((_, rest)) = line.split_once("http://127.0.0.1:") {
                    let port = rest.split('/').next().unwrap().parse::<u16>().unwrap();
                    let _ = tx.send(port);
                }
            }
        });
        let port = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the line that says where it serves");
        HttpServer {
            child,
            port,
            _dir: dir,
        }
    }

    /// Posts one JSON-RPC message on a connection of its own; returns the status and, for a new
    /// session, its id.
    fn post(&self, session: Option<&str>, body: &str) -> (u16, Option<String>) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let session = session.map_or(String::new(), |id| format!("Mcp-Session-Id: {id}\r\n"));
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{session}\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        // The reply is whole at its JSON-RPC result (an event stream may stay open after it).
        let mut reply = Vec::new();
        let mut buf = [0; 8192];
        loop {
            let n = stream.read(&mut buf).expect("a reply within 10 s");
            reply.extend_from_slice(&buf[..n]);
            if n == 0 || String::from_utf8_lossy(&reply).contains("\"result\"") {
                break;
            }
        }
        let reply = String::from_utf8_lossy(&reply).into_owned();
        let status = reply
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {reply:?}"));
        let id = reply.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        });
        (status, id)
    }

    /// `initialize`, never followed by a goodbye; returns the new session's id.
    fn open_session(&self) -> String {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;
        let (status, id) = self.post(None, body);
        assert_eq!(status, 200);
        id.expect("a session id")
    }

    /// `tools/list` in session `id`: the HTTP status.
    fn list_tools(&self, id: &str) -> u16 {
        let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
        self.post(Some(id), body).0
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client that opens sessions and never closes them cannot hold the server's memory: past
/// `MAX_SESSIONS` each new session closes the longest-idle one, whose id is then answered 404
/// (which tells a client to start a new session), while the recent ones are served.
#[test]
fn sessions_never_closed_stay_bounded_the_longest_idle_closed_first() {
    let server = HttpServer::start();
    let cap = obsidian_kb::server::MAX_SESSIONS;
    let extra = 20;
    let ids: Vec<String> = (0..cap + extra).map(|_| server.open_session()).collect();
    for (i, id) in ids.iter().enumerate() {
        let expected = if i < extra { 404 } else { 200 };
        assert_eq!(
            server.list_tools(id),
            expected,
            "session {i} of {}",
            ids.len()
        );
    }
    // Asked again, the longest-idle session becomes the most recent: the next one goes.
    let kept = &ids[extra];
    assert_eq!(server.list_tools(kept), 200);
    let newer = server.open_session();
    assert_eq!(server.list_tools(kept), 200);
    assert_eq!(server.list_tools(&ids[extra + 1]), 404);
    assert_eq!(server.list_tools(&newer), 200);
}
