//! The message cap on both sides of the bridge, against the fixture server behind it: a request
//! over the client's cap is never sent, an answer over it ends the call with gRPC's reason, and
//! an answer over the bridge's cap fails only its request.

mod common;

use common::*;
use mcp_core::{ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::SessionOptions;
use serde_json::json;

#[tokio::test]
async fn a_request_over_the_cap_is_refused_before_sending_and_the_session_goes_on() {
    let bridged = Bridged::start(&[]).await;
    let config = bridged.config().max_message_size(1024 * 1024);
    let session = bridged
        .session_with(config, (), SessionOptions::default())
        .await
        .unwrap();
    let big = "z".repeat(2 * 1024 * 1024);
    let err = session
        .call_tool("echo", Some(json!({"text": big})), RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.message().contains("1048576-byte limit"), "{err}");
    assert!(err.message().contains("max_message_size"), "{err}");
    assert_eq!(err.delivery(), Some(mcp_core::Delivery::NotSent), "{err:?}");
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
}

#[tokio::test]
async fn an_answer_over_the_bridges_cap_fails_its_request_clearly_and_the_session_goes_on() {
    let bridged = Bridged::start_with(&[], |b| b.max_message_size(1024 * 1024)).await;
    let session = bridged.session().await;
    let err = tokio::time::timeout(
        DEADLINE,
        session.call_tool(
            "large",
            Some(json!({"bytes": 2 * 1024 * 1024})),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("fails at once, not after the timeout")
    .unwrap_err();
    assert!(err.message().contains("1048576-byte limit"), "{err}");
    assert!(err.message().contains("max_message_size"), "{err}");
    let r = session
        .call_tool("large", Some(json!({"bytes": 1000})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text().len(), 1000);
    session.close().await;
}

#[tokio::test]
async fn an_answer_over_the_clients_cap_ends_the_connection_with_a_clear_error() {
    let bridged = Bridged::start(&[]).await;
    let config = bridged.config().max_message_size(1024 * 1024);
    let session = bridged
        .session_with(config, (), SessionOptions::default())
        .await
        .unwrap();
    let err = tokio::time::timeout(
        DEADLINE,
        session.call_tool(
            "large",
            Some(json!({"bytes": 2 * 1024 * 1024})),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("fails at once, not after the timeout")
    .unwrap_err();
    assert!(err.message().contains("max_message_size"), "{err}");
    assert!(err.message().contains("1048576 bytes"), "{err}");
    assert!(err.message().contains("message length too large"), "{err}");
    session.close().await;
    bridged.wait_all_ended().await;
}
