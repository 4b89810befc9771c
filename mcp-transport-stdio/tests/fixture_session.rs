//! The session engine over stdio against the fixture server: framing, sizes, progress,
//! notifications and server→client requests end to end.

mod common;

use mcp_core::McpServiceExt;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use mcp_core::types::Root;
use mcp_core::{ErrorKind, ProtocolVersion, RequestOptions};
use mcp_session::{ServerNotification, SessionOptions, StaticRoots};
use serde_json::json;

#[tokio::test]
async fn lists_and_calls_tools_over_newline_delimited_json() {
    let (session, pid) = connect(&[]).await;
    assert_eq!(session.server_info().server_info.name, "mcp-fixture-server");
    assert_eq!(session.transport_name(), "pipe");
    let tools = session.list_all_tools(RequestOptions::new()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "echo",
        "add",
        "slow",
        "fail",
        "crash",
        "trigger_list_changed",
        "large",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo = session
        .call_tool(
            "echo",
            Some(json!({"text": "hello, stdio"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(echo.text(), "hello, stdio");
    let add = session
        .call_tool("add", Some(json!({"a": 2, "b": 40})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(add.structured_content, Some(json!({"sum": 42})));
    session.close().await;
    wait_group_gone(pid).await;
}

#[tokio::test]
async fn pagination_collects_every_page() {
    let (session, _) = connect(&["--page-size", "2"]).await;
    let first = session
        .list_tools(None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(first.tools.len(), 2);
    assert!(first.next_cursor.is_some());
    let all = session.list_all_tools(RequestOptions::new()).await.unwrap();
    assert!(all.len() > 6, "{}", all.len());
    let mut names: Vec<_> = all.iter().map(|t| t.name.clone()).collect();
    names.dedup();
    assert_eq!(names.len(), all.len(), "no tool twice");
    session.close().await;
}

#[tokio::test]
async fn garbage_lines_on_stdout_are_skipped() {
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
async fn concurrent_calls_over_one_pipe() {
    let (session, _) = connect(&[]).await;
    let calls: Vec<_> = (0..200)
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
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.await.unwrap().unwrap().text(), i.to_string());
    }
    session.close().await;
}

#[tokio::test]
async fn eight_mib_messages_work_both_ways() {
    let (session, _) = connect(&[]).await;
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
            Some(json!({"bytes": 8 * 1024 * 1024})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text().len(), 8 * 1024 * 1024);
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

#[tokio::test]
async fn progress_from_a_long_running_tool_reaches_the_caller() {
    let (session, _) = connect(&[]).await;
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

#[tokio::test]
async fn a_timed_out_call_is_cancelled_and_the_session_goes_on() {
    let (session, _) = connect(&[]).await;
    let options = RequestOptions::new().with_timeout(Duration::from_millis(300));
    let err = session
        .call_tool(
            "slow",
            Some(json!({"duration_ms": 60_000, "steps": 2})),
            options,
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    // The server dropped the cancelled call (no late answer arrives to confuse anything).
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
async fn tool_errors_and_protocol_errors_are_told_apart() {
    let (session, _) = connect(&["--fail-first", "1"]).await;
    let r = session
        .call_tool("fail", None, RequestOptions::new())
        .await
        .unwrap();
    assert!(r.is_error());
    assert_eq!(r.text(), "failure 1 of 1");
    assert_eq!(
        session
            .call_tool("fail", None, RequestOptions::new())
            .await
            .unwrap()
            .text(),
        "ok after 1 failures"
    );
    let err = session
        .call_tool("no_such_tool", None, RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolNotFound);
    let err = session
        .call_tool("add", Some(json!({"a": "x"})), RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    session.close().await;
}

#[tokio::test]
async fn list_changed_and_resource_updates_arrive_as_notifications() {
    let (session, _) = connect(&[]).await;
    let mut notes = session.subscribe();
    session
        .call_tool("trigger_list_changed", None, RequestOptions::new())
        .await
        .unwrap();
    let n = tokio::time::timeout(DEADLINE, notes.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, ServerNotification::ToolListChanged);
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"dynamic_tool".to_owned()));

    session
        .subscribe_resource("fixture://counter", RequestOptions::new())
        .await
        .unwrap();
    let before = session
        .read_resource("fixture://counter", RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(before.contents[0].text.as_deref(), Some("counter = 0"));
    session
        .call_tool("bump_resource", None, RequestOptions::new())
        .await
        .unwrap();
    let n = tokio::time::timeout(DEADLINE, notes.next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(n, ServerNotification::ResourceUpdated(ref p) if p.uri == "fixture://counter"),
        "{n:?}"
    );
    let after = session
        .read_resource("fixture://counter", RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(after.contents[0].text.as_deref(), Some("counter = 1"));
    session.close().await;
}

#[tokio::test]
async fn resources_prompts_and_templates() {
    let (session, _) = connect(&[]).await;
    let resources = session
        .list_all_resources(RequestOptions::new())
        .await
        .unwrap();
    assert!(resources.iter().any(|r| r.uri == "fixture://static/hello"));
    let templates = session
        .list_all_resource_templates(RequestOptions::new())
        .await
        .unwrap();
    assert!(templates
        .iter()
        .any(|t| t.uri_template == "fixture://items/{id}"));
    let item = session
        .read_resource("fixture://items/42", RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(item.contents[0].text.as_deref(), Some("item 42"));
    let err = session
        .read_resource("fixture://nope", RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Resource);
    let prompts = session
        .list_all_prompts(RequestOptions::new())
        .await
        .unwrap();
    assert!(prompts.iter().any(|p| p.name == "greeting"));
    let args = BTreeMap::from([
        ("name".to_owned(), "Ada".to_owned()),
        ("style".to_owned(), "formal".to_owned()),
    ]);
    let prompt = session
        .get_prompt("greeting", Some(args), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("Please greet Ada in a formal way.")
    );
    let err = session
        .get_prompt("greeting", None, RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    assert_eq!(err.field(), Some("name"), "{err:?}");
    session.close().await;
}

#[tokio::test]
async fn roots_requests_are_answered_by_the_handler() {
    let roots = StaticRoots::new(vec![Root::new("file:///srv/project", "project")]);
    let (session, _) = connect_with(fixture(&[]), roots, SessionOptions::default()).await;
    let r = session
        .call_tool("ask_roots", None, RequestOptions::new())
        .await
        .unwrap();
    assert!(!r.is_error(), "{}", r.text());
    let answer: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    assert_eq!(
        answer,
        json!({"roots": [{"uri": "file:///srv/project", "name": "project"}]})
    );
    session.close().await;
    // Without the capability the client refuses, and the tool reports the refusal.
    let (session, _) = connect(&[]).await;
    let r = session
        .call_tool("ask_roots", None, RequestOptions::new())
        .await
        .unwrap();
    assert!(r.is_error());
    assert!(
        r.text().contains("-32601") || r.text().to_lowercase().contains("method not found"),
        "{}",
        r.text()
    );
    session.close().await;
}

#[tokio::test]
async fn protocol_versions_are_negotiated() {
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let options = SessionOptions::default()
            .with_protocol_version(version.parse::<ProtocolVersion>().unwrap());
        let (session, _) = connect_with(fixture(&[]), (), options).await;
        assert_eq!(session.protocol_version().as_str(), version);
        session.close().await;
    }
    let transport =
        mcp_transport_stdio::StdioTransport::spawn(fixture(&["--protocol-version", "1999-01-01"]))
            .unwrap();
    let pid = transport.pid();
    let err = mcp_session::ClientSession::connect(transport, (), SessionOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    assert!(err.message().contains("1999-01-01"), "{err}");
    wait_group_gone(pid).await;
}

/// The fixture's eras (`--era`): by default a legacy server (detected so: it does not know
/// `server/discover`), with `--era dual` detected as modern — every request with `_meta`, every
/// result with `resultType` and list results with cache hints — and with `--era modern` a
/// server a pinned legacy client cannot initialize.
#[tokio::test]
async fn the_era_is_detected_per_server() {
    let (session, _) = connect(&[]).await;
    assert_eq!(session.era(), mcp_core::Era::Legacy);
    session.close().await;

    let (session, _) = connect(&["--era", "dual"]).await;
    assert_eq!(session.era(), mcp_core::Era::Modern);
    assert_eq!(session.server_info().server_info.name, "mcp-fixture-server");
    let page = session
        .list_tools(None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(page.cache.ttl_ms, Some(60_000));
    let echo = session
        .call_tool(
            "echo",
            Some(json!({"text": "modern"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(echo.text(), "modern");
    // A slow call still reports progress, on the same stream.
    let r = session
        .call_tool("add", Some(json!({"a": 2, "b": 3})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "5");
    session.close().await;

    let transport =
        mcp_transport_stdio::StdioTransport::spawn(fixture(&["--era", "modern"])).unwrap();
    let options = SessionOptions::default().with_era(mcp_core::Era::Legacy);
    let err = mcp_session::ClientSession::connect(transport, (), options)
        .await
        .unwrap_err();
    assert!(err.message().contains("initialize"), "{err}");
}
