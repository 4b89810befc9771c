//! The layer and the snapshot: counts, error kinds, latencies, the QPS window, server
//! summaries, gauges, per-server counters, removal, concurrency.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_core::types::{CallToolResult, Content};
use mcp_core::{ErrorKind, Layer, McpService, Operation, Payload, TypedPayload};
use mcp_metrics::{CacheKind, Metrics, MetricsConfig, PoolGauges, ServerGauges};
use serde_json::json;
use support::{error, tool_call, tool_result, Scripted, Step};

fn within_one_percent(actual: u64, expected: u64) -> bool {
    actual.abs_diff(expected) * 100 <= expected
}

#[tokio::test]
async fn calls_and_errors_are_counted_by_server_method_and_tool() {
    let metrics = Metrics::new();
    let inner = Scripted::new(|op| match op.subject.as_deref() {
        Some("missing") => Step::Answer(Err(error(ErrorKind::ToolNotFound))),
        Some("down") => Step::Answer(Err(error(ErrorKind::Network))),
        _ => Step::Answer(Ok(tool_result())),
    });
    let service = metrics.layer("fs", "pipe").layer(inner);
    for _ in 0..3 {
        service.call(tool_call("ok")).await.unwrap();
    }
    for _ in 0..2 {
        let e = service.call(tool_call("missing")).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ToolNotFound, "errors pass through");
    }
    service.call(tool_call("down")).await.unwrap_err();
    service
        .call(Operation::new("tools/list", None))
        .await
        .unwrap();
    // A subject that is not a tool does not make a series of its own.
    service
        .call(Operation::new("resources/read", None).with_subject("file:///a"))
        .await
        .unwrap();
    service
        .call(Operation::new("resources/read", None).with_subject("file:///b"))
        .await
        .unwrap();

    let snapshot = metrics.snapshot();
    let fs = snapshot.server("fs").unwrap();
    assert_eq!(fs.network_transport.as_deref(), Some("pipe"));
    let rows: Vec<_> = fs
        .operations
        .iter()
        .map(|o| (o.method.as_str(), o.tool.as_deref(), o.calls, o.errors))
        .collect();
    assert_eq!(
        rows,
        [
            ("resources/read", None, 2, 0),
            ("tools/call", Some("down"), 1, 1),
            ("tools/call", Some("missing"), 2, 2),
            ("tools/call", Some("ok"), 3, 0),
            ("tools/list", None, 1, 0),
        ]
    );
    let missing = fs.operation("tools/call", Some("missing")).unwrap();
    assert_eq!(
        missing.errors_by_type,
        [("tool_not_found".to_owned(), 2)].into()
    );
    assert_eq!(missing.error_rate, 1.0);
    let down = fs.operation("tools/call", Some("down")).unwrap();
    assert_eq!(
        down.errors_by_type,
        [("network_error".to_owned(), 1)].into()
    );
    assert_eq!((fs.calls, fs.errors, fs.cancelled), (9, 3, 0));
    assert_eq!(fs.error_rate, 3.0 / 9.0);
    assert_eq!(fs.latency.count, 9);
}

#[tokio::test]
async fn a_tools_call_result_with_is_error_counts_as_a_tool_error() {
    let failed = CallToolResult {
        content: vec![Content::text("no such file")],
        structured_content: None,
        is_error: Some(true),
        extra: Default::default(),
    };
    let inner = Scripted::new(move |op| {
        let payload = match op.subject.as_deref() {
            Some("raw") => {
                Payload::from_json_str(r#"{"content":[{"type":"text","text":"x"}],"isError":true}"#)
                    .unwrap()
            }
            Some("value") => Payload::Value(json!({"content": [], "isError": true})),
            Some("typed") => Payload::Typed(TypedPayload::new(failed.clone())),
            Some("fine") => Payload::from_json_str(r#"{"content":[],"isError":false}"#).unwrap(),
            // Not a tools/call: never looked at.
            _ => Payload::Value(json!({"tools": [], "isError": true})),
        };
        Step::Answer(Ok(payload))
    });
    let metrics = Metrics::new();
    let service = metrics.layer("fs", "pipe").layer(inner);
    for tool in ["raw", "value", "typed", "fine"] {
        // The result itself passes through as it is.
        assert!(service.call(tool_call(tool)).await.is_ok());
    }
    service
        .call(Operation::new("tools/list", None))
        .await
        .unwrap();
    let fs = metrics.server_snapshot("fs").unwrap();
    for tool in ["raw", "value", "typed"] {
        let op = fs.operation("tools/call", Some(tool)).unwrap();
        assert_eq!(
            op.errors_by_type,
            [("tool_error".to_owned(), 1)].into(),
            "{tool}"
        );
    }
    assert_eq!(fs.operation("tools/call", Some("fine")).unwrap().errors, 0);
    assert_eq!(fs.operation("tools/list", None).unwrap().errors, 0);
    assert_eq!(fs.errors, 3);
}

#[tokio::test(start_paused = true)]
async fn latency_quantiles_follow_known_durations() {
    let metrics = Metrics::new();
    let inner = Scripted::new(|op| {
        let ms = op
            .params
            .as_ref()
            .and_then(|p| p.deserialize::<serde_json::Value>().ok())
            .and_then(|v| v["ms"].as_u64())
            .unwrap_or(0);
        Step::After(Duration::from_millis(ms), Ok(tool_result()))
    });
    let service = metrics.layer("fs", "pipe").layer(inner);
    for ms in 1..=100u64 {
        let op = Operation::new("tools/call", Some(Payload::Value(json!({"ms": ms}))))
            .with_subject("slow");
        service.call(op).await.unwrap();
    }
    let latency = metrics
        .server_snapshot("fs")
        .unwrap()
        .operation("tools/call", Some("slow"))
        .unwrap()
        .latency;
    assert_eq!(latency.count, 100);
    // The paused clock makes every duration exact: the sum and mean are.
    assert_eq!(latency.sum_us, 5_050_000);
    assert_eq!(latency.mean_us, 50_500.0);
    assert_eq!(latency.max_us, 100_000);
    for (actual, expected) in [
        (latency.p50_us, 50_000),
        (latency.p90_us, 90_000),
        (latency.p99_us, 99_000),
    ] {
        assert!(
            within_one_percent(actual, expected),
            "{actual} vs {expected}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn qps_is_measured_over_the_sliding_window_and_rolls_over() {
    let metrics =
        Metrics::with_config(MetricsConfig::new().with_qps_window(Duration::from_secs(10)));
    let service = metrics.layer("fs", "pipe").layer(Scripted::ok());
    let qps = |metrics: &Metrics| metrics.server_snapshot("fs").unwrap().qps;
    let started = tokio::time::Instant::now();
    let at = |seconds: f64| started + Duration::from_secs_f64(seconds);

    for _ in 0..20 {
        service.call(tool_call("echo")).await.unwrap();
    }
    // A series younger than the window: its calls so far over its age (at least a second).
    assert_eq!(qps(&metrics), 20.0);
    tokio::time::advance(at(1.0) - tokio::time::Instant::now()).await;
    assert_eq!(qps(&metrics), 20.0);

    tokio::time::advance(at(5.5) - tokio::time::Instant::now()).await;
    for _ in 0..10 {
        service.call(tool_call("echo")).await.unwrap();
    }
    tokio::time::advance(at(6.0) - tokio::time::Instant::now()).await;
    assert_eq!(qps(&metrics), 5.0);
    // From now on the window's whole seconds: seconds 0 and 5 are both in the window [0, 10) until second 10 ends.
    tokio::time::advance(at(10.999) - tokio::time::Instant::now()).await;
    assert_eq!(qps(&metrics), 3.0);
    tokio::time::advance(at(11.0) - tokio::time::Instant::now()).await;
    assert_eq!(qps(&metrics), 1.0);
    tokio::time::advance(at(16.0) - tokio::time::Instant::now()).await;
    assert_eq!(qps(&metrics), 0.0);
    // The operation's rate is the same numbers.
    let snapshot = metrics.snapshot();
    assert_eq!(snapshot.qps_window_seconds, 10);
    assert_eq!(snapshot.servers[0].operations[0].qps, 0.0);
    assert_eq!(snapshot.servers[0].operations[0].calls, 30);
}

#[tokio::test(start_paused = true)]
async fn a_server_summary_merges_the_histograms_of_its_operations() {
    let metrics = Metrics::new();
    let inner = Scripted::new(|op| match op.subject.as_deref() {
        Some("slow") => Step::After(Duration::from_secs(2), Ok(tool_result())),
        _ => Step::After(Duration::from_millis(1), Ok(tool_result())),
    });
    let service = metrics.layer("fs", "pipe").layer(inner);
    for _ in 0..97 {
        service.call(tool_call("fast")).await.unwrap();
    }
    service
        .call(Operation::new("tools/list", None))
        .await
        .unwrap();
    for _ in 0..2 {
        service.call(tool_call("slow")).await.unwrap();
    }
    let fs = metrics.server_snapshot("fs").unwrap();
    assert_eq!(fs.calls, 100);
    assert_eq!(fs.latency.count, 100);
    assert!(
        within_one_percent(fs.latency.p50_us, 1_000),
        "{:?}",
        fs.latency
    );
    assert!(
        within_one_percent(fs.latency.p99_us, 2_000_000),
        "{:?}",
        fs.latency
    );
    assert_eq!(fs.latency.max_us, 2_000_000);
    assert_eq!(fs.latency.sum_us, 98 * 1_000 + 2 * 2_000_000);
    // No single operation has that shape.
    let fast = fs.operation("tools/call", Some("fast")).unwrap();
    assert!(within_one_percent(fast.latency.p99_us, 1_000));
}

#[tokio::test]
async fn gauges_are_read_when_a_snapshot_is_taken() {
    let metrics = Metrics::new();
    let _service = metrics.layer("db", "tcp").layer(Scripted::ok());
    let in_use = Arc::new(AtomicU64::new(1));
    let reads = Arc::new(AtomicU64::new(0));
    metrics.set_gauges("db", {
        let in_use = in_use.clone();
        let reads = reads.clone();
        Arc::new(move || {
            reads.fetch_add(1, Ordering::SeqCst);
            ServerGauges {
                breaker: Some("half_open".into()),
                pool: Some(PoolGauges {
                    connections: 4,
                    in_use: in_use.load(Ordering::SeqCst),
                    idle: 3,
                    waiting: 0,
                    waits: 7,
                }),
                ..Default::default()
            }
        })
    });
    assert_eq!(
        reads.load(Ordering::SeqCst),
        0,
        "read only at snapshot time"
    );
    let db = metrics.server_snapshot("db").unwrap();
    assert_eq!(db.breaker.as_deref(), Some("half_open"));
    assert_eq!(db.pool.unwrap().in_use, 1);
    in_use.store(3, Ordering::SeqCst);
    assert_eq!(metrics.snapshot().servers[0].pool.unwrap().in_use, 3);
    assert_eq!(reads.load(Ordering::SeqCst), 2);
    // Without a source, no gauges.
    metrics.server("db").clear_gauges();
    let db = metrics.server_snapshot("db").unwrap();
    assert_eq!((db.breaker, db.pool), (None, None));
}

#[tokio::test]
async fn reconnects_refreshes_cache_lookups_and_sessions_are_counted_per_server() {
    let metrics = Metrics::new();
    let gh = metrics.server("github");
    let other = metrics.server("other");
    gh.reconnected();
    gh.reconnected();
    gh.token_refreshed();
    for hit in [true, true, true, false] {
        gh.cache(CacheKind::Tools, hit);
    }
    gh.cache(CacheKind::ResourceContents, false);
    gh.session_ended(Duration::from_secs(60), None);
    gh.session_ended(Duration::from_secs(30), Some("network_error"));
    gh.session_ended(Duration::from_secs(30), Some("network_error"));
    gh.set_protocol_version(Some("2025-11-25"));
    gh.set_server_address(Some("api.example.com"), Some(443));
    other.reconnected();

    let snapshot = metrics.snapshot();
    let gh = snapshot.server("github").unwrap();
    assert_eq!((gh.reconnects, gh.token_refreshes), (2, 1));
    assert_eq!((gh.cache.hits, gh.cache.misses), (3, 2));
    assert_eq!(gh.cache.hit_rate, Some(0.6));
    let caches: Vec<_> = gh
        .cache
        .caches
        .iter()
        .map(|c| (c.cache, c.hits, c.misses, c.hit_rate))
        .collect();
    assert_eq!(
        caches,
        [
            (CacheKind::Tools, 3, 1, Some(0.75)),
            (CacheKind::Prompts, 0, 0, None),
            (CacheKind::Resources, 0, 0, None),
            (CacheKind::ResourceContents, 0, 1, Some(0.0)),
        ]
    );
    assert_eq!(gh.sessions.ended, 3);
    assert_eq!(gh.sessions.errors, 2);
    assert_eq!(
        gh.sessions.errors_by_type,
        [("network_error".to_owned(), 2)].into()
    );
    assert_eq!(gh.sessions.duration_sum_seconds, 120.0);
    assert_eq!(gh.sessions.duration_max_seconds, 60.0);
    assert_eq!(gh.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(gh.server_address.as_deref(), Some("api.example.com"));
    assert_eq!(gh.server_port, Some(443));
    let other = snapshot.server("other").unwrap();
    assert_eq!((other.reconnects, other.cache.hit_rate), (1, None));
    assert_eq!(other.network_transport, None);
}

#[tokio::test]
async fn servers_keep_their_registration_order() {
    let metrics = Metrics::new();
    let _b = metrics.layer("b", "tcp");
    let _a = metrics.layer("a", "pipe");
    metrics.server("c").reconnected();
    // Registering again changes nothing but the transport.
    let _a_again = metrics.layer("a", "tcp");
    metrics.server("b");
    let names: Vec<_> = metrics
        .snapshot()
        .servers
        .into_iter()
        .map(|s| (s.name, s.network_transport))
        .collect();
    assert_eq!(
        names,
        [
            ("b".to_owned(), Some("tcp".to_owned())),
            ("a".to_owned(), Some("tcp".to_owned())),
            ("c".to_owned(), None),
        ]
    );
}

#[tokio::test]
async fn a_removed_server_leaves_the_snapshot_and_starts_again_from_zero() {
    let metrics = Metrics::new();
    let old = metrics.layer("fs", "pipe").layer(Scripted::ok());
    let _keep = metrics.layer("keep", "pipe");
    old.call(tool_call("echo")).await.unwrap();
    metrics.server("fs").reconnected();
    assert!(metrics.remove_server("fs"));
    assert!(!metrics.remove_server("fs"));
    assert!(metrics.server_snapshot("fs").is_none());
    assert_eq!(metrics.snapshot().servers.len(), 1);
    // The old layer still works, into nothing visible.
    old.call(tool_call("echo")).await.unwrap();
    assert!(metrics.server_snapshot("fs").is_none());
    // Added again: a new server after the others, from zero.
    let new = metrics.layer("fs", "tcp").layer(Scripted::ok());
    new.call(tool_call("echo")).await.unwrap();
    let snapshot = metrics.snapshot();
    assert_eq!(snapshot.servers[1].name, "fs");
    assert_eq!(
        (snapshot.servers[1].calls, snapshot.servers[1].reconnects),
        (1, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_its_caller_abandons_is_counted_as_cancelled() {
    let metrics = Metrics::new();
    let inner = Scripted::new(|_| Step::Hang);
    let service = metrics.layer("fs", "pipe").layer(inner);
    let given_up =
        tokio::time::timeout(Duration::from_secs(1), service.call(tool_call("stuck"))).await;
    assert!(given_up.is_err());
    let op = metrics.server_snapshot("fs").unwrap().operations[0].clone();
    assert_eq!((op.calls, op.errors, op.cancelled), (1, 0, 1));
    // Not a latency: it says when the caller gave up.
    assert_eq!(op.latency.count, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_tasks_recording_at_once_lose_nothing() {
    const TASKS: u64 = 16;
    const CALLS: u64 = 500;
    let metrics = Metrics::new();
    let inner = Scripted::new(|op| match op.subject.as_deref() {
        Some("t3") => Step::Answer(Err(error(ErrorKind::Timeout))),
        _ => Step::Answer(Ok(tool_result())),
    });
    let service = Arc::new(metrics.layer("fs", "pipe").layer(inner));
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let service = service.clone();
            let metrics = metrics.clone();
            tokio::spawn(async move {
                for call in 0..CALLS {
                    let tool = format!("t{}", (task + call) % 4);
                    let _ = service.call(tool_call(&tool)).await;
                    if call % 100 == 0 {
                        // Snapshots while recording neither block nor lose anything.
                        let _ = metrics.snapshot();
                        metrics
                            .server("fs")
                            .cache(CacheKind::Tools, call % 200 == 0);
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("tasks finish")
            .unwrap();
    }
    let fs = metrics.server_snapshot("fs").unwrap();
    assert_eq!(fs.calls, TASKS * CALLS);
    assert_eq!(fs.latency.count, TASKS * CALLS);
    assert_eq!(fs.operations.len(), 4);
    for op in &fs.operations {
        assert_eq!(op.calls, TASKS * CALLS / 4, "{op:?}");
    }
    assert_eq!(fs.errors, TASKS * CALLS / 4);
    assert_eq!(fs.cache.hits + fs.cache.misses, TASKS * 5);
}

#[tokio::test]
async fn tool_names_past_the_cap_share_one_series() {
    let metrics = Metrics::with_config(MetricsConfig::new().with_max_series_per_server(3));
    let service = metrics.layer("fs", "pipe").layer(Scripted::ok());
    for tool in ["a", "b", "c", "d", "e", "a"] {
        service.call(tool_call(tool)).await.unwrap();
    }
    let rows: Vec<_> = metrics
        .server_snapshot("fs")
        .unwrap()
        .operations
        .into_iter()
        .map(|o| (o.tool, o.calls))
        .collect();
    assert_eq!(
        rows,
        [
            (Some("_other".to_owned()), 2),
            (Some("a".to_owned()), 2),
            (Some("b".to_owned()), 1),
            (Some("c".to_owned()), 1),
        ]
    );
}

#[tokio::test]
async fn the_snapshot_serializes_with_stable_field_names() {
    let metrics = Metrics::new();
    let service = metrics.layer("fs", "pipe").layer(Scripted::ok());
    service.call(tool_call("echo")).await.unwrap();
    let json = serde_json::to_value(metrics.snapshot()).unwrap();
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(&json), ["qps_window_seconds", "servers"]);
    let server = &json["servers"][0];
    assert_eq!(
        keys(server),
        [
            "breaker",
            "cache",
            "calls",
            "cancelled",
            "endpoints",
            "error_rate",
            "errors",
            "failovers",
            "latency",
            "name",
            "network_transport",
            "operations",
            "pool",
            "protocol_version",
            "qps",
            "reconnects",
            "region",
            "server_address",
            "server_port",
            "sessions",
            "token_refreshes",
        ]
    );
    assert_eq!(
        keys(&server["operations"][0]),
        [
            "calls",
            "cancelled",
            "error_rate",
            "errors",
            "errors_by_type",
            "latency",
            "method",
            "qps",
            "tool"
        ]
    );
    assert_eq!(
        keys(&server["latency"]),
        ["count", "max_us", "mean_us", "p50_us", "p90_us", "p99_us", "sum_us"]
    );
    assert_eq!(
        keys(&server["cache"]),
        ["caches", "hit_rate", "hits", "misses"]
    );
    assert_eq!(server["cache"]["caches"][3]["cache"], "resource_contents");
    assert_eq!(
        keys(&server["sessions"]),
        [
            "duration_max_seconds",
            "duration_p50_seconds",
            "duration_sum_seconds",
            "ended",
            "errors",
            "errors_by_type"
        ]
    );
    assert_eq!(server["operations"][0]["tool"], "echo");
}
