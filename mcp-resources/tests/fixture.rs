//! End to end against the project's fixture server over stdio: `fixture://counter` is
//! subscribable and the `bump_resource` tool sends `notifications/resources/updated` for it;
//! the subscription survives a new session (a second fixture process).

use std::time::Duration;

use mcp_core::{McpServiceExt, RequestOptions};
use mcp_resources::{
    NewSession, NotificationRelay, ResourceConfig, ResourceHandler, ResourceManager, ResourceState,
    Trigger,
};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
use tokio::sync::mpsc;

const DEADLINE: Duration = Duration::from_secs(20);
const COUNTER: &str = "fixture://counter";

async fn connect(relay: &NotificationRelay) -> ClientSession {
    connect_with(relay, &[]).await
}

async fn connect_with(relay: &NotificationRelay, args: &[&str]) -> ClientSession {
    let config = StdioServerConfig::new(mcp_testkit::fixture_server_bin())
        .args(args)
        .shutdown_grace(Duration::from_millis(300));
    let transport = StdioTransport::spawn(config).expect("spawns the fixture");
    let handler = ResourceHandler::with_relay((), relay.clone());
    tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, handler, SessionOptions::default()),
    )
    .await
    .expect("connected in time")
    .expect("connects")
}

fn text(result: &mcp_core::types::ReadResourceResult) -> &str {
    result.contents[0].text.as_deref().unwrap_or("")
}

async fn bump(session: &ClientSession) {
    session
        .call_tool("bump_resource", None, RequestOptions::new())
        .await
        .expect("bump_resource answers");
}

async fn next_update(updates: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(DEADLINE, updates.recv())
        .await
        .expect("the update arrived in time")
        .expect("the observer is registered")
}

#[tokio::test]
async fn the_fixture_counter_stays_fresh_across_updates_and_a_new_session() {
    let relay = NotificationRelay::new();
    let first = connect(&relay).await;
    let resources = ResourceManager::for_session(&first, ResourceConfig::default());
    relay.attach(&resources);
    assert!(resources.can_subscribe());
    let mut rx = resources.transitions();
    let (sender, mut updates) = mpsc::unbounded_channel();
    let _guard = resources.on_update(COUNTER, move |update| {
        let _ = sender.send(update.uri.clone());
    });

    // ResourceListing and templates.
    let listing = resources.discover_resources().await.unwrap();
    assert!(listing.resource(COUNTER).is_some());
    assert!(listing.resource("fixture://static/hello").is_some());
    let item = listing.template_for("fixture://items/42").unwrap();
    assert_eq!(item.template.uri_template, "fixture://items/{id}");
    assert_eq!(item.variables["id"], "42");
    assert_eq!(
        text(&resources.read("fixture://items/42").await.unwrap()),
        "item 42"
    );

    // Read, update, read again.
    assert_eq!(text(&resources.read(COUNTER).await.unwrap()), "counter = 0");
    assert_eq!(text(&resources.read(COUNTER).await.unwrap()), "counter = 0");
    bump(&first).await;
    assert_eq!(next_update(&mut updates).await, COUNTER);
    assert_eq!(resources.state(COUNTER), ResourceState::Stale);
    assert_eq!(text(&resources.read(COUNTER).await.unwrap()), "counter = 1");
    let stats = resources.stats();
    assert_eq!((stats.hits, stats.fetches, stats.updates), (1, 3, 1));

    // A new session (a second fixture process): the resources are resubscribed there.
    first.close().await;
    let second = connect(&relay).await;
    let report = resources
        .reconnected(NewSession::session(&second))
        .await
        .unwrap();
    assert_eq!(report.resubscribed, [COUNTER, "fixture://items/42"]);
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(resources.state(COUNTER), ResourceState::Stale);
    assert_eq!(text(&resources.read(COUNTER).await.unwrap()), "counter = 0");
    bump(&second).await;
    assert_eq!(next_update(&mut updates).await, COUNTER);
    assert_eq!(text(&resources.read(COUNTER).await.unwrap()), "counter = 1");

    let sequence: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
        .filter(|t| t.uri == COUNTER)
        .map(|t| (t.from, t.to, t.trigger))
        .collect();
    use ResourceState::*;
    assert_eq!(
        sequence,
        [
            (Unknown, Subscribed, Trigger::Subscribe),
            (Subscribed, Cached, Trigger::Read),
            (Cached, Stale, Trigger::Updated),
            (Stale, Cached, Trigger::Read),
            (Cached, Stale, Trigger::Reconnected),
            (Stale, Cached, Trigger::Read),
            (Cached, Stale, Trigger::Updated),
            (Stale, Cached, Trigger::Read),
        ]
    );

    resources.close().await;
    assert_eq!(resources.state(COUNTER), ResourceState::Unsubscribed);
    assert!(resources.read(COUNTER).await.is_err(), "closed");
    second.close().await;
}

/// A harness reading many distinct resources holds at most `max_auto_subscriptions` automatic
/// subscriptions: past it the least recently read one is unsubscribed at the fixture (whose
/// counter then sends no update), while the one read again stays subscribed.
#[tokio::test]
async fn automatic_subscriptions_stay_within_their_limit_at_the_fixture() {
    const LIMIT: usize = 3;
    const ITEMS: usize = 10;
    let log = std::env::temp_dir().join(format!(
        "mcp-resources-auto-subscriptions-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&log);
    let relay = NotificationRelay::new();
    let session = connect_with(&relay, &["--event-log", log.to_str().unwrap()]).await;
    let config = ResourceConfig::default().with_max_auto_subscriptions(LIMIT);
    let resources = ResourceManager::for_session(&session, config);
    relay.attach(&resources);
    let (sender, mut updates) = mpsc::unbounded_channel();
    let _guard = resources.on_update(COUNTER, move |update| {
        let _ = sender.send(update.uri.clone());
    });

    // The counter is subscribed by its first read: a bump sends an update.
    resources.read(COUNTER).await.unwrap();
    bump(&session).await;
    assert_eq!(next_update(&mut updates).await, COUNTER);

    // Many distinct items: the counter, read least recently, is the first to go.
    for i in 0..ITEMS {
        resources
            .read(&format!("fixture://items/{i}"))
            .await
            .unwrap();
        let subscribed = resources.stats().subscribed;
        assert!(
            subscribed <= LIMIT as u64,
            "{subscribed} subscriptions after item {i}"
        );
    }
    let stats = resources.stats();
    assert_eq!(stats.subscribed, LIMIT as u64);
    assert_eq!(stats.subscriptions_evicted, (ITEMS + 1 - LIMIT) as u64);
    // The evictions' unsubscribes go out in the background: wait until the fixture has them
    // all (it handles each request as it reads it, so the bump below comes after them).
    let unsubscribes = |events: &[serde_json::Value]| {
        events
            .iter()
            .filter(|e| e["method"] == "resources/unsubscribe")
            .count()
    };
    mcp_testkit::event_log::wait_for_events(
        &log,
        DEADLINE,
        "every eviction's unsubscribe reached the fixture",
        |events| unsubscribes(events) == ITEMS + 1 - LIMIT,
    )
    .await;
    // The fixture no longer sends the counter's updates: the update would have come on the
    // pipe before the bump's answer, and the reader dispatches in order.
    let updates_before = resources.stats().updates;
    bump(&session).await;
    assert_eq!(
        resources.stats().updates,
        updates_before,
        "the counter is unsubscribed"
    );
    assert!(updates.try_recv().is_err());

    // The fixture saw one subscribe per URI and one unsubscribe per eviction.
    let events = mcp_testkit::event_log::read_events(&log);
    let count = |method: &str| events.iter().filter(|e| e["method"] == method).count();
    assert_eq!(count("resources/subscribe"), ITEMS + 1);
    assert_eq!(count("resources/unsubscribe"), ITEMS + 1 - LIMIT);

    resources.close().await;
    session.close().await;
    let _ = std::fs::remove_file(&log);
}
