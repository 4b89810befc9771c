//! Credentials on the WebSocket upgrade against the fixture under `--http-bearer` (401 on an
//! upgrade without `Authorization: Bearer <token>`): refused without a provider, accepted
//! with one, one retry when the provider has new credentials, none when it gives up.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::*;
use mcp_core::{McpServiceExt, RequestOptions, TransportErrorKind};
use mcp_session::SessionOptions;
use mcp_transport_ws::WebSocketTransport;
use mcp_wire::{
    AuthChallenge, AuthProvider, AuthTarget, AuthorizationValue, ChallengeOutcome, Credentials,
    StaticBearer,
};

const TOKEN: &str = "s3cret-token";

#[tokio::test]
async fn an_upgrade_without_credentials_is_refused_as_unauthorized() {
    let fixture = fixture(&["--http-bearer", TOKEN]).await;
    let e = WebSocketTransport::connect(config(&fixture.url()))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), TransportErrorKind::Unauthorized, "{e}");
    assert!(e.is_fatal());
    assert!(!e.may_have_been_delivered());
    assert!(e.message().contains("HTTP 401"), "{e}");
    assert!(e.message().contains("Bearer realm=\"fixture\""), "{e}");
    let error = mcp_core::Error::from(e);
    assert_eq!(error.kind(), mcp_core::ErrorKind::Auth);
}

#[tokio::test]
async fn a_static_token_or_header_opens_the_socket_and_never_shows() {
    let fixture = fixture(&["--http-bearer", TOKEN]).await;
    let with_provider = config(&fixture.url()).auth(Arc::new(StaticBearer::new(TOKEN)));
    let session = connect_with(with_provider.clone(), (), SessionOptions::default()).await;
    session.ping(RequestOptions::new()).await.unwrap();
    session.close().await;

    let with_header = config(&fixture.url()).header("Authorization", format!("Bearer {TOKEN}"));
    assert!(!format!("{with_header:?}").contains(TOKEN));
    assert!(!format!("{with_provider:?}").contains(TOKEN));
    let session = connect_with(with_header, (), SessionOptions::default()).await;
    session.ping(RequestOptions::new()).await.unwrap();
    session.close().await;

    let wrong = config(&fixture.url()).auth(Arc::new(StaticBearer::new("wrong")));
    let e = WebSocketTransport::connect(wrong).await.unwrap_err();
    assert_eq!(e.kind(), TransportErrorKind::Unauthorized);
    assert!(
        !e.message().contains("wrong") && !e.message().contains(TOKEN),
        "{e}"
    );
}

/// Starts with a stale token; on a challenge, switches to the good one (if allowed to).
struct Refreshing {
    token: Mutex<String>,
    asked: AtomicUsize,
    challenged: Mutex<Vec<AuthChallenge>>,
    outcome: ChallengeOutcome,
}

impl Refreshing {
    fn new(outcome: ChallengeOutcome) -> Arc<Refreshing> {
        Arc::new(Refreshing {
            token: Mutex::new("stale".into()),
            asked: AtomicUsize::new(0),
            challenged: Mutex::new(Vec::new()),
            outcome,
        })
    }
}

#[async_trait]
impl AuthProvider for Refreshing {
    async fn authorization(
        &self,
        target: &AuthTarget<'_>,
    ) -> Result<Option<Credentials>, mcp_core::Error> {
        assert_eq!(target.method, "GET");
        assert!(target.url.starts_with("ws://127.0.0.1:"), "{target:?}");
        self.asked.fetch_add(1, Ordering::SeqCst);
        let token = self.token.lock().unwrap().clone();
        Ok(Some(AuthorizationValue::bearer(&token).into()))
    }

    async fn on_challenge(
        &self,
        challenge: &AuthChallenge,
    ) -> Result<ChallengeOutcome, mcp_core::Error> {
        self.challenged.lock().unwrap().push(challenge.clone());
        *self.token.lock().unwrap() = TOKEN.into();
        Ok(self.outcome)
    }
}

#[tokio::test]
async fn a_provider_with_new_credentials_gets_one_retry() {
    let fixture = fixture(&["--http-bearer", TOKEN]).await;
    let provider = Refreshing::new(ChallengeOutcome::Retry);
    let session = connect_with(
        config(&fixture.url()).auth(provider.clone()),
        (),
        SessionOptions::default(),
    )
    .await;
    session.ping(RequestOptions::new()).await.unwrap();
    assert_eq!(provider.asked.load(Ordering::SeqCst), 2);
    let challenges = provider.challenged.lock().unwrap().clone();
    assert_eq!(challenges.len(), 1);
    assert_eq!(challenges[0].status, 401);
    assert_eq!(
        challenges[0].www_authenticate.as_deref(),
        Some("Bearer realm=\"fixture\"")
    );
    assert!(challenges[0].credentials_retry_left);
    session.close().await;
}

#[tokio::test]
async fn a_provider_that_gives_up_gets_no_retry() {
    let fixture = fixture(&["--http-bearer", TOKEN]).await;
    let provider = Refreshing::new(ChallengeOutcome::GiveUp);
    let e = WebSocketTransport::connect(config(&fixture.url()).auth(provider.clone()))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), TransportErrorKind::Unauthorized);
    assert_eq!(provider.asked.load(Ordering::SeqCst), 1);
    assert_eq!(provider.challenged.lock().unwrap().len(), 1);
}

/// Always refuses: the token never works, and the provider always claims new credentials.
struct Hopeless {
    challenged: AtomicUsize,
}

#[async_trait]
impl AuthProvider for Hopeless {
    async fn authorization(
        &self,
        _target: &AuthTarget<'_>,
    ) -> Result<Option<Credentials>, mcp_core::Error> {
        Ok(Some(AuthorizationValue::bearer("never-good").into()))
    }

    async fn on_challenge(
        &self,
        _challenge: &AuthChallenge,
    ) -> Result<ChallengeOutcome, mcp_core::Error> {
        self.challenged.fetch_add(1, Ordering::SeqCst);
        Ok(ChallengeOutcome::Retry)
    }
}

#[tokio::test]
async fn the_upgrade_is_retried_at_most_once() {
    let fixture = fixture(&["--http-bearer", TOKEN]).await;
    let provider = Arc::new(Hopeless {
        challenged: AtomicUsize::new(0),
    });
    let e = WebSocketTransport::connect(config(&fixture.url()).auth(provider.clone()))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), TransportErrorKind::Unauthorized);
    // Asked after the first refusal only: after the retry, new credentials would not be used.
    assert_eq!(provider.challenged.load(Ordering::SeqCst), 1);
}
