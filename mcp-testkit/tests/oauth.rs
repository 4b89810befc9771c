//! The fixture's OAuth mode over real HTTP (reqwest, redirects not followed), on 127.0.0.1:0:
//! metadata documents, the `/mcp` gate, registration, authorization, token grants and the
//! control endpoints. Every wait has a deadline.

use std::future::Future;
use std::time::Duration;

use base64::Engine;
use mcp_testkit::{serve_http, HttpFixture, OAuthOptions, OAuthStats, ServerOptions};
use reqwest::{Client, Response, StatusCode};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const DEADLINE: Duration = Duration::from_secs(10);
const REDIRECT: &str = "http://127.0.0.1:9/callback";
const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

async fn start(oauth: OAuthOptions) -> HttpFixture {
    let options = ServerOptions {
        oauth: Some(oauth),
        ..ServerOptions::default()
    };
    serve_http(options, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve_http")
}

fn client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

fn stats(fixture: &HttpFixture) -> OAuthStats {
    fixture.oauth_stats().expect("OAuth mode")
}

async fn json_of(response: Response) -> Value {
    let text = within("body", response.text()).await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

async fn get(client: &Client, url: &str) -> Response {
    within("GET", client.get(url).send()).await.expect("GET")
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(n, v)| format!("{}={}", enc(n), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

async fn post_form(client: &Client, url: &str, pairs: &[(&str, &str)]) -> Response {
    within(
        "POST form",
        client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(pairs))
            .send(),
    )
    .await
    .expect("POST")
}

/// POSTs an `initialize` to `/mcp` with `token` (if any).
async fn initialize(client: &Client, fixture: &HttpFixture, token: Option<&str>) -> Response {
    let mut request = client
        .post(fixture.url())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "oauth-test", "version": "0"}
                }
            })
            .to_string(),
        );
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    within("initialize", request.send())
        .await
        .expect("initialize")
}

fn challenge(response: &Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no WWW-Authenticate on {}", response.status()))
        .to_owned()
}

/// Registers a public client; returns its id.
async fn register(client: &Client, fixture: &HttpFixture) -> String {
    let response = within(
        "register",
        client
            .post(format!("{}/register", fixture.base_url()))
            .header("content-type", "application/json")
            .body(
                json!({ "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none" })
                    .to_string(),
            )
            .send(),
    )
    .await
    .expect("register");
    assert_eq!(response.status(), StatusCode::CREATED);
    let answer = json_of(response).await;
    assert_eq!(answer["token_endpoint_auth_method"], "none");
    answer["client_id"].as_str().expect("client_id").to_owned()
}

/// Authorizes `client_id` (S256 of [`VERIFIER`]); returns the redirect's query pairs.
async fn authorize(
    client: &Client,
    fixture: &HttpFixture,
    client_id: &str,
    scope: &str,
) -> Vec<(String, String)> {
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(VERIFIER.as_bytes()));
    let url = format!(
        "{}/authorize?{}",
        fixture.base_url(),
        form(&[
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", "st-1"),
            ("scope", scope),
            ("resource", &fixture.url()),
        ])
    );
    let response = get(client, &url).await;
    assert_eq!(response.status(), StatusCode::FOUND);
    let location = response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .expect("Location")
        .to_owned();
    let query = location
        .strip_prefix(&format!("{REDIRECT}?"))
        .unwrap_or_else(|| panic!("redirect elsewhere: {location}"));
    query
        .split('&')
        .map(|pair| {
            let (n, v) = pair.split_once('=').expect("pair");
            (n.to_owned(), v.to_owned())
        })
        .collect()
}

fn lookup<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A full login over HTTP: the token answer.
async fn login(client: &Client, fixture: &HttpFixture, scope: &str) -> (String, Value) {
    let client_id = register(client, fixture).await;
    let redirect = authorize(client, fixture, &client_id, scope).await;
    assert_eq!(lookup(&redirect, "state"), Some("st-1"));
    let code = lookup(&redirect, "code").expect("code");
    let response = post_form(
        client,
        &format!("{}/token", fixture.base_url()),
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &client_id),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", &fixture.url()),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("no-store")
    );
    (client_id, json_of(response).await)
}

#[tokio::test]
async fn metadata_documents_name_the_fixture() {
    let fixture = start(OAuthOptions {
        scopes_supported: Some(vec!["read".into(), "write".into()]),
        ..OAuthOptions::default()
    })
    .await;
    let client = client();
    let base = fixture.base_url();
    let prm = json_of(
        get(
            &client,
            &format!("{base}/.well-known/oauth-protected-resource/mcp"),
        )
        .await,
    )
    .await;
    assert_eq!(prm["resource"], fixture.url());
    assert_eq!(prm["authorization_servers"], json!([base]));
    assert_eq!(prm["scopes_supported"], json!(["read", "write"]));
    let meta = json_of(
        get(
            &client,
            &format!("{base}/.well-known/oauth-authorization-server"),
        )
        .await,
    )
    .await;
    assert_eq!(meta["issuer"], base);
    for (field, path) in [
        ("authorization_endpoint", "/authorize"),
        ("token_endpoint", "/token"),
        ("registration_endpoint", "/register"),
        ("revocation_endpoint", "/revoke"),
    ] {
        assert_eq!(meta[field], format!("{base}{path}"), "{field}");
    }
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(
        meta["grant_types_supported"],
        json!(["authorization_code", "refresh_token", "client_credentials"])
    );
    assert_eq!(
        meta["token_endpoint_auth_methods_supported"],
        json!(["none", "client_secret_post", "client_secret_basic"])
    );
    assert_eq!(meta["scopes_supported"], json!(["read", "write"]));
    assert!(meta
        .get("authorization_response_iss_parameter_supported")
        .is_none());
    // Wrong methods and OpenID Connect Discovery are not served.
    let response = within(
        "POST metadata",
        client
            .post(format!("{base}/.well-known/oauth-authorization-server"))
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        get(&client, &format!("{base}/.well-known/openid-configuration"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn mcp_needs_a_valid_token() {
    let fixture = start(OAuthOptions::default()).await;
    let client = client();
    let metadata_url = format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        fixture.base_url()
    );
    let bare = initialize(&client, &fixture, None).await;
    assert_eq!(bare.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&bare),
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    let forged = initialize(&client, &fixture, Some("at-forged")).await;
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&forged),
        format!("Bearer error=\"invalid_token\", resource_metadata=\"{metadata_url}\"")
    );
    // The HTTP+SSE endpoints are gated too.
    assert_eq!(
        get(&client, &fixture.sse_url()).await.status(),
        StatusCode::UNAUTHORIZED
    );

    let (client_id, tokens) = login(&client, &fixture, "").await;
    let access = tokens["access_token"].as_str().expect("access_token");
    let response = initialize(&client, &fixture, Some(access)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("mcp-session-id").is_some());

    // Expired by the control endpoint: refused, then a refresh gives a working token.
    let expire = post_form(
        &client,
        &format!("{}/control/oauth/expire-tokens", fixture.base_url()),
        &[],
    )
    .await;
    assert_eq!(expire.status(), StatusCode::NO_CONTENT);
    let expired = initialize(&client, &fixture, Some(access)).await;
    assert_eq!(expired.status(), StatusCode::UNAUTHORIZED);
    assert!(challenge(&expired).contains("error=\"invalid_token\""));
    let refreshed = post_form(
        &client,
        &format!("{}/token", fixture.base_url()),
        &[
            ("grant_type", "refresh_token"),
            ("client_id", &client_id),
            (
                "refresh_token",
                tokens["refresh_token"].as_str().expect("rt"),
            ),
        ],
    )
    .await;
    assert_eq!(refreshed.status(), StatusCode::OK);
    let refreshed = json_of(refreshed).await;
    let access = refreshed["access_token"].as_str().expect("access_token");
    assert_eq!(
        initialize(&client, &fixture, Some(access)).await.status(),
        StatusCode::OK
    );

    // Revoke-all: the access token and the (rotated) refresh token are both refused.
    let revoke_all = post_form(
        &client,
        &format!("{}/control/oauth/revoke-all", fixture.base_url()),
        &[],
    )
    .await;
    assert_eq!(revoke_all.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        initialize(&client, &fixture, Some(access)).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let refused = post_form(
        &client,
        &format!("{}/token", fixture.base_url()),
        &[
            ("grant_type", "refresh_token"),
            ("client_id", &client_id),
            (
                "refresh_token",
                refreshed["refresh_token"].as_str().expect("rt"),
            ),
        ],
    )
    .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_of(refused).await["error"], "invalid_grant");

    let expected = OAuthStats {
        authorization_code: 1,
        refresh_token: 2,
        client_credentials: 0,
        device_code: 0,
        device_approvals: 0,
        token_errors: 1,
        refresh_refused: 1,
        refreshes_granted: 1,
        registrations: 1,
        authorizations: 1,
        authorization_scopes: vec![String::new()],
        revocations: 0,
        mcp_requests_accepted: 2,
        mcp_requests_rejected: 5,
        expired_tokens_presented: 1,
        resources_seen: vec![fixture.url(), fixture.url(), String::new(), String::new()],
        dpop_proofs_accepted: 0,
        dpop_proofs_rejected: 0,
        dpop_nonce_challenges: 0,
        dpop_bound_tokens_issued: 0,
        replayed_dpop_proofs: 0,
        client_assertions_accepted: 0,
        reused_client_assertions: 0,
    };
    assert_eq!(stats(&fixture), expected);
    // The same counters over HTTP.
    let served = json_of(
        get(
            &client,
            &format!("{}/control/oauth/stats", fixture.base_url()),
        )
        .await,
    )
    .await;
    assert_eq!(served["refresh_token"], 2);
    assert_eq!(served["mcp_requests_rejected"], 5);
    assert_eq!(served["resources_seen"][0], fixture.url());
}

#[tokio::test]
async fn missing_scopes_get_403_insufficient_scope() {
    let fixture = start(OAuthOptions {
        required_scopes: vec!["read".into(), "admin".into()],
        grantable_scopes: Some(vec!["read".into()]),
        ..OAuthOptions::default()
    })
    .await;
    let client = client();
    let bare = initialize(&client, &fixture, None).await;
    assert_eq!(bare.status(), StatusCode::UNAUTHORIZED);
    assert!(
        challenge(&bare).ends_with(", scope=\"read admin\""),
        "{}",
        challenge(&bare)
    );
    let (_, tokens) = login(&client, &fixture, "read admin").await;
    assert_eq!(tokens["scope"], "read");
    let access = tokens["access_token"].as_str().expect("access_token");
    let response = initialize(&client, &fixture, Some(access)).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer error=\"insufficient_scope\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"read admin\"",
            fixture.base_url()
        )
    );
    assert_eq!(
        stats(&fixture).authorization_scopes,
        vec!["read admin".to_owned()]
    );
}

#[tokio::test]
async fn client_credentials_with_basic_authentication() {
    let fixture = start(OAuthOptions {
        preregistered: vec![("machine".into(), Some("s3cret".into()))],
        ..OAuthOptions::default()
    })
    .await;
    let client = client();
    let token_url = format!("{}/token", fixture.base_url());
    let response = within(
        "token",
        client
            .post(&token_url)
            .basic_auth("machine", Some("s3cret"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[
                ("grant_type", "client_credentials"),
                ("scope", "jobs"),
            ]))
            .send(),
    )
    .await
    .expect("token");
    assert_eq!(response.status(), StatusCode::OK);
    let answer = json_of(response).await;
    assert_eq!(answer["scope"], "jobs");
    assert!(answer.get("refresh_token").is_none());
    let access = answer["access_token"].as_str().expect("access_token");
    assert_eq!(
        initialize(&client, &fixture, Some(access)).await.status(),
        StatusCode::OK
    );
    let wrong = within(
        "token",
        client
            .post(&token_url)
            .basic_auth("machine", Some("nope"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[("grant_type", "client_credentials")]))
            .send(),
    )
    .await
    .expect("token");
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(challenge(&wrong).starts_with("Basic"));
    assert_eq!(json_of(wrong).await["error"], "invalid_client");
    let s = stats(&fixture);
    assert_eq!(
        (s.client_credentials, s.token_errors, s.authorizations),
        (2, 1, 0)
    );
}

#[tokio::test]
async fn disabled_endpoints_are_neither_served_nor_advertised() {
    let fixture = start(OAuthOptions {
        registration: false,
        revocation: false,
        iss_parameter: true,
        pkce_methods: vec!["plain".into()],
        ..OAuthOptions::default()
    })
    .await;
    let client = client();
    let base = fixture.base_url();
    let meta = json_of(
        get(
            &client,
            &format!("{base}/.well-known/oauth-authorization-server"),
        )
        .await,
    )
    .await;
    assert!(meta.get("registration_endpoint").is_none(), "{meta}");
    assert!(meta.get("revocation_endpoint").is_none(), "{meta}");
    assert_eq!(meta["authorization_response_iss_parameter_supported"], true);
    assert_eq!(meta["code_challenge_methods_supported"], json!(["plain"]));
    for path in ["/register", "/revoke"] {
        let response = post_form(&client, &format!("{base}{path}"), &[]).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
    // An invalid authorization request is answered, not redirected.
    let response = get(
        &client,
        &format!("{base}/authorize?response_type=code&client_id=nobody"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(response.headers().get("location").is_none());
    assert_eq!(json_of(response).await["error"], "invalid_request");
}

#[tokio::test]
async fn token_delay_holds_the_answer() {
    let fixture = start(OAuthOptions {
        token_delay_ms: 300,
        preregistered: vec![("machine".into(), Some("s3cret".into()))],
        ..OAuthOptions::default()
    })
    .await;
    let client = client();
    let started = std::time::Instant::now();
    let response = within(
        "delayed token",
        client
            .post(format!("{}/token", fixture.base_url()))
            .basic_auth("machine", Some("s3cret"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[("grant_type", "client_credentials")]))
            .send(),
    )
    .await
    .expect("token");
    assert_eq!(response.status(), StatusCode::OK);
    // A lower bound only (a sleep never ends early): the answer was held back.
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(stats(&fixture).client_credentials, 1);
}

#[tokio::test]
async fn binary_flags_enable_the_oauth_mode() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-fixture-server"))
        .args([
            "--http",
            "127.0.0.1:0",
            "--oauth-token-ttl",
            "120",
            "--oauth-required-scope",
            "read",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn fixture");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = within("listening line", lines.next_line())
        .await
        .expect("read")
        .expect("a line");
    let base = line
        .strip_prefix("listening on ")
        .expect("prefix")
        .to_owned();
    let client = client();
    let response = within(
        "POST /mcp",
        client
            .post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body("{}")
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&response),
        format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\", scope=\"read\"")
    );
    let answer = within(
        "client_credentials",
        client
            .post(format!("{base}/register"))
            .header("content-type", "application/json")
            .body(json!({ "redirect_uris": [REDIRECT] }).to_string())
            .send(),
    )
    .await
    .expect("register");
    let registered = json_of(answer).await;
    let id = registered["client_id"].as_str().expect("client_id");
    let secret = registered["client_secret"].as_str().expect("client_secret");
    let response = within(
        "token",
        client
            .post(format!("{base}/token"))
            .basic_auth(id, Some(secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[
                ("grant_type", "client_credentials"),
                ("scope", "read"),
            ]))
            .send(),
    )
    .await
    .expect("token");
    assert_eq!(json_of(response).await["expires_in"], 120);
    child.kill().await.expect("kill");
}

#[tokio::test]
async fn binary_dpop_flags_enable_dpop_with_nonces() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-fixture-server"))
        .args(["--http", "127.0.0.1:0", "--oauth-dpop-nonce"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn fixture");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = within("listening line", lines.next_line())
        .await
        .expect("read")
        .expect("a line");
    let base = line
        .strip_prefix("listening on ")
        .expect("prefix")
        .to_owned();
    let client = client();
    let prm = json_of(
        get(
            &client,
            &format!("{base}/.well-known/oauth-protected-resource/mcp"),
        )
        .await,
    )
    .await;
    assert_eq!(prm["dpop_signing_alg_values_supported"], json!(["ES256"]));
    assert_eq!(prm["dpop_bound_access_tokens_required"], true);
    let meta = json_of(
        get(
            &client,
            &format!("{base}/.well-known/oauth-authorization-server"),
        )
        .await,
    )
    .await;
    assert_eq!(meta["dpop_signing_alg_values_supported"], json!(["ES256"]));
    let response = within(
        "POST /mcp",
        client
            .post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body("{}")
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&response),
        format!("DPoP algs=\"ES256\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"")
    );

    // A token request with a proof that is no proof: refused, with the nonce to use.
    let registered = json_of(
        within(
            "register",
            client
                .post(format!("{base}/register"))
                .header("content-type", "application/json")
                .body(
                    json!({ "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none" })
                        .to_string(),
                )
                .send(),
        )
        .await
        .expect("register"),
    )
    .await;
    let id = registered["client_id"].as_str().expect("client_id");
    let response = within(
        "token",
        client
            .post(format!("{base}/token"))
            .header("dpop", "not.a.proof")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[
                ("grant_type", "authorization_code"),
                ("client_id", id),
                ("code", "code-unknown"),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
            ]))
            .send(),
    )
    .await
    .expect("token");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let nonce = response
        .headers()
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
        .expect("a DPoP-Nonce on the token answer")
        .to_owned();
    assert_eq!(json_of(response).await["error"], "invalid_dpop_proof");

    let rotate = post_form(
        &client,
        &format!("{base}/control/oauth/rotate-dpop-nonce"),
        &[],
    )
    .await;
    assert_eq!(rotate.status(), StatusCode::NO_CONTENT);
    let response = post_form(&client, &format!("{base}/token"), &[]).await;
    let rotated = response
        .headers()
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
        .expect("a DPoP-Nonce on the token answer");
    assert_ne!(rotated, nonce, "rotated");
    let stats = json_of(get(&client, &format!("{base}/control/oauth/stats")).await).await;
    assert_eq!(stats["dpop_proofs_rejected"], 1);
    assert_eq!(stats["dpop_proofs_accepted"], 0);
    child.kill().await.expect("kill");
}

/// Over the wire: split challenges are two `WWW-Authenticate` headers (`Bearer`, then `DPoP`);
/// with optional DPoP the resource challenges with `Bearer` alone and only the authorization
/// server lists DPoP.
#[tokio::test]
async fn split_and_optional_dpop_challenges_over_http() {
    let client = client();
    let split = start(OAuthOptions {
        dpop_split_challenges: true,
        ..OAuthOptions::default()
    })
    .await;
    let response = initialize(&client, &split, Some("at-forged")).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let metadata = format!(
        "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        split.base_url()
    );
    let all: Vec<&str> = response
        .headers()
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().expect("ascii"))
        .collect();
    assert_eq!(
        all,
        [
            format!("Bearer error=\"invalid_token\", {metadata}"),
            format!("DPoP error=\"invalid_token\", algs=\"ES256\", {metadata}"),
        ]
    );

    let optional = start(OAuthOptions {
        dpop_optional: true,
        ..OAuthOptions::default()
    })
    .await;
    let prm = json_of(
        get(
            &client,
            &format!(
                "{}/.well-known/oauth-protected-resource/mcp",
                optional.base_url()
            ),
        )
        .await,
    )
    .await;
    assert!(
        prm.get("dpop_signing_alg_values_supported").is_none(),
        "{prm}"
    );
    let meta = json_of(
        get(
            &client,
            &format!(
                "{}/.well-known/oauth-authorization-server",
                optional.base_url()
            ),
        )
        .await,
    )
    .await;
    assert_eq!(meta["dpop_signing_alg_values_supported"], json!(["ES256"]));
    let response = initialize(&client, &optional, None).await;
    assert_eq!(
        response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .count(),
        1
    );
    assert!(challenge(&response).starts_with("Bearer resource_metadata="));
}
