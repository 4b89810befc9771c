//! Automatic subscriptions past `max_auto_subscriptions`: the least recently read one is
//! given up and its `resources/unsubscribe` is sent off the reader's path — a server that
//! never answers it slows and fails no read — through the URI's single flight, so a later
//! subscribe of that URI waits for the unsubscribe and then subscribes again (the server
//! never sees a subscribe followed by a stale unsubscribe), while a read of it meanwhile does
//! not wait: it reads without subscribing, and a read after the unsubscribe subscribes.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcp_resources::{ResourceConfig, Trigger, MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT};

const X: &str = "test://x";
const Y: &str = "test://y";
const Z: &str = "test://z";
const UNSUBSCRIBE: &str = "resources/unsubscribe";

fn config() -> ResourceConfig {
    ResourceConfig::default()
        .with_ttl(Duration::from_secs(10))
        .with_max_auto_subscriptions(1)
}

fn server() -> FakeServer {
    FakeServer::new()
        .with_text(X, "x1")
        .with_text(Y, "y1")
        .with_text(Z, "z1")
}

/// A server that never answers `resources/unsubscribe`: every read past the limit still
/// answers (it does not wait for another URI's unsubscribe under its own deadline).
#[tokio::test(start_paused = true)]
async fn reads_past_the_limit_do_not_wait_for_an_unanswered_unsubscribe() {
    let server = server();
    server.hold(UNSUBSCRIBE);
    let resources = manager(&server, config());
    for uri in [X, Y, Z] {
        let result = resources.read(uri).await.expect("the read answers");
        assert_eq!(text(&result), &format!("{}1", &uri[7..]));
    }
    let stats = resources.stats();
    assert_eq!((stats.subscribed, stats.subscriptions_evicted), (1, 2));
    until("both evictions' unsubscribes were sent", || {
        server.count(UNSUBSCRIBE) == 2
    })
    .await;
    assert_eq!(
        resources.state(X),
        Cached,
        "an evicted URI keeps its content"
    );
    assert_eq!(resources.read(X).await.unwrap().contents.len(), 1);
}

/// An eviction's unsubscribe that is never answered ends at its own deadline (the
/// configured request timeout) and is counted as failed; reads go on meanwhile.
#[tokio::test(start_paused = true)]
async fn an_unanswered_eviction_unsubscribe_ends_at_its_deadline_and_is_counted() {
    let server = server();
    server.hold(UNSUBSCRIBE);
    let resources = manager(&server, config());
    resources.read(X).await.unwrap();
    resources.read(Y).await.unwrap();
    until("the eviction's unsubscribe was sent", || {
        server.count(UNSUBSCRIBE) == 1
    })
    .await;
    assert_eq!(resources.stats().evicted_unsubscribes_failed, 0);
    tokio::time::advance(resources.config().request_timeout + Duration::from_secs(1)).await;
    until("the eviction's failure was counted", || {
        resources.stats().evicted_unsubscribes_failed == 1
    })
    .await;
    // The URI's flight is over: X can be subscribed again.
    server.release(UNSUBSCRIBE);
    resources.subscribe(X).await.unwrap();
    assert_eq!(
        server.exchanges_for(X),
        [
            "→ resources/subscribe",
            "← resources/subscribe",
            "→ resources/read",
            "← resources/read",
            "→ resources/unsubscribe",
            "→ resources/subscribe",
            "← resources/subscribe",
        ],
        "the unsubscribe given up at its deadline was never answered"
    );
}

/// An explicit subscribe of a URI whose eviction's unsubscribe is under way waits for it and
/// then subscribes again: subscribe, unsubscribe, subscribe — never a stale unsubscribe last.
#[tokio::test(start_paused = true)]
async fn a_subscribe_of_an_evicted_uri_waits_for_its_unsubscribe_then_subscribes_again() {
    let server = server();
    server.hold(UNSUBSCRIBE);
    let resources = manager(&server, config());
    resources.read(X).await.unwrap();
    let read_y = tokio::spawn({
        let resources = resources.clone();
        async move { resources.read(Y).await.map(|_| ()) }
    });
    until("X's eviction unsubscribe was sent", || {
        server.count_for(UNSUBSCRIBE, X) == 1
    })
    .await;
    let started = Arc::new(AtomicBool::new(false));
    let subscribe_x = tokio::spawn({
        let resources = resources.clone();
        let started = started.clone();
        async move {
            started.store(true, Ordering::SeqCst);
            resources.subscribe(X).await
        }
    });
    // The subscribe has run up to its first wait (it answers at once when nothing stops it).
    until("the subscribe of X started", || {
        started.load(Ordering::SeqCst)
    })
    .await;
    server.release(UNSUBSCRIBE);
    tokio::time::timeout(DEADLINE, subscribe_x)
        .await
        .unwrap()
        .unwrap()
        .expect("X is subscribed again");
    tokio::time::timeout(DEADLINE, read_y)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        server.exchanges_for(X),
        [
            "→ resources/subscribe",
            "← resources/subscribe",
            "→ resources/read",
            "← resources/read",
            "→ resources/unsubscribe",
            "← resources/unsubscribe",
            "→ resources/subscribe",
            "← resources/subscribe",
        ],
        "the new subscribe is sent once the eviction's unsubscribe is over"
    );
    assert_eq!(
        resources.stats().subscribed,
        2,
        "X explicitly, Y automatically"
    );
}

/// A read of an evicted URI (holding no content) whose unsubscribe is under way does not wait
/// for it under its own deadline: it reads without subscribing (fresh by the TTL only). The
/// server never answers that unsubscribe; the read is answered at once all the same.
#[tokio::test(start_paused = true)]
async fn a_read_of_an_evicted_uri_does_not_wait_for_its_unanswered_unsubscribe() {
    let server = server();
    server.hold(UNSUBSCRIBE);
    // A zero TTL: nothing is cached, so every read fetches (and subscribes when it must).
    let resources = manager(&server, config().with_ttl(Duration::ZERO));
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    resources.read(Y).await.unwrap();
    until("X's eviction unsubscribe was sent", || {
        server.count_for(UNSUBSCRIBE, X) == 1
    })
    .await;
    // On the paused clock a read that waited for the held unsubscribe would let time run to
    // this bound (well before the read's own deadline) and fail here.
    let bound = resources.config().request_timeout / 4;
    let read_x = tokio::time::timeout(bound, resources.read(X))
        .await
        .expect("the read of X did not wait for X's unsubscribe")
        .expect("X is read");
    assert_eq!(text(&read_x), "x1");
    assert_eq!(
        server.exchanges_for(X),
        [
            "→ resources/subscribe",
            "← resources/subscribe",
            "→ resources/read",
            "← resources/read",
            "→ resources/unsubscribe",
            "→ resources/read",
            "← resources/read",
        ],
        "no subscribe while the eviction's unsubscribe is under way"
    );
    assert_eq!(resources.state(X), Unknown);
    assert_eq!(
        rx.take(X),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Unknown, Trigger::SubscriptionEvicted),
        ]
    );
}

/// Once an eviction's unsubscribe is over, the next read of the URI subscribes again: the
/// server sees subscribe, unsubscribe, subscribe — never a stale unsubscribe last.
#[tokio::test(start_paused = true)]
async fn a_read_of_an_evicted_uri_subscribes_again_once_its_unsubscribe_is_over() {
    let server = server();
    server.hold(UNSUBSCRIBE);
    let resources = manager(&server, config().with_ttl(Duration::ZERO));
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    resources.read(Y).await.unwrap();
    until("X's eviction unsubscribe was sent", || {
        server.count_for(UNSUBSCRIBE, X) == 1
    })
    .await;
    resources.read(X).await.expect("X is read meanwhile");
    server.release(UNSUBSCRIBE);
    until("X's eviction unsubscribe was answered", || {
        server.answered(UNSUBSCRIBE) == 1
    })
    .await;
    // The eviction's task recorded the answer and ended X's flight in the same turn.
    resources.read(X).await.expect("X is read again");
    assert_eq!(
        server.exchanges_for(X),
        [
            "→ resources/subscribe",
            "← resources/subscribe",
            "→ resources/read",
            "← resources/read",
            "→ resources/unsubscribe",
            "→ resources/read",
            "← resources/read",
            "← resources/unsubscribe",
            "→ resources/subscribe",
            "← resources/subscribe",
            "→ resources/read",
            "← resources/read",
        ],
        "the new subscribe is sent once the eviction's unsubscribe is over"
    );
    assert_eq!(
        rx.take(X),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Unknown, Trigger::SubscriptionEvicted),
            (Unknown, Subscribed, Trigger::Subscribe),
        ]
    );
    assert_eq!(resources.state(X), Subscribed);
}

/// A server that answers no unsubscribe cannot make the client hold ever more of them: past
/// `MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT` an eviction sends none (counted as failed at once),
/// and reads still answer.
#[tokio::test(start_paused = true)]
async fn unanswered_eviction_unsubscribes_are_capped() {
    let server = FakeServer::new();
    let uris: Vec<String> = (0..MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT + 2)
        .map(|i| format!("test://r{i}"))
        .collect();
    for uri in &uris {
        server.set_text(uri, "r");
    }
    server.hold(UNSUBSCRIBE);
    let resources = manager(&server, config());
    for uri in &uris {
        resources.read(uri).await.expect("the read answers");
    }
    let evictions = uris.len() - 1;
    assert_eq!(resources.stats().subscriptions_evicted, evictions as u64);
    until("the first evictions' unsubscribes were sent", || {
        server.count(UNSUBSCRIBE) == MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT
    })
    .await;
    let failed = (evictions - MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT) as u64;
    assert_eq!(resources.stats().evicted_unsubscribes_failed, failed);

    // Once they are answered, evictions send their unsubscribes again.
    server.release(UNSUBSCRIBE);
    until("the held unsubscribes were answered", || {
        server.answered(UNSUBSCRIBE) == MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT
    })
    .await;
    assert_eq!(resources.stats().evicted_unsubscribes_failed, failed);
    let next = "test://next";
    server.set_text(next, "n");
    resources.read(next).await.unwrap();
    until("the next eviction's unsubscribe was sent", || {
        server.count(UNSUBSCRIBE) == MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT + 1
    })
    .await;
}

/// The unsubscribes of evictions are the manager's work: dropping its last handle ends the
/// ones still waiting for an answer (nothing keeps the server's service alive).
#[tokio::test(start_paused = true)]
async fn dropping_the_manager_ends_its_pending_eviction_unsubscribes() {
    let server = server();
    server.hold(UNSUBSCRIBE);
    let resources = manager(&server, config());
    resources.read(X).await.unwrap();
    resources.read(Y).await.unwrap();
    until("the eviction's unsubscribe was sent", || {
        server.count(UNSUBSCRIBE) == 1
    })
    .await;
    assert!(server.handles() > 1, "the manager holds the service");
    drop(resources);
    until("the eviction's task ended with the manager", || {
        server.handles() == 1
    })
    .await;
    assert_eq!(server.answered(UNSUBSCRIBE), 0);
}
