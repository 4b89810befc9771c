//! Redirects are followed as reqwest and browsers follow them: a server behind a `307`
//! (here: every request to a loopback redirector is sent on to the fixture) works as if
//! reached directly, and a redirect loop fails the request with a clear error instead of
//! running forever.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::{ClientSession, McpServiceExt, RequestOptions, SessionOptions};
use mcp_testkit::{serve_http, ServerOptions};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

const DEADLINE: Duration = Duration::from_secs(20);

/// A server answering every request with `307 Temporary Redirect` to one location; records
/// each request line. Stops (with every connection) when dropped.
struct Redirector {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
    accept: JoinHandle<()>,
}

impl Drop for Redirector {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Redirector {
    /// Redirects to `location`, or to itself when `None`.
    async fn start(location: Option<String>) -> Redirector {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
        let location = location.unwrap_or_else(|| url.clone());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let accept = tokio::spawn(async move {
            // Owned here: aborting the accept task ends every connection too.
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                connections.spawn(redirect_all(stream, location.clone(), log.clone()));
            }
        });
        Redirector { url, seen, accept }
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Answers each request on the connection (head, then `Content-Length` bytes of body).
async fn redirect_all(mut stream: TcpStream, location: String, seen: Arc<Mutex<Vec<String>>>) {
    let mut buffer = Vec::new();
    loop {
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        let body_length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buffer.len() < head_end + body_length {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        buffer.drain(..head_end + body_length);
        seen.lock()
            .unwrap()
            .push(head.lines().next().unwrap_or_default().to_owned());
        let answer = format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n"
        );
        if stream.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn a_server_behind_a_temporary_redirect_works_as_if_reached_directly() {
    let fixture = serve_http(ServerOptions::default(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the fixture listens");
    let redirector = Redirector::start(Some(fixture.url())).await;
    let transport =
        StreamableHttpTransport::new(HttpServerConfig::new(redirector.url.clone())).unwrap();
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("connects in time")
    .expect("connects through the redirect");
    let result = session
        .call_tool(
            "echo",
            Some(json!({ "text": "redirected" })),
            RequestOptions::new().with_timeout(DEADLINE),
        )
        .await
        .expect("the call is answered");
    assert_eq!(result.text(), "redirected");
    let requests = redirector.requests();
    // The handshake and the call (POSTs, body and method kept) went to the redirector first.
    assert!(
        requests
            .iter()
            .filter(|r| r.starts_with("POST /mcp "))
            .count()
            >= 2,
        "{requests:?}"
    );
    session.close().await;
    fixture.shutdown().await;
}

#[tokio::test]
async fn a_redirect_loop_fails_the_request_clearly() {
    let redirector = Redirector::start(None).await;
    let transport =
        StreamableHttpTransport::new(HttpServerConfig::new(redirector.url.clone())).unwrap();
    let error = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("gives up in time")
    .expect_err("a loop never answers");
    assert!(
        error.message().contains("redirected more than 10 times"),
        "{error}"
    );
    // The first request and ten redirects, per request the handshake made.
    let requests = redirector.requests();
    assert_eq!(requests.len() % 11, 0, "{requests:?}");
}
