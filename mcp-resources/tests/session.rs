//! The manager over a real `ClientSession`, against a server scripted over mcp-session's
//! `ChannelTransport`: notifications reach it through a `ResourceHandler` or `follow`.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::{Cached, Recorder, Stale, Subscribed, Unknown, Unsubscribed, DEADLINE};
use mcp_core::jsonrpc::{ErrorObject, Message, Notification, Request, Response};
use mcp_core::Payload;
use mcp_resources::{ResourceConfig, ResourceHandler, ResourceManager, Trigger};
use mcp_session::{ChannelTransport, ClientSession, ServerEnd, SessionOptions};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const COUNTER: &str = "scripted://counter";

/// A scripted server: answers the handshake and the resource methods, and sends
/// `notifications/resources/updated` for the counter when told to bump it.
struct Scripted {
    /// Requests by method.
    counts: Arc<Mutex<HashMap<String, usize>>>,
    bump: mpsc::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Scripted {
    fn count(&self, method: &str) -> usize {
        self.counts
            .lock()
            .unwrap()
            .get(method)
            .copied()
            .unwrap_or(0)
    }

    async fn bump(&self) {
        self.bump.send(()).await.expect("the server is running");
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn start(end: ServerEnd) -> Scripted {
    let counts = Arc::new(Mutex::new(HashMap::new()));
    let (bump, mut bumps) = mpsc::channel(8);
    let task = tokio::spawn({
        let counts = counts.clone();
        let ServerEnd {
            mut incoming,
            outgoing,
        } = end;
        async move {
            let mut counter = 0;
            let mut subscribed = false;
            loop {
                let message = tokio::select! {
                    message = incoming.recv() => match message {
                        Some(message) => message,
                        None => return,
                    },
                    Some(()) = bumps.recv() => {
                        counter += 1;
                        if subscribed {
                            let params = json!({"uri": COUNTER});
                            let note = Notification::new(
                                "notifications/resources/updated",
                                Some(Payload::Value(params)),
                            );
                            let _ = outgoing.send(note.into()).await;
                        }
                        continue;
                    }
                };
                let Message::Request(request) = message else {
                    continue;
                };
                *counts
                    .lock()
                    .unwrap()
                    .entry(request.method.clone())
                    .or_insert(0) += 1;
                let response = answer(&request, counter, &mut subscribed);
                let _ = outgoing.send(response.into()).await;
            }
        }
    });
    Scripted { counts, bump, task }
}

fn answer(request: &Request, counter: u32, subscribed: &mut bool) -> Response {
    let id = request.id.clone();
    let params: Value = request
        .params
        .clone()
        .and_then(|p| p.into_value().ok())
        .unwrap_or(Value::Null);
    let ok = |value: Value| Response::success(id.clone(), Payload::Value(value));
    match request.method.as_str() {
        "initialize" => ok(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"resources": {"subscribe": true, "listChanged": true}},
            "serverInfo": {"name": "scripted", "version": "1.0"}
        })),
        "resources/subscribe" => {
            *subscribed = true;
            ok(json!({}))
        }
        "resources/unsubscribe" => {
            *subscribed = false;
            ok(json!({}))
        }
        "resources/read" => ok(json!({
            "contents": [{"uri": params["uri"], "text": format!("counter = {counter}")}]
        })),
        other => Response::error(Some(id.clone()), ErrorObject::method_not_found(other)),
    }
}

async fn connect(handler: impl mcp_session::ClientHandler) -> (ClientSession, Scripted) {
    let (transport, end) = ChannelTransport::pair(64);
    let server = start(end);
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, handler, SessionOptions::default()),
    )
    .await
    .expect("connected in time")
    .expect("connects");
    (session, server)
}

fn text(result: &mcp_core::types::ReadResourceResult) -> String {
    result.contents[0].text.clone().unwrap_or_default()
}

#[tokio::test]
async fn updates_on_a_session_reach_the_manager_through_its_handler() {
    let handler = ResourceHandler::new(());
    let relay = handler.relay();
    let (session, server) = connect(handler).await;
    let resources = ResourceManager::for_session(&session, ResourceConfig::default());
    relay.attach(&resources);
    assert!(resources.can_subscribe());
    let mut rx = Recorder::new(&resources);
    let (updates, mut updated) = mpsc::unbounded_channel();
    let _guard = resources.on_update(COUNTER, move |update| {
        let _ = updates.send(update.uri.clone());
    });

    assert_eq!(text(&resources.read(COUNTER).await.unwrap()), "counter = 0");
    server.bump().await;
    let uri = tokio::time::timeout(DEADLINE, updated.recv())
        .await
        .expect("the update arrived in time");
    assert_eq!(uri.as_deref(), Some(COUNTER));
    assert_eq!(resources.state(COUNTER), Stale);
    assert_eq!(text(&resources.read(COUNTER).await.unwrap()), "counter = 1");
    assert_eq!(
        rx.take(COUNTER),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Cached, Trigger::Read),
            (Cached, Stale, Trigger::Updated),
            (Stale, Cached, Trigger::Read)
        ]
    );
    assert_eq!(server.count("resources/subscribe"), 1);
    assert_eq!(server.count("resources/read"), 2);

    resources.close().await;
    assert_eq!(server.count("resources/unsubscribe"), 1);
    assert_eq!(rx.take(COUNTER), [(Cached, Unsubscribed, Trigger::Closed)]);
    session.close().await;
}

#[tokio::test]
async fn follow_feeds_a_sessions_notifications_until_the_manager_closes() {
    let (session, server) = connect(()).await;
    let resources = ResourceManager::for_session(&session, ResourceConfig::default());
    let follower = tokio::spawn({
        let resources = resources.clone();
        let stream = session.subscribe();
        async move { resources.follow(stream).await }
    });
    let mut rx = resources.transitions();
    resources.read(COUNTER).await.unwrap();
    server.bump().await;
    let stale = tokio::time::timeout(DEADLINE, async {
        loop {
            let t = rx.recv().await.expect("transitions go on");
            if t.trigger == Trigger::Updated {
                return t;
            }
        }
    })
    .await
    .expect("the update arrived in time");
    assert_eq!((stale.from, stale.to), (Cached, Stale));

    resources.close().await;
    tokio::time::timeout(DEADLINE, follower)
        .await
        .expect("follow ends when the manager closes")
        .unwrap();
    session.close().await;
}
