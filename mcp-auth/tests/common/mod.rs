//! The harness `flow.rs` and `dpop.rs` share: the fixture in OAuth mode, clients and configs
//! for it, sessions through the real Streamable HTTP transport, the fixture's control
//! endpoints, and waits with a deadline.

#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_auth::{MemoryStore, OAuthClient, OAuthConfig, OAuthProvider, StoreKey, TokenStore};
use mcp_session::{ClientSession, SessionOptions};
use mcp_testkit::{serve_http, HttpFixture, OAuthOptions, OAuthStats, ServerOptions};
use mcp_transport_http::{HttpServerConfig, StreamableHttpTransport};
use url::Url;

/// Nothing listens here: the stand-in browser reads the redirect's `Location` instead.
pub const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";
/// The bound of every wait.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// The fixture in OAuth mode, without the standalone GET stream (405), so that the only
/// requests are the ones a test makes.
pub async fn start(oauth: OAuthOptions) -> HttpFixture {
    let options = ServerOptions {
        oauth: Some(oauth),
        http_no_get: true,
        ..ServerOptions::default()
    };
    serve_http(options, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve_http")
}

/// The fixture's OAuth counters.
pub fn stats(fixture: &HttpFixture) -> OAuthStats {
    fixture.oauth_stats().expect("the fixture is in OAuth mode")
}

/// Where `account`'s tokens for the fixture are kept.
pub fn store_key(fixture: &HttpFixture, account: &str) -> StoreKey {
    StoreKey::new(fixture.url(), account)
}

/// An authorization code config for the fixture, its tokens under `account`.
pub fn config(fixture: &HttpFixture, account: &str) -> OAuthConfig {
    let url = Url::parse(&fixture.url()).expect("fixture URL");
    let mut config = OAuthConfig::new(url, store_key(fixture, account));
    config.client_name = format!("mcp-auth {account} test");
    config
}

/// A client for `config` keeping its tokens in `store`.
pub fn client_with(config: OAuthConfig, store: &Arc<MemoryStore>) -> Arc<OAuthClient> {
    let store: Arc<dyn TokenStore> = store.clone();
    Arc::new(OAuthClient::new(config, store).expect("client"))
}

/// `future`, or a panic naming `what` after [`DEADLINE`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// A session with the fixture through the Streamable HTTP transport, authorized by `provider`.
pub async fn connect(
    fixture: &HttpFixture,
    provider: &Arc<OAuthProvider>,
) -> Result<ClientSession, mcp_core::Error> {
    let config = HttpServerConfig::new(fixture.url()).auth(provider.clone());
    let transport = StreamableHttpTransport::new(config).expect("transport");
    let options = SessionOptions::default()
        .with_client_info("mcp-auth-test", "0")
        .with_request_timeout(DEADLINE)
        .with_initialize_timeout(DEADLINE);
    within("connect", ClientSession::connect(transport, (), options)).await
}

/// `POST /control/oauth/<what>` (`expire-tokens`, `revoke-all`, `rotate-dpop-nonce`).
pub async fn control(fixture: &HttpFixture, what: &str) {
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
