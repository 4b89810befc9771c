//! Interop over HTTP: interop/fastmcp_server.py on FastMCP (PyPI `fastmcp`, pinned by xtask)
//! with `transport="http"` (Streamable HTTP at `/mcp`). Facts are in interop/NOTES.md ("HTTP").

mod common;

use mcp_core::McpServiceExt;
use std::sync::{Arc, Mutex};

use common::*;
use mcp_core::RequestOptions;
use serde_json::json;

#[tokio::test]
async fn calls_tools_and_receives_progress() {
    let server = Server::start(fastmcp_server()).await;
    let session = connect(&server).await;
    // FastMCP 4.2.3 runs on mcp 2.3.0, which speaks 2026-07-28: detected as modern.
    assert_eq!(session.era(), mcp_core::Era::Modern);
    assert_eq!(
        session.server_info().server_info.name,
        "fastmcp-interop-server"
    );
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["multiply", "greet", "count_up"]);
    let r = session
        .call_tool(
            "multiply",
            Some(json!({"a": 6, "b": 7})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "42");
    assert_eq!(r.structured_content, Some(json!({"result": 42})));
    let r = session
        .call_tool(
            "greet",
            Some(json!({"name": "Ferris"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Hello, Ferris!");

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
        .call_tool("count_up", Some(json!({"steps": 3})), options)
        .await
        .unwrap();
    assert_eq!(r.text(), "counted to 3");
    assert_eq!(
        *seen.lock().unwrap(),
        (1..=3)
            .map(|i| (i as f64, Some(3.0), Some(format!("step {i}/3"))))
            .collect::<Vec<_>>()
    );
    session.close().await;
}
