//! OAuth metadata discovery does not become a way into the client's network: a 401 may not send the
//! client to another origin's resource metadata, and metadata may not name authorization
//! servers or endpoints on addresses outside the MCP server's kind of network
//! (`mcp_auth::address_policy`). Hostile servers are small loopback responders that count the
//! connections they get, so "refused" also means "never contacted". A public MCP server is
//! played by a loopback one with [`AddressPolicy::PublicOnly`] given explicitly (the decision
//! itself is unit-tested over addresses); the fixture's OAuth mode shows that a loopback
//! server still logs in.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use mcp_auth::address_policy::{
    AddressGuard, AddressPolicy, HostResolver, ProxyRoutes, SystemResolver,
};
use mcp_auth::http::AuthHttp;
use mcp_auth::metadata::fetch_metadata;
use mcp_auth::{AuthError, Authorizer, AutoApprove, MemoryStore, OAuthConfig, ResourceChallenge};
use mcp_testkit::OAuthOptions;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use url::Url;

mod common;

use common::{client_with, start, within, REDIRECT_URI};

// ---------------------------------------------------------------------------------------------
// Harness

/// One canned answer: a path, a status, extra headers and a JSON body.
struct Route {
    path: String,
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Route {
    fn json(path: impl Into<String>, body: serde_json::Value) -> Route {
        Route {
            path: path.into(),
            status: 200,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }
}

/// A loopback HTTP/1.1 server answering from a fixed table (404 elsewhere), one connection at
/// a time, counting connections. Its task ends when it is dropped.
struct Responder {
    origin: String,
    connections: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Responder {
    /// Binds, then answers with the routes `routes` builds from the responder's origin.
    async fn start(routes: impl FnOnce(&str) -> Vec<Route>) -> Responder {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("addr"));
        let routes = routes(&origin);
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let Ok(Some(path)) =
                    tokio::time::timeout(common::DEADLINE, read_request(&mut stream)).await
                else {
                    continue;
                };
                let answer = match routes.iter().find(|r| r.path == path) {
                    Some(route) => {
                        let mut head = format!("HTTP/1.1 {} Canned\r\n", route.status);
                        for (name, value) in &route.headers {
                            head.push_str(&format!("{name}: {value}\r\n"));
                        }
                        format!(
                            "{head}content-type: application/json\r\ncontent-length: {}\r\n\
                             connection: close\r\n\r\n{}",
                            route.body.len(),
                            route.body
                        )
                    }
                    None => {
                        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_owned()
                    }
                };
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            }
        });
        Responder {
            origin,
            connections,
            task,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn port(&self) -> u16 {
        Url::parse(&self.origin)
            .expect("origin")
            .port()
            .expect("port")
    }
}

/// The path of one request (its head and `content-length` body read), or `None` when the
/// peer sent no complete request (a TLS handshake, a closed connection).
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || data.len() > 64 * 1024 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        // A TLS handshake (record type 22) is not for this plain-HTTP responder.
        if data[0] == 0x16 {
            return None;
        }
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    }
    let target = head.split_whitespace().nth(1)?;
    Some(target.split('?').next().unwrap_or(target).to_owned())
}

fn config_for(server_url: &str) -> OAuthConfig {
    let url = Url::parse(server_url).expect("server URL");
    OAuthConfig::new(url, mcp_auth::StoreKey::new(server_url, "ssrf"))
}

/// The client of a server taken to be on a public address.
fn public_server_http(config: &OAuthConfig) -> AuthHttp {
    AuthHttp::with_resolver(
        config,
        Arc::new(SystemResolver),
        Some(AddressPolicy::PublicOnly),
    )
    .expect("http")
}

const PRM_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

// ---------------------------------------------------------------------------------------------
// The 401's resource_metadata

#[tokio::test]
async fn a_challenge_naming_another_origins_resource_metadata_is_refused_uncontacted() {
    let elsewhere = Responder::start(|origin| {
        vec![Route::json(
            PRM_PATH,
            json!({ "resource": format!("{origin}/mcp"), "authorization_servers": [origin] }),
        )]
    })
    .await;
    let foreign = format!("{}{PRM_PATH}", elsewhere.origin);
    let challenge = format!("Bearer resource_metadata=\"{foreign}\"");
    let server = Responder::start(|_| {
        vec![Route {
            path: "/mcp".into(),
            status: 401,
            headers: vec![("www-authenticate".into(), challenge)],
            body: "{}".into(),
        }]
    })
    .await;
    let config = config_for(&format!("{}/mcp", server.origin));
    let client = client_with(config, &Arc::new(MemoryStore::new()));

    let started = Instant::now();
    let error = within("probe", client.probe()).await.unwrap_err();
    eprintln!(
        "foreign resource_metadata refused after {:?}: {error}",
        started.elapsed()
    );
    assert!(
        matches!(error, AuthError::ForeignResourceMetadata { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(&foreign), "{message}");
    assert!(message.contains(&server.origin), "{message}");
    assert!(message.contains("resource_metadata_origins"), "{message}");
    assert_eq!(
        elsewhere.connections(),
        0,
        "the foreign origin was contacted"
    );
    assert_eq!(server.connections(), 1, "only the probe reached the server");
    assert_eq!(
        mcp_core::Error::from(error).kind(),
        mcp_core::ErrorKind::Auth
    );
}

#[tokio::test]
async fn an_allowed_resource_metadata_origin_is_followed_and_the_login_completes() {
    let fixture = start(OAuthOptions::default()).await;
    let issuer = fixture.base_url();
    let resource = fixture.url();
    let elsewhere = Responder::start(|_| {
        vec![Route::json(
            PRM_PATH,
            json!({ "resource": resource, "authorization_servers": [issuer] }),
        )]
    })
    .await;
    let mut config = common::config(&fixture, "ssrf-allowed");
    config.resource_metadata_origins = vec![Url::parse(&elsewhere.origin).expect("origin")];
    let client = client_with(config, &Arc::new(MemoryStore::new()));
    let challenge = ResourceChallenge {
        resource_metadata: Some(format!("{}{PRM_PATH}", elsewhere.origin)),
        ..ResourceChallenge::default()
    };
    let metadata = within("metadata discovery", client.auth_metadata(Some(&challenge)))
        .await
        .expect("metadata discovery through an allowed origin");
    assert_eq!(
        metadata.authorization_server.issuer.trim_end_matches('/'),
        fixture.base_url().trim_end_matches('/')
    );
    assert_eq!(elsewhere.connections(), 1);
    let approve = AutoApprove::new(REDIRECT_URI).expect("authorizer");
    let tokens = within("login", approve.authorize(&client))
        .await
        .expect("login");
    assert!(!tokens.access_token.expose().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Addresses

#[tokio::test]
async fn a_loopback_mcp_server_logs_in_with_its_loopback_authorization_server() {
    let fixture = start(OAuthOptions::default()).await;
    let client = client_with(
        common::config(&fixture, "ssrf-loopback"),
        &Arc::new(MemoryStore::new()),
    );
    let approve = AutoApprove::new(REDIRECT_URI).expect("authorizer");
    within("login", approve.authorize(&client))
        .await
        .expect("a loopback server's loopback authorization server is allowed");
    let token = within("token", client.get_valid_token())
        .await
        .expect("token");
    assert!(!token.expose().is_empty());
}

#[tokio::test]
async fn a_public_servers_metadata_naming_internal_authorization_servers_is_refused() {
    let bystander = Responder::start(|origin| {
        vec![Route::json(
            "/.well-known/oauth-authorization-server",
            json!({ "issuer": origin }),
        )]
    })
    .await;
    let port = bystander.port();
    // Each authorization server, and what the address it is refused for must be.
    type Expected = fn(IpAddr) -> bool;
    let cases: Vec<(String, Expected)> = vec![
        ("https://169.254.169.254".into(), |ip| {
            ip == IpAddr::from([169, 254, 169, 254])
        }),
        ("https://[::ffff:169.254.169.254]".into(), |ip| {
            ip.to_string() == "::ffff:169.254.169.254"
        }),
        (format!("http://localhost:{port}"), |ip| ip.is_loopback()),
        (format!("http://127.0.0.1:{port}/tenant"), |ip| {
            ip.is_loopback()
        }),
        ("https://10.0.0.1".into(), |ip| {
            ip == IpAddr::from([10, 0, 0, 1])
        }),
    ];
    for (authorization_server, expected) in cases {
        let server = Responder::start(|origin| {
            vec![Route::json(
                PRM_PATH,
                json!({
                    "resource": format!("{origin}/mcp"),
                    "authorization_servers": [authorization_server],
                }),
            )]
        })
        .await;
        let config = config_for(&format!("{}/mcp", server.origin));
        let http = public_server_http(&config);
        let started = Instant::now();
        let error = within(
            "metadata discovery",
            fetch_metadata(&http, &config.server_url, None),
        )
        .await
        .unwrap_err();
        eprintln!(
            "{authorization_server}: refused after {:?}: {error}",
            started.elapsed()
        );
        let AuthError::RefusedAddress { address, url, .. } = &error else {
            panic!("{authorization_server}: {error:?}");
        };
        assert!(expected(*address), "{authorization_server}: {address}");
        let origin = Url::parse(&authorization_server)
            .expect("url")
            .origin()
            .ascii_serialization();
        assert!(url.starts_with(&origin), "{authorization_server}: {url}");
        let message = error.to_string();
        assert!(message.contains(&address.to_string()), "{message}");
        assert!(message.contains("public address"), "{message}");
        // The resource metadata came from the server's own origin, which is always allowed.
        assert_eq!(server.connections(), 1, "{authorization_server}");
    }
    assert_eq!(
        bystander.connections(),
        0,
        "an internal address was contacted"
    );
}

#[tokio::test]
async fn the_configured_address_policy_replaces_the_one_the_servers_addresses_give() {
    let bystander = Responder::start(|_| Vec::new()).await;
    let server = Responder::start(|_| Vec::new()).await;
    let token = Url::parse(&format!("http://127.0.0.1:{}/token", bystander.port())).expect("url");
    // The server is on loopback, so by its addresses its requests may go to loopback; the
    // configuration says public only.
    let mut config = config_for(&format!("{}/mcp", server.origin));
    config.address_policy = Some(AddressPolicy::PublicOnly);
    let http = AuthHttp::for_config(&config).expect("http");
    let error = within("post", http.post_json(&token, &json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(error, AuthError::RefusedAddress { .. }),
        "{error:?}"
    );
    assert_eq!(bystander.connections(), 0);
    config.address_policy = Some(AddressPolicy::AlsoLocalNetwork);
    let http = AuthHttp::for_config(&config).expect("http");
    let answer = within("post", http.post_json(&token, &json!({})))
        .await
        .expect("allowed by the configured policy");
    assert_eq!(answer.status, 404);
    assert_eq!(bystander.connections(), 1);
}

#[tokio::test]
async fn endpoints_learned_from_metadata_are_checked_before_each_request() {
    let bystander = Responder::start(|_| Vec::new()).await;
    let server = Responder::start(|_| Vec::new()).await;
    let config = config_for(&format!("{}/mcp", server.origin));
    let http = public_server_http(&config);
    for endpoint in [
        format!("http://localhost:{}/register", bystander.port()),
        format!("http://127.0.0.1:{}/token", bystander.port()),
        "https://169.254.169.254/device".to_owned(),
    ] {
        let url = Url::parse(&endpoint).expect("url");
        let error = within("post", http.post_json(&url, &json!({})))
            .await
            .unwrap_err();
        assert!(
            matches!(error, AuthError::RefusedAddress { .. }),
            "{endpoint}: {error:?}"
        );
    }
    assert_eq!(bystander.connections(), 0);
    // The server's own origin stays reachable.
    let own = Url::parse(&format!("{}/anything", server.origin)).expect("url");
    let answer = within("get", http.get_json(&own))
        .await
        .expect("own origin");
    assert_eq!(answer.status, 404);
}

/// A resolver with one fixed answer, counting lookups.
#[derive(Debug)]
struct OneAnswer {
    address: IpAddr,
    lookups: AtomicUsize,
}

#[async_trait]
impl HostResolver for OneAnswer {
    async fn lookup(&self, _host: &str) -> std::io::Result<Vec<IpAddr>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        Ok(vec![self.address])
    }
}

#[tokio::test]
async fn connections_go_to_the_addresses_that_were_checked() {
    // `oauth.test` (a reserved name no resolver answers) reaches the responder only if the
    // connection uses the checked answer; it is not TLS, so the request itself then fails.
    let target = Responder::start(|_| Vec::new()).await;
    let server = Responder::start(|_| Vec::new()).await;
    let config = config_for(&format!("{}/mcp", server.origin));
    let resolver = Arc::new(OneAnswer {
        address: IpAddr::from([127, 0, 0, 1]),
        lookups: AtomicUsize::new(0),
    });
    let http = AuthHttp::with_resolver(
        &config,
        resolver.clone(),
        Some(AddressPolicy::AlsoLocalNetwork),
    )
    .expect("http");
    let url = Url::parse(&format!("https://oauth.test:{}/token", target.port())).expect("url");
    let error = within("get", http.get_json(&url)).await.unwrap_err();
    assert!(matches!(error, AuthError::Http(_)), "{error:?}");
    assert_eq!(target.connections(), 1, "the checked address was not used");
    assert_eq!(
        resolver.lookups.load(Ordering::SeqCst),
        1,
        "one lookup per request"
    );
}

#[tokio::test]
async fn a_server_named_localhost_is_on_the_local_network() {
    let server = Url::parse("http://localhost:1/mcp").expect("url");
    let guard = AddressGuard::new(&server, Vec::new(), Arc::new(SystemResolver), None)
        .with_proxy_routes(ProxyRoutes::direct());
    assert_eq!(
        within("policy", guard.policy()).await,
        AddressPolicy::AlsoLocalNetwork
    );
}

// ---------------------------------------------------------------------------------------------
// Machines without direct DNS, and proxies

/// The resolver of a machine with no DNS of its own (everything goes through a proxy): every
/// lookup fails, and is counted.
#[derive(Debug, Default)]
struct NoDns {
    lookups: AtomicUsize,
}

#[async_trait]
impl HostResolver for NoDns {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        Err(std::io::Error::other(format!(
            "failed to lookup address information: Temporary failure in name resolution ({host})"
        )))
    }
}

fn url(text: &str) -> Url {
    Url::parse(text).expect("url")
}

#[tokio::test]
async fn a_server_this_machine_cannot_resolve_is_public_and_metadata_discovery_goes_on() {
    let resolver = Arc::new(NoDns::default());
    let guard = AddressGuard::new(
        &url("https://mcp.example.com/mcp"),
        Vec::new(),
        resolver.clone(),
        None,
    )
    .with_proxy_routes(ProxyRoutes::direct());
    assert_eq!(
        within("policy", guard.policy()).await,
        AddressPolicy::PublicOnly
    );
    // Literal addresses are still judged by that policy.
    let error = within("admit", guard.admit(&url("https://169.254.169.254/")))
        .await
        .unwrap_err();
    assert!(
        matches!(error, AuthError::RefusedAddress { .. }),
        "{error:?}"
    );
    // A metadata host that cannot be resolved either is a connection error of that request,
    // not an address refusal, and it is not sent unchecked.
    let token = url("https://auth.example.com/token");
    let error = within("admit", guard.admit(&token)).await.unwrap_err();
    let AuthError::Http(message) = &error else {
        panic!("{error:?}");
    };
    assert!(
        message.starts_with(
            "request to https://auth.example.com/token failed: cannot resolve auth.example.com"
        ),
        "{message}"
    );
    assert_eq!(
        mcp_core::Error::from(error).kind(),
        mcp_core::ErrorKind::Network
    );
    // The server's lookup is made once, the metadata host's once.
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn through_a_proxy_requests_are_checked_by_name_without_lookups() {
    let resolver = Arc::new(NoDns::default());
    let proxies = ProxyRoutes::new(None, Some("http://proxy.corp:3128"), None, "");
    let guard = AddressGuard::new(
        &url("https://mcp.example.com/mcp"),
        Vec::new(),
        resolver.clone(),
        None,
    )
    .with_proxy_routes(proxies.clone());
    assert_eq!(
        within("policy", guard.policy()).await,
        AddressPolicy::PublicOnly
    );
    // Other names are the proxy's to resolve: allowed, never looked up here.
    for allowed in [
        "https://auth.example.com/token",
        "https://login.internal.corp/authorize",
    ] {
        within("admit", guard.admit(&url(allowed)))
            .await
            .unwrap_or_else(|e| panic!("{allowed}: {e}"));
    }
    // Addresses, and localhost by name, are refused as without a proxy.
    for (refused, address) in [
        (
            "https://169.254.169.254/latest/meta-data/",
            "169.254.169.254",
        ),
        ("https://10.0.0.1/token", "10.0.0.1"),
        ("https://[::1]/token", "::1"),
        ("https://localhost/token", "127.0.0.1"),
        ("https://metadata.localhost./token", "127.0.0.1"),
    ] {
        let error = within("admit", guard.admit(&url(refused)))
            .await
            .unwrap_err();
        let AuthError::RefusedAddress { address: got, .. } = &error else {
            panic!("{refused}: {error:?}");
        };
        assert_eq!(got.to_string(), address, "{refused}");
        assert!(error.to_string().contains("public address"), "{error}");
    }
    assert_eq!(
        resolver.lookups.load(Ordering::SeqCst),
        0,
        "a proxied name was resolved on this machine"
    );

    // A server reached through the proxy as localhost is on the local network.
    let local = AddressGuard::new(
        &url("https://localhost:8443/mcp"),
        Vec::new(),
        resolver.clone(),
        None,
    )
    .with_proxy_routes(proxies);
    assert_eq!(
        within("policy", local.policy()).await,
        AddressPolicy::AlsoLocalNetwork
    );
    within("admit", local.admit(&url("https://192.168.1.20/token")))
        .await
        .expect("a local server's private authorization server");
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn hosts_in_no_proxy_are_resolved_and_checked_as_without_a_proxy() {
    let resolver = Arc::new(OneAnswer {
        address: IpAddr::from([10, 0, 0, 7]),
        lookups: AtomicUsize::new(0),
    });
    let guard = AddressGuard::new(
        &url("https://mcp.example.com/mcp"),
        Vec::new(),
        resolver.clone(),
        Some(AddressPolicy::PublicOnly),
    )
    .with_proxy_routes(ProxyRoutes::new(
        Some("http://proxy.corp:3128"),
        None,
        None,
        "internal.corp",
    ));
    let error = within(
        "admit",
        guard.admit(&url("https://sso.internal.corp/token")),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, AuthError::RefusedAddress { address, .. } if address == IpAddr::from([10, 0, 0, 7])),
        "{error:?}"
    );
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 1);
    within("admit", guard.admit(&url("https://auth.example.com/token")))
        .await
        .expect("proxied, by name");
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 1);
}
