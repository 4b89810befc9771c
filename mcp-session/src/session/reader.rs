//! The session's two background tasks: the reader, which dispatches everything the server
//! sends, and the outbox, which sends what synchronous code (a `Drop`, the reader itself)
//! cannot await.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot};

use super::server_requests::handle_server_request;
use super::{lock, ServerNotification, SessionShared};
use mcp_core::error::{Delivery, Error};
use mcp_core::jsonrpc::{Message, RequestId};
use mcp_core::transport::TransportReceiver;
use mcp_core::types::{methods, CancelledNotificationParams, ProgressNotificationParams};

/// Messages the outbox holds before new ones are dropped (each is a best-effort cancellation or
/// a reply the server is already past waiting for when the outbox is that far behind).
pub(super) const OUTBOX_CAPACITY: usize = 1024;
/// How long the outbox waits for the transport to take one message.
const OUTBOX_SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// What the outbox task does, in order.
pub(super) enum OutboxItem {
    /// Send a message (a cancellation queued from `Drop`, a reply from the reader).
    Send(Message),
    /// Everything queued before has been sent: tell the closer.
    Flush(oneshot::Sender<()>),
}

impl SessionShared {
    /// Queues a message for the outbox; when it is full the message is dropped and logged.
    pub(super) fn queue(&self, item: OutboxItem) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.outbox.try_send(item) {
            tracing::debug!("the outbox is full; dropping a queued message");
        }
    }
}

pub(super) async fn run_outbox(shared: Arc<SessionShared>, mut outbox: mpsc::Receiver<OutboxItem>) {
    while let Some(item) = outbox.recv().await {
        match item {
            OutboxItem::Send(message) => {
                match tokio::time::timeout(OUTBOX_SEND_TIMEOUT, shared.sender.send(message)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::debug!(error = %e, "could not send a queued message"),
                    Err(_) => {
                        tracing::debug!("the transport did not take a queued message in time")
                    }
                }
            }
            OutboxItem::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

pub(super) async fn run_reader(
    shared: Arc<SessionShared>,
    mut receiver: Box<dyn TransportReceiver>,
) {
    let notifications = lock(&shared.notifications).clone();
    let reason = loop {
        match receiver.receive().await {
            Some(Ok(message)) => dispatch(&shared, notifications.as_ref(), message),
            Some(Err(e)) if !e.is_fatal() => {
                tracing::warn!(error = %e, "skipping a bad message from the server");
                // Read as an answer's id is (`dispatch`): "5" from a server that writes ids
                // back as strings is this client's request 5, on every transport.
                if let Some(id) = e.request_id().and_then(RequestId::as_client_id) {
                    shared.pending.complete(id, Err(Error::from(e.clone())));
                }
            }
            // Every request still pending was handed to the transport: whatever the failure
            // says of connecting, the server may have acted on them.
            Some(Err(e)) => break Error::from(e).with_delivery(Delivery::Sent),
            None => break Error::network("the server closed the connection"),
        }
    };
    tracing::debug!(reason = %reason, "MCP session ended");
    drop(notifications);
    shared.finish(reason);
}

fn dispatch(
    shared: &Arc<SessionShared>,
    notifications: Option<&broadcast::Sender<ServerNotification>>,
    message: Message,
) {
    match message {
        Message::Response(response) => {
            let id = match &response.id {
                Some(id) => match id.as_client_id() {
                    Some(id) => id,
                    None => {
                        tracing::warn!(%id, "response to a request this client never sent");
                        return;
                    }
                },
                None => {
                    if let Err(e) = &response.outcome {
                        tracing::warn!(error = %e, "the server reported an error without a request id");
                    }
                    return;
                }
            };
            let outcome = response
                .outcome
                .map_err(|e| shared.options.error_codes.error_of(e));
            if !shared.pending.complete(id, outcome) {
                tracing::debug!(id, "response for a request that is no longer waiting");
            }
        }
        Message::Notification(note) => match note.method.as_str() {
            methods::NOTIFICATION_PROGRESS => {
                let params: Result<ProgressNotificationParams, _> = match &note.params {
                    Some(p) => p.deserialize(),
                    None => return,
                };
                match params {
                    Ok(params) => {
                        let id = params.progress_token.as_client_id();
                        if let Some(state) = id.and_then(|id| shared.pending.progress(id)) {
                            state.record(&params);
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "malformed progress notification"),
                }
            }
            methods::NOTIFICATION_CANCELLED => {
                let params: Option<CancelledNotificationParams> =
                    note.params.as_ref().and_then(|p| p.deserialize().ok());
                if let Some(params) = params {
                    if let Some(task) = lock(&shared.handler_tasks).remove(&params.request_id) {
                        task.abort();
                    }
                    // A modern server ends a `subscriptions/listen` stream this way: the
                    // client's request ends, so the listener opens a new one.
                    let modern = shared.protocol_version.get().is_some_and(|v| v.is_modern());
                    if let (true, RequestId::Number(id)) = (modern, params.request_id) {
                        let ended = Error::network(format!(
                            "the server ended request {id}: {}",
                            params.reason.as_deref().unwrap_or("no reason given")
                        ))
                        .with_delivery(mcp_core::Delivery::Answered);
                        if shared.pending.complete(id, Err(ended)) {
                            tracing::debug!(id, "the server cancelled one of our requests");
                        }
                    }
                }
            }
            // The listen stream's own opening: what the server agreed to send. Internal to
            // the stream, so subscribers never see it.
            methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED => {
                let agreed = note
                    .params
                    .as_ref()
                    .and_then(|p| p.deserialize::<mcp_core::types::ListenRequestParams>().ok());
                match agreed {
                    Some(agreed) if agreed.notifications != *shared.listen_filter.borrow() => {
                        tracing::debug!(agreed = ?agreed.notifications, "the server agreed to send only part of the notifications asked for");
                    }
                    Some(_) => tracing::debug!("subscriptions/listen acknowledged"),
                    None => tracing::debug!("malformed subscriptions/listen acknowledgement"),
                }
                shared.listen_acks.send_modify(|n| *n += 1);
            }
            // A change notification of a listen stream the client already ended (its filter
            // changed): the current stream carries what still matters.
            _ if from_an_ended_stream(shared, &note) => {
                tracing::debug!(method = %note.method, "dropping a notification of an ended subscriptions/listen stream");
            }
            _ => {
                let notification = ServerNotification::parse(note);
                shared.handler.on_notification(&notification);
                if let Some(tx) = notifications {
                    let _ = tx.send(notification);
                }
            }
        },
        Message::Request(request) => handle_server_request(shared, request),
    }
}

/// Whether a modern notification names (`_meta["io.modelcontextprotocol/subscriptionId"]`) a
/// `subscriptions/listen` request that no longer waits.
fn from_an_ended_stream(shared: &SessionShared, note: &mcp_core::jsonrpc::Notification) -> bool {
    if !shared.protocol_version.get().is_some_and(|v| v.is_modern()) {
        return false;
    }
    let Some(params) = &note.params else {
        return false;
    };
    #[derive(serde::Deserialize)]
    struct Tagged {
        #[serde(rename = "_meta")]
        meta: Option<Tag>,
    }
    #[derive(serde::Deserialize)]
    struct Tag {
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        subscription: Option<serde_json::Value>,
    }
    let id = params
        .deserialize::<Tagged>()
        .ok()
        .and_then(|t| t.meta)
        .and_then(|m| m.subscription)
        .and_then(|v| v.as_i64());
    id.is_some_and(|id| !shared.pending.contains(id))
}
