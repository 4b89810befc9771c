//! OAuth mode of the HTTP fixture ([`ServerOptions::oauth`](crate::ServerOptions::oauth),
//! `--oauth`): the fixture becomes an OAuth 2.1 protected resource *and* its own mock
//! authorization server, both on the fixture's origin, so a client's whole authorization flow
//! (metadata discovery, dynamic registration, authorization code with PKCE, refresh, revocation,
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
//!   `client_secret_basic` (and `private_key_jwt` with ES256 when
//!   [`OAuthOptions::preregistered_jwt`] is not empty).
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
//!   `client_secret` in the body, or — those of [`OAuthOptions::preregistered_jwt`] — with a
//!   `private_key_jwt` assertion (RFC 7523: ES256 by the registered key, `iss` = `sub` = the
//!   client, `aud` the issuer or the token endpoint, `exp` ahead, a `jti` never used before;
//!   otherwise 400 `invalid_client`); public clients send `client_id`. Answers
//!   `{"access_token","token_type":"Bearer","expires_in","scope",["refresh_token"]}`; errors
//!   per RFC 6749 §5.2 (400, or 401 `invalid_client`). Waits
//!   [`OAuthOptions::token_delay_ms`] before answering. The client is authenticated first
//!   (an assertion's `jti` is spent), then the DPoP proof is checked, then the grant.
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
//! - With [`OAuthOptions::dpop_optional`] only the authorization server does DPoP: the
//!   protected resource metadata mentions none, challenges are `Bearer`, and the gate takes
//!   bearer tokens (as `Bearer`) as well as bound ones (as `DPoP`, with a valid proof). A
//!   request made with the `DPoP` scheme is refused with a `DPoP` challenge.
//! - [`OAuthOptions::dpop_split_challenges`]: a `DPoP` refusal carries a `Bearer` challenge
//!   (`resource_metadata`, `scope`, and `error` only when it is `invalid_token` or
//!   `insufficient_scope`) and then the `DPoP` challenge, as two `WWW-Authenticate` headers.
//! - [`OAuthOptions::dpop_refuse_proofs`]: the gate refuses every proof
//!   (`DPoP error="invalid_dpop_proof"`).
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
//!
//! The parts: [`OAuthOptions`] and [`OAuthStats`] (`options.rs`); the metadata documents
//! (`metadata.rs`); registration (`register.rs`); the authorization endpoint (`authorize.rs`);
//! the device grant's endpoints (`device.rs`); the token endpoint and its grants (`token.rs`);
//! client authentication (`client_auth.rs`) and its `private_key_jwt` assertions
//! (`assertion.rs`); revocation (`revoke.rs`); the protected resource's gate (`gate.rs`);
//! error answers (`error.rs`) and form encoding (`form.rs`). This file holds the shared state
//! and routes requests.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, StatusCode};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::dpop::{Audience, DpopVerifier, ProofError, ProofRequest};
use crate::http::{empty_response, json_response, lock, read_body, HttpResponse};

mod assertion;
mod authorize;
mod client_auth;
mod device;
mod error;
mod form;
mod gate;
mod metadata;
mod options;
mod register;
mod revoke;
mod token;

#[cfg(test)]
mod tests;

pub use assertion::CLIENT_ASSERTION_TYPE;
pub(crate) use error::OAuthError;
pub use options::{OAuthOptions, OAuthStats};

use authorize::Code;
use client_auth::{Client, Credential};
use device::Device;
use form::parse_form;
use token::{AccessToken, RefreshGrant};

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

/// Everything the authorization server and the gate remember.
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
    /// Spent client assertions.
    assertions: assertion::UsedAssertions,
    stats: OAuthStats,
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
            let credential = match secret {
                Some(secret) => Credential::Secret(secret.clone()),
                None => Credential::None,
            };
            state.clients.insert(
                id.clone(),
                Client {
                    credential,
                    redirect_uris: None,
                },
            );
        }
        for (id, key) in &options.preregistered_jwt {
            // An unusable key is reported to the client that tries it, not here.
            let credential = Credential::PublicKey(crate::jws::p256_public_key(key));
            state.clients.insert(
                id.clone(),
                Client {
                    credential,
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

fn json_ok(value: Value) -> HttpResponse {
    json_response(StatusCode::OK, value.to_string())
}

/// Seconds since the Unix epoch, on the wall clock (DPoP's `iat` and an assertion's `exp` are
/// wall-clock times).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
