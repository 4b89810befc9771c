//! The WebSocket fixture seen by a raw tungstenite client: the upgrade's checks, frames,
//! sessions, refusals, `crash`, and cancellation when a connection ends.
use super::*;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Response as Upgraded;

type Client = WebSocketStream<TcpStream>;

const DEADLINE: Duration = Duration::from_secs(10);

async fn fixture(options: ServerOptions) -> WsFixture {
    serve_ws(options, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serves")
}

/// Upgrades to `url`, offering `subprotocol` and sending `authorization`.
async fn upgrade(
    url: &str,
    subprotocol: Option<&str>,
    authorization: Option<&str>,
) -> Result<(Client, Upgraded), WsError> {
    let mut request = url.into_client_request()?;
    if let Some(protocol) = subprotocol {
        request.headers_mut().insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_str(protocol).expect("a header value"),
        );
    }
    if let Some(value) = authorization {
        request.headers_mut().insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(value).expect("a header value"),
        );
    }
    let host = request
        .uri()
        .authority()
        .expect("a host")
        .as_str()
        .to_owned();
    let tcp = TcpStream::connect(host).await?;
    tokio::time::timeout(DEADLINE, tokio_tungstenite::client_async(request, tcp))
        .await
        .expect("the upgrade finished in time")
}

async fn connect(fixture: &WsFixture) -> Client {
    upgrade(&fixture.url(), Some(SUBPROTOCOL), None)
        .await
        .expect("upgrades")
        .0
}

/// The next frame, under the deadline.
async fn next(client: &mut Client) -> Option<Result<Message, WsError>> {
    tokio::time::timeout(DEADLINE, client.next())
        .await
        .expect("a frame in time")
}

async fn next_json(client: &mut Client) -> serde_json::Value {
    match next(client).await {
        Some(Ok(Message::Text(text))) => serde_json::from_str(&text).expect("JSON"),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

fn status(error: WsError) -> u16 {
    match error {
        WsError::Http(response) => response.status().as_u16(),
        other => panic!("expected an HTTP refusal, got {other}"),
    }
}

#[tokio::test]
async fn the_upgrade_needs_the_path_and_the_mcp_subprotocol() {
    let fixture = fixture(ServerOptions::default()).await;
    let wrong_path = fixture.url().replace("/mcp", "/other");
    let e = upgrade(&wrong_path, Some(SUBPROTOCOL), None)
        .await
        .unwrap_err();
    assert_eq!(status(e), 404);
    let e = upgrade(&fixture.url(), None, None).await.unwrap_err();
    assert_eq!(status(e), 400);
    let (_client, response) = upgrade(&fixture.url(), Some("graphql-ws, mcp"), None)
        .await
        .expect("upgrades");
    assert_eq!(
        response.headers().get(header::SEC_WEBSOCKET_PROTOCOL),
        Some(&HeaderValue::from_static("mcp"))
    );
    assert_eq!(fixture.connection_count(), 1);
}

#[tokio::test]
async fn the_bearer_token_is_checked_on_the_upgrade() {
    let options = ServerOptions {
        http_bearer: Some("t0ken".into()),
        ..ServerOptions::default()
    };
    let fixture = fixture(options).await;
    for wrong in [None, Some("Bearer other")] {
        match upgrade(&fixture.url(), Some(SUBPROTOCOL), wrong).await {
            Err(WsError::Http(response)) => {
                assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
                assert_eq!(
                    response.headers().get(header::WWW_AUTHENTICATE),
                    Some(&HeaderValue::from_static("Bearer realm=\"fixture\""))
                );
            }
            other => panic!("expected 401, got {other:?}"),
        }
    }
    upgrade(&fixture.url(), Some(SUBPROTOCOL), Some("Bearer t0ken"))
        .await
        .expect("the right token opens it");
}

#[tokio::test]
async fn messages_are_text_frames_and_each_connection_is_a_session() {
    let fixture = fixture(ServerOptions::default()).await;
    let mut a = connect(&fixture).await;
    let mut b = connect(&fixture).await;
    a.send(Message::text(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#))
        .await
        .unwrap();
    let answer = next_json(&mut a).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
    a.send(Message::text(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger_list_changed"}}"#))
        .await
        .unwrap();
    let first = next_json(&mut a).await;
    let second = next_json(&mut a).await;
    let methods = [&first["method"], &second["method"]];
    assert!(methods.contains(&&serde_json::json!("notifications/tools/list_changed")));
    // The other connection's server is untouched: no dynamic tool there.
    b.send(Message::text(
        r#"{"jsonrpc":"2.0","id":"x","method":"tools/list"}"#,
    ))
    .await
    .unwrap();
    let tools = next_json(&mut b).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.contains(&crate::tools::DYNAMIC_TOOL), "{names:?}");
    a.send(Message::text("not json")).await.unwrap();
    assert_eq!(next_json(&mut a).await["error"]["code"], -32700);
}

#[tokio::test]
async fn instance_and_extra_tools_are_served() {
    let options = ServerOptions {
        instance: Some("ws-1".into()),
        extra_tools: vec!["beta".into()],
        ..ServerOptions::default()
    };
    let fixture = fixture(options).await;
    let mut client = connect(&fixture).await;
    client.send(Message::text(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#))
        .await
        .unwrap();
    assert!(next_json(&mut client).await["result"].is_object());
    client
        .send(Message::text(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        ))
        .await
        .unwrap();
    let tools = next_json(&mut client).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names[crate::tools::TOOL_NAMES.len()..],
        [crate::tools::INSTANCE_TOOL, "beta"]
    );
    client
        .send(Message::text(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"instance"}}"#,
        ))
        .await
        .unwrap();
    assert_eq!(
        next_json(&mut client).await["result"]["content"][0]["text"],
        "ws-1"
    );
    client.send(Message::text(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"beta","arguments":{"text":"t"}}}"#))
        .await
        .unwrap();
    assert_eq!(
        next_json(&mut client).await["result"]["content"][0]["text"],
        "beta: t"
    );
}

#[tokio::test]
async fn a_binary_frame_is_refused_with_1003() {
    let fixture = fixture(ServerOptions::default()).await;
    let mut client = connect(&fixture).await;
    client.send(Message::binary(vec![1, 2, 3])).await.unwrap();
    match next(&mut client).await {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Unsupported),
        other => panic!("expected close 1003, got {other:?}"),
    }
}

#[tokio::test]
async fn crash_drops_the_connection_without_a_close_frame() {
    let fixture = fixture(ServerOptions::default()).await;
    let mut client = connect(&fixture).await;
    client
        .send(Message::text(
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"crash"}}"#,
        ))
        .await
        .unwrap();
    match next(&mut client).await {
        Some(Err(WsError::Protocol(
            tokio_tungstenite::tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
        )))
        | Some(Err(WsError::Io(_))) => {}
        other => panic!("expected the connection to drop, got {other:?}"),
    }
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while fixture.connection_count() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the connection never ended"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The fixture (the process) goes on.
    connect(&fixture).await;
}

#[tokio::test]
async fn requests_still_running_are_cancelled_when_the_connection_ends() {
    let log = std::env::temp_dir().join(format!(
        "mcp-testkit-ws-cancel-{}-{}.jsonl",
        std::process::id(),
        crate::http::random_hex()
    ));
    let options = ServerOptions {
        event_log: Some(log.clone()),
        ..ServerOptions::default()
    };
    let fixture = fixture(options).await;
    let mut client = connect(&fixture).await;
    client
        .send(Message::text(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{"duration_ms":600000}}}"#))
        .await
        .unwrap();
    crate::event_log::wait_for_events(&log, DEADLINE, "the slow call started", |events| {
        events.iter().any(|e| e["event"] == "call")
    })
    .await;
    drop(client);
    crate::event_log::wait_for_events(&log, DEADLINE, "the slow call was cancelled", |events| {
        events
            .iter()
            .any(|e| e["event"] == "cancelled" && e["id"] == 5)
    })
    .await;
    let _ = std::fs::remove_file(&log);
}

#[test]
fn messages_are_peeked_for_crash_and_request_ids() {
    assert!(matches!(
        peek(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"crash"}}"#),
        Peeked::Crash
    ));
    match peek(br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"crash"}}}"#) {
        Peeked::Request(key) => assert_eq!(key, "\"a\""),
        _ => panic!("a request"),
    }
    assert!(matches!(
        peek(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        Peeked::Other
    ));
    assert!(matches!(peek(b"not json"), Peeked::Other));
    assert_eq!(
        response_key(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).as_deref(),
        Some("7")
    );
    assert_eq!(
        response_key(r#"{"jsonrpc":"2.0","id":null,"error":{}}"#),
        None
    );
}

#[tokio::test]
async fn refuses_non_loopback() {
    let err = serve_ws(ServerOptions::default(), "0.0.0.0:0".parse().expect("addr"))
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}
