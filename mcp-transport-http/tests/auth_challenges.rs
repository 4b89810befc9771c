//! 401/403 answers reach the `AuthProvider` on both HTTP transports: the provider hears the
//! challenge, and the request is sent once more with the new credentials.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::{
    AuthChallenge, AuthProvider, AuthTarget, AuthorizationValue, ChallengeOutcome, ClientSession,
    Credentials, Error, McpServiceExt, RequestOptions, SessionOptions, Transport,
};
use mcp_testkit::http::{serve_http, HttpFixture};
use mcp_testkit::options::{parse_args, CliCommand};
use mcp_transport_http::{HttpServerConfig, LegacySseTransport, StreamableHttpTransport};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);
const TOKEN: &str = "fixture-token-1";

async fn fixture() -> HttpFixture {
    let options = match parse_args(["--http-bearer".to_owned(), TOKEN.to_owned()]) {
        Ok(CliCommand::Run(options)) => options,
        _ => panic!("bad fixture flags"),
    };
    serve_http(options, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the fixture listens")
}

/// Hands out a stale token on one chosen call, then the right one again once challenged.
struct OneStaleToken {
    calls: AtomicUsize,
    stale_on_call: usize,
    challenges: Mutex<Vec<AuthChallenge>>,
}

impl OneStaleToken {
    fn new(stale_on_call: usize) -> Arc<OneStaleToken> {
        Arc::new(OneStaleToken {
            calls: AtomicUsize::new(0),
            stale_on_call,
            challenges: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl AuthProvider for OneStaleToken {
    async fn authorization(&self, _target: &AuthTarget<'_>) -> Result<Option<Credentials>, Error> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let token = if call == self.stale_on_call {
            "stale-token"
        } else {
            TOKEN
        };
        Ok(Some(AuthorizationValue::bearer(token).into()))
    }

    async fn on_challenge(&self, challenge: &AuthChallenge) -> Result<ChallengeOutcome, Error> {
        self.challenges.lock().unwrap().push(challenge.clone());
        Ok(ChallengeOutcome::Retry)
    }
}

async fn works(transport: impl Transport) {
    let session = tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, (), SessionOptions::default()),
    )
    .await
    .expect("connects in time")
    .expect("connects with the refreshed credentials");
    let r = session
        .call_tool("echo", Some(json!({"text": "in"})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "in");
    session.close().await;
}

fn assert_challenged(provider: &OneStaleToken) {
    let challenges = provider.challenges.lock().unwrap();
    assert_eq!(challenges.len(), 1, "{challenges:?}");
    assert_eq!(challenges[0].status, 401);
    assert_eq!(
        challenges[0].www_authenticate.as_deref(),
        Some("Bearer realm=\"fixture\"")
    );
}

#[tokio::test]
async fn legacy_sse_tells_the_provider_about_a_401_on_a_message_post() {
    let server = fixture().await;
    // Call 0 opens the SSE stream; call 1 is the first POST (initialize).
    let provider = OneStaleToken::new(1);
    let config = HttpServerConfig::new(server.sse_url()).auth(provider.clone());
    let transport = LegacySseTransport::connect(config).await.expect("opens");
    works(transport).await;
    assert_challenged(&provider);
}

#[tokio::test]
async fn legacy_sse_tells_the_provider_about_a_401_on_the_stream() {
    let server = fixture().await;
    let provider = OneStaleToken::new(0);
    let config = HttpServerConfig::new(server.sse_url()).auth(provider.clone());
    let transport = LegacySseTransport::connect(config)
        .await
        .expect("opens after the retry");
    works(transport).await;
    assert_challenged(&provider);
}

#[tokio::test]
async fn streamable_http_tells_the_provider_about_a_401() {
    let server = fixture().await;
    let provider = OneStaleToken::new(0);
    let config = HttpServerConfig::new(server.url()).auth(provider.clone());
    works(StreamableHttpTransport::new(config).unwrap()).await;
    assert_challenged(&provider);
}
