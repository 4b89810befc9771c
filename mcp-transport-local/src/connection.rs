//! One connection, server side: its task (reads what the client sends: requests on the
//! ordinary path, notifications, answers to the server's own requests), the calls it runs,
//! its queue to the client, the modern `subscriptions/listen` streams, and its end.
//!
//! Everything the connection starts is its own: request tasks and the timers of parked calls
//! are aborted, parked calls dropped and the server's own requests failed when it ends —
//! closed by the client, its halves dropped, the server shut down or crashed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use mcp_core::jsonrpc::{
    ErrorObject, Message, Notification, Payload, Request, RequestId, Response,
};
use mcp_core::sync::lock;
use mcp_core::types::{
    meta, methods, CancelledNotificationParams, ListenRequestParams, LoggingLevel,
    NotificationFilter,
};
use mcp_core::{Era, TransportError, TransportErrorKind};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use crate::call::{drive, Parked, Run};
use crate::context::CallState;
use crate::dispatch::{self, Answer};
use crate::era::ClientAbilities;
use crate::error::ClientRequestError;
use crate::server::ServerShared;

/// What the connection queues for the client's receiver.
pub(crate) enum Outbound {
    /// A message, and the request it belongs to (what a call sends while it runs — progress,
    /// logs, requests to the client — and its answer), for a server transport that routes
    /// each request's messages to its own stream.
    Message(Message, Option<RequestId>),
    /// Everything queued before has been dispatched by the session: tell the waiter (a call
    /// whose answer must not overtake what it sent).
    Flush(oneshot::Sender<()>),
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The client closed it or dropped its halves.
    Closed,
    /// The server was shut down.
    ShutDown,
    /// The server crashed.
    Crashed,
}

/// One connection's shared state.
pub(crate) struct Connection {
    pub(crate) server: Arc<ServerShared>,
    pub(crate) id: u64,
    outbound: mpsc::Sender<Outbound>,
    end: CancellationToken,
    ending: OnceLock<Ending>,
    state: Mutex<ConnectionState>,
    next_id: AtomicU64,
    /// How many messages were queued for the client so far: a call whose answer comes in
    /// place waits, when the count moved while it ran, until those were dispatched.
    queued: AtomicU64,
}

#[derive(Default)]
struct ConnectionState {
    era: Option<Era>,
    /// What the client declared in `initialize` (legacy).
    abilities: ClientAbilities,
    /// What `logging/setLevel` chose (legacy).
    log_level: Option<LoggingLevel>,
    /// Calls on the ordinary path, by request id, so `notifications/cancelled` can end them.
    in_flight: HashMap<RequestId, InFlight>,
    /// The server's requests waiting for the client's answers (legacy).
    client_requests: HashMap<String, oneshot::Sender<Result<Value, ErrorObject>>>,
    /// Open `subscriptions/listen` streams (modern).
    listeners: Vec<Listener>,
    /// Resources subscribed to with `resources/subscribe` (legacy).
    subscribed: std::collections::HashSet<String>,
    /// Calls waiting for the client's input, by `requestState` (modern).
    parked: HashMap<String, (Parked, AbortHandle)>,
    ended: bool,
}

struct InFlight {
    task: AbortHandle,
    call: Arc<CallState>,
    generation: u64,
}

struct Listener {
    request_id: RequestId,
    filter: NotificationFilter,
}

impl Connection {
    pub(crate) fn new(
        server: Arc<ServerShared>,
        id: u64,
        outbound: mpsc::Sender<Outbound>,
    ) -> Connection {
        Connection {
            server,
            id,
            outbound,
            end: CancellationToken::new(),
            ending: OnceLock::new(),
            state: Mutex::new(ConnectionState::default()),
            next_id: AtomicU64::new(1),
            queued: AtomicU64::new(0),
        }
    }

    pub(crate) fn is_ended(&self) -> bool {
        self.end.is_cancelled()
    }

    /// Resolves when the connection has ended.
    pub(crate) async fn ended(&self) {
        self.end.cancelled().await
    }

    pub(crate) fn ending(&self) -> Option<Ending> {
        self.ending.get().copied()
    }

    /// Ends the connection (the first ending counts): every call it runs is aborted, parked
    /// calls are dropped, the server's own requests fail, the receiver ends.
    pub(crate) fn end(&self, ending: Ending) {
        if self.ending.set(ending).is_err() {
            return;
        }
        self.end.cancel();
        let (in_flight, client_requests, parked) = {
            let mut state = lock(&self.state);
            state.ended = true;
            let listeners = std::mem::take(&mut state.listeners);
            let subscribed = std::mem::take(&mut state.subscribed);
            if let Some(subscriptions) = &self.server.extensions.subscriptions {
                let uris = listeners
                    .iter()
                    .flat_map(|l| l.filter.resource_subscriptions.iter())
                    .chain(subscribed.iter());
                for uri in uris {
                    subscriptions.release(uri);
                }
            }
            (
                std::mem::take(&mut state.in_flight),
                std::mem::take(&mut state.client_requests),
                std::mem::take(&mut state.parked),
            )
        };
        // Outside the lock: dropping a parked call runs the handler's own drop code.
        for running in in_flight.into_values() {
            running.call.cancel();
            running.task.abort();
        }
        drop(client_requests);
        for (parked, expiry) in parked.into_values() {
            expiry.abort();
            parked.run.discard();
        }
        self.server.forget(self.id);
        tracing::debug!(connection = self.id, ?ending, "in-process connection ended");
    }

    /// The error of a request the ended connection fails: never delivered when it had not
    /// started, else the peer is gone.
    pub(crate) fn failure(&self, started: bool) -> TransportError {
        let name = &self.server.info.name;
        match (self.ending(), started) {
            (Some(Ending::Crashed), _) => TransportError::fatal(
                TransportErrorKind::PeerGone,
                format!("the in-process server `{name}` crashed"),
            ),
            (_, false) => TransportError::fatal(
                TransportErrorKind::Closed,
                format!("the in-process connection to `{name}` is closed"),
            )
            .never_sent(),
            (Some(Ending::ShutDown), true) => TransportError::fatal(
                TransportErrorKind::PeerGone,
                format!("the in-process server `{name}` was shut down before it answered"),
            ),
            (_, true) => TransportError::fatal(
                TransportErrorKind::PeerGone,
                format!(
                    "the in-process connection to `{name}` was closed before the server answered"
                ),
            ),
        }
    }

    /// Queues a message for the client, waiting for room (never past the connection's end).
    pub(crate) async fn send(&self, message: Message) -> bool {
        let related = match &message {
            Message::Response(response) => response.id.clone(),
            _ => None,
        };
        self.queue(Outbound::Message(message, related)).await
    }

    /// Queues a message that belongs to the request `related`.
    pub(crate) async fn send_related(&self, message: Message, related: RequestId) -> bool {
        self.queue(Outbound::Message(message, Some(related))).await
    }

    async fn queue(&self, item: Outbound) -> bool {
        if self.is_ended() {
            return false;
        }
        let queued = tokio::select! {
            biased;
            _ = self.end.cancelled() => false,
            queued = self.outbound.send(item) => queued.is_ok(),
        };
        if queued {
            self.queued.fetch_add(1, Ordering::Release);
        }
        queued
    }

    /// How many messages were queued for the client so far.
    pub(crate) fn queued(&self) -> u64 {
        self.queued.load(Ordering::Acquire)
    }

    /// Queues a message (that belongs to the request `related`, if any) without waiting (from
    /// code that cannot wait); false when the queue is full or the connection ended.
    pub(crate) fn try_send_related(&self, message: Message, related: Option<RequestId>) -> bool {
        match self.outbound.try_send(Outbound::Message(message, related)) {
            Ok(()) => {
                self.queued.fetch_add(1, Ordering::Release);
                true
            }
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::debug!(
                    connection = self.id,
                    "the client's queue is full; dropping a notification"
                );
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Waits until the session has dispatched everything queued so far (bounded by the
    /// connection's end; a receiver that is gone releases the wait too).
    pub(crate) async fn flush(&self) {
        let (done, dispatched) = oneshot::channel();
        if self.queue(Outbound::Flush(done)).await {
            tokio::select! {
                biased;
                _ = dispatched => {}
                _ = self.end.cancelled() => {}
            }
        }
    }

    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        lock(&self.state).log_level
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        lock(&self.state).log_level = Some(level);
    }

    pub(crate) fn abilities(&self) -> ClientAbilities {
        lock(&self.state).abilities
    }

    /// Records the era the client opened the connection in (and, legacy, what it can do).
    pub(crate) fn opened(&self, era: Era, abilities: Option<ClientAbilities>) {
        let mut state = lock(&self.state);
        state.era = Some(era);
        if let Some(abilities) = abilities {
            state.abilities = abilities;
        }
    }

    /// A fresh number for the server's own request ids and `requestState` tokens.
    fn next(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The connection's task: serves what the client sends until the connection ends.
    pub(crate) async fn serve(self: Arc<Self>, mut incoming: mpsc::Receiver<Message>) {
        // However the task ends (the client's queue closed, aborted with the halves), the
        // connection ends with it.
        let _end_on_exit = EndOnExit(&self);
        loop {
            let message = tokio::select! {
                biased;
                _ = self.end.cancelled() => return,
                message = incoming.recv() => message,
            };
            match message {
                None => return,
                Some(Message::Request(request)) => self.serve_request(request).await,
                Some(Message::Notification(note)) => self.on_notification(note),
                Some(Message::Response(response)) => self.on_client_answer(response),
            }
        }
    }

    /// A request on the ordinary path: answered now, on its own task, or (a listen stream)
    /// kept open.
    async fn serve_request(self: &Arc<Self>, request: Request) {
        let id = request.id.clone();
        match dispatch::answer(self, request, None) {
            Answer::Now(outcome) => {
                self.send(response(id, outcome)).await;
            }
            Answer::Later(run) => self.spawn_call(id, run),
            Answer::Listen(filter) => self.listen(id, filter).await,
        }
    }

    fn spawn_call(self: &Arc<Self>, id: RequestId, run: Run) {
        let call = run.state.clone();
        // A modern answer of a server served on a wire gets what the revision requires of it.
        let modern = (call.is_modern() && self.server.settings.served_on_a_wire)
            .then(|| call.handled.clone());
        let generation = self.next();
        let connection = self.clone();
        let task_id = id.clone();
        // Registered under the lock it would take to unregister itself, so a call that ends
        // at once cannot leave a stale entry behind.
        let mut state = lock(&self.state);
        if state.ended {
            drop(state);
            run.discard();
            return;
        }
        let task = tokio::spawn(async move {
            let driven = tokio::select! {
                biased;
                _ = connection.end.cancelled() => return,
                driven = drive(run) => driven,
            };
            connection.unregister(&task_id, generation);
            let answer = match &modern {
                Some(handled) => {
                    crate::era::complete_modern(handled.answered_method(), driven.answer)
                }
                None => driven.answer,
            };
            connection.send(response(task_id, answer)).await;
        });
        let entry = InFlight {
            task: task.abort_handle(),
            call,
            generation,
        };
        if let Some(earlier) = state.in_flight.insert(id, entry) {
            // A client reusing an id in flight: the earlier call can no longer be cancelled
            // by id; it still answers (under the same id, as the client asked for).
            tracing::debug!(
                connection = self.id,
                generation = earlier.generation,
                "request id reused while in flight"
            );
        }
    }

    fn unregister(&self, id: &RequestId, generation: u64) {
        let mut state = lock(&self.state);
        if state.in_flight.get(id).map(|f| f.generation) == Some(generation) {
            state.in_flight.remove(id);
        }
    }

    /// Opens a `subscriptions/listen` stream: acknowledged with what the server agrees to
    /// send (list changes; it offers no resource subscriptions), then kept open until the
    /// client cancels it or the connection ends.
    async fn listen(&self, id: RequestId, asked: NotificationFilter) {
        let subscriptions = self.server.extensions.subscriptions.as_ref();
        let agreed = match subscriptions {
            Some(_) => asked,
            None => NotificationFilter {
                resource_subscriptions: Vec::new(),
                ..asked
            },
        };
        {
            let mut state = lock(&self.state);
            if state.ended {
                return;
            }
            // Counted under the connection's lock, as the end releases them.
            if let Some(subscriptions) = subscriptions {
                for uri in &agreed.resource_subscriptions {
                    subscriptions.retain(uri);
                }
            }
            state.era = Some(Era::Modern);
            state.listeners.push(Listener {
                request_id: id.clone(),
                filter: agreed.clone(),
            });
        }
        let mut params = serde_json::to_value(ListenRequestParams {
            notifications: agreed,
        })
        .unwrap_or_else(|_| json!({}));
        params["_meta"] = json!({ meta::SUBSCRIPTION_ID: id });
        let ack = Notification::new(
            methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
            Some(Payload::Value(params)),
        );
        // On the listen request's own stream, as everything it delivers.
        self.send_related(ack.into(), id).await;
    }

    fn on_notification(&self, note: Notification) {
        match note.method.as_str() {
            methods::NOTIFICATION_CANCELLED => {
                let params: Option<CancelledNotificationParams> =
                    note.params.as_ref().and_then(|p| p.deserialize().ok());
                let Some(params) = params else {
                    tracing::debug!(
                        connection = self.id,
                        "notifications/cancelled without a request id"
                    );
                    return;
                };
                let call = {
                    let mut state = lock(&self.state);
                    let (gone, kept): (Vec<Listener>, Vec<Listener>) =
                        std::mem::take(&mut state.listeners)
                            .into_iter()
                            .partition(|l| l.request_id == params.request_id);
                    state.listeners = kept;
                    if let Some(subscriptions) = &self.server.extensions.subscriptions {
                        for uri in gone
                            .iter()
                            .flat_map(|l| l.filter.resource_subscriptions.iter())
                        {
                            subscriptions.release(uri);
                        }
                    }
                    state.in_flight.remove(&params.request_id)
                };
                if let Some(running) = call {
                    // The token first, so work the handler handed elsewhere stops too; the
                    // abort drops the handler at its next await.
                    running.call.cancel();
                    running.task.abort();
                }
            }
            methods::NOTIFICATION_INITIALIZED | methods::NOTIFICATION_ROOTS_LIST_CHANGED => {}
            other => tracing::debug!(
                connection = self.id,
                method = other,
                "ignoring a notification"
            ),
        }
    }

    fn on_client_answer(&self, response: Response) {
        let Some(RequestId::String(id)) = &response.id else {
            tracing::debug!(
                connection = self.id,
                "an answer to a request this server never sent"
            );
            return;
        };
        let Some(waiter) = lock(&self.state).client_requests.remove(&**id) else {
            tracing::debug!(connection = self.id, id = %id, "an answer nobody waits for");
            return;
        };
        let outcome = match response.outcome {
            Ok(result) => result
                .into_value()
                .map_err(|e| ErrorObject::internal(format!("unreadable answer: {e}"))),
            Err(error) => Err(error),
        };
        let _ = waiter.send(outcome);
    }

    /// Sends the client a request of the server's own (legacy era) and waits for the answer,
    /// within the server's limit; dropped before the answer, it tells the client.
    pub(crate) async fn request_client(
        &self,
        method: &str,
        params: Value,
        related: RequestId,
    ) -> Result<Value, ClientRequestError> {
        let id = format!("local-{}", self.next());
        let (waiter, answer) = oneshot::channel();
        {
            let mut state = lock(&self.state);
            if state.ended {
                return Err(ClientRequestError::ConnectionEnded);
            }
            state.client_requests.insert(id.clone(), waiter);
        }
        let mut asking = Asking {
            connection: self,
            id: id.clone(),
            related: related.clone(),
            answered: false,
        };
        let request = Request::new(
            RequestId::String(id.into()),
            method,
            Some(Payload::Value(params)),
        );
        // One limit for all of it: queueing the request (the client may be slow to read) and
        // waiting for the answer.
        let limit = self.server.settings.client_request_timeout;
        let deadline = mcp_core::time::deadline_after(tokio::time::Instant::now(), limit);
        let timed_out = || ClientRequestError::TimedOut {
            method: method.to_owned(),
            after: limit,
        };
        match tokio::time::timeout_at(deadline, self.send_related(request.into(), related)).await {
            Ok(true) => {}
            Ok(false) => return Err(ClientRequestError::ConnectionEnded),
            Err(_) => return Err(timed_out()),
        }
        let answer = tokio::select! {
            biased;
            answer = answer => answer,
            _ = self.end.cancelled() => return Err(ClientRequestError::ConnectionEnded),
            _ = tokio::time::sleep_until(deadline) => return Err(timed_out()),
        };
        asking.answered = true;
        match answer {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(ClientRequestError::Refused(error)),
            Err(_) => Err(ClientRequestError::ConnectionEnded),
        }
    }

    /// Keeps a run that waits for the client's input; returns its `requestState`. The run
    /// is dropped when no request resumes it within the server's input timeout.
    pub(crate) fn park(
        self: &Arc<Self>,
        run: Run,
        responders: Vec<(String, oneshot::Sender<Result<Value, ErrorObject>>)>,
    ) -> String {
        let token = request_state(self.id, self.next());
        let mut state = lock(&self.state);
        if state.ended {
            // Outside the lock: dropping the run runs the handler's own drop code.
            drop(state);
            run.discard();
            return token;
        }
        let connection = self.clone();
        let expiring = token.clone();
        let limit = self.server.settings.input_timeout;
        let expiry = tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            let expired = lock(&connection.state).parked.remove(&expiring);
            if let Some((parked, _)) = expired {
                tracing::debug!(
                    connection = connection.id,
                    "a call waiting for input expired"
                );
                parked.run.discard();
            }
        });
        state.parked.insert(
            token.clone(),
            (Parked { run, responders }, expiry.abort_handle()),
        );
        token
    }

    /// Takes the run parked under `token`.
    pub(crate) fn unpark(&self, token: &str) -> Option<Parked> {
        let (parked, expiry) = lock(&self.state).parked.remove(token)?;
        expiry.abort();
        Some(parked)
    }

    /// Tells this connection's client that a list changed: a legacy client directly, a modern
    /// one on each listen stream that asked for it.
    /// `resources/subscribe` (`subscribe`) or `resources/unsubscribe` of `uri` (legacy).
    pub(crate) fn subscription(&self, uri: &str, subscribe: bool) {
        let Some(subscriptions) = &self.server.extensions.subscriptions else {
            return;
        };
        // Counted under the connection's lock, so its end (which releases what it holds)
        // cannot come between.
        let mut state = lock(&self.state);
        if state.ended {
            return;
        }
        match subscribe {
            true if state.subscribed.insert(uri.to_owned()) => subscriptions.retain(uri),
            false if state.subscribed.remove(uri) => subscriptions.release(uri),
            _ => {}
        }
    }

    /// `notifications/resources/updated` for `uri`, if this connection subscribed to it.
    pub(crate) fn resource_updated(&self, uri: &str) {
        let streams: Vec<Option<RequestId>> = {
            let state = lock(&self.state);
            let listening = state
                .listeners
                .iter()
                .filter(|l| l.filter.resource_subscriptions.iter().any(|u| u == uri))
                .map(|l| Some(l.request_id.clone()));
            let subscribed = state.subscribed.contains(uri).then_some(None);
            listening.chain(subscribed).collect()
        };
        for stream in streams {
            let mut params = json!({ "uri": uri });
            if let Some(id) = &stream {
                params["_meta"] = json!({ meta::SUBSCRIPTION_ID: id });
            }
            let note = Notification::new(
                methods::NOTIFICATION_RESOURCES_UPDATED,
                Some(Payload::Value(params)),
            );
            self.try_send_related(note.into(), stream);
        }
    }

    pub(crate) fn list_changed(
        &self,
        method: &'static str,
        wanted: fn(&NotificationFilter) -> bool,
    ) {
        let streams: Vec<Option<RequestId>> = {
            let state = lock(&self.state);
            match state.era {
                Some(Era::Modern) => state
                    .listeners
                    .iter()
                    .filter(|l| wanted(&l.filter))
                    .map(|l| Some(l.request_id.clone()))
                    .collect(),
                _ => vec![None],
            }
        };
        for stream in streams {
            let params = stream
                .as_ref()
                .map(|id| Payload::Value(json!({ "_meta": { meta::SUBSCRIPTION_ID: id } })));
            self.try_send_related(Notification::new(method, params).into(), stream);
        }
    }
}

/// A server request waiting for the client's answer; dropped before it, it is withdrawn and
/// the client told.
struct Asking<'a> {
    connection: &'a Connection,
    id: String,
    /// The call that asked (its stream carries the withdrawal too).
    related: RequestId,
    answered: bool,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let withdrawn = lock(&self.connection.state)
            .client_requests
            .remove(&self.id)
            .is_some();
        if withdrawn && !self.connection.is_ended() {
            let params = json!({
                "requestId": self.id,
                "reason": "the server no longer waits for this request",
            });
            let note = Notification::new(
                methods::NOTIFICATION_CANCELLED,
                Some(Payload::Value(params)),
            );
            self.connection
                .try_send_related(note.into(), Some(self.related.clone()));
        }
    }
}

/// A `requestState` no other client of the connection can guess (a gateway's stateless
/// clients share one): the connection and a counter, made unique, and 128 bits keyed with the
/// process's random hash keys.
fn request_state(connection: u64, n: u64) -> String {
    use std::hash::BuildHasher;
    let keys = std::collections::hash_map::RandomState::new();
    let high = keys.hash_one((connection, n, 1u8));
    let low = keys.hash_one((connection, n, 2u8));
    format!("local-{connection}-{n}-{high:016x}{low:016x}")
}

struct EndOnExit<'a>(&'a Connection);

impl Drop for EndOnExit<'_> {
    fn drop(&mut self) {
        self.0.end(Ending::Closed);
    }
}

fn response(id: RequestId, outcome: Result<Payload, ErrorObject>) -> Message {
    match outcome {
        Ok(result) => Response::success(id, result).into(),
        Err(error) => Response::error(Some(id), error).into(),
    }
}
