//! The `GrpcBridge` in front of the fixture server over stdio: one gRPC call carries a session,
//! at most `max_calls` at once, and what a caller is told when the backend dies or cannot be
//! reached. What every transport does is the contract suite's (`tests/contract.rs`); closing
//! and ownership are `lifecycle.rs`; message caps are `message_cap.rs`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcp_core::{ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_grpc::{GrpcBridge, GrpcServerConfig, GrpcTransport};
use mcp_transport_stdio::StdioServerConfig;
use serde_json::json;

#[tokio::test]
async fn one_grpc_call_carries_every_call_of_a_session() {
    let bridged = Bridged::start(&[]).await;
    let session = bridged.session().await;
    let calls: Vec<_> = (0..100)
        .map(|i| {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool(
                        "slow",
                        Some(json!({"duration_ms": 50 + (i % 7) * 10, "steps": 0})),
                        RequestOptions::new(),
                    )
                    .await
                    .map(|_| i)
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap(), i);
    }
    assert_eq!(
        bridged.bridge.active_calls(),
        1,
        "one gRPC call carried them all"
    );
    assert_eq!(
        bridged.backend.pids().len(),
        1,
        "one backend for the session"
    );
    session.close().await;
    bridged.wait_all_ended().await;
}

#[tokio::test]
async fn the_backend_dying_is_reported_with_its_reason() {
    let bridged = Bridged::start(&[]).await;
    let session = bridged.session().await;
    let crash = tokio::time::timeout(
        DEADLINE,
        session.call_tool(
            "crash",
            Some(json!({"exit_code": 3})),
            RequestOptions::new().with_timeout(Duration::from_secs(120)),
        ),
    )
    .await
    .expect("the crash call fails long before its timeout")
    .unwrap_err();
    assert_eq!(crash.kind(), ErrorKind::Network, "{crash}");
    assert!(crash.message().contains("UNAVAILABLE"), "{crash}");
    assert!(crash.message().contains("crashing on purpose"), "{crash}");
    session.close().await;
    bridged.wait_all_ended().await;
}

#[tokio::test]
async fn a_call_past_max_calls_is_resource_exhausted_until_one_ends() {
    let bridged = Bridged::start_with(&[], |bridge| bridge.max_calls(1)).await;
    let first = bridged.session().await;
    let refused = bridged
        .session_with(bridged.config(), (), SessionOptions::default())
        .await
        .unwrap_err();
    assert!(
        refused.message().contains("RESOURCE_EXHAUSTED"),
        "{refused}"
    );
    assert!(refused.message().contains("max_calls is 1"), "{refused}");
    assert_eq!(
        bridged.backend.pids().len(),
        1,
        "a refused call starts no backend"
    );
    first.close().await;
    mcp_testkit::wait::until("the first call to end", DEADLINE, || {
        bridged.bridge.active_calls() == 0
    })
    .await;
    let next = bridged.session().await;
    let echo = next
        .call_tool(
            "echo",
            Some(json!({"text": "freed"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(echo.text(), "freed");
    next.close().await;
    bridged.wait_all_ended().await;
}

#[tokio::test]
async fn an_unreachable_backend_is_reported_without_its_local_details() {
    let missing = "/nonexistent/private-dir/mcp-server-that-is-not-there";
    let backend = RecordingStdio::new(StdioServerConfig::new(missing));
    let bridge = GrpcBridge::new(Arc::new(backend))
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .expect("the bridge binds 127.0.0.1");
    let err = tokio::time::timeout(DEADLINE, async {
        let transport = GrpcTransport::connect(GrpcServerConfig::new(bridge.url())).await?;
        ClientSession::connect(transport, (), SessionOptions::default()).await
    })
    .await
    .expect("connect finished in time")
    .unwrap_err();
    assert!(err.message().contains("UNAVAILABLE"), "{err}");
    assert!(
        err.message()
            .contains("the bridged server could not be reached"),
        "{err}"
    );
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains("private-dir"), "{shown}");
    }
    bridge.shutdown().await;
}
