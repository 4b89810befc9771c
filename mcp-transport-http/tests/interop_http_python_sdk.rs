//! Interop over HTTP: interop/python_http_server.py (the stdio test server's tools on the
//! official Python SDK, PyPI `mcp` pinned by xtask) over `streamable-http` (`/mcp`) and the
//! HTTP+SSE `sse` transport (`/sse` + `/messages/`). Facts are in interop/NOTES.md ("HTTP").

mod common;

use mcp_core::McpServiceExt;
use std::sync::{Arc, Mutex};

use common::*;
use mcp_core::types::Root;
use mcp_core::{Era, ErrorObject, ProtocolVersion, RequestOptions};
use mcp_session::{ClientHandler, ClientSession, ServerNotification, SessionOptions, StaticRoots};
use serde_json::json;

fn roots() -> StaticRoots {
    StaticRoots::new(vec![
        Root::new("file:///srv/a", "a"),
        Root::new("file:///srv/b", "b"),
    ])
}

async fn calls_add(session: &ClientSession) {
    let r = session
        .call_tool("add", Some(json!({"a": 1, "b": 2})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "3");
    assert_eq!(r.structured_content, Some(json!({"result": 3})));
    assert!(!r.is_error());
}

async fn long_task_reports_progress(session: &ClientSession) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions::new().on_progress({
        let seen = seen.clone();
        move |p| {
            seen.lock()
                .unwrap()
                .push((p.progress, p.total, p.message.clone()))
        }
    });
    let r = session
        .call_tool("long_task", Some(json!({"steps": 3})), options)
        .await
        .unwrap();
    assert_eq!(r.text(), "finished 3 steps");
    assert_eq!(
        *seen.lock().unwrap(),
        (1..=3)
            .map(|i| (i as f64, Some(3.0), Some(format!("step {i}/3"))))
            .collect::<Vec<_>>()
    );
}

async fn list_roots_is_answered(session: &ClientSession) {
    let r = session
        .call_tool("list_roots", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "file:///srv/a\nfile:///srv/b");
}

async fn add_tool_announces_list_changed(session: &ClientSession) {
    let mut notes = session.subscribe();
    let r = session
        .call_tool("add_tool", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "added tool dynamic");
    wait_for(&mut notes, "notifications/tools/list_changed", |n| {
        (*n == ServerNotification::ToolListChanged).then_some(())
    })
    .await;
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names.last().map(String::as_str), Some("dynamic"));
    let r = session
        .call_tool("dynamic", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "dynamic tool called");
}

/// The legacy era (pinned): roots/list is a server→client request inside the call's stream.
#[tokio::test]
async fn streamable_http_tools_progress_roots_and_list_changed() {
    let server = Server::start(python_server("streamable-http")).await;
    let options = SessionOptions::default().with_era(Era::Legacy);
    let session = connect_with(&server, roots(), options).await;
    assert_eq!(session.era(), Era::Legacy);
    let info = session.server_info();
    assert_eq!(info.server_info.name, "python-interop-server");
    assert_eq!(
        info.capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true)
    );
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        names,
        [
            "add",
            "echo",
            "long_task",
            "list_roots",
            "add_tool",
            "greet"
        ]
    );
    calls_add(&session).await;
    long_task_reports_progress(&session).await;
    // roots/list is a server→client request inside the tools/call's SSE answer; the answer
    // goes back as its own POST.
    list_roots_is_answered(&session).await;
    add_tool_announces_list_changed(&session).await;
    let r = session
        .read_resource("data://items/7", RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.contents[0].text.as_deref(), Some("item 7"));
    session.close().await;
}

#[tokio::test]
async fn http_sse_tools_progress_roots_and_list_changed() {
    let server = Server::start(python_server("sse")).await;
    let session = connect_http_sse(&server, roots()).await;
    assert_eq!(
        session.server_info().server_info.name,
        "python-interop-server"
    );
    calls_add(&session).await;
    long_task_reports_progress(&session).await;
    list_roots_is_answered(&session).await;
    add_tool_announces_list_changed(&session).await;
    session.close().await;
}

/// Answers every form elicitation with the name "Ada".
struct NamesAda;

#[async_trait::async_trait]
impl ClientHandler for NamesAda {
    fn capabilities(&self) -> mcp_core::types::ClientCapabilities {
        mcp_core::types::ClientCapabilities {
            elicitation: Some(json!({"form": {}})),
            ..Default::default()
        }
    }

    async fn elicit(
        &self,
        _params: mcp_core::types::ElicitRequestParams,
    ) -> Result<mcp_core::types::ElicitResult, ErrorObject> {
        Ok(mcp_core::types::ElicitResult {
            action: mcp_core::types::ElicitAction::Accept,
            content: json!({"name": "Ada"}).as_object().cloned(),
        })
    }
}

/// Detected as modern (2026-07-28): no session, the metadata headers the SDK checks
/// (`Mcp-Method`, `Mcp-Name`), progress on the call's stream, an elicitation as an
/// `input_required` result, and list changes on the `subscriptions/listen` stream.
#[tokio::test]
async fn streamable_http_in_the_modern_era() {
    let server = Server::start(python_server("streamable-http")).await;
    let session = connect_with(&server, NamesAda, SessionOptions::default()).await;
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(
        session.server_info().server_info.name,
        "python-interop-server"
    );
    calls_add(&session).await;
    long_task_reports_progress(&session).await;
    let r = session
        .call_tool("greet", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "Hello, Ada!");
    let r = session
        .read_resource("data://items/7", RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.contents[0].text.as_deref(), Some("item 7"));
    add_tool_announces_list_changed(&session).await;
    session.close().await;
}
