//! Interop: the official TypeScript `server-everything` (npm, pinned by xtask) over stdio.
//! Facts asserted here are recorded in interop/NOTES.md.

mod common;

use mcp_core::McpServiceExt;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use mcp_core::types::{ClientCapabilities, ListRootsResult, Root, RootsCapability};
use mcp_core::{ErrorKind, ErrorObject, ProtocolVersion, RequestOptions};
use mcp_session::{ClientHandler, ServerNotification, SessionOptions};
use serde_json::json;

/// server-everything is a legacy server (SDK 1.x): detection finds it so (its answer to the
/// `server/discover` probe is "method not found"), and it speaks every legacy version.
#[tokio::test]
async fn detected_as_legacy_and_handshakes_at_every_legacy_version() {
    let (session, _) = connect_with(everything(), (), SessionOptions::default()).await;
    assert_eq!(session.era(), mcp_core::Era::Legacy);
    assert_eq!(session.protocol_version(), ProtocolVersion::LATEST_LEGACY);
    session.close().await;
    for version in ProtocolVersion::SUPPORTED
        .into_iter()
        .filter(|v| !v.is_modern())
    {
        let options = SessionOptions::default().with_protocol_version(version);
        let (session, pid) = connect_with(everything(), (), options).await;
        assert_eq!(session.protocol_version(), version);
        let info = session.server_info();
        assert_eq!(info.server_info.name, "mcp-servers/everything");
        assert!(info.capabilities.tools.is_some());
        assert_eq!(
            info.capabilities
                .resources
                .as_ref()
                .and_then(|r| r.subscribe),
            Some(true)
        );
        assert!(info
            .instructions
            .as_deref()
            .unwrap_or("")
            .starts_with("# Everything Server"));
        // Capabilities this crate has no field for (tasks) are kept.
        assert!(info.capabilities.extra.contains_key("tasks"));
        session.close().await;
        wait_group_gone(pid).await;
    }
}

#[tokio::test]
async fn lists_every_tool_and_calls_them() {
    let (session, _) = connect_with(everything(), (), SessionOptions::default()).await;
    // server-everything sends everything in one page (no nextCursor); list_all follows cursors anyway.
    let page = session
        .list_tools(None, RequestOptions::new())
        .await
        .unwrap();
    assert!(page.next_cursor.is_none());
    let tools = session.list_all_tools(RequestOptions::new()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 13, "{names:?}");
    for expected in [
        "echo",
        "get-sum",
        "get-structured-content",
        "trigger-long-running-operation",
        "get-tiny-image",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.input_schema["required"], json!(["message"]));
    assert!(
        echo.is_replay_safe(),
        "echo is annotated read-only and idempotent"
    );
    assert!(
        echo.extra.contains_key("execution"),
        "unknown members are kept"
    );

    let r = session
        .call_tool(
            "echo",
            Some(json!({"message": "hi there"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: hi there");
    let r = session
        .call_tool(
            "get-sum",
            Some(json!({"a": 1, "b": 2})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "The sum of 1 and 2 is 3.");
    let r = session
        .call_tool(
            "get-structured-content",
            Some(json!({"location": "New York"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    let structured = r.structured_content.expect("structured content");
    for key in ["temperature", "conditions", "humidity"] {
        assert!(
            structured.get(key).is_some(),
            "{key} missing in {structured}"
        );
    }
    let r = session
        .call_tool("get-tiny-image", None, RequestOptions::new())
        .await
        .unwrap();
    assert!(
        r.content.iter().any(|c| c.type_name() == "image"),
        "{:?}",
        r.content
    );
    // Tool-level failures are results with isError, not protocol errors.
    let r = session
        .call_tool("nope", Some(json!({})), RequestOptions::new())
        .await
        .unwrap();
    assert!(r.is_error());
    assert!(r.text().contains("Tool nope not found"), "{}", r.text());
    session.close().await;
}

#[tokio::test]
async fn reads_resources_and_templates() {
    let (session, _) = connect_with(everything(), (), SessionOptions::default()).await;
    let resources = session
        .list_all_resources(RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(resources.len(), 7);
    assert!(resources
        .iter()
        .all(|r| r.uri.starts_with("demo://resource/static/document/")));
    let doc = session
        .read_resource(
            "demo://resource/static/document/architecture.md",
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(doc.contents[0].mime_type.as_deref(), Some("text/markdown"));
    assert!(doc.contents[0]
        .text
        .as_deref()
        .unwrap()
        .starts_with("# Everything Server – Architecture"));
    let templates = session
        .list_all_resource_templates(RequestOptions::new())
        .await
        .unwrap();
    assert!(templates
        .iter()
        .any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"));
    let dynamic = session
        .read_resource("demo://resource/dynamic/text/1", RequestOptions::new())
        .await
        .unwrap();
    assert!(dynamic.contents[0]
        .text
        .as_deref()
        .unwrap()
        .starts_with("Resource 1: This is a plaintext resource created at"));
    let blob = session
        .read_resource("demo://resource/dynamic/blob/1", RequestOptions::new())
        .await
        .unwrap();
    assert!(blob.contents[0]
        .blob
        .as_deref()
        .unwrap()
        .starts_with("UmVzb3VyY2UgMT"));
    let err = session
        .read_resource("demo://nope", RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Resource, "{err:?}");
    session.close().await;
}

#[tokio::test]
async fn gets_prompts_with_arguments() {
    let (session, _) = connect_with(everything(), (), SessionOptions::default()).await;
    let prompts = session
        .list_all_prompts(RequestOptions::new())
        .await
        .unwrap();
    let args_prompt = prompts
        .iter()
        .find(|p| p.name == "args-prompt")
        .expect("args-prompt");
    let arguments = args_prompt.arguments.as_ref().unwrap();
    assert_eq!(arguments[0].name, "city");
    assert_eq!(arguments[0].required, Some(true));
    let args = BTreeMap::from([
        ("city".to_owned(), "Paris".to_owned()),
        ("state".to_owned(), "TX".to_owned()),
    ]);
    let r = session
        .get_prompt("args-prompt", Some(args), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(
        r.messages[0].content.as_text(),
        Some("What's weather in Paris, TX?")
    );
    let r = session
        .get_prompt("simple-prompt", None, RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(
        r.messages[0].content.as_text(),
        Some("This is a simple prompt without arguments.")
    );
    let err = session
        .get_prompt("args-prompt", Some(BTreeMap::new()), RequestOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams);
    session.close().await;
}

#[tokio::test]
async fn progress_from_the_long_running_operation() {
    let (session, _) = connect_with(everything(), (), SessionOptions::default()).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions::new().on_progress({
        let seen = seen.clone();
        move |p| seen.lock().unwrap().push((p.progress, p.total))
    });
    let r = session
        .call_tool(
            "trigger-long-running-operation",
            Some(json!({"duration": 0.6, "steps": 3})),
            options,
        )
        .await
        .unwrap();
    assert_eq!(
        r.text(),
        "Long running operation completed. Duration: 0.6 seconds, Steps: 3."
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );
    session.close().await;
}

/// Declares roots and counts tools/list_changed from the very first message on.
#[derive(Default)]
struct RootsAndCounter {
    list_changed: AtomicUsize,
}

#[async_trait::async_trait]
impl ClientHandler for RootsAndCounter {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            ..Default::default()
        }
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: vec![Root::new("file:///srv/project", "project")],
        })
    }

    fn on_notification(&self, notification: &ServerNotification) {
        if *notification == ServerNotification::ToolListChanged {
            self.list_changed.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[tokio::test]
async fn answers_roots_list_and_receives_list_changed() {
    let handler = Arc::new(RootsAndCounter::default());
    struct Shared(Arc<RootsAndCounter>);
    #[async_trait::async_trait]
    impl ClientHandler for Shared {
        fn capabilities(&self) -> ClientCapabilities {
            self.0.capabilities()
        }
        async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
            self.0.list_roots().await
        }
        fn on_notification(&self, n: &ServerNotification) {
            self.0.on_notification(n)
        }
    }
    let (session, _) = connect_with(
        everything(),
        Shared(handler.clone()),
        SessionOptions::default(),
    )
    .await;
    let mut notes = session.subscribe();
    // The server asks for the roots shortly after initialized and logs what it received.
    let logged = tokio::time::timeout(DEADLINE, async {
        loop {
            match notes.next().await {
                Some(ServerNotification::LoggingMessage(m)) => break m,
                Some(_) => continue,
                None => panic!("session ended"),
            }
        }
    })
    .await
    .expect("the server fetched the roots");
    assert_eq!(
        logged.data,
        json!("Roots updated: 1 root(s) received from client")
    );
    let r = session
        .call_tool("get-roots-list", None, RequestOptions::new())
        .await
        .unwrap();
    assert!(
        r.text().contains("1. project\n   URI: file:///srv/project"),
        "{}",
        r.text()
    );
    // Registering get-roots-list for a roots-capable client announces two list changes.
    mcp_testkit::wait::until("two tools/list_changed notifications", DEADLINE, || {
        handler.list_changed.load(Ordering::SeqCst) >= 2
    })
    .await;
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"get-roots-list".to_owned()));
    session.close().await;
}
