//! Resources kept fresh through the facade (feature `resources`): the exact state sequence of a
//! resource across reads, a server's update, a restart of the server and shutdown, with the
//! server's own request counts.

#![cfg(feature = "resources")]

mod common;

use std::time::Duration;

use common::*;
use mcp_client::mcp_resources::{ResourceState, Transition, Trigger};
use mcp_core::ErrorKind;
use serde_json::json;
use tokio::sync::{broadcast, mpsc};

const COUNTER: &str = "fixture://counter";

fn requests(log: &std::path::Path, method: &str) -> usize {
    mcp_testkit::event_log::read_events(log)
        .iter()
        .filter(|e| e["event"] == "request" && e["method"] == method)
        .count()
}

async fn next(
    transitions: &mut broadcast::Receiver<Transition>,
) -> (ResourceState, ResourceState, Trigger) {
    let t = tokio::time::timeout(DEADLINE, transitions.recv())
        .await
        .expect("a transition")
        .expect("the manager lives");
    assert_eq!(t.uri, COUNTER);
    (t.from, t.to, t.trigger)
}

#[tokio::test]
async fn a_resource_is_cached_made_stale_by_updates_and_resubscribed_after_a_restart() {
    use ResourceState::*;
    let marker = unique_marker("resources");
    let dir = std::env::temp_dir().join(&marker);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let client = start(vec![fixture(
        "fx",
        &["--event-log", log.to_str().unwrap()],
        &marker,
    )])
    .await;
    let manager = client.resource_manager("fx").unwrap();
    let mut transitions = manager.transitions();

    // First read: subscribe, read, keep.
    let first = client.read_resource(None, COUNTER).await.unwrap();
    assert_eq!(first.contents[0].text.as_deref(), Some("counter = 0"));
    assert_eq!(
        next(&mut transitions).await,
        (Unknown, Subscribed, Trigger::Subscribe)
    );
    assert_eq!(
        next(&mut transitions).await,
        (Subscribed, Cached, Trigger::Read)
    );
    // Read again: from the cache.
    let again = client.read_resource(Some("fx"), COUNTER).await.unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again));
    assert_eq!(requests(&log, "resources/read"), 1);
    assert_eq!(requests(&log, "resources/subscribe"), 1);

    // The server changes it: the observer hears it, the contents go stale, the next read
    // fetches the new ones.
    let (updates_tx, mut updates) = mpsc::unbounded_channel();
    let (server, _guard) = client
        .on_resource_update(None, COUNTER, move |update| {
            let _ = updates_tx.send(update.uri.clone());
        })
        .await
        .unwrap();
    assert_eq!(server, "fx");
    client.call_tool("fx__bump_resource", None).await.unwrap();
    let uri = tokio::time::timeout(DEADLINE, updates.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(uri, COUNTER);
    assert_eq!(
        next(&mut transitions).await,
        (Cached, Stale, Trigger::Updated)
    );
    let fresh = client.read_resource(None, COUNTER).await.unwrap();
    assert_eq!(fresh.contents[0].text.as_deref(), Some("counter = 1"));
    assert_eq!(next(&mut transitions).await, (Stale, Cached, Trigger::Read));
    assert_eq!(requests(&log, "resources/read"), 2);

    // The server dies and is restarted: the new session is subscribed again before it is
    // ready, and what was cached is stale (updates may have been missed).
    let err = client
        .call_tool("fx__crash", Some(json!({"exit_code": 3})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network);
    assert_eq!(
        next(&mut transitions).await,
        (Cached, Stale, Trigger::Reconnected)
    );
    mcp_testkit::wait::until("fx is back", DEADLINE, || {
        client.servers()[0].status.is_ready()
    })
    .await;
    assert_eq!(
        requests(&log, "resources/subscribe"),
        2,
        "resubscribed on the new process"
    );
    // The new process's counter starts at 0 again, and its updates reach the same observer.
    client.call_tool("fx__bump_resource", None).await.unwrap();
    let uri = tokio::time::timeout(DEADLINE, updates.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(uri, COUNTER);
    let after = client.read_resource(None, COUNTER).await.unwrap();
    assert_eq!(after.contents[0].text.as_deref(), Some("counter = 1"));
    assert_eq!(next(&mut transitions).await, (Stale, Cached, Trigger::Read));

    // Shutdown ends the subscription.
    client.shutdown().await;
    assert_eq!(
        next(&mut transitions).await,
        (Cached, Unsubscribed, Trigger::Closed)
    );
    assert_eq!(manager.state(COUNTER), Unsubscribed);
    assert_eq!(requests(&log, "resources/unsubscribe"), 1);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), transitions.recv())
            .await
            .is_err(),
        "nothing more"
    );
    let stats = manager.stats();
    assert_eq!((stats.hits, stats.misses), (1, 3));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `POST /control/expire-sessions` on the HTTP fixture: every session is forgotten.
async fn expire_http_sessions(base_url: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = base_url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    stream
        .write_all(
            format!(
                "POST /control/expire-sessions HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut response = String::new();
    tokio::time::timeout(DEADLINE, stream.read_to_string(&mut response))
        .await
        .unwrap()
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 2"), "{response}");
}

#[tokio::test]
async fn resources_are_resubscribed_when_an_http_session_is_reinitialized() {
    use mcp_client::config::{ClientConfig, ServerConfig, TransportConfig};
    use mcp_client::{McpClient, StackPolicy};
    use mcp_core::{McpServiceExt, RequestOptions};
    use mcp_testkit::options::{parse_args, CliCommand};
    use ResourceState::*;
    let marker = unique_marker("resubscribed");
    let dir = std::env::temp_dir().join(&marker);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let Ok(CliCommand::Run(options)) = parse_args(
        ["--http-control", "--event-log", log.to_str().unwrap()]
            .iter()
            .map(|s| s.to_string()),
    ) else {
        panic!("fixture options")
    };
    let http = mcp_testkit::http::serve_http(options, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the HTTP fixture listens");
    let config = ClientConfig {
        servers: vec![ServerConfig::new(
            "fx",
            TransportConfig::Http {
                url: http.url(),
                headers: Default::default(),
            },
        )],
        source: None,
        region: None,
        store: None,
    };
    let client = tokio::time::timeout(
        DEADLINE,
        McpClient::builder(config)
            .stack_policy(StackPolicy {
                pools: false,
                ..StackPolicy::default()
            })
            .start(),
    )
    .await
    .unwrap();
    let manager = client.resource_manager("fx").unwrap();
    let mut transitions = manager.transitions();
    let (updates_tx, mut updates) = mpsc::unbounded_channel();
    let (_, _guard) = client
        .on_resource_update(None, COUNTER, move |update| {
            let _ = updates_tx.send(update.uri.clone());
        })
        .await
        .unwrap();
    assert_eq!(
        next(&mut transitions).await,
        (Unknown, Subscribed, Trigger::Subscribe)
    );
    client.read_resource(None, COUNTER).await.unwrap();
    assert_eq!(
        next(&mut transitions).await,
        (Subscribed, Cached, Trigger::Read)
    );
    assert_eq!(requests(&log, "resources/subscribe"), 1);

    // The server forgets every session; the next request re-initializes it in place (same
    // transport, a new initialize), and the resource is resubscribed.
    expire_http_sessions(&http.base_url()).await;
    let session = client.session("fx").unwrap();
    session.ping(RequestOptions::new()).await.unwrap();
    assert_eq!(
        next(&mut transitions).await,
        (Cached, Stale, Trigger::Reconnected)
    );
    mcp_testkit::wait::until("the resource is resubscribed", DEADLINE, || {
        requests(&log, "resources/subscribe") == 2
    })
    .await;
    session
        .call_tool("bump_resource", None, RequestOptions::new())
        .await
        .unwrap();
    let uri = tokio::time::timeout(DEADLINE, updates.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(uri, COUNTER);
    let fresh = client.read_resource(None, COUNTER).await.unwrap();
    assert_eq!(fresh.contents[0].text.as_deref(), Some("counter = 1"));
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
