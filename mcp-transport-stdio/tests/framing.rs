//! Newline-delimited JSON against the fixture process: lines on stdout that are not messages are
//! skipped, and a line over the cap fails only the request it answers — the session goes on.
//! (What every transport does is the contract suite's, `tests/contract.rs`; the misbehaving
//! servers are `hostile.rs`.)

mod common;

use common::*;
use mcp_core::{ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::SessionOptions;
use serde_json::json;

#[tokio::test]
async fn garbage_lines_on_stdout_are_skipped() {
    // `--garbage-lines`: the line `this is not json` before every response.
    let (session, _) = connect(&["--garbage-lines"]).await;
    for i in 0..20 {
        let r = session
            .call_tool(
                "echo",
                Some(json!({"text": format!("m{i}")})),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(r.text(), format!("m{i}"));
    }
    session.close().await;
}

#[tokio::test]
async fn an_oversized_message_fails_its_request_clearly_and_the_session_goes_on() {
    let config = fixture(&[]).max_message_size(1024 * 1024);
    let (session, _) = connect_with(config, (), SessionOptions::default()).await;
    let err = tokio::time::timeout(
        DEADLINE,
        session.call_tool(
            "large",
            Some(json!({"bytes": 3 * 1024 * 1024})),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("fails at once, not after the timeout")
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert!(err.message().contains("1048576-byte limit"), "{err}");
    assert!(err.message().contains("max_message_size"), "{err}");
    session
        .ping(RequestOptions::new())
        .await
        .expect("the session survives");
    let ok = session
        .call_tool("large", Some(json!({"bytes": 1000})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(ok.text().len(), 1000);
    session.close().await;
}
