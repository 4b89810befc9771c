//! An in-process fake MCP server farm for pool tests: a [`Hub`] hands out a connector whose
//! every `connect` starts one fake server over a `ChannelTransport`, and records per session
//! what the pool did with it (pings, calls, concurrent calls, whether the client ended it).

#![allow(dead_code)]

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::{Error, ErrorObject, Message, Payload, Request, Response};
use mcp_session::{
    session_connector_fn, ChannelTransport, ClientSession, ServerEnd, SessionConnector,
    SessionOptions,
};
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio::task::JoinSet;

/// What one fake server session saw.
#[derive(Debug, Default)]
pub struct ServerSession {
    pub id: usize,
    /// Pings answered.
    pub pings: AtomicUsize,
    /// Pings received and left unanswered (while `answer_pings` was false).
    pub ignored_pings: AtomicUsize,
    /// `tools/call` requests received.
    pub calls: AtomicUsize,
    in_flight: AtomicUsize,
    /// Most `tools/call` requests in progress at once on this session.
    pub max_in_flight: AtomicUsize,
    /// Whether pings are answered (default true).
    pub answer_pings: AtomicBool,
    /// Whether pings are answered with a JSON-RPC error instead of a result.
    pub ping_errors: AtomicBool,
    /// Set when the connection ended (the client closed or dropped it, or `hang_up`).
    pub ended: AtomicBool,
    /// Set when the client's session noticed that it ended (watched through its notification
    /// stream, which does not keep the session alive).
    pub client_ended: AtomicBool,
    hang_up: Notify,
}

impl ServerSession {
    pub fn pings(&self) -> usize {
        self.pings.load(Ordering::SeqCst)
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    pub fn client_ended(&self) -> bool {
        self.client_ended.load(Ordering::SeqCst)
    }

    /// Stops answering pings (everything else is still answered).
    pub fn stop_answering_pings(&self) {
        self.answer_pings.store(false, Ordering::SeqCst);
    }

    /// Answers pings with a JSON-RPC error from now on.
    pub fn answer_pings_with_errors(&self) {
        self.ping_errors.store(true, Ordering::SeqCst);
    }

    /// Ends the connection from the server side.
    pub fn hang_up(&self) {
        self.hang_up.notify_one();
    }
}

#[derive(Debug, Default)]
struct HubInner {
    sessions: Mutex<Vec<Arc<ServerSession>>>,
    /// The next this-many connects fail.
    fail_connects: AtomicUsize,
    /// Connects never complete (until the pool's connect timeout).
    hang_connects: AtomicBool,
    /// The next this-many connects panic.
    panic_connects: AtomicUsize,
    live: AtomicUsize,
    max_live: AtomicUsize,
}

/// Hands out a connector to fake servers and records what happened to each.
#[derive(Debug, Clone, Default)]
pub struct Hub {
    inner: Arc<HubInner>,
}

impl Hub {
    pub fn new() -> Hub {
        Hub::default()
    }

    /// A connector that starts one fake server per `connect`.
    pub fn connector(&self) -> impl SessionConnector {
        let hub = self.inner.clone();
        session_connector_fn(move || {
            let hub = hub.clone();
            Box::pin(async move { connect(hub).await })
        })
    }

    /// Sessions the connector opened (or tried to open past the failure switches).
    pub fn created(&self) -> usize {
        self.lock().len()
    }

    /// Server sessions whose connection is still up.
    pub fn live(&self) -> usize {
        self.inner.live.load(Ordering::SeqCst)
    }

    /// Most server sessions up at once.
    pub fn max_live(&self) -> usize {
        self.inner.max_live.load(Ordering::SeqCst)
    }

    pub fn session(&self, index: usize) -> Arc<ServerSession> {
        self.lock()[index].clone()
    }

    pub fn sessions(&self) -> Vec<Arc<ServerSession>> {
        self.lock().clone()
    }

    /// Sessions up right now.
    pub fn live_sessions(&self) -> Vec<Arc<ServerSession>> {
        self.sessions().into_iter().filter(|s| !s.ended()).collect()
    }

    pub fn total_calls(&self) -> usize {
        self.sessions().iter().map(|s| s.calls()).sum()
    }

    pub fn fail_next_connects(&self, n: usize) {
        self.inner.fail_connects.store(n, Ordering::SeqCst);
    }

    pub fn panic_next_connects(&self, n: usize) {
        self.inner.panic_connects.store(n, Ordering::SeqCst);
    }

    pub fn hang_connects(&self, hang: bool) {
        self.inner.hang_connects.store(hang, Ordering::SeqCst);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<ServerSession>>> {
        self.inner.sessions.lock().unwrap()
    }
}

async fn connect(hub: Arc<HubInner>) -> Result<ClientSession, Error> {
    let failing = hub
        .fail_connects
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        return Err(Error::network("connection refused by the test"));
    }
    let panicking = hub
        .panic_connects
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if panicking {
        panic!("the test's connector panics");
    }
    if hub.hang_connects.load(Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
    let (transport, end) = ChannelTransport::pair(64);
    let record = {
        let mut sessions = hub.sessions.lock().unwrap();
        let record = Arc::new(ServerSession {
            id: sessions.len(),
            answer_pings: AtomicBool::new(true),
            ..ServerSession::default()
        });
        sessions.push(record.clone());
        record
    };
    let live = hub.live.fetch_add(1, Ordering::SeqCst) + 1;
    hub.max_live.fetch_max(live, Ordering::SeqCst);
    tokio::spawn(serve(end, record.clone(), hub.clone()));
    let session = ClientSession::connect(transport, (), SessionOptions::default()).await?;
    let mut notes = session.subscribe();
    tokio::spawn(async move {
        while notes.next().await.is_some() {}
        record.client_ended.store(true, Ordering::SeqCst);
    });
    Ok(session)
}

/// One fake server session: answers initialize, ping, and the tools `echo {text}` and
/// `slow {ms}`; each tool call runs in its own task, so calls can overlap.
async fn serve(end: ServerEnd, record: Arc<ServerSession>, hub: Arc<HubInner>) {
    let ServerEnd {
        mut incoming,
        outgoing,
    } = end;
    let mut handlers = JoinSet::new();
    loop {
        tokio::select! {
            message = incoming.recv() => match message {
                Some(Message::Request(request)) => {
                    if let Some(handler) = answer(request, &record, &outgoing) {
                        handlers.spawn(handler);
                    }
                }
                Some(_) => {}
                None => break,
            },
            _ = record.hang_up.notified() => break,
            Some(_) = handlers.join_next(), if !handlers.is_empty() => {}
        }
    }
    handlers.abort_all();
    record.ended.store(true, Ordering::SeqCst);
    hub.live.fetch_sub(1, Ordering::SeqCst);
}

fn reply(id: mcp_core::RequestId, result: Value) -> Message {
    Response::success(id, Payload::Value(result)).into()
}

/// Answers at once, or returns the task that will answer (a tool call).
fn answer(
    request: Request,
    record: &Arc<ServerSession>,
    outgoing: &tokio::sync::mpsc::Sender<Message>,
) -> Option<impl Future<Output = ()> + Send + 'static> {
    let outgoing = outgoing.clone();
    match request.method.as_str() {
        "initialize" => {
            let message = reply(
                request.id,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fake", "version": "1.0"}
                }),
            );
            let _ = outgoing.try_send(message);
            None
        }
        "ping" => {
            if record.ping_errors.load(Ordering::SeqCst) {
                record.pings.fetch_add(1, Ordering::SeqCst);
                let error = ErrorObject::internal("ping is having a bad day");
                let _ = outgoing.try_send(Response::error(Some(request.id), error).into());
            } else if record.answer_pings.load(Ordering::SeqCst) {
                record.pings.fetch_add(1, Ordering::SeqCst);
                let _ = outgoing.try_send(reply(request.id, json!({})));
            } else {
                record.ignored_pings.fetch_add(1, Ordering::SeqCst);
            }
            None
        }
        "tools/call" => {
            let record = record.clone();
            Some(async move {
                record.calls.fetch_add(1, Ordering::SeqCst);
                let now = record.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                record.max_in_flight.fetch_max(now, Ordering::SeqCst);
                let params: Value = request
                    .params
                    .and_then(|p| p.into_value().ok())
                    .unwrap_or(Value::Null);
                let args = &params["arguments"];
                let text = match params["name"].as_str() {
                    Some("slow") => {
                        let ms = args["ms"].as_u64().unwrap_or(0);
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        format!("slept {ms} ms")
                    }
                    _ => args["text"].as_str().unwrap_or_default().to_owned(),
                };
                record.in_flight.fetch_sub(1, Ordering::SeqCst);
                let result = json!({"content": [{"type": "text", "text": text}]});
                let _ = outgoing.send(reply(request.id, result)).await;
            })
        }
        other => {
            let error = Response::error(Some(request.id), ErrorObject::method_not_found(other));
            let _ = outgoing.try_send(error.into());
            None
        }
    }
}

/// Tasks alive on the current runtime.
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}
