//! Per-request options: [`RequestOptions`] and what it carries.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Attachments;
use crate::types::ProgressNotificationParams;

/// Called for each progress notification of a request, on the session's reader task: keep it quick.
pub type ProgressCallback = Arc<dyn Fn(&ProgressNotificationParams) + Send + Sync>;

/// What a caller (or a layer) asks of one request: overrides of the session's limits, a deadline,
/// page cap, progress callback, trace context, and attachments for a layer below.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Overrides the session's `request_timeout`: how long the request may take from the
    /// moment it is issued (queueing, sending, waiting for headers, body and response).
    pub timeout: Option<Duration>,
    /// An absolute deadline nothing waits past, whatever `timeout` says, covering every attempt,
    /// queueing and wait (no retry layer sleeps past it); set by the caller or a timeout layer.
    pub deadline: Option<Instant>,
    /// Page cap of the `list_all_*` methods. Default: 100.
    pub max_pages: Option<usize>,
    /// Overrides the session's `reset_timeout_on_progress`.
    pub reset_timeout_on_progress: Option<bool>,
    /// Overrides the session's `max_request_time`.
    pub max_total_time: Option<Duration>,
    /// Receives this request's progress notifications.
    pub on_progress: Option<ProgressCallback>,
    /// The W3C trace context the request carries as `params._meta.traceparent` (and `tracestate`),
    /// as the OpenTelemetry MCP conventions propose; set by a tracing layer. A `traceparent` or
    /// `tracestate` the caller put in `_meta` itself is kept. Default: none (nothing added).
    pub trace_context: Option<TraceContext>,
    /// Values attached for a layer below to read, by type (e.g. `mcp-tasks`' choice to hand back a
    /// task, not follow it); every layer passes them on, the session ignores them. Default: none.
    pub attachments: Attachments,
}

/// A W3C trace context (<https://www.w3.org/TR/trace-context/>) as a request carries it in
/// `params._meta`: `traceparent` (`00-<trace id>-<parent id>-<flags>`) and, if any, `tracestate`,
/// written as given (escaped as JSON strings): whoever builds them makes them valid.
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
        self.cap_deadline(deadline);
        self
    }

    /// [`with_deadline`](Self::with_deadline) in place: the deadline becomes the earlier of the
    /// one set (if any) and `deadline`.
    pub fn cap_deadline(&mut self, deadline: Instant) {
        self.deadline = Some(self.deadline.map_or(deadline, |d| d.min(deadline)));
    }

    /// The earlier of [`deadline`](Self::deadline) and `started + (timeout or default_timeout)`.
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

    /// Sets the [`trace_context`](Self::trace_context) the request carries in `_meta`.
    pub fn with_trace_context(mut self, trace_context: TraceContext) -> Self {
        self.trace_context = Some(trace_context);
        self
    }

    /// Attaches `value` for a layer below (see [`attachments`](Self::attachments)).
    pub fn with_attachment<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.attachments.insert(value);
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
            .field("trace_context", &self.trace_context)
            .field("attachments", &self.attachments)
            .finish()
    }
}
