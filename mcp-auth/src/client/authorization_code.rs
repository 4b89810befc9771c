//! The authorization code grant with PKCE: [`AuthorizationRequest`] and
//! [`OAuthClient::initiate_authorization`], then the [`Callback`] and
//! [`OAuthClient::exchange_code`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;
use oauth2::basic::BasicClient;
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, CsrfToken, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope,
};
use url::Url;

use super::registration::IdentityUse;
use super::token_request::{token_error, token_set};
use super::OAuthClient;
use crate::credentials::{ClientIdentity, TokenSet};
use crate::dpop::check_binding;
use crate::error::AuthError;
use crate::metadata::AuthMetadata;
use crate::secret::Secret;

/// An authorization the user is asked to complete: open [`url`](Self::url), then hand the
/// callback to [`OAuthClient::exchange_code`]. `Debug` hides the verifier and state.
#[derive(Clone)]
pub struct AuthorizationRequest {
    /// The authorization URL to open in a browser.
    pub url: Url,
    /// The PKCE verifier (RFC 7636), sent with the code.
    pub pkce_verifier: Secret,
    /// The `state` the callback must carry back.
    pub state: Secret,
    /// The redirect URI the callback arrives at.
    pub redirect_uri: String,
    /// The scopes asked for.
    pub scopes: Vec<String>,
    client: ClientIdentity,
    metadata: Arc<AuthMetadata>,
}

impl fmt::Debug for AuthorizationRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationRequest")
            .field("url", &redact_url(self.url.as_str()))
            .field("redirect_uri", &self.redirect_uri)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// What arrived at the redirect URI. `Debug` hides the code and state.
#[derive(Clone, Default)]
pub struct Callback {
    /// `code`.
    pub code: Option<Secret>,
    /// `state`.
    pub state: Option<Secret>,
    /// `iss` (RFC 9207).
    pub iss: Option<String>,
    /// `error`, when the user or server refused.
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl fmt::Debug for Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Callback")
            .field("has_code", &self.code.is_some())
            .field("iss", &self.iss)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl Callback {
    /// The callback parameters in a redirect URL (`…/callback?code=…&state=…`).
    pub fn from_url(url: &Url) -> Callback {
        let mut callback = Callback::default();
        for (name, value) in url.query_pairs() {
            let value = value.into_owned();
            match name.as_ref() {
                "code" => callback.code = Some(Secret::new(value)),
                "state" => callback.state = Some(Secret::new(value)),
                "iss" => callback.iss = Some(value),
                "error" => callback.error = Some(value),
                "error_description" => callback.error_description = Some(value),
                _ => {}
            }
        }
        callback
    }
}

impl OAuthClient {
    /// Starts an authorization: metadata discovery, a client identity (pre-registered, client ID
    /// metadata document or dynamic registration), PKCE S256 and a fresh `state`, for a
    /// callback at `redirect_uri`.
    pub async fn initiate_authorization(
        &self,
        redirect_uri: &str,
    ) -> Result<AuthorizationRequest, AuthError> {
        let metadata = self.auth_metadata(None).await?;
        metadata.require_s256()?;
        // Before a client registers or a user authorizes: a server that takes only tokens
        // this client cannot get is refused now.
        let dpop_key = self.dpop_key_for(&metadata)?;
        let authorize = metadata.endpoint(
            metadata
                .authorization_server
                .authorization_endpoint
                .as_ref(),
            "authorization_endpoint",
        )?;
        let client = self
            .client_identity(&metadata, IdentityUse::Redirect(redirect_uri))
            .await?;
        let redirect = RedirectUrl::new(redirect_uri.to_owned())
            .map_err(|e| AuthError::Config(format!("invalid redirect URI: {e}")))?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let scopes = self.scopes_to_request(&metadata);
        lock(&self.state).last_requested = scopes.iter().cloned().collect();
        let oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
            .set_auth_uri(AuthUrl::from_url(authorize))
            .set_redirect_uri(redirect);
        let mut request = oauth
            .authorize_url(CsrfToken::new_random)
            .set_pkce_challenge(challenge)
            .add_extra_param("resource", metadata.resource_indicator());
        if let Some(key) = &dpop_key {
            // RFC 9449 §10: the code is bound to the key, so a stolen code is of no use.
            request = request.add_extra_param("dpop_jkt", key.thumbprint().to_owned());
        }
        if !scopes.is_empty() {
            request = request.add_scope(Scope::new(scopes.join(" ")));
        }
        let (url, state) = request.url();
        Ok(AuthorizationRequest {
            url,
            pkce_verifier: Secret::new(verifier.into_secret()),
            state: Secret::new(state.into_secret()),
            redirect_uri: redirect_uri.to_owned(),
            scopes,
            client,
            metadata,
        })
    }

    /// Completes an authorization: checks the callback's `state` and `iss` (before its `error`
    /// is believed or shown), exchanges the code
    /// (with the PKCE verifier and the `resource`), and stores the tokens.
    pub async fn exchange_code(
        &self,
        request: &AuthorizationRequest,
        callback: &Callback,
    ) -> Result<TokenSet, AuthError> {
        let state_ok = callback.state.as_ref().is_some_and(|s| {
            mcp_wire::same_secret(s.expose().as_bytes(), request.state.expose().as_bytes())
        });
        if !state_ok {
            return Err(AuthError::Callback(
                "the state does not match this authorization (a forged or stale callback)".into(),
            ));
        }
        let issuer = &request.metadata.authorization_server.issuer;
        let iss_required = request
            .metadata
            .authorization_server
            .authorization_response_iss_parameter_supported
            == Some(true);
        match &callback.iss {
            // Exactly as recorded: no case folding, port or trailing-slash normalization.
            Some(iss) if iss != issuer => {
                return Err(AuthError::Callback(format!(
                    "the callback comes from the issuer {iss}, not {issuer} (RFC 9207)"
                )))
            }
            None if iss_required => {
                return Err(AuthError::Callback(format!(
                    "the callback lacks the iss parameter that {issuer} promises (RFC 9207)"
                )))
            }
            _ => {}
        }
        // Only a callback from the right issuer may be believed, or shown (RFC 9207).
        if let Some(error) = &callback.error {
            return Err(AuthError::Callback(format!(
                "the authorization server answered {error}{}",
                callback
                    .error_description
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )));
        }
        let code = callback
            .code
            .as_ref()
            .ok_or_else(|| AuthError::Callback("the callback carries no code".into()))?;
        let _guard = self.refresh_lock.lock().await;
        let key = self.dpop_key_for(&request.metadata)?;
        let oauth = self.token_client(&request.metadata, &request.client)?;
        let redirect = RedirectUrl::new(request.redirect_uri.clone())
            .map_err(|e| AuthError::Config(format!("invalid redirect URI: {e}")))?;
        let response = oauth
            .exchange_code(AuthorizationCode::new(code.expose().to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(
                request.pkce_verifier.expose().to_owned(),
            ))
            .set_redirect_uri(Cow::Owned(redirect))
            .add_extra_param("resource", request.metadata.resource_indicator())
            .request_async(&self.token_http(key.as_ref()))
            .await
            .map_err(|e| token_error(e, &request.metadata, "authorization_code"))?;
        let tokens = token_set(&response, &request.scopes, None);
        let tokens = check_binding(tokens, key.as_ref(), &request.metadata)?;
        self.keep_under_entry_lock(tokens.clone(), Some(request.client.clone()))
            .await?;
        Ok(tokens)
    }
}
