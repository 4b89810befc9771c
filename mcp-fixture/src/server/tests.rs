//! The fixture core end to end, one message at a time: errors, `initialize`, a server→client
//! request abandoned.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::jsonrpc::{self, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};

async fn next(rx: &mut OutgoingReceiver) -> Value {
    let out = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("timely message")
        .expect("channel open");
    serde_json::from_str(&out.json).expect("valid json")
}

#[tokio::test]
async fn ping_and_errors_in_process() {
    let (server, mut rx) = FixtureServer::new(ServerOptions::default());
    server.handle_line(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(
        next(&mut rx).await,
        json!({"jsonrpc":"2.0","id":1,"result":{}})
    );

    server.handle_line(b"not json at all");
    let v = next(&mut rx).await;
    assert_eq!(v["error"]["code"], PARSE_ERROR);
    assert_eq!(v["id"], Value::Null);

    server.handle_line(b"[1,2]");
    assert_eq!(next(&mut rx).await["error"]["code"], INVALID_REQUEST);

    server.handle_line(br#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#);
    let v = next(&mut rx).await;
    assert_eq!(v["error"]["code"], INVALID_REQUEST);
    assert_eq!(v["id"], "x");

    server.handle_line(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
    assert_eq!(next(&mut rx).await["error"]["code"], INVALID_REQUEST);

    server.handle_line(br#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#);
    assert_eq!(next(&mut rx).await["error"]["code"], METHOD_NOT_FOUND);

    // Unknown notifications and blank lines produce nothing.
    server.handle_line(br#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#);
    server.handle_line(b"   \r");
    server.handle_line(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    assert_eq!(next(&mut rx).await["id"], 3);
}

#[tokio::test]
async fn initialized_notification_is_recorded() {
    let (server, mut rx) = FixtureServer::new(ServerOptions::default());
    server.handle_line(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    );
    let v = next(&mut rx).await;
    assert_eq!(v["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(server.negotiated_version().as_deref(), Some("2024-11-05"));
    assert!(!server.is_initialized());
    server.handle_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert!(server.is_initialized());
}

#[tokio::test]
async fn initialize_requires_protocol_version() {
    let (server, mut rx) = FixtureServer::new(ServerOptions::default());
    server.handle_line(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
    let v = next(&mut rx).await;
    assert_eq!(v["error"]["code"], jsonrpc::INVALID_PARAMS);
    assert!(v["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("protocolVersion")));
}

#[tokio::test]
async fn abandoned_client_request_is_cancelled_towards_client() {
    let options = ServerOptions {
        client_timeout_ms: 50,
        ..ServerOptions::default()
    };
    let (server, mut rx) = FixtureServer::new(options);
    server.handle_line(
        br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ask_roots","arguments":{}}}"#,
    );
    let request = next(&mut rx).await;
    assert_eq!(request["method"], "roots/list");
    assert_eq!(request["id"], "srv-1");
    let cancelled = next(&mut rx).await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], "srv-1");
    let response = next(&mut rx).await;
    assert_eq!(response["id"], 9);
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(server.pending_client_requests(), 0);
    assert_eq!(server.in_flight_requests(), 0);
}
