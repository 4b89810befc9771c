//! OAuth mode of the HTTP fixture ([`ServerOptions::oauth`](crate::ServerOptions::oauth),
//! `--oauth`): the fixture becomes an OAuth 2.1 protected resource *and* its own mock
//! authorization server, both on the fixture's origin, so a client's whole authorization flow
//! (discovery, dynamic registration, authorization code with PKCE, refresh, revocation,
//! step-up, client credentials) runs against one loopback listener.
//!
//! With `ORIGIN` = `http://IP:PORT` (no trailing slash; it is also the issuer):
//!
//! # Protected resource
//! - `/mcp`, `/sse` and `/message` need `Authorization: Bearer <access token>` naming an
//!   issued, unrevoked, unexpired token. Otherwise 401 with
//!   `WWW-Authenticate: Bearer error="invalid_token", resource_metadata="ORIGIN/.well-known/oauth-protected-resource/mcp"`
//!   (plus `scope="…"` when [`OAuthOptions::required_scopes`] is not empty). A request
//!   without any `Authorization` gets the same challenge without `error` (RFC 6750 §3.1).
//!   A valid token that lacks one of the required scopes gets 403 with
//!   `Bearer error="insufficient_scope", scope="<required, space separated>", resource_metadata="…"`.
//! - `GET /.well-known/oauth-protected-resource/mcp` (RFC 9728): `resource` is `ORIGIN/mcp`
//!   (or [`OAuthOptions::resource_override`]), `authorization_servers` is `[ORIGIN]`,
//!   `scopes_supported` from [`OAuthOptions::scopes_supported`].
//!
//! # Authorization server
//! - `GET /.well-known/oauth-authorization-server` (RFC 8414): the issuer (`ORIGIN`, or
//!   [`OAuthOptions::issuer_override`]), the endpoints below, `code_challenge_methods_supported`
//!   = [`OAuthOptions::pkce_methods`], grant types `authorization_code`, `refresh_token`,
//!   `client_credentials`, client authentication `none`, `client_secret_post`,
//!   `client_secret_basic`.
//! - `POST /register` (RFC 7591, when [`OAuthOptions::registration`]): JSON with a non-empty
//!   `redirect_uris`; answers 201 with a `client_id` and, unless `token_endpoint_auth_method` is
//!   `none`, a `client_secret` (the default method is `client_secret_basic`).
//! - `GET /authorize`: `response_type=code`, a known `client_id` (registered, or one of
//!   [`OAuthOptions::preregistered`], which accept any redirect URI), a `redirect_uri`
//!   registered for it (optional when it registered exactly one), `code_challenge` with a
//!   `code_challenge_method` (default `plain`, as in RFC 7636) in `pkce_methods`. Approves at
//!   once: 302 to `redirect_uri?code=…&state=…` (plus `iss` under
//!   [`OAuthOptions::iss_parameter`]). The scopes granted are the requested ones, cut down to
//!   [`OAuthOptions::grantable_scopes`]. An invalid request gets 400 with a JSON error and no
//!   redirect.
//! - `POST /token` (form): `authorization_code` (single use, PKCE verified, same client and
//!   `redirect_uri`), `refresh_token` (rotated under [`OAuthOptions::rotate_refresh_tokens`]:
//!   the old one is then refused with `invalid_grant`; without rotation the answer carries no
//!   `refresh_token` and the old one stays valid), `client_credentials` (confidential clients
//!   only, no refresh token). Confidential clients authenticate with HTTP Basic or
//!   `client_secret` in the body; public clients send `client_id`. Answers
//!   `{"access_token","token_type":"Bearer","expires_in","scope",["refresh_token"]}`; errors
//!   per RFC 6749 §5.2 (400, or 401 `invalid_client`). Waits
//!   [`OAuthOptions::token_delay_ms`] before answering.
//! - `POST /revoke` (RFC 7009, when [`OAuthOptions::revocation`]): the client authenticates as
//!   at `/token`; the token (access or refresh) is revoked; 200 whatever the token was.
//!
//! # DPoP (RFC 9449, when [`OAuthOptions::dpop`])
//! - Both metadata documents list `dpop_signing_alg_values_supported: ["ES256"]`; the
//!   protected resource metadata adds `dpop_bound_access_tokens_required: true`.
//! - `/token` (every grant): a request with a valid `DPoP` proof (checked as
//!   [`crate::dpop`] says) gets `token_type: "DPoP"`, and its access token and refresh token
//!   are bound to the proof key's thumbprint; a request without a proof gets a bearer token
//!   (which `/mcp` then refuses). A bad proof gets 400 `invalid_dpop_proof`. A bound refresh
//!   token needs a proof by the same key (400 `invalid_grant` otherwise).
//! - `/mcp`, `/sse`, `/message`: the challenge is `DPoP algs="ES256", resource_metadata="…"`
//!   (after `error="…", error_description="…"` where there is one). A bound token must come as
//!   `Authorization: DPoP <token>` with a valid proof (its `ath` the token's hash) by the key
//!   the token is bound to; a bound token sent as `Bearer`, and a bearer token, get
//!   `error="invalid_token"`; a missing or bad proof `error="invalid_dpop_proof"`.
//! - With [`OAuthOptions::dpop_nonce`] every proof must also carry the current nonce of its
//!   server (the authorization server and the resource have one each): otherwise 400
//!   `{"error":"use_dpop_nonce"}` at `/token`, 401 `DPoP error="use_dpop_nonce"` at `/mcp`,
//!   both with `DPoP-Nonce: <nonce>`. Every `/token` answer, and every answer to a request the
//!   gate let through, carries `DPoP-Nonce` too.
//!
//! # Control (always served in OAuth mode)
//! - `POST /control/oauth/expire-tokens`: every access token issued so far expires now.
//! - `POST /control/oauth/revoke-all`: every access and refresh token (and pending code) is
//!   revoked.
//! - `POST /control/oauth/rotate-dpop-nonce`: new DPoP nonces for the authorization server and
//!   the resource (with [`OAuthOptions::dpop_nonce`]; otherwise nothing changes).
//! - `GET /control/oauth/stats`: [`OAuthStats`] as JSON (in process:
//!   [`HttpFixture::oauth_stats`](crate::HttpFixture::oauth_stats)).
//!
//! Token expiry runs on the tokio clock, so a test that pauses and advances it
//! (`tokio::time::advance`) ages the fixture's tokens and the client's alike. Tokens, codes
//! and client credentials are random (unguessable for a test fixture, not cryptographic).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, StatusCode};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::dpop::{proof_header, Audience, DpopVerifier, ProofError, ProofRequest, DPOP_ALG};
use crate::http::{empty_response, json_response, lock, random_hex, read_body, HttpResponse};

/// The protected resource's gate (`/mcp`, `/sse`, `/message`).
mod gate;

/// Protected resource metadata of `/mcp` (RFC 9728, path-aware).
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// Authorization server metadata (RFC 8414).
pub const SERVER_METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
/// The authorization endpoint.
pub const AUTHORIZE_PATH: &str = "/authorize";
/// The token endpoint.
pub const TOKEN_PATH: &str = "/token";
/// Dynamic client registration (RFC 7591).
pub const REGISTER_PATH: &str = "/register";
/// Token revocation (RFC 7009).
pub const REVOKE_PATH: &str = "/revoke";
/// Control: every access token expires now.
pub const EXPIRE_TOKENS_PATH: &str = "/control/oauth/expire-tokens";
/// Control: every token is revoked.
pub const REVOKE_ALL_PATH: &str = "/control/oauth/revoke-all";
/// Control: the counters as JSON.
pub const STATS_PATH: &str = "/control/oauth/stats";
/// Control: new DPoP nonces (with [`OAuthOptions::dpop_nonce`]).
pub const ROTATE_DPOP_NONCE_PATH: &str = "/control/oauth/rotate-dpop-nonce";
/// The device authorization endpoint (RFC 8628 §3.1), with `device_authorization`.
pub const DEVICE_AUTHORIZATION_PATH: &str = "/device_authorization";
/// The verification page a user visits (`GET /device?user_code=…` approves at once).
pub const DEVICE_VERIFY_PATH: &str = "/device";
/// The device code grant type (RFC 8628 §3.4).
pub const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// Authorization codes are valid this long.
const CODE_LIFETIME: Duration = Duration::from_secs(600);

/// How the OAuth mode behaves. [`Default`] is a well-behaved server: one-hour tokens, rotated
/// refresh tokens, PKCE S256, dynamic registration and revocation, no required scopes.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthOptions {
    /// Lifetime of access tokens, in seconds (`expires_in`; default 3600; `--oauth-token-ttl`).
    pub token_ttl_secs: u64,
    /// Whether the authorization code grant issues a refresh token (default true).
    pub issue_refresh_tokens: bool,
    /// Whether each refresh answers with a new refresh token and invalidates the old one
    /// (default true). Without rotation a refresh answer carries no `refresh_token` at all and
    /// the old refresh token stays valid.
    pub rotate_refresh_tokens: bool,
    /// `code_challenge_methods_supported`, and the methods `/authorize` accepts (default
    /// `["S256"]`).
    pub pkce_methods: Vec<String>,
    /// `scopes_supported` in both metadata documents (default none).
    pub scopes_supported: Option<Vec<String>>,
    /// Scopes every `/mcp` request's token must have (403 `insufficient_scope` otherwise;
    /// `--oauth-required-scope`, repeatable). Default none.
    pub required_scopes: Vec<String>,
    /// The scopes the server grants at most: a request for more gets a token with only the
    /// grantable subset (`None`, the default: whatever is asked for).
    pub grantable_scopes: Option<Vec<String>>,
    /// An issuer for the authorization server metadata other than the real one (to test
    /// issuer checks).
    pub issuer_override: Option<String>,
    /// A `resource` for the protected resource metadata other than `ORIGIN/mcp` (to test
    /// resource checks).
    pub resource_override: Option<String>,
    /// Serve and advertise dynamic client registration at `/register` (default true).
    pub registration: bool,
    /// Serve and advertise RFC 7009 revocation at `/revoke` (default true).
    pub revocation: bool,
    /// `/token` waits this many milliseconds before answering (default 0), so that concurrent
    /// refreshes overlap.
    pub token_delay_ms: u64,
    /// Advertise `authorization_response_iss_parameter_supported` and add `iss` to the
    /// authorization redirect (RFC 9207; default false).
    pub iss_parameter: bool,
    /// The authorization redirect carries this `state` instead of the client's (to test state
    /// checks).
    pub state_override: Option<String>,
    /// Clients known without registration: `(client_id, client_secret)`; a secret makes the
    /// client confidential (it must authenticate at `/token`). They accept any redirect URI.
    pub preregistered: Vec<(String, Option<String>)>,
    /// Serve and advertise the device authorization grant (RFC 8628; default false):
    /// `/device_authorization`, a verification page that approves at once, and the
    /// device code grant at `/token` (`authorization_pending` until approved).
    pub device_authorization: bool,
    /// DPoP (RFC 9449; default false; `--oauth-dpop`): tokens requested with a proof are bound
    /// to its key, and `/mcp` takes only bound tokens, each request with a fresh proof. See
    /// the module documentation.
    pub dpop: bool,
    /// DPoP with server nonces (default false; `--oauth-dpop-nonce`; implies [`dpop`]): every
    /// proof must carry the server's current nonce, which `/control/oauth/rotate-dpop-nonce`
    /// changes.
    ///
    /// [`dpop`]: OAuthOptions::dpop
    pub dpop_nonce: bool,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            token_ttl_secs: 3600,
            issue_refresh_tokens: true,
            rotate_refresh_tokens: true,
            pkce_methods: vec!["S256".to_owned()],
            scopes_supported: None,
            required_scopes: Vec::new(),
            grantable_scopes: None,
            issuer_override: None,
            resource_override: None,
            registration: true,
            revocation: true,
            token_delay_ms: 0,
            iss_parameter: false,
            state_override: None,
            preregistered: Vec::new(),
            device_authorization: false,
            dpop: false,
            dpop_nonce: false,
        }
    }
}

/// Shows everything but the pre-registered clients' secrets.
impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let preregistered: Vec<(&str, &str)> = self
            .preregistered
            .iter()
            .map(|(id, secret)| {
                (
                    id.as_str(),
                    if secret.is_some() {
                        "<secret>"
                    } else {
                        "<public>"
                    },
                )
            })
            .collect();
        f.debug_struct("OAuthOptions")
            .field("token_ttl_secs", &self.token_ttl_secs)
            .field("issue_refresh_tokens", &self.issue_refresh_tokens)
            .field("rotate_refresh_tokens", &self.rotate_refresh_tokens)
            .field("pkce_methods", &self.pkce_methods)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .field("grantable_scopes", &self.grantable_scopes)
            .field("issuer_override", &self.issuer_override)
            .field("resource_override", &self.resource_override)
            .field("registration", &self.registration)
            .field("revocation", &self.revocation)
            .field("token_delay_ms", &self.token_delay_ms)
            .field("iss_parameter", &self.iss_parameter)
            .field("state_override", &self.state_override)
            .field("preregistered", &preregistered)
            .field("device_authorization", &self.device_authorization)
            .field("dpop", &self.dpop)
            .field("dpop_nonce", &self.dpop_nonce)
            .finish()
    }
}

/// What the OAuth mode has seen so far (live counters; `GET /control/oauth/stats` serves the
/// same as JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OAuthStats {
    /// `/token` requests with `grant_type=authorization_code` (refused ones included).
    pub authorization_code: u64,
    /// `/token` requests with `grant_type=refresh_token` (refused ones included).
    pub refresh_token: u64,
    /// `/token` requests with `grant_type=client_credentials` (refused ones included).
    pub client_credentials: u64,
    /// `/token` requests with the device code grant (pending and refused ones included).
    pub device_code: u64,
    /// Device authorizations approved at the verification page.
    pub device_approvals: u64,
    /// `/token` requests that were refused (any grant type, unknown ones too).
    pub token_errors: u64,
    /// Successful dynamic registrations.
    pub registrations: u64,
    /// Successful authorizations (redirects with a code).
    pub authorizations: u64,
    /// The `scope` parameter of each successful authorization, in order (`""` when absent).
    pub authorization_scopes: Vec<String>,
    /// Authenticated `/revoke` requests.
    pub revocations: u64,
    /// Requests to `/mcp`, `/sse` and `/message` let through.
    pub mcp_requests_accepted: u64,
    /// Requests to `/mcp`, `/sse` and `/message` answered 401 or 403.
    pub mcp_requests_rejected: u64,
    /// Of the rejected requests, those whose token had been issued but had expired.
    pub expired_tokens_presented: u64,
    /// The `resource` parameter of each `/authorize` and `/token` request, in order (`""` when
    /// the request carried none).
    pub resources_seen: Vec<String>,
    /// DPoP proofs accepted, at `/token` and at the gate.
    pub dpop_proofs_accepted: u64,
    /// DPoP proofs refused as invalid (malformed, badly signed, made for another request or
    /// token, out of time, replayed). Not counted: proofs that lacked only the current nonce
    /// ([`dpop_nonce_challenges`](Self::dpop_nonce_challenges)), missing proofs and proofs by
    /// another key than a token's (refused requests all the same).
    pub dpop_proofs_rejected: u64,
    /// `use_dpop_nonce` answers, at `/token` and at the gate.
    pub dpop_nonce_challenges: u64,
    /// Access tokens issued bound to a DPoP key (`token_type: "DPoP"`).
    pub dpop_bound_tokens_issued: u64,
    /// Of the rejected proofs, those whose `jti` had been seen before.
    pub replayed_dpop_proofs: u64,
}

impl OAuthStats {
    /// All `/token` requests of the three grant types.
    pub fn token_requests(&self) -> u64 {
        self.authorization_code + self.refresh_token + self.client_credentials + self.device_code
    }
}

/// Whether `path` is served by the OAuth mode (whether or not the option enabling it is on).
pub fn is_oauth_path(path: &str) -> bool {
    matches!(
        path,
        RESOURCE_METADATA_PATH
            | SERVER_METADATA_PATH
            | AUTHORIZE_PATH
            | TOKEN_PATH
            | REGISTER_PATH
            | REVOKE_PATH
            | EXPIRE_TOKENS_PATH
            | REVOKE_ALL_PATH
            | STATS_PATH
            | ROTATE_DPOP_NONCE_PATH
            | DEVICE_AUTHORIZATION_PATH
            | DEVICE_VERIFY_PATH
    )
}

/// An OAuth error answer (RFC 6749 §5.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: String,
}

impl OAuthError {
    fn bad(error: &'static str, description: impl Into<String>) -> Self {
        OAuthError {
            status: StatusCode::BAD_REQUEST,
            error,
            description: description.into(),
        }
    }

    fn invalid_client(description: impl Into<String>) -> Self {
        OAuthError {
            status: StatusCode::UNAUTHORIZED,
            error: "invalid_client",
            description: description.into(),
        }
    }

    fn response(&self) -> HttpResponse {
        let mut response = json_response(
            self.status,
            json!({ "error": self.error, "error_description": self.description }).to_string(),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"fixture\""),
            );
        }
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

/// A client the server knows.
struct Client {
    secret: Option<String>,
    /// `None`: any redirect URI (pre-registered clients).
    redirect_uris: Option<Vec<String>>,
}

struct Code {
    client_id: String,
    challenge: String,
    method: String,
    redirect_uri: String,
    scopes: Vec<String>,
    resource: Option<String>,
    expires: Instant,
}

/// A device authorization waiting for (or approved by) its user.
struct Device {
    client_id: String,
    user_code: String,
    scopes: Vec<String>,
    resource: Option<String>,
    approved: bool,
    expires: Instant,
}

struct AccessToken {
    scopes: Vec<String>,
    expires: Instant,
    /// The thumbprint of the DPoP key the token is bound to.
    jkt: Option<String>,
}

struct RefreshGrant {
    client_id: String,
    scopes: Vec<String>,
    resource: Option<String>,
    /// The thumbprint of the DPoP key the refresh token is bound to.
    jkt: Option<String>,
}

#[derive(Default)]
struct State {
    clients: HashMap<String, Client>,
    codes: HashMap<String, Code>,
    access: HashMap<String, AccessToken>,
    refresh: HashMap<String, RefreshGrant>,
    /// By device code.
    devices: HashMap<String, Device>,
    /// Seen proofs and nonces.
    dpop: DpopVerifier,
    stats: OAuthStats,
}

/// What the refresh token of a token answer is.
enum RefreshMode {
    /// A new one (if the server issues refresh tokens).
    Issue,
    /// None in the answer.
    Omit,
}

/// The authorization server and protected resource state of one HTTP fixture.
pub(crate) struct AuthServer {
    options: OAuthOptions,
    origin: String,
    state: Mutex<State>,
}

impl AuthServer {
    /// The OAuth mode of the fixture listening on `addr`.
    pub(crate) fn new(options: OAuthOptions, addr: SocketAddr) -> AuthServer {
        let mut state = State::default();
        for (id, secret) in &options.preregistered {
            state.clients.insert(
                id.clone(),
                Client {
                    secret: secret.clone(),
                    redirect_uris: None,
                },
            );
        }
        state.dpop = DpopVerifier::new(options.dpop_nonce);
        AuthServer {
            options,
            origin: format!("http://{addr}"),
            state: Mutex::new(state),
        }
    }

    /// Whether DPoP is on ([`OAuthOptions::dpop`], or implied by
    /// [`OAuthOptions::dpop_nonce`]).
    fn dpop(&self) -> bool {
        self.options.dpop || self.options.dpop_nonce
    }

    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> OAuthStats {
        lock(&self.state).stats.clone()
    }

    fn issuer(&self) -> String {
        self.options
            .issuer_override
            .clone()
            .unwrap_or_else(|| self.origin.clone())
    }

    fn resource(&self) -> String {
        self.options
            .resource_override
            .clone()
            .unwrap_or_else(|| format!("{}/mcp", self.origin))
    }

    fn resource_metadata_url(&self) -> String {
        format!("{}{RESOURCE_METADATA_PATH}", self.origin)
    }

    /// Serves one of the [`is_oauth_path`] paths.
    pub(crate) async fn handle(&self, request: Request<Incoming>) -> HttpResponse {
        let path = request.uri().path().to_owned();
        let method = request.method().clone();
        let allow = match path.as_str() {
            RESOURCE_METADATA_PATH
            | SERVER_METADATA_PATH
            | AUTHORIZE_PATH
            | STATS_PATH
            | DEVICE_VERIFY_PATH => Method::GET,
            _ => Method::POST,
        };
        if (path == REGISTER_PATH && !self.options.registration)
            || (path == REVOKE_PATH && !self.options.revocation)
            || ((path == DEVICE_AUTHORIZATION_PATH || path == DEVICE_VERIFY_PATH)
                && !self.options.device_authorization)
        {
            return json_response(
                StatusCode::NOT_FOUND,
                json!({ "error": "not_found" }).to_string(),
            );
        }
        if method != allow {
            let mut response = json_response(
                StatusCode::METHOD_NOT_ALLOWED,
                json!({ "error": "method_not_allowed" }).to_string(),
            );
            if let Ok(value) = HeaderValue::from_str(allow.as_str()) {
                response.headers_mut().insert(header::ALLOW, value);
            }
            return response;
        }
        match path.as_str() {
            RESOURCE_METADATA_PATH => json_ok(self.resource_metadata()),
            SERVER_METADATA_PATH => json_ok(self.server_metadata()),
            STATS_PATH => json_ok(serde_json::to_value(self.stats()).unwrap_or(Value::Null)),
            AUTHORIZE_PATH => match self.authorize(request.uri().query().unwrap_or("")) {
                Ok(location) => match HeaderValue::from_str(&location) {
                    Ok(value) => {
                        let mut response = empty_response(StatusCode::FOUND);
                        response.headers_mut().insert(header::LOCATION, value);
                        response
                    }
                    Err(_) => {
                        OAuthError::bad("invalid_request", "unusable redirect_uri").response()
                    }
                },
                Err(e) => e.response(),
            },
            DEVICE_VERIFY_PATH => match self.approve_device(request.uri().query().unwrap_or("")) {
                Ok(()) => json_ok(json!({ "approved": true })),
                Err(e) => e.response(),
            },
            EXPIRE_TOKENS_PATH => {
                self.expire_tokens();
                empty_response(StatusCode::NO_CONTENT)
            }
            REVOKE_ALL_PATH => {
                self.revoke_all();
                empty_response(StatusCode::NO_CONTENT)
            }
            ROTATE_DPOP_NONCE_PATH => {
                lock(&self.state).dpop.rotate_nonces();
                empty_response(StatusCode::NO_CONTENT)
            }
            _ => {
                let headers = request.headers().clone();
                let body = match read_body(request.into_body()).await {
                    Ok(body) => body,
                    Err(reject) => return reject.response(),
                };
                let text = String::from_utf8_lossy(&body);
                match path.as_str() {
                    TOKEN_PATH => {
                        if self.options.token_delay_ms > 0 {
                            tokio::time::sleep(Duration::from_millis(self.options.token_delay_ms))
                                .await;
                        }
                        let mut response = match self.token(&headers, &parse_form(&text)) {
                            Ok(answer) => {
                                let mut response = json_ok(answer);
                                response.headers_mut().insert(
                                    header::CACHE_CONTROL,
                                    HeaderValue::from_static("no-store"),
                                );
                                response
                            }
                            Err(e) => e.response(),
                        };
                        // Every answer, `use_dpop_nonce` or not, names the current nonce.
                        response
                            .headers_mut()
                            .extend(self.nonce_header(Audience::AuthorizationServer));
                        response
                    }
                    DEVICE_AUTHORIZATION_PATH => {
                        match self.device_authorization(&headers, &parse_form(&text)) {
                            Ok(answer) => json_ok(answer),
                            Err(e) => e.response(),
                        }
                    }
                    REGISTER_PATH => match self.register(&text) {
                        Ok(answer) => json_response(StatusCode::CREATED, answer.to_string()),
                        Err(e) => e.response(),
                    },
                    _ => match self.revoke(&headers, &parse_form(&text)) {
                        Ok(()) => empty_response(StatusCode::OK),
                        Err(e) => e.response(),
                    },
                }
            }
        }
    }

    /// Checks a proof, and counts the outcome.
    fn check_proof(
        &self,
        state: &mut State,
        proof: &str,
        request: &ProofRequest<'_>,
    ) -> Result<String, ProofError> {
        let outcome = state.dpop.verify(proof, request, unix_now());
        let stats = &mut state.stats;
        match &outcome {
            Ok(_) => stats.dpop_proofs_accepted += 1,
            Err(ProofError::NonceNeeded) => stats.dpop_nonce_challenges += 1,
            Err(ProofError::Replayed) => {
                stats.dpop_proofs_rejected += 1;
                stats.replayed_dpop_proofs += 1;
            }
            Err(ProofError::Invalid(_)) => stats.dpop_proofs_rejected += 1,
        }
        outcome
    }

    /// DPoP mode at `/token`: the thumbprint of the key the request's proof was made with, or
    /// `None` without a proof (a bearer token follows); a bad proof is refused.
    fn token_proof(
        &self,
        state: &mut State,
        headers: &HeaderMap,
    ) -> Result<Option<String>, OAuthError> {
        if !self.dpop() {
            return Ok(None);
        }
        let refusal = |e: ProofError| OAuthError::bad(e.error_code(), e.to_string());
        let proof = match proof_header(headers) {
            Ok(Some(proof)) => proof,
            Ok(None) => return Ok(None),
            Err(e) => {
                state.stats.dpop_proofs_rejected += 1;
                return Err(refusal(e));
            }
        };
        let url = format!("{}{TOKEN_PATH}", self.origin);
        let request = ProofRequest {
            audience: Audience::AuthorizationServer,
            method: Method::POST.as_str(),
            url: &url,
            access_token: None,
        };
        self.check_proof(state, proof, &request)
            .map(Some)
            .map_err(refusal)
    }

    fn resource_metadata(&self) -> Value {
        let mut prm = json!({
            "resource": self.resource(),
            "authorization_servers": [self.origin],
            "bearer_methods_supported": ["header"],
        });
        if let Some(scopes) = &self.options.scopes_supported {
            prm["scopes_supported"] = json!(scopes);
        }
        if self.dpop() {
            prm["dpop_signing_alg_values_supported"] = json!([DPOP_ALG]);
            prm["dpop_bound_access_tokens_required"] = json!(true);
        }
        prm
    }

    fn server_metadata(&self) -> Value {
        let origin = &self.origin;
        let mut meta = json!({
            "issuer": self.issuer(),
            "authorization_endpoint": format!("{origin}{AUTHORIZE_PATH}"),
            "token_endpoint": format!("{origin}{TOKEN_PATH}"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": self.options.pkce_methods,
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        });
        if self.options.registration {
            meta["registration_endpoint"] = json!(format!("{origin}{REGISTER_PATH}"));
        }
        if self.options.revocation {
            meta["revocation_endpoint"] = json!(format!("{origin}{REVOKE_PATH}"));
            meta["revocation_endpoint_auth_methods_supported"] =
                json!(["none", "client_secret_post", "client_secret_basic"]);
        }
        if let Some(scopes) = &self.options.scopes_supported {
            meta["scopes_supported"] = json!(scopes);
        }
        if self.options.iss_parameter {
            meta["authorization_response_iss_parameter_supported"] = json!(true);
        }
        if self.dpop() {
            meta["dpop_signing_alg_values_supported"] = json!([DPOP_ALG]);
        }
        if self.options.device_authorization {
            meta["device_authorization_endpoint"] =
                json!(format!("{origin}{DEVICE_AUTHORIZATION_PATH}"));
            if let Some(grants) = meta["grant_types_supported"].as_array_mut() {
                grants.push(json!(DEVICE_CODE_GRANT));
            }
        }
        meta
    }

    /// RFC 8628 §3.2: a device code, a user code and where the user goes.
    fn device_authorization(
        &self,
        headers: &HeaderMap,
        form: &[(String, String)],
    ) -> Result<Value, OAuthError> {
        let mut state = lock(&self.state);
        let client_id = authenticate(&state, headers, form)?;
        let device_code = format!("dc-{}", random_hex());
        let user_code = random_hex()[..8].to_uppercase();
        let scopes = self.grant_scopes(param(form, "scope")?.unwrap_or(""));
        let resource = param(form, "resource")?.map(str::to_owned);
        state.devices.insert(
            device_code.clone(),
            Device {
                client_id,
                user_code: user_code.clone(),
                scopes,
                resource,
                approved: false,
                expires: Instant::now() + CODE_LIFETIME,
            },
        );
        let verify = format!("{}{DEVICE_VERIFY_PATH}", self.origin);
        Ok(json!({
            "device_code": device_code,
            "user_code": user_code,
            "verification_uri": verify,
            "verification_uri_complete": format!("{verify}?user_code={user_code}"),
            "expires_in": CODE_LIFETIME.as_secs(),
            "interval": 1,
        }))
    }

    /// The verification page: approves the device authorization with this `user_code`.
    fn approve_device(&self, query: &str) -> Result<(), OAuthError> {
        let form = parse_form(query);
        let user_code = param(&form, "user_code")?
            .ok_or_else(|| OAuthError::bad("invalid_request", "user_code is missing"))?;
        let mut state = lock(&self.state);
        let device = state
            .devices
            .values_mut()
            .find(|d| d.user_code == user_code)
            .ok_or_else(|| OAuthError::bad("invalid_request", "unknown user_code"))?;
        device.approved = true;
        state.stats.device_approvals += 1;
        Ok(())
    }

    /// Dynamic client registration: the JSON answer, or the RFC 7591 error.
    fn register(&self, body: &str) -> Result<Value, OAuthError> {
        let request: Value = serde_json::from_str(body)
            .map_err(|e| OAuthError::bad("invalid_client_metadata", format!("not JSON: {e}")))?;
        if !request.is_object() {
            return Err(OAuthError::bad(
                "invalid_client_metadata",
                "the registration request is not a JSON object",
            ));
        }
        let uris: Vec<String> = request
            .get("redirect_uris")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .unwrap_or(None)
            .unwrap_or_default();
        // A device-only client (RFC 8628) has no redirect URI.
        let device_only = request
            .get("grant_types")
            .and_then(Value::as_array)
            .is_some_and(|g| {
                g.iter().any(|g| g == DEVICE_CODE_GRANT)
                    && !g.iter().any(|g| g == "authorization_code")
            });
        if uris.is_empty() && !device_only {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                "redirect_uris must be a non-empty array of strings",
            ));
        }
        if let Some(bad) = uris.iter().find(|u| !is_redirect_uri(u)) {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                format!("{bad:?} is not an absolute URI without fragment"),
            ));
        }
        let method = match request.get("token_endpoint_auth_method") {
            None => "client_secret_basic",
            Some(Value::String(m))
                if matches!(
                    m.as_str(),
                    "none" | "client_secret_post" | "client_secret_basic"
                ) =>
            {
                m.as_str()
            }
            Some(other) => {
                return Err(OAuthError::bad(
                    "invalid_client_metadata",
                    format!("unsupported token_endpoint_auth_method {other}"),
                ))
            }
        };
        let client_id = format!("client-{}", random_hex());
        let secret = (method != "none").then(|| format!("secret-{}", random_hex()));
        let mut answer = json!({
            "client_id": client_id,
            "client_id_issued_at": unix_now(),
            "redirect_uris": uris,
            "token_endpoint_auth_method": method,
            "grant_types": request.get("grant_types").cloned().unwrap_or(json!(["authorization_code"])),
            "response_types": ["code"],
        });
        if let Some(name) = request.get("client_name").and_then(Value::as_str) {
            answer["client_name"] = json!(name);
        }
        if let Some(scope) = request.get("scope").and_then(Value::as_str) {
            answer["scope"] = json!(scope);
        }
        if let Some(secret) = &secret {
            answer["client_secret"] = json!(secret);
            answer["client_secret_expires_at"] = json!(0);
        }
        let mut state = lock(&self.state);
        state.clients.insert(
            client_id,
            Client {
                secret,
                redirect_uris: Some(uris),
            },
        );
        state.stats.registrations += 1;
        Ok(answer)
    }

    /// An authorization request (the query string): the redirect `Location`, or why not.
    fn authorize(&self, query: &str) -> Result<String, OAuthError> {
        let params = parse_form(query);
        let get = |name: &'static str| param(&params, name);
        if get("response_type")? != Some("code") {
            return Err(OAuthError::bad(
                "unsupported_response_type",
                "response_type must be code",
            ));
        }
        let client_id = get("client_id")?
            .ok_or_else(|| OAuthError::bad("invalid_request", "client_id is missing"))?;
        let challenge = get("code_challenge")?.ok_or_else(|| {
            OAuthError::bad("invalid_request", "code_challenge is missing (PKCE)")
        })?;
        let method = get("code_challenge_method")?.unwrap_or("plain");
        if !self.options.pkce_methods.iter().any(|m| m == method) {
            return Err(OAuthError::bad(
                "invalid_request",
                format!("code_challenge_method {method} is not supported"),
            ));
        }
        let scope = get("scope")?.unwrap_or("");
        let resource = get("resource")?.map(str::to_owned);
        let state_param = get("state")?.map(str::to_owned);
        let mut state = lock(&self.state);
        let Some(client) = state.clients.get(client_id) else {
            return Err(OAuthError::bad(
                "invalid_request",
                format!("unknown client_id {client_id}"),
            ));
        };
        let redirect_uri = match (get("redirect_uri")?, &client.redirect_uris) {
            (Some(uri), None) if is_redirect_uri(uri) => uri.to_owned(),
            (Some(uri), Some(registered)) if registered.iter().any(|r| r == uri) => uri.to_owned(),
            (None, Some(registered)) if registered.len() == 1 => registered[0].clone(),
            (Some(uri), _) => {
                return Err(OAuthError::bad(
                    "invalid_request",
                    format!("redirect_uri {uri} is not registered for this client"),
                ))
            }
            (None, _) => {
                return Err(OAuthError::bad(
                    "invalid_request",
                    "redirect_uri is missing",
                ))
            }
        };
        let scopes = self.grant_scopes(scope);
        let code = format!("code-{}", random_hex());
        state.codes.insert(
            code.clone(),
            Code {
                client_id: client_id.to_owned(),
                challenge: challenge.to_owned(),
                method: method.to_owned(),
                redirect_uri: redirect_uri.clone(),
                scopes,
                resource: resource.clone(),
                expires: Instant::now() + CODE_LIFETIME,
            },
        );
        state.stats.authorizations += 1;
        state.stats.authorization_scopes.push(scope.to_owned());
        state
            .stats
            .resources_seen
            .push(resource.unwrap_or_default());
        drop(state);
        let mut location = redirect_uri;
        location.push(if location.contains('?') { '&' } else { '?' });
        location.push_str(&format!("code={}", encode(&code)));
        let returned_state = self.options.state_override.clone().or(state_param);
        if let Some(s) = returned_state {
            location.push_str(&format!("&state={}", encode(&s)));
        }
        if self.options.iss_parameter {
            location.push_str(&format!("&iss={}", encode(&self.issuer())));
        }
        Ok(location)
    }

    /// A token request: the JSON answer, or the RFC 6749 error.
    fn token(&self, headers: &HeaderMap, form: &[(String, String)]) -> Result<Value, OAuthError> {
        let mut state = lock(&self.state);
        let grant = param(form, "grant_type").ok().flatten().unwrap_or("");
        match grant {
            "authorization_code" => state.stats.authorization_code += 1,
            "refresh_token" => state.stats.refresh_token += 1,
            "client_credentials" => state.stats.client_credentials += 1,
            DEVICE_CODE_GRANT => state.stats.device_code += 1,
            _ => {}
        }
        let resource = param(form, "resource").ok().flatten().map(str::to_owned);
        state
            .stats
            .resources_seen
            .push(resource.clone().unwrap_or_default());
        let answer = self.token_locked(&mut state, headers, form, grant, resource);
        if answer.is_err() {
            state.stats.token_errors += 1;
        }
        answer
    }

    fn token_locked(
        &self,
        state: &mut State,
        headers: &HeaderMap,
        form: &[(String, String)],
        grant: &str,
        resource: Option<String>,
    ) -> Result<Value, OAuthError> {
        param(form, "grant_type")?
            .ok_or_else(|| OAuthError::bad("invalid_request", "grant_type is missing"))?;
        let client_id = authenticate(state, headers, form)?;
        // Before the grant is looked at: a code is gone once used, and a request refused for
        // its proof (or the proof's nonce) must be able to come again.
        let jkt = self.token_proof(state, headers)?;
        match grant {
            "authorization_code" => {
                let code = param(form, "code")?
                    .ok_or_else(|| OAuthError::bad("invalid_request", "code is missing"))?;
                // Single use: gone whether or not the rest checks out.
                let Some(issued) = state.codes.remove(code) else {
                    return Err(OAuthError::bad(
                        "invalid_grant",
                        "unknown, expired or already used code",
                    ));
                };
                if Instant::now() >= issued.expires {
                    return Err(OAuthError::bad("invalid_grant", "the code has expired"));
                }
                if issued.client_id != client_id {
                    return Err(OAuthError::bad(
                        "invalid_grant",
                        "the code was issued to another client",
                    ));
                }
                if param(form, "redirect_uri")? != Some(issued.redirect_uri.as_str()) {
                    return Err(OAuthError::bad(
                        "invalid_grant",
                        "redirect_uri does not match the authorization request",
                    ));
                }
                let verifier = param(form, "code_verifier")?.ok_or_else(|| {
                    OAuthError::bad("invalid_grant", "code_verifier is missing (PKCE)")
                })?;
                if !pkce_matches(&issued.method, verifier, &issued.challenge) {
                    return Err(OAuthError::bad(
                        "invalid_grant",
                        "PKCE verification failed: the code_verifier does not match the code_challenge",
                    ));
                }
                if let (Some(asked), Some(now)) = (&issued.resource, &resource) {
                    if asked != now {
                        return Err(OAuthError::bad(
                            "invalid_target",
                            "resource differs from the authorization request",
                        ));
                    }
                }
                let resource = resource.or(issued.resource);
                Ok(self.issue(
                    state,
                    &client_id,
                    issued.scopes,
                    resource,
                    RefreshMode::Issue,
                    jkt,
                ))
            }
            "refresh_token" => {
                let token = param(form, "refresh_token")?.ok_or_else(|| {
                    OAuthError::bad("invalid_request", "refresh_token is missing")
                })?;
                let (scopes, old_resource, bound_to) = match state.refresh.get(token) {
                    Some(g) if g.client_id == client_id => {
                        (g.scopes.clone(), g.resource.clone(), g.jkt.clone())
                    }
                    Some(_) => {
                        return Err(OAuthError::bad(
                            "invalid_grant",
                            "the refresh token was issued to another client",
                        ))
                    }
                    None => {
                        return Err(OAuthError::bad(
                            "invalid_grant",
                            "unknown, revoked or rotated refresh token",
                        ))
                    }
                };
                // RFC 9449 §5: a bound refresh token goes only with a proof by its key.
                if bound_to.is_some() && jkt != bound_to {
                    return Err(OAuthError::bad(
                        "invalid_grant",
                        if jkt.is_none() {
                            "the refresh token is DPoP-bound: the request needs a DPoP proof by its key"
                        } else {
                            "the refresh token is bound to another DPoP key than the proof's"
                        },
                    ));
                }
                let scopes = match param(form, "scope")? {
                    None => scopes,
                    Some(asked) => {
                        let asked: Vec<String> =
                            asked.split_whitespace().map(str::to_owned).collect();
                        if let Some(extra) = asked.iter().find(|s| !scopes.contains(s)) {
                            return Err(OAuthError::bad(
                                "invalid_scope",
                                format!("{extra} was not granted originally"),
                            ));
                        }
                        asked
                    }
                };
                let mode = if self.options.rotate_refresh_tokens {
                    state.refresh.remove(token);
                    RefreshMode::Issue
                } else {
                    RefreshMode::Omit
                };
                let resource = resource.or(old_resource);
                Ok(self.issue(state, &client_id, scopes, resource, mode, jkt))
            }
            "client_credentials" => {
                let confidential = state
                    .clients
                    .get(&client_id)
                    .is_some_and(|c| c.secret.is_some());
                if !confidential {
                    return Err(OAuthError::bad(
                        "unauthorized_client",
                        "client_credentials needs a confidential client",
                    ));
                }
                let scopes = self.grant_scopes(param(form, "scope")?.unwrap_or(""));
                Ok(self.issue(state, &client_id, scopes, resource, RefreshMode::Omit, jkt))
            }
            DEVICE_CODE_GRANT if self.options.device_authorization => {
                let code = param(form, "device_code")?
                    .ok_or_else(|| OAuthError::bad("invalid_request", "device_code is missing"))?;
                let Some(device) = state.devices.get(code) else {
                    return Err(OAuthError::bad(
                        "invalid_grant",
                        "unknown or used device_code",
                    ));
                };
                if device.client_id != client_id {
                    return Err(OAuthError::bad(
                        "invalid_grant",
                        "the device_code belongs to another client",
                    ));
                }
                if Instant::now() >= device.expires {
                    return Err(OAuthError::bad(
                        "expired_token",
                        "the device_code has expired",
                    ));
                }
                if !device.approved {
                    return Err(OAuthError::bad(
                        "authorization_pending",
                        "the user has not approved yet",
                    ));
                }
                let Some(device) = state.devices.remove(code) else {
                    return Err(OAuthError::bad(
                        "invalid_grant",
                        "unknown or used device_code",
                    ));
                };
                let resource = resource.or(device.resource);
                Ok(self.issue(
                    state,
                    &client_id,
                    device.scopes,
                    resource,
                    RefreshMode::Issue,
                    jkt,
                ))
            }
            other => Err(OAuthError::bad(
                "unsupported_grant_type",
                format!("grant_type {other} is not supported"),
            )),
        }
    }

    /// New tokens for `client_id` (the refresh token per `mode` and the options), bound to
    /// the DPoP key `jkt` names, if any.
    fn issue(
        &self,
        state: &mut State,
        client_id: &str,
        scopes: Vec<String>,
        resource: Option<String>,
        mode: RefreshMode,
        jkt: Option<String>,
    ) -> Value {
        let ttl = self.options.token_ttl_secs;
        let access = format!("at-{}", random_hex());
        if jkt.is_some() {
            state.stats.dpop_bound_tokens_issued += 1;
        }
        state.access.insert(
            access.clone(),
            AccessToken {
                scopes: scopes.clone(),
                expires: Instant::now() + Duration::from_secs(ttl),
                jkt: jkt.clone(),
            },
        );
        let mut answer = json!({
            "access_token": access,
            "token_type": if jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": ttl,
            "scope": scopes.join(" "),
        });
        if matches!(mode, RefreshMode::Issue) && self.options.issue_refresh_tokens {
            let refresh = format!("rt-{}", random_hex());
            state.refresh.insert(
                refresh.clone(),
                RefreshGrant {
                    client_id: client_id.to_owned(),
                    scopes,
                    resource,
                    jkt,
                },
            );
            answer["refresh_token"] = json!(refresh);
        }
        answer
    }

    /// RFC 7009 revocation: the client authenticates; whatever the token, 200.
    fn revoke(&self, headers: &HeaderMap, form: &[(String, String)]) -> Result<(), OAuthError> {
        let mut state = lock(&self.state);
        let client_id = authenticate(&state, headers, form)?;
        let token = param(form, "token")?
            .ok_or_else(|| OAuthError::bad("invalid_request", "token is missing"))?;
        let own_refresh = state
            .refresh
            .get(token)
            .is_some_and(|g| g.client_id == client_id);
        if own_refresh {
            state.refresh.remove(token);
        }
        state.access.remove(token);
        state.stats.revocations += 1;
        Ok(())
    }

    /// Every access token issued so far expires now.
    fn expire_tokens(&self) {
        let now = Instant::now();
        for token in lock(&self.state).access.values_mut() {
            token.expires = now;
        }
    }

    /// Every token and pending code is revoked.
    fn revoke_all(&self) {
        let mut state = lock(&self.state);
        state.access.clear();
        state.refresh.clear();
        state.codes.clear();
    }

    /// The requested scopes (space separated), without duplicates, cut down to the grantable
    /// ones.
    fn grant_scopes(&self, requested: &str) -> Vec<String> {
        let mut seen = HashSet::new();
        requested
            .split_whitespace()
            .filter(|s| seen.insert(*s))
            .filter(|s| {
                self.options
                    .grantable_scopes
                    .as_ref()
                    .is_none_or(|g| g.iter().any(|g| g == s))
            })
            .map(str::to_owned)
            .collect()
    }
}

/// The client a token or revocation request authenticates as: HTTP Basic or `client_secret`
/// in the body for confidential clients, `client_id` alone for public ones.
fn authenticate(
    state: &State,
    headers: &HeaderMap,
    form: &[(String, String)],
) -> Result<String, OAuthError> {
    let body_id = param(form, "client_id")?;
    let body_secret = param(form, "client_secret")?;
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .map(|(_, credentials)| {
            decode_basic(credentials.trim())
                .ok_or_else(|| OAuthError::invalid_client("malformed Basic credentials"))
        })
        .transpose()?;
    let (client_id, secret) = match (basic, body_secret) {
        (Some(_), Some(_)) => {
            return Err(OAuthError::bad(
                "invalid_request",
                "more than one client authentication method",
            ))
        }
        (Some((id, secret)), None) => {
            if body_id.is_some_and(|b| b != id) {
                return Err(OAuthError::bad(
                    "invalid_request",
                    "client_id differs from the Basic credentials",
                ));
            }
            (id, Some(secret))
        }
        (None, secret) => {
            let id =
                body_id.ok_or_else(|| OAuthError::invalid_client("no client authentication"))?;
            (id.to_owned(), secret.map(str::to_owned))
        }
    };
    let Some(client) = state.clients.get(&client_id) else {
        return Err(OAuthError::invalid_client("unknown client"));
    };
    match (&client.secret, secret) {
        (None, None) => Ok(client_id),
        (Some(expected), Some(given)) if *expected == given => Ok(client_id),
        (Some(_), None) => Err(OAuthError::invalid_client(
            "this confidential client must authenticate",
        )),
        (None, Some(_)) => Err(OAuthError::invalid_client("this client has no secret")),
        (Some(_), Some(_)) => Err(OAuthError::invalid_client("wrong client secret")),
    }
}

/// `base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
fn decode_basic(credentials: &str) -> Option<(String, String)> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(credentials)
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (id, secret) = text.split_once(':')?;
    Some((decode(id), decode(secret)))
}

/// Whether `verifier` matches `challenge` under `method` (RFC 7636 §4.6).
fn pkce_matches(method: &str, verifier: &str, challenge: &str) -> bool {
    match method {
        "S256" => {
            let digest = Sha256::digest(verifier.as_bytes());
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) == challenge
        }
        "plain" => verifier == challenge,
        _ => false,
    }
}

/// An absolute URI (`scheme:…`) without a fragment.
fn is_redirect_uri(uri: &str) -> bool {
    let scheme_ok = uri.split_once(':').is_some_and(|(scheme, rest)| {
        !rest.is_empty()
            && scheme
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    scheme_ok && !uri.contains('#')
}

/// One parameter of a form or query; a repeated parameter is an error (RFC 6749 §3.1).
fn param<'a>(form: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, OAuthError> {
    let mut found = form.iter().filter(|(n, _)| n == name);
    let first = found.next().map(|(_, v)| v.as_str());
    if found.next().is_some() {
        return Err(OAuthError::bad(
            "invalid_request",
            format!("{name} is repeated"),
        ));
    }
    Ok(first)
}

/// `application/x-www-form-urlencoded` (also a query string) as name/value pairs.
fn parse_form(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

/// Percent-decoding with `+` as space; malformed escapes are kept as they are.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(byte) = hex {
                    out.push(byte);
                    i += 2;
                } else {
                    out.push(b'%');
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encoding of everything but the unreserved characters (RFC 3986).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn json_ok(value: Value) -> HttpResponse {
    json_response(StatusCode::OK, value.to_string())
}

/// Seconds since the Unix epoch, on the wall clock (DPoP's `iat` is wall-clock time).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::gate::Verdict;
    use super::*;

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

    #[test]
    fn pkce_rfc7636_example() {
        // RFC 7636 Appendix B.
        assert!(pkce_matches(
            "S256",
            VERIFIER,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
        assert!(!pkce_matches(
            "S256",
            "wrong",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
        assert!(pkce_matches("plain", "abc", "abc"));
        assert!(!pkce_matches("S512", "abc", "abc"));
    }

    #[test]
    fn wrong_verifier_is_refused_and_burns_the_code() {
        let server = server(OAuthOptions::default());
        let client = register_public(&server);
        let code = authorize(&server, &client, "");
        let e = exchange(&server, &client, &code, "not-the-verifier").expect_err("refused");
        assert_eq!(
            (e.status, e.error),
            (StatusCode::BAD_REQUEST, "invalid_grant")
        );
        assert!(e.description.contains("PKCE"), "{}", e.description);
        // The code was single-use even though the first attempt failed.
        let e = exchange(&server, &client, &code, VERIFIER).expect_err("used");
        assert_eq!(e.error, "invalid_grant");
        let stats = server.stats();
        assert_eq!(stats.authorization_code, 2);
        assert_eq!(stats.token_errors, 2);
    }

    #[test]
    fn code_is_single_use() {
        let server = server(OAuthOptions::default());
        let client = register_public(&server);
        let code = authorize(&server, &client, "read");
        let tokens = exchange(&server, &client, &code, VERIFIER).expect("tokens");
        assert_eq!(tokens["token_type"], "Bearer");
        assert_eq!(tokens["expires_in"], 3600);
        assert_eq!(tokens["scope"], "read");
        assert!(text(&tokens, "refresh_token").starts_with("rt-"));
        let e = exchange(&server, &client, &code, VERIFIER).expect_err("second use");
        assert_eq!(e.error, "invalid_grant");
        let stats = server.stats();
        assert_eq!(stats.authorizations, 1);
        assert_eq!(stats.authorization_scopes, vec!["read".to_owned()]);
        assert_eq!(
            stats.resources_seen,
            vec![
                "http://127.0.0.1:4000/mcp".to_owned(),
                String::new(),
                String::new()
            ]
        );
    }

    #[test]
    fn code_is_bound_to_client_and_redirect_uri() {
        let server = server(OAuthOptions::default());
        let client = register_public(&server);
        let other = register_public(&server);
        let code = authorize(&server, &client, "");
        let e = exchange(&server, &other, &code, VERIFIER).expect_err("other client");
        assert_eq!(e.error, "invalid_grant");
        let code = authorize(&server, &client, "");
        let e = server
            .token(
                &HeaderMap::new(),
                &form(&[
                    ("grant_type", "authorization_code"),
                    ("client_id", &client),
                    ("code", &code),
                    ("redirect_uri", "http://127.0.0.1:9/other"),
                    ("code_verifier", VERIFIER),
                ]),
            )
            .expect_err("other redirect");
        assert_eq!(e.error, "invalid_grant");
    }

    #[test]
    fn rotation_invalidates_the_old_refresh_token() {
        let server = server(OAuthOptions::default());
        let client = register_public(&server);
        let code = authorize(&server, &client, "read");
        let first = exchange(&server, &client, &code, VERIFIER).expect("tokens");
        let rt1 = text(&first, "refresh_token");
        let second = refresh(&server, &client, &rt1).expect("refreshed");
        let rt2 = text(&second, "refresh_token");
        assert_ne!(rt1, rt2);
        assert_ne!(text(&first, "access_token"), text(&second, "access_token"));
        assert_eq!(second["scope"], "read");
        let e = refresh(&server, &client, &rt1).expect_err("rotated away");
        assert_eq!(
            (e.status, e.error),
            (StatusCode::BAD_REQUEST, "invalid_grant")
        );
        refresh(&server, &client, &rt2).expect("the new one works");
        assert_eq!(server.stats().refresh_token, 3);
    }

    #[test]
    fn without_rotation_the_refresh_answer_has_no_refresh_token() {
        let server = server(OAuthOptions {
            rotate_refresh_tokens: false,
            ..OAuthOptions::default()
        });
        let client = register_public(&server);
        let code = authorize(&server, &client, "");
        let first = exchange(&server, &client, &code, VERIFIER).expect("tokens");
        let rt = text(&first, "refresh_token");
        for _ in 0..2 {
            let answer = refresh(&server, &client, &rt).expect("refreshed");
            assert!(answer.get("refresh_token").is_none(), "{answer}");
        }
    }

    #[test]
    fn refresh_token_is_bound_to_its_client() {
        let server = server(OAuthOptions::default());
        let client = register_public(&server);
        let other = register_public(&server);
        let code = authorize(&server, &client, "");
        let rt = text(
            &exchange(&server, &client, &code, VERIFIER).expect("tokens"),
            "refresh_token",
        );
        assert_eq!(
            refresh(&server, &other, &rt).expect_err("other").error,
            "invalid_grant"
        );
        refresh(&server, &client, &rt).expect("own client");
    }

    #[test]
    fn authorize_validates_before_redirecting() {
        let server = server(OAuthOptions::default());
        let client = register_public(&server);
        let base = format!(
            "response_type=code&client_id={client}&redirect_uri={}",
            encode(REDIRECT)
        );
        let cases = [
            (format!("{base}&code_challenge=abc&code_challenge_method=plain"), "invalid_request"),
            (base.clone(), "invalid_request"),
            (
                format!("response_type=token&client_id={client}&code_challenge=a&code_challenge_method=S256"),
                "unsupported_response_type",
            ),
            (
                format!("response_type=code&client_id=nobody&redirect_uri={}&code_challenge=a&code_challenge_method=S256", encode(REDIRECT)),
                "invalid_request",
            ),
            (
                format!("response_type=code&client_id={client}&redirect_uri={}&code_challenge=a&code_challenge_method=S256", encode("http://127.0.0.1:9/elsewhere")),
                "invalid_request",
            ),
            (format!("{base}&code_challenge=a&code_challenge_method=S256&state=1&state=2"), "invalid_request"),
        ];
        for (query, error) in cases {
            let e = server.authorize(&query).expect_err(&query);
            assert_eq!(
                (e.status, e.error),
                (StatusCode::BAD_REQUEST, error),
                "{query}"
            );
        }
        assert_eq!(server.stats().authorizations, 0);
        // The one registered redirect URI is used when none is named.
        let location = server
            .authorize(&format!(
                "response_type=code&client_id={client}&code_challenge=a&code_challenge_method=S256"
            ))
            .expect("authorized");
        assert!(
            location.starts_with(&format!("{REDIRECT}?code=code-")),
            "{location}"
        );
    }

    #[test]
    fn overrides_shape_the_redirect() {
        let server = server(OAuthOptions {
            iss_parameter: true,
            state_override: Some("forged".into()),
            issuer_override: Some("https://issuer.example".into()),
            ..OAuthOptions::default()
        });
        let client = register_public(&server);
        let location = server
            .authorize(&format!(
                "response_type=code&client_id={client}&code_challenge=a&code_challenge_method=S256&state=mine"
            ))
            .expect("authorized");
        let params = parse_form(location.split_once('?').expect("query").1);
        assert_eq!(param(&params, "state").expect("once"), Some("forged"));
        assert_eq!(
            param(&params, "iss").expect("once"),
            Some("https://issuer.example")
        );
        let meta = server.server_metadata();
        assert_eq!(meta["issuer"], "https://issuer.example");
        assert_eq!(meta["authorization_response_iss_parameter_supported"], true);
        assert_eq!(meta["token_endpoint"], "http://127.0.0.1:4000/token");
    }

    #[test]
    fn confidential_clients_authenticate() {
        let server = server(OAuthOptions {
            preregistered: vec![
                ("machine".into(), Some("s3cret".into())),
                ("public".into(), None),
            ],
            ..OAuthOptions::default()
        });
        let cc = |headers: &HeaderMap, extra: &[(&str, &str)]| {
            let mut pairs = vec![("grant_type", "client_credentials")];
            pairs.extend_from_slice(extra);
            server.token(headers, &form(&pairs))
        };
        let mut basic = HeaderMap::new();
        let encoded = base64::engine::general_purpose::STANDARD.encode("machine:s3cret");
        basic.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Basic {encoded}")).expect("header"),
        );
        let answer = cc(&basic, &[("scope", "a b")]).expect("basic");
        assert_eq!(answer["scope"], "a b");
        assert!(answer.get("refresh_token").is_none());
        cc(
            &HeaderMap::new(),
            &[("client_id", "machine"), ("client_secret", "s3cret")],
        )
        .expect("post");
        let e = cc(
            &HeaderMap::new(),
            &[("client_id", "machine"), ("client_secret", "wrong")],
        )
        .expect_err("wrong secret");
        assert_eq!(
            (e.status, e.error),
            (StatusCode::UNAUTHORIZED, "invalid_client")
        );
        let e = cc(&HeaderMap::new(), &[("client_id", "machine")]).expect_err("no secret");
        assert_eq!(e.error, "invalid_client");
        let e = cc(&HeaderMap::new(), &[("client_id", "public")]).expect_err("public");
        assert_eq!(e.error, "unauthorized_client");
        let e = cc(&HeaderMap::new(), &[("client_id", "nobody")]).expect_err("unknown");
        assert_eq!(e.error, "invalid_client");
        let stats = server.stats();
        assert_eq!((stats.client_credentials, stats.token_errors), (6, 4));
    }

    #[test]
    fn registration_checks_redirect_uris_and_methods() {
        let server = server(OAuthOptions::default());
        for bad in [
            json!({}),
            json!({ "redirect_uris": [] }),
            json!({ "redirect_uris": [7] }),
            json!({ "redirect_uris": ["no-scheme"] }),
            json!({ "redirect_uris": ["http://127.0.0.1/cb#frag"] }),
            json!({ "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt" }),
        ] {
            assert!(server.register(&bad.to_string()).is_err(), "{bad}");
        }
        assert!(server.register("not json").is_err());
        let answer = server
            .register(&json!({ "redirect_uris": [REDIRECT], "client_name": "t" }).to_string())
            .expect("registered");
        assert_eq!(answer["token_endpoint_auth_method"], "client_secret_basic");
        assert!(text(&answer, "client_secret").starts_with("secret-"));
        assert_eq!(server.stats().registrations, 1);
    }

    #[test]
    fn gate_checks_expiry_revocation_and_scopes() {
        let server = server(OAuthOptions {
            required_scopes: vec!["admin".into()],
            grantable_scopes: Some(vec!["read".into()]),
            ..OAuthOptions::default()
        });
        let client = register_public(&server);
        let code = authorize(&server, &client, "read admin");
        let tokens = exchange(&server, &client, &code, VERIFIER).expect("tokens");
        assert_eq!(tokens["scope"], "read", "admin is not grantable");
        let access = text(&tokens, "access_token");
        assert_eq!(
            server.verdict(&Method::POST, MCP, &bearer(&access)),
            Verdict::Forbidden
        );
        let response = server
            .refusal(&Method::POST, MCP, &bearer(&access))
            .expect("403");
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        let challenge = response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .expect("ascii");
        assert_eq!(
            challenge,
            "Bearer error=\"insufficient_scope\", resource_metadata=\"http://127.0.0.1:4000/.well-known/oauth-protected-resource/mcp\", scope=\"admin\""
        );
        let response = server
            .refusal(&Method::POST, MCP, &HeaderMap::new())
            .expect("401");
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(!response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .expect("ascii")
            .contains("error="));

        let open = self::server(OAuthOptions::default());
        let client = register_public(&open);
        let code = authorize(&open, &client, "");
        let tokens = exchange(&open, &client, &code, VERIFIER).expect("tokens");
        let access = text(&tokens, "access_token");
        assert_eq!(
            open.verdict(&Method::POST, MCP, &bearer(&access)),
            Verdict::Accept
        );
        assert_eq!(
            open.verdict(&Method::POST, MCP, &bearer("at-forged")),
            Verdict::Unauthorized(true)
        );
        open.expire_tokens();
        assert_eq!(
            open.verdict(&Method::POST, MCP, &bearer(&access)),
            Verdict::Unauthorized(true)
        );
        let rt = text(&tokens, "refresh_token");
        let fresh = refresh(&open, &client, &rt).expect("refresh after expiry");
        let access = text(&fresh, "access_token");
        assert_eq!(
            open.verdict(&Method::POST, MCP, &bearer(&access)),
            Verdict::Accept
        );
        open.revoke_all();
        assert_eq!(
            open.verdict(&Method::POST, MCP, &bearer(&access)),
            Verdict::Unauthorized(true)
        );
        assert_eq!(
            refresh(&open, &client, &text(&fresh, "refresh_token"))
                .expect_err("revoked")
                .error,
            "invalid_grant"
        );
        let stats = open.stats();
        assert_eq!(stats.mcp_requests_accepted, 2);
        assert_eq!(stats.mcp_requests_rejected, 3);
        assert_eq!(stats.expired_tokens_presented, 1);
    }

    #[test]
    fn revocation_revokes_one_token() {
        let server = server(OAuthOptions::default());
        let client = register_public(&server);
        let code = authorize(&server, &client, "");
        let tokens = exchange(&server, &client, &code, VERIFIER).expect("tokens");
        let access = text(&tokens, "access_token");
        let rt = text(&tokens, "refresh_token");
        server
            .revoke(
                &HeaderMap::new(),
                &form(&[("token", &rt), ("client_id", &client)]),
            )
            .expect("revoked");
        assert_eq!(
            refresh(&server, &client, &rt).expect_err("gone").error,
            "invalid_grant"
        );
        assert_eq!(
            server.verdict(&Method::POST, MCP, &bearer(&access)),
            Verdict::Accept
        );
        server
            .revoke(
                &HeaderMap::new(),
                &form(&[("token", &access), ("client_id", &client)]),
            )
            .expect("revoked");
        assert_eq!(
            server.verdict(&Method::POST, MCP, &bearer(&access)),
            Verdict::Unauthorized(true)
        );
        // Unknown tokens are fine (RFC 7009 §2.2); unknown clients are not.
        server
            .revoke(
                &HeaderMap::new(),
                &form(&[("token", "whatever"), ("client_id", &client)]),
            )
            .expect("200");
        assert!(server
            .revoke(
                &HeaderMap::new(),
                &form(&[("token", "x"), ("client_id", "nobody")])
            )
            .is_err());
        assert_eq!(server.stats().revocations, 3);
    }

    #[test]
    fn form_codec_round_trips() {
        let original = "a b+c&d=e/é%";
        assert_eq!(decode(&encode(original)), original);
        assert_eq!(decode("a+b%20c%zz%4"), "a b c%zz%4");
        assert_eq!(
            parse_form("x=1&&y&z=%3D"),
            vec![
                ("x".to_owned(), "1".to_owned()),
                ("y".to_owned(), String::new()),
                ("z".to_owned(), "=".to_owned())
            ]
        );
    }

    #[test]
    fn debug_hides_preregistered_secrets() {
        let options = OAuthOptions {
            preregistered: vec![("machine".into(), Some("s3cret".into()))],
            ..OAuthOptions::default()
        };
        let shown = format!("{options:?}");
        assert!(
            shown.contains("machine") && !shown.contains("s3cret"),
            "{shown}"
        );
        // Every field is listed.
        for field in ["device_authorization", "dpop: false", "dpop_nonce: false"] {
            assert!(shown.contains(field), "{shown}");
        }
    }

    // -----------------------------------------------------------------------------------------
    // DPoP

    use crate::dpop::test_key::TestKey;
    use crate::dpop::{DPOP_NONCE_HEADER, INVALID_DPOP_PROOF};

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

    #[test]
    fn dpop_metadata_and_challenges_name_es256() {
        let server = dpop_server(false);
        let prm = server.resource_metadata();
        assert_eq!(prm["dpop_signing_alg_values_supported"], json!(["ES256"]));
        assert_eq!(prm["dpop_bound_access_tokens_required"], true);
        assert_eq!(
            server.server_metadata()["dpop_signing_alg_values_supported"],
            json!(["ES256"])
        );
        let response = server
            .refusal(&Method::POST, MCP, &HeaderMap::new())
            .expect("401");
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "DPoP algs=\"ES256\", resource_metadata=\"http://127.0.0.1:4000/.well-known/oauth-protected-resource/mcp\""
        );
        let response = server
            .refusal(&Method::POST, MCP, &dpop_auth("at-forged", None))
            .expect("401");
        assert!(response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .expect("ascii")
            .starts_with("DPoP error=\"invalid_token\", algs=\"ES256\", resource_metadata="));
        // Without DPoP, neither document mentions it.
        let plain = self::server(OAuthOptions::default());
        assert!(plain
            .resource_metadata()
            .get("dpop_bound_access_tokens_required")
            .is_none());
        assert!(plain
            .server_metadata()
            .get("dpop_signing_alg_values_supported")
            .is_none());
    }

    #[test]
    fn a_proof_at_the_token_endpoint_binds_the_tokens_to_its_key() {
        let server = dpop_server(false);
        let key = TestKey::new(1);
        let other = TestKey::new(2);
        let (_, answer) = dpop_login(
            &server,
            &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
        );
        let tokens = answer.expect("tokens");
        assert_eq!(tokens["token_type"], "DPoP");
        let access = text(&tokens, "access_token");
        assert_eq!(lock(&server.state).access[&access].jkt, Some(key.jkt()));
        let rt = text(&tokens, "refresh_token");
        assert_eq!(lock(&server.state).refresh[&rt].jkt, Some(key.jkt()));

        // At the gate: only as DPoP, only with a fresh proof by that key for this request.
        let good = key.proof("POST", MCP_URL, Some(&access), None);
        assert_eq!(
            gate(&server, &dpop_auth(&access, Some(&good))),
            Verdict::Accept
        );
        let cases = [
            (bearer(&access), "invalid_token"),
            (dpop_auth(&access, None), INVALID_DPOP_PROOF),
            (dpop_auth(&access, Some(&good)), INVALID_DPOP_PROOF), // replayed
            (
                dpop_auth(
                    &access,
                    Some(&other.proof("POST", MCP_URL, Some(&access), None)),
                ),
                INVALID_DPOP_PROOF,
            ),
            (
                dpop_auth(
                    &access,
                    Some(&key.proof("POST", MCP_URL, Some("at-other"), None)),
                ),
                INVALID_DPOP_PROOF,
            ),
            (
                dpop_auth(
                    &access,
                    Some(&key.proof("GET", MCP_URL, Some(&access), None)),
                ),
                INVALID_DPOP_PROOF,
            ),
            (
                dpop_auth(
                    &access,
                    Some(&key.proof("POST", TOKEN_URL, Some(&access), None)),
                ),
                INVALID_DPOP_PROOF,
            ),
        ];
        for (headers, error) in &cases {
            let verdict = gate(&server, headers);
            assert!(refused(error)(&verdict), "{headers:?}: {verdict:?}");
        }
        let response = server
            .refusal(&Method::POST, MCP, &bearer(&access))
            .expect("401");
        assert!(response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .expect("ascii")
            .starts_with(
                "DPoP error=\"invalid_token\", error_description=\"the token is DPoP-bound"
            ));

        // Without a proof: a bearer token, which the resource does not take.
        let (_, answer) = dpop_login(&server, &HeaderMap::new());
        let plain = answer.expect("tokens");
        assert_eq!(plain["token_type"], "Bearer");
        let verdict = gate(&server, &bearer(&text(&plain, "access_token")));
        assert!(refused("invalid_token")(&verdict), "{verdict:?}");
        match verdict {
            Verdict::DpopRefused(_, why) => assert!(why.contains("only DPoP-bound"), "{why}"),
            other => panic!("{other:?}"),
        }

        let stats = server.stats();
        assert_eq!(stats.dpop_bound_tokens_issued, 1);
        assert_eq!(
            stats.dpop_proofs_accepted, 3,
            "token, gate, and the other key's proof"
        );
        assert_eq!(stats.dpop_proofs_rejected, 4, "replay, ath, htm, htu");
        assert_eq!(stats.replayed_dpop_proofs, 1);
        assert_eq!(stats.mcp_requests_accepted, 1);
    }

    #[test]
    fn a_bound_refresh_token_needs_a_proof_by_its_key() {
        let server = dpop_server(false);
        let key = TestKey::new(1);
        let other = TestKey::new(2);
        let (client, answer) = dpop_login(
            &server,
            &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
        );
        let rt = text(&answer.expect("tokens"), "refresh_token");
        for headers in [
            HeaderMap::new(),
            proof_headers(&other.proof("POST", TOKEN_URL, None, None)),
        ] {
            let e = refresh_with(&server, &client, &rt, &headers).expect_err("refused");
            assert_eq!(
                (e.status, e.error),
                (StatusCode::BAD_REQUEST, "invalid_grant")
            );
        }
        let fresh = refresh_with(
            &server,
            &client,
            &rt,
            &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
        )
        .expect("refreshed");
        assert_eq!(fresh["token_type"], "DPoP");
        let rotated = text(&fresh, "refresh_token");
        assert_eq!(lock(&server.state).refresh[&rotated].jkt, Some(key.jkt()));
        assert_eq!(server.stats().dpop_bound_tokens_issued, 2);
    }

    #[test]
    fn a_bad_proof_at_the_token_endpoint_leaves_the_code_usable() {
        let server = dpop_server(false);
        let key = TestKey::new(1);
        let client = register_public(&server);
        let code = authorize(&server, &client, "");
        let exchange = |headers: &HeaderMap| {
            server.token(
                headers,
                &form(&[
                    ("grant_type", "authorization_code"),
                    ("client_id", &client),
                    ("code", &code),
                    ("redirect_uri", REDIRECT),
                    ("code_verifier", VERIFIER),
                ]),
            )
        };
        for bad in [
            "not-a-proof".to_owned(),
            key.proof("POST", "http://127.0.0.1:4000/other", None, None),
            key.proof("GET", TOKEN_URL, None, None),
        ] {
            let e = exchange(&proof_headers(&bad)).expect_err("bad proof");
            assert_eq!(
                (e.status, e.error),
                (StatusCode::BAD_REQUEST, INVALID_DPOP_PROOF)
            );
        }
        let mut twice = proof_headers(&key.proof("POST", TOKEN_URL, None, None));
        twice.append(
            crate::dpop::DPOP_HEADER,
            HeaderValue::from_str(&key.proof("POST", TOKEN_URL, None, None)).expect("header"),
        );
        assert_eq!(
            exchange(&twice).expect_err("two proofs").error,
            INVALID_DPOP_PROOF
        );
        let tokens = exchange(&proof_headers(&key.proof("POST", TOKEN_URL, None, None)))
            .expect("the code was not used up");
        assert_eq!(tokens["token_type"], "DPoP");
        let stats = server.stats();
        assert_eq!(
            (stats.dpop_proofs_rejected, stats.dpop_proofs_accepted),
            (4, 1)
        );
        assert_eq!(stats.token_errors, 4);
    }

    #[test]
    fn every_grant_binds_with_a_proof() {
        let server = server(OAuthOptions {
            dpop: true,
            device_authorization: true,
            preregistered: vec![("machine".into(), Some("s3cret".into()))],
            ..OAuthOptions::default()
        });
        let key = TestKey::new(1);
        let proof = || proof_headers(&key.proof("POST", TOKEN_URL, None, None));
        let cc = server
            .token(
                &proof(),
                &form(&[
                    ("grant_type", "client_credentials"),
                    ("client_id", "machine"),
                    ("client_secret", "s3cret"),
                ]),
            )
            .expect("client_credentials");
        assert_eq!(cc["token_type"], "DPoP");
        let device = server
            .device_authorization(
                &HeaderMap::new(),
                &form(&[("client_id", "machine"), ("client_secret", "s3cret")]),
            )
            .expect("device authorization");
        server
            .approve_device(&format!("user_code={}", text(&device, "user_code")))
            .expect("approved");
        let dc = server
            .token(
                &proof(),
                &form(&[
                    ("grant_type", DEVICE_CODE_GRANT),
                    ("device_code", &text(&device, "device_code")),
                    ("client_id", "machine"),
                    ("client_secret", "s3cret"),
                ]),
            )
            .expect("device_code");
        assert_eq!(dc["token_type"], "DPoP");
        assert_eq!(
            lock(&server.state).refresh[&text(&dc, "refresh_token")].jkt,
            Some(key.jkt())
        );
        assert_eq!(server.stats().dpop_bound_tokens_issued, 2);
    }

    #[test]
    fn nonces_are_asked_for_given_and_rotated() {
        let server = dpop_server(true);
        let key = TestKey::new(1);
        let e = dpop_login(
            &server,
            &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
        )
        .1
        .expect_err("no nonce");
        assert_eq!(
            (e.status, e.error),
            (StatusCode::BAD_REQUEST, "use_dpop_nonce")
        );
        let as_nonce = lock(&server.state)
            .dpop
            .nonce(Audience::AuthorizationServer)
            .expect("on")
            .to_owned();
        assert_eq!(
            server.nonce_header(Audience::AuthorizationServer)[DPOP_NONCE_HEADER],
            as_nonce.as_str()
        );
        let (_, answer) = dpop_login(
            &server,
            &proof_headers(&key.proof("POST", TOKEN_URL, None, Some(&as_nonce))),
        );
        let access = text(&answer.expect("tokens"), "access_token");

        // At the gate: a proof without the resource's nonce gets a use_dpop_nonce challenge
        // carrying it.
        let response = server
            .refusal(
                &Method::POST,
                MCP,
                &dpop_auth(
                    &access,
                    Some(&key.proof("POST", MCP_URL, Some(&access), None)),
                ),
            )
            .expect("no nonce");
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .expect("ascii")
            .starts_with("DPoP error=\"use_dpop_nonce\", error_description="));
        let rs_nonce = response.headers()[DPOP_NONCE_HEADER]
            .to_str()
            .expect("ascii")
            .to_owned();
        assert_ne!(rs_nonce, as_nonce);
        let proof = key.proof("POST", MCP_URL, Some(&access), Some(&rs_nonce));
        assert!(server
            .refusal(&Method::POST, MCP, &dpop_auth(&access, Some(&proof)))
            .is_none());
        let added = server.admitted_headers();
        assert_eq!(added[DPOP_NONCE_HEADER], rs_nonce.as_str());

        lock(&server.state).dpop.rotate_nonces();
        let verdict = gate(
            &server,
            &dpop_auth(
                &access,
                Some(&key.proof("POST", MCP_URL, Some(&access), Some(&rs_nonce))),
            ),
        );
        assert!(refused("use_dpop_nonce")(&verdict), "{verdict:?}");
        let stats = server.stats();
        assert_eq!(stats.dpop_nonce_challenges, 3);
        assert_eq!(stats.dpop_proofs_accepted, 2);
        assert_eq!(stats.dpop_proofs_rejected, 0);
    }
}
