//! No secret reaches a log, a `Debug` or an error: one full flow against the fixture's OAuth
//! mode (login through [`OAuthProvider`] and the Streamable HTTP transport with a confidential
//! pre-registered client, a refresh, a revoked refresh token and the new authorization it
//! leads to, logout) with a TRACE subscriber capturing everything, then every access token,
//! refresh token, code, state, PKCE verifier and the client secret is looked for in the
//! captured output and in the `Debug` and `Display` of everything the flow produced.
//!
//! A second flow does the same for DPoP: a login, requests, a refresh and a rotated server
//! nonce against the fixture's verifying DPoP mode, then the access and refresh tokens, the
//! stored DPoP key and every proof sent are looked for the same way.
//!
//! Its own test binary, with the subscriber set for each test's thread only
//! (`tracing::subscriber::set_default`; the runtime is current-thread, so every task of the
//! client, the transport and the fixture logs into it).

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_auth::http::AuthHttp;
use mcp_auth::login::approved_callback;
use mcp_auth::{
    AuthError, Authorizer, AutoApprove, Callback, DpopKey, MemoryStore, OAuthClient, OAuthConfig,
    OAuthProvider, Secret, StoreKey, TokenSet, TokenStore, TokenType,
};
use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::{serve_http, OAuthOptions, ServerOptions};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use mcp_wire::{AuthChallenge, AuthProvider, AuthTarget, ChallengeOutcome, Credentials};
use tracing_subscriber::fmt::MakeWriter;
use url::Url;

const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";
const DEADLINE: Duration = Duration::from_secs(10);
const CLIENT_ID: &str = "confidential-app";
const CLIENT_SECRET: &str = "client-secret-5f0c1d9e8b7a";

/// The captured log output.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Ok(mut bytes) = self.0.lock() {
            bytes.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Every secret value seen, and every `Debug`/`Display` rendering to check.
#[derive(Default)]
struct Seen {
    secrets: Vec<String>,
    shown: Vec<String>,
}

/// The stand-in browser of `tests/flow.rs`, which also keeps every secret of each login.
struct RecordingBrowser {
    http: AuthHttp,
    seen: Arc<Mutex<Seen>>,
}

impl RecordingBrowser {
    fn record(&self, secrets: &[&Secret], shown: &[String]) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.secrets
                .extend(secrets.iter().map(|s| s.expose().to_owned()));
            seen.shown.extend_from_slice(shown);
        }
    }
}

#[async_trait]
impl Authorizer for RecordingBrowser {
    async fn authorize(&self, client: &OAuthClient) -> Result<TokenSet, AuthError> {
        let request = client.initiate_authorization(REDIRECT_URI).await?;
        let callback = approved_callback(&self.http, &request.url).await?;
        let code = callback
            .code
            .clone()
            .ok_or_else(|| AuthError::Callback("no code".into()))?;
        let tokens = client.exchange_code(&request, &callback).await?;
        let mut secrets = vec![&request.pkce_verifier, &request.state, &code];
        secrets.push(&tokens.access_token);
        secrets.extend(tokens.refresh_token.as_ref());
        self.record(
            &secrets,
            &[
                format!("{request:?}"),
                format!("{callback:?}"),
                format!("{tokens:?}"),
            ],
        );
        Ok(tokens)
    }
}

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

#[tokio::test]
async fn no_secret_in_logs_debug_or_errors() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(captured.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let fixture = serve_http(
        ServerOptions {
            oauth: Some(OAuthOptions {
                preregistered: vec![(CLIENT_ID.into(), Some(CLIENT_SECRET.into()))],
                ..OAuthOptions::default()
            }),
            http_no_get: true,
            ..ServerOptions::default()
        },
        "127.0.0.1:0".parse().expect("addr"),
    )
    .await
    .expect("serve_http");
    let key = StoreKey::new(fixture.url(), "logs");
    let mut config = OAuthConfig::new(Url::parse(&fixture.url()).expect("url"), key.clone());
    config.client_id = Some(CLIENT_ID.into());
    config.client_secret = Some(Secret::new(CLIENT_SECRET));
    let memory = Arc::new(MemoryStore::new());
    let store: Arc<dyn TokenStore> = memory.clone();
    let client = Arc::new(OAuthClient::new(config.clone(), store).expect("client"));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let browser = Arc::new(RecordingBrowser {
        http: AuthHttp::new().expect("http"),
        seen: seen.clone(),
    });
    let provider = Arc::new(OAuthProvider::new(client.clone(), Some(browser)));

    // Login (first 401, metadata discovery, authorization, code exchange), then a request.
    let transport =
        StreamableHttpTransport::new(HttpServerConfig::new(fixture.url()).auth(provider.clone()))
            .expect("transport");
    let options = SessionOptions::default()
        .with_request_timeout(DEADLINE)
        .with_initialize_timeout(DEADLINE);
    let session = within("connect", ClientSession::connect(transport, (), options))
        .await
        .expect("connect");
    within("tools/list", session.list_all_tools(RequestOptions::new()))
        .await
        .expect("tools/list");

    // A refresh.
    let refreshed = within("refresh", client.refresh_access_token())
        .await
        .expect("refresh");
    let stored = memory.load(&key).await.expect("load");
    let mut errors: Vec<AuthError> = Vec::new();
    if let Ok(mut seen) = seen.lock() {
        seen.secrets
            .push(refreshed.access_token.expose().to_owned());
        seen.secrets.extend(
            refreshed
                .refresh_token
                .as_ref()
                .map(|s| s.expose().to_owned()),
        );
        seen.shown.push(format!("{refreshed:?}"));
        seen.shown.push(format!("{stored:?}"));
    }

    // Every token revoked by the server: the next request gets 401, the refresh is refused
    // (logged), and the provider authorizes anew.
    let revoke_all = within(
        "revoke-all",
        reqwest::Client::new()
            .post(format!("{}/control/oauth/revoke-all", fixture.base_url()))
            .send(),
    )
    .await
    .expect("revoke-all");
    assert_eq!(revoke_all.status().as_u16(), 204);
    within("tools/list", session.list_all_tools(RequestOptions::new()))
        .await
        .expect("tools/list after a new authorization");
    let stats = fixture.oauth_stats().expect("OAuth mode");
    assert_eq!(stats.authorizations, 2, "{stats:?}");
    assert_eq!(stats.refresh_token, 2, "{stats:?}");
    assert_eq!(stats.token_errors, 1, "{stats:?}");

    // Errors that name the token endpoint and the grant.
    let revoked_refresh = refreshed.refresh_token.clone().expect("refresh token");
    let stale = Arc::new(MemoryStore::new());
    stale
        .save(
            &key,
            &mcp_auth::StoredCredentials {
                tokens: Some(TokenSet {
                    refresh_token: Some(revoked_refresh),
                    ..refreshed.clone()
                }),
                client: None,
                dpop_key: None,
                generation: 0,
                logged_out: false,
            },
        )
        .await
        .expect("save");
    let stale_store: Arc<dyn TokenStore> = stale;
    let stale_client = OAuthClient::new(config.clone(), stale_store).expect("client");
    errors.push(
        stale_client
            .refresh_access_token()
            .await
            .expect_err("revoked refresh token"),
    );
    let mut wrong = config.clone();
    wrong.client_secret = Some(Secret::new("wrong-secret-3a9b"));
    let wrong_client = OAuthClient::new(wrong, Arc::new(MemoryStore::new())).expect("client");
    let request = wrong_client
        .initiate_authorization(REDIRECT_URI)
        .await
        .expect("initiate");
    let forged = Callback {
        code: Some(Secret::new("code-forged")),
        state: Some(Secret::new("not-the-state")),
        ..Callback::default()
    };
    errors.push(
        wrong_client
            .exchange_code(&request, &forged)
            .await
            .expect_err("state mismatch"),
    );
    if let Ok(mut seen) = seen.lock() {
        seen.secrets.push(request.pkce_verifier.expose().to_owned());
        seen.secrets.push(request.state.expose().to_owned());
        seen.secrets.push("wrong-secret-3a9b".into());
        seen.shown.push(format!("{request:?}"));
        seen.shown.push(format!("{wrong_client:?}"));
    }

    // Logout revokes at the server.
    let held = client.tokens().await.expect("tokens").expect("held");
    let note = within("logout", client.logout())
        .await
        .expect("logout")
        .expect("a note");
    assert!(note.contains("revoked"), "{note}");
    assert_eq!(
        fixture.oauth_stats().expect("OAuth mode").revocations,
        2,
        "the refresh and the access token"
    );
    errors.push(client.get_valid_token().await.expect_err("logged out"));
    session.close().await;
    fixture.shutdown().await;

    let logs = captured.text();
    let mut seen = seen
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default();
    seen.secrets.push(CLIENT_SECRET.into());
    seen.secrets.push(held.access_token.expose().to_owned());
    seen.shown.extend([
        format!("{client:?}"),
        format!("{provider:?}"),
        format!("{config:?}"),
        format!("{held:?}"),
        format!("{memory:?}"),
        note.clone(),
    ]);
    for e in &errors {
        seen.shown.push(format!("{e}"));
        seen.shown.push(format!("{e:?}"));
    }
    // The flow really produced the secrets, the errors and the logs looked at.
    assert!(seen.secrets.len() >= 14, "{} secrets", seen.secrets.len());
    assert!(seen.secrets.iter().all(|s| s.len() >= 16));
    assert!(
        matches!(errors[0], AuthError::TokenRefused { .. }),
        "{}",
        errors[0]
    );
    assert!(errors[0].is_invalid_grant());
    assert!(matches!(errors[1], AuthError::Callback(_)), "{}", errors[1]);
    assert!(
        matches!(errors[2], AuthError::NeedsLogin(_)),
        "{}",
        errors[2]
    );
    for expected in [
        "OAuth metadata discovered",
        "access token refreshed",
        "refresh token refused",
    ] {
        assert!(logs.contains(expected), "the logs lack {expected:?}");
    }
    assert!(logs.contains("TRACE") || logs.contains("DEBUG"));

    for secret in &seen.secrets {
        assert!(
            !logs.contains(secret.as_str()),
            "a secret ({} characters, starting {:?}) is in the logs",
            secret.len(),
            secret.get(..3).unwrap_or_default()
        );
        for shown in &seen.shown {
            assert!(
                !shown.contains(secret.as_str()),
                "a secret is shown in {:?}",
                shown.replace(secret.as_str(), "<SECRET>")
            );
        }
    }
}

/// The provider the transport talks to, keeping every credential it hands out (the
/// `Authorization` values and DPoP proofs that went on the wire).
struct RecordingProvider {
    inner: Arc<OAuthProvider>,
    sent: Mutex<Vec<Credentials>>,
}

#[async_trait]
impl AuthProvider for RecordingProvider {
    async fn authorization(
        &self,
        target: &AuthTarget<'_>,
    ) -> Result<Option<Credentials>, mcp_core::Error> {
        let credentials = self.inner.authorization(target).await?;
        if let (Some(c), Ok(mut sent)) = (&credentials, self.sent.lock()) {
            sent.push(c.clone());
        }
        Ok(credentials)
    }

    async fn on_challenge(
        &self,
        challenge: &AuthChallenge,
    ) -> Result<ChallengeOutcome, mcp_core::Error> {
        self.inner.on_challenge(challenge).await
    }

    fn accept_nonce(&self, nonce: &str) {
        self.inner.accept_nonce(nonce);
    }
}

#[tokio::test]
async fn no_dpop_token_key_or_proof_in_logs_or_debug() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(captured.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let fixture = serve_http(
        ServerOptions {
            oauth: Some(OAuthOptions {
                dpop: true,
                dpop_nonce: true,
                ..OAuthOptions::default()
            }),
            http_no_get: true,
            ..ServerOptions::default()
        },
        "127.0.0.1:0".parse().expect("addr"),
    )
    .await
    .expect("serve_http");
    let key = StoreKey::new(fixture.url(), "dpop-logs");
    let config = OAuthConfig::new(Url::parse(&fixture.url()).expect("url"), key.clone());
    let memory = Arc::new(MemoryStore::new());
    let store: Arc<dyn TokenStore> = memory.clone();
    let client = Arc::new(OAuthClient::new(config.clone(), store).expect("client"));
    let provider = Arc::new(OAuthProvider::new(
        client.clone(),
        Some(Arc::new(
            AutoApprove::new(REDIRECT_URI).expect("authorizer"),
        )),
    ));
    let recording = Arc::new(RecordingProvider {
        inner: provider.clone(),
        sent: Mutex::new(Vec::new()),
    });

    // Login (both nonce challenges), requests, a refresh, a rotated nonce, more requests.
    let transport =
        StreamableHttpTransport::new(HttpServerConfig::new(fixture.url()).auth(recording.clone()))
            .expect("transport");
    let options = SessionOptions::default()
        .with_request_timeout(DEADLINE)
        .with_initialize_timeout(DEADLINE);
    let session = within("connect", ClientSession::connect(transport, (), options))
        .await
        .expect("connect");
    within("tools/list", session.list_all_tools(RequestOptions::new()))
        .await
        .expect("tools/list");
    let first = client.tokens().await.expect("tokens").expect("held");
    let refreshed = within("refresh", client.refresh_access_token())
        .await
        .expect("refresh");
    let rotate = within(
        "rotate-dpop-nonce",
        reqwest::Client::new()
            .post(format!(
                "{}/control/oauth/rotate-dpop-nonce",
                fixture.base_url()
            ))
            .send(),
    )
    .await
    .expect("rotate-dpop-nonce");
    assert_eq!(rotate.status().as_u16(), 204);
    within("tools/list", session.list_all_tools(RequestOptions::new()))
        .await
        .expect("tools/list after the rotation");
    session.close().await;
    let stored = memory.load(&key).await.expect("load").expect("stored");
    let stored_key = stored.dpop_key.clone().expect("a stored DPoP key");
    let dpop_key = DpopKey::from_secret(&stored_key).expect("key");
    let stats = fixture.oauth_stats().expect("OAuth mode");
    fixture.shutdown().await;

    // The flow really was a DPoP flow, with proofs accepted and nonces asked for.
    assert_eq!(first.token_type, TokenType::Dpop);
    assert_eq!(refreshed.token_type, TokenType::Dpop);
    assert!(stats.dpop_proofs_accepted >= 5, "{stats:?}");
    assert!(stats.dpop_nonce_challenges >= 3, "{stats:?}");
    assert_eq!(stats.dpop_proofs_rejected, 0, "{stats:?}");

    let sent = recording.sent.lock().map(|s| s.clone()).unwrap_or_default();
    let proofs: Vec<String> = sent
        .iter()
        .filter_map(|c| c.dpop.as_ref().map(|p| p.expose().to_owned()))
        .collect();
    assert!(proofs.len() >= 4, "{} proofs", proofs.len());
    let mut secrets: Vec<String> = vec![
        first.access_token.expose().to_owned(),
        refreshed.access_token.expose().to_owned(),
        stored_key.expose().to_owned(),
    ];
    secrets.extend(first.refresh_token.iter().map(|t| t.expose().to_owned()));
    secrets.extend(
        refreshed
            .refresh_token
            .iter()
            .map(|t| t.expose().to_owned()),
    );
    for proof in &proofs {
        secrets.push(proof.clone());
        // The signature alone is unique to the proof (its header part is the same for every
        // proof by the key, and holds only the public key).
        secrets.push(proof.rsplit('.').next().unwrap_or_default().to_owned());
        // So are its claims (with the jti and the token's hash).
        secrets.push(proof.split('.').nth(1).unwrap_or_default().to_owned());
    }
    secrets.extend(sent.iter().map(|c| c.authorization.expose().to_owned()));
    assert!(secrets.iter().all(|s| s.len() >= 16), "{secrets:?}");

    let mut shown: Vec<String> = vec![
        format!("{client:?}"),
        format!("{provider:?}"),
        format!("{config:?}"),
        format!("{first:?}"),
        format!("{refreshed:?}"),
        format!("{stored:?}"),
        format!("{memory:?}"),
        format!("{dpop_key:?}"),
    ];
    for credentials in &sent {
        shown.push(format!("{credentials:?}"));
        shown.extend(credentials.dpop.iter().map(|p| format!("{p}")));
        shown.push(format!("{}", credentials.authorization));
    }
    let logs = captured.text();
    assert!(
        logs.contains("DPoP key generated"),
        "the logs lack the key's creation"
    );
    for secret in &secrets {
        assert!(
            !logs.contains(secret.as_str()),
            "a secret ({} characters, starting {:?}) is in the logs",
            secret.len(),
            secret.get(..3).unwrap_or_default()
        );
        for shown in &shown {
            assert!(
                !shown.contains(secret.as_str()),
                "a secret is shown in {:?}",
                shown.replace(secret.as_str(), "<SECRET>")
            );
        }
    }
}
