//! A forwarding proxy from the environment (`HTTP_PROXY`, with credentials) carries the
//! requests to an `http://` server: the request line names the absolute URL and the proxy's
//! credentials go in `Proxy-Authorization`.
//!
//! Alone in its test binary: it sets `HTTP_PROXY` for the whole process.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::{serve_http, ServerOptions};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

const DEADLINE: Duration = Duration::from_secs(20);

/// What the proxy saw first on each connection: the request line and `Proxy-Authorization`.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Relays one client connection: reads the first request's head, records it, connects to the
/// host its absolute URL names, and from then on copies bytes both ways.
async fn relay(mut client: TcpStream, seen: Seen) {
    let mut head = Vec::new();
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut chunk = [0u8; 4096];
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let request_line = text.lines().next().unwrap_or_default().to_owned();
    let authorization = text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("proxy-authorization")
            .then(|| value.trim().to_owned())
    });
    seen.lock()
        .unwrap()
        .push((request_line.clone(), authorization));
    let Some(authority) = request_line
        .split(' ')
        .nth(1)
        .and_then(|url| url.strip_prefix("http://"))
        .and_then(|rest| rest.split('/').next())
    else {
        return;
    };
    let Ok(mut upstream) = TcpStream::connect(authority).await else {
        return;
    };
    if upstream.write_all(&head).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

#[tokio::test]
async fn requests_go_through_the_proxy_the_environment_names() {
    let fixture = serve_http(ServerOptions::default(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the fixture listens");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let proxy = listener.local_addr().expect("address");
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let accept = tokio::spawn(async move {
        // Owned here: aborting the accept task ends every relay too.
        let mut relays = JoinSet::new();
        while let Ok((stream, _)) = listener.accept().await {
            relays.spawn(relay(stream, log.clone()));
        }
    });
    // Read when the transport is made; this binary has no other test.
    std::env::set_var("HTTP_PROXY", format!("http://user:pa%20ss@{proxy}"));
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");

    let transport = StreamableHttpTransport::new(HttpServerConfig::new(fixture.url())).unwrap();
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("connects in time")
    .expect("connects through the proxy");
    let result = session
        .call_tool(
            "echo",
            Some(json!({ "text": "proxied" })),
            RequestOptions::new().with_timeout(DEADLINE),
        )
        .await
        .expect("the call is answered");
    assert_eq!(result.text(), "proxied");

    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "nothing went through the proxy");
    for (request_line, authorization) in &seen {
        assert!(
            request_line.starts_with(&format!("POST {} HTTP/1.1", fixture.url()))
                || request_line.starts_with(&format!("GET {} HTTP/1.1", fixture.url())),
            "not an absolute-form request for the fixture: {request_line}"
        );
        // `user:pa ss`, Base64.
        assert_eq!(authorization.as_deref(), Some("Basic dXNlcjpwYSBzcw=="));
    }
    session.close().await;
    accept.abort();
    fixture.shutdown().await;
}
