//! A scripted server as an `McpService`: answers the resource methods from a table the test
//! controls, counts every request, and can hold reads until the test lets them go.

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_core::jsonrpc::ErrorObject;
use mcp_core::types::{ResourceUpdatedNotificationParams, ServerCapabilities};
use mcp_core::{BoxService, Delivery, Error, McpService, Operation, Payload};
use mcp_resources::{ResourceConfig, ResourceManager, ResourceState, Transition, Trigger};
use mcp_session::ErrorCodeTable;
use mcp_session::ServerNotification;
use serde_json::{json, Value};
use tokio::sync::{broadcast, watch};

pub use ResourceState::*;

#[derive(Default)]
struct Script {
    texts: HashMap<String, String>,
    /// `ttlMs` put on every read result.
    ttl_ms: Option<i64>,
    refuse_subscribe: HashSet<String>,
    /// (method, uri) of every request, in order.
    calls: Vec<(String, Option<String>)>,
    /// ("→ method" on arrival or "← method" on answer, uri), in order.
    exchanges: Vec<(String, Option<String>)>,
    resources: Vec<Value>,
    templates: Option<Vec<Value>>,
}

/// The scripted server. Cheap to clone: clones share the script.
#[derive(Clone)]
pub struct FakeServer {
    script: Arc<Mutex<Script>>,
    /// Requests of these methods wait (without answering) until released.
    held: Arc<watch::Sender<HashSet<String>>>,
    /// Counts requests, so a test can wait for one to arrive.
    requests: Arc<watch::Sender<usize>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap()
}

impl FakeServer {
    pub fn new() -> Self {
        FakeServer {
            script: Arc::default(),
            held: Arc::new(watch::channel(HashSet::new()).0),
            requests: Arc::new(watch::channel(0).0),
        }
    }

    pub fn with_text(self, uri: &str, text: &str) -> Self {
        self.set_text(uri, text);
        self
    }

    pub fn set_text(&self, uri: &str, text: &str) {
        lock(&self.script)
            .texts
            .insert(uri.to_owned(), text.to_owned());
    }

    pub fn set_ttl_ms(&self, ttl_ms: Option<i64>) {
        lock(&self.script).ttl_ms = ttl_ms;
    }

    pub fn refuse_subscribe(&self, uri: &str) {
        lock(&self.script).refuse_subscribe.insert(uri.to_owned());
    }

    pub fn set_listing(&self, resources: Vec<Value>, templates: Option<Vec<Value>>) {
        let mut script = lock(&self.script);
        script.resources = resources;
        script.templates = templates;
    }

    /// Holds every `method` request (answered only once released).
    pub fn hold(&self, method: &str) {
        self.held.send_modify(|held| {
            held.insert(method.to_owned());
        });
    }

    pub fn release(&self, method: &str) {
        self.held.send_modify(|held| {
            held.remove(method);
        });
    }

    /// How many `method` requests arrived (for any URI).
    pub fn count(&self, method: &str) -> usize {
        lock(&self.script)
            .calls
            .iter()
            .filter(|(m, _)| m == method)
            .count()
    }

    /// How many `method` requests arrived for `uri`.
    pub fn count_for(&self, method: &str, uri: &str) -> usize {
        lock(&self.script)
            .calls
            .iter()
            .filter(|(m, u)| m == method && u.as_deref() == Some(uri))
            .count()
    }

    pub fn calls(&self) -> Vec<(String, Option<String>)> {
        lock(&self.script).calls.clone()
    }

    /// What happened to `uri`'s requests, in order: "→ method" when one arrived, "← method"
    /// when it was answered (a request given up while held is never answered).
    pub fn exchanges_for(&self, uri: &str) -> Vec<String> {
        lock(&self.script)
            .exchanges
            .iter()
            .filter(|(_, u)| u.as_deref() == Some(uri))
            .map(|(what, _)| what.clone())
            .collect()
    }

    /// How many `method` requests were answered (for any URI).
    pub fn answered(&self, method: &str) -> usize {
        let answer = format!("← {method}");
        lock(&self.script)
            .exchanges
            .iter()
            .filter(|(what, _)| *what == answer)
            .count()
    }

    /// Waits until `n` requests in all have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        let mut requests = self.requests.subscribe();
        tokio::time::timeout(DEADLINE, requests.wait_for(|count| *count >= n))
            .await
            .expect("the requests arrived in time")
            .expect("the server is alive");
    }

    pub fn service(&self) -> BoxService {
        Arc::new(self.clone())
    }

    /// How many handles to this server exist (the test's own included): a manager's spawned
    /// work holding one has not ended.
    pub fn handles(&self) -> usize {
        Arc::strong_count(&self.script)
    }

    fn answer(&self, operation: &Operation) -> Result<Value, Error> {
        let uri = operation.subject.clone().unwrap_or_default();
        let script = lock(&self.script);
        match &*operation.method {
            "resources/read" => {
                let Some(text) = script.texts.get(&uri) else {
                    return Err(not_found(&uri));
                };
                let mut result = json!({
                    "contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]
                });
                if let Some(ttl_ms) = script.ttl_ms {
                    result["ttlMs"] = json!(ttl_ms);
                }
                Ok(result)
            }
            "resources/subscribe" if script.refuse_subscribe.contains(&uri) => {
                Err(ErrorCodeTable::default()
                    .error_of(ErrorObject::new(-32602, "subscriptions refused")))
            }
            "resources/subscribe" | "resources/unsubscribe" => Ok(json!({})),
            "resources/list" => Ok(json!({"resources": script.resources})),
            "resources/templates/list" => match &script.templates {
                Some(templates) => Ok(json!({"resourceTemplates": templates})),
                None => Err(ErrorCodeTable::default()
                    .error_of(ErrorObject::method_not_found("resources/templates/list"))),
            },
            other => Err(ErrorCodeTable::default().error_of(ErrorObject::method_not_found(other))),
        }
    }
}

fn not_found(uri: &str) -> Error {
    ErrorCodeTable::default()
        .error_of(ErrorObject::new(-32002, "Resource not found"))
        .with_delivery(Delivery::Answered)
        .with_subject(uri)
}

#[async_trait]
impl McpService for FakeServer {
    async fn call(&self, operation: Operation) -> Result<Payload, Error> {
        {
            let mut script = lock(&self.script);
            let (method, uri) = (operation.method.to_string(), operation.subject.clone());
            script.exchanges.push((format!("→ {method}"), uri.clone()));
            script.calls.push((method, uri));
        }
        self.requests.send_modify(|n| *n += 1);
        // Like a session: a request whose deadline has passed is not sent.
        if operation
            .options
            .deadline
            .is_some_and(|deadline| deadline <= tokio::time::Instant::now())
        {
            return Err(
                Error::timeout(format!("{} issued after its deadline", operation.method))
                    .with_delivery(Delivery::NotSent),
            );
        }
        let mut held = self.held.subscribe();
        // Bounded by the manager's own deadline (some tests rely on it).
        let _ = held
            .wait_for(|held| !held.contains(&*operation.method))
            .await;
        let answer = self.answer(&operation).map(Payload::Value);
        lock(&self.script)
            .exchanges
            .push((format!("← {}", operation.method), operation.subject.clone()));
        answer
    }
}

/// Generous deadline for anything a test waits on.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

pub fn capabilities(subscribe: bool) -> ServerCapabilities {
    serde_json::from_value(json!({"resources": {"subscribe": subscribe, "listChanged": true}}))
        .unwrap()
}

pub fn manager(server: &FakeServer, config: ResourceConfig) -> ResourceManager {
    ResourceManager::new(server.service(), &capabilities(true), config)
}

pub fn updated(uri: &str) -> ServerNotification {
    ServerNotification::ResourceUpdated(ResourceUpdatedNotificationParams {
        uri: uri.to_owned(),
        extra: Default::default(),
    })
}

/// The text of a read result's first content.
pub fn text(result: &mcp_core::types::ReadResourceResult) -> &str {
    result.contents[0].text.as_deref().unwrap_or("")
}

/// Records a manager's transitions so a test can take them URI by URI.
pub struct Recorder {
    rx: broadcast::Receiver<Transition>,
    pending: Vec<Transition>,
}

impl Recorder {
    pub fn new(manager: &ResourceManager) -> Self {
        Recorder {
            rx: manager.transitions(),
            pending: Vec::new(),
        }
    }

    fn receive(&mut self) {
        while let Ok(t) = self.rx.try_recv() {
            self.pending.push(t);
        }
    }

    /// The transitions of `uri` so far, as (from, to, trigger); other URIs' stay recorded.
    pub fn take(&mut self, uri: &str) -> Vec<(ResourceState, ResourceState, Trigger)> {
        self.receive();
        let (taken, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|t| t.uri == uri);
        self.pending = kept;
        taken
            .into_iter()
            .map(|t: Transition| (t.from, t.to, t.trigger))
            .collect()
    }

    /// Every transition so far.
    pub fn take_all(&mut self) -> Vec<Transition> {
        self.receive();
        std::mem::take(&mut self.pending)
    }
}

/// Lets other tasks of this (current-thread) runtime run until `condition` holds; fails after
/// a bounded number of turns. No clock involved, so it works on the paused clock too.
pub async fn until(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..100_000 {
        if condition() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never happened: {what}");
}
