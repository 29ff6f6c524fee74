//! The stdio transport's guard against what a client sends before the session starts.

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta, ProtocolVersion};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// A transport that drops what a client sends before the session starts other than requests:
/// notifications (a stray `notifications/initialized`), responses and errors. rmcp 3.9 ends
/// the session with an error on any of them, where MCP peers ignore them; here they are
/// logged at debug and skipped. Everything passes untouched once the session has started.
pub struct PreInitFilter<T> {
    inner: T,
    started: bool,
}

impl<T: Transport<RoleServer>> PreInitFilter<T> {
    /// Wraps a server transport.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            started: false,
        }
    }
}

/// Whether `request` starts the session: `initialize`, or (as rmcp decides for clients of the
/// 2026 protocol, which skip `initialize`) any request but `ping` and `server/discover` that
/// carries complete inline metadata.
fn starts_session(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.protocol_version().is_some()
                && meta
                    .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for PreInitFilter<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let message = self.inner.receive().await?;
            if self.started {
                return Some(message);
            }
            match &message {
                ClientJsonRpcMessage::Request(r) => {
                    self.started = starts_session(&r.request);
                    return Some(message);
                }
                ClientJsonRpcMessage::Notification(_) => {
                    tracing::debug!("ignored a notification before initialize");
                }
                ClientJsonRpcMessage::Response(_) | ClientJsonRpcMessage::Error(_) => {
                    tracing::debug!("ignored a response before initialize");
                }
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
