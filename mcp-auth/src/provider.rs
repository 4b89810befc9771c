//! [`OAuthProvider`]: the [`AuthProvider`] the HTTP transports (and any other transport on the
//! seam) use. Every request carries a token that is valid for longer than the refresh margin;
//! a background task refreshes ahead of expiry; a 401 triggers one refresh (or new
//! authorization, or takes a login another process stored) and one retry; a 403 `insufficient_scope` a bounded step-up. DPoP-bound
//! tokens go with a fresh proof per request, and a server's `use_dpop_nonce` gets one retry
//! with its nonce.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::Error;
use mcp_wire::redact::redact_url;
use mcp_wire::{AuthChallenge, AuthProvider, AuthTarget, ChallengeOutcome, Credentials};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::client::OAuthClient;
use crate::credentials::TokenSet;
use crate::dpop::{NonceFrom, INVALID_DPOP_PROOF};
use crate::error::AuthError;
use crate::metadata::ResourceChallenge;

/// After a failed background refresh, the next attempt waits this long (requests in the
/// meantime still refresh on demand).
const REFRESH_RETRY: Duration = Duration::from_secs(30);
/// Background refreshes are at least this far apart, whatever lifetime a server gives its
/// tokens (an `expires_in` of 0 must not make a busy loop).
const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(5);
/// How often tokens the store could not take are offered to it again.
const UNSAVED_RETRY: Duration = Duration::from_secs(5);

/// Runs an authorization that needs a user (or a stand-in for one): shows the URL, waits for
/// the callback, exchanges the code — `mcph auth login` with a browser and a loopback
/// listener, a test with an HTTP client.
#[async_trait]
pub trait Authorizer: Send + Sync + 'static {
    /// Authorizes `client` and returns the tokens ([`OAuthClient::exchange_code`] stores them).
    async fn authorize(&self, client: &OAuthClient) -> Result<TokenSet, AuthError>;
}

/// The OAuth [`AuthProvider`] of one server.
pub struct OAuthProvider {
    client: Arc<OAuthClient>,
    authorizer: Option<Arc<dyn Authorizer>>,
    refresher: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthProvider")
            .field("client", &self.client)
            .field("interactive", &self.authorizer.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for OAuthProvider {
    fn drop(&mut self) {
        if let Some(task) = self.refresher.take() {
            task.abort();
        }
    }
}

impl OAuthProvider {
    /// A provider for `client`. With an `authorizer`, a server that asks for authorization is
    /// authorized on the spot; without one, requests fail with an auth error naming the login
    /// hint. Inside a tokio runtime, a background task (ended when the provider is dropped)
    /// refreshes tokens before they expire.
    pub fn new(client: Arc<OAuthClient>, authorizer: Option<Arc<dyn Authorizer>>) -> OAuthProvider {
        let refresher = tokio::runtime::Handle::try_current()
            .ok()
            .map(|rt| rt.spawn(refresh_ahead(client.clone())));
        OAuthProvider {
            client,
            authorizer,
            refresher,
        }
    }

    /// A provider without the background refresher: tokens are refreshed only when asked for
    /// (a stdio server's token, read once when the child starts, needs no more).
    pub fn on_demand(
        client: Arc<OAuthClient>,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> OAuthProvider {
        OAuthProvider {
            client,
            authorizer,
            refresher: None,
        }
    }

    /// The OAuth client.
    pub fn client(&self) -> &Arc<OAuthClient> {
        &self.client
    }

    async fn handle_challenge(
        &self,
        challenge: &AuthChallenge,
    ) -> Result<ChallengeOutcome, AuthError> {
        let parsed = challenge
            .www_authenticate
            .as_deref()
            .and_then(ResourceChallenge::parse)
            .unwrap_or_default();
        let server = redact_url(self.client.config().server_url.as_str());
        if let Some(nonce) = &challenge.dpop_nonce {
            self.client.nonces.set(NonceFrom::Resource, nonce);
        }
        if parsed.is_dpop_nonce() {
            // The token stands; the proof lacked the server's (new) nonce. Without a nonce to
            // send, another try would fail the same way.
            return Ok(if challenge.dpop_nonce.is_some() {
                debug!(%server, "the server wants a DPoP proof with its nonce");
                ChallengeOutcome::RetryWithNonce
            } else {
                ChallengeOutcome::GiveUp
            });
        }
        if parsed.error.as_deref() == Some(INVALID_DPOP_PROOF) {
            // New tokens would not help: the proof itself was refused.
            return Err(AuthError::Unsupported(format!(
                "{server} refused this client's DPoP proof{}; check the system clock (proofs \
                 carry the time) and whether a proxy changes the URL the server sees",
                parsed
                    .error_description
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )));
        }
        if !challenge.credentials_retry_left {
            // New credentials would not be used: no refresh, no login.
            return Ok(ChallengeOutcome::GiveUp);
        }
        if challenge.status == 403 {
            if !parsed.is_insufficient_scope() {
                return Ok(ChallengeOutcome::GiveUp);
            }
            self.client.step_up(&parsed)?;
            debug!(%server, scope = ?parsed.scope, "step-up authorization");
            return self.obtain_new().await.map(|_| ChallengeOutcome::Retry);
        }
        // 401 to a request that went without a token: it is sent again with the tokens held
        // now — another request's, or a login another process stored since the store was last
        // read (it is read at most every `NONE_STORED_RECHECK` while it has none). Held tokens
        // that request never carried are not refreshed for its refusal.
        if !challenge.credentials_sent && self.client.tokens_since_bare_request().await? {
            debug!(%server, "sending the request again with the tokens held now");
            return Ok(ChallengeOutcome::Retry);
        }
        // 401: the token is missing, expired or revoked — or the server moved to another
        // authorization server, so a refused token means metadata discovery again.
        if self.client.tokens().await?.is_some() {
            // Rare (tokens are refreshed ahead of expiry): a few metadata fetches. If they
            // fail, the metadata known so far still serves the refresh.
            if let Err(e) = self.client.refetch_auth_metadata(Some(&parsed)).await {
                debug!(%server, "metadata discovery again after a refused token failed: {e}");
            }
        } else {
            self.client.auth_metadata(Some(&parsed)).await?;
        }
        if self.client.tokens().await?.is_some() {
            match self.client.refresh_access_token().await {
                Ok(_) => return Ok(ChallengeOutcome::Retry),
                Err(e) if e.is_invalid_grant() || matches!(e, AuthError::NeedsLogin(_)) => {
                    debug!(%server, "no refresh possible: {e}");
                }
                Err(e) => return Err(e),
            }
            self.client.forget_tokens().await?;
        }
        self.obtain_new().await.map(|_| ChallengeOutcome::Retry)
    }

    /// New tokens by the machine grant or the authorizer.
    async fn obtain_new(&self) -> Result<TokenSet, AuthError> {
        if self.client.is_machine() {
            return self.client.refresh_machine_tokens().await;
        }
        match &self.authorizer {
            Some(authorizer) => authorizer.authorize(&self.client).await,
            None => Err(self.client.needs_login()),
        }
    }
}

#[async_trait]
impl AuthProvider for OAuthProvider {
    async fn authorization(&self, target: &AuthTarget<'_>) -> Result<Option<Credentials>, Error> {
        // The common case of a server that needs no authorization, answered before any error
        // is made for it.
        if self.client.none_stored_recently() {
            return Ok(None);
        }
        match self.client.credentials(target).await {
            Ok(credentials) => Ok(Some(credentials)),
            // Without a token the request goes out bare: a server that needs none answers,
            // and one that does answers 401 with the challenge metadata discovery starts from.
            Err(AuthError::NeedsLogin(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn on_challenge(&self, challenge: &AuthChallenge) -> Result<ChallengeOutcome, Error> {
        self.handle_challenge(challenge).await.map_err(Error::from)
    }

    fn accept_nonce(&self, nonce: &str) {
        self.client.nonces.set(NonceFrom::Resource, nonce);
    }
}

/// The background refresher: sleeps until the token is due (expiry minus the margin),
/// refreshes, and starts over when the tokens change.
async fn refresh_ahead(client: Arc<OAuthClient>) {
    loop {
        let changed = client.tokens_changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        // Load from the store on first use, so stored tokens are refreshed too; a store that
        // cannot be read is tried again later.
        if let Err(e) = client.tokens().await {
            warn!("cannot read the stored tokens: {e}");
            tokio::select! {
                _ = tokio::time::sleep(REFRESH_RETRY) => {}
                _ = changed => {}
            }
            continue;
        }
        // Tokens the store could not take when they came are stored once it answers again.
        if client.has_unsaved_tokens() {
            match client.store_pending().await {
                Ok(true) => debug!("tokens stored now that the store answers again"),
                Ok(false) => {}
                Err(e) => debug!("the store still cannot take the tokens: {e}"),
            }
        }
        let due = match client.refresh_due_in() {
            Some(due) if client.has_unsaved_tokens() => due.min(UNSAVED_RETRY),
            Some(due) => due,
            None if client.has_unsaved_tokens() => UNSAVED_RETRY,
            None => {
                changed.await;
                continue;
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(due) => {}
            _ = &mut changed => continue,
        }
        if client.refresh_due_in().is_none_or(|left| !left.is_zero()) {
            // Woken to store pending tokens, not to refresh.
            continue;
        }
        let server = redact_url(client.config().server_url.as_str());
        match client.get_valid_token().await {
            Ok(_) => {
                debug!(%server, "token refreshed ahead of expiry");
                // Not woken by the change this refresh made itself.
                tokio::time::sleep(MIN_REFRESH_INTERVAL).await;
            }
            Err(e) => {
                warn!(%server, "background token refresh failed: {e}");
                tokio::select! {
                    _ = tokio::time::sleep(REFRESH_RETRY) => {}
                    _ = changed => {}
                }
            }
        }
    }
}
