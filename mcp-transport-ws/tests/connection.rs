//! A session's WebSocket connection, against the fixture served over WebSocket in process
//! (mcp-testkit's `serve_ws`): one connection per session, shared by all its calls and ended
//! by close or drop with every task; text frames that are not JSON skipped; the size cap both
//! ways (a request over it never sent, an answer over it ending the connection with 1009); a
//! connection dropped without a close frame. What every transport does is the contract
//! suite's (`tests/contract.rs`).

mod common;

use common::*;
use mcp_core::{ErrorKind, McpServiceExt, RequestOptions, Transport, TransportSender};
use mcp_session::SessionOptions;
use mcp_transport_ws::WebSocketTransport;
use serde_json::json;

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
async fn a_connection_dropped_without_a_close_frame_says_so_and_closes_the_session() {
    let fixture = fixture(&[]).await;
    let session = connect(&fixture).await;
    // The fixture's `crash` drops the connection without a close frame.
    let crash = within(
        "the crash call fails",
        session.call_tool(
            "crash",
            None,
            RequestOptions::new().with_timeout(std::time::Duration::from_secs(120)),
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
    assert!(session.is_closed());
    session.close().await;
}

#[tokio::test]
async fn close_ends_the_connection_on_the_server_and_every_task() {
    let runtime = tokio::runtime::Handle::current();
    let fixture = fixture(&[]).await;
    let baseline = runtime.metrics().num_alive_tasks();
    let transport = WebSocketTransport::connect(config(&fixture.url()))
        .await
        .unwrap();
    assert!(runtime.metrics().num_alive_tasks() > baseline);
    assert_eq!(fixture.connection_count(), 1);
    let (sender, receiver) = transport.split();
    within("close", sender.close()).await.unwrap();
    mcp_testkit::wait::until("the fixture saw the connection end", DEADLINE, || {
        fixture.connection_count() == 0
    })
    .await;
    drop((sender, receiver));
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
