//! The error taxonomy: what kind of failure, whether a retry can help, and what the agent is told.
//!
//! Every failure the client reports is an [`Error`] of one [`ErrorKind`]. JSON-RPC error codes from
//! servers map to kinds through the session's `ErrorCodeTable` (`mcp-session`), which a harness can
//! extend. Each error renders a short, stable, agent-facing sentence ([`Error::agent_message`])
//! that says what happened and what to do, without internal detail or secrets.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::jsonrpc::ErrorObject;

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The connection failed, closed or could not be established.
    Network,
    /// No answer within the deadline.
    Timeout,
    /// Credentials missing, expired or rejected.
    Auth,
    /// The tool (or server-side handler) failed.
    Tool,
    /// No such tool.
    ToolNotFound,
    /// The arguments were rejected.
    InvalidParams,
    /// Authenticated, but not allowed.
    PermissionDenied,
    /// A resource could not be found or read.
    Resource,
    /// The peer broke the protocol (malformed message, unsupported version, …).
    Protocol,
    /// A circuit breaker is open for the server or tool.
    CircuitOpen,
    /// The server is marked unavailable after repeated reconnect failures.
    ServerUnavailable,
    /// A cached result is known to be stale.
    StaleCache,
    /// The client's own rate limit for the server was reached (the call was never sent).
    RateLimited,
}

impl ErrorKind {
    /// Every kind, for tables and tests.
    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::Network,
        ErrorKind::Timeout,
        ErrorKind::Auth,
        ErrorKind::Tool,
        ErrorKind::ToolNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::PermissionDenied,
        ErrorKind::Resource,
        ErrorKind::Protocol,
        ErrorKind::CircuitOpen,
        ErrorKind::ServerUnavailable,
        ErrorKind::StaleCache,
        ErrorKind::RateLimited,
    ];

    /// Whether the failure is transient: retrying the same call may succeed. Never for a wrong tool
    /// name, bad arguments, failed or insufficient credentials, or protocol violations: the same
    /// request would fail the same way. Transient is not *safe to send again*: a
    /// [`Tool`](Self::Tool) error (the fallback for every unknown error code) or a
    /// [`Timeout`](Self::Timeout) may follow a tool that already ran; retry layers also ask if the
    /// request is idempotent and how far it got ([`Error::delivery`]).
    pub const fn is_retryable(self) -> bool {
        use ErrorKind::*;
        match self {
            Network | Timeout | Tool | Resource | CircuitOpen => true,
            ServerUnavailable | StaleCache | RateLimited => true,
            Auth | ToolNotFound | InvalidParams | PermissionDenied | Protocol => false,
        }
    }

    /// A stable snake_case name (used as the OpenTelemetry `error.type`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Network => "network_error",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Auth => "auth_error",
            ErrorKind::Tool => "tool_error",
            ErrorKind::ToolNotFound => "tool_not_found",
            ErrorKind::InvalidParams => "invalid_params",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::Resource => "resource_error",
            ErrorKind::Protocol => "protocol_error",
            ErrorKind::CircuitOpen => "circuit_open",
            ErrorKind::ServerUnavailable => "server_unavailable",
            ErrorKind::StaleCache => "stale_cache",
            ErrorKind::RateLimited => "rate_limited",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far a request got before it failed, which decides whether a side-effecting retry is safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// The request never left the client (connection refused, session closed, the server refused
    /// the session before reading it): sending it again cannot run anything twice.
    NotSent,
    /// Handed over: the server may have got and acted on it (connection died, no answer in time).
    Sent,
    /// The server answered (with an error).
    Answered,
}

impl Delivery {
    /// A stable snake_case name, for logs and tests.
    pub const fn as_str(self) -> &'static str {
        match self {
            Delivery::NotSent => "not_sent",
            Delivery::Sent => "sent",
            Delivery::Answered => "answered",
        }
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The breaker cool-down the agent is told about when none is known.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(30);

/// A failure: its kind, the technical detail, and what the agent should be told. Cheap to clone
/// (one shared allocation: one transport failure can fail many requests), small to return.
#[derive(Clone)]
pub struct Error {
    inner: Arc<ErrorInner>,
}

#[derive(Clone)]
struct ErrorInner {
    kind: ErrorKind,
    message: String,
    code: Option<i64>,
    data: Option<Value>,
    subject: Option<String>,
    field: Option<String>,
    retry_after: Option<Duration>,
    delivery: Option<Delivery>,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// An error of `kind` with a technical message (for logs and developers).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            inner: Arc::new(ErrorInner {
                kind,
                message: message.into(),
                code: None,
                data: None,
                subject: None,
                field: None,
                retry_after: None,
                delivery: None,
                source: None,
            }),
        }
    }

    fn edit(&mut self) -> &mut ErrorInner {
        Arc::make_mut(&mut self.inner)
    }

    /// A [`ErrorKind::Network`] error.
    pub fn network(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Network, message)
    }

    /// A [`ErrorKind::Timeout`] error.
    pub fn timeout(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Timeout, message)
    }

    /// A [`ErrorKind::Protocol`] error.
    pub fn protocol(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Protocol, message)
    }

    /// The error of a request whose parameters could not be encoded ([`Delivery::NotSent`]).
    pub fn unencodable(e: serde_json::Error) -> Self {
        let message = format!("could not encode the request: {e}");
        Error::new(ErrorKind::InvalidParams, message).with_delivery(Delivery::NotSent)
    }

    /// The error a server answered with (a JSON-RPC error response), of the `kind` its code maps
    /// to (the session's `ErrorCodeTable`); keeps code, message and data ([`Delivery::Answered`]).
    pub fn answered(kind: ErrorKind, error: ErrorObject) -> Self {
        let mut answered = Error::new(kind, error.message).with_delivery(Delivery::Answered);
        let inner = answered.edit();
        (inner.code, inner.data) = (Some(error.code), error.data);
        answered
    }

    /// Names the tool, resource or prompt the error is about (used in [`Error::agent_message`]).
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.edit().subject = Some(subject.into());
        self
    }

    /// Names the offending argument field of an [`ErrorKind::InvalidParams`] error.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.edit().field = Some(field.into());
        self
    }

    /// When a retry will next be attempted (e.g. a breaker's cool-down).
    pub fn with_retry_after(mut self, after: Duration) -> Self {
        self.edit().retry_after = Some(after);
        self
    }

    /// Records how far the request got (set by the session engine and the transports).
    pub fn with_delivery(mut self, delivery: Delivery) -> Self {
        if self.inner.delivery != Some(delivery) {
            self.edit().delivery = Some(delivery);
        }
        self
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.edit().source = Some(Arc::new(source));
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// Whether a retry may succeed ([`ErrorKind::is_retryable`]); not whether it is *safe*: that
    /// depends on the request ([`Operation::idempotent`](crate::Operation)) and
    /// [`delivery`](Self::delivery).
    pub fn is_retryable(&self) -> bool {
        self.inner.kind.is_retryable()
    }

    /// How far the request got, when this error is about one: `None` for errors that are not about
    /// a request (configuration, start-up). A retry layer treats `None` like [`Delivery::Sent`].
    pub fn delivery(&self) -> Option<Delivery> {
        self.inner.delivery
    }

    /// True when the request provably never reached the server ([`Delivery::NotSent`]).
    pub fn was_never_sent(&self) -> bool {
        self.inner.delivery == Some(Delivery::NotSent)
    }

    /// The technical message.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The JSON-RPC error code, when the server sent one.
    pub fn code(&self) -> Option<i64> {
        self.inner.code
    }

    /// The JSON-RPC error data, when the server sent some.
    pub fn data(&self) -> Option<&Value> {
        self.inner.data.as_ref()
    }

    /// The tool, resource or prompt the error is about.
    pub fn subject(&self) -> Option<&str> {
        self.inner.subject.as_deref()
    }

    /// The offending field of an invalid-params error, when known.
    pub fn field(&self) -> Option<&str> {
        self.inner.field.as_deref()
    }

    /// When a retry will next be attempted, when known.
    pub fn retry_after(&self) -> Option<Duration> {
        self.inner.retry_after
    }

    /// The sentence an agent (and the model behind it) is shown: what happened to which tool,
    /// and what to do. Stable wording; no internal detail beyond the tool's own failure text.
    pub fn agent_message(&self) -> String {
        use ErrorKind::*;
        let tool = self.inner.subject.as_deref().unwrap_or("(unknown)");
        match self.inner.kind {
            Network | Timeout | ServerUnavailable => {
                format!("tool {tool} is unavailable: server not responding")
            }
            CircuitOpen => format!(
                "tool {tool} is temporarily disabled: the server failed repeatedly; retrying automatically in {}s",
                self.inner.retry_after.unwrap_or(DEFAULT_RETRY_AFTER).as_secs()
            ),
            ToolNotFound => {
                format!("tool {tool} does not exist: check the tool name and server configuration")
            }
            Auth => format!("tool {tool} authentication failed: reconnect the MCP server"),
            InvalidParams => match &self.inner.field {
                Some(field) => format!("tool {tool} parameter error: field {field} is malformed"),
                None => format!("tool {tool} parameter error: {}", self.inner.message),
            },
            StaleCache => {
                format!("tool {tool} returned a stale cached result: fetching fresh data")
            }
            PermissionDenied => format!("tool {tool} is not permitted: the server denied access"),
            Resource => format!("resource {tool} is unavailable: {}", self.inner.message),
            Protocol => format!("tool {tool} is unavailable: the server broke the protocol"),
            Tool => format!("tool {tool} failed: {}", self.inner.message),
            RateLimited => format!(
                "tool {tool} is rate-limited: too many calls to its server; try again in {}s",
                self.inner
                    .retry_after
                    .map_or(1, |d| d.as_secs_f64().ceil().max(1.0) as u64)
            ),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.inner.kind, self.inner.message)?;
        if let Some(code) = self.inner.code {
            write!(f, " (code {code})")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind)
            .field("message", &self.inner.message);
        if let Some(code) = self.inner.code {
            d.field("code", &code);
        }
        if let Some(subject) = &self.inner.subject {
            d.field("subject", subject);
        }
        if let Some(field) = &self.inner.field {
            d.field("field", field);
        }
        if let Some(delivery) = &self.inner.delivery {
            d.field("delivery", delivery);
        }
        if let Some(source) = &self.inner.source {
            d.field("source", &source.to_string());
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|s| s.as_ref() as &(dyn std::error::Error + 'static))
    }
}
