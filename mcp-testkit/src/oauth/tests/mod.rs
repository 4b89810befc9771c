//! The OAuth mode's endpoints and gate, called in process (no HTTP): what each answers, and
//! the counters. `tests/oauth.rs` of the crate runs the same over real HTTP.

use base64::Engine;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::form::{encode, param, parse_form};
use super::gate::Verdict;
use super::{AuthServer, OAuthError, OAuthOptions};
use crate::dpop::test_key::TestKey;
use crate::http::lock;

mod authorize;
mod clients;
mod dpop;
mod gate;
mod token;

const REDIRECT: &str = "http://127.0.0.1:9/callback";
const MCP: &str = "/mcp";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

fn server(options: OAuthOptions) -> AuthServer {
    AuthServer::new(options, "127.0.0.1:4000".parse().expect("addr"))
}

fn form(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier))
}

/// Registers a public client with [`REDIRECT`].
fn register_public(server: &AuthServer) -> String {
    let answer = server
        .register(
            &json!({ "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none" })
                .to_string(),
        )
        .expect("registered");
    assert!(answer.get("client_secret").is_none(), "{answer}");
    answer["client_id"].as_str().expect("client_id").to_owned()
}

/// Authorizes `client` with the S256 challenge of [`VERIFIER`]; returns the code.
fn authorize(server: &AuthServer, client: &str, scope: &str) -> String {
    let query = format!(
        "response_type=code&client_id={}&redirect_uri={}&code_challenge={}&code_challenge_method=S256&state=xyz&scope={}&resource={}",
        encode(client),
        encode(REDIRECT),
        s256(VERIFIER),
        encode(scope),
        encode("http://127.0.0.1:4000/mcp"),
    );
    let location = server.authorize(&query).expect("authorized");
    let (base, query) = location.split_once('?').expect("query");
    assert_eq!(base, REDIRECT);
    let params = parse_form(query);
    assert_eq!(param(&params, "state").expect("once"), Some("xyz"));
    param(&params, "code")
        .expect("once")
        .expect("code")
        .to_owned()
}

fn exchange(
    server: &AuthServer,
    client: &str,
    code: &str,
    verifier: &str,
) -> Result<Value, OAuthError> {
    server.token(
        &HeaderMap::new(),
        &form(&[
            ("grant_type", "authorization_code"),
            ("client_id", client),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
        ]),
    )
}

fn refresh(server: &AuthServer, client: &str, token: &str) -> Result<Value, OAuthError> {
    server.token(
        &HeaderMap::new(),
        &form(&[
            ("grant_type", "refresh_token"),
            ("client_id", client),
            ("refresh_token", token),
        ]),
    )
}

fn bearer(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {token}")).expect("header"),
    );
    headers
}

fn text(value: &Value, name: &str) -> String {
    value[name]
        .as_str()
        .unwrap_or_else(|| panic!("no {name} in {value}"))
        .to_owned()
}

// DPoP

const TOKEN_URL: &str = "http://127.0.0.1:4000/token";
const MCP_URL: &str = "http://127.0.0.1:4000/mcp";

fn dpop_server(nonce: bool) -> AuthServer {
    server(OAuthOptions {
        dpop: !nonce,
        dpop_nonce: nonce,
        ..OAuthOptions::default()
    })
}

/// A `DPoP` header with `proof`.
fn proof_headers(proof: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        crate::dpop::DPOP_HEADER,
        HeaderValue::from_str(proof).expect("header"),
    );
    headers
}

/// `Authorization: DPoP <token>`, with `proof` if given.
fn dpop_auth(token: &str, proof: Option<&str>) -> HeaderMap {
    let mut headers = proof.map(proof_headers).unwrap_or_default();
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("DPoP {token}")).expect("header"),
    );
    headers
}

/// A login whose code exchange carries `headers` (a proof, or none).
fn dpop_login(server: &AuthServer, headers: &HeaderMap) -> (String, Result<Value, OAuthError>) {
    let client = register_public(server);
    let code = authorize(server, &client, "");
    let answer = server.token(
        headers,
        &form(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
        ]),
    );
    (client, answer)
}

fn refresh_with(
    server: &AuthServer,
    client: &str,
    token: &str,
    headers: &HeaderMap,
) -> Result<Value, OAuthError> {
    server.token(
        headers,
        &form(&[
            ("grant_type", "refresh_token"),
            ("client_id", client),
            ("refresh_token", token),
        ]),
    )
}

fn gate(server: &AuthServer, headers: &HeaderMap) -> Verdict {
    server.verdict(&Method::POST, MCP, headers)
}

fn refused(error: &str) -> impl Fn(&Verdict) -> bool + '_ {
    move |v| matches!(v, Verdict::DpopRefused(e, _) if *e == error)
}

/// Every `WWW-Authenticate` header of `response`, in order.
fn challenges(response: &crate::http::HttpResponse) -> Vec<String> {
    response
        .headers()
        .get_all(header::WWW_AUTHENTICATE)
        .iter()
        .map(|v| v.to_str().expect("ascii").to_owned())
        .collect()
}

/// A `private_key_jwt` client assertion by `key` for `client` at the fixture's issuer, with
/// this `jti`; `edit` changes the claims first.
fn assertion(key: &TestKey, client: &str, jti: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut claims = json!({
        "iss": client,
        "sub": client,
        "aud": "http://127.0.0.1:4000",
        "iat": super::unix_now(),
        "exp": super::unix_now() + 60,
        "jti": jti,
    });
    edit(&mut claims);
    key.sign(&json!({ "alg": "ES256", "typ": "JWT" }), &claims)
}

/// A `client_credentials` request authenticated by `assertion` (with `headers`: a proof, or
/// none).
fn jwt_client_credentials(
    server: &AuthServer,
    headers: &HeaderMap,
    assertion: &str,
) -> Result<Value, OAuthError> {
    server.token(
        headers,
        &form(&[
            ("grant_type", "client_credentials"),
            ("client_id", "jwt-machine"),
            ("client_assertion_type", super::CLIENT_ASSERTION_TYPE),
            ("client_assertion", assertion),
        ]),
    )
}
