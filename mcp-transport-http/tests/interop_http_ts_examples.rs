//! Interop over HTTP: example servers shipped with the TypeScript SDK (npm
//! `@modelcontextprotocol/sdk`, pinned by xtask; `dist/esm/examples/server/`). They hard-code
//! port 3000 and would listen on every interface: interop/loopback.cjs moves them to
//! 127.0.0.1 and the port in `PORT`. Facts are in interop/NOTES.md ("HTTP").

mod common;

use common::*;
use mcp_core::McpServiceExt;
use mcp_core::RequestOptions;
use mcp_session::{ClientSession, ServerNotification, SessionOptions};
use mcp_transport_http::{HttpFlavor, HttpFlavorMemo, HttpServerConfig, HttpTransport};
use serde_json::json;

/// `jsonResponseStreamableHttp.js`: sessions, every answer `application/json` (no SSE), GET 405.
#[tokio::test]
async fn json_response_server_answers_in_plain_json() {
    let server = Server::start(ts_example("jsonResponseStreamableHttp")).await;
    let session = connect(&server).await;
    assert_eq!(
        session.server_info().server_info.name,
        "json-response-streamable-http-server"
    );
    let names: Vec<String> = session
        .list_all_tools(RequestOptions::new())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["greet", "multi-greet"]);
    let r = session
        .call_tool(
            "greet",
            Some(json!({"name": "Ferris"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Hello, Ferris!");
    // ~2 s before the JSON body arrives (its log messages are not delivered in JSON mode).
    let r = session
        .call_tool(
            "multi-greet",
            Some(json!({"name": "Ferris"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Good morning, Ferris!");
    session.close().await;
}

/// `simpleStatelessStreamableHttp.js`: no session id, a fresh server per POST, SSE answers,
/// GET and DELETE 405.
#[tokio::test]
async fn stateless_server_works_without_a_session() {
    let server = Server::start(ts_example("simpleStatelessStreamableHttp")).await;
    let session = connect(&server).await;
    assert_eq!(
        session.server_info().server_info.name,
        "stateless-streamable-http-server"
    );
    let r = session
        .call_tool(
            "start-notification-stream",
            Some(json!({"interval": 10, "count": 3})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    // The answer is an SSE stream with just the result: the tool's log messages are sent
    // without a related request, i.e. for the standalone GET stream, which a stateless server
    // does not have (GET → 405), so the server drops them.
    assert_eq!(
        r.text(),
        "Started sending periodic notifications every 10ms"
    );
    let prompt = session
        .get_prompt(
            "greeting-template",
            Some([("name".to_owned(), "Ferris".to_owned())].into()),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("Please greet Ferris in a friendly manner.")
    );
    let r = session
        .read_resource(
            "https://example.com/greetings/default",
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.contents[0].text.as_deref(), Some("Hello, world!"));
    session.close().await;
}

/// `sseAndStreamableHttpCompatibleServer.js`: Streamable HTTP at `/mcp`, the 2024-11-05
/// transport at `/sse` (+ `POST /messages?sessionId=…`), both on one port.
#[tokio::test]
async fn backwards_compatible_server_over_both_transports() {
    let server = Server::start(ts_example("sseAndStreamableHttpCompatibleServer")).await;

    // HTTP+SSE: the tool's log messages (no related request) arrive on the one SSE stream.
    let sse_url = server.url_at("/sse");
    let session = connect_http_sse_url(&server, &sse_url).await;
    assert_eq!(
        session.server_info().server_info.name,
        "backwards-compatible-server"
    );
    let mut notes = session.subscribe();
    let r = session
        .call_tool(
            "start-notification-stream",
            Some(json!({"interval": 10, "count": 3})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        r.text(),
        "Started sending periodic notifications every 10ms"
    );
    for i in 1..=3 {
        let data = wait_for(&mut notes, "notifications/message", |n| match n {
            ServerNotification::LoggingMessage(m) => Some(m.data.clone()),
            _ => None,
        })
        .await;
        assert!(
            data.as_str()
                .unwrap_or_default()
                .starts_with(&format!("Periodic notification #{i} at ")),
            "{data}"
        );
    }
    session.close().await;

    // The auto-detecting transport finds Streamable HTTP at /mcp.
    let memo = HttpFlavorMemo::default();
    let transport =
        HttpTransport::new(HttpServerConfig::new(server.url.clone()), memo.clone()).unwrap();
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("connects in time")
    .expect("connects");
    assert_eq!(memo.get(), Some(HttpFlavor::Streamable));
    let r = session
        .call_tool(
            "start-notification-stream",
            Some(json!({"interval": 1, "count": 1})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Started sending periodic notifications every 1ms");
    session.close().await;
}
