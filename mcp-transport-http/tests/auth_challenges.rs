//! 401/403 answers reach the `AuthProvider` on both HTTP transports: the provider hears the
//! challenge, and the request is sent once more with the new credentials.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::{Error, McpServiceExt, RequestOptions, Transport};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::http::{serve_http, HttpFixture};
use mcp_testkit::options::{parse_args, CliCommand};
use mcp_transport_http::{HttpServerConfig, HttpSseTransport, StreamableHttpTransport};
use mcp_wire::{
    AuthChallenge, AuthProvider, AuthTarget, AuthorizationValue, ChallengeOutcome, Credentials,
};
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
async fn http_sse_tells_the_provider_about_a_401_on_a_message_post() {
    let server = fixture().await;
    // Call 0 opens the SSE stream; call 1 is the first POST (initialize).
    let provider = OneStaleToken::new(1);
    let config = HttpServerConfig::new(server.sse_url()).auth(provider.clone());
    let transport = HttpSseTransport::connect(config).await.expect("opens");
    works(transport).await;
    assert_challenged(&provider);
}

#[tokio::test]
async fn http_sse_tells_the_provider_about_a_401_on_the_stream() {
    let server = fixture().await;
    let provider = OneStaleToken::new(0);
    let config = HttpServerConfig::new(server.sse_url()).auth(provider.clone());
    let transport = HttpSseTransport::connect(config)
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

/// Stale credentials for the first `stale` requests; each challenge is answered with the next
/// outcome of `outcomes` (the last one repeats).
struct Scripted {
    requests: AtomicUsize,
    stale: usize,
    outcomes: Vec<ChallengeOutcome>,
    challenges: AtomicUsize,
    /// The method and URL of every request credentials were asked for.
    targets: Mutex<Vec<(String, String)>>,
}

#[async_trait]
impl AuthProvider for Scripted {
    async fn authorization(&self, target: &AuthTarget<'_>) -> Result<Option<Credentials>, Error> {
        self.targets
            .lock()
            .unwrap()
            .push((target.method.to_owned(), target.url.to_owned()));
        let request = self.requests.fetch_add(1, Ordering::SeqCst);
        let token = if request < self.stale {
            "stale-token"
        } else {
            TOKEN
        };
        Ok(Some(AuthorizationValue::bearer(token).into()))
    }

    async fn on_challenge(&self, _challenge: &AuthChallenge) -> Result<ChallengeOutcome, Error> {
        let n = self.challenges.fetch_add(1, Ordering::SeqCst);
        Ok(self.outcomes[n.min(self.outcomes.len() - 1)])
    }
}

fn scripted(stale: usize, outcomes: &[ChallengeOutcome]) -> Arc<Scripted> {
    Arc::new(Scripted {
        requests: AtomicUsize::new(0),
        stale,
        outcomes: outcomes.to_vec(),
        challenges: AtomicUsize::new(0),
        targets: Mutex::new(Vec::new()),
    })
}

#[tokio::test]
async fn a_nonce_retry_comes_on_top_of_one_credentials_retry() {
    let server = fixture().await;
    // The first attempt lacks the nonce, its retry carries stale credentials, the third
    // works. (The other order — credentials first, then a nonce — needs a refusal carrying a
    // `DPoP-Nonce`, which the DPoP fixture's tests in mcp-auth cover.)
    let provider = scripted(
        2,
        &[ChallengeOutcome::RetryWithNonce, ChallengeOutcome::Retry],
    );
    let config = HttpServerConfig::new(server.url()).auth(provider.clone());
    works(StreamableHttpTransport::new(config).unwrap()).await;
    assert_eq!(provider.challenges.load(Ordering::SeqCst), 2);
    // Every attempt asked for credentials for what it was about to send.
    let targets = provider.targets.lock().unwrap();
    for target in &targets[..3] {
        assert_eq!(target, &("POST".to_owned(), server.url()), "{targets:?}");
    }
}

#[tokio::test]
async fn each_kind_of_retry_happens_at_most_once_per_request() {
    for outcome in [ChallengeOutcome::Retry, ChallengeOutcome::RetryWithNonce] {
        let server = fixture().await;
        let provider = scripted(usize::MAX, &[outcome]);
        let config = HttpServerConfig::new(server.url()).auth(provider.clone());
        let connected = tokio::time::timeout(
            DEADLINE,
            ClientSession::connect(
                StreamableHttpTransport::new(config).unwrap(),
                (),
                SessionOptions::default().with_era(mcp_core::Era::Legacy),
            ),
        )
        .await
        .expect("gives up in time");
        let e = connected.expect_err("never authorized");
        assert_eq!(e.kind(), mcp_core::ErrorKind::Auth, "{outcome:?}: {e}");
        // The request and its one retry of this kind. After a retry with new credentials the
        // provider is not asked again (the refusal carries no nonce: nothing could be retried,
        // and asking would only cost a refresh or a login); after a nonce retry it is, since
        // new credentials may still help.
        assert_eq!(provider.requests.load(Ordering::SeqCst), 2, "{outcome:?}");
        let asked = match outcome {
            ChallengeOutcome::Retry => 1,
            _ => 2,
        };
        assert_eq!(
            provider.challenges.load(Ordering::SeqCst),
            asked,
            "{outcome:?}"
        );
    }
}
