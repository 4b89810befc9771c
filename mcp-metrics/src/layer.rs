//! [`MetricsLayer`]: measures every call through it — count, outcome, latency, rate — and,
//! with OpenTelemetry on, records the semantic-convention histogram and a client span whose
//! trace context the request carries.
//!
//! # The hot path
//!
//! Per call: one lookup of the (method, tool) series in the server's write-once table — by
//! borrowed keys, one inlined hash of one name, no lock, no allocation, no atomic
//! read-modify-write (see `series.rs`); two reads of the registry's clock (the CPU's counter,
//! about 8 ns each, or tokio's clock when the registry was made with it paused: see
//! `clock.rs`); one short spin lock for the counts, the histogram record and the QPS window
//! together (one atomic operation); and the one boxed future every layer has. A successful
//! `tools/call` result is looked at for `isError` (below). With OpenTelemetry configured, the
//! call is measured once polled (the caller's context is current then); when it has a meter or
//! a span (the configured tracer's, or the global one's under the caller's active span) it also
//! builds its attributes, records on the SDK's histogram and ends the span — the SDK's costs,
//! measured apart by the `layer_call` bench — and otherwise costs one look at the caller's
//! context.
//!
//! # What looking for a tool error costs
//!
//! - A typed result (an in-process server's `CallToolResult`, `Payload::Typed`): a type check
//!   and a field read.
//! - An in-memory value: a look at its few members' names.
//! - Raw JSON (every byte transport): one search for `"isError"` over the text — a SIMD
//!   search for its one rare byte (`E`, about 90 bytes per nanosecond: the `layer_call`
//!   bench's 1 KiB row), going on as a substring search if the text has many; a key whose value
//!   is not `true` (the `"isError": false` many servers always write) is passed over where it
//!   is. Only for a key followed by `true`, one parse that borrows the text and skips every
//!   other member with [`IgnoredAny`](serde::de::IgnoredAny) — no allocation, no value tree —
//!   tells whether it is the result's own. A key written with JSON escapes
//!   (`"is\u0045rror"`) is not seen; that only costs the metric, never the call.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use mcp_core::service::CallFuture;
use mcp_core::types::methods;
use mcp_core::{Error, Layer, McpService, Operation, Payload};

use crate::call_end::CallEnd;
use crate::clock::Clock;
use crate::registry::Registry;
use crate::series::OperationSeries;
use crate::server::ServerMetrics;

/// Measures every call to one server (see the [module docs](self)); made by
/// [`Metrics::layer`](crate::Metrics::layer).
///
/// Where it goes in a stack decides what it sees. Outermost (around the timeout layer) it
/// measures what the caller sees: one call however many retries, its whole latency, a
/// timeout as a `timeout` error, a caller giving up as `cancelled`. Innermost (around the
/// session or pool) it would count each attempt instead.
#[derive(Clone)]
pub struct MetricsLayer {
    server: Arc<ServerMetrics>,
    registry: Arc<Registry>,
}

impl MetricsLayer {
    pub(crate) fn new(server: Arc<ServerMetrics>, registry: Arc<Registry>) -> MetricsLayer {
        MetricsLayer { server, registry }
    }

    /// The server this layer measures.
    pub fn server_name(&self) -> &str {
        &self.server.name
    }
}

impl std::fmt::Debug for MetricsLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsLayer")
            .field("server", &self.server.name)
            .finish()
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = MetricsService<S>;

    fn layer(&self, inner: S) -> MetricsService<S> {
        MetricsService {
            inner,
            layer: self.clone(),
        }
    }
}

/// A service whose calls are measured (see [`MetricsLayer`]).
pub struct MetricsService<S> {
    inner: S,
    layer: MetricsLayer,
}

impl<S> MetricsService<S> {
    /// The wrapped service.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S> std::fmt::Debug for MetricsService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsService")
            .field("server", &self.layer.server.name)
            .finish_non_exhaustive()
    }
}

impl MetricsLayer {
    /// The call `next` makes of `operation`, measured: recorded when it ends (or, dropped
    /// unfinished, as cancelled) — what [`MetricsService`] does around its inner service, for a
    /// stack that composes its policies in one future instead of a service per layer. The
    /// measurement starts now (and, with OpenTelemetry, reads the caller's context now): call it
    /// from within the caller's future, where the call starts.
    #[inline]
    pub fn around<'a, F, Fut>(
        &'a self,
        #[allow(unused_mut)] mut operation: Operation,
        next: F,
    ) -> impl Future<Output = Result<Payload, Error>> + 'a
    where
        F: FnOnce(Operation) -> Fut,
        Fut: Future<Output = Result<Payload, Error>> + 'a,
    {
        // The series looked up, the clock read, and with OpenTelemetry the call's span started
        // (its trace context going into the operation) — then the inner call made at once, so
        // the future holds only it and the recording, not the operation.
        let tools_call = operation.method == methods::TOOLS_CALL;
        let series = series_of(&self.server, &operation, tools_call);
        #[allow(unused_mut)]
        let mut recording = Recording::start(series, &self.registry.clock, tools_call);
        #[cfg(feature = "opentelemetry")]
        {
            recording.telemetry = self
                .registry
                .telemetry
                .as_ref()
                .and_then(|telemetry| telemetry.start_call(&self.server, &mut operation));
        }
        Measured {
            inner: next(operation),
            recording,
        }
    }
}

/// The series `operation` is counted in.
#[inline]
fn series_of<'a>(
    server: &'a ServerMetrics,
    operation: &Operation,
    tools_call: bool,
) -> &'a OperationSeries {
    // `Operation::tool_name`, without comparing the method a second time.
    let tool = if tools_call {
        operation.subject.as_deref()
    } else {
        None
    };
    server.series(&operation.method, tool)
}

// Written out instead of with `async_trait`: the work before the inner call is done here, and
// the inner call's (boxed) future is made at once, so the future this layer boxes holds only
// that future and the recording: the operation is not moved into a second, larger box on its
// way down.
impl<S: McpService> McpService for MetricsService<S> {
    fn call<'life0, 'async_trait>(&'life0 self, operation: Operation) -> CallFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        // With OpenTelemetry configured, whether a call is traced is known only once it is
        // polled (the caller's context is current then).
        #[cfg(feature = "opentelemetry")]
        if self.layer.registry.telemetry.is_some() {
            return Box::pin(async move {
                self.layer
                    .around(operation, |operation| self.inner.call(operation))
                    .await
            });
        }
        Box::pin(
            self.layer
                .around(operation, |operation| self.inner.call(operation)),
        )
    }
}

pin_project_lite::pin_project! {
    /// The inner call's future and its recording: records the call when it ends (or, dropped
    /// unfinished, as cancelled). With OpenTelemetry, a traced call is polled with its span's
    /// context current.
    struct Measured<'a, F> {
        #[pin]
        inner: F,
        recording: Recording<'a>,
    }
}

impl<F: Future<Output = Result<Payload, Error>>> Future for Measured<'_, F> {
    type Output = Result<Payload, Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if this.recording.done {
            // Polled again after it completed (a caller's mistake): the call is not counted
            // twice, nor the finished call polled again.
            return Poll::Ready(Err(Error::new(
                mcp_core::ErrorKind::Protocol,
                "MetricsLayer::around's future was polled after it completed",
            )
            .with_delivery(mcp_core::Delivery::NotSent)));
        }
        #[cfg(feature = "opentelemetry")]
        let _current = this
            .recording
            .telemetry
            .as_ref()
            .and_then(|telemetry| telemetry.context())
            .map(opentelemetry::Context::attach);
        let result = ready!(this.inner.poll(cx));
        this.recording
            .finish(CallEnd::of(&result, this.recording.tools_call));
        Poll::Ready(result)
    }
}

/// One call being measured; dropped unfinished, it records the call as cancelled.
struct Recording<'a> {
    series: &'a OperationSeries,
    clock: &'a Clock,
    /// When the call started, on `clock` (nanoseconds).
    started: u64,
    /// Whether the result is looked at for a tool error.
    tools_call: bool,
    done: bool,
    #[cfg(feature = "opentelemetry")]
    telemetry: Option<crate::otel::CallTelemetry<'a>>,
}

impl<'a> Recording<'a> {
    #[inline]
    fn start(series: &'a OperationSeries, clock: &'a Clock, tools_call: bool) -> Recording<'a> {
        Recording {
            series,
            clock,
            started: clock.now(),
            tools_call,
            done: false,
            #[cfg(feature = "opentelemetry")]
            telemetry: None,
        }
    }

    #[inline]
    fn finish(&mut self, end: CallEnd) {
        self.done = true;
        let ended = self.clock.now();
        let elapsed = ended.saturating_sub(self.started);
        self.series.record(end, elapsed, Clock::second(ended));
        #[cfg(feature = "opentelemetry")]
        if let Some(telemetry) = self.telemetry.take() {
            telemetry.finish(end, std::time::Duration::from_nanos(elapsed));
        }
    }
}

impl Drop for Recording<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.finish(CallEnd::Cancelled);
        }
    }
}
