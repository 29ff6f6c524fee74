//! The Streamable HTTP transport's sessions, bounded in number and in idle time.
//!
//! rmcp's `LocalSessionManager` keeps a session until its client deletes it or it sits idle
//! for the keep-alive (5 minutes); each holds about 60 KB meanwhile. Measured: 8,000 sessions
//! opened with `initialize` and never closed took the server from 28 MB to 525 MB resident,
//! and it stayed there after they expired (the allocator keeps what it freed); with the cap
//! below, about 70 MB, and no more after 8,000 more. A client that never says goodbye (a script, a
//! crashed editor, a loop) could otherwise take memory without bound. [`BoundedSessions`] wraps
//! rmcp's manager: it sets the idle expiry ([`SESSION_IDLE`]; rmcp's worker then ends, and the
//! HTTP service closes the session, so it leaves the map and its id is answered 404), and it
//! keeps at most [`MAX_SESSIONS`] live by closing the longest-idle one when a new session
//! would pass the cap.
//!
//! Why evict rather than refuse the new session: the MCP transport tells a client that gets 404
//! for its session id to start a new session with `initialize`, so a client evicted after
//! being the quietest of [`MAX_SESSIONS`] loses only that handshake. A refused client has no
//! such way back: a person opening their editor would be locked out (503) for as long as
//! abandoned sessions took to expire, by whatever program abandoned them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

/// The most sessions the HTTP server keeps at once. A person runs a handful of MCP clients
/// (an editor, an inspector, an agent or two), each with a session or a few; 256 is far
/// above that, and bounds what the sessions hold to about 16 MB.
pub const MAX_SESSIONS: usize = 256;

/// How long a session may go without a message before it is closed and forgotten: long enough
/// for a person who reads an answer before asking again, short enough that what a client
/// abandoned is returned within minutes. rmcp's default too, named here so that an rmcp
/// release changing it changes nothing. A client that comes back later starts a new session
/// (the 404 it gets tells it to).
pub const SESSION_IDLE: Duration = Duration::from_secs(5 * 60);

/// rmcp's in-memory session manager with a cap on live sessions and an idle expiry.
#[derive(Debug)]
pub struct BoundedSessions {
    inner: LocalSessionManager,
    cap: usize,
    /// When each live session was last used (created, or sent a message or a stream request).
    last_used: Mutex<HashMap<SessionId, Instant>>,
    /// Held while a session is created.
    creating: tokio::sync::Mutex<()>,
}

impl BoundedSessions {
    /// A manager that keeps at most `cap` sessions (at least one), each closed after `idle`
    /// without a message.
    pub fn new(cap: usize, idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        Self {
            inner,
            cap: cap.max(1),
            last_used: Mutex::new(HashMap::new()),
            creating: tokio::sync::Mutex::new(()),
        }
    }

    /// How many sessions rmcp holds now.
    #[cfg(test)]
    async fn live(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    fn last_used(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Instant>> {
        self.last_used.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(&self, id: &SessionId) {
        if let Some(used) = self.last_used().get_mut(id) {
            *used = Instant::now();
        }
    }

    /// Takes out of the bookkeeping the longest-idle sessions, so many that one more fits
    /// under the cap; the caller closes them.
    fn make_room(&self) -> Vec<SessionId> {
        let mut last_used = self.last_used();
        let mut evicted = Vec::new();
        while last_used.len() >= self.cap {
            let Some(oldest) = last_used
                .iter()
                .min_by_key(|(_, used)| **used)
                .map(|(id, _)| id.clone())
            else {
                break;
            };
            last_used.remove(&oldest);
            evicted.push(oldest);
        }
        evicted
    }
}

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // One at a time, so that concurrent `initialize`s cannot each find a free place.
        let creating = self.creating.lock().await;
        let evicted = self.make_room();
        let created = self.inner.create_session().await;
        if let Ok((id, _)) = &created {
            self.last_used().insert(id.clone(), Instant::now());
        }
        // Closing waits on each evicted session's worker: not while others wait to create.
        drop(creating);
        for id in evicted {
            tracing::debug!(cap = self.cap, "closing the longest-idle HTTP session");
            if let Err(e) = self.inner.close_session(&id).await {
                // Out of the map all the same: its handler ends with the HTTP service's task.
                tracing::warn!("closing an evicted HTTP session failed: {e}");
            }
        }
        created
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    /// Also what the HTTP service calls when a session's handler ends: on `DELETE`, on
    /// eviction, and when rmcp's worker gives up an idle session.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.last_used().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_util::sync::CancellationToken;

    use super::BoundedSessions;
    use crate::server::{KbServer, serve_http_with};

    /// The real HTTP server on a one-note vault, its sessions kept by `sessions`; returns the
    /// port and the vault's folder.
    async fn serve(
        sessions: Arc<BoundedSessions>,
        stop: &CancellationToken,
    ) -> (u16, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Home.md"), "# Home\n\nhello\n").unwrap();
        let index = crate::open_index(dir.path().to_path_buf()).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = KbServer::new(index, None);
        tokio::spawn(serve_http_with(
            server,
            sessions,
            listener,
            Vec::new(),
            stop.clone(),
        ));
        (port, dir)
    }

    /// Posts one JSON-RPC message on a connection of its own; returns the status and, for a
    /// new session, its id.
    async fn post(port: u16, session: Option<&str>, body: &str) -> (u16, Option<String>) {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let session = session.map_or(String::new(), |id| format!("Mcp-Session-Id: {id}\r\n"));
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{session}\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        // A reply is whole at its JSON-RPC result (a stream may stay open after it).
        let mut reply = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            let mut buf = [0; 8192];
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                reply.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&reply);
                if n == 0 || text.contains("\"result\"") {
                    return;
                }
            }
        });
        read.await.expect("a reply within 10 s");
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

    /// `initialize`, never followed by a goodbye; returns the session's id.
    async fn open(port: u16) -> String {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;
        let (status, id) = post(port, None, body).await;
        assert_eq!(status, 200);
        id.expect("a session id")
    }

    /// A request in session `id`; returns the status.
    async fn list_tools(port: u16, id: &str) -> u16 {
        let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
        post(port, Some(id), body).await.0
    }

    #[tokio::test]
    async fn a_session_beyond_the_cap_closes_the_longest_idle_one() {
        let stop = CancellationToken::new();
        let sessions = Arc::new(BoundedSessions::new(3, Duration::from_secs(600)));
        let (port, _vault) = serve(sessions.clone(), &stop).await;
        let first = open(port).await;
        let second = open(port).await;
        let third = open(port).await;
        assert_eq!(sessions.live().await, 3);
        // The first is used again: the second is now the longest idle.
        assert_eq!(list_tools(port, &first).await, 200);
        let fourth = open(port).await;
        let fifth = open(port).await;
        assert_eq!(sessions.live().await, 3);
        assert_eq!(
            list_tools(port, &second).await,
            404,
            "the longest idle is gone"
        );
        assert_eq!(list_tools(port, &third).await, 404, "then the next");
        for kept in [&first, &fourth, &fifth] {
            assert_eq!(list_tools(port, kept).await, 200);
        }
        for _ in 0..20 {
            open(port).await;
        }
        assert_eq!(sessions.live().await, 3);
        stop.cancel();
    }

    #[tokio::test]
    async fn an_idle_session_is_dropped_and_its_id_refused() {
        let stop = CancellationToken::new();
        let sessions = Arc::new(BoundedSessions::new(8, Duration::from_millis(300)));
        let (port, _vault) = serve(sessions.clone(), &stop).await;
        let idle = open(port).await;
        let busy = open(port).await;
        assert_eq!(sessions.live().await, 2);
        // `busy` speaks every 100 ms for a second; `idle` says nothing.
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(list_tools(port, &busy).await, 200);
        }
        assert_eq!(sessions.live().await, 1, "the idle session is dropped");
        assert_eq!(sessions.last_used().len(), 1, "and forgotten");
        assert_eq!(list_tools(port, &idle).await, 404);
        assert_eq!(list_tools(port, &busy).await, 200);
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert_eq!(sessions.live().await, 0);
        assert_eq!(list_tools(port, &busy).await, 404);
        stop.cancel();
    }
}
