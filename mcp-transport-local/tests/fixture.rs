//! The in-process fixture answers like mcp-testkit's fixture server: same tools, arguments and
//! results, and a crash ends every connection.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{TestHandler, DEADLINE};
use mcp_core::{Era, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, ServerNotification};
use mcp_transport_local::fixture::{fixture_server, DYNAMIC_TOOL, FAIL_FIRST, MAX_LARGE_BYTES};
use serde_json::json;

async fn open(server: &mcp_transport_local::LocalServer, era: Option<Era>) -> ClientSession {
    let transport = server.connect().unwrap();
    ClientSession::connect_shared(
        transport,
        Arc::new(TestHandler::default()),
        common::options(era),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn the_fixture_lists_the_testkit_tools() {
    let server = fixture_server();
    let session = open(&server, None).await;
    assert_eq!(session.server_info().server_info.name, "mcp-fixture-server");
    let tools = session.list_all_tools(RequestOptions::new()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for tool in [
        "echo",
        "add",
        "slow",
        "fail",
        "crash",
        "trigger_list_changed",
        "large",
        "ask_elicitation",
    ] {
        assert!(names.contains(&tool), "no {tool} in {names:?}");
    }
    let slow = tools.iter().find(|t| t.name == "slow").unwrap();
    assert!(slow.input_schema["properties"]["duration_ms"].is_object());
    session.close().await;
}

#[tokio::test]
async fn echo_add_and_large_answer_as_the_fixture_does() {
    for era in [None, Some(Era::Legacy)] {
        let server = fixture_server();
        let session = open(&server, era).await;
        let echo = session
            .call_tool("echo", Some(json!({"text": "hi"})), RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(echo.text(), "hi");
        let sum = session
            .call_tool("add", Some(json!({"a": 1, "b": 2})), RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(sum.structured_content, Some(json!({"sum": 3})));
        assert_eq!(sum.text(), r#"{"sum":3}"#);
        let floats = session
            .call_tool(
                "add",
                Some(json!({"a": 1.5, "b": 2})),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(floats.structured_content, Some(json!({"sum": 3.5})));
        let large = session
            .call_tool(
                "large",
                Some(json!({"bytes": 8 * 1024 * 1024})),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        let text = large.text();
        assert_eq!(text.len(), 8 * 1024 * 1024);
        assert!(text.bytes().all(|b| b == b'x'));
        let over = session
            .call_tool(
                "large",
                Some(json!({"bytes": MAX_LARGE_BYTES + 1024})),
                RequestOptions::new(),
            )
            .await
            .expect_err("over the cap");
        assert_eq!(over.kind(), ErrorKind::InvalidParams, "{over}");
        assert_eq!(over.field(), Some("bytes"));
        session.close().await;
    }
}

#[tokio::test]
async fn fail_fails_the_first_calls_then_succeeds() {
    let server = fixture_server();
    let session = open(&server, None).await;
    for k in 1..=FAIL_FIRST {
        let failed = session
            .call_tool("fail", Some(json!({})), RequestOptions::new())
            .await
            .unwrap();
        assert!(failed.is_error());
        assert_eq!(failed.text(), format!("failure {k} of {FAIL_FIRST}"));
    }
    let ok = session
        .call_tool(
            "fail",
            Some(json!({"mode": "protocol"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(ok.text(), format!("ok after {FAIL_FIRST} failures"));
    let fresh = fixture_server();
    let session2 = open(&fresh, None).await;
    let protocol = session2
        .call_tool(
            "fail",
            Some(json!({"mode": "protocol"})),
            RequestOptions::new(),
        )
        .await
        .expect_err("a JSON-RPC error");
    assert_eq!(protocol.code(), Some(-32603), "{protocol}");
    let bad = session2
        .call_tool("fail", Some(json!({"mode": "loud"})), RequestOptions::new())
        .await
        .expect_err("an unknown mode");
    assert_eq!(bad.field(), Some("mode"), "{bad}");
    session.close().await;
    session2.close().await;
}

#[tokio::test]
async fn slow_reports_progress_and_is_cancelled_by_the_deadline() {
    let server = fixture_server();
    let session = open(&server, None).await;
    let steps = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = steps.clone();
    let options =
        RequestOptions::new().on_progress(move |p| record.lock().unwrap().push(p.progress));
    let done = session
        .call_tool(
            "slow",
            Some(json!({"duration_ms": 60, "steps": 3})),
            options,
        )
        .await
        .unwrap();
    assert_eq!(done.text(), "done after 3 steps");
    assert_eq!(*steps.lock().unwrap(), vec![1.0, 2.0, 3.0]);
    let before = server.cancellations();
    let error = session
        .call_tool(
            "slow",
            Some(json!({"duration_ms": 30_000, "steps": 0})),
            RequestOptions::new().with_timeout(Duration::from_millis(200)),
        )
        .await
        .expect_err("too slow");
    assert_eq!(error.kind(), ErrorKind::Timeout);
    mcp_testkit::wait::until("the cancellation reaching the server", DEADLINE, || {
        server.cancellations() > before
    })
    .await;
    session.close().await;
}

#[tokio::test]
async fn ask_elicitation_returns_the_clients_answer_in_both_eras() {
    for era in [None, Some(Era::Legacy)] {
        let server = fixture_server();
        let session = open(&server, era).await;
        let answer = session
            .call_tool(
                "ask_elicitation",
                Some(json!({"message": "who?"})),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        assert!(
            answer.text().contains("tester"),
            "{era:?}: {}",
            answer.text()
        );
        session.close().await;
    }
}

#[tokio::test]
async fn trigger_list_changed_toggles_the_dynamic_tool_and_notifies() {
    let server = fixture_server();
    let session = open(&server, None).await;
    let mut stream = session.subscribe();
    let toggled = session
        .call_tool(
            "trigger_list_changed",
            Some(json!({})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(toggled.text(), "tools changed; dynamic_tool present: true");
    let next = tokio::time::timeout(DEADLINE, stream.next()).await.unwrap();
    assert_eq!(next, Some(ServerNotification::ToolListChanged));
    assert!(server.has_tool(DYNAMIC_TOOL));
    let dynamic = session
        .call_tool(DYNAMIC_TOOL, Some(json!({})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(dynamic.text(), "dynamic");
    let toggled = session
        .call_tool(
            "trigger_list_changed",
            Some(json!({})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(toggled.text(), "tools changed; dynamic_tool present: false");
    session.close().await;
}

#[tokio::test]
async fn crash_ends_every_connection_and_fails_pending_calls_at_once() {
    let server = fixture_server();
    let session = open(&server, None).await;
    let pending = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .call_tool(
                    "slow",
                    Some(json!({"duration_ms": 30_000, "steps": 0})),
                    RequestOptions::new(),
                )
                .await
        })
    };
    mcp_testkit::wait::until("the slow call running", DEADLINE, || {
        server.running_calls() == 1
    })
    .await;
    let crash = session
        .call_tool("crash", Some(json!({})), RequestOptions::new())
        .await;
    assert!(crash.is_err());
    let outcome = tokio::time::timeout(Duration::from_secs(2), pending)
        .await
        .unwrap()
        .unwrap();
    let error = outcome.expect_err("the peer died");
    assert_ne!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(session.is_closed());
    session.close().await;
}

#[tokio::test]
async fn resources_and_the_greeting_prompt_answer_as_the_fixture_does() {
    let server = fixture_server();
    let session = open(&server, None).await;
    let hello = session
        .read_resource("fixture://static/hello", RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(hello.contents[0].text.as_deref(), Some("Hello, fixture!"));
    let item = session
        .read_resource("fixture://items/42", RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(item.contents[0].text.as_deref(), Some("item 42"));
    let args = [("name".to_owned(), "Ada".to_owned())]
        .into_iter()
        .collect();
    let greeting = session
        .get_prompt("greeting", Some(args), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(
        greeting.messages[0].content.as_text(),
        Some("Please greet Ada in a casual way.")
    );
    session.close().await;
}
