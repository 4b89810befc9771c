//! One bridged call: lines from the client go to the backend connection, messages from the
//! backend go to the client, unchanged. Each side's end ends the other:
//!
//! - the client half-closes → the backend connection is closed gracefully (a stdio child gets
//!   EOF), its last answers still reach the client, then the call ends with OK;
//! - the client goes away (reset, cancel) → the backend connection is closed at once;
//! - the backend dies → the call ends with UNAVAILABLE naming why (its exit status, …);
//! - the bridge shuts down → the call ends with UNAVAILABLE and the backend is closed.
//!
//! A message one side cannot take (over the size cap, not JSON-RPC) is answered with a JSON-RPC
//! error for its request where there is one, so nobody waits for an answer that cannot come.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_core::{
    BoxTransport, ErrorObject, Message, RequestId, Response, Transport, TransportError,
    TransportReceiver, TransportSender,
};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};
use tonic::{Status, Streaming};

use crate::line::{self, Decoded, Unsendable};
use crate::proto::JsonRpcLine;

/// JSON-RPC "Invalid Request".
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "Parse error".
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "Internal error".
const INTERNAL_ERROR: i64 = -32603;

type ToClient = mpsc::Sender<Result<JsonRpcLine, Status>>;

/// Everything one call needs.
pub(crate) struct Pump {
    pub(crate) from_client: Streaming<JsonRpcLine>,
    pub(crate) to_client: ToClient,
    pub(crate) backend: BoxTransport,
    pub(crate) max_message_size: usize,
    pub(crate) backend_close_timeout: Duration,
    pub(crate) shutdown: watch::Receiver<bool>,
    pub(crate) active: Arc<AtomicUsize>,
    /// The call's slot under the bridge's `max_calls`, given back when the call ends.
    pub(crate) call_slot: OwnedSemaphorePermit,
}

/// Why the client-to-backend direction stopped.
enum End {
    /// The client half-closed: it sends nothing more, but still reads.
    ClientDone,
    /// The client's side failed or was cancelled: nobody reads any more.
    ClientGone(Status),
    /// The backend's messages ended (the backend-to-client task sent the final status).
    BackendEnded,
    /// The backend refused a message for good.
    BackendRefused(TransportError),
    Shutdown,
}

/// Counts the call as active while it lives.
struct ActiveGuard(Arc<AtomicUsize>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Aborts a task when dropped (the call owns its backend reader).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(crate) async fn pump(call: Pump) {
    let Pump {
        mut from_client,
        to_client,
        backend,
        max_message_size,
        backend_close_timeout,
        mut shutdown,
        active,
        call_slot,
    } = call;
    active.fetch_add(1, Ordering::AcqRel);
    let _active = ActiveGuard(active);
    // Declared after `_active`, so dropped before it: once `active_calls()` no longer counts
    // this call, its slot is free for the next one.
    let _call_slot = call_slot;
    let (backend_tx, backend_rx) = backend.split();
    let mut reader = AbortOnDrop(tokio::spawn(backend_to_client(
        backend_rx,
        to_client.clone(),
        max_message_size,
    )));
    let mut reader_done = false;
    let end = loop {
        let next = tokio::select! {
            next = from_client.message() => next,
            _ = &mut reader.0 => {
                reader_done = true;
                break End::BackendEnded;
            }
            _ = shutdown.wait_for(|stopping| *stopping) => break End::Shutdown,
        };
        let line = match next {
            Ok(Some(line)) => line,
            Ok(None) => break End::ClientDone,
            Err(status) => break End::ClientGone(status),
        };
        let message = match line::decode_request(line) {
            Decoded::Message(message) => message,
            Decoded::Empty => continue,
            Decoded::Bad(e) => {
                let code = if e.request_id().is_some() {
                    INVALID_REQUEST
                } else {
                    PARSE_ERROR
                };
                answer(&to_client, e.request_id().cloned(), code, e.message()).await;
                continue;
            }
        };
        let request_id = match &message {
            Message::Request(r) => Some(r.id.clone()),
            _ => None,
        };
        match backend_tx.send(message).await {
            Ok(()) => {}
            Err(e) if e.is_fatal() => break End::BackendRefused(e),
            Err(e) => {
                if request_id.is_some() {
                    answer(&to_client, request_id, INTERNAL_ERROR, e.message()).await;
                }
            }
        }
    };
    match end {
        End::ClientDone => {
            // The backend's last answers still go to the client while it closes; then the
            // reader's end ends the call (OK).
            close_backend(&*backend_tx, backend_close_timeout).await;
            if !reader_done {
                let _ = tokio::time::timeout(backend_close_timeout, &mut reader.0).await;
            }
        }
        End::ClientGone(status) => {
            tracing::debug!(status = %crate::status::describe(&status), "gRPC bridge client went away");
            // Nobody reads: do not wait for answers.
            reader.0.abort();
            close_backend(&*backend_tx, backend_close_timeout).await;
        }
        End::BackendEnded => close_backend(&*backend_tx, backend_close_timeout).await,
        End::BackendRefused(e) => {
            // The reader usually reports the backend's death with more detail (its exit
            // status); wait for it briefly, else say what sending found.
            let reported = tokio::time::timeout(backend_close_timeout, &mut reader.0).await;
            if reported.is_err() {
                reader.0.abort();
                let _ = to_client
                    .send(Err(Status::unavailable(format!(
                        "the MCP server behind the bridge stopped taking messages: {}",
                        e.message()
                    ))))
                    .await;
            }
            close_backend(&*backend_tx, backend_close_timeout).await;
        }
        End::Shutdown => {
            reader.0.abort();
            let status = Status::unavailable("the MCP gRPC bridge is shutting down");
            let _ = tokio::time::timeout(backend_close_timeout, to_client.send(Err(status))).await;
            close_backend(&*backend_tx, backend_close_timeout).await;
        }
    }
    tracing::debug!("gRPC bridge call ended");
}

/// Closes the backend connection within `timeout`; past it the connection is dropped with
/// the call (which releases it: a stdio child is killed).
async fn close_backend(backend: &dyn TransportSender, timeout: Duration) {
    if tokio::time::timeout(timeout, backend.close())
        .await
        .is_err()
    {
        tracing::debug!("the bridge's MCP server did not close in time; dropping it");
    }
}

/// Forwards the backend's messages to the client until either side ends. The backend's death
/// ends the call with UNAVAILABLE; its clean end ends the call with OK.
async fn backend_to_client(
    mut backend: Box<dyn TransportReceiver>,
    to_client: ToClient,
    max_message_size: usize,
) {
    loop {
        let item = match backend.receive().await {
            None => return,
            Some(item) => item,
        };
        let line = match item {
            Ok(message) => match line::encode(&message, max_message_size) {
                Ok(line) => line,
                Err(why) => {
                    let why = match why {
                        Unsendable::TooLarge { size } => format!(
                            "the MCP server's answer of {size} bytes is over the gRPC bridge's \
                             {max_message_size}-byte limit (max_message_size)"
                        ),
                        Unsendable::Encoding(e) => {
                            format!("the gRPC bridge could not encode the MCP server's answer: {e}")
                        }
                    };
                    tracing::warn!("gRPC bridge dropped a message from its MCP server: {why}");
                    // The request it answered gets an error instead of waiting forever.
                    if let Message::Response(r) = &message {
                        answer(&to_client, r.id.clone(), INTERNAL_ERROR, &why).await;
                    }
                    continue;
                }
            },
            Err(e) if e.is_fatal() => {
                let _ = to_client
                    .send(Err(Status::unavailable(format!(
                        "the MCP server behind the bridge failed: {}",
                        e.message()
                    ))))
                    .await;
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "gRPC bridge got a bad message from its MCP server");
                if e.request_id().is_some() {
                    let why = format!(
                        "the MCP server's answer could not be passed on by the gRPC bridge: {}",
                        e.message()
                    );
                    answer(&to_client, e.request_id().cloned(), INTERNAL_ERROR, &why).await;
                }
                continue;
            }
        };
        if to_client.send(Ok(line)).await.is_err() {
            return;
        }
    }
}

/// Sends the client a JSON-RPC error response (for request `id`, or `null`).
async fn answer(to_client: &ToClient, id: Option<RequestId>, code: i64, message: &str) {
    let response = Message::Response(Response::error(id, ErrorObject::new(code, message)));
    // An error response is small: no cap.
    match line::encode(&response, usize::MAX) {
        Ok(line) => {
            let _ = to_client.send(Ok(line)).await;
        }
        Err(e) => tracing::debug!(error = ?e, "gRPC bridge could not encode an error answer"),
    }
}
