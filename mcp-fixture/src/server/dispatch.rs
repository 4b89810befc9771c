//! Reading one incoming message and routing it: a request to its method (and, for a modern
//! request, shaping its result), a notification, a client's response; `notifications/cancelled`
//! and the `--churn-every-ms` timer it starts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::FixtureServer;
use crate::jsonrpc::{
    self, is_valid_id, params_object, Envelope, RpcError, INVALID_REQUEST, METHOD_NOT_FOUND,
    PARSE_ERROR,
};
use crate::{prompts, resources, tools};

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

/// A modern request's answer: results get `resultType` (and cache hints on lists).
fn modern_dispatch(method: &str, dispatch: Dispatch) -> Dispatch {
    fn shape(method: &str, reply: Reply) -> Reply {
        match reply {
            Reply::Result(mut value) => {
                crate::modern::shape_result(method, &mut value);
                Reply::Result(value)
            }
            Reply::Line(line) => Reply::Line(crate::modern::shape_line(method, line)),
            Reply::Error(error) => Reply::Error(crate::modern::shape_error(method, error)),
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

impl FixtureServer {
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
            "resources/templates/list" => {
                Dispatch::from_result(resources::templates_list(self, params))
            }
            "resources/read" => Dispatch::from_result(resources::read(self, params)),
            "resources/subscribe" => Dispatch::from_result(resources::subscribe(self, params)),
            "resources/unsubscribe" => Dispatch::from_result(resources::unsubscribe(self, params)),
            "prompts/list" => Dispatch::from_result(prompts::list(self, params)),
            "prompts/get" => Dispatch::from_result(prompts::get(self, params)),
            "completion/complete" => Dispatch::from_result(prompts::complete(self, params)),
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
}
