//! One Streamable HTTP session: its [`FixtureServer`], its SSE streams (with event history for
//! resumption) and the routing of the server's outgoing messages onto those streams.
//!
//! Stream ids: `0` is the standalone GET stream; every POST answered with SSE gets the next
//! number. Event ids are `"<stream>-<seq>"`, `seq` counting from 1 on each stream; a priming
//! event carries `"<stream>-<last seq sent>"` (so `<stream>-0` on a new POST stream) and no data.
//!
//! Routing (see the module docs of [`crate::http`] for the full rules):
//! - responses: to the POST stream (or `--http-json` waiter) registered under the request id;
//! - `notifications/progress`: to the POST stream of the request that carried the token;
//! - server→client requests: to the oldest open POST stream of an `ask_*` tool call that has
//!   not had its request yet; `notifications/cancelled` for such a request follows it;
//! - everything else: the standalone stream (buffered while no GET is attached).

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::lock;
use crate::jsonrpc;
use crate::options::ServerOptions;
use crate::server::{FixtureServer, Outgoing, OutgoingKind};

/// The standalone (GET) stream's id.
pub(crate) const STANDALONE: u64 = 0;
/// Events kept per stream for `Last-Event-ID` replay.
const HISTORY_EVENTS: usize = 256;
/// Finished POST streams kept (for late resumption) per session.
const KEPT_FINISHED_STREAMS: usize = 32;
/// Bytes of event history kept for finished POST streams (the latest one is always kept), so
/// that `large` responses do not pile up.
const KEPT_FINISHED_BYTES: usize = 64 * 1024 * 1024;
/// The reconnection delay advertised before an injected stream drop.
pub(crate) const RETRY_MS: u64 = 100;

/// Sender side of one SSE response body.
pub(crate) type EventSender = mpsc::UnboundedSender<Bytes>;
/// Receiver side of one SSE response body.
pub(crate) type EventReceiver = mpsc::UnboundedReceiver<Bytes>;

/// One MCP session over Streamable HTTP.
pub(crate) struct Session {
    /// The `Mcp-Session-Id` (`None` under `--http-stateless`).
    pub(crate) id: Option<String>,
    pub(crate) server: FixtureServer,
    pub(crate) streams: Arc<Mutex<Streams>>,
    router: AbortHandle,
    requests: AtomicU64,
}

impl Session {
    /// Creates the session's server and spawns its router task (aborted when the session closes).
    pub(crate) fn new(id: Option<String>, options: &ServerOptions) -> Arc<Self> {
        let (server, mut outgoing) = FixtureServer::new(options.clone());
        let streams = Arc::new(Mutex::new(Streams::new(options.http_drop_sse_after)));
        let routed = Arc::clone(&streams);
        let router = tokio::spawn(async move {
            while let Some(message) = outgoing.recv().await {
                lock(&routed).route(message);
            }
        })
        .abort_handle();
        Arc::new(Self {
            id,
            server,
            streams,
            router,
            requests: AtomicU64::new(0),
        })
    }

    /// Counts one JSON-RPC request received in this session.
    pub(crate) fn count_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// JSON-RPC requests received so far.
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Stops routing, closes every open stream of the session and cancels the requests still
    /// in flight (so that e.g. a long `slow` call does not outlive the session).
    pub(crate) fn close(&self) {
        self.router.abort();
        let in_flight = lock(&self.streams).close_all();
        for key in in_flight {
            // `key` is the request id as JSON text.
            let cancel = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{key},"reason":"session closed"}}}}"#
            );
            self.server.handle_line(cancel.as_bytes());
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// Whether the negotiated protocol version knows priming events (empty `data`), which older
/// clients may choke on.
pub(crate) fn primes(version: Option<&str>) -> bool {
    version.is_some_and(|v| v >= "2025-11-25")
}

/// Notifications about session-wide state, which belong on the standalone stream.
pub(crate) fn is_session_wide(method: &str) -> bool {
    method == "notifications/resources/updated" || method.ends_with("/list_changed")
}

/// What the router needs to know of an outgoing message.
#[derive(Deserialize, Default)]
struct Peek {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<PeekParams>,
}

#[derive(Deserialize, Default)]
struct PeekParams {
    #[serde(default, rename = "progressToken")]
    progress_token: Option<Value>,
    #[serde(default, rename = "requestId")]
    request_id: Option<Value>,
}

fn peek(json: &str) -> Peek {
    serde_json::from_str(json).unwrap_or_default()
}

/// One SSE stream (logical: it outlives the HTTP responses that carry it).
struct Stream {
    /// Sent events, for replay: (seq, event text).
    history: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    /// Highest seq handed to a live connection.
    sent_upto: u64,
    /// The attached HTTP response, if any.
    live: Option<EventSender>,
    /// The response is in the stream; close once it is delivered.
    done: bool,
    /// Events delivered live (drop fault).
    delivered: u64,
    /// `--http-drop-sse-after`: still to apply to this stream.
    drop_at: Option<u64>,
    /// Routing keys to forget when the stream finishes.
    request_key: Option<String>,
    token_key: Option<String>,
}

impl Stream {
    fn new(live: Option<EventSender>) -> Self {
        Self {
            history: VecDeque::new(),
            next_seq: 1,
            sent_upto: 0,
            live,
            done: false,
            delivered: 0,
            drop_at: None,
            request_key: None,
            token_key: None,
        }
    }

    /// Sends a priming event (id, optional `retry`, empty data) on the live connection.
    fn prime(&mut self, stream: u64, retry: bool) {
        let retry = if retry {
            format!("retry: {RETRY_MS}\n")
        } else {
            String::new()
        };
        let event = format!("id: {stream}-{}\n{retry}data: \n\n", self.sent_upto);
        self.send_live(Bytes::from(event));
    }

    fn send_live(&mut self, event: Bytes) -> bool {
        match &self.live {
            Some(live) if live.send(event).is_ok() => true,
            Some(_) => {
                self.live = None;
                false
            }
            None => false,
        }
    }

    /// Appends one message event and delivers it if a connection is attached, applying the
    /// drop fault.
    fn append(&mut self, stream: u64, json: &str, is_response: bool) {
        let seq = self.next_seq;
        self.next_seq += 1;
        // Sized once (`format!` would grow the string several times: every answer comes
        // this way).
        let mut event = String::with_capacity(json.len() + 64);
        let _ = write!(event, "id: {stream}-{seq}\nevent: message\ndata: ");
        event.push_str(json);
        event.push_str("\n\n");
        let event = Bytes::from(event);
        self.history.push_back((seq, event.clone()));
        while self.history.len() > HISTORY_EVENTS {
            self.history.pop_front();
        }
        if is_response {
            self.done = true;
        }
        if self.live.is_none() {
            return;
        }
        if let Some(limit) = self.drop_at {
            if is_response || self.delivered >= limit {
                tracing::debug!(stream, seq, "--http-drop-sse-after: closing the stream");
                self.drop_at = None;
                self.live = None;
                return;
            }
        }
        if self.send_live(event) {
            self.sent_upto = seq;
            self.delivered += 1;
            if self.done {
                self.live = None;
            } else if self.drop_at.is_some_and(|limit| self.delivered >= limit) {
                tracing::debug!(stream, seq, "--http-drop-sse-after: closing the stream");
                self.drop_at = None;
                self.live = None;
            }
        }
    }

    /// Attaches `tx`, first replaying the events after `after` (all of them still kept).
    /// Returns whether `tx` stays attached (false: the stream is finished and fully replayed).
    fn attach(&mut self, tx: EventSender, after: u64) -> bool {
        for (seq, event) in &self.history {
            if *seq > after {
                if tx.send(event.clone()).is_err() {
                    return false;
                }
                self.sent_upto = self.sent_upto.max(*seq);
            }
        }
        if self.done {
            self.live = None;
            false
        } else {
            self.live = Some(tx);
            true
        }
    }
}

/// A routing table. Hashed with [`RoutingHasher`]: the keys are stream numbers and the ids of
/// the test's own client, and every response looks several of them up.
type Table<K, V> = HashMap<K, V, BuildHasherDefault<RoutingHasher>>;

/// A multiply-rotate hash (as rustc's `FxHasher`): a few instructions per key where the
/// default SipHash costs hundreds. Not resistant to hash flooding, which a test fixture serving
/// loopback clients does not need.
#[derive(Default)]
struct RoutingHasher(u64);

impl RoutingHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for RoutingHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The streams of one session and the routing tables.
pub(crate) struct Streams {
    next_stream: u64,
    streams: Table<u64, Stream>,
    /// Finished POST streams, oldest first, with the bytes of their history (fixed once a
    /// stream is finished: nothing is appended to it any more).
    finished: VecDeque<(u64, usize)>,
    /// The sum of the bytes in `finished` (kept, not recounted: this runs on every response).
    finished_bytes: usize,
    /// Request id key → POST stream.
    by_request: Table<String, u64>,
    /// Progress token key → POST stream.
    by_token: Table<String, u64>,
    /// Server→client request id → POST stream it was sent on.
    by_server_request: Table<String, u64>,
    /// POST streams of `ask_*` calls still waiting for their server→client request.
    awaiting_client_request: VecDeque<u64>,
    /// `--http-json`: request id key → the POST waiting for its response.
    json_waiters: Table<String, oneshot::Sender<String>>,
    drop_after: Option<u64>,
}

/// Routing facts of a request about to be handled on a new POST stream.
pub(crate) struct PostRequest {
    pub(crate) request_key: String,
    pub(crate) token_key: Option<String>,
    /// The request will send a server→client request (`ask_*` tools).
    pub(crate) asks_client: bool,
    /// Send a priming event.
    pub(crate) prime: bool,
    /// Close the connection right after a priming event with a `retry` hint, keeping the
    /// stream for a resuming GET (`--conformance-content`'s `test_reconnection`, SEP-1699).
    pub(crate) close_after_priming: bool,
}

impl Streams {
    fn new(drop_after: Option<u64>) -> Self {
        let mut streams = Table::default();
        streams.insert(STANDALONE, Stream::new(None));
        Self {
            next_stream: 1,
            streams,
            finished: VecDeque::new(),
            finished_bytes: 0,
            by_request: Table::default(),
            by_token: Table::default(),
            by_server_request: Table::default(),
            awaiting_client_request: VecDeque::new(),
            json_waiters: Table::default(),
            drop_after,
        }
    }

    /// Opens the SSE stream answering a POSTed request; returns its id and the body's receiver.
    pub(crate) fn open_post_stream(&mut self, request: PostRequest) -> (u64, EventReceiver) {
        let id = self.next_stream;
        self.next_stream += 1;
        let (tx, rx) = mpsc::unbounded_channel();
        let mut stream = Stream::new(Some(tx));
        stream.drop_at = self.drop_after;
        let retry = self.drop_after.is_some() || request.close_after_priming;
        if request.prime || retry {
            stream.prime(id, retry);
        }
        if request.close_after_priming {
            tracing::debug!(
                stream = id,
                "closing the stream after priming (reconnection test)"
            );
            stream.drop_at = None;
            stream.live = None;
        } else if self.drop_after == Some(0) {
            tracing::debug!(
                stream = id,
                "--http-drop-sse-after 0: closing after priming"
            );
            stream.drop_at = None;
            stream.live = None;
        }
        self.by_request.insert(request.request_key.clone(), id);
        if let Some(token) = &request.token_key {
            self.by_token.insert(token.clone(), id);
        }
        if request.asks_client {
            self.awaiting_client_request.push_back(id);
        }
        stream.request_key = Some(request.request_key);
        stream.token_key = request.token_key;
        self.streams.insert(id, stream);
        (id, rx)
    }

    /// Registers a `--http-json` POST waiting for the response to `request_key`.
    pub(crate) fn wait_json(&mut self, request_key: String) -> oneshot::Receiver<String> {
        let (tx, rx) = oneshot::channel();
        self.json_waiters.insert(request_key, tx);
        rx
    }

    /// Attaches a new GET to the standalone stream (replacing any previous one) and flushes
    /// what was buffered while none was attached.
    pub(crate) fn open_standalone(&mut self, prime: bool) -> EventReceiver {
        let (tx, rx) = mpsc::unbounded_channel();
        let stream = self.stream_mut(STANDALONE);
        let after = stream.sent_upto;
        if prime {
            stream.live = Some(tx.clone());
            stream.prime(STANDALONE, false);
        }
        stream.attach(tx, after);
        rx
    }

    /// Resumes stream `stream` after event `after` (`Last-Event-ID`); `None` if the stream is
    /// unknown (never existed or forgotten).
    pub(crate) fn resume(&mut self, stream: u64, after: u64) -> Option<EventReceiver> {
        let entry = self.streams.get_mut(&stream)?;
        let (tx, rx) = mpsc::unbounded_channel();
        entry.attach(tx, after);
        Some(rx)
    }

    /// Whether a GET is attached to the standalone stream.
    pub(crate) fn standalone_attached(&self) -> bool {
        self.streams
            .get(&STANDALONE)
            .and_then(|s| s.live.as_ref())
            .is_some_and(|live| !live.is_closed())
    }

    fn stream_mut(&mut self, id: u64) -> &mut Stream {
        self.streams.entry(id).or_insert_with(|| Stream::new(None))
    }

    /// Puts a message on stream `id`; messages for a finished or forgotten POST stream go to
    /// the standalone stream (responses are then dropped: they never go there).
    fn push(&mut self, id: u64, json: &str, is_response: bool) {
        let usable = self.streams.get(&id).is_some_and(|s| !s.done);
        if !usable {
            if is_response {
                tracing::debug!(stream = id, "response for a finished stream dropped");
            } else {
                self.stream_mut(STANDALONE).append(STANDALONE, json, false);
            }
            return;
        }
        self.stream_mut(id).append(id, json, is_response);
        if is_response {
            self.finish(id);
        }
    }

    /// Forgets the routing entries of a finished POST stream; keeps its history a while.
    fn finish(&mut self, id: u64) {
        let mut bytes = 0;
        if let Some(stream) = self.streams.get_mut(&id) {
            stream.done = true;
            bytes = stream.history.iter().map(|(_, event)| event.len()).sum();
            if let Some(key) = stream.request_key.take() {
                if self.by_request.get(&key) == Some(&id) {
                    self.by_request.remove(&key);
                }
            }
            if let Some(key) = stream.token_key.take() {
                if self.by_token.get(&key) == Some(&id) {
                    self.by_token.remove(&key);
                }
            }
        }
        if !self.by_server_request.is_empty() {
            self.by_server_request.retain(|_, s| *s != id);
        }
        self.awaiting_client_request.retain(|s| *s != id);
        self.finished.push_back((id, bytes));
        self.finished_bytes += bytes;
        while self.finished.len() > KEPT_FINISHED_STREAMS
            || (self.finished.len() > 1 && self.finished_bytes > KEPT_FINISHED_BYTES)
        {
            if let Some((old, bytes)) = self.finished.pop_front() {
                self.finished_bytes -= bytes;
                self.streams.remove(&old);
            }
        }
    }

    /// The client cancelled `request_key`: its stream will never see a response; close it.
    pub(crate) fn cancelled(&mut self, request_key: &str) {
        if let Some(id) = self.by_request.get(request_key).copied() {
            if let Some(stream) = self.streams.get_mut(&id) {
                stream.live = None;
            }
            self.finish(id);
        }
        self.json_waiters.remove(request_key);
    }

    /// Delivers a response: to a `--http-json` waiter, else to its POST stream.
    fn deliver_response(&mut self, json: String) {
        let Some(id) = peek(&json).id else {
            tracing::debug!("response without an id dropped");
            return;
        };
        let key = jsonrpc::id_key(&id);
        if let Some(waiter) = self.json_waiters.remove(&key) {
            // The POST may have gone away meanwhile.
            let _ = waiter.send(json);
            return;
        }
        match self.by_request.get(&key).copied() {
            Some(stream) => self.push(stream, &json, true),
            None => tracing::debug!(id = %key, "response for an unknown request dropped"),
        }
    }

    /// Routes a message emitted inline while handling the request of POST stream `stream`.
    pub(crate) fn push_inline(&mut self, stream: u64, message: Outgoing) {
        match message.kind {
            // Handling one request answers that request only: this stream's, so its id need
            // not be read back out of the answer.
            OutgoingKind::Response => self.push(stream, &message.json, true),
            OutgoingKind::Notification => {
                let wide = peek(&message.json)
                    .method
                    .is_some_and(|m| is_session_wide(&m));
                if wide && self.standalone_attached() {
                    self.push(STANDALONE, &message.json, false);
                } else {
                    self.push(stream, &message.json, false);
                }
            }
            OutgoingKind::Request => self.push(stream, &message.json, false),
        }
    }

    /// Routes a message emitted outside of any POST (spawned tasks, `--http-json` mode, a
    /// POSTed notification or response).
    pub(crate) fn route(&mut self, message: Outgoing) {
        match message.kind {
            OutgoingKind::Response => self.deliver_response(message.json),
            OutgoingKind::Notification => {
                let peeked = peek(&message.json);
                let params = peeked.params.unwrap_or_default();
                let target = match peeked.method.as_deref() {
                    Some("notifications/progress") => params
                        .progress_token
                        .and_then(|t| self.by_token.get(&jsonrpc::id_key(&t)).copied()),
                    Some("notifications/cancelled") => params
                        .request_id
                        .and_then(|id| self.by_server_request.get(&jsonrpc::id_key(&id)).copied()),
                    _ => None,
                };
                self.push(target.unwrap_or(STANDALONE), &message.json, false);
            }
            OutgoingKind::Request => {
                let target = loop {
                    match self.awaiting_client_request.pop_front() {
                        Some(id) if self.streams.get(&id).is_some_and(|s| !s.done) => {
                            break Some(id)
                        }
                        Some(_) => continue,
                        None => break None,
                    }
                };
                if let (Some(stream), Some(id)) = (target, peek(&message.json).id) {
                    self.by_server_request.insert(jsonrpc::id_key(&id), stream);
                }
                self.push(target.unwrap_or(STANDALONE), &message.json, false);
            }
        }
    }

    /// Closes every attached connection and forgets the routes; returns the id keys of the
    /// requests that were still waiting for their response.
    fn close_all(&mut self) -> Vec<String> {
        for stream in self.streams.values_mut() {
            stream.live = None;
        }
        let mut keys: Vec<String> = self.by_request.drain().map(|(key, _)| key).collect();
        keys.extend(self.json_waiters.drain().map(|(key, _)| key));
        self.by_token.clear();
        self.by_server_request.clear();
        self.awaiting_client_request.clear();
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(rx: &mut EventReceiver) -> String {
        let mut out = String::new();
        while let Ok(event) = rx.try_recv() {
            out.push_str(std::str::from_utf8(&event).expect("utf-8"));
        }
        out
    }

    #[test]
    fn post_stream_routes_progress_then_response_and_closes() {
        let mut streams = Streams::new(None);
        let (id, mut rx) = streams.open_post_stream(PostRequest {
            request_key: "1".into(),
            token_key: Some("\"t\"".into()),
            asks_client: false,
            prime: true,
            close_after_priming: false,
        });
        streams.route(Outgoing {
            kind: OutgoingKind::Notification,
            json: r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#.into(),
        });
        streams.route(Outgoing {
            kind: OutgoingKind::Response,
            json: r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into(),
        });
        let text = drain(&mut rx);
        assert!(
            text.starts_with(&format!("id: {id}-0\ndata: \n\n")),
            "{text}"
        );
        assert!(text.contains(&format!("id: {id}-1\nevent: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"")));
        assert!(text.contains(&format!("id: {id}-2\n")));
        // The sender is gone: the body ends.
        assert!(rx.try_recv().is_err());
        assert!(streams.by_request.is_empty() && streams.by_token.is_empty());
    }

    #[test]
    fn drop_fault_keeps_the_response_for_resumption() {
        let mut streams = Streams::new(Some(1));
        let (id, mut rx) = streams.open_post_stream(PostRequest {
            request_key: "7".into(),
            token_key: Some("3".into()),
            asks_client: false,
            prime: false,
            close_after_priming: false,
        });
        for n in 1..=2 {
            streams.route(Outgoing {
                kind: OutgoingKind::Notification,
                json: format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":3,"progress":{n}}}}}"#),
            });
        }
        streams.route(Outgoing {
            kind: OutgoingKind::Response,
            json: r#"{"jsonrpc":"2.0","id":7,"result":{}}"#.into(),
        });
        let first = drain(&mut rx);
        assert!(first.contains("retry: 100"), "{first}");
        assert!(first.contains(&format!("id: {id}-1\n")));
        assert!(!first.contains(&format!("id: {id}-2\n")));
        let mut resumed = streams.resume(id, 1).expect("known stream");
        let rest = drain(&mut resumed);
        assert!(rest.contains(&format!("id: {id}-2\n")));
        assert!(rest.contains(r#""id":7"#), "{rest}");
        assert!(streams.resume(99, 0).is_none());
    }

    #[test]
    fn standalone_buffers_until_a_get_attaches() {
        let mut streams = Streams::new(None);
        streams.route(Outgoing {
            kind: OutgoingKind::Notification,
            json: r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.into(),
        });
        let mut rx = streams.open_standalone(true);
        let text = drain(&mut rx);
        assert!(text.starts_with("id: 0-0\ndata: \n\n"), "{text}");
        assert!(text.contains("list_changed"));
        assert!(streams.standalone_attached());
    }
}
