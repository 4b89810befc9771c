//! The gateway's Streamable HTTP server at the HTTP level, in front of a fixture process:
//! what each era's requests get (sessions, streams, JSON answers, resumption, DELETE), what is
//! refused (headers, sizes, unknown sessions, DNS rebinding), and, beyond loopback, a bearer
//! token over TLS.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_client::config::{ClientConfig, ServerConfig, TransportConfig};
use mcp_client::McpClient;
use mcp_gateway::http::{serve_http, tls_from_pem, BearerToken, HttpOptions, HttpServeError};
use mcp_gateway::{Gateway, GatewayOptions, Relay};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const DEADLINE: Duration = Duration::from_secs(20);

async fn gateway() -> Gateway {
    let fixture = ServerConfig::new(
        "files",
        TransportConfig::Stdio {
            command: mcp_testkit::fixture_server_bin()
                .to_string_lossy()
                .into_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
    );
    let config = ClientConfig {
        servers: vec![fixture],
        ..ClientConfig::default()
    };
    let relay = Relay::new();
    let handlers = relay.clone();
    let client = McpClient::builder(config)
        .handler_per_server(move |server| handlers.handler_for(server))
        .start()
        .await;
    Gateway::start(client, relay, GatewayOptions::default())
        .await
        .expect("the gateway starts")
}

/// One HTTP/1.1 exchange on a new connection: the status, the headers (lower-case names) and
/// the body as text (the whole of it: the connection closes after the answer).
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, BTreeMap<String, String>, String) {
    let mut request = format!("{method} /mcp HTTP/1.1\r\nconnection: close\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str("host: 127.0.0.1\r\n");
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut answer))
        .await
        .expect("an answer in time")
        .expect("readable");
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = match headers.get("transfer-encoding").map(String::as_str) {
        Some("chunked") => dechunk(body),
        _ => body.to_owned(),
    };
    (status, headers, body)
}

/// A chunked body's content.
fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    body
}

async fn post(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, BTreeMap<String, String>, String) {
    let mut all = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    let stream = TcpStream::connect(addr).await.unwrap();
    exchange(stream, "POST", &all, &body.to_string()).await
}

/// The JSON-RPC messages of an SSE body (or the JSON body itself).
fn messages(body: &str) -> Vec<Value> {
    let data: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| !d.trim().is_empty())
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    if data.is_empty() {
        serde_json::from_str(body).into_iter().collect()
    } else {
        data
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

#[tokio::test]
async fn a_session_lives_from_initialize_to_delete() {
    let gateway = gateway().await;
    let server = serve_http(
        &gateway,
        "127.0.0.1:0".parse().unwrap(),
        HttpOptions::default(),
    )
    .await
    .expect("serving");
    let addr = server.local_addr();

    let (status, headers, body) = post(addr, &[], initialize()).await;
    assert_eq!(status, 200, "{body}");
    let session = headers.get("mcp-session-id").expect("a session id").clone();
    assert_eq!(session.len(), 32);
    assert_eq!(headers["content-type"], "text/event-stream");
    assert!(body.starts_with("id: "), "a priming event first: {body}");
    assert_eq!(
        messages(&body)[0]["result"]["serverInfo"]["name"],
        "mcph-gateway"
    );

    let with_session = [("mcp-session-id", session.as_str())];
    let (status, _, _) = post(
        addr,
        &with_session,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"duration_ms": 20, "steps": 2},
                   "_meta": {"progressToken": "p"}}});
    let (status, _, body) = post(addr, &with_session, call).await;
    assert_eq!(status, 200);
    let seen = messages(&body);
    let methods: Vec<&str> = seen.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        ["notifications/progress", "notifications/progress"]
    );
    assert_eq!(
        seen.last().unwrap()["id"],
        2,
        "the answer last, under the client's id"
    );

    // The stream of that request can be replayed after its first event.
    let stream_id = body
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .and_then(|id| id.split_once('-'))
        .map(|(stream, _)| stream.to_owned())
        .expect("event ids");
    let last = format!("{stream_id}-1");
    let resumed = TcpStream::connect(addr).await.unwrap();
    let (status, _, body) = exchange(
        resumed,
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", session.as_str()),
            ("last-event-id", last.as_str()),
        ],
        "",
    )
    .await;
    assert_eq!(status, 200);
    let replayed = messages(&body);
    assert_eq!(
        replayed.len(),
        2,
        "the second progress and the answer: {body}"
    );
    assert_eq!(replayed[1]["id"], 2);

    let deleted = TcpStream::connect(addr).await.unwrap();
    let (status, _, _) = exchange(deleted, "DELETE", &with_session, "").await;
    assert_eq!(status, 200);
    let (status, _, _) = post(
        addr,
        &with_session,
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    )
    .await;
    assert_eq!(status, 404, "an ended session is unknown");
    server.shutdown().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}

#[tokio::test]
async fn the_stateless_era_shares_one_connection_and_answers_json() {
    let gateway = gateway().await;
    let server = serve_http(
        &gateway,
        "127.0.0.1:0".parse().unwrap(),
        HttpOptions::default(),
    )
    .await
    .expect("serving");
    let addr = server.local_addr();
    let modern = [("mcp-protocol-version", "2026-07-28")];
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    // Two clients using the same request id at once get their own answers.
    let (a, b) = tokio::join!(
        post(
            addr,
            &modern,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "first"}, "_meta": meta}})
        ),
        post(
            addr,
            &modern,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "second"}, "_meta": meta}})
        ),
    );
    for ((status, headers, body), text) in [(a, "first"), (b, "second")] {
        assert_eq!(status, 200, "{body}");
        assert_eq!(headers["content-type"], "application/json");
        assert!(!headers.contains_key("mcp-session-id"));
        let answer = &messages(&body)[0];
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["result"]["content"][0]["text"], text);
        assert_eq!(answer["result"]["resultType"], "complete");
    }
    let get = TcpStream::connect(addr).await.unwrap();
    let (status, _, _) = exchange(get, "GET", &[("accept", "text/event-stream")], "").await;
    assert_eq!(status, 405, "no standalone stream without a session");
    server.shutdown().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}

#[tokio::test]
async fn what_is_refused_and_why() {
    let gateway = gateway().await;
    let options = HttpOptions {
        max_body_bytes: 1024,
        ..HttpOptions::default()
    };
    let server = serve_http(&gateway, "127.0.0.1:0".parse().unwrap(), options)
        .await
        .expect("serving");
    let addr = server.local_addr();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});

    let stream = TcpStream::connect(addr).await.unwrap();
    let (status, _, _) = exchange(
        stream,
        "POST",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json"),
        ],
        &ping.to_string(),
    )
    .await;
    assert_eq!(status, 406, "Accept must cover both");
    let stream = TcpStream::connect(addr).await.unwrap();
    let (status, _, _) = exchange(
        stream,
        "POST",
        &[
            ("content-type", "text/plain"),
            ("accept", "application/json, text/event-stream"),
        ],
        &ping.to_string(),
    )
    .await;
    assert_eq!(status, 415);
    let big =
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(2000)}});
    let (status, _, body) = post(addr, &[], big).await;
    assert_eq!(status, 413, "{body}");
    let stream = TcpStream::connect(addr).await.unwrap();
    let (status, _, body) = exchange(
        stream,
        "POST",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        "not json",
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(messages(&body)[0]["error"]["code"], -32700);
    let (status, _, body) = post(addr, &[], ping.clone()).await;
    assert_eq!(status, 400, "no session and not initialize: {body}");
    let (status, _, _) = post(addr, &[("mcp-session-id", "0123")], ping.clone()).await;
    assert_eq!(status, 404);
    let (status, _, _) = post(
        addr,
        &[("mcp-protocol-version", "1999-01-01")],
        ping.clone(),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _, _) = post(addr, &[("host", "evil.example")], initialize()).await;
    assert_eq!(status, 403, "DNS rebinding: a foreign Host");
    let (status, _, _) = post(addr, &[("origin", "http://evil.example")], initialize()).await;
    assert_eq!(status, 403, "DNS rebinding: a foreign Origin");
    let (status, _, _) = post(addr, &[("origin", "http://localhost:3000")], initialize()).await;
    assert_eq!(status, 200, "a loopback origin is fine");
    server.shutdown().await;

    let refused = serve_http(
        &gateway,
        "192.0.2.1:0".parse().unwrap(),
        HttpOptions::default(),
    )
    .await
    .expect_err("beyond loopback without a token and TLS");
    assert!(matches!(refused, HttpServeError::Exposed { .. }));
    let said = refused.to_string();
    assert!(
        said.contains("bearer token") && said.contains("TLS"),
        "{said}"
    );
    gateway.shutdown();
    gateway.client().shutdown().await;
}

#[tokio::test]
async fn a_bearer_token_over_tls() {
    let gateway = gateway().await;
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("a self-signed certificate");
    let tls = tls_from_pem(
        certified.cert.pem().as_bytes(),
        certified.signing_key.serialize_pem().as_bytes(),
    )
    .expect("a TLS configuration");
    assert!(tls_from_pem(b"not pem", b"not pem").is_err());
    let token = "s3cret-token-0707";
    let options = HttpOptions {
        bearer_token: BearerToken::new(token),
        tls: Some(tls),
        ..HttpOptions::default()
    };
    assert!(
        !format!("{options:?}").contains(token),
        "the token is never shown"
    );
    let server = serve_http(&gateway, "127.0.0.1:0".parse().unwrap(), options)
        .await
        .expect("serving");
    let addr = server.local_addr();

    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).expect("a root");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let tls_stream = || async {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        connector.connect(name, tcp).await.expect("a TLS handshake")
    };
    let body = initialize().to_string();
    let json_headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let (status, headers, _) = exchange(tls_stream().await, "POST", &json_headers, &body).await;
    assert_eq!(status, 401);
    assert!(headers["www-authenticate"].starts_with("Bearer"));
    let wrong = [
        json_headers[0],
        json_headers[1],
        ("authorization", "Bearer nope"),
    ];
    let (status, _, _) = exchange(tls_stream().await, "POST", &wrong, &body).await;
    assert_eq!(status, 401);
    let bearer = format!("Bearer {token}");
    let right = [
        json_headers[0],
        json_headers[1],
        ("authorization", bearer.as_str()),
    ];
    let (status, _, body) = exchange(tls_stream().await, "POST", &right, &body).await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains(token));
    // Plain HTTP on the TLS port is not served.
    let plain = TcpStream::connect(addr).await.unwrap();
    let mut plain = plain;
    plain
        .write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(DEADLINE, plain.read_to_end(&mut answer)).await;
    assert!(!String::from_utf8_lossy(&answer).contains("200 OK"));
    server.shutdown().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}

/// Sends a request on a new connection and returns the stream once its answer has begun (the
/// head and the first body bytes read), with what was read so far.
async fn start_request(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &Value,
) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let mut request = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n".to_owned();
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("data:") {
        let n = tokio::time::timeout(DEADLINE, stream.read(&mut buffer))
            .await
            .expect("the answer starts in time")
            .expect("readable");
        assert_ne!(n, 0, "closed early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buffer[..n]);
    }
    (stream, String::from_utf8_lossy(&seen).into_owned())
}

#[tokio::test]
async fn a_session_request_streams_at_once_and_a_cancel_ends_it() {
    let gateway = gateway().await;
    let options = HttpOptions {
        max_in_flight: 1,
        ..HttpOptions::default()
    };
    let server = serve_http(&gateway, "127.0.0.1:0".parse().unwrap(), options)
        .await
        .expect("serving");
    let addr = server.local_addr();
    let (_, headers, _) = post(addr, &[], initialize()).await;
    let session = headers["mcp-session-id"].clone();
    let with_session = [("mcp-session-id", session.as_str())];

    // A long call: its stream opens with the priming event before anything else happens.
    let slow = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"duration_ms": 60000, "steps": 0}}});
    let (mut running, opening) = start_request(addr, &with_session, &slow).await;
    assert!(opening.contains("retry: "), "the priming event: {opening}");
    let (status, _, _) = post(
        addr,
        &with_session,
        json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}),
    )
    .await;
    assert_eq!(status, 429, "the one slot is taken");

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "changed my mind"}});
    let (status, _, _) = post(addr, &with_session, cancel).await;
    assert_eq!(status, 202);
    let mut rest = Vec::new();
    tokio::time::timeout(DEADLINE, running.read_to_end(&mut rest))
        .await
        .expect("the cancelled request's stream ends")
        .expect("readable");
    assert!(
        !String::from_utf8_lossy(&rest).contains("\"id\":7"),
        "no answer to a cancelled request"
    );
    let (status, _, body) = post(
        addr,
        &with_session,
        json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
    )
    .await;
    assert_eq!(status, 200, "the slot is free again: {body}");
    server.shutdown().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}

#[tokio::test]
async fn a_stateless_client_cannot_cancel_another_clients_request() {
    let gateway = gateway().await;
    let server = serve_http(
        &gateway,
        "127.0.0.1:0".parse().unwrap(),
        HttpOptions::default(),
    )
    .await
    .expect("serving");
    let addr = server.local_addr();
    let modern = [("mcp-protocol-version", "2026-07-28")];
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let slow = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"duration_ms": 1500, "steps": 0}, "_meta": meta}});
    let call = tokio::spawn(async move { post(addr, &modern, slow).await });
    // Another client names the hub's first ids.
    for id in ["h1", "h2", "h3"] {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id}});
        let (status, _, _) = post(addr, &modern, cancel).await;
        assert_eq!(status, 202);
    }
    let (status, _, body) = tokio::time::timeout(DEADLINE, call)
        .await
        .expect("the call ends in time")
        .expect("joined");
    assert_eq!(status, 200);
    let answer = messages(&body).pop().expect("an answer");
    assert_eq!(answer["id"], 1);
    assert!(answer.get("result").is_some(), "not cancelled: {answer}");
    server.shutdown().await;
    gateway.shutdown();
    gateway.client().shutdown().await;
}
