//! The credentials of a request to the MCP server ([`OAuthClient::credentials`]), and whether
//! tokens are bound to a DPoP key.

use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;
use mcp_wire::{AuthTarget, AuthorizationValue, Credentials};
use tracing::debug;

use super::{OAuthClient, State};
use crate::credentials::TokenType;
use crate::dpop::{binds_tokens, DpopKey, NonceFrom};
use crate::error::AuthError;
use crate::metadata::AuthMetadata;

impl OAuthClient {
    /// The credentials of one request to the MCP server: a valid access token as
    /// [`get_valid_token`](Self::get_valid_token) gives it, presented as its type says —
    /// `Bearer`, or `DPoP` with a fresh proof for `target` carrying the token's hash and the
    /// server's latest nonce.
    pub async fn credentials(&self, target: &AuthTarget<'_>) -> Result<Credentials, AuthError> {
        let tokens = self.valid_tokens().await?;
        let scheme = tokens.token_type.scheme();
        let authorization =
            AuthorizationValue::new(format!("{scheme} {}", tokens.access_token.expose()));
        let dpop = match tokens.token_type {
            TokenType::Bearer => None,
            TokenType::Dpop => {
                let key = lock(&self.state).dpop_key.clone().ok_or_else(|| {
                    AuthError::NeedsLogin(
                        "the DPoP key the stored token is bound to is gone; authorize again".into(),
                    )
                })?;
                let nonce = self.nonces.get(NonceFrom::Resource);
                Some(key.proof(
                    target.method,
                    target.url,
                    Some(&tokens.access_token),
                    nonce.as_deref(),
                )?)
            }
        };
        Ok(Credentials {
            authorization,
            dpop,
        })
    }

    /// The DPoP key for a token request, when tokens are to be bound (see [`DpopMode`]): the
    /// key held (or stored) so far, else a new one. A key is also used whenever the held
    /// tokens are bound to it (their refresh token may be). Fails when the MCP server takes
    /// only bound tokens and they cannot be had.
    pub(super) fn dpop_key_for(
        &self,
        metadata: &AuthMetadata,
    ) -> Result<Option<DpopKey>, AuthError> {
        let mut state = lock(&self.state);
        if !self.wants_dpop(&state, metadata)? {
            return Ok(None);
        }
        if state.dpop_key.is_none() {
            let key = DpopKey::generate();
            debug!(jkt = key.thumbprint(), "DPoP key generated");
            state.dpop_key = Some(key);
        }
        Ok(state.dpop_key.clone())
    }

    /// Fails when the MCP server takes only DPoP-bound tokens and they cannot be had — before
    /// a login starts, so that no user authorizes (and no client registers) for tokens the
    /// server would refuse.
    pub(super) fn check_dpop(&self, metadata: &AuthMetadata) -> Result<(), AuthError> {
        self.wants_dpop(&lock(&self.state), metadata).map(drop)
    }

    /// Whether tokens are to be bound to a DPoP key ([`binds_tokens`], given the held ones).
    fn wants_dpop(&self, state: &State, metadata: &AuthMetadata) -> Result<bool, AuthError> {
        let held_bound = state
            .held
            .as_ref()
            .is_some_and(|h| h.tokens.token_type == TokenType::Dpop);
        binds_tokens(
            self.config.dpop,
            metadata,
            held_bound,
            &redact_url(self.config.server_url.as_str()),
        )
    }
}
