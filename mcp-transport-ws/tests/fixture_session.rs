//! The session engine over WebSocket against the fixture served over WebSocket in-process
//! (mcp-testkit's `serve_ws`): calls, concurrency, progress, server→client requests,
//! notifications, sizes, cancellation, a dying peer, and closing.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use mcp_core::types::{ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult};
use mcp_core::{
    Era, ErrorKind, ErrorObject, McpServiceExt, RequestOptions, Transport, TransportReceiver,
    TransportSender,
};
use mcp_session::{ClientHandler, ServerNotification, SessionOptions};
use mcp_transport_ws::WebSocketTransport;
use serde_json::json;

#[tokio::test]
async fn handshake_lists_and_calls_tools_over_text_frames() {
    let fixture = fixture(&[]).await;
    let session = connect(&fixture).await;
    let info = session.server_info();
    assert_eq!(info.server_info.name, "mcp-fixture-server");
    assert_eq!(session.transport_name(), "tcp");
    // The fixture speaks the legacy era only: the probe falls back to initialize.
    assert_eq!(session.era(), Era::Legacy);
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for expected in ["echo", "add", "slow", "crash", "large", "ask_elicitation"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let echo = session
        .call_tool(
            "echo",
            Some(json!({"text": "hello, ws"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(echo.text(), "hello, ws");
    let add = session
        .call_tool("add", Some(json!({"a": 2, "b": 40})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(add.structured_content, Some(json!({"sum": 42})));
    session.close().await;
    mcp_testkit::wait::until("the fixture saw the connection end", DEADLINE, || {
        fixture.connection_count() == 0
    })
    .await;
}

#[tokio::test]
async fn many_concurrent_calls_share_one_socket() {
    let fixture = fixture(&[]).await;
    let session = connect(&fixture).await;
    let calls: Vec<_> = (0..300)
        .map(|i| {
            let s = session.clone();
            tokio::spawn(async move {
                s.call_tool(
                    "echo",
                    Some(json!({"text": i.to_string()})),
                    RequestOptions::new(),
                )
                .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap().text(), i.to_string());
    }
    assert_eq!(
        fixture.connection_count(),
        1,
        "one connection for all of them"
    );
    session.close().await;
}

#[tokio::test]
async fn eight_mib_messages_cross_both_ways() {
    let fixture = fixture(&[]).await;
    let session = connect(&fixture).await;
    let big = "z".repeat(8 * 1024 * 1024);
    let r = session
        .call_tool("echo", Some(json!({"text": big})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text().len(), 8 * 1024 * 1024);
    assert!(r.text().bytes().all(|b| b == b'z'));
    session.close().await;
}

#[tokio::test]
async fn progress_reaches_the_caller() {
    let fixture = fixture(&[]).await;
    let session = connect(&fixture).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions::new().on_progress({
        let seen = seen.clone();
        move |p| seen.lock().unwrap().push((p.progress, p.total))
    });
    let r = session
        .call_tool(
            "slow",
            Some(json!({"duration_ms": 100, "steps": 4})),
            options,
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "done after 4 steps");
    assert_eq!(
        *seen.lock().unwrap(),
        (1..=4).map(|i| (i as f64, Some(4.0))).collect::<Vec<_>>()
    );
    session.close().await;
}

/// Answers elicitations with a name, counting them.
#[derive(Default)]
struct Elicitor {
    asked: AtomicUsize,
}

#[async_trait]
impl ClientHandler for Elicitor {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({})),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        assert_eq!(params.message, "who are you?");
        let mut content = serde_json::Map::new();
        content.insert("name".into(), json!("Ada"));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        })
    }
}

#[tokio::test]
async fn a_server_to_client_request_is_answered_by_the_handler() {
    let fixture = fixture(&[]).await;
    let handler = Arc::new(Elicitor::default());
    let session = connect_with(
        config(&fixture.url()),
        ArcHandler(handler.clone()),
        SessionOptions::default(),
    )
    .await;
    let r = session
        .call_tool(
            "ask_elicitation",
            Some(json!({"message": "who are you?"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert!(r.text().contains("\"Ada\""), "{}", r.text());
    assert!(r.text().contains("accept"), "{}", r.text());
    assert_eq!(handler.asked.load(Ordering::SeqCst), 1);
    session.close().await;
}

/// Shares a handler with the test.
struct ArcHandler(Arc<Elicitor>);

#[async_trait]
impl ClientHandler for ArcHandler {
    fn capabilities(&self) -> ClientCapabilities {
        self.0.capabilities()
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.0.elicit(params).await
    }
}

#[tokio::test]
async fn list_changed_notifications_arrive() {
    let fixture = fixture(&[]).await;
    let session = connect(&fixture).await;
    let mut notes = session.subscribe();
    session
        .call_tool("trigger_list_changed", None, RequestOptions::new())
        .await
        .unwrap();
    let note = within("the notification", notes.next()).await.unwrap();
    assert_eq!(note, ServerNotification::ToolListChanged);
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"dynamic_tool".to_owned()), "{names:?}");
    session.close().await;
}

#[tokio::test]
async fn frames_that_are_not_json_are_reported_and_skipped() {
    // `--garbage-lines`: a text frame `this is not json` before every response.
    let fixture = fixture(&["--garbage-lines"]).await;
    let session = connect(&fixture).await;
    for i in 0..20 {
        let r = session
            .call_tool(
                "echo",
                Some(json!({"text": i.to_string()})),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(r.text(), i.to_string());
    }
    session.close().await;
}

#[tokio::test]
async fn a_message_over_the_cap_fails_the_connection_clearly_and_at_once() {
    let fixture = fixture(&[]).await;
    let config = config(&fixture.url()).max_message_size(1024 * 1024);
    let session = connect_with(config, (), SessionOptions::default()).await;
    let small = session
        .call_tool("large", Some(json!({"bytes": 1000})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(small.text().len(), 1000);
    let err = within(
        "the oversized answer fails its call",
        session.call_tool(
            "large",
            Some(json!({"bytes": 3 * 1024 * 1024})),
            RequestOptions::new(),
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.message().contains("1048576 bytes"), "{err}");
    assert!(err.message().contains("max_message_size"), "{err}");
    // Documented: the frame cannot be skipped without reading it, so the connection ends
    // (close 1009) and later calls fail at once with the same reason.
    let later = within(
        "a call on the failed session",
        session.call_tool("echo", Some(json!({"text": "x"})), RequestOptions::new()),
    )
    .await
    .unwrap_err();
    assert!(later.message().contains("max_message_size"), "{later}");
    mcp_testkit::wait::until("the fixture saw the close", DEADLINE, || {
        fixture.connection_count() == 0
    })
    .await;
    session.close().await;
}

#[tokio::test]
async fn a_message_over_the_cap_is_not_sent_and_the_connection_goes_on() {
    let fixture = fixture(&[]).await;
    let config = config(&fixture.url()).max_message_size(64 * 1024);
    let session = connect_with(config, (), SessionOptions::default()).await;
    let err = within(
        "the oversized request fails",
        session.call_tool(
            "echo",
            Some(json!({"text": "x".repeat(100 * 1024)})),
            RequestOptions::new(),
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.message().contains("65536-byte limit"), "{err}");
    assert!(err.was_never_sent(), "{err}");
    // The server never saw it, so the connection is still good.
    let echoed = within(
        "a call after the refused one",
        session.call_tool(
            "echo",
            Some(json!({"text": "still here"})),
            RequestOptions::new(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(echoed.text(), "still here");
    session.close().await;
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_on_the_server() {
    let dir = std::env::temp_dir().join(format!("mcp-ws-cancel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let _ = std::fs::remove_file(&log);
    let fixture = fixture(&["--event-log", log.to_str().unwrap()]).await;
    let session = connect(&fixture).await;
    let err = session
        .call_tool(
            "slow",
            Some(json!({"duration_ms": 60_000, "steps": 2})),
            RequestOptions::new().with_timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    mcp_testkit::event_log::wait_for_events(
        &log,
        DEADLINE,
        "notifications/cancelled reached the fixture",
        |events| events.iter().any(|e| e["event"] == "cancelled"),
    )
    .await;
    let r = session
        .call_tool(
            "echo",
            Some(json!({"text": "after"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "after");
    session.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_peer_that_dies_mid_call_fails_the_pending_calls_at_once() {
    let fixture = fixture(&[]).await;
    let session = connect(&fixture).await;
    let slow = {
        let s = session.clone();
        tokio::spawn(async move {
            s.call_tool(
                "slow",
                Some(json!({"duration_ms": 60_000, "steps": 1})),
                RequestOptions::new().with_timeout(Duration::from_secs(120)),
            )
            .await
        })
    };
    // The crash call itself never gets an answer: the connection is dropped without a close
    // frame, and both calls fail long before their timeouts.
    let crash = within(
        "the crash call fails",
        session.call_tool(
            "crash",
            None,
            RequestOptions::new().with_timeout(Duration::from_secs(120)),
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(crash.kind(), ErrorKind::Network, "{crash}");
    assert!(
        crash
            .message()
            .contains("dropped without a WebSocket close frame"),
        "{crash}"
    );
    let slow = within("the pending call fails", slow)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(slow.kind(), ErrorKind::Network, "{slow}");
    assert!(session.is_closed());
    session.close().await;
}

#[tokio::test]
async fn close_is_idempotent_bounded_and_leaves_no_task() {
    let runtime = tokio::runtime::Handle::current();
    let fixture = fixture(&[]).await;
    let baseline = runtime.metrics().num_alive_tasks();
    let transport = WebSocketTransport::connect(config(&fixture.url()))
        .await
        .unwrap();
    assert!(runtime.metrics().num_alive_tasks() > baseline);
    let (sender, mut receiver) = transport.split();
    let ping = mcp_core::Request::new(1, "ping", None);
    sender.send(ping.into()).await.unwrap();
    let answer = within("the ping's answer", receiver.receive())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(answer, mcp_core::Message::Response(_)),
        "{answer:?}"
    );
    let closes = futures_util::future::join3(sender.close(), sender.close(), sender.close());
    let (a, b, c) = within("three concurrent closes", closes).await;
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    within("a fourth close", sender.close()).await.unwrap();
    // The server answered the close frame: a clean end.
    assert!(within("the end", receiver.receive()).await.is_none());
    assert!(receiver.receive().await.is_none());
    let refused = sender
        .send(mcp_core::Request::new(2, "ping", None).into())
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), mcp_core::TransportErrorKind::Closed);
    assert!(!refused.may_have_been_delivered());
    mcp_testkit::wait::until("the fixture saw the connection end", DEADLINE, || {
        fixture.connection_count() == 0
    })
    .await;
    mcp_testkit::wait::until("every task of the connection ended", DEADLINE, || {
        runtime.metrics().num_alive_tasks() == baseline
    })
    .await;
}

#[tokio::test]
async fn dropping_both_halves_releases_the_connection() {
    let runtime = tokio::runtime::Handle::current();
    let fixture = fixture(&[]).await;
    let baseline = runtime.metrics().num_alive_tasks();
    let session = connect(&fixture).await;
    session
        .call_tool("echo", Some(json!({"text": "x"})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(fixture.connection_count(), 1);
    drop(session);
    mcp_testkit::wait::until("the fixture saw the connection end", DEADLINE, || {
        fixture.connection_count() == 0
    })
    .await;
    mcp_testkit::wait::until(
        "every task of the session and connection ended",
        DEADLINE,
        || runtime.metrics().num_alive_tasks() == baseline,
    )
    .await;
}

#[tokio::test]
async fn sessions_are_independent_connections() {
    let fixture = fixture(&[]).await;
    let a = connect(&fixture).await;
    let b = connect(&fixture).await;
    assert_eq!(fixture.connection_count(), 2);
    a.call_tool("trigger_list_changed", None, RequestOptions::new())
        .await
        .unwrap();
    let names = |tools: Vec<mcp_core::types::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name).collect()
    };
    let in_a = names(a.list_all_tools(RequestOptions::new()).await.unwrap());
    let in_b = names(b.list_all_tools(RequestOptions::new()).await.unwrap());
    assert!(in_a.contains(&"dynamic_tool".to_owned()));
    assert!(
        !in_b.contains(&"dynamic_tool".to_owned()),
        "one session per connection"
    );
    a.close().await;
    assert!(!b.is_closed());
    b.close().await;
}
