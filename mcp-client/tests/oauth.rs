//! OAuth in the facade, against the fixture's OAuth mode (a protected `/mcp` with its own
//! authorization server): a server that needs a login is `needs-auth` with the hint and never
//! blocks the others; after a login (through the same policy, as `mcph auth login` does) its
//! tools are there; a stdio server gets the stored token of its protected resource in the
//! variable `oauth.token_env`; `oauth: false` and a configured `Authorization` header turn
//! OAuth off.
#![cfg(feature = "oauth")]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_auth::address_policy::AddressPolicy;
use mcp_auth::{Authorizer, AutoApprove, DpopMode, MemoryStore, TokenSet, TokenType};
use mcp_client::config::{
    AddressPolicySetting, ClientConfig, DpopSetting, ServerConfig, TransportConfig,
};
use mcp_client::{ClientOptions, McpClient, OAuthPolicy, ServerStatus};
use mcp_testkit::options::{parse_args, CliCommand};
use mcp_testkit::{HttpFixture, OAuthOptions};

const DEADLINE: Duration = Duration::from_secs(20);

async fn protected_fixture() -> HttpFixture {
    fixture_with(OAuthOptions::default()).await
}

async fn fixture_with(oauth: OAuthOptions) -> HttpFixture {
    let Ok(CliCommand::Run(mut options)) = parse_args(Vec::<String>::new()) else {
        panic!("default fixture options")
    };
    options.oauth = Some(oauth);
    mcp_testkit::http::serve_http(options, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the HTTP fixture listens")
}

fn remote(name: &str, url: String) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Http {
            url,
            headers: BTreeMap::new(),
        },
    )
}

fn stdio(name: &str, command: &str, args: Vec<String>) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command: command.into(),
            args,
            env: BTreeMap::new(),
            cwd: None,
        },
    )
}

fn fixture_stdio(name: &str) -> ServerConfig {
    let bin = mcp_testkit::fixture_server_bin();
    stdio(name, &bin.to_string_lossy(), vec![])
}

async fn start(servers: Vec<ServerConfig>, policy: &OAuthPolicy) -> McpClient {
    let config = ClientConfig {
        servers,
        source: None,
        region: None,
        store: None,
    };
    tokio::time::timeout(
        DEADLINE,
        McpClient::builder(config)
            .options(ClientOptions::default())
            .oauth(policy.clone())
            .start(),
    )
    .await
    .expect("start is bounded by the startup timeouts")
}

fn status_of(client: &McpClient, name: &str) -> ServerStatus {
    client
        .servers()
        .into_iter()
        .find(|s| s.name == name)
        .map(|s| s.status)
        .expect("the server is configured")
}

/// Logs in to `server` through `policy`, the way `mcph auth login` does.
async fn login(policy: &OAuthPolicy, server: &ServerConfig) -> TokenSet {
    let client = policy
        .client_for(server)
        .expect("a valid OAuth config")
        .expect("the server uses OAuth");
    client
        .probe()
        .await
        .expect("metadata discovery")
        .expect("the server asks for authorization");
    let approve = AutoApprove::new("http://127.0.0.1:9/callback").expect("an HTTP client");
    tokio::time::timeout(DEADLINE, approve.authorize(&client))
        .await
        .expect("the login is bounded")
        .expect("the login succeeds")
}

#[tokio::test]
async fn a_server_that_needs_a_login_is_needs_auth_and_the_others_run() {
    let fixture = protected_fixture().await;
    let policy = OAuthPolicy::default()
        .with_store(Arc::new(MemoryStore::new()))
        .with_login_hint(|name| format!("log in with `my-harness login {name}`"));
    let protected = remote("protected", fixture.url());
    let client = start(vec![protected.clone(), fixture_stdio("local")], &policy).await;
    match status_of(&client, "protected") {
        ServerStatus::NeedsCredentials { reason } => {
            assert!(reason.contains("my-harness login protected"), "{reason}");
        }
        other => panic!("expected needs-auth, got {other:?}"),
    }
    assert_eq!(status_of(&client, "protected").label(), "needs-auth");
    assert!(status_of(&client, "local").is_ready());
    assert!(client
        .tools()
        .entries()
        .iter()
        .any(|t| t.qualified_name.starts_with("local__")));
    client.shutdown().await;

    // A login through the same policy; the next client finds the tokens in the store.
    login(&policy, &protected).await;
    let client = start(vec![protected], &policy).await;
    assert!(status_of(&client, "protected").is_ready());
    assert!(client
        .tools()
        .entries()
        .iter()
        .any(|t| t.qualified_name == "protected__add"));
    let stats = fixture.oauth_stats().expect("OAuth mode");
    assert_eq!(stats.registrations, 1);
    assert_eq!(stats.authorizations, 1);
    client.shutdown().await;
    fixture.shutdown().await;
}

#[tokio::test]
async fn oauth_is_off_with_oauth_false_or_an_own_authorization_header() {
    let fixture = protected_fixture().await;
    let policy = OAuthPolicy::default().with_store(Arc::new(MemoryStore::new()));
    let mut off = remote("off", fixture.url());
    off.oauth.disabled = true;
    let header = ServerConfig::new(
        "header",
        TransportConfig::Http {
            url: fixture.url(),
            headers: BTreeMap::from([("Authorization".to_owned(), "Bearer wrong".to_owned())]),
        },
    );
    assert!(policy.client_for(&off).unwrap().is_none());
    assert!(policy.client_for(&header).unwrap().is_none());
    let client = start(vec![off, header], &policy).await;
    for name in ["off", "header"] {
        // Refused without any OAuth flow: no login (metadata discovery first) was attempted.
        assert_eq!(status_of(&client, name).label(), "needs-auth", "{name}");
    }
    let stats = fixture.oauth_stats().expect("OAuth mode");
    assert_eq!(stats.registrations, 0);
    client.shutdown().await;
    fixture.shutdown().await;
}

#[tokio::test]
async fn a_stdio_server_gets_the_stored_token_in_its_environment() {
    let fixture = protected_fixture().await;
    let policy = OAuthPolicy::default().with_store(Arc::new(MemoryStore::new()));
    let dir = std::env::temp_dir().join(format!("mcp-client-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let seen = dir.join("token-seen");
    // The child writes what it got in API_TOKEN, then becomes the fixture server.
    let script = format!(
        "printf %s \"$API_TOKEN\" > '{}' && exec '{}'",
        seen.display(),
        mcp_testkit::fixture_server_bin().display()
    );
    let mut local = stdio("local", "sh", vec!["-c".into(), script]);
    local.oauth.resource = Some(fixture.url());
    local.oauth.token_env = Some("API_TOKEN".into());

    // Before a login: the stdio server needs auth too (and is never started without a token).
    let client = start(vec![local.clone()], &policy).await;
    assert_eq!(status_of(&client, "local").label(), "needs-auth");
    assert!(!seen.exists(), "the server was started without a token");
    client.shutdown().await;

    let tokens = login(&policy, &remote("resource", fixture.url())).await;
    let client = start(vec![local], &policy).await;
    assert!(status_of(&client, "local").is_ready());
    let got = std::fs::read_to_string(&seen).expect("the child wrote its token");
    assert_eq!(got, tokens.access_token.expose());
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    fixture.shutdown().await;
}

/// A stdio server whose resource's stored token is DPoP-bound (a login through a remote entry
/// with the same URL, against a server that takes only bound tokens): it is not started, with
/// an error that says why — and the token was not refreshed first. The fixture's tokens live
/// 30 s, inside the 60 s refresh margin, so any refresh before the refusal would happen at once.
#[tokio::test]
async fn a_stdio_server_is_refused_a_dpop_bound_token_without_a_refresh() {
    let fixture = fixture_with(OAuthOptions {
        dpop: true,
        token_ttl_secs: 30,
        ..OAuthOptions::default()
    })
    .await;
    let policy = OAuthPolicy::default().with_store(Arc::new(MemoryStore::new()));
    let tokens = login(&policy, &remote("resource", fixture.url())).await;
    assert_eq!(tokens.token_type, TokenType::Dpop);

    let dir = std::env::temp_dir().join(format!("mcp-client-oauth-dpop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let started = dir.join("started");
    let script = format!(
        "touch '{}' && exec '{}'",
        started.display(),
        mcp_testkit::fixture_server_bin().display()
    );
    let mut local = stdio("local", "sh", vec!["-c".into(), script]);
    local.oauth.resource = Some(fixture.url());
    local.oauth.token_env = Some("API_TOKEN".into());
    let client = start(vec![local], &policy).await;
    let reason = match status_of(&client, "local") {
        ServerStatus::NeedsCredentials { reason } | ServerStatus::Unavailable { reason, .. } => {
            reason
        }
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(reason.contains("DPoP-bound"), "{reason}");
    assert!(!started.exists(), "the server was started");
    // Nothing may refresh the token while the client runs either (its refresh token would
    // be rotated for nothing). The token is due at once, so a refresh — by the server's
    // background refresher, say — would come within milliseconds: none may come within a
    // second.
    let refreshed = tokio::time::timeout(Duration::from_secs(1), async {
        while fixture.oauth_stats().expect("OAuth mode").refresh_token == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let stats = fixture.oauth_stats().expect("OAuth mode");
    assert!(
        refreshed.is_err(),
        "the DPoP-bound token of a refused stdio server was refreshed: {stats:?}"
    );
    assert_eq!(stats.token_requests(), 1, "only the login's code exchange");
    client.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    fixture.shutdown().await;
}

#[test]
fn oauth_address_settings_reach_the_oauth_config() {
    let mut api = remote("api", "https://api.example.com/mcp".into());
    let config = mcp_client::auth::oauth_config(&api).unwrap().unwrap();
    assert!(config.resource_metadata_origins.is_empty());
    assert_eq!(config.address_policy, None);

    api.oauth.resource_metadata_origins = vec!["https://meta.example.com".into()];
    for (setting, policy) in [
        (AddressPolicySetting::Auto, None),
        (
            AddressPolicySetting::Public,
            Some(AddressPolicy::PublicOnly),
        ),
        (
            AddressPolicySetting::LocalNetwork,
            Some(AddressPolicy::AlsoLocalNetwork),
        ),
        (
            AddressPolicySetting::LinkLocal,
            Some(AddressPolicy::AlsoLinkLocal),
        ),
    ] {
        api.oauth.address_policy = setting;
        let config = mcp_client::auth::oauth_config(&api).unwrap().unwrap();
        assert_eq!(config.address_policy, policy);
        let origins: Vec<&str> = config
            .resource_metadata_origins
            .iter()
            .map(|u| u.as_str())
            .collect();
        assert_eq!(origins, ["https://meta.example.com/"]);
    }
}

#[test]
fn a_token_handed_to_a_child_process_is_never_dpop_bound() {
    let mut local = stdio("local", "tool", Vec::new());
    local.oauth.resource = Some("https://api.example.com/mcp".into());
    local.oauth.token_env = Some("API_TOKEN".into());
    local.oauth.dpop = DpopSetting::Always;
    let config = mcp_client::auth::oauth_config(&local).unwrap().unwrap();
    assert_eq!(config.dpop, DpopMode::Never);

    let mut api = remote("api", "https://api.example.com/mcp".into());
    for (setting, mode) in [
        (DpopSetting::Auto, DpopMode::Auto),
        (DpopSetting::Always, DpopMode::Always),
        (DpopSetting::Never, DpopMode::Never),
    ] {
        api.oauth.dpop = setting;
        let config = mcp_client::auth::oauth_config(&api).unwrap().unwrap();
        assert_eq!(config.dpop, mode);
    }
}
