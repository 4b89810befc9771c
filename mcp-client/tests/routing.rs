//! Multi-region routing through the facade, against real fixture processes on loopback: each
//! "region" is a fixture server on its own port (`--http 127.0.0.1:PORT --instance LABEL`),
//! distance is `--http-delay-ms N`, and the `instance` tool says which endpoint answered.
//!
//! Proved here: the client's region wins over a faster remote endpoint; the lowest latency wins
//! inside a region; two close endpoints do not flap over 1,000 calls; killing the active
//! endpoint during a stream of idempotent and side-effecting calls moves the calls with no
//! duplicate execution and no call past its deadline; an open breaker moves the calls; failback
//! waits for the probe period; resources are resubscribed on the new endpoint; an endpoint with
//! another tool list is an ordinary catalog change; the status display and the metrics show the
//! endpoints.

#![cfg(feature = "enterprise")]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{unique_marker, DEADLINE};
use mcp_client::config::{ClientConfig, EndpointConfig, ServerConfig, TransportConfig};
use mcp_client::{EndpointState, Failover, FailoverReason, McpClient};
use mcp_core::RequestOptions;
use serde_json::json;
use tokio::sync::broadcast;
use tokio::time::Instant;

/// Every call's own deadline in the streams below.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// How late a call may end after its deadline on a loaded 2-core machine.
const SLACK: Duration = Duration::from_secs(1);
/// The probe interval of the routed servers under test.
const PROBE: Duration = Duration::from_millis(100);
/// Their failback period.
const FAILBACK: Duration = Duration::from_secs(1);

/// One "region": a fixture process on a loopback port of its own.
type Region = common::FixtureRegion;

/// A scratch directory and the marker of this test's processes.
fn scratch(test: &str) -> (PathBuf, String) {
    let marker = unique_marker(test);
    let dir = std::env::temp_dir().join(format!("mcp-routing-{marker}"));
    std::fs::create_dir_all(&dir).unwrap();
    (dir, marker)
}

/// Server `search` over these endpoints, with fast probes and a short failback period.
fn routed(endpoints: &[(&Region, Option<&str>)]) -> ServerConfig {
    let first = endpoints[0].0.url();
    let mut server = ServerConfig::new(
        "search",
        TransportConfig::Http {
            url: first,
            headers: BTreeMap::new(),
        },
    );
    server.endpoints = endpoints
        .iter()
        .map(|(region, label)| EndpointConfig {
            url: region.url(),
            region: label.map(str::to_owned),
            headers: BTreeMap::new(),
        })
        .collect();
    server.startup_timeout = Duration::from_secs(5);
    server.tool_timeout = Duration::from_secs(5);
    server.settings.probe_interval = PROBE;
    server.settings.failback_after = FAILBACK;
    server
}

async fn start(server: ServerConfig, region: Option<&str>) -> McpClient {
    let config = ClientConfig {
        servers: vec![server],
        source: None,
        region: region.map(str::to_owned),
        store: None,
    };
    let client = tokio::time::timeout(DEADLINE, McpClient::builder(config).start())
        .await
        .expect("start is bounded");
    assert!(
        client.servers()[0].status.is_ready(),
        "{:?}",
        client.servers()[0]
    );
    client
}

/// Which region answered a call of the `instance` tool.
async fn served_by(client: &McpClient) -> String {
    client
        .call_tool("search__instance", None)
        .await
        .expect("instance answers")
        .text()
}

/// The index of the endpoint carrying the calls, per the status display.
fn active(client: &McpClient) -> Option<usize> {
    client.servers()[0].endpoints.iter().position(|e| e.active)
}

/// The next failover, within the deadline.
async fn next_failover(failovers: &mut broadcast::Receiver<Failover>) -> Failover {
    tokio::time::timeout(DEADLINE, failovers.recv())
        .await
        .expect("a failover within the deadline")
        .expect("the client is alive")
}

/// Probe samples of endpoint `index` so far (from the metrics).
fn probe_samples(client: &McpClient, index: usize) -> u64 {
    client
        .metrics()
        .server("search")
        .and_then(|s| s.endpoints.get(index).map(|e| e.probe_samples))
        .unwrap_or(0)
}

#[tokio::test]
async fn the_clients_region_is_chosen_over_a_faster_remote_endpoint() {
    let (dir, marker) = scratch("same-region");
    let eu = Region::start("eu", &dir, &marker, &["--http-delay-ms", "40"]).await;
    let us = Region::start("us", &dir, &marker, &[]).await;
    let client = start(
        routed(&[(&us, Some("us-east")), (&eu, Some("eu-west"))]),
        Some("eu-west"),
    )
    .await;
    let mut failovers = client.failovers();
    assert_eq!(served_by(&client).await, "eu");
    // The remote endpoint is measured faster, round after round, and still loses.
    mcp_testkit::wait::until(
        "the remote endpoint has been probed 5 times",
        DEADLINE,
        || probe_samples(&client, 0) >= 5 && probe_samples(&client, 1) >= 5,
    )
    .await;
    let snapshot = client.metrics();
    let search = snapshot.server("search").unwrap();
    let (us_ms, eu_ms) = (
        search.endpoints[0].probe_latency_ewma_us.unwrap(),
        search.endpoints[1].probe_latency_ewma_us.unwrap(),
    );
    assert!(us_ms < eu_ms, "us {us_ms} µs, eu {eu_ms} µs");
    assert_eq!(served_by(&client).await, "eu");
    assert_eq!(active(&client), Some(1));
    assert!(failovers.try_recv().is_err(), "no failover");
    assert_eq!(search.failovers, 0);
    assert_eq!(search.region.as_deref(), Some("eu-west"));
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_lowest_latency_wins_inside_a_region() {
    let (dir, marker) = scratch("lowest-latency");
    let slow = Region::start("eu-slow", &dir, &marker, &["--http-delay-ms", "80"]).await;
    let fast = Region::start("eu-fast", &dir, &marker, &["--http-delay-ms", "5"]).await;
    let remote = Region::start("us", &dir, &marker, &[]).await;
    let client = start(
        routed(&[
            (&slow, Some("eu-west")),
            (&fast, Some("eu-west")),
            (&remote, Some("us-east")),
        ]),
        Some("eu-west"),
    )
    .await;
    let mut failovers = client.failovers();
    // Nothing is known at first: configuration order.
    assert_eq!(served_by(&client).await, "eu-slow");
    let moved = next_failover(&mut failovers).await;
    assert_eq!((moved.from.index, moved.to.index), (0, 1), "{moved:?}");
    assert_eq!(moved.reason, FailoverReason::Faster);
    assert_eq!(moved.to.region.as_deref(), Some("eu-west"));
    assert_eq!(served_by(&client).await, "eu-fast");
    let report = &client.servers()[0];
    assert_eq!(report.endpoints[1].state, EndpointState::Active);
    assert_ne!(report.endpoints[0].state, EndpointState::Active);
    assert_eq!(client.metrics().server("search").unwrap().failovers, 1);
    // The endpoint left keeps no connection: its session and pool were closed after their
    // calls (only its probes' short-lived sessions come and go).
    mcp_testkit::wait::until(
        "no connection to the endpoint left stays open",
        DEADLINE,
        || common::established_to(slow.port) == 0,
    )
    .await;
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn two_endpoints_five_percent_apart_do_not_flap_over_1000_calls() {
    let (dir, marker) = scratch("hysteresis");
    // 5 % apart, and slow enough that a loaded machine's scheduling noise (a few ms on a probe)
    // stays well inside the 25 % a move needs.
    let a = Region::start("a", &dir, &marker, &["--http-delay-ms", "60"]).await;
    let b = Region::start("b", &dir, &marker, &["--http-delay-ms", "57"]).await;
    let mut server = routed(&[(&a, Some("eu-west")), (&b, Some("eu-west"))]);
    server.settings.probe_interval = Duration::from_millis(50);
    let client = start(server, Some("eu-west")).await;
    let mut failovers = client.failovers();
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let client = client.clone();
        let calls = calls.clone();
        workers.spawn(async move {
            while calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 1000 {
                client
                    .call_tool("search__echo", Some(json!({"text": "x"})))
                    .await
                    .expect("every call succeeds");
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done.expect("no worker panicked");
    }
    assert!(probe_samples(&client, 0) >= 3 && probe_samples(&client, 1) >= 3);
    assert!(failovers.try_recv().is_err(), "the calls moved");
    assert_eq!(client.metrics().server("search").unwrap().failovers, 0);
    assert_eq!(active(&client), Some(0));
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// How one call of a stream went.
struct Outcome {
    started: Instant,
    took: Duration,
    ok: bool,
}

#[tokio::test]
async fn killing_the_active_endpoint_moves_the_calls_without_duplicates_or_late_calls() {
    let (dir, marker) = scratch("kill-active");
    let mut eu = Region::start("eu", &dir, &marker, &[]).await;
    let us = Region::start("us", &dir, &marker, &[]).await;
    let client = start(
        routed(&[(&eu, Some("eu-west")), (&us, Some("us-east"))]),
        Some("eu-west"),
    )
    .await;
    let mut failovers = client.failovers();
    assert_eq!(served_by(&client).await, "eu");

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let outcomes: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let (client, stop, outcomes) = (client.clone(), stop.clone(), outcomes.clone());
        workers.spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                n += 1;
                let call_id = format!("w{worker}-{n}");
                let (tool, arguments) = if n % 2 == 0 {
                    ("search__echo", json!({"text": call_id}))
                } else {
                    ("search__record", json!({"call_id": call_id}))
                };
                let started = Instant::now();
                let result = client
                    .call_tool_with(
                        tool,
                        Some(arguments),
                        RequestOptions::new().with_timeout(CALL_TIMEOUT),
                    )
                    .await;
                let ok = matches!(&result, Ok(r) if !r.is_error());
                lock(&outcomes).push(Outcome {
                    started,
                    took: started.elapsed(),
                    ok,
                });
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
    }
    mcp_testkit::wait::until("the stream has run a while", DEADLINE, || {
        lock(&outcomes).len() >= 40
    })
    .await;
    let killed = Instant::now();
    eu.kill();
    let moved = next_failover(&mut failovers).await;
    let failover_time = killed.elapsed();
    assert_eq!(moved.reason, FailoverReason::EndpointDown, "{moved:?}");
    assert_eq!((moved.from.index, moved.to.index), (0, 1));
    let settled = killed + failover_time + Duration::from_millis(200);
    mcp_testkit::wait::until("40 calls ended after the move", DEADLINE, || {
        lock(&outcomes)
            .iter()
            .filter(|o| o.started >= settled)
            .count()
            >= 40
    })
    .await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    while let Some(done) = workers.join_next().await {
        done.expect("no worker panicked");
    }

    let outcomes = std::mem::take(&mut *lock(&outcomes));
    let late: Vec<_> = outcomes
        .iter()
        .filter(|o| o.took > CALL_TIMEOUT + SLACK)
        .map(|o| o.took)
        .collect();
    assert!(late.is_empty(), "calls outlived their deadline: {late:?}");
    // Calls made once the traffic had moved all succeed, on the other endpoint.
    let after: Vec<_> = outcomes.iter().filter(|o| o.started >= settled).collect();
    assert!(
        after.len() >= 16,
        "only {} calls after the move",
        after.len()
    );
    assert!(after.iter().all(|o| o.ok), "a call after the move failed");
    assert_eq!(served_by(&client).await, "us");
    // No side-effecting call ran twice, on either endpoint.
    let mut seen: HashMap<String, u32> = HashMap::new();
    for id in eu.executions().into_iter().chain(us.executions()) {
        *seen.entry(id).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "executed twice: {twice:?}");
    assert!(
        !us.executions().is_empty(),
        "record calls ran on the new endpoint"
    );
    let report = &client.servers()[0];
    assert_eq!(report.endpoints[0].state, EndpointState::Down, "{report:?}");
    assert_eq!(report.endpoints[1].state, EndpointState::Active);
    eprintln!("failover took {failover_time:?}");
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[tokio::test]
async fn an_open_breaker_moves_the_calls() {
    let (dir, marker) = scratch("breaker");
    // The first two tool calls at eu never get answer headers.
    let eu = Region::start("eu", &dir, &marker, &["--http-stall-first", "2"]).await;
    let us = Region::start("us", &dir, &marker, &[]).await;
    let mut server = routed(&[(&eu, Some("eu-west")), (&us, Some("us-east"))]);
    server.tool_timeout = Duration::from_millis(700);
    server.settings.breaker.failure_threshold = 2;
    server.settings.breaker.cooldown = Duration::from_secs(60);
    let client = start(server, Some("eu-west")).await;
    let mut failovers = client.failovers();
    for _ in 0..2 {
        let error = client
            .call_tool("search__record", Some(json!({"call_id": "stalled"})))
            .await
            .expect_err("a stalled call times out");
        assert_eq!(error.kind(), mcp_core::ErrorKind::Timeout, "{error}");
    }
    let moved = next_failover(&mut failovers).await;
    assert_eq!(moved.reason, FailoverReason::BreakerOpen, "{moved:?}");
    assert_eq!(served_by(&client).await, "us");
    let report = &client.servers()[0];
    assert_eq!(report.endpoints[0].state, EndpointState::Down);
    assert!(matches!(
        report.endpoints[0].breaker,
        Some(mcp_client::BreakerStatus::Open { .. })
    ));
    // The server's breaker is the active endpoint's: closed.
    assert_eq!(report.breaker, Some(mcp_client::BreakerStatus::Closed));
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn failback_waits_until_the_preferred_endpoint_has_answered_probes_for_the_period() {
    let (dir, marker) = scratch("failback");
    let mut eu = Region::start("eu", &dir, &marker, &[]).await;
    let us = Region::start("us", &dir, &marker, &[]).await;
    let client = start(
        routed(&[(&eu, Some("eu-west")), (&us, Some("us-east"))]),
        Some("eu-west"),
    )
    .await;
    let mut failovers = client.failovers();
    eu.kill();
    // Calls notice first, or the next probe does.
    let _ = client
        .call_tool("search__echo", Some(json!({"text": "x"})))
        .await;
    let away = next_failover(&mut failovers).await;
    assert_eq!(away.reason, FailoverReason::EndpointDown);
    assert_eq!(served_by(&client).await, "us");

    eu.restart().await;
    let back_up = Instant::now();
    mcp_testkit::wait::until("the home endpoint answers probes again", DEADLINE, || {
        matches!(
            client.servers()[0].endpoints[0].state,
            EndpointState::Probing | EndpointState::Standby
        )
    })
    .await;
    let home = next_failover(&mut failovers).await;
    assert_eq!(home.reason, FailoverReason::Preferred, "{home:?}");
    assert_eq!(home.to.index, 0);
    assert!(
        back_up.elapsed() >= FAILBACK,
        "failed back after {:?}, before the period",
        back_up.elapsed()
    );
    assert_eq!(served_by(&client).await, "eu");
    assert_eq!(client.metrics().server("search").unwrap().failovers, 2);
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn resources_are_resubscribed_on_the_new_endpoint() {
    const COUNTER: &str = "fixture://counter";
    let (dir, marker) = scratch("subscriptions");
    let mut eu = Region::start("eu", &dir, &marker, &[]).await;
    let us = Region::start("us", &dir, &marker, &[]).await;
    let client = start(
        routed(&[(&eu, Some("eu-west")), (&us, Some("us-east"))]),
        Some("eu-west"),
    )
    .await;
    let mut failovers = client.failovers();
    let (updates_tx, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let (_, _guard) = client
        .on_resource_update(None, COUNTER, move |update| {
            let _ = updates_tx.send(update.uri.clone());
        })
        .await
        .expect("subscribed");
    client.read_resource(None, COUNTER).await.unwrap();
    let subscribes = |region: &Region| {
        std::fs::read_to_string(&region.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"resources/subscribe\""))
            .count()
    };
    assert_eq!(subscribes(&eu), 1);
    assert_eq!(subscribes(&us), 0);

    eu.kill();
    let _ = client
        .call_tool("search__echo", Some(json!({"text": "x"})))
        .await;
    next_failover(&mut failovers).await;
    assert_eq!(subscribes(&us), 1, "resubscribed on the new endpoint");
    // The new endpoint's update reaches the observer.
    let session = client.session("search").expect("ready");
    use mcp_core::McpServiceExt;
    session
        .call_tool("bump_resource", None, RequestOptions::new())
        .await
        .unwrap();
    let uri = tokio::time::timeout(DEADLINE, updates.recv())
        .await
        .expect("an update within the deadline")
        .unwrap();
    assert_eq!(uri, COUNTER);
    let fresh = client.read_resource(None, COUNTER).await.unwrap();
    assert_eq!(fresh.contents[0].text.as_deref(), Some("counter = 1"));
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn an_endpoint_with_another_tool_list_is_an_ordinary_catalog_change() {
    let (dir, marker) = scratch("other-tools");
    let mut eu = Region::start("eu", &dir, &marker, &[]).await;
    let us = Region::start("us", &dir, &marker, &["--extra-tool", "other"]).await;
    let client = start(
        routed(&[(&eu, Some("eu-west")), (&us, Some("us-east"))]),
        Some("eu-west"),
    )
    .await;
    assert!(client.tools().get("search__other").is_none());
    let mut changes = client.catalog_changes();
    let mut failovers = client.failovers();
    eu.kill();
    let _ = client
        .call_tool("search__echo", Some(json!({"text": "x"})))
        .await;
    next_failover(&mut failovers).await;
    let change = tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("a catalog change")
        .unwrap();
    assert_eq!(change.added, vec!["search__other".to_owned()], "{change:?}");
    assert!(change.removed.is_empty());
    let answer = client
        .call_tool("search__other", Some(json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(answer.text(), "other: hi");
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_clients_region_comes_from_the_builder_then_the_config_then_the_environment() {
    let (dir, marker) = scratch("region-source");
    let eu = Region::start("eu", &dir, &marker, &[]).await;
    let us = Region::start("us", &dir, &marker, &[]).await;
    let server = routed(&[(&us, Some("us-east")), (&eu, Some("eu-west"))]);
    // SAFETY (edition 2021: not unsafe): each test runs in a process of its own (nextest).
    std::env::set_var(mcp_client::REGION_VARIABLE, "eu-west");
    let config = |region: Option<&str>| ClientConfig {
        servers: vec![server.clone()],
        source: None,
        region: region.map(str::to_owned),
        store: None,
    };
    let from_env = McpClient::builder(config(None)).start().await;
    assert_eq!(from_env.region(), Some("eu-west"));
    assert_eq!(served_by(&from_env).await, "eu");
    from_env.shutdown().await;
    let from_config = McpClient::builder(config(Some("us-east"))).start().await;
    assert_eq!(from_config.region(), Some("us-east"));
    assert_eq!(served_by(&from_config).await, "us");
    from_config.shutdown().await;
    let from_builder = McpClient::builder(config(Some("us-east")))
        .region("eu-west")
        .start()
        .await;
    assert_eq!(from_builder.region(), Some("eu-west"));
    assert_eq!(served_by(&from_builder).await, "eu");
    from_builder.shutdown().await;
    std::env::remove_var(mcp_client::REGION_VARIABLE);
    let nowhere = McpClient::builder(config(None)).start().await;
    assert_eq!(nowhere.region(), None);
    // No preference: configuration order.
    assert_eq!(served_by(&nowhere).await, "us");
    nowhere.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_profile_without_routing_says_so() {
    let (dir, marker) = scratch("no-routing");
    let eu = Region::start("eu", &dir, &marker, &[]).await;
    let us = Region::start("us", &dir, &marker, &[]).await;
    let config = ClientConfig {
        servers: vec![routed(&[(&eu, Some("eu-west")), (&us, Some("us-east"))])],
        source: None,
        region: None,
        store: None,
    };
    let client = McpClient::builder(config)
        .stack_policy(mcp_client::StackPolicy::professional())
        .start()
        .await;
    let report = &client.servers()[0];
    let reason = report.status.reason().expect("unavailable with a reason");
    assert!(reason.contains("enterprise"), "{reason}");
    assert!(reason.contains("2 endpoints"), "{reason}");
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Every endpoint killed in turn, with the default breaker and probe settings: an endpoint
/// that comes back is still marked down (its next probe is 30 s away) and its breaker still
/// open, yet the calls move to it as soon as nothing better is left (a new session there is
/// the proof it answers). This hung for the breakers' whole cool-down before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_kills_move_the_calls_every_time_with_the_default_settings() {
    let (dir, marker) = scratch("repeated");
    let mut regions = Vec::new();
    for label in ["r1", "r2", "r3"] {
        regions.push(Region::start(label, &dir, &marker, &[]).await);
    }
    let mut server = routed(&[
        (&regions[0], Some("r1")),
        (&regions[1], Some("r2")),
        (&regions[2], Some("r3")),
    ]);
    server.settings = Default::default();
    server.tool_timeout = CALL_TIMEOUT;
    let client = start(server, Some("r1")).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let late = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let (client, stop, late) = (client.clone(), stop.clone(), late.clone());
        workers.spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                n += 1;
                let started = Instant::now();
                let (tool, arguments) = if n % 2 == 0 {
                    ("search__echo", json!({"text": "x"}))
                } else {
                    (
                        "search__record",
                        json!({"call_id": format!("w{worker}-{n}")}),
                    )
                };
                let _ = client
                    .call_tool_with(
                        tool,
                        Some(arguments),
                        RequestOptions::new().with_timeout(CALL_TIMEOUT),
                    )
                    .await;
                if started.elapsed() > CALL_TIMEOUT + SLACK {
                    late.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
    }
    let mut failovers = client.failovers();
    for _ in 0..6 {
        let active = active(&client).expect("an active endpoint");
        let dead = regions[active].label.clone();
        regions[active].kill();
        let deadline = Instant::now() + DEADLINE;
        loop {
            let answer = client
                .call_tool_with(
                    "search__instance",
                    None,
                    RequestOptions::new().with_timeout(CALL_TIMEOUT),
                )
                .await;
            if matches!(&answer, Ok(r) if r.text() != dead) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the calls never left {dead}: {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let moved = next_failover(&mut failovers).await;
        assert_eq!(moved.from.index, active, "{moved:?}");
        regions[active].restart().await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    while let Some(done) = workers.join_next().await {
        done.expect("no worker panicked");
    }
    assert_eq!(
        late.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "calls outlived their deadline"
    );
    let mut seen: HashMap<String, u32> = HashMap::new();
    for id in regions.iter().flat_map(Region::executions) {
        *seen.entry(id).or_default() += 1;
    }
    assert!(
        seen.values().all(|n| *n == 1),
        "a side-effecting call ran twice"
    );
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_long_call_survives_an_elective_move() {
    let (dir, marker) = scratch("long-call");
    let slow = Region::start("eu-slow", &dir, &marker, &["--http-delay-ms", "60"]).await;
    let fast = Region::start("eu-fast", &dir, &marker, &["--http-delay-ms", "5"]).await;
    let mut server = routed(&[(&slow, Some("eu-west")), (&fast, Some("eu-west"))]);
    // Shorter than the call: the move must not close the session under it.
    server.tool_timeout = Duration::from_millis(500);
    let client = start(server, Some("eu-west")).await;
    let mut failovers = client.failovers();
    let long = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .call_tool_with(
                    "search__slow",
                    Some(json!({"duration_ms": 2500, "steps": 0})),
                    RequestOptions::new().with_timeout(Duration::from_secs(10)),
                )
                .await
        })
    };
    let moved = next_failover(&mut failovers).await;
    assert_eq!(moved.reason, FailoverReason::Faster);
    assert!(!long.is_finished(), "the move came after the call");
    let answer = tokio::time::timeout(DEADLINE, long)
        .await
        .expect("the call ends")
        .expect("no panic");
    assert!(
        matches!(&answer, Ok(r) if !r.is_error()),
        "the long call was cut by the move: {answer:?}"
    );
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn one_endpoint_refusing_credentials_is_that_endpoints_failure() {
    let (dir, marker) = scratch("one-refuses");
    let eu = Region::start("eu", &dir, &marker, &["--http-bearer", "right-token"]).await;
    let us = Region::start("us", &dir, &marker, &[]).await;
    let mut server = routed(&[(&eu, Some("eu-west")), (&us, Some("us-east"))]);
    server.endpoints[0]
        .headers
        .insert("Authorization".into(), "Bearer wrong-token".into());
    let client = start(server, Some("eu-west")).await;
    assert_eq!(served_by(&client).await, "us");
    let report = &client.servers()[0];
    assert!(report.status.is_ready(), "{report:?}");
    assert_eq!(report.endpoints[0].state, EndpointState::Down);
    let reason = report.endpoints[0].down_reason.clone().unwrap_or_default();
    assert!(!reason.contains("wrong-token"), "{reason}");
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn endpoints_of_different_transports_are_picked_by_their_scheme() {
    let (dir, marker) = scratch("schemes");
    let mut eu = Region::start_as("eu-ws", &dir, &marker, &[], true).await;
    let us = Region::start("us-http", &dir, &marker, &[]).await;
    let mut server = routed(&[(&eu, Some("eu-west")), (&us, Some("us-east"))]);
    // No `type`: each endpoint's scheme picks its transport.
    server.transport = TransportConfig::Url {
        url: eu.url(),
        headers: BTreeMap::new(),
    };
    let client = start(server, Some("eu-west")).await;
    let mut failovers = client.failovers();
    assert_eq!(served_by(&client).await, "eu-ws");
    eu.kill();
    let _ = client
        .call_tool("search__echo", Some(json!({"text": "x"})))
        .await;
    let moved = next_failover(&mut failovers).await;
    assert_eq!(moved.to.index, 1, "{moved:?}");
    assert_eq!(served_by(&client).await, "us-http");
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}
