//! The facade's OpenTelemetry export (feature `otel`): calls to a real (fixture) server through
//! the full stack, read back from the SDK's in-memory exporter with the MCP semantic
//! conventions' names, units and attributes; a restart ends a session with its duration.

#![cfg(feature = "otel")]

mod common;

use std::collections::BTreeMap;

use common::*;
use mcp_client::metrics::{Metrics, MetricsConfig};
use mcp_client::{ClientConfig, McpClient};
use opentelemetry::metrics::MeterProvider;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use serde_json::json;

/// Every data point of histogram `name` (unit checked): attributes, count.
fn points(
    provider: &SdkMeterProvider,
    exporter: &InMemoryMetricExporter,
    name: &str,
) -> Vec<(BTreeMap<String, String>, u64)> {
    provider.force_flush().unwrap();
    let mut points = Vec::new();
    for resource in &exporter.get_finished_metrics().unwrap() {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics().filter(|m| m.name() == name) {
                assert_eq!(metric.unit(), "s", "{name} is in seconds");
                let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() else {
                    panic!("{name} is not an f64 histogram");
                };
                for point in histogram.data_points() {
                    let attributes = point
                        .attributes()
                        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                        .collect();
                    points.push((attributes, point.count()));
                }
            }
        }
    }
    points
}

#[tokio::test]
async fn calls_are_exported_with_the_mcp_semantic_conventions() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_periodic_exporter(exporter.clone())
        .build();
    let metrics =
        Metrics::with_config(MetricsConfig::new().with_meter(provider.meter("mcp-client-test")));
    let marker = unique_marker("otel");
    let config = ClientConfig {
        servers: vec![fixture("fx", &[], &marker)],
        source: None,
        region: None,
        store: None,
    };
    let client = tokio::time::timeout(
        DEADLINE,
        McpClient::builder(config).metrics(metrics).start(),
    )
    .await
    .unwrap();
    for _ in 0..3 {
        client
            .call_tool("fx__echo", Some(json!({"text": "hi"})))
            .await
            .unwrap();
    }
    let failed = client
        .call_tool("fx__add", Some(json!({"a": "not a number"})))
        .await;
    assert!(failed.is_err() || failed.unwrap().is_error());

    let operations = points(&provider, &exporter, "mcp.client.operation.duration");
    let echo = operations
        .iter()
        .find(|(a, _)| a.get("gen_ai.tool.name").map(String::as_str) == Some("echo"))
        .expect("the echo calls");
    assert_eq!(echo.1, 3);
    let attributes = &echo.0;
    assert_eq!(attributes["mcp.method.name"], "tools/call");
    assert_eq!(attributes["network.transport"], "pipe");
    assert_eq!(attributes["mcp.protocol.version"], "2025-11-25");
    assert!(!attributes.contains_key("error.type"));
    let add = operations
        .iter()
        .find(|(a, _)| a.get("gen_ai.tool.name").map(String::as_str) == Some("add"))
        .expect("the failed add");
    assert!(add.0.contains_key("error.type"), "{:?}", add.0);

    // A restart ends the session: its duration is recorded with the reason.
    let _ = client
        .call_tool("fx__crash", Some(json!({"exit_code": 2})))
        .await;
    mcp_testkit::wait::until("fx is back", DEADLINE, || {
        let fx = &client.servers()[0];
        fx.status.is_ready() && fx.reconnects == 1
    })
    .await;
    let sessions = points(&provider, &exporter, "mcp.client.session.duration");
    assert!(
        sessions
            .iter()
            .any(|(a, n)| *n == 1
                && a.get("error.type").map(String::as_str) == Some("network_error")),
        "{sessions:?}"
    );
    let snapshot = client.metrics();
    assert_eq!(snapshot.servers[0].reconnects, 1);
    client.shutdown().await;
}
