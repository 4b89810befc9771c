//! Connections and their end: a crash fails the calls in flight at once, close is idempotent
//! and bounded, and nothing keeps running once a connection is gone.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{alive_tasks, connect, test_server, Path, DEADLINE};
use mcp_core::jsonrpc::{Message, Notification, Request};
use mcp_core::{
    ErrorKind, McpServiceExt, RequestOptions, Transport, TransportErrorKind, TransportReceiver,
    TransportSender,
};
use mcp_session::{ClientSession, HandshakeConnector};
use serde_json::json;

#[tokio::test]
async fn a_crash_fails_the_calls_in_flight_at_once_and_the_server_comes_back() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let session = connect(&server, Arc::default(), None).await;
        let other = connect(&server, Arc::default(), None).await;
        let pending = {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool(
                        "stubborn",
                        Some(json!({})),
                        RequestOptions::new().with_timeout(Duration::from_secs(60)),
                    )
                    .await
            })
        };
        mcp_testkit::wait::until("the slow call running", DEADLINE, || {
            server.running_calls() == 1
        })
        .await;
        let crashed = session
            .call_tool("crash", Some(json!({})), RequestOptions::new())
            .await
            .expect_err("the server died answering");
        assert_eq!(crashed.kind(), ErrorKind::Network, "{path:?}: {crashed}");
        let outcome = tokio::time::timeout(Duration::from_secs(2), pending)
            .await
            .expect("the call in flight fails at once, not at its deadline")
            .expect("the call task");
        let error = outcome.expect_err("the peer is gone");
        assert_eq!(error.kind(), ErrorKind::Network, "{path:?}: {error}");
        assert!(error.message().contains("crashed"), "{path:?}: {error}");
        // Every connection ended; both sessions know why.
        for s in [&session, &other] {
            let reason = tokio::time::timeout(DEADLINE, s.closed()).await.unwrap();
            assert!(reason.message().contains("crashed"), "{path:?}: {reason}");
        }
        assert_eq!(server.open_connections(), 0);
        mcp_testkit::wait::until("nothing running", DEADLINE, || server.running_calls() == 0).await;
        // Like a restarted process: a new connection is served.
        let again = connect(&server, Arc::default(), None).await;
        let answer = again
            .call_tool("echo", Some(json!({"text": "back"})), RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(answer.text(), "back");
        again.close().await;
    }
}

#[tokio::test]
async fn the_crash_is_reported_by_the_receiver_as_the_peer_gone() {
    let server = test_server(Path::InPlace, Arc::default());
    let (_sender, mut receiver) = server.connect().unwrap().split();
    server.crash();
    let report = tokio::time::timeout(DEADLINE, receiver.receive())
        .await
        .expect("at once");
    let error = report
        .expect("an error, not a clean end")
        .expect_err("the crash");
    assert!(error.is_fatal());
    assert_eq!(error.kind(), TransportErrorKind::PeerGone);
    assert!(receiver.receive().await.is_none());
}

#[tokio::test]
async fn close_is_idempotent_bounded_and_leaves_nothing_running() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let baseline = alive_tasks();
        let session = connect(&server, Arc::default(), None).await;
        assert_eq!(server.open_connections(), 1);
        let answer = session
            .call_tool("echo", Some(json!({"text": "once"})), RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(answer.text(), "once");
        tokio::time::timeout(DEADLINE, session.close())
            .await
            .expect("bounded");
        tokio::time::timeout(DEADLINE, session.close())
            .await
            .expect("bounded twice");
        assert!(session.is_closed());
        let error = tokio::time::timeout(
            DEADLINE,
            session.call_tool("echo", Some(json!({"text": "x"})), RequestOptions::new()),
        )
        .await
        .expect("fails at once")
        .expect_err("closed");
        assert_ne!(error.kind(), ErrorKind::Timeout, "{error}");
        assert_eq!(server.open_connections(), 0, "{path:?}");
        drop(session);
        mcp_testkit::wait::until(
            "the session's and the connection's tasks ending",
            DEADLINE,
            || alive_tasks() <= baseline,
        )
        .await;
    }
}

#[tokio::test]
async fn the_bare_transport_closes_twice_and_then_refuses_to_send() {
    let server = test_server(Path::InPlace, Arc::default());
    let (sender, mut receiver) = server.connect().unwrap().split();
    let capabilities = sender.capabilities();
    assert_eq!(capabilities.name, "inproc");
    assert!(capabilities.prefers_values);
    tokio::time::timeout(DEADLINE, sender.close())
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(DEADLINE, sender.close())
        .await
        .unwrap()
        .unwrap();
    let ended = tokio::time::timeout(DEADLINE, receiver.receive())
        .await
        .unwrap();
    assert!(ended.is_none(), "a clean end: {ended:?}");
    let refused = sender
        .send(Notification::new("notifications/initialized", None).into())
        .await
        .expect_err("closed");
    assert_eq!(refused.kind(), TransportErrorKind::Closed);
    assert!(!refused.may_have_been_delivered());
    assert_eq!(server.open_connections(), 0);
}

#[tokio::test]
async fn requests_sent_on_the_bare_transport_are_answered_through_the_receiver() {
    // The ordinary transport contract, without a session: whole messages by move.
    let server = test_server(Path::InPlace, Arc::default());
    let (sender, mut receiver) = server.connect().unwrap().split();
    let request = Request::new(
        1,
        "tools/call",
        Some(mcp_core::Payload::Value(
            json!({"name": "echo", "arguments": {"text": "raw"}}),
        )),
    );
    sender.send(request.into()).await.unwrap();
    let answer = tokio::time::timeout(DEADLINE, receiver.receive())
        .await
        .unwrap()
        .expect("a message")
        .expect("not an error");
    match answer {
        Message::Response(response) => {
            assert_eq!(response.id, Some(1.into()));
            let result = response.outcome.unwrap().into_value().unwrap();
            assert_eq!(result["content"][0]["text"], "raw");
        }
        other => panic!("expected a response, got {other:?}"),
    }
    sender.close().await.unwrap();
}

#[tokio::test]
async fn dropping_the_session_ends_the_connection_and_its_calls() {
    for path in Path::BOTH {
        let server = test_server(path, Arc::default());
        let baseline = alive_tasks();
        let session = connect(&server, Arc::default(), None).await;
        let call = {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool("stubborn", Some(json!({})), RequestOptions::new())
                    .await
            })
        };
        mcp_testkit::wait::until("the call running", DEADLINE, || server.running_calls() == 1)
            .await;
        call.abort();
        drop(session);
        mcp_testkit::wait::until("the connection ending", DEADLINE, || {
            server.open_connections() == 0
        })
        .await;
        mcp_testkit::wait::until("no call running", DEADLINE, || server.running_calls() == 0).await;
        mcp_testkit::wait::until("no task left", DEADLINE, || alive_tasks() <= baseline).await;
    }
}

#[tokio::test]
async fn shutdown_ends_every_connection_and_refuses_new_ones() {
    let server = test_server(Path::InPlace, Arc::default());
    let session = connect(&server, Arc::default(), None).await;
    server.shutdown();
    server.shutdown();
    let reason = tokio::time::timeout(DEADLINE, session.closed())
        .await
        .unwrap();
    assert_eq!(reason.kind(), ErrorKind::Network, "{reason}");
    let refused = server.connect().expect_err("shut down");
    assert_eq!(refused.kind(), TransportErrorKind::Connect);
    assert!(refused.message().contains("shut down"), "{refused}");
}

#[tokio::test]
async fn the_connector_opens_a_new_connection_to_the_same_server_each_time() {
    let server = test_server(Path::InPlace, Arc::default());
    let connector = server.connector();
    assert_eq!(connector.transport_name(), "inproc");
    let sessions = HandshakeConnector::new(connector, Arc::new(()), common::options(None));
    let first: ClientSession = mcp_session::SessionConnector::connect(&sessions)
        .await
        .unwrap();
    let second: ClientSession = mcp_session::SessionConnector::connect(&sessions)
        .await
        .unwrap();
    assert_eq!(server.open_connections(), 2);
    // One server: a tool added for one is there for the other.
    let extra = mcp_transport_local::LocalTool::new(
        "extra",
        |_ctx: mcp_transport_local::RequestContext, _a: mcp_transport_local::NoArguments| async move {
            "x"
        },
    );
    server.add_tool(extra).unwrap();
    let tools = second.list_all_tools(RequestOptions::new()).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "extra"));
    first.close().await;
    second.close().await;
    assert_eq!(server.open_connections(), 0);
}

#[tokio::test]
async fn connecting_outside_a_runtime_is_a_clear_error() {
    let server = test_server(Path::InPlace, Arc::default());
    let error = std::thread::spawn(move || server.connect().map(|_| ()))
        .join()
        .unwrap()
        .expect_err("no runtime");
    assert_eq!(error.kind(), TransportErrorKind::Connect);
    assert!(error.message().contains("tokio runtime"), "{error}");
}
