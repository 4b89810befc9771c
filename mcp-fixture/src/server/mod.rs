//! The transport-agnostic core: [`FixtureServer`] holds the shared state,
//! handles one incoming message at a time and emits [`Outgoing`] messages on
//! a channel.
//!
//! Cheap requests are answered inline, from within [`FixtureServer::handle_line`].
//! Requests that wait (`slow`, `ask_*`, any response under `--delay-ms`) run in
//! spawned tasks registered by request id, so `notifications/cancelled` can
//! drop them before they answer.
//!
//! Here: the server's shared state and its accessors. By concern: `dispatch.rs` reads a
//! message and routes it (requests by method, notifications, cancellation); `output.rs` sends
//! what goes out (answers inline or from cancellable tasks, after `--delay-ms`);
//! `client_requests.rs` the server→client requests and their answers; `methods.rs` the methods
//! the server answers itself (`initialize`, `server/discover`, `tasks/*`); `logging.rs`
//! [`LogLevel`] and `logging/setLevel`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::options::ServerOptions;

mod client_requests;
mod dispatch;
mod logging;
mod methods;
mod output;

pub(crate) use client_requests::ClientRequestError;
pub(crate) use dispatch::{Dispatch, Reply, ReplyFuture};
pub use logging::LogLevel;

/// What kind of JSON-RPC message an [`Outgoing`] line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutgoingKind {
    /// A response (result or error) to a client request.
    Response,
    /// A notification from the server.
    Notification,
    /// A server→client request (`roots/list`, `sampling/createMessage`, ...).
    Request,
}

/// One serialised outgoing JSON-RPC message (no trailing newline; the JSON
/// never contains a raw newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// What the message is.
    pub kind: OutgoingKind,
    /// The message as compact JSON.
    pub json: String,
}

/// The receiving end of a server's outgoing messages.
pub type OutgoingReceiver = mpsc::UnboundedReceiver<Outgoing>;

/// State behind the mutex.
#[derive(Default)]
struct State {
    /// In-flight cancellable requests: id key → (generation, cancel trigger).
    in_flight: HashMap<String, (u64, oneshot::Sender<()>)>,
    /// Server→client requests waiting for the client's response.
    pending: HashMap<String, oneshot::Sender<Result<Value, Value>>>,
    /// Subscribed resource URIs.
    subscriptions: HashSet<String>,
    /// Minimum level of `notifications/message`; `None` = everything.
    min_log_level: Option<LogLevel>,
    /// Protocol version answered to `initialize`.
    negotiated_version: Option<String>,
    /// Whether `notifications/initialized` arrived.
    initialized: bool,
    /// The capabilities the client declared in `initialize`.
    client_capabilities: Option<Value>,
}

struct Inner {
    events: crate::event_log::EventLog,
    options: ServerOptions,
    out: mpsc::UnboundedSender<Outgoing>,
    state: Mutex<State>,
    fail_calls: AtomicU64,
    counter: AtomicU64,
    dynamic_tool: AtomicBool,
    dynamic_resource: AtomicBool,
    next_server_request: AtomicU64,
    next_generation: AtomicU64,
    /// The Tasks extension's tasks (modern era).
    tasks: crate::tasks::TaskStore,
    /// The `slow` calls, counted for `slow_stats`.
    slow_calls: crate::tools::SlowCalls,
}

/// The fixture MCP server core. Cloning is cheap and shares the state.
///
/// Must be driven from within a tokio runtime (it spawns tasks for requests
/// that wait).
#[derive(Clone)]
pub struct FixtureServer {
    inner: Arc<Inner>,
}

impl FixtureServer {
    /// Creates a server and the receiver of its outgoing messages.
    pub fn new(options: ServerOptions) -> (Self, OutgoingReceiver) {
        let (out, rx) = mpsc::unbounded_channel();
        let server = Self {
            inner: Arc::new(Inner {
                events: crate::event_log::EventLog::open(options.event_log.as_deref()),
                options,
                out,
                state: Mutex::new(State::default()),
                fail_calls: AtomicU64::new(0),
                counter: AtomicU64::new(0),
                dynamic_tool: AtomicBool::new(false),
                dynamic_resource: AtomicBool::new(false),
                next_server_request: AtomicU64::new(1),
                next_generation: AtomicU64::new(1),
                tasks: crate::tasks::TaskStore::default(),
                slow_calls: crate::tools::SlowCalls::default(),
            }),
        };
        (server, rx)
    }

    /// The options the server runs with.
    pub fn options(&self) -> &ServerOptions {
        &self.inner.options
    }

    /// The protocol version answered to the last `initialize`, if any.
    pub fn negotiated_version(&self) -> Option<String> {
        self.state().negotiated_version.clone()
    }

    /// Whether the client declared `capability` (e.g. `sampling`, `elicitation`) in its
    /// `initialize` request.
    pub fn client_declares(&self, capability: &str) -> bool {
        self.state()
            .client_capabilities
            .as_ref()
            .and_then(|c| c.get(capability))
            .is_some_and(|c| !c.is_null())
    }

    /// Whether the client sent `notifications/initialized`.
    pub fn is_initialized(&self) -> bool {
        self.state().initialized
    }

    /// Number of in-flight cancellable requests (spawned and not yet answered).
    pub fn in_flight_requests(&self) -> usize {
        self.state().in_flight.len()
    }

    /// The count of `slow` calls (the `slow_stats` tool).
    pub(crate) fn slow_calls(&self) -> &crate::tools::SlowCalls {
        &self.inner.slow_calls
    }

    /// Number of server→client requests still waiting for the client.
    pub fn pending_client_requests(&self) -> usize {
        self.state().pending.len()
    }

    /// Appends an event to the `--event-log` (if any): what a transport around the core logs
    /// (mcp-testkit's HTTP faults).
    pub fn record_event(&self, event: &Value) {
        self.inner.events.record(event);
    }

    /// The Tasks extension's tasks.
    pub(crate) fn tasks(&self) -> &crate::tasks::TaskStore {
        &self.inner.tasks
    }

    /// Counts one `fail` call and returns its 1-based number.
    pub(crate) fn next_fail_call(&self) -> u64 {
        self.inner.fail_calls.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Current value of the `fixture://counter` resource.
    pub(crate) fn counter(&self) -> u64 {
        self.inner.counter.load(Ordering::Relaxed)
    }

    /// Increments `fixture://counter`, returning the new value.
    pub(crate) fn bump_counter(&self) -> u64 {
        self.inner.counter.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether `dynamic_tool` is currently listed.
    pub(crate) fn dynamic_tool_present(&self) -> bool {
        self.inner.dynamic_tool.load(Ordering::Relaxed)
    }

    /// Toggles `dynamic_tool`, returning whether it is now present.
    pub(crate) fn toggle_dynamic_tool(&self) -> bool {
        !self.inner.dynamic_tool.fetch_xor(true, Ordering::Relaxed)
    }

    /// Whether `fixture://dynamic` is currently listed.
    pub(crate) fn dynamic_resource_present(&self) -> bool {
        self.inner.dynamic_resource.load(Ordering::Relaxed)
    }

    /// Toggles `fixture://dynamic`, returning whether it is now present.
    pub(crate) fn toggle_dynamic_resource(&self) -> bool {
        !self
            .inner
            .dynamic_resource
            .fetch_xor(true, Ordering::Relaxed)
    }

    pub(crate) fn subscribe(&self, uri: &str) {
        self.state().subscriptions.insert(uri.to_owned());
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.state().subscriptions.remove(uri);
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.state().subscriptions.contains(uri)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
