//! DPoP (RFC 9449) end to end: mcp-auth's client through [`OAuthProvider`] and the real
//! Streamable HTTP transport against the fixture's verifying DPoP mode
//! (`OAuthOptions::dpop`, `dpop_nonce`), which checks every proof's signature, claims, `jti`
//! and nonce and counts what it accepted and refused. Every test asserts the fixture's
//! counters and what the client holds. Every wait has a deadline.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_auth::{
    AutoApprove, DpopKey, DpopMode, MemoryStore, OAuthClient, OAuthConfig, OAuthProvider, StoreKey,
    StoredCredentials, TokenStore, TokenType,
};
use mcp_core::{ClientSession, McpServiceExt, RequestOptions, SessionOptions};
use mcp_testkit::{serve_http, HttpFixture, OAuthOptions, OAuthStats, ServerOptions};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use serde_json::json;
use url::Url;

/// Nothing listens here: [`AutoApprove`] reads the redirect's `Location` instead.
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";
const DEADLINE: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Harness

/// The fixture in OAuth mode, without the standalone GET stream (405), so that the only
/// requests are the ones a test makes.
async fn start(oauth: OAuthOptions) -> HttpFixture {
    let options = ServerOptions {
        oauth: Some(oauth),
        http_no_get: true,
        ..ServerOptions::default()
    };
    serve_http(options, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve_http")
}

/// DPoP on (which makes the resource take only bound tokens), with nonces or not.
fn dpop(nonce: bool) -> OAuthOptions {
    OAuthOptions {
        dpop: true,
        dpop_nonce: nonce,
        ..OAuthOptions::default()
    }
}

fn stats(fixture: &HttpFixture) -> OAuthStats {
    fixture.oauth_stats().expect("the fixture is in OAuth mode")
}

fn store_key(fixture: &HttpFixture) -> StoreKey {
    StoreKey::new(fixture.url(), "dpop")
}

fn config(fixture: &HttpFixture, mode: DpopMode) -> OAuthConfig {
    let url = Url::parse(&fixture.url()).expect("fixture URL");
    let mut config = OAuthConfig::new(url, store_key(fixture));
    config.client_name = "mcp-auth dpop test".into();
    config.dpop = mode;
    config
}

fn client_with(config: OAuthConfig, store: &Arc<MemoryStore>) -> Arc<OAuthClient> {
    let store: Arc<dyn TokenStore> = store.clone();
    Arc::new(OAuthClient::new(config, store).expect("client"))
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

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

async fn connect(
    fixture: &HttpFixture,
    provider: &Arc<OAuthProvider>,
) -> Result<ClientSession, mcp_core::Error> {
    let config = HttpServerConfig::new(fixture.url()).auth(provider.clone());
    let transport = StreamableHttpTransport::new(config).expect("transport");
    let options = SessionOptions::default()
        .with_client_info("mcp-auth-dpop", "0")
        .with_request_timeout(DEADLINE)
        .with_initialize_timeout(DEADLINE);
    within("connect", ClientSession::connect(transport, (), options)).await
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

async fn control(fixture: &HttpFixture, what: &str) {
    let response = within(
        "control",
        reqwest::Client::new()
            .post(format!("{}/control/oauth/{what}", fixture.base_url()))
            .send(),
    )
    .await
    .expect("control");
    assert_eq!(response.status().as_u16(), 204, "control {what}");
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
