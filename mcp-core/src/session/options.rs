//! Knobs of a session and of one request.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::ErrorCodeTable;
use crate::types::{Implementation, ProgressNotificationParams};
use crate::version::{Era, ProtocolVersion};

use super::EraMemo;

/// Called for every progress notification of one request (on the session's reader task: keep it
/// quick, e.g. update a progress bar or forward to a channel).
pub type ProgressCallback = Arc<dyn Fn(&ProgressNotificationParams) + Send + Sync>;

/// How a [`ClientSession`](super::ClientSession) behaves. `Default` gives the documented defaults.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Who the client says it is. Default: this crate's name and version.
    pub client_info: Implementation,
    /// The version the client prefers. A legacy version is the one offered in `initialize`;
    /// with the modern one (the default, [`ProtocolVersion::LATEST`]) a legacy server is
    /// offered [`ProtocolVersion::LATEST_LEGACY`].
    pub protocol_version: ProtocolVersion,
    /// The era to speak: `None` (the default) detects it per server (the `server/discover`
    /// probe, then `initialize` for a legacy server); `Some` skips detection and fails clearly
    /// when the server does not speak that era.
    pub era: Option<Era>,
    /// Shared by the connections to one server: the era the first one found, so later ones
    /// (reconnects, pooled sessions) skip the probe of a legacy server. Default: none.
    pub era_memo: Option<EraMemo>,
    /// How long the `server/discover` probe waits before deciding the server is legacy (some
    /// legacy servers do not answer unknown requests before `initialize`). Default: 5 s.
    pub discover_timeout: Duration,
    /// How many times one modern request is re-issued with answers to the server's input
    /// requests before it fails. Default: 8.
    pub max_input_rounds: u32,
    /// Deadline for `initialize` (connect + handshake). Default: 30 s.
    pub initialize_timeout: Duration,
    /// Deadline of every request unless overridden. Default: 30 s.
    pub request_timeout: Duration,
    /// Whether a progress notification restarts a request's deadline. Default: false.
    pub reset_timeout_on_progress: bool,
    /// With reset-on-progress, the hard cap on a request's total time. Default: 10 min.
    pub max_request_time: Duration,
    /// How many notifications a slow subscriber may fall behind before it misses some.
    /// Default: 1024.
    pub notification_buffer: usize,
    /// Maps server error codes to error kinds. Default: [`ErrorCodeTable::default`].
    pub error_codes: ErrorCodeTable,
    /// How long [`close`](super::ClientSession::close) lets the transport end the connection
    /// gracefully before the session drops it (which releases everything at once). Default: 10 s.
    pub close_timeout: Duration,
    /// Server→client requests (sampling, elicitation, roots) handled at once, until the
    /// transport took each one's answer; past it the server gets a JSON-RPC error instead of
    /// another task. Default: 32.
    pub max_concurrent_server_requests: usize,
    /// How long the handler may take to answer one server→client request (a human answering
    /// an elicitation included); past it the server gets an error. Default: 10 min.
    pub server_request_timeout: Duration,
    /// Declares the Tasks extension (`io.modelcontextprotocol/tasks`) on every modern request,
    /// so that a server may run a `tools/call` as a task; the session then follows the task to
    /// its end (see [`extensions::tasks`](crate::extensions::tasks)). Default: true.
    pub tasks: bool,
    /// How often a task is polled when the server suggests no `pollIntervalMs`; a server's
    /// suggestion is kept within 20 ms and 30 s. Default: 500 ms.
    pub task_poll_interval: Duration,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            client_info: Implementation::new("mcp-core", env!("CARGO_PKG_VERSION")),
            protocol_version: ProtocolVersion::LATEST,
            era: None,
            era_memo: None,
            discover_timeout: Duration::from_secs(5),
            max_input_rounds: 8,
            initialize_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            reset_timeout_on_progress: false,
            max_request_time: Duration::from_secs(600),
            notification_buffer: 1024,
            error_codes: ErrorCodeTable::default(),
            close_timeout: Duration::from_secs(10),
            max_concurrent_server_requests: 32,
            server_request_timeout: Duration::from_secs(600),
            tasks: true,
            task_poll_interval: Duration::from_millis(500),
        }
    }
}

impl SessionOptions {
    /// Sets the client name and version sent in `initialize`.
    pub fn with_client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_info = Implementation::new(name, version);
        self
    }

    /// Speaks exactly `version`: pins its era (no detection), and for a legacy version
    /// offers it in `initialize`.
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.protocol_version = version;
        self.era = Some(version.era());
        self
    }

    /// Pins the era (no detection).
    pub fn with_era(mut self, era: Era) -> Self {
        self.era = Some(era);
        self
    }

    /// Sets how long the `server/discover` probe waits.
    pub fn with_discover_timeout(mut self, timeout: Duration) -> Self {
        self.discover_timeout = timeout;
        self
    }

    /// Shares an era memo with the other connections to the same server.
    pub fn with_era_memo(mut self, memo: EraMemo) -> Self {
        self.era_memo = Some(memo);
        self
    }

    /// Sets the default request deadline.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the handshake deadline.
    pub fn with_initialize_timeout(mut self, timeout: Duration) -> Self {
        self.initialize_timeout = timeout;
        self
    }

    /// Makes progress restart request deadlines, never beyond `max_total`.
    pub fn with_reset_timeout_on_progress(mut self, max_total: Duration) -> Self {
        self.reset_timeout_on_progress = true;
        self.max_request_time = max_total;
        self
    }

    /// Replaces the error-code table.
    pub fn with_error_codes(mut self, table: ErrorCodeTable) -> Self {
        self.error_codes = table;
        self
    }

    /// Declares the Tasks extension or not (see [`tasks`](Self::tasks)).
    pub fn with_tasks(mut self, tasks: bool) -> Self {
        self.tasks = tasks;
        self
    }
}

/// Per-request overrides and the progress callback.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Overrides [`SessionOptions::request_timeout`]: how long the request may take from the
    /// moment it is issued (queueing, sending, waiting for headers, body and response).
    pub timeout: Option<Duration>,
    /// An absolute deadline that nothing waits past, whatever `timeout` says — set by the
    /// caller or by a timeout layer, so that every attempt of a retried request shares one
    /// deadline.
    pub deadline: Option<Instant>,
    /// Page cap of the `list_all_*` methods. Default: 100.
    pub max_pages: Option<usize>,
    /// Overrides [`SessionOptions::reset_timeout_on_progress`].
    pub reset_timeout_on_progress: Option<bool>,
    /// Overrides [`SessionOptions::max_request_time`].
    pub max_total_time: Option<Duration>,
    /// Receives this request's progress notifications.
    pub on_progress: Option<ProgressCallback>,
    /// A `tools/call` the server runs as a task answers with the task handle (a
    /// `CreateTaskResult`, `resultType: "task"`) instead of the session following the task to
    /// its end. Set by [`TasksExt::call_tool_as_task`](crate::extensions::tasks::TasksExt).
    pub return_task: bool,
    /// A `tasks/get` answers only once the task has ended: the session polls it (and answers
    /// its input requests) within the request's deadline. Set by
    /// [`TasksExt::wait_for_task`](crate::extensions::tasks::TasksExt).
    pub wait_for_task: bool,
    /// The W3C trace context the request carries to the server as `params._meta.traceparent`
    /// (and `tracestate`), as the OpenTelemetry MCP conventions propose; set by a tracing
    /// layer. A `traceparent` or `tracestate` the caller put in `_meta` itself is kept.
    /// Default: none (nothing is added).
    pub trace_context: Option<TraceContext>,
}

/// A W3C trace context (<https://www.w3.org/TR/trace-context/>) as the two strings a request
/// carries in `params._meta`: `traceparent` (`00-<trace id>-<parent id>-<flags>`) and, when
/// there is one, `tracestate`. The session writes them as given (escaped as JSON strings);
/// whoever builds them makes them valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// The `traceparent` value.
    pub traceparent: String,
    /// The `tracestate` value, if any.
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// A trace context of `traceparent` and, when given, `tracestate`.
    pub fn new(traceparent: impl Into<String>, tracestate: Option<String>) -> Self {
        TraceContext {
            traceparent: traceparent.into(),
            tracestate,
        }
    }
}

impl RequestOptions {
    /// No overrides.
    pub fn new() -> Self {
        RequestOptions::default()
    }

    /// Sets how long this request may take.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets an absolute deadline (kept when an earlier one is already set).
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(self.deadline.map_or(deadline, |d| d.min(deadline)));
        self
    }

    /// The moment this request must be over: the earlier of [`deadline`](Self::deadline) and
    /// `started + timeout` (with `default_timeout` when no `timeout` is set).
    pub fn deadline_from(&self, started: Instant, default_timeout: Duration) -> Instant {
        let by_timeout =
            crate::time::deadline_after(started, self.timeout.unwrap_or(default_timeout));
        self.deadline.map_or(by_timeout, |d| d.min(by_timeout))
    }

    /// Sets the page cap of the `list_all_*` methods.
    pub fn with_max_pages(mut self, pages: usize) -> Self {
        self.max_pages = Some(pages);
        self
    }

    /// Lets progress restart the deadline, up to `max_total` in all.
    pub fn with_reset_on_progress(mut self, max_total: Duration) -> Self {
        self.reset_timeout_on_progress = Some(true);
        self.max_total_time = Some(max_total);
        self
    }

    /// Delivers progress notifications to `callback`.
    pub fn on_progress(
        mut self,
        callback: impl Fn(&ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.on_progress = Some(Arc::new(callback));
        self
    }

    /// Sets [`return_task`](Self::return_task).
    pub fn returning_task(mut self) -> Self {
        self.return_task = true;
        self
    }

    /// Sets [`wait_for_task`](Self::wait_for_task).
    pub fn waiting_for_task(mut self) -> Self {
        self.wait_for_task = true;
        self
    }

    /// Sets the [`trace_context`](Self::trace_context) the request carries in `_meta`.
    pub fn with_trace_context(mut self, trace_context: TraceContext) -> Self {
        self.trace_context = Some(trace_context);
        self
    }
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("deadline", &self.deadline)
            .field("max_pages", &self.max_pages)
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("max_total_time", &self.max_total_time)
            .field("on_progress", &self.on_progress.is_some())
            .field("return_task", &self.return_task)
            .field("wait_for_task", &self.wait_for_task)
            .field("trace_context", &self.trace_context)
            .finish()
    }
}
