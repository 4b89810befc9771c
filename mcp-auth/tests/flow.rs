//! mcp-auth's flows against the fixture's OAuth mode (`mcp_testkit::oauth`): a protected
//! `/mcp` and its mock authorization server on one loopback listener. Logins run through
//! [`OAuthProvider`] and the real Streamable HTTP transport where the provider is what is
//! tested, through [`OAuthClient`] alone otherwise; every test checks the server's own
//! counters. Every wait has a deadline; simulated-time tests obtain their tokens with time
//! running, then pause, advance just past the point of interest and resume before any I/O.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_auth::http::AuthHttp;
use mcp_auth::login::approved_callback;
use mcp_auth::{
    AuthError, AuthorizationRequest, Authorizer, Callback, Grant, MemoryStore, OAuthClient,
    OAuthConfig, OAuthProvider, ResourceChallenge, Secret, StoreKey, TokenEndpointAuth, TokenSet,
    TokenStore,
};
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::ClientSession;
use mcp_testkit::{HttpFixture, OAuthOptions};
use serde_json::Value;
use url::Url;

mod common;

use common::{client_with, connect, control, start, stats, within, REDIRECT_URI};

/// The tokens of this file's clients are kept under this account.
const ACCOUNT: &str = "flow";
const MARGIN: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Harness

fn store_key(fixture: &HttpFixture) -> StoreKey {
    common::store_key(fixture, ACCOUNT)
}

fn config(fixture: &HttpFixture) -> OAuthConfig {
    let mut config = common::config(fixture, ACCOUNT);
    config.refresh_margin = MARGIN;
    config
}

/// A browser whose user approves at once: GETs the authorization URL without following the
/// redirect and hands its `Location` to [`OAuthClient::exchange_code`].
struct BrowserStandIn {
    http: AuthHttp,
}

impl BrowserStandIn {
    fn new() -> Arc<BrowserStandIn> {
        Arc::new(BrowserStandIn {
            http: AuthHttp::new().expect("http"),
        })
    }

    /// The callback the authorization endpoint redirects to.
    async fn visit(&self, request: &AuthorizationRequest) -> Result<Callback, AuthError> {
        approved_callback(&self.http, &request.url).await
    }
}

#[async_trait]
impl Authorizer for BrowserStandIn {
    async fn authorize(&self, client: &OAuthClient) -> Result<TokenSet, AuthError> {
        let request = client.initiate_authorization(REDIRECT_URI).await?;
        let callback = self.visit(&request).await?;
        client.exchange_code(&request, &callback).await
    }
}

/// A login through [`OAuthClient`] alone (metadata discovery, registration, authorization, code).
async fn login(client: &OAuthClient) -> TokenSet {
    within("login", BrowserStandIn::new().authorize(client))
        .await
        .expect("login")
}

async fn tool_names(session: &ClientSession) -> Vec<String> {
    within("tools/list", session.list_all_tools(RequestOptions::new()))
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect()
}

fn access(tokens: &TokenSet) -> String {
    tokens.access_token.expose().to_owned()
}

fn refresh(tokens: &TokenSet) -> String {
    tokens
        .refresh_token
        .as_ref()
        .expect("a refresh token")
        .expose()
        .to_owned()
}

async fn held(client: &OAuthClient) -> Option<TokenSet> {
    client.tokens().await.expect("tokens")
}

/// A refresh grant sent by hand (not through mcp-auth): the status and the JSON answer.
async fn raw_refresh(fixture: &HttpFixture, client_id: &str, token: &str) -> (u16, Value) {
    let response = within(
        "raw refresh",
        reqwest::Client::new()
            .post(format!("{}/token", fixture.base_url()))
            .form(&[
                ("grant_type", "refresh_token"),
                ("client_id", client_id),
                ("refresh_token", token),
            ])
            .send(),
    )
    .await
    .expect("POST /token");
    let status = response.status().as_u16();
    let body = within("raw refresh body", response.json::<Value>())
        .await
        .expect("JSON");
    (status, body)
}

/// The client id the client registered (kept in the store with the tokens).
async fn registered_client_id(store: &MemoryStore, fixture: &HttpFixture) -> String {
    store
        .load(&store_key(fixture))
        .await
        .expect("load")
        .and_then(|c| c.client)
        .expect("a registered client in the store")
        .client_id
}

/// Lets every task the clock woke run (no I/O: nothing may wait on the paused clock).
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Login

#[tokio::test]
async fn full_login_through_the_provider_and_the_transport() {
    let fixture = start(OAuthOptions::default()).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture), &store);
    let provider = Arc::new(OAuthProvider::new(
        client.clone(),
        Some(BrowserStandIn::new()),
    ));
    let session = connect(&fixture, &provider).await.expect("connect");
    let names = tool_names(&session).await;
    assert!(names.iter().any(|n| n == "echo"), "{names:?}");
    session.close().await;

    let s = stats(&fixture);
    assert_eq!(s.registrations, 1);
    assert_eq!(s.authorizations, 1);
    assert_eq!(s.authorization_code, 1);
    assert_eq!(s.refresh_token, 0);
    assert_eq!(s.client_credentials, 0);
    assert_eq!(s.token_errors, 0);
    // The authorization and the code exchange both named the resource the metadata names.
    assert_eq!(s.resources_seen, vec![fixture.url(), fixture.url()]);
    // Only the first, bare initialize was refused.
    assert_eq!(s.mcp_requests_rejected, 1);
    assert_eq!(s.expired_tokens_presented, 0);

    let stored = store
        .load(&store_key(&fixture))
        .await
        .expect("load")
        .expect("stored");
    assert_eq!(stored.tokens.as_ref(), held(&client).await.as_ref());
    let identity = stored.client.expect("the registration is stored");
    assert_eq!(identity.auth_method, TokenEndpointAuth::None);
    assert_eq!(identity.redirect_uri.as_deref(), Some(REDIRECT_URI));
    assert_eq!(
        identity.issuer.as_deref(),
        Some(fixture.base_url().as_str())
    );
}

#[tokio::test]
async fn the_iss_parameter_is_accepted_when_it_names_the_issuer() {
    let fixture = start(OAuthOptions {
        iss_parameter: true,
        ..OAuthOptions::default()
    })
    .await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    let request = client
        .initiate_authorization(REDIRECT_URI)
        .await
        .expect("initiate");
    let callback = BrowserStandIn::new()
        .visit(&request)
        .await
        .expect("callback");
    assert_eq!(callback.iss.as_deref(), Some(fixture.base_url().as_str()));
    client
        .exchange_code(&request, &callback)
        .await
        .expect("exchange");
    assert_eq!(stats(&fixture).authorization_code, 1);
}

// ---------------------------------------------------------------------------------------------
// 2.–3. Refresh ahead of expiry, coalesced

#[tokio::test]
async fn the_provider_refreshes_once_just_before_the_margin() {
    let fixture = start(OAuthOptions {
        token_ttl_secs: 3600,
        ..OAuthOptions::default()
    })
    .await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture), &store);
    let provider = Arc::new(OAuthProvider::new(
        client.clone(),
        Some(BrowserStandIn::new()),
    ));
    let session = connect(&fixture, &provider).await.expect("connect");
    tool_names(&session).await;
    let first = held(&client).await.expect("tokens");
    assert_eq!(stats(&fixture).authorization_code, 1);

    // The token lives 3600 s (the client counts from a whole-second `expires_at`, so up to a
    // second less): the refresh is due after at most 3540 s and more than 3539 s. 3538 s leaves
    // a second for the time the login took.
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(3538)).await;
    settle().await;
    assert_eq!(stats(&fixture).refresh_token, 0, "refreshed too early");
    tokio::time::advance(Duration::from_secs(3)).await;
    tokio::time::resume();
    mcp_testkit::wait::until_async("the background refresh", common::DEADLINE, || async {
        stats(&fixture).refresh_token == 1
            && held(&client).await.map(|t| access(&t)) != Some(access(&first))
    })
    .await;
    let second = held(&client).await.expect("tokens");
    assert_ne!(refresh(&second), refresh(&first), "rotated");

    // The next caller gets the new token without another request.
    let before = stats(&fixture);
    let token = within("get_valid_token", client.get_valid_token())
        .await
        .expect("token");
    assert_eq!(token.expose(), access(&second));
    assert_eq!(stats(&fixture).token_requests(), before.token_requests());

    // Past the first token's expiry, requests still carry a valid token.
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(100)).await;
    tokio::time::resume();
    tool_names(&session).await;
    session.close().await;
    let s = stats(&fixture);
    assert_eq!(s.expired_tokens_presented, 0);
    assert_eq!(
        s.mcp_requests_rejected, 1,
        "only the first, bare initialize"
    );
    assert_eq!((s.authorization_code, s.refresh_token), (1, 1));
}

/// A token that lives shorter than the margin (30 s against 60 s) is refreshed in the
/// background once, at half its life, and the refresher then waits for the new one's turn
/// instead of refreshing again and again.
#[tokio::test]
async fn the_background_refresher_refreshes_short_lived_tokens_once_at_half_life() {
    let fixture = start(OAuthOptions {
        token_ttl_secs: 30,
        ..OAuthOptions::default()
    })
    .await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    let provider = Arc::new(OAuthProvider::new(
        client.clone(),
        Some(BrowserStandIn::new()),
    ));
    let session = connect(&fixture, &provider).await.expect("connect");
    tool_names(&session).await;
    let first = held(&client).await.expect("tokens");
    // Half of a lifetime between 29 s and 30 s (whole-second `expires_at`): due after 14.5 s
    // to 15 s.
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(14)).await;
    settle().await;
    assert_eq!(stats(&fixture).refresh_token, 0, "refreshed too early");
    tokio::time::advance(Duration::from_secs(2)).await;
    tokio::time::resume();
    mcp_testkit::wait::until_async("the background refresh", common::DEADLINE, || async {
        held(&client).await.map(|t| access(&t)) != Some(access(&first))
    })
    .await;
    tool_names(&session).await;
    session.close().await;
    let s = stats(&fixture);
    assert_eq!(s.refresh_token, 1, "{s:?}");
    assert_eq!(s.expired_tokens_presented, 0);
}

/// 50 callers when the token is inside the margin (simulated time; the refresh takes 200 ms):
/// one refresh request, one new token for all.
#[tokio::test]
async fn concurrent_callers_share_one_refresh() {
    let fixture = start(OAuthOptions {
        token_delay_ms: 200,
        ..OAuthOptions::default()
    })
    .await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    let first = login(&client).await;
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(3550)).await;
    tokio::time::resume();
    let tokens = fifty_callers(&client).await;
    assert_ne!(tokens[0], access(&first));
    assert!(tokens.iter().all(|t| *t == tokens[0]), "{tokens:?}");
    let s = stats(&fixture);
    assert_eq!(s.refresh_token, 1);
    assert_eq!(s.token_requests(), 2);
}

/// The same where the server's tokens live shorter than the refresh margin (30 s against
/// 60 s): once such a token is due (simulated time, 20 s on), callers that waited for the
/// refresh in flight must take its result instead of refreshing again.
#[tokio::test]
async fn concurrent_callers_share_one_refresh_when_tokens_live_shorter_than_the_margin() {
    let fixture = start(OAuthOptions {
        token_ttl_secs: 30,
        // Short, so that 50 refreshes one after the other (the failure this test guards
        // against) still end within the deadline and the count is what the test reports.
        token_delay_ms: 20,
        ..OAuthOptions::default()
    })
    .await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    let first = login(&client).await;
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(20)).await;
    tokio::time::resume();
    let tokens = fifty_callers(&client).await;
    assert!(tokens.iter().all(|t| *t != access(&first)), "not refreshed");
    let s = stats(&fixture);
    assert_eq!(
        s.refresh_token, 1,
        "one refresh for 50 concurrent callers (got {})",
        s.refresh_token
    );
    assert!(tokens.iter().all(|t| *t == tokens[0]));
}

/// A token that lives shorter than the margin (30 s against 60 s) is never "fresh for the
/// margin"; a token just obtained must still be used, not refreshed at once on every call.
#[tokio::test]
async fn a_token_that_lives_shorter_than_the_margin_is_used_before_it_is_refreshed() {
    let fixture = start(OAuthOptions {
        token_ttl_secs: 30,
        ..OAuthOptions::default()
    })
    .await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    let first = login(&client).await;
    for _ in 0..3 {
        let token = within("get_valid_token", client.get_valid_token())
            .await
            .expect("token");
        assert!(
            token.expose() == access(&first),
            "another token than the one just obtained"
        );
    }
    assert_eq!(
        stats(&fixture).refresh_token,
        0,
        "a token obtained a moment ago was refreshed"
    );
}

async fn fifty_callers(client: &Arc<OAuthClient>) -> Vec<String> {
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let client = client.clone();
        callers.spawn(async move { client.get_valid_token().await });
    }
    let mut tokens = Vec::new();
    within("50 callers", async {
        while let Some(joined) = callers.join_next().await {
            let token = joined.expect("caller").expect("a valid token");
            tokens.push(token.expose().to_owned());
        }
    })
    .await;
    assert_eq!(tokens.len(), 50);
    tokens
}

// ---------------------------------------------------------------------------------------------
// 4.–6. Refresh tokens: rotation, kept, refused

#[tokio::test]
async fn rotated_refresh_tokens_are_kept_and_old_ones_are_dead() {
    let fixture = start(OAuthOptions::default()).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture), &store);
    let rt1 = refresh(&login(&client).await);
    let rt2 = refresh(&client.refresh_access_token().await.expect("refresh 1"));
    let rt3 = refresh(&client.refresh_access_token().await.expect("refresh 2"));
    assert!(rt1 != rt2 && rt2 != rt3 && rt1 != rt3);
    assert_eq!(refresh(&held(&client).await.expect("held")), rt3);
    let stored = store
        .load(&store_key(&fixture))
        .await
        .expect("load")
        .and_then(|c| c.tokens)
        .expect("stored tokens");
    assert_eq!(refresh(&stored), rt3);
    assert_eq!(stats(&fixture).refresh_token, 2);

    let client_id = registered_client_id(&store, &fixture).await;
    for old in [&rt1, &rt2] {
        let (status, body) = raw_refresh(&fixture, &client_id, old).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid_grant"))
        );
    }
    let s = stats(&fixture);
    assert_eq!((s.refresh_token, s.token_errors), (4, 2));
    // The latest one still works (by hand, so the client's copy goes stale; not used again).
    let (status, _) = raw_refresh(&fixture, &client_id, &rt3).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_refresh_answer_without_a_refresh_token_keeps_the_old_one() {
    // Without rotation the fixture's refresh answers carry no `refresh_token`.
    let fixture = start(OAuthOptions {
        rotate_refresh_tokens: false,
        ..OAuthOptions::default()
    })
    .await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture), &store);
    let first = login(&client).await;
    let second = client.refresh_access_token().await.expect("refresh 1");
    assert_ne!(access(&second), access(&first));
    assert_eq!(refresh(&second), refresh(&first));
    let stored = store
        .load(&store_key(&fixture))
        .await
        .expect("load")
        .and_then(|c| c.tokens)
        .expect("stored tokens");
    assert_eq!(refresh(&stored), refresh(&first));
    // The kept one is still good.
    let third = client.refresh_access_token().await.expect("refresh 2");
    assert_eq!(refresh(&third), refresh(&first));
    let s = stats(&fixture);
    assert_eq!((s.refresh_token, s.token_errors), (2, 0));
}

#[tokio::test]
async fn a_refused_refresh_token_leads_to_a_new_authorization() {
    let fixture = start(OAuthOptions::default()).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture), &store);
    let provider = Arc::new(OAuthProvider::new(
        client.clone(),
        Some(BrowserStandIn::new()),
    ));
    let session = connect(&fixture, &provider).await.expect("connect");
    tool_names(&session).await;
    assert_eq!(stats(&fixture).authorizations, 1);

    control(&fixture, "revoke-all").await;
    let e = client
        .refresh_access_token()
        .await
        .expect_err("the refresh token is revoked");
    assert!(e.is_invalid_grant(), "{e}");
    assert!(held(&client).await.is_none(), "the tokens are dropped");
    let stored = store
        .load(&store_key(&fixture))
        .await
        .expect("load")
        .expect("the registration stays");
    assert!(stored.tokens.is_none());
    assert!(stored.client.is_some());

    // The next request goes out without a token, gets 401, and the provider authorizes anew
    // (with the same registration).
    let names = tool_names(&session).await;
    assert!(names.iter().any(|n| n == "echo"));
    session.close().await;
    let s = stats(&fixture);
    assert_eq!(s.authorizations, 2);
    assert_eq!(s.registrations, 1);
    assert_eq!(s.authorization_code, 2);
    assert_eq!(s.refresh_token, 1);
    assert!(held(&client).await.is_some());
}

// ---------------------------------------------------------------------------------------------
// 7. Step-up

#[tokio::test]
async fn step_up_is_bounded_when_the_server_never_grants_the_scope() {
    let fixture = start(OAuthOptions {
        scopes_supported: Some(vec!["read".into(), "admin".into()]),
        required_scopes: vec!["admin".into()],
        grantable_scopes: Some(vec!["read".into()]),
        ..OAuthOptions::default()
    })
    .await;
    let mut config = config(&fixture);
    config.scopes = vec!["read".into()];
    let client = client_with(config, &Arc::new(MemoryStore::new()));
    let provider = Arc::new(OAuthProvider::new(
        client.clone(),
        Some(BrowserStandIn::new()),
    ));
    // Each connection attempt gets one retry from the transport, so each attempt can step up
    // once; the provider must stop asking at some point.
    let mut gave_up = None;
    for _attempt in 0..8 {
        match connect(&fixture, &provider).await {
            Ok(_) => panic!("the server never grants admin, yet the session connected"),
            Err(e) if e.to_string().contains("giving up") => {
                gave_up = Some(e.to_string());
                break;
            }
            Err(_) => {}
        }
    }
    let message = gave_up.expect("the provider never gave up");
    assert!(message.contains("insufficient_scope"), "{message}");
    let s = stats(&fixture);
    assert!(
        (2..=4).contains(&s.authorizations),
        "first authorization plus at most 3 step-ups: {s:?}"
    );
    // The step-ups asked for the union of what was requested, granted and challenged.
    assert_eq!(s.authorization_scopes[0], "read");
    for scope in &s.authorization_scopes[1..] {
        let mut asked: Vec<&str> = scope.split(' ').collect();
        asked.sort_unstable();
        assert_eq!(asked, ["admin", "read"], "{s:?}");
    }
    // Once given up, it stays given up: no further authorization.
    let e = connect(&fixture, &provider)
        .await
        .expect_err("still refused");
    assert!(e.to_string().contains("giving up"), "{e}");
    assert_eq!(stats(&fixture).authorizations, s.authorizations);
}

/// A login the server will never accept (it requires a scope it never grants) costs one
/// authorization per connection attempt — never one more after the transport's retry is spent.
///
/// Each `connect` sends one `initialize`, which the transport may send once more with new
/// credentials. The first attempt: the bare request gets 401, the provider authorizes (1), the
/// retry gets 403 `insufficient_scope` — and the transport, with no retry left, does not ask
/// the provider (a step-up there would be an authorization whose token is never sent). The
/// next attempts each get 403 for the held token, step up once (1 each) and are refused
/// again, until the step-up rules give up (a second step-up in a row asking for nothing new,
/// or `MAX_STEP_UPS`): from then on an attempt costs nothing.
#[tokio::test]
async fn a_refused_login_costs_exactly_one_authorization_per_attempt() {
    let fixture = start(OAuthOptions {
        scopes_supported: Some(vec!["read".into(), "admin".into()]),
        required_scopes: vec!["admin".into()],
        grantable_scopes: Some(vec!["read".into()]),
        ..OAuthOptions::default()
    })
    .await;
    let mut config = config(&fixture);
    config.scopes = vec!["read".into()];
    let client = client_with(config, &Arc::new(MemoryStore::new()));
    let provider = Arc::new(OAuthProvider::new(
        client.clone(),
        Some(BrowserStandIn::new()),
    ));
    let e = connect(&fixture, &provider)
        .await
        .expect_err("the server never grants admin");
    assert!(e.to_string().contains("insufficient_scope"), "{e}");
    let s = stats(&fixture);
    assert_eq!(s.authorizations, 1, "one attempt, one authorization: {s:?}");
    assert_eq!(s.authorization_scopes, ["read"], "{s:?}");
    assert_eq!(
        s.mcp_requests_rejected, 2,
        "the bare initialize and its one retry: {s:?}"
    );

    let mut costs = Vec::new();
    let mut gave_up = false;
    for _attempt in 0..=mcp_auth::client::MAX_STEP_UPS {
        let before = stats(&fixture).authorizations;
        let e = connect(&fixture, &provider)
            .await
            .expect_err("still refused");
        costs.push(stats(&fixture).authorizations - before);
        if e.to_string().contains("giving up") {
            gave_up = true;
            break;
        }
    }
    assert!(gave_up, "the provider never gave up: {costs:?}");
    let (last, stepped_up) = costs.split_last().expect("at least one attempt");
    assert_eq!(*last, 0, "giving up costs no authorization: {costs:?}");
    assert!(
        stepped_up.iter().all(|c| *c == 1),
        "every other attempt costs exactly one: {costs:?}"
    );
    let s = stats(&fixture);
    assert_eq!(s.authorizations, 1 + stepped_up.len() as u64, "{s:?}");
}

// ---------------------------------------------------------------------------------------------
// 8.–12. Refusals before anything is authorized

fn assert_nothing_authorized(fixture: &HttpFixture) {
    let s = stats(fixture);
    assert_eq!(
        (s.registrations, s.authorizations, s.token_requests()),
        (0, 0, 0),
        "{s:?}"
    );
}

#[tokio::test]
async fn an_issuer_mismatch_stops_metadata_discovery() {
    let fixture = start(OAuthOptions {
        issuer_override: Some("https://issuer.example.com".into()),
        ..OAuthOptions::default()
    })
    .await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    let e = client.auth_metadata(None).await.expect_err("mismatch");
    match &e {
        AuthError::IssuerMismatch {
            expected, found, ..
        } => {
            assert_eq!(expected.trim_end_matches('/'), fixture.base_url());
            assert_eq!(found, "https://issuer.example.com");
        }
        other => panic!("expected IssuerMismatch, got {other:?}"),
    }
    let e = client
        .initiate_authorization(REDIRECT_URI)
        .await
        .expect_err("mismatch");
    assert!(matches!(e, AuthError::IssuerMismatch { .. }), "{e:?}");
    assert_nothing_authorized(&fixture);
}

#[tokio::test]
async fn a_resource_mismatch_stops_metadata_discovery() {
    let fixture = start(OAuthOptions {
        resource_override: Some("https://evil.example.com/mcp".into()),
        ..OAuthOptions::default()
    })
    .await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    let e = client.auth_metadata(None).await.expect_err("mismatch");
    match &e {
        AuthError::ResourceMismatch { advertised, server } => {
            assert_eq!(advertised, "https://evil.example.com/mcp");
            assert_eq!(server, &fixture.url());
        }
        other => panic!("expected ResourceMismatch, got {other:?}"),
    }
    // Through the provider as well: the session fails, nothing is authorized.
    let provider = Arc::new(OAuthProvider::new(
        client.clone(),
        Some(BrowserStandIn::new()),
    ));
    let e = connect(&fixture, &provider)
        .await
        .expect_err("refused to authorize");
    assert!(e.to_string().contains("evil.example.com"), "{e}");
    assert_nothing_authorized(&fixture);
}

#[tokio::test]
async fn a_state_mismatch_is_refused_before_the_token_request() {
    let fixture = start(OAuthOptions {
        state_override: Some("forged-state".into()),
        ..OAuthOptions::default()
    })
    .await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    let request = client
        .initiate_authorization(REDIRECT_URI)
        .await
        .expect("initiate");
    let callback = BrowserStandIn::new()
        .visit(&request)
        .await
        .expect("callback");
    assert!(callback.code.is_some());
    let e = client
        .exchange_code(&request, &callback)
        .await
        .expect_err("state mismatch");
    match &e {
        AuthError::Callback(message) => assert!(message.contains("state"), "{message}"),
        other => panic!("expected Callback, got {other:?}"),
    }
    let s = stats(&fixture);
    assert_eq!(s.authorizations, 1);
    assert_eq!(s.token_requests(), 0, "no token request was made");
    assert!(held(&client).await.is_none());
}

#[tokio::test]
async fn a_server_without_s256_is_refused() {
    let fixture = start(OAuthOptions {
        pkce_methods: vec!["plain".into()],
        ..OAuthOptions::default()
    })
    .await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    let e = client
        .initiate_authorization(REDIRECT_URI)
        .await
        .expect_err("no S256");
    match &e {
        AuthError::Unsupported(message) => assert!(message.contains("S256"), "{message}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    assert_nothing_authorized(&fixture);
}

#[tokio::test]
async fn metadata_urls_on_plain_http_elsewhere_are_refused() {
    let fixture = start(OAuthOptions::default()).await;
    let client = client_with(config(&fixture), &Arc::new(MemoryStore::new()));
    // Parsed from a literal header: nothing connects to 192.0.2.1.
    let challenge = ResourceChallenge::parse(
        r#"Bearer error="invalid_token", resource_metadata="http://192.0.2.1/.well-known/oauth-protected-resource/mcp""#,
    )
    .expect("a Bearer challenge");
    let e = client
        .auth_metadata(Some(&challenge))
        .await
        .expect_err("insecure");
    match &e {
        AuthError::InsecureUrl { url } => assert!(url.contains("192.0.2.1"), "{url}"),
        other => panic!("expected InsecureUrl, got {other:?}"),
    }
    assert_nothing_authorized(&fixture);

    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let plain = OAuthConfig::new(
        Url::parse("http://example.com/mcp").expect("url"),
        StoreKey::new("http://example.com/mcp", "flow"),
    );
    let e = OAuthClient::new(plain, store.clone()).expect_err("plain http elsewhere");
    assert!(matches!(e, AuthError::InsecureUrl { .. }), "{e:?}");
    // https there is fine (constructing connects nowhere).
    let tls = OAuthConfig::new(
        Url::parse("https://example.com/mcp").expect("url"),
        StoreKey::new("https://example.com/mcp", "flow"),
    );
    assert!(OAuthClient::new(tls, store).is_ok());
}

// ---------------------------------------------------------------------------------------------
// 13.–14. Machine clients, logout

#[tokio::test]
async fn client_credentials_with_a_secret_need_no_authorization() {
    let fixture = start(OAuthOptions {
        preregistered: vec![
            ("machine".into(), Some("machine-secret".into())),
            ("basic-machine".into(), Some("basic-secret".into())),
        ],
        ..OAuthOptions::default()
    })
    .await;
    let machine = |id: &str, secret: &str, method: Option<TokenEndpointAuth>| {
        let mut config = config(&fixture);
        config.client_id = Some(id.into());
        config.client_secret = Some(Secret::new(secret));
        config.auth_method = method;
        config.grant = Grant::ClientCredentials { key: None };
        client_with(config, &Arc::new(MemoryStore::new()))
    };
    // Through the provider (no authorizer) and the transport.
    let client = machine("machine", "machine-secret", None);
    let provider = Arc::new(OAuthProvider::new(client.clone(), None));
    let session = connect(&fixture, &provider).await.expect("connect");
    tool_names(&session).await;
    session.close().await;
    let token = client.get_valid_token().await.expect("held token");
    assert_eq!(
        Some(token.expose().to_owned()),
        held(&client).await.map(|t| access(&t))
    );
    let s = stats(&fixture);
    assert_eq!(s.client_credentials, 1);
    assert_eq!(
        (s.registrations, s.authorizations, s.authorization_code),
        (0, 0, 0)
    );
    assert_eq!(
        s.mcp_requests_rejected, 0,
        "the first request already had a token"
    );

    // HTTP Basic as well.
    let basic = machine(
        "basic-machine",
        "basic-secret",
        Some(TokenEndpointAuth::ClientSecretBasic),
    );
    basic.get_valid_token().await.expect("basic");
    // A wrong secret is refused as invalid_client.
    let wrong = machine("machine", "not-the-secret", None);
    let e = wrong.get_valid_token().await.expect_err("wrong secret");
    match &e {
        AuthError::TokenRefused { error, grant, .. } => {
            assert_eq!(
                (error.as_str(), *grant),
                ("invalid_client", "client_credentials")
            );
        }
        other => panic!("expected TokenRefused, got {other:?}"),
    }
    let s = stats(&fixture);
    assert_eq!(
        (s.client_credentials, s.token_errors, s.authorizations),
        (3, 1, 0)
    );
}

#[tokio::test]
async fn logout_revokes_and_forgets() {
    let fixture = start(OAuthOptions::default()).await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture), &store);
    let tokens = login(&client).await;
    let client_id = registered_client_id(&store, &fixture).await;
    let note = within("logout", client.logout())
        .await
        .expect("logout")
        .expect("a note");
    assert!(note.contains("revoked"), "{note}");
    let s = stats(&fixture);
    assert_eq!(s.revocations, 2, "the refresh token and the access token");
    // What is left carries only the generation on: no tokens, no registration.
    let left = store
        .load(&store_key(&fixture))
        .await
        .expect("load")
        .expect("the logged-out entry");
    assert_eq!(
        (left.tokens, left.client, left.dpop_key),
        (None, None, None)
    );
    assert_eq!(left.generation, 2, "one above the login's");
    assert!(held(&client).await.is_none());
    // The server agrees: neither token works any more.
    let (status, body) = raw_refresh(&fixture, &client_id, &refresh(&tokens)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let response = within(
        "POST /mcp",
        reqwest::Client::new()
            .post(fixture.url())
            .bearer_auth(access(&tokens))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body("{}")
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status().as_u16(), 401);
    // And a client without tokens needs a login.
    assert!(matches!(
        client.get_valid_token().await,
        Err(AuthError::NeedsLogin(_))
    ));
}

/// The device authorization grant (RFC 8628): a device-only registration (no redirect URI),
/// the codes for the user, polling while the user has not approved (`authorization_pending`),
/// then tokens — stored like any others.
#[tokio::test]
async fn the_device_grant_polls_until_the_user_approves() {
    let fixture = start(OAuthOptions {
        device_authorization: true,
        ..OAuthOptions::default()
    })
    .await;
    let store = Arc::new(MemoryStore::new());
    let client = client_with(config(&fixture), &store);
    assert!(client
        .offers_device_authorization()
        .await
        .expect("metadata discovery"));
    let pending = within("device authorization", client.start_device_authorization())
        .await
        .expect("device authorization");
    assert!(!pending.user_code.is_empty());
    assert!(pending.verification_uri.starts_with(&fixture.base_url()));
    let approve = pending
        .verification_uri_complete
        .clone()
        .expect("the fixture offers a complete URI");
    let polling = client.complete_device_authorization(&pending);
    tokio::pin!(polling);
    // The client polls (at the server's 1 s interval) until the user approves.
    let early = tokio::time::timeout(Duration::from_millis(1500), &mut polling).await;
    assert!(early.is_err(), "tokens before the user approved");
    assert!(stats(&fixture).device_code >= 1, "no poll before approval");
    let answer = reqwest::get(&approve).await.expect("the verification page");
    assert!(answer.status().is_success());
    let tokens = within("device tokens", polling).await.expect("tokens");
    let s = stats(&fixture);
    assert_eq!(s.device_approvals, 1);
    assert_eq!(s.registrations, 1);
    assert_eq!(s.authorizations, 0, "no browser authorization");
    assert!(tokens.refresh_token.is_some());
    let stored = store
        .load(&store_key(&fixture))
        .await
        .expect("store")
        .expect("an entry");
    assert_eq!(stored.tokens, Some(tokens));
    assert_eq!(stored.client.and_then(|c| c.redirect_uri), None);
    fixture.shutdown().await;
}
