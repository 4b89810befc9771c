//! Logout: revocation (RFC 7009) and the logged-out store entry that outranks every earlier
//! one.

use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;

use super::registration::IdentityUse;
use super::OAuthClient;
use crate::credentials::{StoredCredentials, TokenSet};
use crate::error::AuthError;
use crate::http::parse_url;

impl OAuthClient {
    /// Revokes the tokens where the server supports RFC 7009, then removes them from the
    /// store — leaving an entry without tokens that carries the generation on, so that no
    /// process still holding the old tokens can store refreshed ones over a later login.
    /// Revocation failures are reported but do not keep the tokens.
    pub async fn logout(&self) -> Result<Option<String>, AuthError> {
        let _guard = self.refresh_lock.lock().await;
        let held = self.current().await;
        let mut note = None;
        if let Some(held) = held {
            match self.revoke(&held.tokens).await {
                Ok(Some(endpoint)) => note = Some(format!("revoked at {endpoint}")),
                Ok(None) => note = Some("the server offers no revocation".into()),
                Err(e) => note = Some(format!("revocation failed: {e}")),
            }
        }
        // Not a delete: an entry without tokens one generation above every entry so far, so
        // that a process still holding the old tokens drops them instead of storing refreshed
        // ones over a later login (generations never start again).
        let entry = self.lock_entry().await;
        let forgotten = self.write_logged_out().await;
        entry.release().await;
        let generation = forgotten?;
        let mut state = lock(&self.state);
        state.held = None;
        state.client = None;
        state.dpop_key = None;
        state.loaded = true;
        state.unsaved = false;
        state.generation = generation;
        drop(state);
        self.tokens_changed.notify_waiters();
        Ok(note)
    }

    /// Writes the logged-out entry (no tokens, no registration) above the stored and held
    /// generations; its generation.
    async fn write_logged_out(&self) -> Result<u64, AuthError> {
        for _ in 0..3 {
            let stored = self.store.load(&self.config.store_key).await?;
            let generation = stored
                .map_or(0, |s| s.generation)
                .max(lock(&self.state).generation)
                + 1;
            let entry = StoredCredentials {
                generation,
                logged_out: true,
                ..StoredCredentials::default()
            };
            if self
                .store
                .save_if_newer(&self.config.store_key, &entry)
                .await?
            {
                return Ok(generation);
            }
        }
        Err(AuthError::Store(
            "the stored entry kept changing under concurrent writes; logged out in this process \
             only"
                .into(),
        ))
    }

    async fn revoke(&self, tokens: &TokenSet) -> Result<Option<String>, AuthError> {
        let metadata = self.auth_metadata(None).await?;
        let Some(endpoint) = metadata.authorization_server.revocation_endpoint.clone() else {
            return Ok(None);
        };
        let endpoint = parse_url(&endpoint, "revocation_endpoint")?;
        let client = self
            .client_identity(&metadata, IdentityUse::TokenRequest)
            .await?;
        // The refresh token first: revoking it usually revokes the access tokens too.
        let mut revoked = Vec::new();
        if let Some(refresh) = &tokens.refresh_token {
            revoked.push((refresh.expose(), "refresh_token"));
        }
        revoked.push((tokens.access_token.expose(), "access_token"));
        for (token, hint) in revoked {
            let form = vec![("token", token), ("token_type_hint", hint)];
            self.form_token_request(&endpoint, Some(&client), form, "revocation", None)
                .await?;
        }
        Ok(Some(redact_url(endpoint.as_str())))
    }
}
