//! The token endpoint (`POST /token`) and its grants: `authorization_code` (PKCE),
//! `refresh_token` (rotation), `client_credentials` and the device code (RFC 8628 §3.4); the
//! DPoP proof of a token request and the tokens it binds.

use std::time::Duration;

use hyper::header::HeaderMap;
use hyper::Method;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::authorize::pkce_matches;
use super::form::param;
use super::{AuthServer, OAuthError, State, DEVICE_CODE_GRANT, TOKEN_PATH};
use crate::dpop::{proof_header, Audience, ProofError, ProofRequest};
use crate::http::{lock, random_hex};

/// An issued access token.
pub(super) struct AccessToken {
    pub(super) scopes: Vec<String>,
    pub(super) expires: Instant,
    /// The thumbprint of the DPoP key the token is bound to.
    pub(super) jkt: Option<String>,
}

/// What a refresh token stands for.
pub(super) struct RefreshGrant {
    pub(super) client_id: String,
    pub(super) scopes: Vec<String>,
    pub(super) resource: Option<String>,
    /// The thumbprint of the DPoP key the refresh token is bound to.
    pub(super) jkt: Option<String>,
}

/// What the refresh token of a token answer is.
enum RefreshMode {
    /// A new one (if the server issues refresh tokens).
    Issue,
    /// None in the answer.
    Omit,
}

/// One token request, authenticated and proven: who asks, for what, bound to which key.
struct TokenRequest<'a> {
    form: &'a [(String, String)],
    client_id: String,
    resource: Option<String>,
    /// The thumbprint of the request's DPoP proof key.
    jkt: Option<String>,
}

impl AuthServer {
    /// A token request: the JSON answer, or the RFC 6749 error.
    pub(super) fn token(
        &self,
        headers: &HeaderMap,
        form: &[(String, String)],
    ) -> Result<Value, OAuthError> {
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
        match (&answer, grant) {
            (Ok(_), "refresh_token") => state.stats.refreshes_granted += 1,
            (Err(e), "refresh_token") if e.error == "invalid_grant" => {
                state.stats.token_errors += 1;
                state.stats.refresh_refused += 1;
            }
            (Err(_), _) => state.stats.token_errors += 1,
            (Ok(_), _) => {}
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
        // First, as strict servers do: a client assertion is spent even when the proof is
        // then refused (a `use_dpop_nonce` retry needs a new assertion).
        let client_id = self.authenticate(state, headers, form, TOKEN_PATH)?;
        // Before the grant is looked at: a code is gone once used, and a request refused for
        // its proof (or the proof's nonce) must be able to come again.
        let jkt = self.token_proof(state, headers)?;
        let request = TokenRequest {
            form,
            client_id,
            resource,
            jkt,
        };
        match grant {
            "authorization_code" => self.authorization_code_grant(state, request),
            "refresh_token" => self.refresh_token_grant(state, request),
            "client_credentials" => self.client_credentials_grant(state, request),
            DEVICE_CODE_GRANT if self.options.device_authorization => {
                self.device_code_grant(state, request)
            }
            other => Err(OAuthError::bad(
                "unsupported_grant_type",
                format!("grant_type {other} is not supported"),
            )),
        }
    }

    /// DPoP at `/token`: the thumbprint of the key the request's proof was made with, or
    /// `None` without a proof (a bearer token follows); a bad proof is refused.
    fn token_proof(
        &self,
        state: &mut State,
        headers: &HeaderMap,
    ) -> Result<Option<String>, OAuthError> {
        if !self.options.dpop_enabled() {
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

    fn authorization_code_grant(
        &self,
        state: &mut State,
        request: TokenRequest<'_>,
    ) -> Result<Value, OAuthError> {
        let form = request.form;
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
        if issued.client_id != request.client_id {
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
        let verifier = param(form, "code_verifier")?
            .ok_or_else(|| OAuthError::bad("invalid_grant", "code_verifier is missing (PKCE)"))?;
        if !pkce_matches(&issued.method, verifier, &issued.challenge) {
            return Err(OAuthError::bad(
                "invalid_grant",
                "PKCE verification failed: the code_verifier does not match the code_challenge",
            ));
        }
        if let (Some(asked), Some(now)) = (&issued.resource, &request.resource) {
            if asked != now {
                return Err(OAuthError::bad(
                    "invalid_target",
                    "resource differs from the authorization request",
                ));
            }
        }
        let resource = request.resource.or(issued.resource);
        Ok(self.issue(
            state,
            &request.client_id,
            issued.scopes,
            resource,
            RefreshMode::Issue,
            request.jkt,
        ))
    }

    fn refresh_token_grant(
        &self,
        state: &mut State,
        request: TokenRequest<'_>,
    ) -> Result<Value, OAuthError> {
        let form = request.form;
        let token = param(form, "refresh_token")?
            .ok_or_else(|| OAuthError::bad("invalid_request", "refresh_token is missing"))?;
        let (scopes, old_resource, bound_to) = match state.refresh.get(token) {
            Some(g) if g.client_id == request.client_id => {
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
        if bound_to.is_some() && request.jkt != bound_to {
            return Err(OAuthError::bad(
                "invalid_grant",
                if request.jkt.is_none() {
                    "the refresh token is DPoP-bound: the request needs a DPoP proof by its key"
                } else {
                    "the refresh token is bound to another DPoP key than the proof's"
                },
            ));
        }
        let scopes = match param(form, "scope")? {
            None => scopes,
            Some(asked) => {
                let asked: Vec<String> = asked.split_whitespace().map(str::to_owned).collect();
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
        let resource = request.resource.or(old_resource);
        Ok(self.issue(
            state,
            &request.client_id,
            scopes,
            resource,
            mode,
            request.jkt,
        ))
    }

    fn client_credentials_grant(
        &self,
        state: &mut State,
        request: TokenRequest<'_>,
    ) -> Result<Value, OAuthError> {
        let confidential = state
            .clients
            .get(&request.client_id)
            .is_some_and(|c| c.is_confidential());
        if !confidential {
            return Err(OAuthError::bad(
                "unauthorized_client",
                "client_credentials needs a confidential client",
            ));
        }
        let scopes = self.grant_scopes(param(request.form, "scope")?.unwrap_or(""));
        Ok(self.issue(
            state,
            &request.client_id,
            scopes,
            request.resource,
            RefreshMode::Omit,
            request.jkt,
        ))
    }

    fn device_code_grant(
        &self,
        state: &mut State,
        request: TokenRequest<'_>,
    ) -> Result<Value, OAuthError> {
        let code = param(request.form, "device_code")?
            .ok_or_else(|| OAuthError::bad("invalid_request", "device_code is missing"))?;
        let Some(device) = state.devices.get(code) else {
            return Err(OAuthError::bad(
                "invalid_grant",
                "unknown or used device_code",
            ));
        };
        if device.client_id != request.client_id {
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
        let resource = request.resource.or(device.resource);
        Ok(self.issue(
            state,
            &request.client_id,
            device.scopes,
            resource,
            RefreshMode::Issue,
            request.jkt,
        ))
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
}
