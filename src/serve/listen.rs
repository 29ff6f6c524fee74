//! `recall serve`'s connections: accepted one by one, at most [`MAX_CONNECTIONS`] open at
//! once, each served by hyper's HTTP/1 with a bound on how long its request headers may take.
//!
//! `axum::serve` has neither: a client that opened connections and sent nothing (or half a
//! request line, slowly: slowloris) was holding them without end (3,000 were accepted), each a
//! file descriptor of a process that has 1,024 by default. Here a connection whose headers are
//! not all in within [`HEADER_TIMEOUT`] is closed, and past the cap no connection is accepted
//! until one closes: the next ones wait in the kernel's listen queue, as a busy server's do,
//! rather than being refused, so a burst of real clients is served late instead of failed.
//!
//! Ctrl-C (the token) stops the accepting, lets each connection finish the request it is
//! answering (hyper's graceful shutdown; idle ones close at once), and returns when all are
//! closed.

use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The most connections open at once. Chat clients on a few machines open a handful each;
/// this is far above that and far below the 1,024 file descriptors a process gets by default
/// (the model, the vault server's pipes and the log need some too).
pub const MAX_CONNECTIONS: usize = 256;

/// How long a client may take to send a request's line and headers, from the moment the
/// server is ready for them: on a new connection, and between requests on a kept-alive one
/// (hyper times both the same way, so an idle kept-alive connection is closed after it too).
/// A client on this machine or the local network sends them in milliseconds; the OpenAI SDKs'
/// own idle limits (httpx: 5 s, Node's undici: 4 s) are below it, so they never send on a
/// connection that is being closed. A streamed answer that takes minutes is not bounded by
/// it: no header is read while a response is being written.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The bounds a server runs under (tests make them small).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: MAX_CONNECTIONS,
            header_timeout: HEADER_TIMEOUT,
        }
    }
}

/// Serves `app` on `listener` until `shutdown`, then waits for the open connections to finish
/// what they are answering.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        // A slot first: at the cap nothing is accepted until a connection closes.
        let slot = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let stream = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e, &shutdown).await;
                    continue;
                }
            },
        };
        let service = TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                () = shutdown.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = served {
                // A header timeout, a client gone mid-request: the client's business.
                tracing::debug!("connection closed: {e}");
            }
        });
    }
    drop(listener);
    // Every slot back: every connection closed.
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
    Ok(())
}

/// After a failed `accept`: a connection that failed before it was taken is skipped; anything
/// else (out of file descriptors, say) is logged and waited out for a second, as axum does.
async fn accept_failed(error: std::io::Error, shutdown: &CancellationToken) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::warn!("accepting a connection failed: {error}; retrying in a second");
    tokio::select! {
        () = shutdown.cancelled() => {}
        () = tokio::time::sleep(Duration::from_secs(1)) => {}
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    /// A server of one route, `GET /ping`, under `limits`; returns its address.
    async fn start(limits: Limits, shutdown: &CancellationToken) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = axum::Router::new().route("/ping", get(|| async { "pong" }));
        tokio::spawn(serve(listener, app, limits, shutdown.clone()));
        address
    }

    const PING: &[u8] = b"GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n";

    /// Sends `GET /ping` on `stream` (kept alive) and reads the reply; `None` when none comes
    /// within `wait`.
    async fn ping(stream: &mut TcpStream, wait: Duration) -> Option<String> {
        stream.write_all(PING).await.unwrap();
        let mut reply = Vec::new();
        let mut buf = [0; 1024];
        tokio::time::timeout(wait, async {
            while !String::from_utf8_lossy(&reply).ends_with("pong") {
                let n = stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed before the reply");
                reply.extend_from_slice(&buf[..n]);
            }
        })
        .await
        .ok()?;
        Some(String::from_utf8_lossy(&reply).into_owned())
    }

    #[tokio::test]
    async fn half_a_request_line_is_closed_after_the_header_timeout() {
        let shutdown = CancellationToken::new();
        let limits = Limits {
            max_connections: 8,
            header_timeout: Duration::from_millis(300),
        };
        let address = start(limits, &shutdown).await;
        let mut slow = TcpStream::connect(address).await.unwrap();
        slow.write_all(b"GET /pi").await.unwrap();
        let sent = Instant::now();
        let mut buf = [0; 64];
        let read = tokio::time::timeout(Duration::from_secs(5), slow.read(&mut buf))
            .await
            .expect("the server closes the connection, not the test's timeout");
        // Closed without a reply (or reset, had it more to say).
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        let waited = sent.elapsed();
        assert!(
            waited >= Duration::from_millis(250),
            "closed after {waited:?}"
        );
        // A silent connection too; a whole request is answered all the while.
        let silent_since = Instant::now();
        let mut silent = TcpStream::connect(address).await.unwrap();
        let mut whole = TcpStream::connect(address).await.unwrap();
        assert!(ping(&mut whole, Duration::from_secs(5)).await.is_some());
        let read = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
        assert!(silent_since.elapsed() >= Duration::from_millis(250));
        shutdown.cancel();
    }

    #[tokio::test]
    async fn past_the_cap_a_connection_waits_while_earlier_ones_are_served() {
        let shutdown = CancellationToken::new();
        let limits = Limits {
            max_connections: 2,
            header_timeout: Duration::from_secs(30),
        };
        let address = start(limits, &shutdown).await;
        let mut first = TcpStream::connect(address).await.unwrap();
        let mut second = TcpStream::connect(address).await.unwrap();
        assert!(ping(&mut first, Duration::from_secs(5)).await.is_some());
        assert!(ping(&mut second, Duration::from_secs(5)).await.is_some());
        let mut third = TcpStream::connect(address).await.unwrap();
        assert_eq!(
            ping(&mut third, Duration::from_millis(500)).await,
            None,
            "a third connection is not served while two are open"
        );
        for stream in [&mut first, &mut second] {
            assert!(ping(stream, Duration::from_secs(5)).await.is_some());
        }
        drop(first);
        // Its request was sent already: the reply comes once a slot is free.
        let mut reply = Vec::new();
        let mut buf = [0; 1024];
        tokio::time::timeout(Duration::from_secs(5), async {
            while !String::from_utf8_lossy(&reply).ends_with("pong") {
                let n = third.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed before the reply");
                reply.extend_from_slice(&buf[..n]);
            }
        })
        .await
        .expect("the waiting connection is served once one closes");
        shutdown.cancel();
    }

    #[tokio::test]
    async fn shutdown_closes_idle_connections_and_returns() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = axum::Router::new().route("/ping", get(|| async { "pong" }));
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(serve(listener, app, Limits::default(), shutdown.clone()));
        let mut idle = TcpStream::connect(address).await.unwrap();
        assert!(ping(&mut idle, Duration::from_secs(5)).await.is_some());
        shutdown.cancel();
        let served = tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("the server returns once its connections are closed");
        assert!(served.unwrap().is_ok());
        let mut buf = [0; 16];
        assert!(matches!(idle.read(&mut buf).await, Ok(0) | Err(_)));
        assert!(
            TcpStream::connect(address).await.is_err(),
            "no longer listening"
        );
    }
}
