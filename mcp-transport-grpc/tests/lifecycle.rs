//! Closing and ownership: close is idempotent and bounded and leaves no call or backend
//! process; dropping the halves ends the call; the bridge's shutdown ends every call and
//! backend; the factory's connectors open sessions through a registry's view of a server.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcp_core::{
    ErrorKind, McpServiceExt, Message, Request, RequestOptions, Transport, TransportConnector,
    TransportErrorKind, TransportReceiver, TransportSender,
};
use mcp_session::{HandshakeConnector, SessionConnector, SessionOptions};
use mcp_transport_grpc::{GrpcConnector, GrpcServerConfig, GrpcTransport};
use serde_json::json;

fn ping(id: i64) -> Message {
    Message::Request(Request::new(id, "ping", None))
}

#[tokio::test]
async fn close_is_idempotent_bounded_and_leaves_no_call_or_backend() {
    let bridged = Bridged::start(&[]).await;
    let (sender, mut receiver) = GrpcTransport::connect(bridged.config())
        .await
        .unwrap()
        .split();
    sender.send(ping(1)).await.unwrap();
    let answer = tokio::time::timeout(DEADLINE, receiver.receive())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(answer, Message::Response(_)), "{answer:?}");
    assert_eq!(bridged.bridge.active_calls(), 1);
    for _ in 0..3 {
        tokio::time::timeout(DEADLINE, sender.close())
            .await
            .expect("close is bounded")
            .unwrap();
    }
    assert!(
        tokio::time::timeout(DEADLINE, receiver.receive())
            .await
            .unwrap()
            .is_none(),
        "a closed connection ends cleanly"
    );
    let err = sender.send(ping(2)).await.unwrap_err();
    assert_eq!(err.kind(), TransportErrorKind::Closed);
    assert!(err.message().contains("closed"), "{err}");
    bridged.wait_all_ended().await;
    assert_eq!(bridged.backend.pids().len(), 1);
}

#[tokio::test]
async fn a_session_closed_twice_leaves_nothing_running() {
    let bridged = Bridged::start(&[]).await;
    let session = bridged.session().await;
    session.ping(RequestOptions::new()).await.unwrap();
    session.close().await;
    session.close().await;
    bridged.wait_all_ended().await;
}

#[tokio::test]
async fn a_connection_closed_before_any_message_never_makes_a_call() {
    let bridged = Bridged::start(&[]).await;
    let (sender, mut receiver) = GrpcTransport::connect(bridged.config())
        .await
        .unwrap()
        .split();
    sender.close().await.unwrap();
    assert!(receiver.receive().await.is_none());
    assert!(bridged.backend.pids().is_empty(), "no call, no backend");
}

#[tokio::test]
async fn dropping_both_halves_ends_the_call_and_its_backend() {
    let bridged = Bridged::start(&[]).await;
    let (sender, mut receiver) = GrpcTransport::connect(bridged.config())
        .await
        .unwrap()
        .split();
    sender.send(ping(1)).await.unwrap();
    tokio::time::timeout(DEADLINE, receiver.receive())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    drop(sender);
    drop(receiver);
    bridged.wait_all_ended().await;
}

#[tokio::test]
async fn the_bridges_shutdown_ends_every_call_and_backend() {
    let events = EventLog::new("shutdown");
    let bridged = Bridged::start(&["--event-log", events.arg()]).await;
    let first = bridged.session().await;
    let second = bridged.session().await;
    assert_eq!(bridged.bridge.active_calls(), 2);
    let pending = tokio::spawn({
        let first = first.clone();
        async move {
            first
                .call_tool(
                    "slow",
                    Some(json!({"duration_ms": 60_000, "steps": 0})),
                    RequestOptions::new().with_timeout(Duration::from_secs(120)),
                )
                .await
        }
    });
    mcp_testkit::event_log::wait_for_events(
        &events.0,
        DEADLINE,
        "the slow call to run",
        |events| {
            events
                .iter()
                .any(|e| e["event"] == "call" && e["tool"] == "slow")
        },
    )
    .await;
    tokio::time::timeout(DEADLINE, bridged.bridge.shutdown())
        .await
        .expect("shutdown is bounded");
    let err = tokio::time::timeout(DEADLINE, pending)
        .await
        .expect("the pending call fails at once")
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    assert!(err.message().contains("shutting down"), "{err}");
    bridged.wait_all_ended().await;
    assert_eq!(bridged.backend.pids().len(), 2);
    // Idempotent, and nothing listens any more.
    bridged.bridge.shutdown().await;
    let err = match GrpcTransport::connect(bridged.config().connect_timeout(Duration::from_secs(5)))
        .await
    {
        Ok(_) => panic!("the bridge stopped listening"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), TransportErrorKind::Connect, "{err}");
    first.close().await;
    second.close().await;
}

#[tokio::test]
async fn the_connector_connects_a_session_per_connection() {
    let bridged = Bridged::start(&[]).await;
    let config = GrpcServerConfig::new(bridged.bridge.url()).header("x-tenant", "blue");
    let transport: Arc<dyn TransportConnector> =
        Arc::new(GrpcConnector::new(config).expect("a valid config"));
    assert_eq!(transport.transport_name(), "tcp");
    let connector = HandshakeConnector::new(transport, Arc::new(()), SessionOptions::default());
    for _ in 0..2 {
        let session = tokio::time::timeout(DEADLINE, connector.connect())
            .await
            .unwrap()
            .unwrap();
        let r = session
            .call_tool(
                "echo",
                Some(json!({"text": "connector"})),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(r.text(), "connector");
        session.close().await;
    }
    assert_eq!(bridged.backend.pids().len(), 2, "a backend per connection");
    bridged.wait_all_ended().await;
}
