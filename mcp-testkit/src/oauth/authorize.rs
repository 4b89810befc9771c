//! The authorization endpoint (`GET /authorize`): checks the request, approves at once and
//! redirects with a single-use code bound to the client, its redirect URI and its PKCE
//! challenge.

use std::time::Duration;

use base64::Engine;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::form::{encode, param, parse_form};
use super::register::is_redirect_uri;
use super::{AuthServer, OAuthError};
use crate::http::{lock, random_hex};

/// Authorization codes (and device codes) are valid this long.
pub(super) const CODE_LIFETIME: Duration = Duration::from_secs(600);

/// An authorization code waiting to be exchanged.
pub(super) struct Code {
    pub(super) client_id: String,
    pub(super) challenge: String,
    pub(super) method: String,
    pub(super) redirect_uri: String,
    pub(super) scopes: Vec<String>,
    pub(super) resource: Option<String>,
    pub(super) expires: Instant,
}

impl AuthServer {
    /// An authorization request (the query string): the redirect `Location`, or why not.
    pub(super) fn authorize(&self, query: &str) -> Result<String, OAuthError> {
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
}

/// Whether `verifier` matches `challenge` under `method` (RFC 7636 §4.6).
pub(super) fn pkce_matches(method: &str, verifier: &str, challenge: &str) -> bool {
    match method {
        "S256" => {
            let digest = Sha256::digest(verifier.as_bytes());
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) == challenge
        }
        "plain" => verifier == challenge,
        _ => false,
    }
}
