//! A hub: one connection to the gateway's server, shared by the HTTP requests of one downstream
//! session (2025-11-25) or of every stateless client (2026-07-28), and where each message the
//! server sends goes.
//!
//! Every request gets an id of the hub's own on its way in (`h1`, `h2`, …): clients of the
//! stateless era share the connection and may use the same ids. Its answer, and whatever the
//! server sends for it meanwhile (progress, logs, requests to the client), go to the request's
//! own stream, under the client's id again; the rest (a session's list changes) to the
//! session's standalone stream (GET), kept until one is attached.
//!
//! Each stream keeps its last events for resumption (`Last-Event-ID: <stream>-<seq>`): a POST
//! whose connection dropped is not a cancellation in the 2025-11-25 era, so its answer waits
//! for a GET that resumes it. In the 2026-07-28 era a dropped stream is the cancellation.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use bytes::Bytes;
use mcp_core::jsonrpc::{Message, Notification, Payload, Request, RequestId};
use mcp_core::sync::lock;
use mcp_core::types::{meta, methods};
use mcp_core::TransportSender;
use mcp_transport_local::{LocalReceiver, LocalSender, LocalServer};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Events kept per stream for resumption.
const KEPT_EVENTS: usize = 256;
/// Finished streams kept for resumption (the oldest forgotten first).
const KEPT_FINISHED_STREAMS: usize = 32;
/// Events a stream's reader may lag behind before the stream is detached (and kept for
/// resumption).
const LIVE_BUFFER: usize = 64;

/// One event on its way to a response body.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The SSE event (`id:` and `data:` lines).
    pub(crate) event: Bytes,
    /// The message alone (for a JSON response).
    pub(crate) json: Bytes,
    /// The request's answer: the stream's last event.
    pub(crate) last: bool,
}

/// Why a message could not be handed to the server.
#[derive(Debug)]
pub(crate) enum HubError {
    /// The session ended (deleted, or the server shut down).
    Closed,
    /// Too many requests of this client are in flight.
    Busy,
}

struct StreamState {
    events: VecDeque<(u64, Delivery)>,
    next_seq: u64,
    live: Option<mpsc::Sender<Delivery>>,
    finished: bool,
}

impl StreamState {
    fn new(live: Option<mpsc::Sender<Delivery>>) -> StreamState {
        StreamState {
            events: VecDeque::new(),
            // 0 is the priming event's.
            next_seq: 1,
            live,
            finished: false,
        }
    }
}

struct Route {
    external: RequestId,
    stream: u64,
}

#[derive(Default)]
struct HubState {
    routes: HashMap<String, Route>,
    by_external: HashMap<RequestId, String>,
    streams: HashMap<u64, StreamState>,
    finished: VecDeque<u64>,
    standalone: Option<u64>,
    /// What came for the standalone stream while none was attached.
    unattached: VecDeque<Message>,
    next_stream: u64,
    closed: bool,
}

/// See the module documentation.
pub(crate) struct Hub {
    sender: LocalSender,
    state: Mutex<HubState>,
    next_id: AtomicU64,
    modern: bool,
    max_in_flight: usize,
    last_used: Mutex<Instant>,
    pump: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Some(pump) = lock(&self.pump).take() {
            pump.abort();
        }
    }
}

impl Hub {
    /// A new connection to `server` and the task that routes what it sends.
    pub(crate) fn open(
        server: &LocalServer,
        modern: bool,
        max_in_flight: usize,
    ) -> Result<Arc<Hub>, String> {
        let transport = server.connect().map_err(|e| e.to_string())?;
        let (sender, receiver) = mcp_core::Transport::split(transport);
        let hub = Arc::new(Hub {
            sender,
            state: Mutex::new(HubState::default()),
            next_id: AtomicU64::new(1),
            modern,
            max_in_flight,
            last_used: Mutex::new(Instant::now()),
            pump: Mutex::new(None),
        });
        let pump = tokio::spawn(pump(Arc::downgrade(&hub), receiver));
        *lock(&hub.pump) = Some(pump);
        Ok(hub)
    }

    /// Whether this is the stateless clients' hub (2026-07-28).
    pub(crate) fn is_stateless(&self) -> bool {
        self.modern
    }

    /// When a request last came.
    pub(crate) fn last_used(&self) -> Instant {
        *lock(&self.last_used)
    }

    /// Whether a request is running or a standalone stream is attached: a session in use,
    /// whatever its last request.
    pub(crate) fn is_busy(&self) -> bool {
        let state = lock(&self.state);
        !state.routes.is_empty()
            || state
                .standalone
                .and_then(|stream| state.streams.get(&stream))
                .is_some_and(|kept| kept.live.as_ref().is_some_and(|l| !l.is_closed()))
    }

    /// Whether the connection ended (the hub serves nothing more).
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Sends a request; its events arrive on the returned receiver (and are kept under the
    /// returned stream number for resumption).
    pub(crate) async fn request(
        self: &Arc<Self>,
        mut request: Request,
    ) -> Result<(u64, mpsc::Receiver<Delivery>, RequestGuard), HubError> {
        *lock(&self.last_used) = Instant::now();
        let internal = format!("h{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let (live, events) = mpsc::channel(LIVE_BUFFER);
        let stream = {
            let mut state = lock(&self.state);
            if state.closed {
                return Err(HubError::Closed);
            }
            if state.routes.len() >= self.max_in_flight {
                return Err(HubError::Busy);
            }
            state.next_stream += 1;
            let stream = state.next_stream;
            state.streams.insert(stream, StreamState::new(Some(live)));
            if !self.modern {
                state
                    .by_external
                    .insert(request.id.clone(), internal.clone());
            }
            state.routes.insert(
                internal.clone(),
                Route {
                    external: request.id.clone(),
                    stream,
                },
            );
            stream
        };
        request.id = RequestId::String(internal.clone().into());
        let guard = RequestGuard {
            hub: Arc::downgrade(self),
            internal,
        };
        if self.sender.send(request.into()).await.is_err() {
            return Err(HubError::Closed);
        }
        Ok((stream, events, guard))
    }

    /// Sends a notification or an answer to one of the server's requests. A session's
    /// `notifications/cancelled` names the client's id: it is given the hub's, and the
    /// request's stream ends (the server will not answer it). The stateless clients share the
    /// connection, so theirs are dropped: in that era closing the stream is the cancellation,
    /// and no client can cancel another's request.
    pub(crate) async fn send(&self, mut message: Message) -> Result<(), HubError> {
        *lock(&self.last_used) = Instant::now();
        if let Message::Notification(note) = &mut message {
            if note.method == methods::NOTIFICATION_CANCELLED {
                if self.modern {
                    return Ok(());
                }
                self.cancelled_by_client(note);
            }
        }
        self.sender
            .send(message)
            .await
            .map_err(|_| HubError::Closed)
    }

    /// A session's cancellation: the hub's id for the client's, the request's route and
    /// stream ended.
    fn cancelled_by_client(&self, note: &mut Notification) {
        let Some(Ok(mut params)) = note.params.take().map(|p| p.into_value()) else {
            return;
        };
        let external: Option<RequestId> = params
            .get("requestId")
            .and_then(|id| serde_json::from_value(id.clone()).ok());
        let mut state = lock(&self.state);
        let internal = external.and_then(|id| state.by_external.remove(&id));
        if let Some(internal) = internal {
            if let Some(route) = state.routes.remove(&internal) {
                finish(&mut state, route.stream, self.modern);
            }
            params["requestId"] = Value::String(internal);
        }
        drop(state);
        note.params = Some(Payload::Value(params));
    }

    /// Attaches the standalone stream (a GET), replacing any earlier one; what came meanwhile
    /// is delivered first.
    pub(crate) fn attach_standalone(&self) -> Result<(u64, mpsc::Receiver<Delivery>), HubError> {
        *lock(&self.last_used) = Instant::now();
        let (live, events) = mpsc::channel(LIVE_BUFFER);
        let mut state = lock(&self.state);
        if state.closed {
            return Err(HubError::Closed);
        }
        if let Some(old) = state.standalone.take() {
            // Ends the earlier GET's body.
            state.streams.remove(&old);
        }
        state.next_stream += 1;
        let stream = state.next_stream;
        state.streams.insert(stream, StreamState::new(Some(live)));
        state.standalone = Some(stream);
        let waiting: Vec<Message> = state.unattached.drain(..).collect();
        for message in waiting {
            deliver(&mut state, stream, &message, false, false);
        }
        Ok((stream, events))
    }

    /// Resumes stream `stream` after event `after`: the kept events are replayed, then, if it
    /// has not finished, it continues live. `None` when the stream is unknown.
    pub(crate) fn resume(&self, stream: u64, after: u64) -> Option<mpsc::Receiver<Delivery>> {
        *lock(&self.last_used) = Instant::now();
        let mut state = lock(&self.state);
        let kept = state.streams.get_mut(&stream)?;
        let (live, events) = mpsc::channel(LIVE_BUFFER.max(kept.events.len() + 1));
        for (_, delivery) in kept.events.iter().filter(|(seq, _)| *seq > after) {
            let _ = live.try_send(delivery.clone());
        }
        if !kept.finished {
            kept.live = Some(live);
        }
        Some(events)
    }

    /// Ends the session: the connection closes, every stream ends, later requests fail.
    pub(crate) async fn close(&self) {
        {
            let mut state = lock(&self.state);
            state.closed = true;
            state.streams.clear();
            state.routes.clear();
        }
        let _ = self.sender.close().await;
        if let Some(pump) = lock(&self.pump).take() {
            pump.abort();
        }
    }

    /// A request's body went away before its answer. In a session the request goes on and its
    /// events are kept for a resuming GET (whose reader a failed send detaches, not this); in
    /// the stateless era it is cancelled and forgotten.
    fn abandoned(self: Arc<Self>, internal: &str) {
        if !self.modern {
            return;
        }
        let mut state = lock(&self.state);
        let Some(route) = state.routes.remove(internal) else {
            return;
        };
        state.streams.remove(&route.stream);
        drop(state);
        let cancel = Notification::new(
            methods::NOTIFICATION_CANCELLED,
            Some(Payload::Value(json!({
                "requestId": internal,
                "reason": "the client closed the request's stream",
            }))),
        );
        // From a drop, which cannot wait: the send ends when it is queued or the connection
        // ends, and the task holds the hub until then.
        let hub = self.clone();
        tokio::spawn(async move {
            let _ = hub.sender.send(cancel.into()).await;
        });
    }
}

/// Held by a request's response body: dropped before the answer was delivered, the request
/// is abandoned.
pub(crate) struct RequestGuard {
    hub: Weak<Hub>,
    internal: String,
}

impl RequestGuard {
    /// The answer went out: nothing to do on drop.
    pub(crate) fn answered(mut self) {
        self.hub = Weak::new();
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade() {
            hub.abandoned(&self.internal);
        }
    }
}

/// Routes what the server sends until the connection ends.
async fn pump(hub: Weak<Hub>, mut receiver: LocalReceiver) {
    while let Some(Ok((mut message, related))) = receiver.receive_related().await {
        let Some(hub) = hub.upgrade() else {
            return;
        };
        let mut state = lock(&hub.state);
        let internal = match (&message, &related) {
            (Message::Response(response), _) => response.id.as_ref().and_then(hub_id),
            (_, Some(related)) => hub_id(related),
            _ => None,
        };
        let route = internal
            .as_deref()
            .and_then(|internal| state.routes.get(internal))
            .map(|r| (r.external.clone(), r.stream));
        match route {
            Some((external, stream)) => {
                let last = rename_outgoing(&mut message, &external, internal.as_deref());
                deliver(&mut state, stream, &message, last, hub.modern);
                if last {
                    if let Some(internal) = internal {
                        state.routes.remove(&internal);
                        state.by_external.remove(&external);
                    }
                    finish(&mut state, stream, hub.modern);
                }
            }
            // A session-wide message, or one for a request already gone.
            None if !hub.modern => match state.standalone {
                Some(stream) if state.streams.contains_key(&stream) => {
                    deliver(&mut state, stream, &message, false, false)
                }
                _ => {
                    state.unattached.push_back(message);
                    if state.unattached.len() > KEPT_EVENTS {
                        state.unattached.pop_front();
                    }
                }
            },
            None => {}
        }
    }
    // The connection ended: so does every stream.
    if let Some(hub) = hub.upgrade() {
        let mut state = lock(&hub.state);
        state.closed = true;
        for stream in state.streams.values_mut() {
            stream.live = None;
        }
    }
}

/// The hub's own id of a request (`h1`), if it is one.
fn hub_id(id: &RequestId) -> Option<String> {
    match id {
        RequestId::String(text) => Some(text.to_string()),
        RequestId::Number(_) => None,
    }
}

/// Gives a message for the request `external` the client's ids back; true when it is the
/// request's answer.
fn rename_outgoing(message: &mut Message, external: &RequestId, internal: Option<&str>) -> bool {
    match message {
        Message::Response(response) => {
            response.id = Some(external.clone());
            true
        }
        Message::Notification(note) => {
            // A `subscriptions/listen` stream's notifications name it.
            if let Some(Ok(mut params)) = note.params.take().map(|p| p.into_value()) {
                if let (Some(slot), Some(internal)) = (
                    params
                        .get_mut("_meta")
                        .and_then(|m| m.get_mut(meta::SUBSCRIPTION_ID)),
                    internal,
                ) {
                    if slot.as_str() == Some(internal) {
                        *slot = serde_json::to_value(external).unwrap_or(Value::Null);
                    }
                }
                note.params = Some(Payload::Value(params));
            }
            false
        }
        Message::Request(_) => false,
    }
}

/// Appends a message to a stream (kept for resumption in a session) and hands it to its live
/// body.
///
/// A reader that lags: in a session its stream is detached (it resumes from what is kept); in
/// the stateless era, which resumes nothing, the notifications it has no room for are dropped,
/// and the answer always has the slot kept for it.
fn deliver(state: &mut HubState, stream: u64, message: &Message, last: bool, stateless: bool) {
    let Some(kept) = state.streams.get_mut(&stream) else {
        return;
    };
    let mut json = Vec::with_capacity(256);
    if message.write_json(&mut json).is_err() {
        tracing::warn!("the gateway could not encode a message for a stream");
        return;
    }
    let seq = kept.next_seq;
    kept.next_seq += 1;
    let mut event = Vec::with_capacity(json.len() + 32);
    event.extend_from_slice(format!("id: {stream}-{seq}\nevent: message\ndata: ").as_bytes());
    event.extend_from_slice(&json);
    event.extend_from_slice(b"\n\n");
    let delivery = Delivery {
        event: Bytes::from(event),
        json: Bytes::from(json),
        last,
    };
    if let Some(live) = &kept.live {
        let full = !last && live.capacity() <= 1;
        if full && stateless {
            return;
        }
        if full || live.try_send(delivery.clone()).is_err() {
            kept.live = None;
        }
    }
    if stateless {
        return;
    }
    kept.events.push_back((seq, delivery));
    if kept.events.len() > KEPT_EVENTS {
        kept.events.pop_front();
    }
}

/// A request's stream got its answer (or was cancelled): its live body ends, and in a session
/// it is kept a while for resumption (the stateless era resumes nothing).
fn finish(state: &mut HubState, stream: u64, stateless: bool) {
    if stateless {
        state.streams.remove(&stream);
        return;
    }
    if let Some(kept) = state.streams.get_mut(&stream) {
        kept.finished = true;
        kept.live = None;
    }
    state.finished.push_back(stream);
    while state.finished.len() > KEPT_FINISHED_STREAMS {
        if let Some(old) = state.finished.pop_front() {
            state.streams.remove(&old);
        }
    }
}

/// How long a client whose stream dropped should wait before it resumes (the priming
/// event's `retry`).
const RESUME_AFTER_MS: u64 = 1000;

/// The priming event of a stream (its id, empty data, and when to come back): what a client
/// resumes from when the stream drops before its first message.
pub(crate) fn priming_event(stream: u64) -> Bytes {
    Bytes::from(format!(
        "id: {stream}-0\nretry: {RESUME_AFTER_MS}\ndata: \n\n"
    ))
}
