//! Interop: a server written on the official Python SDK (PyPI `mcp`, pinned by xtask) over
//! stdio. The server is interop/python_server.py; facts are recorded in interop/NOTES.md.

mod common;

use mcp_core::McpServiceExt;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::*;
use mcp_core::types::Root;
use mcp_core::{Era, ErrorKind, ErrorObject, ProtocolVersion, RequestOptions};
use mcp_session::{ClientHandler, ServerNotification, SessionOptions, StaticRoots};
use serde_json::json;

#[tokio::test]
async fn handshake_at_every_protocol_version() {
    for version in ProtocolVersion::SUPPORTED {
        let options = SessionOptions::default().with_protocol_version(version);
        let (session, pid) = connect_with(python_server(), (), options).await;
        assert_eq!(session.protocol_version(), version);
        assert_eq!(
            session.server_info().server_info.name,
            "python-interop-server"
        );
        assert_eq!(
            session
                .server_info()
                .capabilities
                .tools
                .as_ref()
                .and_then(|t| t.list_changed),
            Some(true)
        );
        session.close().await;
        wait_group_gone(pid).await;
    }
}

#[tokio::test]
async fn lists_and_calls_tools() {
    let (session, _) = connect_with(python_server(), (), SessionOptions::default()).await;
    let tools = session.list_all_tools(RequestOptions::new()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
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
    let add = &tools[0];
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));
    assert!(add.output_schema.is_some());
    let r = session
        .call_tool("add", Some(json!({"a": 1, "b": 2})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "3");
    assert_eq!(r.structured_content, Some(json!({"result": 3})));
    assert!(!r.is_error());
    let r = session
        .call_tool(
            "echo",
            Some(json!({"text": "héllo ✓"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "héllo ✓");
    let r = session
        .call_tool(
            "add",
            Some(json!({"a": "x", "b": 2})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert!(r.is_error());
    assert!(r.text().contains("validation error"), "{}", r.text());
    session.close().await;
}

#[tokio::test]
async fn progress_from_a_long_task() {
    let (session, _) = connect_with(python_server(), (), SessionOptions::default()).await;
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
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        (1..=3)
            .map(|i| (i as f64, Some(3.0), Some(format!("step {i}/3"))))
            .collect::<Vec<_>>()
    );
    session.close().await;
}

/// roots/list is a server→client request, which only the legacy era has (the SDK's
/// `ctx.session.list_roots()` has no back-channel in the modern one).
#[tokio::test]
async fn answers_roots_list() {
    let roots = StaticRoots::new(vec![
        Root::new("file:///srv/a", "a"),
        Root::new("file:///srv/b", "b"),
    ]);
    let legacy = || SessionOptions::default().with_era(Era::Legacy);
    let (session, _) = connect_with(python_server(), roots, legacy()).await;
    assert_eq!(session.era(), Era::Legacy);
    let r = session
        .call_tool("list_roots", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "file:///srv/a\nfile:///srv/b");
    session.close().await;
    // A client without the roots capability refuses; the SDK turns that into a failed call.
    let (session, _) = connect_with(python_server(), (), legacy()).await;
    let err = session
        .call_tool("list_roots", None, RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32601), "{err:?}");
    session.close().await;
}

/// In both eras: on the connection (legacy), on the `subscriptions/listen` stream (modern).
#[tokio::test]
async fn receives_tools_list_changed() {
    for era in [Era::Legacy, Era::Modern] {
        receives_tools_list_changed_in(era).await;
    }
}

async fn receives_tools_list_changed_in(era: Era) {
    let options = SessionOptions::default().with_era(era);
    let (session, _) = connect_with(python_server(), (), options).await;
    assert_eq!(session.era(), era);
    let mut notes = session.subscribe();
    let r = session
        .call_tool("add_tool", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "added tool dynamic");
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
    assert_eq!(names.last().map(String::as_str), Some("dynamic"));
    let r = session
        .call_tool("dynamic", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "dynamic tool called");
    session.close().await;
}

#[tokio::test]
async fn reads_resources_and_gets_prompts() {
    let (session, _) = connect_with(python_server(), (), SessionOptions::default()).await;
    let resources = session
        .list_all_resources(RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(resources.len(), 1);
    assert_eq!(resources[0].uri, "data://greeting");
    let r = session
        .read_resource("data://greeting", RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.contents[0].text.as_deref(), Some("hello from python"));
    let templates = session
        .list_all_resource_templates(RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(templates[0].uri_template, "data://items/{item_id}");
    let r = session
        .read_resource("data://items/42", RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.contents[0].text.as_deref(), Some("item 42"));
    let err = session
        .read_resource("data://missing", RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Resource, "{err:?}");
    let prompts = session
        .list_all_prompts(RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(prompts[0].name, "review");
    let args = BTreeMap::from([("code".to_owned(), "fn main() {}".to_owned())]);
    let p = session
        .get_prompt("review", Some(args), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(
        p.messages[0].content.as_text(),
        Some("Please review this code:\n\nfn main() {}")
    );
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
        params: mcp_core::types::ElicitRequestParams,
    ) -> Result<mcp_core::types::ElicitResult, ErrorObject> {
        assert_eq!(params.message, "What is your name?");
        Ok(mcp_core::types::ElicitResult {
            action: mcp_core::types::ElicitAction::Accept,
            content: json!({"name": "Ada"}).as_object().cloned(),
        })
    }
}

/// The SDK speaks both eras from one process: a client that detects the era gets the modern one,
/// and the same tool that elicits works in both — an `input_required` result answered and
/// re-issued (modern), an `elicitation/create` request (legacy) — through the same handler.
#[tokio::test]
async fn detects_the_modern_era_and_answers_input_requests() {
    let (session, pid) = connect_with(python_server(), NamesAda, SessionOptions::default()).await;
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(
        session.server_info().server_info.name,
        "python-interop-server"
    );
    let r = session
        .call_tool("greet", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "Hello, Ada!");
    // Cache hints on a modern list.
    let page = session
        .list_tools(None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(page.cache.ttl_ms, Some(0));
    assert!(page.cache.cache_scope.is_some());
    // ping (removed in 2026-07-28) still answers: it is a server/discover.
    session.ping(RequestOptions::new()).await.unwrap();
    session.close().await;
    wait_group_gone(pid).await;

    let options = SessionOptions::default().with_era(Era::Legacy);
    let (session, _) = connect_with(python_server(), NamesAda, options).await;
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_11_25);
    let r = session
        .call_tool("greet", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "Hello, Ada!");
    session.close().await;
}
