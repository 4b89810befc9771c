//! [`MetricsLayer`]: measures every call through it — count, outcome, latency, rate — and,
//! with OpenTelemetry on, records the semantic-convention histogram and a client span whose
//! trace context the request carries.
//!
//! # The hot path
//!
//! Per call: one lookup of the (method, tool) series in the server's write-once table — by
//! borrowed keys, no lock, no allocation, no atomic read-modify-write (see `series.rs`);
//! `Instant::now()` twice (tokio's clock, so tests can pause it); one short `Mutex` for the
//! counts and the histogram record together; one compare-and-swap on the lock-free QPS
//! window; and the one boxed future every layer has. A successful `tools/call` result is
//! looked at for `isError` (below). With OpenTelemetry on, the call also builds its
//! attributes, records on the SDK's histogram and, when traced, starts and ends a span — the
//! SDK's costs, measured apart by the `layer_call` bench.
//!
//! # What looking for a tool error costs
//!
//! - A typed result (an in-process server's `CallToolResult`, `Payload::Typed`): a type check
//!   and a field read.
//! - An in-memory value: one map lookup.
//! - Raw JSON (every byte transport): one substring search for `"isError"` over the text
//!   (`memchr`'s SIMD search, tens of bytes per nanosecond: the `layer_call` bench's 1 KiB
//!   row); only when the key is there, one parse that borrows the text and skips every other
//!   member with [`IgnoredAny`](serde::de::IgnoredAny) — no allocation, no value tree. A key
//!   written with JSON escapes (`"is\u0045rror"`) is not seen; that only costs the metric,
//!   never the call.

use std::sync::Arc;

use mcp_core::service::CallFuture;
use mcp_core::types::methods;
use mcp_core::{Layer, McpService, Operation};
use tokio::time::Instant;

use crate::outcome::Outcome;
use crate::registry::{Clock, Registry};
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
            clock: self.registry.clock,
            server: self.server.clone(),
            registry: self.registry.clone(),
        }
    }
}

/// A service whose calls are measured (see [`MetricsLayer`]).
pub struct MetricsService<S> {
    inner: S,
    clock: Clock,
    server: Arc<ServerMetrics>,
    #[cfg_attr(not(feature = "opentelemetry"), allow(dead_code))]
    registry: Arc<Registry>,
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
            .field("server", &self.server.name)
            .finish_non_exhaustive()
    }
}

// Written out instead of with `async_trait`: the work before the inner call is done here, and
// the inner call's (boxed) future is made at once, so the future this layer boxes holds only
// that future and the recording — the operation is not moved into a second, larger box on
// its way down.
impl<S: McpService> McpService for MetricsService<S> {
    fn call<'life0, 'async_trait>(&'life0 self, operation: Operation) -> CallFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        // OpenTelemetry reads the caller's context, which is current only once the call is
        // polled (`service.call(op).with_context(cx)`): all of it runs then.
        #[cfg(feature = "opentelemetry")]
        if let Some(telemetry) = &self.registry.telemetry {
            return Box::pin(self.call_with_telemetry(telemetry, operation));
        }
        let tools_call = operation.method == methods::TOOLS_CALL;
        let series = self.series(&operation, tools_call);
        let recording = Recording::start(series, self.clock);
        let inner = self.inner.call(operation);
        Box::pin(async move {
            let mut recording = recording;
            let result = inner.await;
            recording.finish(Outcome::of(&result, tools_call));
            result
        })
    }
}

impl<S: McpService> MetricsService<S> {
    #[inline]
    fn series(&self, operation: &Operation, tools_call: bool) -> &OperationSeries {
        // `Operation::tool_name`, without comparing the method a second time.
        let tool = if tools_call {
            operation.subject.as_deref()
        } else {
            None
        };
        self.server.series(&operation.method, tool)
    }

    #[cfg(feature = "opentelemetry")]
    async fn call_with_telemetry(
        &self,
        telemetry: &crate::otel::Telemetry,
        mut operation: Operation,
    ) -> Result<mcp_core::Payload, mcp_core::Error> {
        use opentelemetry::context::FutureExt;

        let tools_call = operation.method == methods::TOOLS_CALL;
        let series = self.series(&operation, tools_call);
        let call = telemetry.start_call(&self.server, &mut operation);
        let context = call.context();
        let mut recording = Recording::start(series, self.clock);
        recording.telemetry = Some(call);
        let result = match context {
            // The inner call runs with the span's context current.
            Some(context) => self.inner.call(operation).with_context(context).await,
            None => self.inner.call(operation).await,
        };
        recording.finish(Outcome::of(&result, tools_call));
        result
    }
}

/// One call being measured; dropped unfinished, it records the call as cancelled.
struct Recording<'a> {
    series: &'a OperationSeries,
    clock: Clock,
    started: Instant,
    done: bool,
    #[cfg(feature = "opentelemetry")]
    telemetry: Option<crate::otel::CallTelemetry<'a>>,
}

impl<'a> Recording<'a> {
    fn start(series: &'a OperationSeries, clock: Clock) -> Recording<'a> {
        Recording {
            series,
            clock,
            started: Instant::now(),
            done: false,
            #[cfg(feature = "opentelemetry")]
            telemetry: None,
        }
    }

    fn finish(&mut self, outcome: Outcome) {
        self.done = true;
        let ended = Instant::now();
        let elapsed = ended.saturating_duration_since(self.started);
        self.series
            .record(outcome, elapsed, self.clock.second(ended));
        #[cfg(feature = "opentelemetry")]
        if let Some(telemetry) = self.telemetry.take() {
            telemetry.finish(outcome, elapsed);
        }
    }
}

impl Drop for Recording<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.finish(Outcome::Cancelled);
        }
    }
}
