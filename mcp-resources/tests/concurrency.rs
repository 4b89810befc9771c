//! Many callers on many threads at once: reads, updates, evictions, unsubscribes and a
//! reconnect interleaved. Nothing deadlocks, every read answers, and the state table ends
//! consistent with what the server saw.

mod common;

use std::time::Duration;

use common::*;
use mcp_resources::{NewSession, ResourceConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interleaved_reads_updates_and_reconnects_stay_consistent() {
    let server = FakeServer::new();
    let uris: Vec<String> = (0..16).map(|i| format!("test://r{i}")).collect();
    for uri in &uris {
        server.set_text(uri, &"t".repeat(200));
    }
    // Room for about half of them: evictions happen all along.
    let resources = manager(&server, ResourceConfig::default().with_max_bytes(8 * 240));
    let work = async {
        let mut tasks = Vec::new();
        for worker in 0..8 {
            let resources = resources.clone();
            let uris = uris.clone();
            tasks.push(tokio::spawn(async move {
                for round in 0..200 {
                    let uri = &uris[(worker * 7 + round * 3) % uris.len()];
                    match round % 10 {
                        0 => resources.handle_notification(&updated(uri)),
                        5 if worker == 0 => {
                            resources.reconnected(NewSession::new()).await.unwrap();
                        }
                        7 if worker == 1 => resources.unsubscribe(uri).await.unwrap(),
                        _ => {
                            let result = resources.read(uri).await.unwrap();
                            assert_eq!(text(&result).len(), 200);
                        }
                    }
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(60), work)
        .await
        .expect("no deadlock");

    let stats = resources.stats();
    assert_eq!(stats.fetches as usize, server.count("resources/read"));
    assert!(stats.weighted_bytes <= 8 * 240, "{stats:?}");
    assert!(stats.hits > 0 && stats.misses > 0, "{stats:?}");
    let cached = resources
        .states()
        .into_iter()
        .filter(|(_, state)| *state == Cached)
        .count() as u64;
    assert_eq!(cached, stats.entries, "every CACHED URI has its content");
    resources.close().await;
    assert!(resources.states().iter().all(|(_, s)| *s == Unsubscribed));
}

/// Many readers on many threads churning through more URIs than `max_auto_subscriptions`:
/// evictions' unsubscribes run in the background while the same URIs are read (and
/// subscribed) again. No subscribe of a URI reaches the server while an unsubscribe of it is
/// unanswered, and once the background unsubscribes are over, what the server has subscribed
/// is what the manager counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eviction_unsubscribes_never_overlap_a_new_subscribe() {
    const LIMIT: usize = 3;
    let server = FakeServer::new();
    let uris: Vec<String> = (0..12).map(|i| format!("test://s{i}")).collect();
    for uri in &uris {
        server.set_text(uri, "s");
    }
    // A zero TTL: every read fetches, and subscribes when its URI was evicted.
    let resources = manager(
        &server,
        ResourceConfig::default()
            .with_ttl(Duration::ZERO)
            .with_max_auto_subscriptions(LIMIT),
    );
    let work = async {
        let mut tasks = Vec::new();
        for worker in 0..8 {
            let resources = resources.clone();
            let uris = uris.clone();
            tasks.push(tokio::spawn(async move {
                for round in 0..150 {
                    let uri = &uris[(worker * 5 + round * 7) % uris.len()];
                    resources.read(uri).await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(60), work)
        .await
        .expect("no deadlock");

    // The server's subscriptions, checking on the way that no subscribe of a URI arrived
    // while an unsubscribe of it was unanswered.
    let subscribed_at_the_server = || {
        let mut count = 0;
        for uri in &uris {
            let exchanges = server.exchanges_for(uri);
            let (mut subscribed, mut unsubscribing) = (false, false);
            for what in &exchanges {
                match what.as_str() {
                    "→ resources/unsubscribe" => unsubscribing = true,
                    "← resources/unsubscribe" => (unsubscribing, subscribed) = (false, false),
                    "→ resources/subscribe" => assert!(
                        !unsubscribing,
                        "{uri}: subscribe during an unsubscribe: {exchanges:?}"
                    ),
                    "← resources/subscribe" => subscribed = true,
                    _ => {}
                }
            }
            count += u64::from(subscribed);
        }
        count
    };
    let settled = async {
        while subscribed_at_the_server() != resources.stats().subscribed {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(DEADLINE, settled)
        .await
        .expect("the evictions' unsubscribes all reached the server");
    let stats = resources.stats();
    assert!(stats.subscriptions_evicted > 0, "{stats:?}");
    assert_eq!(stats.evicted_unsubscribes_failed, 0, "{stats:?}");
    assert!(stats.subscribed <= LIMIT as u64, "{stats:?}");
    resources.close().await;
}
