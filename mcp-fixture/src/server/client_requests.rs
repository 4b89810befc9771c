//! Server→client requests (`roots/list`, `sampling/createMessage`, `elicitation/create`):
//! sending one and waiting for the answer within `--client-timeout-ms`, matching the client's
//! response to it, and telling the client when the server stops waiting.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::{FixtureServer, OutgoingKind};
use crate::jsonrpc;

/// Why a server→client request produced no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClientRequestError {
    /// The client answered with a JSON-RPC error object.
    ClientError(Value),
    /// No answer within the timeout.
    TimedOut(Duration),
}

impl FixtureServer {
    pub(super) fn handle_client_response(
        &self,
        id: &RawValue,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
    ) {
        let Ok(Value::String(id)) = serde_json::from_str::<Value>(id.get()) else {
            tracing::debug!(id = id.get(), "response with an id the server never used");
            return;
        };
        let Some(waiter) = self.state().pending.remove(&id) else {
            tracing::debug!(id, "response to an unknown or abandoned server request");
            return;
        };
        let parse =
            |raw: &RawValue| serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null);
        let outcome = match (result, error) {
            (_, Some(error)) => Err(parse(error)),
            (Some(result), None) => Ok(parse(result)),
            (None, None) => Ok(Value::Null),
        };
        // The waiting tool may have been cancelled meanwhile.
        let _ = waiter.send(outcome);
    }

    /// Sends a server→client request and waits for the client's answer.
    pub(crate) async fn request_client(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, ClientRequestError> {
        let n = self
            .inner
            .next_server_request
            .fetch_add(1, Ordering::Relaxed);
        let id = format!("srv-{n}");
        let (tx, rx) = oneshot::channel();
        self.state().pending.insert(id.clone(), tx);
        let mut guard = PendingGuard {
            server: self.clone(),
            id,
            done: false,
        };
        self.emit(
            OutgoingKind::Request,
            jsonrpc::request_line(&guard.id, method, &params),
        );
        let timeout = Duration::from_millis(self.inner.options.client_timeout_ms);
        let outcome = tokio::time::timeout(timeout, rx).await;
        match outcome {
            Ok(Ok(answer)) => {
                guard.done = true;
                answer.map_err(ClientRequestError::ClientError)
            }
            // The sender cannot be dropped while the entry exists unless the
            // guard removed it; treat it like a timeout.
            Ok(Err(_)) | Err(_) => Err(ClientRequestError::TimedOut(timeout)),
        }
    }
}

/// Removes an abandoned server→client request (timeout or cancelled tool)
/// and tells the client with `notifications/cancelled`.
struct PendingGuard {
    server: FixtureServer,
    id: String,
    done: bool,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let removed = self.server.state().pending.remove(&self.id).is_some();
        if removed {
            self.server.notify(
                "notifications/cancelled",
                &json!({
                    "requestId": self.id,
                    "reason": "the fixture server stopped waiting for this request"
                }),
            );
        }
    }
}
