//! Valid tokens for [`OAuthClient`]: the held ones while fresh, else a refresh (coalesced in
//! this process, under the store's entry lock across processes), else a machine grant.

use std::time::Duration;

use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;
use oauth2::RefreshToken;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::registration::IdentityUse;
use super::token_request::{token_error, token_set};
use super::{HeldTokens, OAuthClient, REFUSED_REREAD_WAIT};
use crate::credentials::TokenSet;
use crate::dpop::check_binding;
use crate::error::AuthError;
use crate::secret::Secret;

/// How often it looks.
const REREAD_POLL: Duration = Duration::from_millis(25);

/// Why a refresh is made.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refresh {
    /// The access token reached its refresh margin but is still valid: while the store cannot
    /// be read it is used on instead (a rotated refresh token that cannot be stored would be
    /// lost to every other process).
    AheadOfExpiry,
    /// The server refused the access token: a new one is needed now.
    Refused,
}

impl OAuthClient {
    /// Refreshes the access token now (coalesced with any refresh already in flight). A
    /// response without a refresh token keeps the old one; a refused refresh token is dropped
    /// (the next call needs a new authorization).
    pub async fn refresh_access_token(&self) -> Result<TokenSet, AuthError> {
        let seen = self.current().await.map(|h| h.tokens.access_token);
        let _guard = self.refresh_lock.lock().await;
        // Someone else refreshed while we waited: theirs is as new as ours would be.
        if let Some(held) = self.current().await {
            if Some(&held.tokens.access_token) != seen.as_ref() {
                return Ok(held.tokens);
            }
        }
        self.refresh_locked(Refresh::Refused).await
    }

    /// A valid access token: the held one while it is fresh for longer than the refresh
    /// margin, else a refreshed one (one refresh for all concurrent callers), else — for
    /// machine clients — a new one. Fails with [`AuthError::NeedsLogin`] when a user must
    /// authorize (holding no token, the store is read for a login made elsewhere at most every
    /// [`NONE_STORED_RECHECK`](super::NONE_STORED_RECHECK)).
    pub async fn get_valid_token(&self) -> Result<Secret, AuthError> {
        self.valid_tokens().await.map(|tokens| tokens.access_token)
    }

    /// The valid tokens behind [`get_valid_token`](Self::get_valid_token).
    pub(super) async fn valid_tokens(&self) -> Result<TokenSet, AuthError> {
        let margin = self.config.refresh_margin;
        if let Some(held) = self.current().await {
            if held.fresh_for(margin) {
                return Ok(held.tokens);
            }
        }
        if self.none_stored_recently() {
            return Err(self.needs_login());
        }
        let _guard = self.refresh_lock.lock().await;
        let mut held = self.current().await;
        if held.is_none() && !self.is_machine() {
            // Forgotten (refused) or never had: another process may have logged in or
            // refreshed since.
            held = self.adopt_stored_or_note_none().await?;
        }
        if let Some(held) = &held {
            if held.fresh_for(margin) {
                return Ok(held.tokens.clone());
            }
        }
        match self.new_tokens_locked().await {
            Ok(tokens) => Ok(tokens),
            // A refresh ahead of expiry that failed on the way (the authorization server did
            // not answer) leaves the held token usable until it expires.
            Err(AuthError::Http(e)) => match held.filter(|h| h.fresh_for(Duration::ZERO)) {
                Some(held) => {
                    warn!("token refresh failed, using the current token until it expires: {e}");
                    Ok(held.tokens)
                }
                None => Err(AuthError::Http(e)),
            },
            Err(e) => Err(e),
        }
    }

    /// Obtains new tokens without a user: refresh when there is a refresh token, else the
    /// machine grant. The refresh lock must be held.
    async fn new_tokens_locked(&self) -> Result<TokenSet, AuthError> {
        let has_refresh = lock(&self.state)
            .held
            .as_ref()
            .is_some_and(|h| h.tokens.refresh_token.is_some());
        if has_refresh {
            match self.refresh_locked(Refresh::AheadOfExpiry).await {
                Ok(tokens) => return Ok(tokens),
                Err(e) if e.is_invalid_grant() && self.is_machine() => {}
                Err(e) => return Err(e),
            }
        }
        self.machine_grant_locked().await
    }

    /// Refreshes with the refresh token, one process at a time: under the store's entry lock
    /// (other processes sharing the store wait), re-reads the entry first and takes tokens
    /// another process refreshed meanwhile instead of refreshing again; a refused refresh token
    /// is forgotten only while the stored entry is still the one that was refused. The
    /// client's refresh lock must be held.
    async fn refresh_locked(&self, why: Refresh) -> Result<TokenSet, AuthError> {
        // The metadata (a few requests on first use) before the lock: the lock covers only
        // re-read → refresh → store. A failure here shows again, with its cause, below.
        if let Err(e) = self.auth_metadata(None).await {
            debug!(server = %redact_url(self.config.server_url.as_str()), "getting the OAuth metadata before a refresh failed: {e}");
        }
        let entry = self.lock_entry().await;
        let result = self.refresh_under_entry_lock(why).await;
        entry.release().await;
        result
    }

    async fn refresh_under_entry_lock(&self, why: Refresh) -> Result<TokenSet, AuthError> {
        // Double-checked: the process that held the lock before us may have refreshed.
        if let Some(newer) = self.adopt_newer_stored().await {
            if newer.fresh_for(self.config.refresh_margin) {
                debug!(server = %redact_url(self.config.server_url.as_str()), "using the tokens another process refreshed");
                return Ok(newer.tokens);
            }
        }
        let Some(held) = self.current().await else {
            return Err(self.needs_login());
        };
        // The store cannot be read (Redis is down): the tokens a refresh would rotate could not
        // be shared, so a token that is still valid is used on until the store is back.
        let unreadable = lock(&self.state).unreadable.is_some();
        if unreadable && why == Refresh::AheadOfExpiry && held.fresh_for(Duration::ZERO) {
            debug!(server = %redact_url(self.config.server_url.as_str()), "the store cannot be read: the access token is used on until it can (or the token expires)");
            return Ok(held.tokens);
        }
        let Some(refresh) = held.tokens.refresh_token.clone() else {
            return Err(self.needs_login());
        };
        let refused_generation = lock(&self.state).generation;
        let metadata = self.auth_metadata(None).await?;
        let key = self.dpop_key_for(&metadata)?;
        let client = self
            .client_identity(&metadata, IdentityUse::TokenRequest)
            .await?;
        let oauth = self.token_client(&metadata, &client)?;
        let refresh_token = RefreshToken::new(refresh.expose().to_owned());
        let result = oauth
            .exchange_refresh_token(&refresh_token)
            .add_extra_param("resource", metadata.resource_indicator())
            .request_async(&self.token_http(key.as_ref()))
            .await;
        let response = match result {
            Ok(r) => r,
            Err(e) => {
                let e = token_error(e, &metadata, "refresh_token");
                if e.is_invalid_grant() {
                    // Another process may have used the refresh token without our lock (it
                    // waited longer than the lock's bound, or the lock was unreachable): its
                    // tokens reach the store a moment after the server answered us both.
                    if let Some(newer) = self.await_newer_stored().await {
                        info!(server = %redact_url(self.config.server_url.as_str()), "refresh token refused, but another process had refreshed: using its tokens");
                        return Ok(newer.tokens);
                    }
                    info!(server = %redact_url(self.config.server_url.as_str()), "refresh token refused; a new authorization is needed");
                    self.forget_refused(refused_generation).await?;
                }
                return Err(e);
            }
        };
        let tokens = token_set(&response, &held.tokens.scopes, Some(refresh));
        let tokens = check_binding(tokens, key.as_ref(), &metadata)?;
        debug!(server = %redact_url(self.config.server_url.as_str()), "access token refreshed");
        self.keep_refreshed(tokens.clone(), None).await;
        if let Some(observer) = self.refreshed.get() {
            observer();
        }
        Ok(tokens)
    }

    /// Reads the store again until it holds usable tokens newer than the held ones, for at most
    /// [`REFUSED_REREAD_WAIT`].
    async fn await_newer_stored(&self) -> Option<HeldTokens> {
        let until = Instant::now() + REFUSED_REREAD_WAIT;
        loop {
            if let Some(newer) = self.adopt_newer_stored().await {
                if newer.fresh_for(Duration::ZERO) {
                    return Some(newer);
                }
            }
            if Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(REREAD_POLL).await;
        }
    }
}
