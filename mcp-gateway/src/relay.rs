//! [`Relay`]: what upstream servers ask of the client — sampling, elicitation, roots — and
//! the logs they send, passed to the downstream client whose call they serve.
//!
//! A 2026-07-28 server's input round belongs to the call that got it: it is answered in that
//! call's own task, which knows its downstream call, and goes to that call's client. A legacy
//! server's request names no call (over stdio nothing says which request it serves), so it
//! goes to the downstream client of the most recent call in flight to that server — with
//! several downstream calls to one legacy server at once, that may be another call's client.
//! The client answers when it declared the capability (in the 2026-07-28 era, as an input
//! round of its call); when it did not, or when no call to that server is in flight, the
//! server gets a clear error. A server's logs reach the most recent call's client the same way
//! (`notifications/message` on the call's stream); with no call in flight they are dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_core::jsonrpc::ErrorObject;
use mcp_core::sync::lock;
use mcp_core::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ListRootsResult, LoggingMessageNotificationParams, RootsCapability,
};
use mcp_session::{ClientHandler, ServerNotification};
use mcp_transport_local::{ClientRequestError, RequestContext};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// JSON-RPC's "method not found": what a server is told when nobody downstream can answer.
const METHOD_NOT_FOUND: i64 = -32601;
/// Logs of one call that may wait to be relayed; past that they are dropped.
const LOG_QUEUE: usize = 64;

/// The downstream calls in flight, by upstream server; cheap to clone. Give the facade its
/// [`handler_for`](Relay::handler_for) each server (`McpClientBuilder::handler_per_server`)
/// and the same relay to [`Gateway::start`](crate::Gateway::start).
#[derive(Clone, Default)]
pub struct Relay {
    calls: Arc<Calls>,
}

#[derive(Default)]
struct Calls {
    by_server: Mutex<HashMap<String, Vec<Arc<InFlight>>>>,
    next: AtomicU64,
}

tokio::task_local! {
    /// The downstream call whose upstream call runs in this task (see [`Relay::scoped`]).
    static CALL: Arc<InFlight>;
}

/// One downstream call in flight to an upstream server.
struct InFlight {
    id: u64,
    context: RequestContext,
    logs: mpsc::Sender<LoggingMessageNotificationParams>,
}

impl Relay {
    /// A relay with no call in flight.
    pub fn new() -> Relay {
        Relay::default()
    }

    /// The handler the facade gives `server`'s sessions: it declares sampling, elicitation and
    /// roots, and passes them (and the server's logs) to the downstream call in flight.
    pub fn handler_for(&self, server: &str) -> Arc<dyn ClientHandler> {
        Arc::new(ServerRequests {
            server: server.to_owned(),
            calls: self.calls.clone(),
        })
    }

    /// Notes a downstream call to `server` until the returned guard is dropped; the server's
    /// logs meanwhile arrive on the receiver. Run the upstream call in
    /// [`Tracked::scope`], so its input rounds reach this call.
    pub(crate) fn track(
        &self,
        server: &str,
        context: RequestContext,
    ) -> (Tracked, mpsc::Receiver<LoggingMessageNotificationParams>) {
        let (logs, receiver) = mpsc::channel(LOG_QUEUE);
        let id = self.calls.next.fetch_add(1, Ordering::Relaxed);
        let call = Arc::new(InFlight { id, context, logs });
        lock(&self.calls.by_server)
            .entry(server.to_owned())
            .or_default()
            .push(call.clone());
        let tracked = Tracked {
            calls: self.calls.clone(),
            server: server.to_owned(),
            id,
            call,
        };
        (tracked, receiver)
    }
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls: usize = lock(&self.calls.by_server).values().map(Vec::len).sum();
        f.debug_struct("Relay")
            .field("calls_in_flight", &calls)
            .finish()
    }
}

/// A tracked call: dropped when the call ends.
pub(crate) struct Tracked {
    calls: Arc<Calls>,
    server: String,
    id: u64,
    call: Arc<InFlight>,
}

impl Tracked {
    /// Runs `upstream` (the upstream call) as this downstream call's: what the server asks
    /// within the call's own task — a 2026-07-28 input round — goes to this call's client.
    pub(crate) fn scope<F: std::future::Future>(
        &self,
        upstream: F,
    ) -> impl std::future::Future<Output = F::Output> {
        CALL.scope(self.call.clone(), upstream)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut by_server = lock(&self.calls.by_server);
        if let Some(calls) = by_server.get_mut(&self.server) {
            calls.retain(|call| call.id != self.id);
            if calls.is_empty() {
                by_server.remove(&self.server);
            }
        }
    }
}

impl Calls {
    /// The most recent call in flight to `server`.
    fn latest(&self, server: &str) -> Option<Arc<InFlight>> {
        lock(&self.by_server)
            .get(server)
            .and_then(|calls| calls.last().cloned())
    }
}

/// One upstream server's requests and notifications.
struct ServerRequests {
    server: String,
    calls: Arc<Calls>,
}

impl ServerRequests {
    /// The call whose client answers `method`, or the error the server gets.
    fn call_for(&self, method: &str) -> Result<Arc<InFlight>, ErrorObject> {
        self.calls.latest(&self.server).ok_or_else(|| {
            ErrorObject::new(
                METHOD_NOT_FOUND,
                format!(
                    "{method} reached the gateway outside any call to this server: only a \
                     downstream client making a call can answer it"
                ),
            )
        })
    }
}

/// A downstream refusal as the error the upstream server gets.
fn refusal(error: ClientRequestError) -> ErrorObject {
    match error {
        ClientRequestError::Refused(error) => error,
        ClientRequestError::NotSupported { method } => ErrorObject::new(
            METHOD_NOT_FOUND,
            format!("the client behind the gateway does not support {method}"),
        ),
        other => ErrorObject::internal(format!("the client behind the gateway: {other}")),
    }
}

#[async_trait]
impl ClientHandler for ServerRequests {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability {
                list_changed: Some(false),
                extra: Default::default(),
            }),
            sampling: Some(Value::Object(Map::new())),
            elicitation: Some(Value::Object(Map::new())),
            ..ClientCapabilities::default()
        }
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        let call = self.call_for("roots/list")?;
        call.context.list_roots().await.map_err(refusal)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let call = self.call_for("sampling/createMessage")?;
        call.context.create_message(params).await.map_err(refusal)
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let call = self.call_for("elicitation/create")?;
        call.context.elicit(params).await.map_err(refusal)
    }

    async fn answer_input_round(
        &self,
        method: &str,
        requests: &Map<String, Value>,
    ) -> Option<Result<Map<String, Value>, ErrorObject>> {
        // The server's round, passed on whole: its keys, all in one round downstream, to the
        // call it belongs to (answered in that call's task).
        let own = CALL.try_with(Arc::clone).ok();
        let call = match own.map(Ok).unwrap_or_else(|| self.call_for(method)) {
            Ok(call) => call,
            Err(error) => return Some(Err(error)),
        };
        Some(
            call.context
                .request_client_round(requests)
                .await
                .map_err(refusal),
        )
    }

    fn on_notification(&self, notification: &ServerNotification) {
        if let ServerNotification::LoggingMessage(log) = notification {
            match self.calls.latest(&self.server) {
                Some(call) => {
                    let _ = call.logs.try_send(log.clone());
                }
                None => tracing::debug!(
                    server = %self.server,
                    "a log outside any call; not relayed"
                ),
            }
        }
    }
}
