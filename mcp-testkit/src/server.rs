//! The transport-agnostic core: [`FixtureServer`] holds the shared state,
//! handles one incoming message at a time and emits [`Outgoing`] messages on
//! a channel.
//!
//! Cheap requests are answered inline, from within [`FixtureServer::handle_line`].
//! Requests that wait (`slow`, `ask_*`, any response under `--delay-ms`) run in
//! spawned tasks registered by request id, so `notifications/cancelled` can
//! drop them before they answer.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc::{
    self, is_valid_id, params_object, req_str, Envelope, RpcError, INVALID_REQUEST,
    METHOD_NOT_FOUND, PARSE_ERROR,
};
use crate::options::ServerOptions;
use crate::{prompts, resources, tools};
use crate::{LATEST_PROTOCOL_VERSION, SERVER_NAME, SERVER_VERSION, SUPPORTED_PROTOCOL_VERSIONS};

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

/// MCP logging levels, in increasing severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    /// Parses an MCP level name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "debug" => Self::Debug,
            "info" => Self::Info,
            "notice" => Self::Notice,
            "warning" => Self::Warning,
            "error" => Self::Error,
            "critical" => Self::Critical,
            "alert" => Self::Alert,
            "emergency" => Self::Emergency,
            _ => return None,
        })
    }

    /// The MCP level name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

/// The answer to one request.
pub(crate) enum Reply {
    /// A `result` value.
    Result(Value),
    /// An `error` object.
    Error(RpcError),
    /// A complete, already serialised response line (hot paths).
    Line(String),
    /// No answer at all (`--hang-on-initialize`).
    Silent,
}

/// A future producing a [`Reply`], run in a spawned task.
pub(crate) type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send + 'static>>;

/// How a request is answered.
pub(crate) enum Dispatch {
    /// Answer now.
    Now(Reply),
    /// Answer when the future completes (cancellable).
    Later(ReplyFuture),
}

impl Dispatch {
    pub(crate) fn result(value: Value) -> Self {
        Self::Now(Reply::Result(value))
    }

    pub(crate) fn error(error: RpcError) -> Self {
        Self::Now(Reply::Error(error))
    }

    pub(crate) fn from_result(result: Result<Value, RpcError>) -> Self {
        match result {
            Ok(value) => Self::result(value),
            Err(error) => Self::error(error),
        }
    }
}

/// What the fixture tells the model about itself.
const INSTRUCTIONS: &str =
    "Fixture MCP server for client tests. Tools: echo, add, slow, fail, crash, \
    trigger_list_changed, bump_resource, large, ask_roots, ask_sampling, ask_elicitation, log, record, job (a task for 2026-07-28 clients), slow_stats. \
    Resources: fixture://counter, fixture://static/hello, fixture://items/{id}. Prompt: greeting.";

/// A modern request's answer: results get `resultType` (and cache hints on lists).
fn modern_dispatch(method: &str, dispatch: Dispatch) -> Dispatch {
    fn shape(method: &str, reply: Reply) -> Reply {
        match reply {
            Reply::Result(mut value) => {
                crate::modern::shape_result(method, &mut value);
                Reply::Result(value)
            }
            Reply::Line(line) => Reply::Line(crate::modern::shape_line(method, line)),
            other => other,
        }
    }
    match dispatch {
        Dispatch::Now(reply) => Dispatch::Now(shape(method, reply)),
        Dispatch::Later(future) => {
            let method = method.to_owned();
            Dispatch::Later(Box::pin(async move { shape(&method, future.await) }))
        }
    }
}

/// Why a server→client request produced no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClientRequestError {
    /// The client answered with a JSON-RPC error object.
    ClientError(Value),
    /// No answer within the timeout.
    TimedOut(Duration),
}

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

    /// Handles one incoming JSON-RPC message (one line, without the newline;
    /// a trailing `\r` and surrounding whitespace are ignored, blank lines are
    /// skipped). Never panics on bad input: it answers with JSON-RPC errors.
    pub fn handle_line(&self, line: &[u8]) {
        let line = line.trim_ascii();
        if line.is_empty() {
            return;
        }
        let envelope: Envelope = match serde_json::from_slice(line) {
            Ok(envelope) => envelope,
            Err(e) => {
                let error = match e.classify() {
                    serde_json::error::Category::Data => {
                        RpcError::new(INVALID_REQUEST, format!("Invalid Request: {e}"))
                    }
                    _ => RpcError::new(PARSE_ERROR, format!("Parse error: {e}")),
                };
                self.send_error(None, &error);
                return;
            }
        };
        let valid_id = envelope.id.filter(|id| is_valid_id(id));
        if envelope.jsonrpc.as_deref() != Some("2.0") {
            self.send_error(
                valid_id,
                &RpcError::new(
                    INVALID_REQUEST,
                    "Invalid Request: `jsonrpc` must be \"2.0\"",
                ),
            );
            return;
        }
        match (envelope.method, envelope.id) {
            (Some(method), Some(id)) => {
                if is_valid_id(id) {
                    self.handle_request(id, &method, envelope.params);
                } else {
                    self.send_error(
                        None,
                        &RpcError::new(
                            INVALID_REQUEST,
                            "Invalid Request: `id` must be a string or a number",
                        ),
                    );
                }
            }
            (Some(method), None) => self.handle_notification(&method, envelope.params),
            (None, Some(id)) if envelope.result.is_some() || envelope.error.is_some() => {
                self.handle_client_response(id, envelope.result, envelope.error);
            }
            _ => self.send_error(
                valid_id,
                &RpcError::new(
                    INVALID_REQUEST,
                    "Invalid Request: neither a request, a notification nor a response",
                ),
            ),
        }
    }

    /// Answers an input message that was too large to be read (id `null`).
    pub fn reject_oversized_message(&self, limit: usize) {
        self.send_error(
            None,
            &RpcError::new(
                INVALID_REQUEST,
                format!("Invalid Request: message exceeds the maximum size of {limit} bytes"),
            ),
        );
    }

    fn handle_request(&self, id: &RawValue, method: &str, params: Option<&RawValue>) {
        if self.inner.events.is_enabled() {
            let id: Value = serde_json::from_str(id.get()).unwrap_or(Value::Null);
            self.inner
                .events
                .record(&json!({"event": "request", "method": method, "id": id}));
        }
        let era = self.inner.options.era;
        let modern = if era.serves_modern() {
            crate::modern::request_era(params)
        } else {
            None
        };
        if let Some(request_era) = &modern {
            if let Err(e) = crate::modern::check(request_era) {
                return self.send_reply(id, Reply::Error(e));
            }
        }
        let dispatch = match method {
            "server/discover" if era.serves_modern() => Dispatch::result(self.discover()),
            "initialize" if era == crate::modern::EraMode::Modern => {
                Dispatch::error(RpcError::new(
                    METHOD_NOT_FOUND,
                    "Method not found: initialize (this server speaks 2026-07-28 only)",
                ))
            }
            "tools/call" => {
                self.record_call(id, params);
                tools::call(self, id, params, modern.as_ref().is_some_and(|m| m.tasks))
            }
            "tasks/get" | "tasks/update" | "tasks/cancel" if modern.is_some() => {
                Dispatch::from_result(self.task_request(method, params, modern.as_ref()))
            }
            "ping" => Dispatch::result(Value::Object(Map::new())),
            "initialize" => self.initialize(params),
            "tools/list" => Dispatch::from_result(tools::list(self, params)),
            "resources/list" => Dispatch::from_result(resources::list(self, params)),
            "resources/templates/list" => Dispatch::from_result(resources::templates_list(params)),
            "resources/read" => Dispatch::from_result(resources::read(self, params)),
            "resources/subscribe" => Dispatch::from_result(resources::subscribe(self, params)),
            "resources/unsubscribe" => Dispatch::from_result(resources::unsubscribe(self, params)),
            "prompts/list" => Dispatch::from_result(prompts::list(self, params)),
            "prompts/get" => Dispatch::from_result(prompts::get(params)),
            "completion/complete" => Dispatch::from_result(prompts::complete(params)),
            "logging/setLevel" => Dispatch::from_result(self.set_level(params)),
            _ => Dispatch::error(RpcError::new(
                METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        };
        let dispatch = match modern {
            Some(_) => modern_dispatch(method, dispatch),
            None => dispatch,
        };
        match dispatch {
            Dispatch::Now(reply) if self.inner.options.delay_ms == 0 => self.send_reply(id, reply),
            Dispatch::Now(reply) => self.spawn_request(id, Box::pin(async move { reply })),
            Dispatch::Later(future) => self.spawn_request(id, future),
        }
    }

    /// Runs `future` in a task registered under the request id so that it
    /// can be cancelled; applies `--delay-ms` before answering.
    fn spawn_request(&self, id: &RawValue, future: ReplyFuture) {
        let id: Box<RawValue> = id.to_owned();
        let key = jsonrpc::id_key_raw(&id);
        let generation = self.inner.next_generation.fetch_add(1, Ordering::Relaxed);
        let (cancel_tx, cancel_rx) = oneshot::channel::<()>();
        self.state()
            .in_flight
            .insert(key.clone(), (generation, cancel_tx));
        let server = self.clone();
        let delay = Duration::from_millis(self.inner.options.delay_ms);
        tokio::spawn(async move {
            let work = async move {
                let reply = future.await;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                reply
            };
            let cancelled = async move {
                // A dropped trigger (duplicate id replaced it) is not a cancellation.
                if cancel_rx.await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let reply = tokio::select! {
                biased;
                () = cancelled => None,
                reply = work => Some(reply),
            };
            match reply {
                Some(reply) => {
                    {
                        let mut state = server.state();
                        if state.in_flight.get(&key).map(|(g, _)| *g) == Some(generation) {
                            state.in_flight.remove(&key);
                        }
                    }
                    server.send_reply(&id, reply);
                }
                None => tracing::debug!(id = %key, "request cancelled; not answering"),
            }
        });
    }

    fn send_reply(&self, id: &RawValue, reply: Reply) {
        let json = match reply {
            Reply::Result(value) => jsonrpc::result_line(id, &value),
            Reply::Error(error) => jsonrpc::error_line(Some(id), &error),
            Reply::Line(line) => line,
            Reply::Silent => return,
        };
        self.emit(OutgoingKind::Response, json);
    }

    /// Sends an error response; delayed by `--delay-ms` like every response.
    fn send_error(&self, id: Option<&RawValue>, error: &RpcError) {
        let json = jsonrpc::error_line(id, error);
        let delay = self.inner.options.delay_ms;
        if delay == 0 {
            self.emit(OutgoingKind::Response, json);
        } else {
            let server = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                server.emit(OutgoingKind::Response, json);
            });
        }
    }

    fn emit(&self, kind: OutgoingKind, json: String) {
        // Output of a message handled inline by the blocking stdio loop is written by that loop
        // right away; everything else (spawned tasks) goes through the channel.
        let Some(outgoing) = crate::stdio::capture_inline(Outgoing { kind, json }) else {
            return;
        };
        if self.inner.out.send(outgoing).is_err() {
            tracing::debug!("outgoing channel closed; message dropped");
        }
    }

    /// Sends a notification to the client.
    pub(crate) fn notify(&self, method: &str, params: &Value) {
        self.emit(
            OutgoingKind::Notification,
            jsonrpc::notification_line(method, params),
        );
    }

    fn handle_notification(&self, method: &str, params: Option<&RawValue>) {
        match method {
            "notifications/initialized" => {
                let first = !std::mem::replace(&mut self.state().initialized, true);
                if first {
                    if let Some(every) = self.inner.options.churn_every_ms {
                        self.start_churn(std::time::Duration::from_millis(every));
                    }
                }
            }
            "notifications/cancelled" => self.cancel(params),
            _ => tracing::debug!(method, "ignoring notification"),
        }
    }

    /// `--churn-every-ms`: changes the tool list and the counter on a timer, until the server
    /// is dropped or its client is gone.
    fn start_churn(&self, every: std::time::Duration) {
        let server = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                ticks.tick().await;
                let Some(inner) = server.upgrade() else {
                    return;
                };
                let server = FixtureServer { inner };
                if server.inner.out.is_closed() {
                    return;
                }
                crate::tools::churn(&server);
            }
        });
    }

    fn cancel(&self, params: Option<&RawValue>) {
        let Ok(params) = params_object(params) else {
            tracing::debug!("notifications/cancelled with invalid params");
            return;
        };
        let Some(request_id) = params.get("requestId") else {
            tracing::debug!("notifications/cancelled without requestId");
            return;
        };
        self.inner
            .events
            .record(&json!({"event": "cancelled", "id": request_id}));
        let key = jsonrpc::id_key(request_id);
        let trigger = self.state().in_flight.remove(&key);
        match trigger {
            Some((_, trigger)) => {
                // The task may have finished meanwhile; then there is nothing to do.
                let _ = trigger.send(());
            }
            None => tracing::debug!(id = %key, "cancellation for an unknown or finished request"),
        }
    }

    /// Appends an event to the `--event-log` (if any).
    pub(crate) fn record_event(&self, event: &Value) {
        self.inner.events.record(event);
    }

    /// Logs an executed `tools/call` (with `--event-log`).
    fn record_call(&self, id: &RawValue, params: Option<&RawValue>) {
        if !self.inner.events.is_enabled() {
            return;
        }
        let params: Value = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        let id: Value = serde_json::from_str(id.get()).unwrap_or(Value::Null);
        self.inner.events.record(&json!({
            "event": "call",
            "id": id,
            "tool": params.get("name").cloned().unwrap_or(Value::Null),
            "call_id": params
                .get("arguments")
                .and_then(|a| a.get("call_id"))
                .cloned()
                .unwrap_or(Value::Null),
        }));
    }

    fn handle_client_response(
        &self,
        id: &RawValue,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
    ) {
        let Ok(Value::String(id)) = serde_json::from_str::<Value>(id.get()) else {
            tracing::debug!(id = id.get(), "response with an id the server never used");
            return;
        };
        let Some(waiter) = self.state().pending.remove(&id) else {
            tracing::debug!(id, "response to an unknown or abandoned server request");
            return;
        };
        let parse =
            |raw: &RawValue| serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null);
        let outcome = match (result, error) {
            (_, Some(error)) => Err(parse(error)),
            (Some(result), None) => Ok(parse(result)),
            (None, None) => Ok(Value::Null),
        };
        // The waiting tool may have been cancelled meanwhile.
        let _ = waiter.send(outcome);
    }

    /// Sends a server→client request and waits for the client's answer.
    pub(crate) async fn request_client(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, ClientRequestError> {
        let n = self
            .inner
            .next_server_request
            .fetch_add(1, Ordering::Relaxed);
        let id = format!("srv-{n}");
        let (tx, rx) = oneshot::channel();
        self.state().pending.insert(id.clone(), tx);
        let mut guard = PendingGuard {
            server: self.clone(),
            id,
            done: false,
        };
        self.emit(
            OutgoingKind::Request,
            jsonrpc::request_line(&guard.id, method, &params),
        );
        let timeout = Duration::from_millis(self.inner.options.client_timeout_ms);
        let outcome = tokio::time::timeout(timeout, rx).await;
        match outcome {
            Ok(Ok(answer)) => {
                guard.done = true;
                answer.map_err(ClientRequestError::ClientError)
            }
            // The sender cannot be dropped while the entry exists unless the
            // guard removed it; treat it like a timeout.
            Ok(Err(_)) | Err(_) => Err(ClientRequestError::TimedOut(timeout)),
        }
    }

    /// `tasks/get`, `tasks/update` or `tasks/cancel` (the request must declare the extension).
    fn task_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
        era: Option<&crate::modern::RequestEra>,
    ) -> Result<Value, RpcError> {
        if !era.is_some_and(|e| e.tasks) {
            return Err(RpcError::new(
                crate::tasks::MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability",
            )
            .with_data(json!({"requiredCapabilities": {"extensions": {crate::tasks::TASKS_EXTENSION: {}}}})));
        }
        let params = crate::jsonrpc::params_object(params)?;
        match method {
            "tasks/get" => self.inner.tasks.get(&params),
            "tasks/update" => self.inner.tasks.update(&params),
            _ => self.inner.tasks.cancel(&params),
        }
    }

    /// The Tasks extension's tasks.
    pub(crate) fn tasks(&self) -> &crate::tasks::TaskStore {
        &self.inner.tasks
    }

    /// The capabilities `initialize` and `server/discover` announce.
    fn capabilities() -> Value {
        json!({
            "tools": { "listChanged": true },
            "resources": { "subscribe": true, "listChanged": true },
            "prompts": { "listChanged": true },
            "logging": {},
            "completions": {}
        })
    }

    fn server_info() -> Value {
        json!({
            "name": SERVER_NAME,
            "title": "MCP fixture server",
            "version": SERVER_VERSION
        })
    }

    fn discover(&self) -> Value {
        crate::modern::discover(Self::capabilities(), Self::server_info(), INSTRUCTIONS)
    }

    fn initialize(&self, params: Option<&RawValue>) -> Dispatch {
        if self.inner.options.hang_on_initialize {
            tracing::debug!("--hang-on-initialize: not answering initialize");
            return Dispatch::Now(Reply::Silent);
        }
        let params = match params_object(params) {
            Ok(params) => params,
            Err(e) => return Dispatch::error(e),
        };
        let requested = match req_str(&params, "protocolVersion") {
            Ok(v) => v,
            Err(e) => return Dispatch::error(e),
        };
        let version = match &self.inner.options.protocol_version {
            Some(forced) => forced.clone(),
            None if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested) => requested.to_owned(),
            None => LATEST_PROTOCOL_VERSION.to_owned(),
        };
        self.state().negotiated_version = Some(version.clone());
        Dispatch::result(json!({
            "protocolVersion": version,
            "capabilities": Self::capabilities(),
            "serverInfo": Self::server_info(),
            "instructions": INSTRUCTIONS
        }))
    }

    fn set_level(&self, params: Option<&RawValue>) -> Result<Value, RpcError> {
        let params = params_object(params)?;
        let name = req_str(&params, "level")?;
        let level = LogLevel::parse(name).ok_or_else(|| {
            RpcError::bad_field(
                "level",
                "one of debug, info, notice, warning, error, critical, alert, emergency",
            )
        })?;
        self.state().min_log_level = Some(level);
        Ok(Value::Object(Map::new()))
    }

    /// Whether a message at `level` passes the level set by `logging/setLevel`.
    pub(crate) fn log_enabled(&self, level: LogLevel) -> bool {
        self.state().min_log_level.is_none_or(|min| level >= min)
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

/// Removes an abandoned server→client request (timeout or cancelled tool)
/// and tells the client with `notifications/cancelled`.
struct PendingGuard {
    server: FixtureServer,
    id: String,
    done: bool,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let removed = self.server.state().pending.remove(&self.id).is_some();
        if removed {
            self.server.notify(
                "notifications/cancelled",
                &json!({
                    "requestId": self.id,
                    "reason": "the fixture server stopped waiting for this request"
                }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn next(rx: &mut OutgoingReceiver) -> Value {
        let out = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("timely message")
            .expect("channel open");
        serde_json::from_str(&out.json).expect("valid json")
    }

    #[tokio::test]
    async fn ping_and_errors_in_process() {
        let (server, mut rx) = FixtureServer::new(ServerOptions::default());
        server.handle_line(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert_eq!(
            next(&mut rx).await,
            json!({"jsonrpc":"2.0","id":1,"result":{}})
        );

        server.handle_line(b"not json at all");
        let v = next(&mut rx).await;
        assert_eq!(v["error"]["code"], PARSE_ERROR);
        assert_eq!(v["id"], Value::Null);

        server.handle_line(b"[1,2]");
        assert_eq!(next(&mut rx).await["error"]["code"], INVALID_REQUEST);

        server.handle_line(br#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#);
        let v = next(&mut rx).await;
        assert_eq!(v["error"]["code"], INVALID_REQUEST);
        assert_eq!(v["id"], "x");

        server.handle_line(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
        assert_eq!(next(&mut rx).await["error"]["code"], INVALID_REQUEST);

        server.handle_line(br#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#);
        assert_eq!(next(&mut rx).await["error"]["code"], METHOD_NOT_FOUND);

        // Unknown notifications and blank lines produce nothing.
        server.handle_line(br#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#);
        server.handle_line(b"   \r");
        server.handle_line(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
        assert_eq!(next(&mut rx).await["id"], 3);
    }

    #[tokio::test]
    async fn initialized_notification_is_recorded() {
        let (server, mut rx) = FixtureServer::new(ServerOptions::default());
        server.handle_line(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        );
        let v = next(&mut rx).await;
        assert_eq!(v["result"]["protocolVersion"], "2024-11-05");
        assert_eq!(server.negotiated_version().as_deref(), Some("2024-11-05"));
        assert!(!server.is_initialized());
        server.handle_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(server.is_initialized());
    }

    #[tokio::test]
    async fn initialize_requires_protocol_version() {
        let (server, mut rx) = FixtureServer::new(ServerOptions::default());
        server.handle_line(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        let v = next(&mut rx).await;
        assert_eq!(v["error"]["code"], jsonrpc::INVALID_PARAMS);
        assert!(v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("protocolVersion")));
    }

    #[tokio::test]
    async fn abandoned_client_request_is_cancelled_towards_client() {
        let options = ServerOptions {
            client_timeout_ms: 50,
            ..ServerOptions::default()
        };
        let (server, mut rx) = FixtureServer::new(options);
        server.handle_line(
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ask_roots","arguments":{}}}"#,
        );
        let request = next(&mut rx).await;
        assert_eq!(request["method"], "roots/list");
        assert_eq!(request["id"], "srv-1");
        let cancelled = next(&mut rx).await;
        assert_eq!(cancelled["method"], "notifications/cancelled");
        assert_eq!(cancelled["params"]["requestId"], "srv-1");
        let response = next(&mut rx).await;
        assert_eq!(response["id"], 9);
        assert_eq!(response["result"]["isError"], true);
        assert_eq!(server.pending_client_requests(), 0);
        assert_eq!(server.in_flight_requests(), 0);
    }

    #[test]
    fn log_levels_are_ordered() {
        assert!(LogLevel::Emergency > LogLevel::Debug);
        assert!(LogLevel::Warning > LogLevel::Notice);
        for name in [
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        ] {
            assert_eq!(LogLevel::parse(name).map(LogLevel::as_str), Some(name));
        }
        assert_eq!(LogLevel::parse("loud"), None);
    }
}
