//! OpenTelemetry: the MCP semantic conventions' histograms read back from the SDK's in-memory
//! exporter, client spans, and the W3C trace context a request carries in `params._meta` —
//! through the layer and through a real session.

#![cfg(feature = "opentelemetry")]

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_core::jsonrpc::{Message, Response};
use mcp_core::{
    Era, ErrorKind, Layer, McpService, McpServiceExt, Payload, RequestOptions, TraceContext,
};
use mcp_metrics::{Metrics, MetricsConfig};
use mcp_session::{ChannelTransport, ClientSession, SessionOptions};
use opentelemetry::context::FutureExt;
use opentelemetry::metrics::MeterProvider;
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use support::{error, tool_call, tool_result, Scripted, Step};

/// One histogram data point: its attributes, count and sum.
#[derive(Debug)]
struct Point {
    attributes: BTreeMap<String, String>,
    count: u64,
    sum: f64,
}

struct MeterFixture {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

impl MeterFixture {
    fn new() -> MeterFixture {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_periodic_exporter(exporter.clone())
            .build();
        MeterFixture { provider, exporter }
    }

    fn config(&self) -> MetricsConfig {
        MetricsConfig::new().with_meter(self.provider.meter("mcp-metrics-test"))
    }

    /// The points of histogram `name` (checking its unit is seconds).
    fn histogram(&self, name: &str) -> Vec<Point> {
        self.provider.force_flush().unwrap();
        let exported = self.exporter.get_finished_metrics().unwrap();
        let mut points = Vec::new();
        for resource in &exported {
            for scope in resource.scope_metrics() {
                for metric in scope.metrics().filter(|m| m.name() == name) {
                    assert_eq!(metric.unit(), "s", "{name}'s unit");
                    let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data()
                    else {
                        panic!("{name} is not an f64 histogram: {:?}", metric.data());
                    };
                    for point in histogram.data_points() {
                        points.push(Point {
                            attributes: point
                                .attributes()
                                .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                                .collect(),
                            count: point.count(),
                            sum: point.sum(),
                        });
                    }
                }
            }
        }
        points
    }
}

fn attributes(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn operation_durations_follow_the_semantic_conventions() {
    let fixture = MeterFixture::new();
    let metrics = Metrics::with_config(fixture.config().follow_current_context(false));
    let inner = Scripted::new(|op| match op.subject.as_deref() {
        Some("missing") => Step::Answer(Err(error(ErrorKind::ToolNotFound))),
        Some("failing") => {
            Step::Answer(Ok(Payload::Value(json!({"content": [], "isError": true}))))
        }
        _ => Step::After(Duration::from_millis(1500), Ok(tool_result())),
    });
    let handle = metrics.server("github");
    handle.set_protocol_version(Some("2025-11-25"));
    handle.set_server_address(Some("api.example.com"), Some(443));
    let service = metrics.layer("github", "tcp").layer(inner);
    service.call(tool_call("search")).await.unwrap();
    service.call(tool_call("search")).await.unwrap();
    service.call(tool_call("missing")).await.unwrap_err();
    service.call(tool_call("failing")).await.unwrap();
    service
        .call(mcp_core::Operation::new("prompts/get", None).with_subject("review"))
        .await
        .unwrap();

    let mut points = fixture.histogram("mcp.client.operation.duration");
    points.sort_by(|a, b| a.attributes.cmp(&b.attributes));
    let common = [
        ("mcp.protocol.version", "2025-11-25"),
        ("mcp.server.name", "github"),
        ("network.transport", "tcp"),
        ("server.address", "api.example.com"),
        ("server.port", "443"),
    ];
    let with = |extra: &[(&str, &str)]| {
        let mut all = attributes(&common);
        all.extend(attributes(extra));
        all
    };
    let tool = |name: &'static str| {
        vec![
            ("mcp.method.name", "tools/call"),
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
        ]
    };
    let mut expected = vec![
        with(&[
            ("mcp.method.name", "prompts/get"),
            ("gen_ai.prompt.name", "review"),
        ]),
        with(&[tool("failing"), vec![("error.type", "tool_error")]].concat()),
        with(&[tool("missing"), vec![("error.type", "tool_not_found")]].concat()),
        with(&tool("search")),
    ];
    expected.sort();
    let seen: Vec<_> = points.iter().map(|p| p.attributes.clone()).collect();
    assert_eq!(seen, expected);
    let search = points
        .iter()
        .find(|p| p.attributes.get("gen_ai.tool.name").map(String::as_str) == Some("search"))
        .unwrap();
    assert_eq!(search.count, 2);
    assert!(
        (search.sum - 3.0).abs() < 1e-9,
        "in seconds: {}",
        search.sum
    );
}

#[tokio::test]
async fn session_durations_are_recorded_with_their_error_type() {
    let fixture = MeterFixture::new();
    let metrics = Metrics::with_config(fixture.config());
    let _layer = metrics.layer("fs", "pipe");
    let fs = metrics.server("fs");
    fs.set_protocol_version(Some("2026-07-28"));
    fs.session_ended(Duration::from_secs(90), None);
    fs.session_ended(Duration::from_secs(30), Some("network_error"));
    let mut points = fixture.histogram("mcp.client.session.duration");
    points.sort_by(|a, b| a.attributes.cmp(&b.attributes));
    let base = [
        ("mcp.protocol.version", "2026-07-28"),
        ("mcp.server.name", "fs"),
        ("network.transport", "pipe"),
    ];
    let mut failed = attributes(&base);
    failed.insert("error.type".into(), "network_error".into());
    let seen: Vec<_> = points
        .iter()
        .map(|p| (p.attributes.clone(), p.count, p.sum))
        .collect();
    assert_eq!(seen, [(failed, 1, 30.0), (attributes(&base), 1, 90.0)]);
}

struct TracerFixture {
    provider: SdkTracerProvider,
    exporter: InMemorySpanExporter,
}

impl TracerFixture {
    fn new() -> TracerFixture {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        TracerFixture { provider, exporter }
    }

    fn spans(&self) -> Vec<SpanData> {
        self.provider.force_flush().unwrap();
        self.exporter.get_finished_spans().unwrap()
    }
}

/// Splits a `traceparent` into its four fields, checking the W3C shape.
fn parse_traceparent(traceparent: &str) -> (String, String, String) {
    let fields: Vec<_> = traceparent.split('-').collect();
    assert_eq!(fields.len(), 4, "{traceparent}");
    let hex = |s: &str, len: usize| {
        assert_eq!(s.len(), len, "{traceparent}");
        assert!(
            s.chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
            "{traceparent}"
        );
    };
    assert_eq!(fields[0], "00");
    hex(fields[1], 32);
    hex(fields[2], 16);
    hex(fields[3], 2);
    assert_ne!(fields[1], "0".repeat(32));
    (
        fields[1].to_owned(),
        fields[2].to_owned(),
        fields[3].to_owned(),
    )
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

#[tokio::test]
async fn a_traced_call_has_a_client_span_whose_context_the_request_carries() {
    let traces = TracerFixture::new();
    let metrics = Metrics::with_config(
        MetricsConfig::new().with_tracer(traces.provider.tracer("mcp-metrics-test")),
    );
    let inner = Scripted::new(|op| match op.subject.as_deref() {
        Some("missing") => Step::Answer(Err(error(ErrorKind::ToolNotFound))),
        _ => Step::Answer(Ok(tool_result())),
    });
    let service = metrics.layer("github", "tcp").layer(inner.clone());
    service.call(tool_call("search")).await.unwrap();
    service.call(tool_call("missing")).await.unwrap_err();

    let spans = traces.spans();
    assert_eq!(spans.len(), 2);
    let seen = inner.seen();
    for (span, options) in spans.iter().zip(&seen) {
        let trace = options.trace_context.as_ref().expect("a trace context");
        let (trace_id, span_id, flags) = parse_traceparent(&trace.traceparent);
        assert_eq!(trace_id, span.span_context.trace_id().to_string());
        assert_eq!(span_id, span.span_context.span_id().to_string());
        assert_eq!(flags, "01", "sampled");
        assert_eq!(trace.tracestate, None);
        assert_eq!(span.span_kind, SpanKind::Client);
        assert_eq!(
            attribute(span, "mcp.method.name"),
            Some(&Value::from("tools/call"))
        );
        assert_eq!(
            attribute(span, "network.transport"),
            Some(&Value::from("tcp"))
        );
    }
    assert_eq!(spans[0].name, "tools/call search");
    assert_eq!(
        attribute(&spans[0], "gen_ai.tool.name"),
        Some(&Value::from("search"))
    );
    assert_eq!(spans[0].status, Status::Unset);
    assert_eq!(attribute(&spans[0], "error.type"), None);
    assert_eq!(spans[1].name, "tools/call missing");
    assert_eq!(
        attribute(&spans[1], "error.type"),
        Some(&Value::from("tool_not_found"))
    );
    assert!(matches!(spans[1].status, Status::Error { .. }));
    // Two calls, two traces.
    assert_ne!(
        spans[0].span_context.trace_id(),
        spans[1].span_context.trace_id()
    );
}

/// A legacy server on the far end of a channel that answers `initialize` and each
/// `tools/call`, and reports the `_meta` each call arrived with.
async fn serve_and_report_meta(
    mut end: mcp_session::ServerEnd,
    reports: tokio::sync::mpsc::UnboundedSender<serde_json::Value>,
) {
    while let Some(message) = end.incoming.recv().await {
        let Message::Request(request) = message else {
            continue;
        };
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "reporter", "version": "1"}
            }),
            "tools/call" => {
                let params = request.params.clone().unwrap().into_value().unwrap();
                let _ = reports.send(params["_meta"].clone());
                json!({"content": [{"type": "text", "text": "ok"}]})
            }
            _ => json!({}),
        };
        let response = Response::success(request.id, Payload::Value(result));
        if end.outgoing.send(response.into()).await.is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn the_traceparent_reaches_the_server_in_params_meta() {
    let traces = TracerFixture::new();
    let metrics = Metrics::with_config(
        MetricsConfig::new().with_tracer(traces.provider.tracer("mcp-metrics-test")),
    );
    let (transport, end) = ChannelTransport::pair(16);
    let (reports, mut reported) = tokio::sync::mpsc::unbounded_channel();
    let server = tokio::spawn(serve_and_report_meta(end, reports));
    let session = ClientSession::connect(
        transport,
        (),
        SessionOptions::default().with_era(Era::Legacy),
    )
    .await
    .unwrap();
    let service = metrics.layer("reporter", "inproc").layer(session.clone());
    let result = service
        .call_tool("echo", Some(json!({"text": "x"})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(result.text(), "ok");
    let meta = tokio::time::timeout(Duration::from_secs(10), reported.recv())
        .await
        .unwrap()
        .unwrap();
    let spans = traces.spans();
    assert_eq!(spans.len(), 1);
    let (trace_id, span_id, _) = parse_traceparent(meta["traceparent"].as_str().unwrap());
    assert_eq!(trace_id, spans[0].span_context.trace_id().to_string());
    assert_eq!(span_id, spans[0].span_context.span_id().to_string());
    // The session's own member is still there.
    assert!(meta["progressToken"].is_i64());
    session.close().await;
    server.await.unwrap();
}

#[tokio::test]
async fn a_callers_active_span_is_the_parent_without_a_configured_tracer() {
    let traces = TracerFixture::new();
    // No tracer configured; no global tracer provider installed either (this test's process
    // sets none), so the caller's own span context is what the request carries.
    let metrics = Metrics::new();
    let inner = Scripted::ok();
    let service = metrics.layer("fs", "pipe").layer(inner.clone());
    let parent = traces.provider.tracer("caller").start("agent step");
    let parent_context = parent.span_context().clone();
    let context = Context::current_with_span(parent);
    service
        .call(tool_call("echo"))
        .with_context(context.clone())
        .await
        .unwrap();
    // Without an active span nothing is added.
    service.call(tool_call("echo")).await.unwrap();
    let seen = inner.seen();
    let trace: &TraceContext = seen[0].trace_context.as_ref().expect("propagated");
    let (trace_id, span_id, _) = parse_traceparent(&trace.traceparent);
    assert_eq!(trace_id, parent_context.trace_id().to_string());
    assert_eq!(span_id, parent_context.span_id().to_string());
    assert_eq!(seen[1].trace_context, None);
    // Both calls are counted, the untraced one measured as without OpenTelemetry.
    assert_eq!(metrics.server_snapshot("fs").unwrap().calls, 2);
    context.span().end();
}

#[tokio::test]
async fn nothing_is_traced_or_added_when_tracing_is_off() {
    let traces = TracerFixture::new();
    let metrics = Metrics::with_config(MetricsConfig::new().follow_current_context(false));
    let inner = Scripted::ok();
    let service = metrics.layer("fs", "pipe").layer(inner.clone());
    let parent = traces.provider.tracer("caller").start("agent step");
    let context = Context::current_with_span(parent);
    service
        .call(tool_call("echo"))
        .with_context(context.clone())
        .await
        .unwrap();
    assert_eq!(inner.seen()[0].trace_context, None);
    // The registry still counts.
    assert_eq!(metrics.server_snapshot("fs").unwrap().calls, 1);
}

#[tokio::test]
async fn calls_carry_the_active_endpoints_region_and_sessions_do_not() {
    let fixture = MeterFixture::new();
    let traces = TracerFixture::new();
    let metrics = Metrics::with_config(
        fixture
            .config()
            .with_tracer(traces.provider.tracer("mcp-metrics-test")),
    );
    let service = metrics.layer("github", "tcp").layer(Scripted::ok());
    let handle = metrics.server("github");
    // Before routing: no region.
    service.call(tool_call("search")).await.unwrap();
    // The router made eu-west-1 active, then failed over to us-east-1.
    handle.set_server_address(Some("eu.example.com"), Some(443));
    handle.set_region(Some("eu-west-1"));
    service.call(tool_call("search")).await.unwrap();
    handle.failover();
    handle.set_server_address(Some("us.example.com"), Some(443));
    handle.set_region(Some("us-east-1"));
    service.call(tool_call("search")).await.unwrap();
    handle.session_ended(Duration::from_secs(5), Some("network_error"));

    let region = |attributes: &BTreeMap<String, String>| {
        (
            attributes.get("server.address").cloned(),
            attributes.get("cloud.region").cloned(),
        )
    };
    let mut seen: Vec<_> = fixture
        .histogram("mcp.client.operation.duration")
        .iter()
        .map(|p| (region(&p.attributes), p.count))
        .collect();
    seen.sort();
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        seen,
        [
            ((None, None), 1),
            ((some("eu.example.com"), some("eu-west-1")), 1),
            ((some("us.example.com"), some("us-east-1")), 1),
        ]
    );
    // Each flush exports the cumulative points again: read the next one alone.
    fixture.exporter.reset();
    let sessions = fixture.histogram("mcp.client.session.duration");
    assert_eq!(sessions.len(), 1);
    assert_eq!(
        region(&sessions[0].attributes),
        (some("us.example.com"), None)
    );

    let spans = traces.spans();
    let regions: Vec<_> = spans
        .iter()
        .map(|span| attribute(span, "cloud.region").cloned())
        .collect();
    assert_eq!(
        regions,
        [
            None,
            Some(Value::from("eu-west-1")),
            Some(Value::from("us-east-1"))
        ]
    );
    assert_eq!(metrics.server_snapshot("github").unwrap().failovers, 1);
}
