//! End to end against the project's fixture server over stdio: `fixture://counter` is
//! subscribable and the `bump_resource` tool sends `notifications/resources/updated` for it;
//! the subscription survives a new session (a second fixture process).

use std::time::Duration;

use mcp_core::{ClientSession, McpServiceExt, RequestOptions, SessionOptions};
use mcp_resources::{
    NotificationRelay, ResourceConfig, ResourceHandler, ResourceManager, ResourceState,
    SessionRenewal, Trigger,
};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
use tokio::sync::mpsc;

const DEADLINE: Duration = Duration::from_secs(20);
const COUNTER: &str = "fixture://counter";

async fn connect(relay: &NotificationRelay) -> ClientSession {
    let config = StdioServerConfig::new(mcp_testkit::fixture_server_bin())
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

    // Discovery and templates.
    let discovery = resources.discover_resources().await.unwrap();
    assert!(discovery.resource(COUNTER).is_some());
    assert!(discovery.resource("fixture://static/hello").is_some());
    let item = discovery.template_for("fixture://items/42").unwrap();
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

    // A new session (a second fixture process): the subscriptions are renewed there.
    first.close().await;
    let second = connect(&relay).await;
    let report = resources
        .reconnected(SessionRenewal::session(&second))
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
