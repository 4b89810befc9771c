//! Redirects: a server behind a `307` (here: every request to a loopback redirector is sent on
//! to the fixture) works as if reached directly; a redirect loop fails the request with a clear
//! error instead of running forever; a POST redirected with 301/302/303 (which would lose its
//! body) fails at once as never sent; and another origin (another port) gets neither the
//! configured headers nor credentials, nor is its refusal taken for the server's challenge.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::{
    Error, McpServiceExt, Message, RequestOptions, Transport, TransportErrorKind, TransportSender,
};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::{serve_http, ServerOptions};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use mcp_wire::{
    AuthChallenge, AuthProvider, AuthTarget, AuthorizationValue, ChallengeOutcome, Credentials,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

const DEADLINE: Duration = Duration::from_secs(20);

/// A loopback server answering every request with one fixed response; records each request's
/// head. Stops (with every connection) when dropped.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
    accept: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Server {
    /// Answers with `answer(its own URL)`.
    async fn start(answer: impl FnOnce(&str) -> String) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
        let answer = answer(&url);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let accept = tokio::spawn(async move {
            // Owned here: aborting the accept task ends every connection too.
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                connections.spawn(answer_all(stream, answer.clone(), log.clone()));
            }
        });
        Server { url, seen, accept }
    }

    /// Redirects with `307 Temporary Redirect` to `location`, or to itself when `None`.
    async fn redirector(location: Option<String>) -> Server {
        Server::redirecting(307, location).await
    }

    async fn redirecting(status: u16, location: Option<String>) -> Server {
        Server::start(|own| {
            let location = location.unwrap_or_else(|| own.to_owned());
            format!(
                "HTTP/1.1 {status} Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n"
            )
        })
        .await
    }

    /// The request lines.
    fn requests(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .map(|head| head.lines().next().unwrap_or_default().to_owned())
            .collect()
    }

    /// The whole heads, lowercased.
    fn heads(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.iter().map(|head| head.to_ascii_lowercase()).collect()
    }
}

/// Answers each request on the connection (head, then `Content-Length` bytes of body).
async fn answer_all(mut stream: TcpStream, answer: String, seen: Arc<Mutex<Vec<String>>>) {
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
        seen.lock().unwrap().push(head);
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
    let redirector = Server::redirector(Some(fixture.url())).await;
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
    let redirector = Server::redirector(None).await;
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

/// Hands out one token and records what the exchange tells it.
#[derive(Default)]
struct RecordingProvider {
    asked: Mutex<Vec<String>>,
    challenges: Mutex<Vec<AuthChallenge>>,
    nonces: Mutex<Vec<String>>,
}

#[async_trait]
impl AuthProvider for RecordingProvider {
    async fn authorization(&self, target: &AuthTarget<'_>) -> Result<Option<Credentials>, Error> {
        self.asked.lock().unwrap().push(target.url.to_owned());
        Ok(Some(AuthorizationValue::bearer("origin-token").into()))
    }

    async fn on_challenge(&self, challenge: &AuthChallenge) -> Result<ChallengeOutcome, Error> {
        self.challenges.lock().unwrap().push(challenge.clone());
        Ok(ChallengeOutcome::Retry)
    }

    fn accept_nonce(&self, nonce: &str) {
        self.nonces.lock().unwrap().push(nonce.to_owned());
    }
}

/// A transport to `url` with an API key header, user info and a provider's token.
fn credentialed(url: &str, provider: &Arc<RecordingProvider>) -> StreamableHttpTransport {
    let url = url.replacen("http://", "http://user:url-password@", 1);
    let config = HttpServerConfig::new(url)
        .header("X-API-Key", "configured-key")
        .auth(provider.clone());
    StreamableHttpTransport::new(config).expect("a valid configuration")
}

/// Sends a ping with `transport` (no session needed) and returns the error it fails with.
async fn failed_ping(transport: StreamableHttpTransport) -> mcp_core::TransportError {
    let (sender, _receiver) = transport.split();
    let ping = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
    let error = tokio::time::timeout(DEADLINE, sender.send(ping))
        .await
        .expect("the send ends in time")
        .expect_err("the ping fails");
    let _ = tokio::time::timeout(DEADLINE, sender.close()).await;
    error
}

#[tokio::test]
async fn another_origin_gets_neither_configured_headers_nor_credentials() {
    let other = Server::start(|_| {
        "HTTP/1.1 404 Not Found\r\ndpop-nonce: other-origin-nonce\r\ncontent-length: 0\r\n\r\n"
            .to_owned()
    })
    .await;
    // Another port on the same host is another origin.
    let redirector = Server::redirector(Some(format!("{}?k=1", other.url))).await;
    let provider = Arc::new(RecordingProvider::default());
    let error = failed_ping(credentialed(&redirector.url, &provider)).await;
    assert!(error.message().contains("HTTP 404"), "{error}");
    // The origin got everything it was configured with.
    let first = &redirector.heads()[0];
    assert!(first.contains("x-api-key: configured-key"), "{first}");
    assert!(
        first.contains("authorization: bearer origin-token"),
        "{first}"
    );
    let heads = other.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let head = &heads[0];
    assert!(head.starts_with("post /mcp?k=1 "), "{head}");
    assert!(head.contains("content-type: application/json"), "{head}");
    assert!(head.contains("accept: "), "{head}");
    for leaked in [
        "x-api-key",
        "configured-key",
        "authorization",
        "origin-token",
        "dpop",
    ] {
        assert!(
            !head.contains(leaked),
            "{leaked} reached another origin: {head}"
        );
    }
    // Credentials were asked for the origin's URL only, and its nonce was not taken.
    assert_eq!(provider.asked.lock().unwrap().len(), 1);
    assert!(provider.nonces.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_refusal_from_another_origin_is_not_a_challenge_for_the_provider() {
    let other = Server::start(|own| {
        format!(
            "HTTP/1.1 401 Unauthorized\r\n\
             www-authenticate: Bearer resource_metadata=\"{own}/.well-known/oauth-protected-resource\"\r\n\
             dpop-nonce: other-origin-nonce\r\ncontent-length: 0\r\n\r\n"
        )
    })
    .await;
    let redirector = Server::redirector(Some(format!("{}?k=secret-query", other.url))).await;
    let provider = Arc::new(RecordingProvider::default());
    let error = failed_ping(credentialed(&redirector.url, &provider)).await;
    assert_eq!(error.kind(), TransportErrorKind::Unauthorized, "{error}");
    assert!(error.message().contains(&other.url), "{error}");
    assert!(error.message().contains("HTTP 401"), "{error}");
    assert!(!error.message().contains("secret-query"), "{error}");
    assert!(!error.message().contains("url-password"), "{error}");
    assert!(provider.challenges.lock().unwrap().is_empty());
    assert!(provider.nonces.lock().unwrap().is_empty());
    // Not retried: one request to each.
    assert_eq!(redirector.requests().len(), 1);
    assert_eq!(other.requests().len(), 1);
}

#[tokio::test]
async fn a_post_redirected_with_moved_found_or_see_other_fails_at_once_as_possibly_run() {
    let other =
        Server::start(|_| "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".to_owned()).await;
    for status in [301, 302, 303] {
        let redirector =
            Server::redirecting(status, Some(format!("{}?k=secret-query", other.url))).await;
        let transport = StreamableHttpTransport::new(HttpServerConfig::new(redirector.url.clone()))
            .expect("a valid configuration");
        let error = failed_ping(transport).await;
        let expected = format!(
            "the server redirected a POST with HTTP {status} to {}; configure the final URL",
            other.url
        );
        assert!(error.message().contains(&expected), "{error}");
        // The server answered the POST with a redirect: it may have acted on it.
        assert!(error.may_have_been_delivered(), "{error}");
        assert_eq!(redirector.requests().len(), 1);
    }
    assert!(other.requests().is_empty(), "{:?}", other.requests());
}
