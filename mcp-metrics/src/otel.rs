//! OpenTelemetry (feature `opentelemetry`): the MCP semantic conventions' metrics and client
//! spans, and the W3C trace context a traced request carries in `params._meta`.
//!
//! # Metrics
//!
//! With a meter ([`MetricsConfig::with_meter`]):
//!
//! - `mcp.client.operation.duration` (histogram, `s`): every call through a
//!   [`MetricsLayer`](crate::MetricsLayer), with `mcp.method.name`, `gen_ai.tool.name` and
//!   `gen_ai.operation.name` = `execute_tool` (a `tools/call`), `gen_ai.prompt.name` (a
//!   `prompts/get`), `error.type` (a failed call: the error kind's name, `tool_error` for a
//!   result with `isError: true`, `cancelled` for a call its caller gave up on),
//!   `network.transport`, and — when the facade told the server's handle —
//!   `mcp.protocol.version`, `server.address`, `server.port` and, for a server routed over
//!   several endpoints, `cloud.region` (the region of the endpoint serving the call:
//!   [`ServerHandle::set_region`](crate::ServerHandle::set_region)).
//! - `mcp.client.session.duration` (histogram, `s`): every
//!   [`ServerHandle::session_ended`](crate::ServerHandle::session_ended), with
//!   `network.transport`, `mcp.protocol.version`, `server.address`, `server.port` and
//!   `error.type` (not `cloud.region`: a session's end is seen after the failover that ended
//!   it may have changed the region already).
//!
//! Both also carry `mcp.server.name`, the configured server name (not a convention
//! attribute, but a client of many servers cannot tell them apart otherwise — a stdio server
//! has no address; turn it off with [`MetricsConfig::with_server_name_attribute`]). Bucket
//! boundaries are the conventions' advice.
//!
//! # Spans and trace context
//!
//! A call is traced when a tracer is configured ([`MetricsConfig::with_tracer`]) or, with
//! [`MetricsConfig::follow_current_context`] (the default), when the caller's OpenTelemetry
//! context has an active span (then the global tracer makes the span; with none installed,
//! the caller's span context itself is propagated). A traced call gets a `CLIENT` span named
//! `{mcp.method.name} {target}` (the tool or prompt name, when there is one) with the
//! attributes above (plus `mcp.resource.uri` for resource reads), ended with the call and
//! marked as an error with `error.type` when it fails; the inner call runs with the span's
//! context current, and the request carries its `traceparent` (and `tracestate`) in
//! `params._meta` through [`RequestOptions::trace_context`](mcp_core::RequestOptions) — the
//! session adds them in its one `_meta` place, for every transport.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_core::types::methods;
use mcp_core::{Operation, TraceContext};
use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::{Histogram, Meter};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue, Value};

use crate::call_end::CallEnd;
use crate::server::ServerMetrics;
use crate::MetricsConfig;

/// The convention's names.
pub mod names {
    /// The client's operation duration histogram.
    pub const OPERATION_DURATION: &str = "mcp.client.operation.duration";
    /// The client's session duration histogram.
    pub const SESSION_DURATION: &str = "mcp.client.session.duration";
    /// The request's method.
    pub const MCP_METHOD_NAME: &str = "mcp.method.name";
    /// The negotiated protocol version.
    pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// A `resources/read`'s URI (spans only: too many values for a metric).
    pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
    /// The configured server name (this crate's, not the conventions').
    pub const MCP_SERVER_NAME: &str = "mcp.server.name";
    /// A `tools/call`'s tool.
    pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    /// A `prompts/get`'s prompt.
    pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
    /// `execute_tool` for a `tools/call`.
    pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    /// Why the operation failed.
    pub const ERROR_TYPE: &str = "error.type";
    /// `pipe`, `tcp`, …
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    /// The server's host.
    pub const SERVER_ADDRESS: &str = "server.address";
    /// The server's port.
    pub const SERVER_PORT: &str = "server.port";
    /// The region the called endpoint is deployed in (the conventions' `cloud.region`, which
    /// for a call to a service names the destination's region).
    pub const CLOUD_REGION: &str = "cloud.region";
}

use names::*;

/// The conventions' advised bucket boundaries (seconds) for both histograms.
const BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The tracer of calls traced because the caller's context had a span.
const TRACER_NAME: &str = "mcp-metrics";

/// The OpenTelemetry part of a [`MetricsConfig`].
#[derive(Clone)]
pub(crate) struct TelemetryConfig {
    meter: Option<Meter>,
    tracer: Option<Arc<BoxedTracer>>,
    follow_current_context: bool,
    server_name_attribute: bool,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            meter: None,
            tracer: None,
            follow_current_context: true,
            server_name_attribute: true,
        }
    }
}

impl fmt::Debug for TelemetryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryConfig")
            .field("meter", &self.meter.is_some())
            .field("tracer", &self.tracer.is_some())
            .field("follow_current_context", &self.follow_current_context)
            .field("server_name_attribute", &self.server_name_attribute)
            .finish()
    }
}

impl MetricsConfig {
    /// Records `mcp.client.operation.duration` and `mcp.client.session.duration` on `meter`
    /// (e.g. `opentelemetry::global::meter("mcp-client")`). See [`otel`](crate::otel).
    pub fn with_meter(mut self, meter: Meter) -> Self {
        self.telemetry.meter = Some(meter);
        self
    }

    /// Traces every call with `tracer` (a client span per call, its trace context sent in
    /// `params._meta`). See [`otel`](crate::otel).
    pub fn with_tracer<T>(mut self, tracer: T) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        self.telemetry.tracer = Some(Arc::new(BoxedTracer::new(Box::new(tracer))));
        self
    }

    /// Whether a call without a configured tracer is traced when its caller's context has an
    /// active span (by the global tracer). Default: true.
    pub fn follow_current_context(mut self, follow: bool) -> Self {
        self.telemetry.follow_current_context = follow;
        self
    }

    /// Whether metrics and spans carry `mcp.server.name`. Default: true.
    pub fn with_server_name_attribute(mut self, on: bool) -> Self {
        self.telemetry.server_name_attribute = on;
        self
    }
}

/// The instruments and tracer of a registry.
pub(crate) struct Telemetry {
    operation: Option<Histogram<f64>>,
    session: Option<Histogram<f64>>,
    tracer: Option<Arc<BoxedTracer>>,
    follow_current_context: bool,
    server_name_attribute: bool,
}

impl Telemetry {
    /// `None` when nothing is to be recorded or traced (the layer then skips this module).
    pub(crate) fn new(config: &TelemetryConfig) -> Option<Telemetry> {
        if config.meter.is_none() && config.tracer.is_none() && !config.follow_current_context {
            return None;
        }
        let histogram = |meter: &Meter, name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(BOUNDARIES.to_vec())
                .build()
        };
        Some(Telemetry {
            operation: config.meter.as_ref().map(|m| {
                histogram(
                    m,
                    OPERATION_DURATION,
                    "The duration of the MCP request as observed on the sender from the time it was sent until the response is received.",
                )
            }),
            session: config.meter.as_ref().map(|m| {
                histogram(
                    m,
                    SESSION_DURATION,
                    "The duration of the MCP session as observed on the MCP client.",
                )
            }),
            tracer: config.tracer.clone(),
            follow_current_context: config.follow_current_context,
            server_name_attribute: config.server_name_attribute,
        })
    }

    /// The server's attributes (transport, version, address, name) and, when `with_region`
    /// (a call's: see the module docs), the region of the endpoint serving it.
    fn server_attributes(
        &self,
        server: &ServerMetrics,
        with_region: bool,
        into: &mut Vec<KeyValue>,
    ) {
        let info = server.info();
        if let Some(transport) = info.network_transport {
            into.push(KeyValue::new(NETWORK_TRANSPORT, Value::from(transport)));
        }
        if let Some(version) = info.protocol_version {
            into.push(KeyValue::new(MCP_PROTOCOL_VERSION, Value::from(version)));
        }
        if let Some(address) = info.address {
            into.push(KeyValue::new(SERVER_ADDRESS, Value::from(address)));
        }
        if let Some(port) = info.port {
            into.push(KeyValue::new(SERVER_PORT, i64::from(port)));
        }
        if let Some(region) = info.region.filter(|_| with_region) {
            into.push(KeyValue::new(CLOUD_REGION, Value::from(region)));
        }
        if self.server_name_attribute {
            into.push(KeyValue::new(
                MCP_SERVER_NAME,
                Value::from(server.name.clone()),
            ));
        }
    }

    /// Starts measuring one call: its attributes and, when traced, its span, whose trace
    /// context goes into the operation's options. `None` when the call is neither metered nor
    /// traced (no meter, no configured tracer, no active span of the caller's to follow): it is
    /// then measured as without OpenTelemetry.
    pub(crate) fn start_call(
        &self,
        server: &ServerMetrics,
        operation: &mut Operation,
    ) -> Option<CallTelemetry<'_>> {
        let tracer = self.tracer_for_call();
        if self.operation.is_none() && tracer.is_none() {
            return None;
        }
        // Method, tool (two) or prompt, five of the server's, and room for `error.type`.
        let mut attributes = Vec::with_capacity(10);
        attributes.push(KeyValue::new(
            MCP_METHOD_NAME,
            Value::from(operation.method.clone()),
        ));
        let target = match (&*operation.method, operation.subject.as_deref()) {
            (methods::TOOLS_CALL, Some(tool)) => {
                attributes.push(KeyValue::new(GEN_AI_TOOL_NAME, tool.to_owned()));
                attributes.push(KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"));
                Some(tool)
            }
            (methods::PROMPTS_GET, Some(prompt)) => {
                attributes.push(KeyValue::new(GEN_AI_PROMPT_NAME, prompt.to_owned()));
                Some(prompt)
            }
            _ => None,
        };
        self.server_attributes(server, true, &mut attributes);
        let context = tracer.map(|tracer| {
            let name = match target {
                Some(target) => format!("{} {target}", operation.method),
                None => operation.method.to_string(),
            };
            let mut span_attributes = attributes.clone();
            if let (methods::RESOURCES_READ, Some(uri)) =
                (&*operation.method, operation.subject.as_deref())
            {
                span_attributes.push(KeyValue::new(MCP_RESOURCE_URI, uri.to_owned()));
            }
            let parent = Context::current();
            let span = tracer.build_with_context(
                tracer
                    .span_builder(name)
                    .with_kind(SpanKind::Client)
                    .with_attributes(span_attributes),
                &parent,
            );
            let context = parent.with_span(span);
            if let Some(trace) = trace_context_of(&context) {
                operation.options.trace_context = Some(trace);
            }
            context
        });
        Some(CallTelemetry {
            telemetry: self,
            attributes,
            context,
        })
    }

    /// The configured tracer, or the global one when the caller's context has a span.
    fn tracer_for_call(&self) -> Option<CallTracer<'_>> {
        if let Some(tracer) = &self.tracer {
            return Some(CallTracer::Configured(tracer));
        }
        (self.follow_current_context && Context::map_current(|cx| cx.has_active_span()))
            .then(|| CallTracer::Global(opentelemetry::global::tracer(TRACER_NAME)))
    }

    pub(crate) fn session_ended(
        &self,
        server: &ServerMetrics,
        duration: Duration,
        error_type: Option<&str>,
    ) {
        let Some(histogram) = &self.session else {
            return;
        };
        let mut attributes = Vec::with_capacity(6);
        self.server_attributes(server, false, &mut attributes);
        if let Some(error_type) = error_type {
            attributes.push(KeyValue::new(ERROR_TYPE, error_type.to_owned()));
        }
        histogram.record(duration.as_secs_f64(), &attributes);
    }
}

/// The tracer of one call: the configured one, or the global one.
enum CallTracer<'a> {
    Configured(&'a BoxedTracer),
    Global(BoxedTracer),
}

impl std::ops::Deref for CallTracer<'_> {
    type Target = BoxedTracer;

    fn deref(&self) -> &BoxedTracer {
        match self {
            CallTracer::Configured(tracer) => tracer,
            CallTracer::Global(tracer) => tracer,
        }
    }
}

/// The W3C trace context of `context`'s span, when it is valid.
fn trace_context_of(context: &Context) -> Option<TraceContext> {
    let span = context.span();
    let span_context = span.span_context();
    if !span_context.is_valid() {
        return None;
    }
    let traceparent = format!(
        "00-{}-{}-{:02x}",
        span_context.trace_id(),
        span_context.span_id(),
        span_context.trace_flags().to_u8()
    );
    let state = span_context.trace_state().header();
    Some(TraceContext::new(
        traceparent,
        (!state.is_empty()).then_some(state),
    ))
}

/// One call's telemetry, finished with the call.
pub(crate) struct CallTelemetry<'a> {
    telemetry: &'a Telemetry,
    attributes: Vec<KeyValue>,
    context: Option<Context>,
}

impl CallTelemetry<'_> {
    /// The context to run the inner call in, when traced.
    pub(crate) fn context(&self) -> Option<Context> {
        self.context.clone()
    }

    pub(crate) fn finish(mut self, end: CallEnd, elapsed: Duration) {
        let error_type = end.error_type();
        if let Some(histogram) = &self.telemetry.operation {
            if let Some(error_type) = error_type {
                self.attributes.push(KeyValue::new(ERROR_TYPE, error_type));
            }
            histogram.record(elapsed.as_secs_f64(), &self.attributes);
        }
        if let Some(context) = self.context.take() {
            let span = context.span();
            if let Some(error_type) = error_type {
                span.set_attribute(KeyValue::new(ERROR_TYPE, error_type));
                span.set_status(Status::error(error_type));
            }
            span.end();
        }
    }
}
