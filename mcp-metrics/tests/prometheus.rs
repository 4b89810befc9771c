//! The Prometheus text format and the scrape endpoint, over a real loopback socket.

#![cfg(feature = "prometheus")]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_core::{ErrorKind, Layer, McpService};
use mcp_metrics::{
    CacheKind, EndpointGauges, EndpointInfo, Metrics, MetricsConfig, PoolGauges,
    PrometheusEndpoint, ServerGauges,
};
use support::{error, tool_call, tool_result, Scripted, Step};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

const DEADLINE: Duration = Duration::from_secs(10);

/// Checks the text is well formed: every sample's family was introduced by `# HELP` and
/// `# TYPE` lines (once), each sample is `name{labels} value` with a number.
fn assert_well_formed(text: &str) {
    let mut families: Vec<String> = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap().to_owned();
            assert!(!families.contains(&name), "{name} introduced twice");
            families.push(name);
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert_eq!(Some(name), families.last().map(String::as_str), "{line}");
            assert!(["counter", "gauge", "summary"].contains(&kind), "{line}");
            current = Some((name.to_owned(), kind.to_owned()));
            continue;
        }
        let (family, kind) = current.as_ref().expect("a sample before any family");
        let (series, value) = line.rsplit_once(' ').unwrap();
        assert!(value.parse::<f64>().is_ok() || value == "NaN", "{line}");
        let name = series.split('{').next().unwrap();
        let allowed = match kind.as_str() {
            "summary" => vec![
                family.clone(),
                format!("{family}_sum"),
                format!("{family}_count"),
            ],
            _ => vec![family.clone()],
        };
        assert!(
            allowed.contains(&name.to_owned()),
            "{line} is not of {family}"
        );
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "{line}"
        );
        if let Some(labels) = series.strip_prefix(name) {
            if !labels.is_empty() {
                assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
            }
        }
    }
}

async fn busy_metrics(config: MetricsConfig) -> Metrics {
    let metrics = Metrics::with_config(config);
    let inner = Scripted::new(|op| match op.subject.as_deref() {
        Some("missing") => Step::Answer(Err(error(ErrorKind::ToolNotFound))),
        Some("slow") => Step::After(Duration::from_millis(250), Ok(tool_result())),
        _ => Step::Answer(Ok(tool_result())),
    });
    let service = metrics.layer("fs", "pipe").layer(inner);
    service.call(tool_call("slow")).await.unwrap();
    service.call(tool_call("slow")).await.unwrap();
    service.call(tool_call("missing")).await.unwrap_err();
    let fs = metrics.server("fs");
    fs.cache(CacheKind::Tools, true);
    fs.cache(CacheKind::Tools, false);
    fs.reconnected();
    fs.session_ended(Duration::from_secs(3), Some("network_error"));
    fs.set_protocol_version(Some("2025-11-25"));
    metrics.set_gauges(
        "fs",
        Arc::new(|| ServerGauges {
            breaker: Some("open".into()),
            pool: Some(PoolGauges {
                connections: 2,
                in_use: 1,
                idle: 1,
                waiting: 0,
                waits: 5,
            }),
            ..Default::default()
        }),
    );
    // A name that needs escaping, with nothing recorded but a refresh.
    metrics.server("we\"ird\\one\n").token_refreshed();
    metrics
}

#[tokio::test(start_paused = true)]
async fn the_text_format_has_every_family_with_escaped_labels() {
    let metrics = busy_metrics(MetricsConfig::new()).await;
    let text = metrics.render_prometheus();
    assert_well_formed(&text);
    for line in [
        "# TYPE mcp_client_calls_total counter",
        r#"mcp_client_calls_total{server="fs",method="tools/call",tool="slow"} 2"#,
        r#"mcp_client_errors_total{server="fs",method="tools/call",tool="missing",error_type="tool_not_found"} 1"#,
        r#"mcp_client_cancelled_total{server="fs",method="tools/call",tool="missing"} 0"#,
        "# TYPE mcp_client_operation_duration_seconds summary",
        r#"mcp_client_operation_duration_seconds_sum{server="fs",method="tools/call",tool="slow"} 0.5"#,
        r#"mcp_client_operation_duration_seconds_count{server="fs",method="tools/call",tool="slow"} 2"#,
        r#"mcp_client_reconnects_total{server="fs"} 1"#,
        r#"mcp_client_token_refreshes_total{server="we\"ird\\one\n"} 1"#,
        r#"mcp_client_cache_hits_total{server="fs",cache="tools"} 1"#,
        r#"mcp_client_cache_misses_total{server="fs",cache="tools"} 1"#,
        r#"mcp_client_cache_hits_total{server="fs",cache="resource_contents"} 0"#,
        r#"mcp_client_sessions_ended_total{server="fs"} 1"#,
        r#"mcp_client_session_errors_total{server="fs",error_type="network_error"} 1"#,
        r#"mcp_client_session_duration_seconds_sum{server="fs"} 3"#,
        r#"mcp_client_breaker_state{server="fs",state="open"} 1"#,
        r#"mcp_client_pool_connections{server="fs"} 2"#,
        r#"mcp_client_pool_in_use{server="fs"} 1"#,
        r#"mcp_client_pool_waits_total{server="fs"} 5"#,
        r#"mcp_client_server_info{server="fs",network_transport="pipe",protocol_version="2025-11-25"} 1"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    // The quantiles: 250 ms within the histogram's 1 %.
    let p50 = text
        .lines()
        .find(|l| {
            l.starts_with(r#"mcp_client_operation_duration_seconds{server="fs",method="tools/call",tool="slow",quantile="0.5"}"#)
        })
        .expect("the median");
    let seconds: f64 = p50.rsplit_once(' ').unwrap().1.parse().unwrap();
    assert!((seconds - 0.25).abs() <= 0.0025, "{p50}");
    // Quantiles of nothing are NaN (every call to `missing` failed at once: 0 s is a value).
    assert!(text.contains("mcp_client_session_duration_seconds{server=\"we\\\"ird\\\\one\\n\",quantile=\"0.5\"} NaN\n"), "{text}");
    // A server without a pool or breaker has no such samples.
    assert!(!text.contains(r#"mcp_client_pool_connections{server="we"#));
}

#[tokio::test]
async fn an_empty_registry_renders_nothing_and_a_prefix_is_sanitized() {
    assert_eq!(Metrics::new().render_prometheus(), "");
    let metrics = Metrics::with_config(MetricsConfig::new().with_prometheus_prefix("my.app-mcp"));
    metrics.server("s").reconnected();
    let text = metrics.render_prometheus();
    assert_well_formed(&text);
    assert!(
        text.contains("\nmy_app_mcp_reconnects_total{server=\"s\"} 1\n"),
        "{text}"
    );
    assert!(!text.contains("mcp_client"), "{text}");
}

/// One HTTP/1.1 request over a fresh connection; the status line and the rest.
async fn request(addr: SocketAddr, method: &str, path: &str) -> (String, String) {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    };
    let answer = tokio::time::timeout(DEADLINE, exchange)
        .await
        .expect("the endpoint answered in time");
    let (status, rest) = answer.split_once("\r\n").unwrap();
    (status.to_owned(), rest.to_owned())
}

#[tokio::test]
async fn the_endpoint_serves_metrics_on_loopback_and_nothing_else() {
    let metrics = busy_metrics(MetricsConfig::new()).await;
    let endpoint = PrometheusEndpoint::serve(metrics.clone(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = endpoint.local_addr();
    assert!(addr.ip().is_loopback() && addr.port() != 0);

    let (status, rest) = request(addr, "GET", "/metrics").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    let (headers, body) = rest.split_once("\r\n\r\n").unwrap();
    assert!(headers
        .to_ascii_lowercase()
        .contains("content-type: text/plain; version=0.0.4; charset=utf-8"));
    assert_well_formed(body);
    assert!(
        body.contains(r#"mcp_client_calls_total{server="fs",method="tools/call",tool="slow"} 2"#)
    );
    // A query string is fine; every scrape reads the registry anew.
    metrics.server("fs").reconnected();
    let (_, rest) = request(addr, "GET", "/metrics?x=1").await;
    assert!(rest.contains("mcp_client_reconnects_total{server=\"fs\"} 2\n"));

    assert_eq!(request(addr, "GET", "/").await.0, "HTTP/1.1 404 Not Found");
    assert_eq!(
        request(addr, "GET", "/metrics/x").await.0,
        "HTTP/1.1 404 Not Found"
    );
    let (status, rest) = request(addr, "POST", "/metrics").await;
    assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
    assert!(rest.to_ascii_lowercase().contains("allow: get, head"));
    endpoint.shutdown().await;
}

/// Waits until connecting to `addr` is refused.
async fn wait_until_refused(addr: SocketAddr) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        match TcpStream::connect(addr).await {
            Err(_) => return,
            Ok(_) if Instant::now() < deadline => tokio::task::yield_now().await,
            Ok(_) => panic!("still accepting connections at {addr}"),
        }
    }
}

/// Waits until the peer closes `stream` (reads end).
async fn wait_until_closed(stream: &mut TcpStream) {
    let mut buffer = [0u8; 64];
    let read = tokio::time::timeout(DEADLINE, stream.read(&mut buffer))
        .await
        .expect("the connection was closed in time");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}

#[tokio::test]
async fn shutting_down_stops_accepting_and_closes_open_connections() {
    let endpoint = PrometheusEndpoint::serve(Metrics::new(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = endpoint.local_addr();
    // A scraper that connected and sent nothing yet.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert_eq!(request(addr, "GET", "/metrics").await.0, "HTTP/1.1 200 OK");
    tokio::time::timeout(DEADLINE, endpoint.shutdown())
        .await
        .expect("shutdown is bounded");
    wait_until_closed(&mut idle).await;
    wait_until_refused(addr).await;
}

#[tokio::test]
async fn dropping_the_handle_stops_the_endpoint() {
    let endpoint = PrometheusEndpoint::serve(Metrics::new(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = endpoint.local_addr();
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert_eq!(request(addr, "GET", "/metrics").await.0, "HTTP/1.1 200 OK");
    drop(endpoint);
    wait_until_closed(&mut idle).await;
    wait_until_refused(addr).await;
}

/// A registry whose text is known byte for byte (tokio's clock paused): one server with calls,
/// gauges and every per-server counter, and one with nothing.
async fn golden_metrics() -> Metrics {
    let metrics = Metrics::new();
    let inner = Scripted::new(|op| match op.subject.as_deref() {
        Some("missing") => Step::Answer(Err(error(ErrorKind::ToolNotFound))),
        _ => Step::After(Duration::from_millis(40), Ok(tool_result())),
    });
    let service = metrics.layer("fs", "pipe").layer(inner);
    service.call(tool_call("read")).await.unwrap();
    service.call(tool_call("missing")).await.unwrap_err();
    let fs = metrics.server("fs");
    fs.set_protocol_version(Some("2025-11-25"));
    fs.set_server_address(Some("fs.example.com"), Some(8443));
    fs.cache(CacheKind::Prompts, true);
    fs.session_ended(Duration::from_secs(2), None);
    metrics.set_gauges(
        "fs",
        Arc::new(|| ServerGauges {
            breaker: Some("closed".into()),
            pool: Some(PoolGauges {
                connections: 1,
                in_use: 0,
                idle: 1,
                waiting: 0,
                waits: 0,
            }),
            ..Default::default()
        }),
    );
    metrics.server("idle");
    metrics
}

#[tokio::test(start_paused = true)]
async fn servers_without_endpoints_render_as_before_but_for_their_failovers() {
    let metrics = golden_metrics().await;
    let text = metrics.render_prometheus();
    assert_well_formed(&text);
    let failovers = [
        "# HELP mcp_client_failovers_total Moves of a server's traffic from one endpoint to another.",
        "# TYPE mcp_client_failovers_total counter",
        r#"mcp_client_failovers_total{server="fs"} 0"#,
        r#"mcp_client_failovers_total{server="idle"} 0"#,
    ];
    let (new, old): (Vec<&str>, Vec<&str>) = text
        .lines()
        .partition(|line| line.contains("mcp_client_failovers_total"));
    assert_eq!(new, failovers);
    // Byte for byte what this registry rendered before endpoints existed.
    let before = include_str!("golden/no_endpoints.prom");
    assert_eq!(old.join("\n") + "\n", before);
    assert!(!text.contains("endpoint_"), "{text}");
    assert!(!text.contains("region"), "{text}");
}

#[tokio::test]
async fn endpoints_have_families_of_their_own_labelled_by_address_and_region() {
    let metrics = Metrics::new();
    let service = metrics.layer("gh", "tcp").layer(Scripted::ok());
    service.call(tool_call("search")).await.unwrap();
    let _fs = metrics.layer("fs", "pipe");
    let gh = metrics.server("gh");
    let endpoint = |url: &str, address: Option<&str>, region: Option<&str>| {
        gh.endpoint(EndpointInfo {
            url: url.into(),
            address: address.map(Into::into),
            port: address.map(|_| 443),
            region: region.map(Into::into),
        })
    };
    let eu = endpoint(
        "https://eu.example.com/mcp",
        Some("eu.example.com"),
        Some("eu-west-1"),
    );
    let _us = endpoint(
        "https://us.example.com/mcp",
        Some("us.example.com"),
        Some("us-east-1"),
    );
    let _backup = endpoint("https://backup.example/mcp", None, None);
    eu.record_call(Duration::from_millis(10), true);
    eu.record_call(Duration::from_millis(20), true);
    eu.record_call(Duration::from_millis(900), false);
    eu.record_probe(Some(Duration::from_millis(20)));
    gh.failover();
    gh.failover();
    // The facade moved the server to eu-west-1: the per-server families do not say so.
    gh.set_server_address(Some("eu.example.com"), Some(443));
    gh.set_region(Some("eu-west-1"));
    metrics.set_gauges(
        "gh",
        Arc::new(|| ServerGauges {
            endpoints: vec![
                EndpointGauges {
                    url: "https://eu.example.com/mcp".into(),
                    state: "active".into(),
                    active: true,
                    breaker: Some("closed".into()),
                },
                EndpointGauges {
                    url: "https://us.example.com/mcp".into(),
                    state: "down".into(),
                    active: false,
                    breaker: Some("open".into()),
                },
            ],
            ..Default::default()
        }),
    );

    let text = metrics.render_prometheus();
    assert_well_formed(&text);
    let eu = r#"server="gh",url="https://eu.example.com/mcp",server_address="eu.example.com",server_port="443",region="eu-west-1""#;
    let us = r#"server="gh",url="https://us.example.com/mcp",server_address="us.example.com",server_port="443",region="us-east-1""#;
    let backup = r#"server="gh",url="https://backup.example/mcp""#;
    let expected = [
        "# TYPE mcp_client_endpoint_calls_total counter".to_owned(),
        format!("mcp_client_endpoint_calls_total{{{eu}}} 3"),
        format!("mcp_client_endpoint_calls_total{{{us}}} 0"),
        format!("mcp_client_endpoint_calls_total{{{backup}}} 0"),
        "# TYPE mcp_client_endpoint_errors_total counter".to_owned(),
        format!("mcp_client_endpoint_errors_total{{{eu}}} 1"),
        "# TYPE mcp_client_endpoint_call_latency_seconds gauge".to_owned(),
        // 10 ms, then 10 + (20 - 10) / 8; the failure leaves it alone.
        format!("mcp_client_endpoint_call_latency_seconds{{{eu}}} 0.01125"),
        "# TYPE mcp_client_endpoint_probe_latency_seconds gauge".to_owned(),
        format!("mcp_client_endpoint_probe_latency_seconds{{{eu}}} 0.02"),
        "# TYPE mcp_client_endpoint_active gauge".to_owned(),
        format!("mcp_client_endpoint_active{{{eu}}} 1"),
        format!("mcp_client_endpoint_active{{{us}}} 0"),
        format!("mcp_client_endpoint_active{{{backup}}} 0"),
        "# TYPE mcp_client_endpoint_up gauge".to_owned(),
        format!("mcp_client_endpoint_up{{{eu}}} 1"),
        format!("mcp_client_endpoint_up{{{us}}} 0"),
        // Without gauges its state is unknown, not down.
        format!("mcp_client_endpoint_up{{{backup}}} 1"),
        "# TYPE mcp_client_failovers_total counter".to_owned(),
        r#"mcp_client_failovers_total{server="gh"} 2"#.to_owned(),
        r#"mcp_client_failovers_total{server="fs"} 0"#.to_owned(),
    ];
    for line in &expected {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    // No average before a first sample.
    for family in ["call_latency_seconds", "probe_latency_seconds"] {
        for endpoint in [us, backup] {
            let absent = format!("mcp_client_endpoint_{family}{{{endpoint}}}");
            assert!(!text.contains(&absent), "{absent} in\n{text}");
        }
    }
    // Only endpoints carry a region, and only the routed server has endpoint samples.
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if line.contains("region=") {
            assert!(line.starts_with("mcp_client_endpoint_"), "{line}");
        }
        if line.starts_with("mcp_client_endpoint_") {
            assert!(line.contains(r#"{server="gh","#), "{line}");
        }
    }
    assert!(
        text.lines()
            .any(|l| l
                == r#"mcp_client_calls_total{server="gh",method="tools/call",tool="search"} 1"#)
    );
}
