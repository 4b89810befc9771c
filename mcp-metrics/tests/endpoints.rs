//! A routed server's endpoints: the records' averages and counts, one record per URL, the cap,
//! failovers and the region, and the snapshot with the gauge source's states merged by URL.

mod support;

use std::sync::Arc;
use std::time::Duration;

use mcp_core::Layer;
use mcp_metrics::{EndpointGauges, EndpointInfo, Metrics, ServerGauges};
use serde_json::json;
use support::Scripted;

fn info(url: &str) -> EndpointInfo {
    EndpointInfo {
        url: url.into(),
        ..Default::default()
    }
}

fn ms(ms: f64) -> Duration {
    Duration::from_nanos((ms * 1e6).round() as u64)
}

/// The probe average is within a nanosecond of `expected` and holds `samples`.
fn assert_probe(actual: Option<(Duration, u64)>, expected: Duration, samples: u64) {
    let (average, n) = actual.expect("a probe average");
    assert_eq!(n, samples);
    assert!(
        average.abs_diff(expected) <= Duration::from_nanos(1),
        "{average:?}, not {expected:?}"
    );
}

#[test]
fn the_probe_average_starts_at_its_first_answer_and_clamps_outliers_after_three() {
    let metrics = Metrics::new();
    let endpoint = metrics.server("gh").endpoint(info("https://a.example/mcp"));
    assert_eq!(endpoint.probe_latency(), None);
    // A failed probe is counted and is not a sample.
    endpoint.record_probe(None);
    assert_eq!(endpoint.probe_latency(), None);

    endpoint.record_probe(Some(ms(10.0)));
    assert_probe(endpoint.probe_latency(), ms(10.0), 1);
    // Alpha 0.1: 10 + 0.1 × (20 − 10).
    endpoint.record_probe(Some(ms(20.0)));
    assert_probe(endpoint.probe_latency(), ms(11.0), 2);
    // The third sample is not clamped yet, though it is over twice the average.
    endpoint.record_probe(Some(ms(30.0)));
    assert_probe(endpoint.probe_latency(), ms(12.9), 3);
    // From the fourth on, a sample counts as at most twice the average: 100 ms as 25.8 ms.
    endpoint.record_probe(Some(ms(100.0)));
    assert_probe(endpoint.probe_latency(), ms(14.19), 4);
    // A fast sample is never clamped.
    endpoint.record_probe(Some(ms(4.19)));
    assert_probe(endpoint.probe_latency(), ms(13.19), 5);
    endpoint.record_probe(None);

    let snapshot = metrics.server_snapshot("gh").unwrap();
    let row = &snapshot.endpoints[0];
    assert_eq!(
        (row.probes, row.probe_failures, row.probe_samples),
        (7, 2, 5)
    );
    assert_eq!(row.probe_latency_ewma_us, Some(13_190));
}

#[test]
fn the_call_average_moves_by_an_eighth_of_each_success() {
    let metrics = Metrics::new();
    let endpoint = metrics.server("gh").endpoint(info("https://a.example/mcp"));
    assert_eq!(endpoint.call_latency(), None);
    endpoint.record_call(Duration::from_millis(40), false);
    assert_eq!(endpoint.call_latency(), None, "a failure is not a sample");
    endpoint.record_call(Duration::from_millis(8), true);
    assert_eq!(endpoint.call_latency(), Some(Duration::from_millis(8)));
    endpoint.record_call(Duration::from_millis(24), true);
    assert_eq!(endpoint.call_latency(), Some(Duration::from_millis(10)));
    let row = &metrics.server_snapshot("gh").unwrap().endpoints[0];
    assert_eq!((row.calls, row.errors), (3, 1));
    assert_eq!(row.call_latency_ewma_us, Some(10_000));
}

#[test]
fn the_same_url_gives_the_same_record_and_endpoints_keep_their_order() {
    let metrics = Metrics::new();
    let gh = metrics.server("gh");
    let first = gh.endpoint(EndpointInfo {
        url: "https://eu.example/mcp".into(),
        address: Some("eu.example".into()),
        port: Some(443),
        region: Some("eu-west-1".into()),
    });
    gh.endpoint(info("https://us.example/mcp"));
    // Registered again (by a second session, say): the same record, and its first info.
    let again = gh.endpoint(EndpointInfo {
        region: Some("elsewhere".into()),
        ..info("https://eu.example/mcp")
    });
    assert_eq!(again.info().region.as_deref(), Some("eu-west-1"));
    first.record_call(Duration::from_millis(1), true);
    again.record_call(Duration::from_millis(1), false);
    // A clone records into the same record too.
    first.clone().record_probe(None);
    // Another server's endpoint at the same URL is another record.
    metrics
        .server("other")
        .endpoint(info("https://eu.example/mcp"))
        .record_call(Duration::from_millis(1), true);

    let snapshot = metrics.server_snapshot("gh").unwrap();
    let urls: Vec<_> = snapshot.endpoints.iter().map(|e| e.url.as_str()).collect();
    assert_eq!(urls, ["https://eu.example/mcp", "https://us.example/mcp"]);
    let eu = snapshot.endpoint("https://eu.example/mcp").unwrap();
    assert_eq!((eu.calls, eu.errors, eu.probes), (2, 1, 1));
    assert_eq!(eu.region.as_deref(), Some("eu-west-1"));
    assert_eq!(
        (eu.server_address.as_deref(), eu.server_port),
        (Some("eu.example"), Some(443))
    );
}

#[test]
fn endpoints_past_the_cap_record_into_nothing_visible() {
    let metrics = Metrics::new();
    let gh = metrics.server("gh");
    let url = |i: usize| format!("https://r{i}.example/mcp");
    let kept: Vec<_> = (0..64).map(|i| gh.endpoint(info(&url(i)))).collect();
    let over = gh.endpoint(info(&url(64)));
    // It still works for its caller.
    over.record_call(Duration::from_millis(3), true);
    over.record_probe(Some(Duration::from_millis(5)));
    assert_eq!(over.call_latency(), Some(Duration::from_millis(3)));
    assert_eq!(over.info().url, url(64));
    // Registered URLs still find their records.
    gh.endpoint(info(&url(63)))
        .record_call(Duration::from_millis(1), true);
    assert_eq!(kept[63].call_latency(), Some(Duration::from_millis(1)));

    let snapshot = metrics.server_snapshot("gh").unwrap();
    assert_eq!(snapshot.endpoints.len(), 64);
    assert!(snapshot.endpoint(&url(64)).is_none());
    assert_eq!(snapshot.endpoints.iter().map(|e| e.calls).sum::<u64>(), 1);
}

#[tokio::test]
async fn the_snapshot_merges_gauges_by_url_with_failovers_and_region() {
    let metrics = Metrics::new();
    let _layer = metrics.layer("gh", "tcp").layer(Scripted::ok());
    let gh = metrics.server("gh");
    let eu = gh.endpoint(EndpointInfo {
        url: "https://eu.example/mcp".into(),
        address: Some("eu.example".into()),
        port: Some(443),
        region: Some("eu-west-1".into()),
    });
    let us = gh.endpoint(EndpointInfo {
        url: "https://us.example/mcp".into(),
        address: Some("us.example".into()),
        port: Some(8443),
        region: Some("us-east-1".into()),
    });
    gh.endpoint(info("https://backup.example/mcp"));
    eu.record_call(Duration::from_micros(1_500), true);
    us.record_call(Duration::from_millis(2), false);
    us.record_probe(Some(Duration::from_micros(40_250)));
    gh.failover();
    gh.set_server_address(Some("us.example"), Some(8443));
    gh.set_region(Some("us-east-1"));
    // The gauges come in the router's order, one for a URL never registered.
    metrics.set_gauges(
        "gh",
        Arc::new(|| ServerGauges {
            breaker: Some("closed".into()),
            endpoints: vec![
                EndpointGauges {
                    url: "https://us.example/mcp".into(),
                    state: "active".into(),
                    active: true,
                    breaker: Some("closed".into()),
                },
                EndpointGauges {
                    url: "https://gone.example/mcp".into(),
                    state: "standby".into(),
                    ..Default::default()
                },
                EndpointGauges {
                    url: "https://eu.example/mcp".into(),
                    state: "down".into(),
                    active: false,
                    breaker: Some("open".into()),
                },
            ],
            ..Default::default()
        }),
    );

    let snapshot = metrics.server_snapshot("gh").unwrap();
    assert_eq!(snapshot.failovers, 1);
    assert_eq!(snapshot.region.as_deref(), Some("us-east-1"));
    assert_eq!(snapshot.server_address.as_deref(), Some("us.example"));
    assert_eq!(snapshot.breaker.as_deref(), Some("closed"));
    // Registration order; the unregistered URL's gauges are left out.
    let json = serde_json::to_value(&snapshot.endpoints).unwrap();
    assert_eq!(
        json,
        json!([
            {
                "url": "https://eu.example/mcp",
                "server_address": "eu.example",
                "server_port": 443,
                "region": "eu-west-1",
                "state": "down",
                "active": false,
                "breaker": "open",
                "calls": 1,
                "errors": 0,
                "call_latency_ewma_us": 1500,
                "probes": 0,
                "probe_failures": 0,
                "probe_latency_ewma_us": null,
                "probe_samples": 0
            },
            {
                "url": "https://us.example/mcp",
                "server_address": "us.example",
                "server_port": 8443,
                "region": "us-east-1",
                "state": "active",
                "active": true,
                "breaker": "closed",
                "calls": 1,
                "errors": 1,
                "call_latency_ewma_us": null,
                "probes": 1,
                "probe_failures": 0,
                "probe_latency_ewma_us": 40250,
                "probe_samples": 1
            },
            {
                "url": "https://backup.example/mcp",
                "server_address": null,
                "server_port": null,
                "region": null,
                "state": null,
                "active": false,
                "breaker": null,
                "calls": 0,
                "errors": 0,
                "call_latency_ewma_us": null,
                "probes": 0,
                "probe_failures": 0,
                "probe_latency_ewma_us": null,
                "probe_samples": 0
            }
        ])
    );
    let server = serde_json::to_value(&snapshot).unwrap();
    assert_eq!(server["failovers"], 1);
    assert_eq!(server["region"], "us-east-1");
}

#[tokio::test]
async fn a_server_without_endpoints_has_none_no_failovers_and_no_region() {
    let metrics = Metrics::new();
    let _layer = metrics.layer("fs", "pipe").layer(Scripted::ok());
    metrics.set_gauges("fs", Arc::new(ServerGauges::default));
    let snapshot = metrics.snapshot();
    let fs = snapshot.server("fs").unwrap();
    assert!(fs.endpoints.is_empty());
    assert_eq!((fs.failovers, fs.region.as_deref()), (0, None));
    let json = serde_json::to_value(fs).unwrap();
    assert_eq!(json["endpoints"], json!([]));
    assert_eq!(json["region"], json!(null));
    // Forgetting the region.
    let gh = metrics.server("gh");
    gh.set_region(Some("eu-west-1"));
    gh.set_region(None);
    assert_eq!(metrics.server_snapshot("gh").unwrap().region, None);
}

#[test]
fn a_removed_server_added_again_starts_without_endpoints() {
    let metrics = Metrics::new();
    let old = metrics.server("gh").endpoint(info("https://a.example/mcp"));
    metrics.server("gh").failover();
    assert!(metrics.remove_server("gh"));
    old.record_call(Duration::from_millis(1), true);
    let gh = metrics.server("gh");
    assert!(gh.snapshot().endpoints.is_empty());
    assert_eq!(gh.snapshot().failovers, 0);
    let new = gh.endpoint(info("https://a.example/mcp"));
    assert_eq!(new.call_latency(), None);
}
