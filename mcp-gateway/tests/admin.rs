//! The operations panel over HTTP: its routes (status codes, content types, the JSON's shape,
//! the Prometheus text), the event stream (a snapshot at once, then one per sample, each with
//! only the samples not sent yet), the bounded history, the loopback-only bind and `Host`, a
//! handle that ends everything it started, and odd data from the source (names that look like
//! markup, counters that go backwards, NaN rates, secrets in error messages) shown safely.

mod admin_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use admin_support::*;
use mcp_client::metrics::{EndpointInfo, Metrics, MetricsSnapshot};
use mcp_client::{
    BreakerStatus, EndpointReport, EndpointState, PoolReport, ServerReport, ServerStatus,
};
use mcp_core::types::Implementation;
use mcp_core::ErrorKind;
use mcp_gateway::admin::{AdminError, AdminHandle, AdminOptions, AdminPanel, PanelSource};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A panel over one stdio fixture server after two calls of its `echo`.
async fn fixture_panel(options: AdminOptions) -> (mcp_client::McpClient, AdminHandle) {
    let client = ready_client(vec![stdio_fixture("alpha")]).await;
    for _ in 0..2 {
        client
            .call_tool("alpha__echo", Some(json!({ "text": "hi" })))
            .await
            .expect("echo answers");
    }
    let panel = AdminPanel::bind(loopback(), client.clone(), options)
        .await
        .expect("the panel binds");
    (client, panel)
}

fn loopback() -> std::net::SocketAddr {
    "127.0.0.1:0".parse().expect("an address")
}

fn fast() -> AdminOptions {
    AdminOptions::default().with_interval(Duration::from_millis(100))
}

#[tokio::test]
async fn every_route_answers_with_its_content_and_anything_else_is_refused() {
    let (client, panel) = fixture_panel(fast()).await;
    let addr = panel.local_addr();
    assert_eq!(panel.url(), format!("http://{addr}/"));

    let page = get(addr, "/").await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(page
        .header("content-security-policy")
        .is_some_and(|csp| csp.contains("default-src 'none'")));
    // Self-contained: nothing is loaded from elsewhere (the SVG namespace is a name, not a
    // fetch).
    let without_namespace = page.body.replace("http://www.w3.org/2000/svg", "");
    for external in ["http://", "https://", " src=", "@import", "url("] {
        assert!(
            !without_namespace.contains(external),
            "the page refers to {external}"
        );
    }
    assert!(page.body.contains("new EventSource(\"/events\")"));

    let snapshot = get(addr, "/api/snapshot").await;
    assert_eq!(snapshot.status, 200);
    assert_eq!(snapshot.header("content-type"), Some("application/json"));
    let doc = snapshot.json();
    assert_eq!(doc["version"], 1);
    assert!(doc["seq"].as_u64().is_some_and(|seq| seq >= 1), "{doc:#}");
    for key in [
        "generated_at_ms",
        "interval_ms",
        "history_seconds",
        "qps_window_seconds",
    ] {
        assert!(doc[key].is_u64(), "{key} in {doc:#}");
    }
    assert_eq!(doc["interval_ms"], 100);
    assert_eq!(doc["history_seconds"], 600);
    let alpha = &doc["servers"][0];
    assert_eq!(alpha["name"], "alpha");
    assert_eq!(alpha["transport"], "stdio");
    assert_eq!(alpha["state"], "ready");
    assert!(alpha["calls"].as_u64().is_some_and(|calls| calls >= 2));
    let echo = alpha["operations"]
        .as_array()
        .and_then(|ops| ops.iter().find(|op| op["tool"] == "echo"))
        .expect("the echo operation");
    assert_eq!(echo["method"], "tools/call");
    assert_eq!(echo["calls"], 2);
    for key in ["p50_us", "p99_us", "mean_us", "count"] {
        assert!(alpha["latency"][key].is_number(), "{key} in {alpha:#}");
    }
    let sample = &doc["history"][0];
    assert!(
        sample["seq"].is_u64() && sample["t_ms"].is_u64(),
        "{sample:#}"
    );
    assert_eq!(sample["servers"][0]["name"], "alpha");
    assert!(sample["servers"][0]["qps"].is_number());
    assert!(doc["events"].is_array());

    let metrics = get(addr, "/metrics").await;
    assert_eq!(metrics.status, 200);
    assert!(metrics
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/plain; version=0.0.4")));
    assert!(
        metrics.body.contains(
            r#"mcp_client_calls_total{server="alpha",method="tools/call",tool="echo"} 2"#
        ),
        "{}",
        metrics.body
    );
    // mcp-metrics' renderer, not a second one.
    for family in [
        "# TYPE mcp_client_calls_total counter",
        "# TYPE mcp_client_breaker_state gauge",
    ] {
        assert!(
            metrics.body.contains(family),
            "{family} in {}",
            metrics.body
        );
    }

    for path in [
        "/nope",
        "/api",
        "/api/snapshot/x",
        "/metrics.txt",
        "/index.html",
    ] {
        assert_eq!(get(addr, path).await.status, 404, "{path}");
    }
    for method in ["POST", "PUT", "DELETE", "HEAD", "OPTIONS"] {
        for path in ["/", "/api/snapshot", "/events", "/metrics"] {
            let answer = request(addr, method, path, None).await;
            assert_eq!(answer.status, 405, "{method} {path}");
            assert_eq!(answer.header("allow"), Some("GET"), "{method} {path}");
        }
    }
    // A page elsewhere that points its own name at this machine is not served.
    for host in ["evil.example", "evil.example:80", "10.0.0.1"] {
        let answer = request(addr, "GET", "/api/snapshot", Some(host)).await;
        assert_eq!(answer.status, 421, "{host}");
    }
    for host in [
        "localhost",
        &format!("localhost:{}", addr.port()),
        "[::1]:80",
        "127.0.0.2",
    ] {
        assert_eq!(
            request(addr, "GET", "/", Some(host)).await.status,
            200,
            "{host}"
        );
    }

    panel.shutdown().await;
    client.shutdown().await;
}

#[tokio::test]
async fn the_event_stream_sends_a_snapshot_at_once_then_each_new_sample_once() {
    let (client, panel) = fixture_panel(fast()).await;
    let addr = panel.local_addr();

    let stream = read_events(addr, "/events", 3).await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    assert_eq!(stream.header("cache-control"), Some("no-store"));
    let events: Vec<&str> = stream
        .body
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .collect();
    assert!(events[0].starts_with("retry: "), "{}", events[0]);
    let mut last_seq = 0;
    for (i, event) in events.iter().take(3).enumerate() {
        let id: u64 = event
            .lines()
            .find_map(|line| line.strip_prefix("id: "))
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("no id in {event}"));
        assert!(
            event.lines().any(|line| line == "event: snapshot"),
            "{event}"
        );
        let data: Value = event
            .lines()
            .find_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).expect("JSON data"))
            .unwrap_or_else(|| panic!("no data in {event}"));
        assert_eq!(data["seq"], id, "the id is the newest sample");
        assert_eq!(data["servers"][0]["name"], "alpha");
        let seqs: Vec<u64> = data["history"]
            .as_array()
            .expect("history")
            .iter()
            .filter_map(|s| s["seq"].as_u64())
            .collect();
        if i == 0 {
            // Every sample so far.
            assert_eq!(seqs.first(), Some(&1), "{seqs:?}");
        } else {
            // Only the samples after the event before.
            assert!(id > last_seq, "{id} after {last_seq}");
            assert!(
                !seqs.is_empty() && seqs.iter().all(|&s| s > last_seq && s <= id),
                "{seqs:?} after {last_seq}"
            );
        }
        assert_eq!(seqs.last(), Some(&id));
        last_seq = id;
    }

    // A client that reconnects says where it was (`?since`, or `Last-Event-ID`).
    let resumed = read_events(addr, &format!("/events?since={last_seq}"), 1).await;
    let data = resumed
        .body
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).expect("JSON"))
        .expect("an event");
    assert!(data["history"]
        .as_array()
        .expect("history")
        .iter()
        .all(|s| s["seq"].as_u64().is_some_and(|seq| seq > last_seq)));

    panel.shutdown().await;
    client.shutdown().await;
}

#[tokio::test]
async fn the_snapshot_since_a_sample_leaves_the_older_ones_out_and_the_history_is_bounded() {
    // Three samples kept: 300 ms of history at 100 ms.
    let options = fast().with_history(Duration::from_millis(300));
    let (client, panel) = fixture_panel(options).await;
    let addr = panel.local_addr();
    mcp_testkit::wait::until_async("six samples", DEADLINE, || async {
        get(addr, "/api/snapshot").await.json()["seq"]
            .as_u64()
            .is_some_and(|seq| seq >= 6)
    })
    .await;
    let doc = get(addr, "/api/snapshot").await.json();
    let seq = doc["seq"].as_u64().expect("seq");
    let seqs: Vec<u64> = doc["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|s| s["seq"].as_u64())
        .collect();
    assert_eq!(seqs, vec![seq - 2, seq - 1, seq]);

    let since = get(addr, &format!("/api/snapshot?since={}", seq - 1))
        .await
        .json();
    let newer: Vec<u64> = since["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|s| s["seq"].as_u64())
        .collect();
    assert!(newer.iter().all(|&s| s >= seq), "{newer:?}");
    // A number from elsewhere (a panel that restarted) gets everything; so does nonsense.
    for odd in ["999999999", "-1", "x", ""] {
        let doc = get(addr, &format!("/api/snapshot?since={odd}"))
            .await
            .json();
        assert_eq!(
            doc["history"].as_array().map(Vec::len),
            Some(3),
            "since={odd}"
        );
    }

    panel.shutdown().await;
    client.shutdown().await;
}

#[tokio::test]
async fn an_address_beyond_loopback_is_refused_with_a_clear_error() {
    for addr in ["0.0.0.0:0", "10.1.2.3:8080", "[::]:0", "192.168.1.1:80"] {
        let addr = addr.parse().expect("an address");
        let error = AdminPanel::bind(
            addr,
            registry_source(Metrics::new()),
            AdminOptions::default(),
        )
        .await
        .expect_err("refused");
        assert!(matches!(error, AdminError::NotLoopback { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.contains("beyond loopback") && message.contains("127.0.0.1"),
            "{message}"
        );
    }
    // A port in use is a bind error naming the address.
    let first = AdminPanel::bind(
        loopback(),
        registry_source(Metrics::new()),
        AdminOptions::default(),
    )
    .await
    .expect("binds");
    let taken = first.local_addr();
    let error = AdminPanel::bind(
        taken,
        registry_source(Metrics::new()),
        AdminOptions::default(),
    )
    .await
    .expect_err("in use");
    assert!(matches!(error, AdminError::Bind { .. }), "{error:?}");
    assert!(error.to_string().contains(&taken.to_string()));
    first.shutdown().await;
}

#[tokio::test]
async fn the_handle_owns_the_server_and_its_event_streams() {
    let panel = AdminPanel::bind(loopback(), registry_source(Metrics::new()), fast())
        .await
        .expect("binds");
    let addr = panel.local_addr();
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    stream
        .write_all(format!("GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .expect("sends");
    let mut first = [0u8; 64];
    let n = tokio::time::timeout(DEADLINE, stream.read(&mut first))
        .await
        .expect("the stream starts")
        .expect("reads");
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));

    drop(panel);
    // The stream ends (the connection closes) and nobody listens any more.
    tokio::time::timeout(DEADLINE, async {
        let mut rest = [0u8; 16 * 1024];
        while stream.read(&mut rest).await.is_ok_and(|n| n > 0) {}
    })
    .await
    .expect("the event stream ends when the handle is dropped");
    mcp_testkit::wait::until_async("the port closed", DEADLINE, || async {
        tokio::net::TcpStream::connect(addr).await.is_err()
    })
    .await;

    // `shutdown` too.
    let panel = AdminPanel::bind(loopback(), registry_source(Metrics::new()), fast())
        .await
        .expect("binds");
    let addr = panel.local_addr();
    tokio::time::timeout(DEADLINE, panel.shutdown())
        .await
        .expect("shutdown is bounded");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// A source over a bare registry: no status reports.
fn registry_source(metrics: Metrics) -> impl PanelSource {
    Odd {
        metrics,
        reports: Vec::new(),
        readings: AtomicU64::new(0),
        mangle: false,
    }
}

/// A source whose data is odd on purpose.
struct Odd {
    metrics: Metrics,
    reports: Vec<ServerReport>,
    readings: AtomicU64,
    /// Counters that jump and fall back, NaN and infinite rates.
    mangle: bool,
}

impl PanelSource for Odd {
    fn servers(&self) -> Vec<ServerReport> {
        self.reports.clone()
    }

    fn metrics(&self) -> MetricsSnapshot {
        let mut snapshot = self.metrics.snapshot();
        if self.mangle {
            let n = self.readings.fetch_add(1, Ordering::Relaxed);
            for server in &mut snapshot.servers {
                // Up, then back down (a reset), then to the top.
                server.calls = [10, 3, u64::MAX, 0][(n % 4) as usize];
                server.errors = [20, 1, u64::MAX, 5][(n % 4) as usize];
                server.error_rate = [f64::NAN, f64::INFINITY, -1.0, 0.5][(n % 4) as usize];
                server.qps = f64::NAN;
                server.latency.count = [0, 7, u64::MAX, 1][(n % 4) as usize];
                server.latency.sum_us = u64::MAX;
                server.latency.mean_us = f64::NEG_INFINITY;
                server.cache.hit_rate = Some(f64::NAN);
                for endpoint in &mut server.endpoints {
                    endpoint.calls = [5, 0, u64::MAX, 2][(n % 4) as usize];
                    endpoint.errors = u64::MAX;
                }
            }
        }
        snapshot
    }

    fn prometheus(&self) -> String {
        self.metrics.render_prometheus()
    }
}

#[tokio::test]
async fn odd_data_is_shown_safely_and_secrets_stay_out() {
    let metrics = Metrics::new();
    let name = "<img src=x onerror=alert(1)>";
    let handle = metrics.server(name);
    handle
        .endpoint(EndpointInfo {
            url: "https://eu.example.com/mcp".into(),
            address: Some("eu.example.com".into()),
            port: Some(443),
            region: Some("eu".into()),
        })
        .record_call(Duration::from_millis(3), true);
    metrics.server("only-in-metrics");
    let report = ServerReport {
        name: name.into(),
        status: ServerStatus::Unavailable {
            reason: "401: Authorization: Bearer sk-live-secret".into(),
            kind: ErrorKind::Network,
        },
        transport: "http".into(),
        tools: 0,
        server_info: Some(Implementation::new("x\u{0}\u{1b}[31m", "1")),
        protocol_version: None,
        breaker: Some(BreakerStatus::Open {
            retry_in: Duration::MAX,
        }),
        reconnects: u64::MAX,
        last_error: Some(
            "GET https://user:hunter2@eu.example.com/mcp?token=sk-live-secret failed".into(),
        ),
        pool: Some(PoolReport {
            connections: u32::MAX,
            in_use: 1,
            idle: 0,
            waits: 3,
        }),
        endpoints: vec![
            EndpointReport {
                url: "https://eu.example.com/mcp".into(),
                region: Some("eu".into()),
                state: EndpointState::Down,
                active: false,
                latency: Some(Duration::MAX),
                breaker: Some(BreakerStatus::HalfOpen),
                down_reason: Some("api_key=sk-live-secret refused".into()),
            },
            EndpointReport {
                url: "https://us.example.com/mcp".into(),
                region: None,
                state: EndpointState::Standby,
                active: true,
                latency: None,
                breaker: None,
                down_reason: None,
            },
        ],
    };
    let source = Arc::new(Odd {
        metrics,
        reports: vec![report.clone(), report],
        readings: AtomicU64::new(0),
        mangle: true,
    });
    let panel = AdminPanel::bind(loopback(), source.clone(), fast().with_max_events(5))
        .await
        .expect("binds");
    let addr = panel.local_addr();
    mcp_testkit::wait::until_async("eight readings", DEADLINE, || async {
        source.readings.load(Ordering::Relaxed) >= 8
    })
    .await;

    let answer = get(addr, "/api/snapshot").await;
    assert_eq!(answer.status, 200);
    assert!(
        !answer.body.contains("sk-live-secret") && !answer.body.contains("hunter2"),
        "{}",
        answer.body
    );
    let doc = answer.json();
    let servers = doc["servers"].as_array().expect("servers");
    // The duplicate name is shown twice, the metrics-only server after them.
    assert_eq!(servers.len(), 3);
    assert_eq!(servers[0]["name"], name);
    assert_eq!(servers[0]["state"], "unavailable");
    assert_eq!(
        servers[0]["reason"],
        "401: Authorization: [redacted] [redacted]"
    );
    assert_eq!(servers[0]["breaker"], "open");
    assert_eq!(servers[2]["name"], "only-in-metrics");
    assert_eq!(servers[2]["state"], "unknown");
    assert_eq!(servers[0]["endpoints"][0]["state"], "down");
    assert_eq!(
        servers[0]["endpoints"][0]["down_reason"],
        "api_key=[redacted] refused"
    );
    assert!(doc["events"]
        .as_array()
        .is_some_and(|e| !e.is_empty() && e.len() <= 5));
    // Every number a chart reads is a number or null: NaN and infinities never reach JSON.
    for sample in doc["history"].as_array().expect("history") {
        for server in sample["servers"].as_array().expect("servers") {
            for key in ["qps", "error_rate", "mean_us", "cache_hit_rate"] {
                let value = &server[key];
                assert!(
                    value.is_null() || value.as_f64().is_some_and(f64::is_finite),
                    "{key}: {value}"
                );
            }
        }
    }
    let page = get(addr, "/").await;
    assert_eq!(page.status, 200);
    assert_eq!(get(addr, "/metrics").await.status, 200);
    let events = read_events(addr, "/events", 2).await;
    assert!(!events.body.contains("sk-live-secret"));

    panel.shutdown().await;
}
