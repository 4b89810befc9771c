//! The per-URI state machine (R-RES): the exact sequence of transitions for each trigger,
//! against a scripted server that counts requests; TTLs on tokio's paused clock.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcp_core::{Delivery, ErrorKind};
use mcp_resources::{NewSession, ResourceConfig, ResourceManager, Trigger};
use tokio::time::Instant;

const X: &str = "test://x";
const Y: &str = "test://y";
const Z: &str = "test://z";

fn config() -> ResourceConfig {
    ResourceConfig::default().with_ttl(Duration::from_secs(10))
}

fn server() -> FakeServer {
    FakeServer::new()
        .with_text(X, "x1")
        .with_text(Y, "y1")
        .with_text(Z, "z1")
}

#[tokio::test(start_paused = true)]
async fn first_read_subscribes_then_caches_and_the_next_read_is_a_hit() {
    let server = server();
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);

    let first = resources.read(X).await.unwrap();
    assert_eq!(text(&first), "x1");
    assert_eq!(
        rx.take(X),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Cached, Trigger::Read)
        ]
    );
    assert_eq!(
        server.calls(),
        [
            ("resources/subscribe".to_owned(), Some(X.to_owned())),
            ("resources/read".to_owned(), Some(X.to_owned()))
        ],
        "subscribed before reading, so no update after the read is missed"
    );

    let second = resources.read(X).await.unwrap();
    assert!(Arc::ptr_eq(&first, &second), "served from the cache");
    assert_eq!(rx.take(X), []);
    assert_eq!(server.count("resources/read"), 1);
    let stats = resources.stats();
    assert_eq!((stats.hits, stats.misses, stats.fetches), (1, 1, 1));
    assert_eq!((stats.entries, stats.tracked, stats.subscribed), (1, 1, 1));
    assert_eq!(resources.state(X), Cached);
}

#[tokio::test(start_paused = true)]
async fn explicit_subscribe_moves_unknown_to_subscribed_once() {
    let server = server();
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);
    resources.subscribe(X).await.unwrap();
    resources.subscribe(X).await.unwrap();
    assert_eq!(rx.take(X), [(Unknown, Subscribed, Trigger::Subscribe)]);
    assert_eq!(server.count("resources/subscribe"), 1, "already subscribed");

    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Subscribed, Cached, Trigger::Read)]);
    assert_eq!(server.count("resources/subscribe"), 1);
}

#[tokio::test(start_paused = true)]
async fn without_the_capability_reads_are_cached_by_the_ttl_alone() {
    let server = server();
    let resources = ResourceManager::new(server.service(), &capabilities(false), config());
    let mut rx = Recorder::new(&resources);
    assert!(!resources.can_subscribe());

    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Unknown, Cached, Trigger::Read)]);
    assert_eq!(server.count("resources/subscribe"), 0);
    resources.read(X).await.unwrap();
    assert_eq!(server.count("resources/read"), 1, "cached within the TTL");

    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(resources.state(X), Stale);
    assert_eq!(rx.take(X), [(Cached, Stale, Trigger::TtlExpired)]);
    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Stale, Cached, Trigger::Read)]);
    assert_eq!(server.count("resources/read"), 2);

    let error = resources.subscribe(X).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Resource);
    assert_eq!(error.subject(), Some(X));
    assert_eq!(error.delivery(), Some(Delivery::NotSent));
    assert!(error.message().contains("resources.subscribe"), "{error:?}");
    assert_eq!(server.count("resources/subscribe"), 0);
    assert_eq!(resources.stats().subscribed, 0);
}

#[tokio::test(start_paused = true)]
async fn with_auto_subscribe_off_a_read_does_not_subscribe() {
    let server = server();
    let resources = manager(&server, config().with_auto_subscribe(false));
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Unknown, Cached, Trigger::Read)]);
    assert_eq!(server.count("resources/subscribe"), 0);

    // Subscribing a URI that holds content keeps its state.
    resources.subscribe(X).await.unwrap();
    assert_eq!(rx.take(X), []);
    assert_eq!(resources.state(X), Cached);
    assert_eq!(server.count("resources/subscribe"), 1);
    assert_eq!(resources.stats().subscribed, 1);
}

#[tokio::test(start_paused = true)]
async fn an_update_makes_cached_content_stale_and_the_next_read_fetches_it() {
    let server = server();
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    resources.read(Y).await.unwrap();
    rx.take_all();

    server.set_text(X, "x2");
    resources.handle_notification(&updated(X));
    assert_eq!(rx.take(X), [(Cached, Stale, Trigger::Updated)]);
    assert_eq!(resources.state(Y), Cached, "other URIs are untouched");

    let fresh = resources.read(X).await.unwrap();
    assert_eq!(text(&fresh), "x2");
    assert_eq!(rx.take(X), [(Stale, Cached, Trigger::Read)]);
    assert_eq!(server.count_for("resources/read", X), 2);
    assert_eq!(
        server.count_for("resources/subscribe", X),
        1,
        "still subscribed"
    );
    assert_eq!(resources.stats().updates, 1);
}

#[tokio::test(start_paused = true)]
async fn an_update_of_a_uri_without_content_is_no_transition() {
    let server = server();
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);
    resources.subscribe(X).await.unwrap();
    rx.take_all();
    resources.handle_notification(&updated(X));
    resources.handle_notification(&updated("test://never-seen"));
    assert_eq!(rx.take_all(), []);
    assert_eq!(resources.state(X), Subscribed);
    assert_eq!(resources.state("test://never-seen"), Unknown);
}

#[tokio::test(start_paused = true)]
async fn the_ttl_runs_out_on_the_paused_clock() {
    let server = server();
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    rx.take_all();

    tokio::time::advance(Duration::from_secs(10) - Duration::from_millis(1)).await;
    resources.read(X).await.unwrap();
    assert_eq!(
        server.count("resources/read"),
        1,
        "still fresh 1 ms before the TTL"
    );
    assert_eq!(resources.state(X), Cached);

    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(resources.state(X), Stale, "noticed when observed");
    assert_eq!(rx.take(X), [(Cached, Stale, Trigger::TtlExpired)]);
    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Stale, Cached, Trigger::Read)]);

    // Noticed by a read: both transitions at once.
    tokio::time::advance(Duration::from_secs(10)).await;
    resources.read(X).await.unwrap();
    assert_eq!(
        rx.take(X),
        [
            (Cached, Stale, Trigger::TtlExpired),
            (Stale, Cached, Trigger::Read)
        ]
    );
    assert_eq!(server.count("resources/read"), 3);
    assert_eq!(server.count("resources/subscribe"), 1);
}

#[tokio::test(start_paused = true)]
async fn the_results_ttl_hint_shortens_the_ttl_and_zero_means_not_cached() {
    let server = server();
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);
    server.set_ttl_ms(Some(1_000));
    resources.read(X).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(resources.state(X), Stale);
    assert_eq!(
        rx.take(X),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Cached, Trigger::Read),
            (Cached, Stale, Trigger::TtlExpired)
        ]
    );

    server.set_ttl_ms(Some(0));
    resources.read(Y).await.unwrap();
    resources.read(Y).await.unwrap();
    assert_eq!(
        rx.take(Y),
        [(Unknown, Subscribed, Trigger::Subscribe)],
        "a result that is never fresh is returned, not kept"
    );
    assert_eq!(server.count_for("resources/read", Y), 2);
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_makes_content_stale_and_resubscribes_on_the_new_session() {
    let old = server();
    let resources = manager(&old, config());
    resources.read(X).await.unwrap();
    resources.subscribe(Y).await.unwrap();
    resources.read(Z).await.unwrap();
    resources.unsubscribe(Z).await.unwrap();
    let mut rx = Recorder::new(&resources);

    let new = server();
    let report = resources
        .reconnected(NewSession::new().subscription_service(new.service()))
        .await
        .unwrap();

    assert_eq!(rx.take(X), [(Cached, Stale, Trigger::Reconnected)]);
    assert_eq!(rx.take(Y), [], "SUBSCRIBED stays SUBSCRIBED");
    assert_eq!(rx.take(Z), [], "UNSUBSCRIBED stays UNSUBSCRIBED");
    assert_eq!(report.resubscribed, [X, Y]);
    assert!(report.failed.is_empty());
    assert_eq!(new.count_for("resources/subscribe", X), 1);
    assert_eq!(new.count_for("resources/subscribe", Y), 1);
    assert_eq!(new.count_for("resources/subscribe", Z), 0);
    assert_eq!(
        old.count("resources/subscribe"),
        3,
        "nothing more on the old one"
    );

    // Reads still go to the read service; no second subscribe.
    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Stale, Cached, Trigger::Read)]);
    assert_eq!(old.count_for("resources/read", X), 2);
    assert_eq!(new.count("resources/read"), 0);
    assert_eq!(new.count_for("resources/subscribe", X), 1);
    assert_eq!(resources.stats().subscribed, 2);
}

#[tokio::test(start_paused = true)]
async fn a_resubscribe_that_fails_loses_the_subscription() {
    let old = server();
    let resources = manager(&old, config());
    resources.read(X).await.unwrap();
    resources.subscribe(Y).await.unwrap();
    let mut rx = Recorder::new(&resources);

    let new = server();
    new.refuse_subscribe(X);
    new.refuse_subscribe(Y);
    let new_session = NewSession::new()
        .read_service(new.service())
        .subscription_service(new.service());
    let report = resources.reconnected(new_session).await.unwrap();

    assert_eq!(rx.take(X), [(Cached, Stale, Trigger::Reconnected)]);
    assert_eq!(
        rx.take(Y),
        [(Subscribed, Unknown, Trigger::ResubscribeFailed)]
    );
    let failed: Vec<_> = report
        .failed
        .iter()
        .map(|(uri, e)| (uri.as_str(), e.subject()))
        .collect();
    assert_eq!(failed, [(X, Some(X)), (Y, Some(Y))]);
    assert_eq!(resources.stats().subscribed, 0);

    // The STALE one tries again on its next read (the server refuses again; it still reads).
    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Stale, Cached, Trigger::Read)]);
    assert_eq!(new.count_for("resources/subscribe", X), 2);
    assert_eq!(new.count_for("resources/read", X), 1);
}

#[tokio::test(start_paused = true)]
async fn a_new_server_without_subscriptions_drops_them() {
    let server = server();
    let resources = manager(&server, config());
    resources.read(X).await.unwrap();
    resources.subscribe(Y).await.unwrap();
    let mut rx = Recorder::new(&resources);
    let report = resources
        .reconnected(NewSession::new().capabilities(&capabilities(false)))
        .await
        .unwrap();
    assert!(report.resubscribed.is_empty() && report.failed.is_empty());
    assert_eq!(rx.take(X), [(Cached, Stale, Trigger::Reconnected)]);
    assert_eq!(
        rx.take(Y),
        [(Subscribed, Unknown, Trigger::ResubscribeFailed)]
    );
    assert_eq!(
        server.count("resources/subscribe"),
        2,
        "none on the new session"
    );
    assert!(!resources.can_subscribe());
}

#[tokio::test(start_paused = true)]
async fn missed_notifications_make_every_cached_uri_stale() {
    let server = server();
    let resources = manager(&server, config());
    resources.read(X).await.unwrap();
    resources.subscribe(Y).await.unwrap();
    let mut rx = Recorder::new(&resources);
    resources.notifications_missed();
    assert_eq!(rx.take(X), [(Cached, Stale, Trigger::NotificationsMissed)]);
    assert_eq!(rx.take(Y), []);
}

#[tokio::test(start_paused = true)]
async fn unsubscribe_ends_the_subscription_and_later_reads_go_to_the_server() {
    let server = server();
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    rx.take_all();

    resources.unsubscribe(X).await.unwrap();
    assert_eq!(rx.take(X), [(Cached, Unsubscribed, Trigger::Unsubscribe)]);
    assert_eq!(server.count_for("resources/unsubscribe", X), 1);
    assert_eq!(resources.stats().entries, 0, "content dropped");

    resources.read(X).await.unwrap();
    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [], "read through, never cached");
    assert_eq!(server.count_for("resources/read", X), 3);
    assert_eq!(
        server.count_for("resources/subscribe", X),
        1,
        "no automatic subscribe"
    );

    resources.subscribe(X).await.unwrap();
    resources.read(X).await.unwrap();
    assert_eq!(
        rx.take(X),
        [
            (Unsubscribed, Subscribed, Trigger::Subscribe),
            (Subscribed, Cached, Trigger::Read)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn unsubscribing_a_uri_never_subscribed_tells_the_server_nothing() {
    let server = server();
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);
    resources.unsubscribe(X).await.unwrap();
    assert_eq!(rx.take(X), [(Unknown, Unsubscribed, Trigger::Unsubscribe)]);
    assert_eq!(server.count("resources/unsubscribe"), 0);
}

#[tokio::test(start_paused = true)]
async fn close_unsubscribes_everything_and_later_calls_fail() {
    let server = server();
    let resources = manager(&server, config());
    resources.read(X).await.unwrap();
    resources.subscribe(Y).await.unwrap();
    resources.unsubscribe(Z).await.unwrap();
    let observed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let _guard = resources.on_update(X, {
        let observed = observed.clone();
        move |_| {
            observed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let mut rx = Recorder::new(&resources);

    resources.close().await;
    assert_eq!(rx.take(X), [(Cached, Unsubscribed, Trigger::Closed)]);
    assert_eq!(rx.take(Y), [(Subscribed, Unsubscribed, Trigger::Closed)]);
    assert_eq!(rx.take(Z), []);
    assert_eq!(server.count_for("resources/unsubscribe", X), 1);
    assert_eq!(server.count_for("resources/unsubscribe", Y), 1);
    assert!(resources.is_closed());
    let stats = resources.stats();
    assert_eq!(
        (stats.entries, stats.weighted_bytes, stats.subscribed),
        (0, 0, 0)
    );
    assert_eq!(resources.observer_count(X), 0, "observers are dropped");

    let error = resources.read(X).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ServerUnavailable);
    assert_eq!(error.subject(), Some(X));
    assert!(error.message().contains("closed"), "{error:?}");
    assert_eq!(resources.subscribe(Y).await.unwrap_err().subject(), Some(Y));
    assert_eq!(
        resources.unsubscribe(Y).await.unwrap_err().subject(),
        Some(Y)
    );
    assert!(resources.discover_resources().await.is_err());
    assert!(resources.reconnected(NewSession::new()).await.is_err());

    resources.handle_notification(&updated(X));
    assert_eq!(observed.load(std::sync::atomic::Ordering::SeqCst), 0);
    resources.close().await;
    assert_eq!(rx.take_all(), [], "closing twice changes nothing");
    assert_eq!(server.count("resources/read"), 1);
}

#[tokio::test(start_paused = true)]
async fn close_gives_up_on_a_silent_server_within_its_timeout() {
    let server = server();
    let resources = manager(&server, config().with_close_timeout(Duration::from_secs(2)));
    resources.subscribe(X).await.unwrap();
    resources.subscribe(Y).await.unwrap();
    server.hold("resources/unsubscribe");
    let started = Instant::now();
    resources.close().await;
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    assert_eq!(resources.state(X), Unsubscribed);
    assert_eq!(
        server.count("resources/unsubscribe"),
        1,
        "one at a time, then out of time"
    );
}

#[tokio::test(start_paused = true)]
async fn capacity_eviction_drops_content_but_keeps_the_subscription() {
    // Each result weighs 60 bytes: URI 8 (key) + 8 (content) + MIME 10 + text 34.
    let text_34 = "t".repeat(34);
    let server = FakeServer::new()
        .with_text(X, &text_34)
        .with_text(Y, &text_34)
        .with_text(Z, &text_34);
    let resources = manager(&server, config().with_max_bytes(150));
    let mut rx = Recorder::new(&resources);

    resources.read(X).await.unwrap();
    resources.read(Y).await.unwrap();
    let stats = resources.stats();
    assert_eq!((stats.entries, stats.weighted_bytes), (2, 120));

    resources.read(Z).await.unwrap();
    assert_eq!(
        rx.take(X),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Cached, Trigger::Read),
            (Cached, Subscribed, Trigger::Evicted)
        ],
        "the least recently used goes first"
    );
    let stats = resources.stats();
    assert_eq!((stats.entries, stats.weighted_bytes), (2, 120));
    assert_eq!(stats.subscribed, 3, "eviction keeps the subscription");

    // Reading it again fetches it (no new subscribe) and evicts the next least recently used.
    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Subscribed, Cached, Trigger::Read)]);
    assert_eq!(
        rx.take(Y),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Cached, Trigger::Read),
            (Cached, Subscribed, Trigger::Evicted)
        ]
    );
    assert_eq!(server.count_for("resources/read", X), 2);
    assert_eq!(server.count_for("resources/subscribe", X), 1);
}

#[tokio::test(start_paused = true)]
async fn without_a_subscription_an_evicted_uri_is_forgotten() {
    let text_34 = "t".repeat(34);
    let server = FakeServer::new()
        .with_text(X, &text_34)
        .with_text(Y, &text_34);
    let resources = ResourceManager::new(
        server.service(),
        &capabilities(false),
        config().with_max_bytes(100),
    );
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    resources.read(Y).await.unwrap();
    assert_eq!(
        rx.take(X),
        [
            (Unknown, Cached, Trigger::Read),
            (Cached, Unknown, Trigger::Evicted)
        ]
    );
    assert_eq!(resources.states(), [(Y.to_owned(), Cached)]);
}

#[tokio::test(start_paused = true)]
async fn a_result_heavier_than_the_cache_is_returned_but_not_kept() {
    let server = FakeServer::new().with_text(X, &"t".repeat(1_000));
    let resources = manager(&server, config().with_max_bytes(500));
    let mut rx = Recorder::new(&resources);
    let result = resources.read(X).await.unwrap();
    assert_eq!(text(&result).len(), 1_000);
    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Unknown, Subscribed, Trigger::Subscribe)]);
    assert_eq!(server.count("resources/read"), 2);
    assert_eq!(resources.stats().entries, 0);
}

#[tokio::test(start_paused = true)]
async fn concurrent_reads_of_one_uri_share_one_fetch() {
    let server = server();
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);
    server.hold("resources/read");
    let readers: Vec<_> = (0..10)
        .map(|_| {
            let resources = resources.clone();
            tokio::spawn(async move { resources.read(X).await })
        })
        .collect();
    until("every reader is waiting", || resources.stats().misses == 10).await;
    server.wait_for_requests(2).await; // subscribe + read
    server.release("resources/read");

    let mut results = Vec::new();
    for reader in readers {
        results.push(reader.await.unwrap().unwrap());
    }
    assert!(results.iter().all(|r| Arc::ptr_eq(r, &results[0])));
    assert_eq!(server.count("resources/read"), 1);
    assert_eq!(server.count("resources/subscribe"), 1);
    let stats = resources.stats();
    assert_eq!((stats.fetches, stats.shared_fetches), (1, 9));
    assert_eq!(
        rx.take(X),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Cached, Trigger::Read)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_read_that_raced_an_update_is_returned_but_not_kept() {
    let server = server();
    let resources = manager(&server, config());
    resources.subscribe(X).await.unwrap();
    let mut rx = Recorder::new(&resources);
    server.hold("resources/read");
    let reader = tokio::spawn({
        let resources = resources.clone();
        async move { resources.read(X).await }
    });
    server.wait_for_requests(2).await; // subscribe + read
    resources.handle_notification(&updated(X));
    server.release("resources/read");
    assert_eq!(text(&reader.await.unwrap().unwrap()), "x1");
    assert_eq!(resources.state(X), Subscribed, "not kept as fresh");
    assert_eq!(rx.take(X), []);

    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Subscribed, Cached, Trigger::Read)]);
    assert_eq!(server.count("resources/read"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_fails_the_read_at_the_request_timeout() {
    let server = server();
    let resources = manager(
        &server,
        config().with_request_timeout(Duration::from_secs(5)),
    );
    server.hold("resources/read");
    let started = Instant::now();
    let error = resources.read(X).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(error.subject(), Some(X));
    assert_eq!(
        resources.state(X),
        Subscribed,
        "the subscription went through"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_subscription_still_reads_and_is_not_tried_again() {
    let server = server();
    server.refuse_subscribe(X);
    let resources = manager(&server, config());
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    assert_eq!(rx.take(X), [(Unknown, Cached, Trigger::Read)]);
    resources.handle_notification(&updated(X));
    resources.read(X).await.unwrap();
    assert_eq!(
        rx.take(X),
        [
            (Cached, Stale, Trigger::Updated),
            (Stale, Cached, Trigger::Read)
        ]
    );
    assert_eq!(server.count("resources/subscribe"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_missing_resource_fails_naming_it_and_is_not_tracked() {
    let server = server();
    let resources = ResourceManager::new(server.service(), &capabilities(false), config());
    let error = resources.read("test://missing").await.unwrap_err();
    assert_eq!(error.subject(), Some("test://missing"));
    assert_eq!(error.code(), Some(-32002));
    assert_eq!(resources.state("test://missing"), Unknown);
    assert!(resources.states().is_empty());
}

/// Past `max_auto_subscriptions`, the automatic subscription read least recently is given up:
/// `resources/unsubscribe` is sent for it in the background (the read that pushed it out goes
/// on to its own `resources/read`), its content stays (fresh by the TTL only), and a later
/// fetch of it subscribes again, evicting the next least recently read.
#[tokio::test(start_paused = true)]
async fn automatic_subscriptions_past_the_limit_evict_the_least_recently_read() {
    let server = server();
    let resources = manager(&server, config().with_max_auto_subscriptions(2));
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    resources.read(Y).await.unwrap();
    resources.read(X).await.unwrap(); // a hit: X is now the most recently read
    let before = server.calls().len();
    resources.read(Z).await.unwrap();
    until("Y's eviction was unsubscribed", || {
        server.count_for("resources/unsubscribe", Y) == 1
    })
    .await;
    let calls = server.calls();
    let mut after = calls[before..].to_vec();
    assert_eq!(after.len(), 3);
    let unsubscribe = after
        .iter()
        .position(|call| call.0 == "resources/unsubscribe")
        .unwrap();
    assert_eq!(
        after.remove(unsubscribe),
        ("resources/unsubscribe".to_owned(), Some(Y.to_owned()))
    );
    assert_eq!(
        after,
        [
            ("resources/subscribe".to_owned(), Some(Z.to_owned())),
            ("resources/read".to_owned(), Some(Z.to_owned())),
        ],
        "Z is subscribed before it is read"
    );
    let stats = resources.stats();
    assert_eq!((stats.subscribed, stats.subscriptions_evicted), (2, 1));
    assert_eq!(stats.evicted_unsubscribes_failed, 0);
    assert_eq!(server.count("resources/unsubscribe"), 1);
    // Y keeps its content, now without a subscription: no transition, a hit until the TTL.
    rx.take(Y);
    assert_eq!(resources.state(Y), Cached);
    resources.read(Y).await.unwrap();
    assert_eq!(server.count_for("resources/read", Y), 1);

    // Once stale, Y is fetched and subscribed again; X is now the least recently read.
    tokio::time::advance(Duration::from_secs(11)).await;
    resources.read(Y).await.unwrap();
    assert_eq!(server.count_for("resources/subscribe", Y), 2);
    until("X's eviction was unsubscribed", || {
        server.count_for("resources/unsubscribe", X) == 1
    })
    .await;
    assert_eq!(resources.stats().subscribed, 2);
}

/// An evicted automatic subscription of a URI holding no content forgets the URI:
/// SUBSCRIBED → UNKNOWN (subscription evicted).
#[tokio::test(start_paused = true)]
async fn an_evicted_subscription_without_content_forgets_the_uri() {
    let server = server();
    // A zero TTL: results are returned but never kept, so X stays SUBSCRIBED.
    let resources = manager(
        &server,
        config()
            .with_ttl(Duration::ZERO)
            .with_max_auto_subscriptions(1),
    );
    let mut rx = Recorder::new(&resources);
    resources.read(X).await.unwrap();
    assert_eq!(resources.state(X), Subscribed);
    resources.read(Y).await.unwrap();
    assert_eq!(
        rx.take(X),
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Unknown, Trigger::SubscriptionEvicted)
        ]
    );
    assert_eq!(resources.states(), [(Y.to_owned(), Subscribed)]);
    until("X's eviction was unsubscribed", || {
        server.count_for("resources/unsubscribe", X) == 1
    })
    .await;
}

/// Explicit subscriptions (and a read's subscription made explicit by `subscribe`) are the
/// harness's: never evicted, not counted against the limit.
#[tokio::test(start_paused = true)]
async fn explicit_subscriptions_are_never_evicted() {
    let server = server();
    let resources = manager(&server, config().with_max_auto_subscriptions(1));
    resources.subscribe(X).await.unwrap();
    resources.read(Y).await.unwrap();
    resources.subscribe(Y).await.unwrap(); // already subscribed by the read: now explicit
    resources.read(Z).await.unwrap();
    resources.read(X).await.unwrap();
    assert_eq!(server.count("resources/unsubscribe"), 0);
    assert_eq!(server.count_for("resources/subscribe", Y), 1);
    let stats = resources.stats();
    assert_eq!((stats.subscribed, stats.subscriptions_evicted), (3, 0));
}
