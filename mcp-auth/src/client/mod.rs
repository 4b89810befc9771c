//! [`OAuthClient`]: the seed's interface for one server — [`auth_metadata`],
//! [`initiate_authorization`], [`exchange_code`], [`refresh_access_token`],
//! [`get_valid_token`] — with the tokens kept in a [`TokenStore`] and refreshes coalesced.
//!
//! This file holds the client itself: its configuration, the tokens it holds and the locks
//! that coalesce refreshes. Each grant and concern is in a file of its own.
//!
//! [`auth_metadata`]: OAuthClient::auth_metadata
//! [`initiate_authorization`]: OAuthClient::initiate_authorization
//! [`exchange_code`]: OAuthClient::exchange_code
//! [`refresh_access_token`]: OAuthClient::refresh_access_token
//! [`get_valid_token`]: OAuthClient::get_valid_token

mod authorization_code;
mod credentials;
mod device;
mod logout;
mod machine;
mod metadata;
mod refresh;
mod registration;
mod scopes;
mod stored;
mod token_request;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;
use tokio::time::Instant;

use crate::config::{Grant, OAuthConfig};
use crate::credentials::{ClientIdentity, TokenSet};
use crate::dpop::{DpopKey, DpopNonces};
use crate::error::AuthError;
use crate::http::AuthHttp;
use crate::metadata::AuthMetadata;
use crate::store::TokenStore;

pub use authorization_code::{AuthorizationRequest, Callback};
pub use device::DeviceAuthorization;

/// Step-up re-authorizations allowed before giving up.
pub const MAX_STEP_UPS: u32 = 3;

/// How long a process whose refresh token was refused watches the store for the tokens of a
/// process that refreshed with the same token a moment earlier, before it gives up.
pub const REFUSED_REREAD_WAIT: Duration = Duration::from_secs(2);

/// While no token is held and the store had none a moment ago, requests go out without one
/// for this long before the store is read again for a login another process made (a 401 reads
/// it at once): the store — an OS credential store, a fleet's Redis — is not asked once per
/// request of a server that needs no authorization. A caller that gets no 401 to recover with
/// ([`OAuthClient::get_valid_token`] for a stdio server's child) sees such a login at most this
/// late.
pub const NONE_STORED_RECHECK: Duration = Duration::from_secs(1);

/// The current tokens, when (on the tokio clock) the access token expires, and how long it
/// lived when it was received.
#[derive(Clone, Debug)]
struct HeldTokens {
    tokens: TokenSet,
    expires: Option<Instant>,
    lifetime: Option<Duration>,
}

impl HeldTokens {
    /// Tokens just obtained: their lifetime is what is left of them now.
    fn obtained(tokens: TokenSet) -> HeldTokens {
        let lifetime = tokens.remaining(SystemTime::now());
        let expires = lifetime.map(|left| Instant::now() + left);
        HeldTokens {
            tokens,
            expires,
            lifetime,
        }
    }

    /// Tokens read from the store: they lived as long as their `expires_in` said; when that
    /// is unknown the full margin applies (a token close to expiry is refreshed before its
    /// first use).
    fn loaded(tokens: TokenSet) -> HeldTokens {
        let lifetime = tokens.lifetime_secs.map(Duration::from_secs);
        HeldTokens {
            lifetime,
            ..HeldTokens::obtained(tokens)
        }
    }

    /// The refresh margin for this token: `margin`, but at most half its lifetime, so a token
    /// that lives shorter than the margin is used for half its life instead of being
    /// refreshed over and over.
    fn margin(&self, margin: Duration) -> Duration {
        self.lifetime.map_or(margin, |life| margin.min(life / 2))
    }

    fn fresh_for(&self, margin: Duration) -> bool {
        let margin = self.margin(margin);
        self.expires
            .is_none_or(|at| at.saturating_duration_since(Instant::now()) > margin)
    }
}

#[derive(Default)]
struct State {
    metadata: Option<Arc<AuthMetadata>>,
    client: Option<ClientIdentity>,
    held: Option<HeldTokens>,
    loaded: bool,
    /// Scopes added by step-up challenges.
    step_up_scopes: BTreeSet<String>,
    /// The scopes the last authorization asked for.
    last_requested: BTreeSet<String>,
    /// Step-ups so far, and whether the last one asked for nothing new.
    step_ups: u32,
    repeated_step_up: bool,
    /// The key DPoP-bound tokens are bound to (made when first needed, stored with them).
    dpop_key: Option<DpopKey>,
    /// The generation of the store entry the held tokens came from or went to
    /// ([`StoredCredentials::generation`](crate::credentials::StoredCredentials::generation)).
    generation: u64,
    /// Why the store could not be read the last time it was tried (a wrong fleet key, a store
    /// that is down): reported instead of "no token is stored", which would look like a
    /// logout.
    unreadable: Option<String>,
    /// The held tokens could not be stored (the store was unreachable): they are stored at the
    /// next chance ([`OAuthClient::store_pending`]).
    unsaved: bool,
    /// The SHA-256 of a refresh token the server refused that could not be forgotten in the
    /// store (it was unreachable): the stored entry still holding it is not taken back.
    refused_refresh: Option<[u8; 32]>,
    /// When the store (readable) last had no token for a user grant while none was held: until
    /// [`NONE_STORED_RECHECK`] later, requests go without one and the store is not read again.
    none_stored_at: Option<Instant>,
}

/// The OAuth client of one MCP server.
pub struct OAuthClient {
    config: OAuthConfig,
    http: AuthHttp,
    store: Arc<dyn TokenStore>,
    state: Mutex<State>,
    /// Held while tokens are being obtained or refreshed: concurrent callers wait for the one
    /// request in flight instead of sending their own.
    refresh_lock: tokio::sync::Mutex<()>,
    /// Held while the store is read for the first time.
    load_lock: tokio::sync::Mutex<()>,
    /// Tells the background refresher that the tokens changed.
    pub(crate) tokens_changed: tokio::sync::Notify,
    /// The DPoP nonces the authorization server and the MCP server asked for.
    pub(crate) nonces: DpopNonces,
    /// Told of every access token refreshed with a refresh token (metrics).
    refreshed: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server", &redact_url(self.config.server_url.as_str()))
            .field("store", &self.store.describe())
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// A client for `config.server_url`, keeping tokens in `store`.
    pub fn new(config: OAuthConfig, store: Arc<dyn TokenStore>) -> Result<OAuthClient, AuthError> {
        crate::http::check_url(&config.server_url)?;
        let http = AuthHttp::for_config(&config)?;
        Ok(OAuthClient {
            config,
            http,
            store,
            state: Mutex::new(State::default()),
            refresh_lock: tokio::sync::Mutex::new(()),
            load_lock: tokio::sync::Mutex::new(()),
            tokens_changed: tokio::sync::Notify::new(),
            nonces: DpopNonces::default(),
            refreshed: std::sync::OnceLock::new(),
        })
    }

    /// Calls `observer` after every access token refreshed with a refresh token (set once;
    /// later calls are ignored) — for counting refreshes in metrics.
    pub fn on_refresh(&self, observer: impl Fn() + Send + Sync + 'static) {
        let _ = self.refreshed.set(Box::new(observer));
    }

    /// The configuration.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The store the tokens are kept in.
    pub fn store(&self) -> &Arc<dyn TokenStore> {
        &self.store
    }

    /// The held tokens (loaded from the store on first use), without refreshing. Fails when the
    /// store cannot be read (rather than saying no tokens are stored).
    pub async fn tokens(&self) -> Result<Option<TokenSet>, AuthError> {
        match self.current().await {
            Some(held) => Ok(Some(held.tokens)),
            None => self.unreadable().map_or(Ok(None), Err),
        }
    }

    /// The error for a store that could not be read, if the last read failed.
    fn unreadable(&self) -> Option<AuthError> {
        lock(&self.state)
            .unreadable
            .as_ref()
            .map(|e| AuthError::Store(format!("cannot read the stored tokens: {e}")))
    }

    /// How long until the held access token must be refreshed (expiry minus the margin);
    /// `None` when there is no token or it does not expire.
    pub(crate) fn refresh_due_in(&self) -> Option<Duration> {
        let state = lock(&self.state);
        let held = state.held.as_ref()?;
        if held.tokens.refresh_token.is_none() && !self.is_machine() {
            return None;
        }
        let at = held.expires?;
        Some(
            at.saturating_duration_since(Instant::now())
                .saturating_sub(held.margin(self.config.refresh_margin)),
        )
    }

    /// Whether tokens come without a user (client credentials, cross-app access).
    pub fn is_machine(&self) -> bool {
        !matches!(self.config.grant, Grant::AuthorizationCode)
    }

    /// The error for "a user must authorize", with the configured hint.
    pub fn needs_login(&self) -> AuthError {
        // Built without the formatting machinery: every request to a server without a stored
        // token makes (and drops) one — the transport then sends it bare.
        let mut message = String::from("authorization needed: no valid token is stored");
        if let Some(hint) = self.config.login_hint.as_deref() {
            message.push_str(" (");
            message.push_str(hint);
            message.push(')');
        }
        AuthError::NeedsLogin(message)
    }
}
