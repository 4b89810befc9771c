//! DPoP (RFC 9449) end to end: mcp-auth's client through [`OAuthProvider`] and the real
//! Streamable HTTP transport against the fixture's verifying DPoP mode
//! (`OAuthOptions::dpop`, `dpop_nonce`), which checks every proof's signature, claims, `jti`
//! and nonce and counts what it accepted and refused. Every test asserts the fixture's
//! counters and what the client holds. Every wait has a deadline.

use std::sync::Arc;

use mcp_auth::jwt::Es256Key;
use mcp_auth::{
    AutoApprove, DpopKey, DpopMode, Grant, MemoryStore, OAuthClient, OAuthConfig, OAuthProvider,
    Secret, StoreKey, StoredCredentials, TokenStore, TokenType,
};
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::ClientSession;
use mcp_testkit::{HttpFixture, OAuthOptions, OAuthStats};
use serde_json::json;

mod common;

use common::{client_with, connect, control, start, stats, within, REDIRECT_URI};

/// The tokens of this file's clients are kept under this account.
const ACCOUNT: &str = "dpop";

// ---------------------------------------------------------------------------------------------
// Harness

/// DPoP on (which makes the resource take only bound tokens), with nonces or not.
fn dpop(nonce: bool) -> OAuthOptions {
    OAuthOptions {
        dpop: true,
        dpop_nonce: nonce,
        ..OAuthOptions::default()
    }
}

fn store_key(fixture: &HttpFixture) -> StoreKey {
    common::store_key(fixture, ACCOUNT)
}

fn config(fixture: &HttpFixture, mode: DpopMode) -> OAuthConfig {
    let mut config = common::config(fixture, ACCOUNT);
    config.dpop = mode;
    config
}

/// A provider whose logins are approved at once; `None`: one that cannot log in.
fn provider(client: &Arc<OAuthClient>, can_log_in: bool) -> Arc<OAuthProvider> {
    let authorizer: Option<Arc<dyn mcp_auth::Authorizer>> = if can_log_in {
        Some(Arc::new(
            AutoApprove::new(REDIRECT_URI).expect("authorizer"),
        ))
    } else {
        None
    };
    Arc::new(OAuthProvider::new(client.clone(), authorizer))
}

/// tools/list and a tools/call of `echo`, both expected to succeed.
async fn list_and_call(session: &ClientSession) {
    let names: Vec<String> = within("tools/list", session.list_all_tools(RequestOptions::new()))
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.iter().any(|n| n == "echo"), "{names:?}");
    let result = within(
        "tools/call",
        session.call_tool(
            "echo",
            Some(json!({ "text": "bound" })),
            RequestOptions::new(),
        ),
    )
    .await
    .expect("tools/call");
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

async fn stored(store: &MemoryStore, fixture: &HttpFixture) -> StoredCredentials {
    store
        .load(&store_key(fixture))
        .await
        .expect("load")
        .expect("stored credentials")
}

/// The thumbprint of the stored DPoP key.
async fn stored_jkt(store: &MemoryStore, fixture: &HttpFixture) -> String {
    let key = stored(store, fixture)
        .await
        .dpop_key
        .expect("a DPoP key is stored with the tokens");
    DpopKey::from_secret(&key)
        .expect("a readable key")
        .thumbprint()
        .to_owned()
}

/// Every request the gate let through carried exactly one accepted proof, and so did every
/// token request that was answered with tokens; nothing was refused as a bad proof.
fn assert_every_request_was_proven(s: &OAuthStats, successful_token_requests: u64) {
    assert_eq!(
        s.dpop_proofs_accepted,
        s.mcp_requests_accepted + successful_token_requests,
        "{s:?}"
    );
    assert_eq!(s.dpop_proofs_rejected, 0, "{s:?}");
    assert_eq!(s.replayed_dpop_proofs, 0, "{s:?}");
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn a_dpop_login_binds_the_token_and_proves_every_request() {
    let fixture = start(dpop(false)).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Auto), &store);
    let provider = provider(&client, true);
    let session = connect(&fixture, &provider).await.expect("connect");
    list_and_call(&session).await;
    session.close().await;

    let tokens = client.tokens().await.expect("tokens").expect("held");
    assert_eq!(tokens.token_type, TokenType::Dpop);
    assert_eq!(stored(&store, &fixture).await.tokens, Some(tokens));
    stored_jkt(&store, &fixture).await;

    let s = stats(&fixture);
    assert_eq!(s.authorizations, 1, "{s:?}");
    assert_eq!(s.authorization_code, 1, "{s:?}");
    assert_eq!(s.token_errors, 0, "{s:?}");
    assert_eq!(s.dpop_bound_tokens_issued, 1, "{s:?}");
    assert_eq!(s.dpop_nonce_challenges, 0, "{s:?}");
    // initialize, notifications/initialized, tools/list, tools/call, DELETE at the least.
    assert!(s.mcp_requests_accepted >= 4, "{s:?}");
    // Only the first, bare initialize was refused.
    assert_eq!(s.mcp_requests_rejected, 1, "{s:?}");
    assert_every_request_was_proven(&s, 1);
}

#[tokio::test]
async fn server_nonces_are_picked_up_and_a_rotated_nonce_costs_one_challenge() {
    let fixture = start(dpop(true)).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Auto), &store);
    let provider = provider(&client, true);
    let session = connect(&fixture, &provider).await.expect("connect");
    list_and_call(&session).await;

    // One use_dpop_nonce at the token endpoint (the code exchange, sent again with the nonce),
    // one at the resource (the first authorized initialize, sent again with the nonce); after
    // that the nonces from the answers are used.
    let s = stats(&fixture);
    assert_eq!(s.dpop_nonce_challenges, 2, "{s:?}");
    assert_eq!((s.authorization_code, s.token_errors), (2, 1), "{s:?}");
    assert_eq!(
        s.mcp_requests_rejected, 2,
        "the bare initialize and one nonce challenge"
    );
    assert_every_request_was_proven(&s, 1);

    // New nonces: the next request to the resource is challenged once, then goes through.
    control(&fixture, "rotate-dpop-nonce").await;
    list_and_call(&session).await;
    let s = stats(&fixture);
    assert_eq!(s.dpop_nonce_challenges, 3, "{s:?}");
    assert_eq!(s.mcp_requests_rejected, 3, "{s:?}");

    // An expired token: the refresh meets the rotated nonce of the authorization server
    // (one more challenge there), then the request goes through with the new token.
    control(&fixture, "expire-tokens").await;
    list_and_call(&session).await;
    let s = stats(&fixture);
    assert_eq!(s.dpop_nonce_challenges, 4, "{s:?}");
    assert_eq!((s.refresh_token, s.token_errors), (2, 2), "{s:?}");
    assert_eq!(s.mcp_requests_rejected, 4, "+ the expired token");
    assert_eq!(s.expired_tokens_presented, 1, "{s:?}");
    assert_eq!(s.authorizations, 1, "no new login");
    assert_eq!(s.dpop_bound_tokens_issued, 2, "{s:?}");
    assert_every_request_was_proven(&s, 2);
    session.close().await;
}

#[tokio::test]
async fn a_bound_token_is_refreshed_with_its_key_and_the_key_survives_a_restart() {
    let fixture = start(dpop(false)).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Auto), &store);
    let provider = provider(&client, true);
    let session = connect(&fixture, &provider).await.expect("connect");
    list_and_call(&session).await;
    let first = client.tokens().await.expect("tokens").expect("held");
    let jkt = stored_jkt(&store, &fixture).await;

    // The fixture refuses a bound refresh token without a proof by its key (invalid_grant):
    // a refresh that goes through, without a new login, was proven with the same key.
    control(&fixture, "expire-tokens").await;
    list_and_call(&session).await;
    let second = client.tokens().await.expect("tokens").expect("held");
    assert_ne!(second.access_token, first.access_token);
    assert_eq!(second.token_type, TokenType::Dpop);
    let s = stats(&fixture);
    assert_eq!((s.refresh_token, s.token_errors), (1, 0), "{s:?}");
    assert_eq!(s.authorizations, 1, "{s:?}");
    assert_eq!(stored_jkt(&store, &fixture).await, jkt, "the same key");
    session.close().await;
    drop(provider);

    // A restarted process: a new client on the same store, which cannot log in. It presents
    // the stored token with proofs by the stored key, and refreshes with it.
    let restarted = client_with(config(&fixture, DpopMode::Auto), &store);
    let provider = self::provider(&restarted, false);
    let session = connect(&fixture, &provider)
        .await
        .expect("connect with the stored token and key");
    list_and_call(&session).await;
    control(&fixture, "expire-tokens").await;
    list_and_call(&session).await;
    session.close().await;
    let third = restarted.tokens().await.expect("tokens").expect("held");
    assert_eq!(third.token_type, TokenType::Dpop);
    assert_ne!(third.access_token, second.access_token);
    assert_eq!(
        stored_jkt(&store, &fixture).await,
        jkt,
        "still the same key"
    );

    let s = stats(&fixture);
    assert_eq!(s.authorizations, 1, "no new login: {s:?}");
    assert_eq!((s.refresh_token, s.token_errors), (2, 0), "{s:?}");
    assert_eq!(s.dpop_bound_tokens_issued, 3, "{s:?}");
    assert_every_request_was_proven(&s, 3);
}

#[tokio::test]
async fn dpop_never_is_refused_before_anything_is_authorized() {
    let fixture = start(dpop(false)).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Never), &store);
    let provider = provider(&client, true);
    let e = connect(&fixture, &provider)
        .await
        .expect_err("the server takes only DPoP-bound tokens");
    let message = e.to_string();
    assert!(
        message.contains("takes only DPoP-bound tokens") && message.contains("oauth.dpop: never"),
        "{message}"
    );
    let s = stats(&fixture);
    assert_eq!(s.authorizations, 0, "nothing was authorized: {s:?}");
    assert_eq!(s.token_requests(), 0, "{s:?}");
    assert_eq!(s.registrations, 0, "{s:?}");
    assert_eq!(s.dpop_proofs_accepted, 0, "{s:?}");
    assert!(client.tokens().await.expect("tokens").is_none());
    assert!(store
        .load(&store_key(&fixture))
        .await
        .expect("load")
        .is_none_or(|c| c.tokens.is_none() && c.dpop_key.is_none()));
}

#[tokio::test]
async fn a_bearer_server_gets_bearer_tokens_and_no_key_in_auto_mode() {
    let fixture = start(OAuthOptions::default()).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Auto), &store);
    let provider = provider(&client, true);
    let session = connect(&fixture, &provider).await.expect("connect");
    list_and_call(&session).await;
    session.close().await;

    let tokens = client.tokens().await.expect("tokens").expect("held");
    assert_eq!(tokens.token_type, TokenType::Bearer);
    let stored = stored(&store, &fixture).await;
    assert_eq!(stored.tokens, Some(tokens));
    assert_eq!(stored.dpop_key, None, "no key was generated");
    let s = stats(&fixture);
    assert_eq!(s.authorizations, 1, "{s:?}");
    assert_eq!(
        (s.dpop_bound_tokens_issued, s.dpop_proofs_accepted),
        (0, 0),
        "{s:?}"
    );
}

/// A resource where DPoP is optional (`dpop_optional`: the authorization server binds tokens,
/// the resource neither lists nor requires DPoP and challenges with `Bearer`): `Auto` takes a
/// bearer token and makes no key, `Always` binds its token; both make their calls.
#[tokio::test]
async fn auto_takes_bearer_and_always_binds_where_dpop_is_optional() {
    let fixture = start(OAuthOptions {
        dpop_optional: true,
        ..OAuthOptions::default()
    })
    .await;

    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Auto), &store);
    let session = connect(&fixture, &provider(&client, true))
        .await
        .expect("connect in auto mode");
    list_and_call(&session).await;
    session.close().await;
    let tokens = client.tokens().await.expect("tokens").expect("held");
    assert_eq!(tokens.token_type, TokenType::Bearer);
    assert_eq!(stored(&store, &fixture).await.dpop_key, None, "no key");
    let s = stats(&fixture);
    assert_eq!(
        (s.dpop_bound_tokens_issued, s.dpop_proofs_accepted),
        (0, 0),
        "{s:?}"
    );
    let bearer_calls = s.mcp_requests_accepted;

    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Always), &store);
    let session = connect(&fixture, &provider(&client, true))
        .await
        .expect("connect in always mode");
    list_and_call(&session).await;
    session.close().await;
    let tokens = client.tokens().await.expect("tokens").expect("held");
    assert_eq!(tokens.token_type, TokenType::Dpop);
    stored_jkt(&store, &fixture).await;
    let s = stats(&fixture);
    assert_eq!(s.authorizations, 2, "{s:?}");
    assert_eq!(s.dpop_bound_tokens_issued, 1, "{s:?}");
    // Every request of the second session (and its code exchange) was proven.
    assert_eq!(
        s.dpop_proofs_accepted,
        s.mcp_requests_accepted - bearer_calls + 1,
        "{s:?}"
    );
    assert_eq!(s.dpop_proofs_rejected, 0, "{s:?}");
}

/// The fixture sends its `Bearer` and `DPoP` challenges as two `WWW-Authenticate` headers,
/// the `DPoP` one (with `use_dpop_nonce`) second: the client reads both, so it binds its
/// token in `Auto` mode and each nonce costs exactly one challenge, as with one header.
#[tokio::test]
async fn split_challenges_are_read_whole_and_each_nonce_costs_one_challenge() {
    let fixture = start(OAuthOptions {
        dpop_nonce: true,
        dpop_split_challenges: true,
        ..OAuthOptions::default()
    })
    .await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Auto), &store);
    let provider = provider(&client, true);
    let session = connect(&fixture, &provider).await.expect("connect");
    list_and_call(&session).await;
    let tokens = client.tokens().await.expect("tokens").expect("held");
    assert_eq!(tokens.token_type, TokenType::Dpop);
    // One use_dpop_nonce at the token endpoint, one at the resource (in the second header).
    let s = stats(&fixture);
    assert_eq!(s.dpop_nonce_challenges, 2, "{s:?}");
    assert_eq!(s.mcp_requests_rejected, 2, "the bare initialize, one nonce");
    assert_every_request_was_proven(&s, 1);

    control(&fixture, "rotate-dpop-nonce").await;
    list_and_call(&session).await;
    control(&fixture, "expire-tokens").await;
    list_and_call(&session).await;
    session.close().await;
    let s = stats(&fixture);
    // + one at the resource after the rotation, + one at the token endpoint for the refresh.
    assert_eq!(s.dpop_nonce_challenges, 4, "{s:?}");
    assert_eq!((s.refresh_token, s.token_errors), (2, 2), "{s:?}");
    assert_eq!(s.authorizations, 1, "no new login: {s:?}");
    assert_every_request_was_proven(&s, 2);
}

/// A machine client with `private_key_jwt` against a token endpoint that asks for its DPoP
/// nonce and spends an assertion's `jti` before it looks at the proof: the nonce retry carries
/// a new assertion, so no assertion is ever refused as reused — for the first grant and for
/// the refresh after the tokens expired and the nonces rotated.
#[tokio::test]
async fn private_key_jwt_sends_a_fresh_assertion_on_the_nonce_retry() {
    use p256::ecdsa::SigningKey;
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let signing = SigningKey::from_slice(&[11; 32]).expect("a valid scalar");
    let private_pem = signing.to_pkcs8_pem(LineEnding::LF).expect("PKCS#8 PEM");
    let public_pem = signing
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .expect("SPKI PEM");
    let fixture = start(OAuthOptions {
        preregistered_jwt: vec![("jwt-machine".into(), public_pem)],
        ..dpop(true)
    })
    .await;
    let mut config = config(&fixture, DpopMode::Auto);
    config.client_id = Some("jwt-machine".into());
    let key = Es256Key::from_pem(&Secret::new(private_pem.as_str()), None).expect("key");
    config.grant = Grant::ClientCredentials { key: Some(key) };
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config, &store);
    let session = connect(&fixture, &provider(&client, false))
        .await
        .expect("connect as a machine client");
    list_and_call(&session).await;
    let first = client.tokens().await.expect("tokens").expect("held");
    assert_eq!(first.token_type, TokenType::Dpop);

    control(&fixture, "rotate-dpop-nonce").await;
    control(&fixture, "expire-tokens").await;
    list_and_call(&session).await;
    session.close().await;
    let second = client.tokens().await.expect("tokens").expect("held");
    assert_ne!(second.access_token, first.access_token);

    let s = stats(&fixture);
    assert_eq!(s.reused_client_assertions, 0, "{s:?}");
    // Two grants, each asked once for the (new) nonce: four requests, four assertions.
    assert_eq!((s.client_credentials, s.token_errors), (4, 2), "{s:?}");
    assert_eq!(s.client_assertions_accepted, 4, "{s:?}");
    assert_eq!(s.dpop_bound_tokens_issued, 2, "{s:?}");
    assert_eq!((s.authorizations, s.registrations), (0, 0), "{s:?}");
    assert_every_request_was_proven(&s, 2);
}

/// 32 tool calls at a time through one provider and one transport while the fixture rotates
/// its nonces and expires every token, three times over: every call succeeds, the callers that
/// meet an expired token share their refreshes, and no proof is ever refused or replayed.
#[tokio::test]
async fn concurrent_calls_survive_rotating_nonces_and_expiring_tokens() {
    const ROUNDS: u64 = 3;
    const CALLS: usize = 32;
    let fixture = start(dpop(true)).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Auto), &store);
    let provider = provider(&client, true);
    let session = connect(&fixture, &provider).await.expect("connect");
    list_and_call(&session).await;
    let before = stats(&fixture);

    for round in 0..ROUNDS {
        let mut calls = tokio::task::JoinSet::new();
        let spawn = |calls: &mut tokio::task::JoinSet<_>, i: usize| {
            let session = session.clone();
            // Some calls take a while, so that they are in flight when the fixture changes.
            let (tool, args) = if i.is_multiple_of(4) {
                ("slow", json!({ "duration_ms": 50, "steps": 0 }))
            } else {
                ("echo", json!({ "text": format!("call {round}.{i}") }))
            };
            calls.spawn(async move {
                session
                    .call_tool(tool, Some(args), RequestOptions::new())
                    .await
            });
        };
        for i in 0..CALLS / 2 {
            spawn(&mut calls, i);
        }
        control(&fixture, "rotate-dpop-nonce").await;
        control(&fixture, "expire-tokens").await;
        for i in CALLS / 2..CALLS {
            spawn(&mut calls, i);
        }
        let mut done = 0;
        within("32 calls", async {
            while let Some(joined) = calls.join_next().await {
                let result = joined.expect("the call's task").expect("the call");
                assert_ne!(result.is_error, Some(true), "{result:?}");
                done += 1;
            }
        })
        .await;
        assert_eq!(done, CALLS);
    }
    session.close().await;

    let s = stats(&fixture);
    assert_eq!(s.authorizations, 1, "no new login: {s:?}");
    assert_eq!(s.dpop_proofs_rejected, 0, "{s:?}");
    assert_eq!(s.replayed_dpop_proofs, 0, "{s:?}");
    // Each expiry needs a refresh (the calls after it all carry the expired token); the
    // callers that meet the expired token share it — at most two per expiry, for a caller
    // whose refusal arrives after the shared refresh ended. Each refresh may meet the rotated
    // nonce once (one more request).
    let refreshes = s.dpop_bound_tokens_issued - before.dpop_bound_tokens_issued;
    assert!(
        (ROUNDS..=2 * ROUNDS).contains(&refreshes),
        "{refreshes} refreshes for {ROUNDS} expiries: {s:?}"
    );
    assert!(
        s.refresh_token <= 2 * refreshes,
        "{} refresh requests for {refreshes} refreshes: {s:?}",
        s.refresh_token
    );
}

/// A resource that refuses every proof (`invalid_dpop_proof`, as with a skewed clock or a
/// proxy that changes the URL): the call fails with an error about the proof, and the client
/// neither refreshes nor authorizes again — new tokens would not change the proof.
#[tokio::test]
async fn a_refused_proof_fails_the_call_without_a_refresh_or_a_new_login() {
    use mcp_auth::Authorizer;
    let fixture = start(OAuthOptions {
        dpop_refuse_proofs: true,
        ..OAuthOptions::default()
    })
    .await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture, DpopMode::Auto), &store);
    // Logged in beforehand (the token endpoint takes proofs).
    let approve = AutoApprove::new(REDIRECT_URI).expect("authorizer");
    let tokens = within("login", approve.authorize(&client))
        .await
        .expect("login");
    assert_eq!(tokens.token_type, TokenType::Dpop);

    let e = connect(&fixture, &provider(&client, true))
        .await
        .expect_err("every proof is refused");
    let message = e.to_string();
    assert!(
        message.contains("DPoP proof") && message.contains("clock"),
        "{message}"
    );
    let s = stats(&fixture);
    assert_eq!(s.dpop_proofs_rejected, 1, "one request, not retried: {s:?}");
    assert_eq!(s.mcp_requests_rejected, 1, "{s:?}");
    assert_eq!(s.refresh_token, 0, "no refresh: {s:?}");
    assert_eq!(
        (s.authorizations, s.authorization_code),
        (1, 1),
        "no new login: {s:?}"
    );
    let held = client.tokens().await.expect("tokens").expect("still held");
    assert_eq!(held.access_token, tokens.access_token);
}
