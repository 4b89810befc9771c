//! The session engine over gRPC, through the bridge, against the fixture server over stdio:
//! handshake, calls in flight, progress, server→client requests, notifications, large
//! messages and the cap, cancellation, a dying backend, closing, the cap on concurrent calls,
//! and what a caller is told when the backend cannot be reached.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use mcp_core::types::{ClientCapabilities, ElicitAction, ElicitRequestParams, ElicitResult};
use mcp_core::{ErrorKind, ErrorObject, McpServiceExt, RequestOptions};
use mcp_session::{ClientHandler, ClientSession, ServerNotification, SessionOptions};
use mcp_transport_grpc::{GrpcBridge, GrpcServerConfig, GrpcTransport};
use mcp_transport_stdio::StdioServerConfig;
use serde_json::json;

#[tokio::test]
async fn handshake_lists_tools_and_echoes_through_the_bridge() {
    let bridged = Bridged::start(&[]).await;
    let session = bridged.session().await;
    assert_eq!(session.server_info().server_info.name, "mcp-fixture-server");
    assert_eq!(session.transport_name(), "tcp");
    let tools = session.list_all_tools(RequestOptions::new()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "slow", "large", "crash", "ask_elicitation"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo = session
        .call_tool(
            "echo",
            Some(json!({"text": "hello, gRPC"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(echo.text(), "hello, gRPC");
    session.close().await;
    bridged.wait_all_ended().await;
}

#[tokio::test]
async fn the_modern_era_is_detected_over_grpc() {
    let bridged = Bridged::start(&["--era", "dual"]).await;
    let session = bridged.session().await;
    assert_eq!(session.era(), mcp_core::Era::Modern);
    let echo = session
        .call_tool(
            "echo",
            Some(json!({"text": "modern"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(echo.text(), "modern");
    session.close().await;
}

#[tokio::test]
async fn a_hundred_calls_in_flight_on_one_call() {
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
    let echoes: Vec<_> = (0..100)
        .map(|i| {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .call_tool(
                        "echo",
                        Some(json!({"text": format!("m{i}")})),
                        RequestOptions::new(),
                    )
                    .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap(), i);
    }
    for (i, echo) in echoes.into_iter().enumerate() {
        assert_eq!(echo.await.unwrap().unwrap().text(), format!("m{i}"));
    }
    assert_eq!(
        bridged.bridge.active_calls(),
        1,
        "one gRPC call carried them all"
    );
    session.close().await;
    bridged.wait_all_ended().await;
}

#[tokio::test]
async fn progress_from_a_slow_tool_reaches_the_caller() {
    let bridged = Bridged::start(&[]).await;
    let session = bridged.session().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions::new().on_progress({
        let seen = seen.clone();
        move |p| seen.lock().unwrap().push((p.progress, p.total))
    });
    let r = session
        .call_tool(
            "slow",
            Some(json!({"duration_ms": 200, "steps": 4})),
            options,
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "done after 4 steps");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );
    session.close().await;
}

struct Elicitor;

#[async_trait::async_trait]
impl ClientHandler for Elicitor {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({})),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let mut content = serde_json::Map::new();
        content.insert("name".into(), json!(format!("Ada ({})", params.message)));
        Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        })
    }
}

#[tokio::test]
async fn a_server_to_client_request_is_answered_by_the_handler() {
    let bridged = Bridged::start(&[]).await;
    let session = bridged
        .session_with(bridged.config(), Elicitor, SessionOptions::default())
        .await
        .unwrap();
    let r = session
        .call_tool(
            "ask_elicitation",
            Some(json!({"message": "who are you?"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert!(!r.is_error(), "{}", r.text());
    let answer: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    assert_eq!(answer["action"], "accept");
    assert_eq!(answer["content"]["name"], "Ada (who are you?)");
    session.close().await;
}

#[tokio::test]
async fn list_changed_notifications_arrive() {
    let bridged = Bridged::start(&[]).await;
    let session = bridged.session().await;
    let mut notes = session.subscribe();
    session
        .call_tool("trigger_list_changed", None, RequestOptions::new())
        .await
        .unwrap();
    let n = tokio::time::timeout(DEADLINE, notes.next())
        .await
        .expect("the notification arrives")
        .unwrap();
    assert_eq!(n, ServerNotification::ToolListChanged);
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
async fn eight_mib_messages_cross_both_ways() {
    let bridged = Bridged::start(&[]).await;
    let session = bridged.session().await;
    let big = "z".repeat(8 * 1024 * 1024);
    let r = session
        .call_tool("echo", Some(json!({"text": big})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text().len(), 8 * 1024 * 1024);
    assert!(r.text().bytes().all(|b| b == b'z'));
    let r = session
        .call_tool(
            "large",
            Some(json!({"bytes": 8_388_608})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text().len(), 8_388_608);
    session.close().await;
}

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

#[tokio::test]
async fn a_timed_out_call_sends_notifications_cancelled_to_the_server() {
    let events = EventLog::new("cancel");
    let bridged = Bridged::start(&["--event-log", events.arg()]).await;
    let session = bridged.session().await;
    let err = session
        .call_tool(
            "slow",
            Some(json!({"duration_ms": 60_000, "steps": 2})),
            RequestOptions::new().with_timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    mcp_testkit::event_log::wait_for_events(
        &events.0,
        DEADLINE,
        "the cancellation of the slow call",
        |events| {
            let call_id = events
                .iter()
                .find(|e| e["event"] == "call" && e["tool"] == "slow")
                .map(|e| e["id"].clone());
            call_id.is_some_and(|id| {
                events
                    .iter()
                    .any(|e| e["event"] == "cancelled" && e["id"] == id)
            })
        },
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
}

#[tokio::test]
async fn the_backend_dying_mid_call_fails_pending_calls_at_once_with_the_reason() {
    let bridged = Bridged::start(&[]).await;
    let session = bridged.session().await;
    let slow = tokio::spawn({
        let session = session.clone();
        async move {
            session
                .call_tool(
                    "slow",
                    Some(json!({"duration_ms": 60_000, "steps": 0})),
                    RequestOptions::new().with_timeout(Duration::from_secs(120)),
                )
                .await
        }
    });
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
    let slow = tokio::time::timeout(DEADLINE, slow)
        .await
        .expect("the pending slow call fails at once too")
        .unwrap()
        .unwrap_err();
    assert_eq!(slow.kind(), ErrorKind::Network, "{slow}");
    let after = session
        .call_tool("echo", Some(json!({"text": "x"})), RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(after.kind(), ErrorKind::Network, "{after}");
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
