//! Credentials on the call: the bridge's bearer token (missing, wrong, right), and the
//! provider's one retry with new credentials after a refusal — with the messages of the refused
//! call sent again.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use mcp_core::{ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::SessionOptions;
use mcp_wire::{
    AuthChallenge, AuthProvider, AuthTarget, AuthorizationValue, ChallengeOutcome, Credentials,
    StaticBearer,
};
use serde_json::json;

const TOKEN: &str = "s3cret-bridge-token";

async fn guarded() -> Bridged {
    Bridged::start_with(&[], |bridge| bridge.require_bearer(TOKEN)).await
}

#[tokio::test]
async fn a_call_without_a_token_is_unauthorized_and_starts_no_backend() {
    let bridged = guarded().await;
    let err = bridged
        .session_with(bridged.config(), (), SessionOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert!(err.message().contains("UNAUTHENTICATED"), "{err}");
    assert!(err.message().contains("authorization: Bearer"), "{err}");
    assert!(
        bridged.backend.pids().is_empty(),
        "no backend for a refused call"
    );
}

#[tokio::test]
async fn a_wrong_token_is_unauthorized_and_never_shown() {
    let bridged = guarded().await;
    let config = bridged
        .config()
        .auth(Arc::new(StaticBearer::new("s3cret-but-wrong")));
    let err = bridged
        .session_with(config, (), SessionOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert!(err.message().contains("not accepted"), "{err}");
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains("s3cret"), "{shown}");
    }
    assert!(bridged.backend.pids().is_empty());
}

#[tokio::test]
async fn the_right_token_gets_a_session() {
    let bridged = guarded().await;
    let config = bridged.config().auth(Arc::new(StaticBearer::new(TOKEN)));
    let session = bridged
        .session_with(config, (), SessionOptions::default())
        .await
        .unwrap();
    let r = session
        .call_tool("echo", Some(json!({"text": "in"})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r.text(), "in");
    session.close().await;
    bridged.wait_all_ended().await;
}

/// Hands out the tokens in order (the last one repeats) and answers every challenge with
/// `outcome`, recording what it was asked.
struct Rotating {
    tokens: Vec<&'static str>,
    outcome: ChallengeOutcome,
    asked: Mutex<usize>,
    challenges: Mutex<Vec<AuthChallenge>>,
}

impl Rotating {
    fn new(tokens: Vec<&'static str>, outcome: ChallengeOutcome) -> Arc<Rotating> {
        Arc::new(Rotating {
            tokens,
            outcome,
            asked: Mutex::new(0),
            challenges: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait::async_trait]
impl AuthProvider for Rotating {
    async fn authorization(
        &self,
        _target: &AuthTarget<'_>,
    ) -> Result<Option<Credentials>, mcp_core::Error> {
        let mut asked = self.asked.lock().unwrap();
        let token = self.tokens[(*asked).min(self.tokens.len() - 1)];
        *asked += 1;
        Ok(Some(AuthorizationValue::bearer(token).into()))
    }

    async fn on_challenge(
        &self,
        challenge: &AuthChallenge,
    ) -> Result<ChallengeOutcome, mcp_core::Error> {
        self.challenges.lock().unwrap().push(challenge.clone());
        Ok(self.outcome)
    }
}

#[tokio::test]
async fn a_refused_call_is_made_once_more_with_new_credentials_and_the_same_messages() {
    let bridged = guarded().await;
    let provider = Rotating::new(vec!["stale", TOKEN], ChallengeOutcome::Retry);
    let session = bridged
        .session_with(
            bridged.config().auth(provider.clone()),
            (),
            SessionOptions::default(),
        )
        .await
        .expect("the retried call carries the handshake");
    assert_eq!(session.server_info().server_info.name, "mcp-fixture-server");
    assert_eq!(*provider.asked.lock().unwrap(), 2);
    let challenges = provider.challenges.lock().unwrap().clone();
    assert_eq!(challenges.len(), 1);
    assert_eq!(challenges[0].status, 401);
    assert!(challenges[0].credentials_retry_left);
    let r = session
        .call_tool(
            "echo",
            Some(json!({"text": "retried"})),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "retried");
    session.close().await;
    bridged.wait_all_ended().await;
}

#[tokio::test]
async fn a_call_is_retried_at_most_once() {
    let bridged = guarded().await;
    let provider = Rotating::new(vec!["stale", "still-wrong"], ChallengeOutcome::Retry);
    let err = bridged
        .session_with(
            bridged.config().auth(provider.clone()),
            (),
            SessionOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert_eq!(*provider.asked.lock().unwrap(), 2, "one retry");
    assert_eq!(
        provider.challenges.lock().unwrap().len(),
        1,
        "the provider is not asked about a refusal that cannot be retried"
    );
    assert!(bridged.backend.pids().is_empty());
}

#[tokio::test]
async fn a_provider_that_gives_up_fails_the_call_without_a_retry() {
    let bridged = guarded().await;
    let provider = Rotating::new(vec!["stale"], ChallengeOutcome::GiveUp);
    let err = bridged
        .session_with(
            bridged.config().auth(provider.clone()),
            (),
            SessionOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert_eq!(*provider.asked.lock().unwrap(), 1);
    assert_eq!(provider.challenges.lock().unwrap().len(), 1);
}
