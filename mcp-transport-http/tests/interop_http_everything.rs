//! Interop over HTTP: the official TypeScript `server-everything` (npm, pinned by xtask) in its
//! `streamableHttp` mode (endpoint `/mcp`) and its HTTP+SSE `sse` mode (`/sse` + `/message`).
//! Node listens on all interfaces by default: interop/loopback.cjs (via NODE_OPTIONS) keeps it
//! on 127.0.0.1. Facts are recorded in interop/NOTES.md ("HTTP").

mod common;

use mcp_core::McpServiceExt;
use std::sync::{Arc, Mutex};

use common::*;
use mcp_core::RequestOptions;
use mcp_session::{ClientSession, ServerNotification, SessionOptions};
use mcp_transport_http::{HttpFlavor, HttpFlavorMemo, HttpServerConfig, HttpTransport};
use serde_json::json;

#[tokio::test]
async fn streamable_lists_tools_and_calls_echo_and_get_sum() {
    let server = Server::start(everything("streamableHttp")).await;
    let session = connect(&server).await;
    let info = session.server_info();
    assert_eq!(info.server_info.name, "mcp-servers/everything");
    assert_eq!(
        info.capabilities
            .resources
            .as_ref()
            .and_then(|r| r.subscribe),
        Some(true)
    );
    let tools = session.list_all_tools(RequestOptions::new()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 13, "{names:?}");
    for expected in [
        "echo",
        "get-sum",
        "trigger-long-running-operation",
        "toggle-subscriber-updates",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    let r = session
        .call_tool(
            "echo",
            Some(json!({"message": "over streamable http"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: over streamable http");
    let r = session
        .call_tool(
            "get-sum",
            Some(json!({"a": 19, "b": 23})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "The sum of 19 and 23 is 42.");
    session.close().await;
}

#[tokio::test]
async fn streamable_progress_arrives_inside_the_post_stream() {
    let server = Server::start(everything("streamableHttp")).await;
    let session = connect(&server).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions::new().on_progress({
        let seen = seen.clone();
        move |p| seen.lock().unwrap().push((p.progress, p.total))
    });
    // The TypeScript SDK sends request-related notifications on the request's own SSE answer,
    // before the response; so all three are in by the time the call returns.
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

#[tokio::test]
async fn streamable_resource_updates_arrive_on_the_get_stream() {
    let server = Server::start(everything("streamableHttp")).await;
    let session = connect(&server).await;
    let mut notes = session.subscribe();
    let uri = "demo://resource/static/document/architecture.md";
    session
        .subscribe_resource(uri, RequestOptions::new())
        .await
        .unwrap();
    let r = session
        .call_tool("toggle-subscriber-updates", None, RequestOptions::new())
        .await
        .unwrap();
    assert!(
        r.text()
            .starts_with("Started simulated resource updated notifications for session "),
        "{}",
        r.text()
    );
    // Not related to any request: the server can only send these on the standalone GET
    // stream (one at once, then one every 5 s).
    let updated = wait_for(&mut notes, "notifications/resources/updated", |n| match n {
        ServerNotification::ResourceUpdated(p) => Some(p.uri.clone()),
        _ => None,
    })
    .await;
    assert_eq!(updated, uri);
    // The POST channel keeps working while the GET stream is open.
    let r = session
        .call_tool(
            "echo",
            Some(json!({"message": "still here"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: still here");
    session.close().await;
}

#[tokio::test]
async fn http_sse_lists_tools_calls_echo_and_reports_progress() {
    let server = Server::start(everything("sse")).await;
    let session = connect_http_sse(&server, ()).await;
    assert_eq!(
        session.server_info().server_info.name,
        "mcp-servers/everything"
    );
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.iter().any(|n| n == "get-sum"), "{names:?}");
    let r = session
        .call_tool(
            "echo",
            Some(json!({"message": "over HTTP+SSE"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: over HTTP+SSE");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions::new().on_progress({
        let seen = seen.clone();
        move |p| seen.lock().unwrap().push(p.progress)
    });
    let r = session
        .call_tool(
            "trigger-long-running-operation",
            Some(json!({"duration": 0.3, "steps": 3})),
            options,
        )
        .await
        .unwrap();
    assert_eq!(
        r.text(),
        "Long running operation completed. Duration: 0.3 seconds, Steps: 3."
    );
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0]);
    session.close().await;
}

async fn connect_auto(url: &str, memo: &HttpFlavorMemo) -> ClientSession {
    let transport =
        HttpTransport::new(HttpServerConfig::new(url), memo.clone()).expect("valid config");
    tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("connects in time")
    .expect("connects")
}

#[tokio::test]
async fn auto_detects_streamable_and_http_sse() {
    let streamable = Server::start(everything("streamableHttp")).await;
    let memo = HttpFlavorMemo::default();
    let session = connect_auto(&streamable.url, &memo).await;
    assert_eq!(memo.get(), Some(HttpFlavor::Streamable));
    let r = session
        .call_tool(
            "get-sum",
            Some(json!({"a": 1, "b": 2})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "The sum of 1 and 2 is 3.");
    session.close().await;

    // `POST /sse` is a 404 on the HTTP+SSE server → GET the same URL → `endpoint` event.
    let sse_server = Server::start(everything("sse")).await;
    let memo = HttpFlavorMemo::default();
    let session = connect_auto(&sse_server.url, &memo).await;
    assert_eq!(memo.get(), Some(HttpFlavor::HttpSse));
    let r = session
        .call_tool(
            "get-sum",
            Some(json!({"a": 2, "b": 3})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "The sum of 2 and 3 is 5.");
    session.close().await;
    // The memo lets a second connection skip the probe.
    let session = connect_auto(&sse_server.url, &memo).await;
    let r = session
        .call_tool(
            "echo",
            Some(json!({"message": "remembered"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: remembered");
    session.close().await;
}
