//! [`OAuthClient`]: the seed's interface for one server — [`discover_auth_metadata`],
//! [`initiate_authorization`], [`exchange_code`], [`refresh_access_token`],
//! [`get_valid_token`] — with the tokens kept in a [`TokenStore`] and refreshes coalesced.
//!
//! [`discover_auth_metadata`]: OAuthClient::discover_auth_metadata
//! [`initiate_authorization`]: OAuthClient::initiate_authorization
//! [`exchange_code`]: OAuthClient::exchange_code
//! [`refresh_access_token`]: OAuthClient::refresh_access_token
//! [`get_valid_token`]: OAuthClient::get_valid_token

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use mcp_core::auth::redact_url;
use mcp_core::sync::lock;
use mcp_core::{AuthTarget, AuthorizationValue, Credentials};
use oauth2::basic::{BasicClient, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet,
    EndpointSet, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError,
    Scope, TokenResponse, TokenUrl,
};
use serde_json::{json, Value};
use tokio::time::Instant;
use tracing::{debug, info, warn};
use url::Url;

use crate::config::{CrossAppAccess, Grant, OAuthConfig};
use crate::credentials::{
    unix_now, ClientAuth, ClientIdentity, StoredCredentials, TokenEndpointAuth, TokenSet, TokenType,
};
use crate::discovery::{discover, AuthMetadata, ResourceChallenge};
use crate::dpop::{binds_tokens, check_binding, DpopKey, DpopNonces, NonceFrom};
use crate::error::AuthError;
use crate::http::{parse_url, AuthHttp};
use crate::jwt::CLIENT_ASSERTION_TYPE;
use crate::secret::Secret;
use crate::store::{EntryLock, TokenStore, ENTRY_LOCK_TTL};
use crate::token_http::TokenHttp;

/// The `offline_access` scope (asks for a refresh token), requested only where advertised.
const OFFLINE_ACCESS: &str = "offline_access";
/// Step-up re-authorizations allowed before giving up.
pub const MAX_STEP_UPS: u32 = 3;

/// How long a process whose refresh token was refused watches the store for the tokens of a
/// process that refreshed with the same token a moment earlier, before it gives up.
pub const REFUSED_REREAD_WAIT: Duration = Duration::from_secs(2);
/// How often it looks.
const REREAD_POLL: Duration = Duration::from_millis(25);
const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

type TokenClient =
    BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// What a client identity is needed for; decides what a registration asks for.
#[derive(Clone, Copy, Debug)]
enum Purpose<'a> {
    /// The authorization code flow with this redirect URI.
    Redirect(&'a str),
    /// The device authorization grant (no redirect URI).
    Device,
    /// A token request with an identity obtained earlier (refresh, revocation, machine
    /// grants): nothing is registered.
    Token,
}

/// A device authorization in progress (RFC 8628): the user visits
/// [`verification_uri`](Self::verification_uri) on any device and enters
/// [`user_code`](Self::user_code), while [`OAuthClient::complete_device_authorization`] polls.
pub struct DeviceAuthorization {
    /// Where the user goes.
    pub verification_uri: String,
    /// The same with the code filled in, when the server offers one.
    pub verification_uri_complete: Option<String>,
    /// The code the user enters.
    pub user_code: String,
    /// How long the codes are valid.
    pub expires_in: Duration,
    details: oauth2::StandardDeviceAuthorizationResponse,
    client: ClientIdentity,
    metadata: Arc<AuthMetadata>,
    scopes: Vec<String>,
}

impl fmt::Debug for DeviceAuthorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceAuthorization")
            .field("verification_uri", &self.verification_uri)
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

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

/// The current tokens, when (on the tokio clock) the access token expires, and how long it
/// lived when it was received.
#[derive(Clone, Debug)]
struct Held {
    tokens: TokenSet,
    expires: Option<Instant>,
    lifetime: Option<Duration>,
}

impl Held {
    /// Tokens just obtained: their lifetime is what is left of them now.
    fn obtained(tokens: TokenSet) -> Held {
        let lifetime = tokens.remaining(SystemTime::now());
        let expires = lifetime.map(|left| Instant::now() + left);
        Held {
            tokens,
            expires,
            lifetime,
        }
    }

    /// Tokens read from the store: they lived as long as their `expires_in` said; when that
    /// is unknown the full margin applies (a token close to expiry is refreshed before its
    /// first use).
    fn loaded(tokens: TokenSet) -> Held {
        let lifetime = tokens.lifetime_secs.map(Duration::from_secs);
        Held {
            lifetime,
            ..Held::obtained(tokens)
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
    held: Option<Held>,
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
    /// ([`StoredCredentials::generation`]).
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
}

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

/// Which stored entry a re-read of the store takes over the held tokens.
#[derive(Clone, Copy)]
enum Reread {
    /// One written after the held tokens (a higher generation).
    Newer,
    /// Any at least as new as the last one seen, when no tokens are held.
    WhenNoneHeld,
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

    /// Discovers (once per server, then from the cache) how the server wants to be authorized.
    /// A challenge naming another resource metadata URL than the cached one starts discovery
    /// again.
    pub async fn discover_auth_metadata(
        &self,
        challenge: Option<&ResourceChallenge>,
    ) -> Result<Arc<AuthMetadata>, AuthError> {
        if let Some(cached) = lock(&self.state).metadata.clone() {
            let moved = challenge
                .and_then(|c| c.resource_metadata.as_deref())
                .is_some_and(|url| cached.resource_metadata_url.as_deref() != Some(url));
            if !moved {
                // A later challenge may be the first to say the server takes DPoP.
                if let Some(c) = challenge.filter(|c| c.dpop && !cached.challenge_offers_dpop) {
                    let mut learned = (*cached).clone();
                    learned.challenge_offers_dpop = true;
                    learned.challenge_dpop_algs = c.dpop_algs.clone();
                    let learned = Arc::new(learned);
                    lock(&self.state).metadata = Some(learned.clone());
                    return Ok(learned);
                }
                return Ok(cached);
            }
        }
        let metadata = Arc::new(discover(&self.http, &self.config.server_url, challenge).await?);
        info!(
            server = %redact_url(self.config.server_url.as_str()),
            issuer = %metadata.authorization_server.issuer,
            "OAuth metadata discovered"
        );
        let mut state = lock(&self.state);
        state.metadata = Some(metadata.clone());
        Ok(metadata)
    }

    /// Discovers again, past the cache (a token was refused: the server may now name another
    /// authorization server). Returns whether the authorization server changed; if it did, the
    /// tokens of the old one are forgotten, and its client registration is never offered to the
    /// new one (registrations are kept per issuer).
    pub async fn rediscover(
        &self,
        challenge: Option<&ResourceChallenge>,
    ) -> Result<bool, AuthError> {
        let before = lock(&self.state).metadata.clone();
        let metadata = Arc::new(discover(&self.http, &self.config.server_url, challenge).await?);
        let changed = before.is_some_and(|old| {
            old.authorization_server.issuer != metadata.authorization_server.issuer
        });
        lock(&self.state).metadata = Some(metadata.clone());
        if changed {
            info!(
                server = %redact_url(self.config.server_url.as_str()),
                issuer = %metadata.authorization_server.issuer,
                "the server moved to another authorization server"
            );
            self.forget_tokens().await?;
        }
        Ok(changed)
    }

    /// Asks the server (an unauthenticated `initialize`) for its challenge and discovers from
    /// it, so a login can start before any call was refused. Returns `Ok(None)` when the
    /// server accepted the request: it needs no authorization.
    pub async fn probe(&self) -> Result<Option<Arc<AuthMetadata>>, AuthError> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": mcp_core::ProtocolVersion::LATEST.as_str(),
                "capabilities": {},
                "clientInfo": { "name": self.config.client_name, "version": env!("CARGO_PKG_VERSION") }
            }
        });
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            reqwest::header::HeaderValue::from_static("application/json"),
        );
        let bytes = serde_json::to_vec(&body)
            .map_err(|e| AuthError::Http(format!("cannot encode a request: {e}")))?;
        let answer = self
            .http
            .execute(
                reqwest::Method::POST,
                &self.config.server_url,
                headers,
                Some(bytes),
            )
            .await?;
        if answer.status != 401 && answer.status != 403 {
            if answer.is_success() {
                return Ok(None);
            }
            // Not a challenge: discovery goes by the well-known URLs alone.
            return self.discover_auth_metadata(None).await.map(Some);
        }
        let challenges: Vec<&str> = answer
            .headers
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let challenge = ResourceChallenge::parse(&challenges.join(", "));
        self.discover_auth_metadata(challenge.as_ref())
            .await
            .map(Some)
    }

    /// Starts an authorization: discovery, a client identity (pre-registered, client ID
    /// metadata document or dynamic registration), PKCE S256 and a fresh `state`, for a
    /// callback at `redirect_uri`.
    pub async fn initiate_authorization(
        &self,
        redirect_uri: &str,
    ) -> Result<AuthorizationRequest, AuthError> {
        let metadata = self.discover_auth_metadata(None).await?;
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
            .client_identity(&metadata, Purpose::Redirect(redirect_uri))
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
        let state_ok = callback
            .state
            .as_ref()
            .is_some_and(|s| constant_time_eq(s.expose(), request.state.expose()));
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

    /// Whether the server offers the device authorization grant (RFC 8628).
    pub async fn offers_device_authorization(&self) -> Result<bool, AuthError> {
        let metadata = self.discover_auth_metadata(None).await?;
        Ok(metadata
            .authorization_server
            .device_authorization_endpoint
            .is_some())
    }

    /// Starts a device authorization: a client identity (registered without a redirect URI
    /// when needed), then the codes to show the user.
    pub async fn start_device_authorization(&self) -> Result<DeviceAuthorization, AuthError> {
        let metadata = self.discover_auth_metadata(None).await?;
        let endpoint = metadata.endpoint(
            metadata
                .authorization_server
                .device_authorization_endpoint
                .as_ref(),
            "device_authorization_endpoint",
        )?;
        self.check_dpop(&metadata)?;
        let client = self.client_identity(&metadata, Purpose::Device).await?;
        let scopes = self.scopes_to_request(&metadata);
        let oauth = self
            .token_client(&metadata, &client)?
            .set_device_authorization_url(oauth2::DeviceAuthorizationUrl::from_url(endpoint));
        let mut request = oauth
            .exchange_device_code()
            .add_extra_param("resource", metadata.resource_indicator());
        if !scopes.is_empty() {
            request = request.add_scope(Scope::new(scopes.join(" ")));
        }
        let details: oauth2::StandardDeviceAuthorizationResponse = request
            .request_async(&self.token_http(None))
            .await
            .map_err(|e| token_error(e, &metadata, "device_authorization"))?;
        Ok(DeviceAuthorization {
            verification_uri: details.verification_uri().to_string(),
            verification_uri_complete: details
                .verification_uri_complete()
                .map(|u| u.secret().clone()),
            user_code: details.user_code().secret().clone(),
            expires_in: details.expires_in(),
            details,
            client,
            metadata,
            scopes,
        })
    }

    /// Polls the token endpoint (at the server's interval, slowing down when told) until the
    /// user approved the device authorization, refused it, or its codes expired; stores the
    /// tokens.
    pub async fn complete_device_authorization(
        &self,
        device: &DeviceAuthorization,
    ) -> Result<TokenSet, AuthError> {
        let key = self.dpop_key_for(&device.metadata)?;
        let oauth = self.token_client(&device.metadata, &device.client)?;
        let response = oauth
            .exchange_device_access_token(&device.details)
            .add_extra_param("resource", device.metadata.resource_indicator())
            .request_async(
                &self.token_http(key.as_ref()),
                tokio::time::sleep,
                Some(device.expires_in),
            )
            .await
            .map_err(|e| token_error(e, &device.metadata, "device_code"))?;
        let tokens = token_set(&response, &device.scopes, None);
        let tokens = check_binding(tokens, key.as_ref(), &device.metadata)?;
        let _guard = self.refresh_lock.lock().await;
        self.keep_under_entry_lock(tokens.clone(), Some(device.client.clone()))
            .await?;
        Ok(tokens)
    }

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
    /// authorize.
    pub async fn get_valid_token(&self) -> Result<Secret, AuthError> {
        self.valid_tokens().await.map(|tokens| tokens.access_token)
    }

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

    /// The valid tokens behind [`get_valid_token`](Self::get_valid_token).
    async fn valid_tokens(&self) -> Result<TokenSet, AuthError> {
        let margin = self.config.refresh_margin;
        if let Some(held) = self.current().await {
            if held.fresh_for(margin) {
                return Ok(held.tokens);
            }
        }
        let _guard = self.refresh_lock.lock().await;
        let mut held = self.current().await;
        if held.is_none() && !self.is_machine() {
            // Forgotten (refused) or never had: another process may have logged in or
            // refreshed since.
            held = self.adopt_stored_when_none_held().await;
            // A store that cannot be read is not "logged out": say why.
            if held.is_none() {
                if let Some(unreadable) = self.unreadable() {
                    return Err(unreadable);
                }
            }
        }
        if let Some(held) = &held {
            if held.fresh_for(margin) {
                return Ok(held.tokens.clone());
            }
        }
        match self.renew_locked().await {
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

    /// New tokens for a machine client (client credentials, cross-app access) even when the
    /// held ones look valid — the server refused them.
    pub async fn renew_machine_tokens(&self) -> Result<TokenSet, AuthError> {
        let _guard = self.refresh_lock.lock().await;
        match &self.config.grant {
            Grant::AuthorizationCode => Err(self.needs_login()),
            Grant::ClientCredentials { .. } => self.client_credentials_locked().await,
            Grant::CrossAppAccess(xaa) => self.cross_app_access_locked(xaa).await,
            Grant::JwtBearer { assertion } => self.jwt_bearer_locked(assertion).await,
        }
    }

    /// Obtains new tokens without a user: refresh when there is a refresh token, else the
    /// machine grant. The refresh lock must be held.
    async fn renew_locked(&self) -> Result<TokenSet, AuthError> {
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
        match &self.config.grant {
            Grant::AuthorizationCode => Err(self.needs_login()),
            Grant::ClientCredentials { .. } => self.client_credentials_locked().await,
            Grant::CrossAppAccess(xaa) => self.cross_app_access_locked(xaa).await,
            Grant::JwtBearer { assertion } => self.jwt_bearer_locked(assertion).await,
        }
    }

    /// Refreshes with the refresh token, one process at a time: under the store's entry lock
    /// (other processes sharing the store wait), re-reads the entry first and takes tokens
    /// another process refreshed meanwhile instead of refreshing again; a refused refresh token
    /// is forgotten only while the stored entry is still the one that was refused. The
    /// client's refresh lock must be held.
    async fn refresh_locked(&self, why: Refresh) -> Result<TokenSet, AuthError> {
        // Discovery (a few requests on first use) before the lock: the lock covers only
        // re-read → refresh → store. A failure here shows again, with its cause, below.
        if let Err(e) = self.discover_auth_metadata(None).await {
            debug!(server = %redact_url(self.config.server_url.as_str()), "discovery before a refresh failed: {e}");
        }
        let entry = self.lock_entry().await;
        let result = self.refresh_under_entry_lock(why).await;
        entry.release().await;
        result
    }

    /// The store's lock on this client's entry, waiting at most [`ENTRY_LOCK_TTL`]; none (with
    /// a warning) when it cannot be had — the refresh then goes on uncoordinated, and the
    /// generations still keep the newest tokens.
    async fn lock_entry(&self) -> EntryLock {
        match self
            .store
            .lock_entry(&self.config.store_key, ENTRY_LOCK_TTL)
            .await
        {
            Ok(lock) => lock,
            Err(e) => {
                warn!(
                    server = %redact_url(self.config.server_url.as_str()),
                    store = %self.store.describe(),
                    "refreshing without the store's lock: {e}"
                );
                EntryLock::none()
            }
        }
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
        let metadata = self.discover_auth_metadata(None).await?;
        let key = self.dpop_key_for(&metadata)?;
        let client = self.client_identity(&metadata, Purpose::Token).await?;
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
    async fn await_newer_stored(&self) -> Option<Held> {
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

    /// Reads the store again and, when its entry is newer than the held tokens (another
    /// process refreshed or logged in), holds its tokens instead and returns them. A store that
    /// cannot be read, or holds nothing newer, changes nothing.
    async fn adopt_newer_stored(&self) -> Option<Held> {
        self.reread(Reread::Newer).await
    }

    /// With no tokens held, takes the stored ones when the entry is at least as new as what
    /// this client last saw (a login elsewhere, or the winner of a refresh this client lost
    /// while the store was unreachable).
    async fn adopt_stored_when_none_held(&self) -> Option<Held> {
        self.reread(Reread::WhenNoneHeld).await
    }

    async fn reread(&self, which: Reread) -> Option<Held> {
        let stored = match self.store.load(&self.config.store_key).await {
            Ok(stored) => {
                lock(&self.state).unreadable = None;
                stored?
            }
            Err(e) => {
                // The store (or its lock) says so once per outage; this may run per call.
                debug!(store = %self.store.describe(), "cannot read the stored tokens again: {e}");
                lock(&self.state).unreadable = Some(e.0);
                return None;
            }
        };
        let mut state = lock(&self.state);
        let takes = match which {
            Reread::Newer => stored.generation > state.generation,
            Reread::WhenNoneHeld => state.held.is_none() && stored.generation >= state.generation,
        };
        if !takes {
            return None;
        }
        let Some(tokens) = stored.tokens else {
            state.generation = stored.generation;
            state.loaded = true;
            if !stored.logged_out && state.unsaved {
                // Another process forgot a refresh token older than the held ones, which the
                // store has not seen yet: they stay, to be stored above the forget.
                return None;
            }
            // Logged out elsewhere (refreshing would undo it), or the held tokens were the
            // refused ones.
            if state.held.take().is_some() {
                debug!(server = %redact_url(self.config.server_url.as_str()), "the stored login was removed by another process");
            }
            state.unsaved = false;
            drop(state);
            self.tokens_changed.notify_waiters();
            return None;
        };
        let refused_before = state.refused_refresh.is_some_and(|refused| {
            tokens
                .refresh_token
                .as_ref()
                .is_some_and(|r| fingerprint(r) == refused)
        });
        if refused_before {
            // The entry still holds a refresh token the server refused: not taken back.
            return None;
        }
        state.refused_refresh = None;
        // Stored by a process that had just obtained them: their lifetime is known from
        // `expires_in` (or unknown, and then the full margin applies).
        let held = Held::loaded(tokens);
        state.held = Some(held.clone());
        state.generation = stored.generation;
        state.loaded = true;
        state.unsaved = false;
        if let Some(client) = stored.client {
            state.client = Some(client);
        }
        if let Some(key) = stored.dpop_key {
            match DpopKey::from_secret(&key) {
                Ok(key) => state.dpop_key = Some(key),
                Err(e) => warn!(store = %self.store.describe(), "{e}"),
            }
        }
        drop(state);
        self.tokens_changed.notify_waiters();
        Some(held)
    }

    /// Forgets tokens the authorization server refused — in the store only while the entry is
    /// still generation `refused` (compare-and-delete): a process that lost a refresh race
    /// never deletes the tokens the winner stored, and takes them instead when they are there.
    /// Nothing to forget when no tokens are held (they were forgotten already).
    async fn forget_refused(&self, refused: u64) -> Result<(), AuthError> {
        let (client, refused_refresh) = {
            let state = lock(&self.state);
            if state.generation != refused || state.held.is_none() {
                // Newer tokens arrived meanwhile (they were not refused), or nothing is held.
                return Ok(());
            }
            let refused_refresh = state
                .held
                .as_ref()
                .and_then(|h| h.tokens.refresh_token.as_ref())
                .map(fingerprint);
            (state.client.clone(), refused_refresh)
        };
        {
            let mut state = lock(&self.state);
            state.held = None;
            state.loaded = true;
            state.unsaved = false;
        }
        self.tokens_changed.notify_waiters();
        let stored = self.entry(None, client, refused + 1);
        match self
            .store
            .save_if_newer(&self.config.store_key, &stored)
            .await
        {
            Ok(true) => {
                let mut state = lock(&self.state);
                state.generation = state.generation.max(refused + 1);
            }
            Ok(false) => {
                debug!(server = %redact_url(self.config.server_url.as_str()), "the stored tokens are newer than the refused ones: kept");
                self.adopt_newer_stored().await;
            }
            // Nothing is deleted then; the next process to read the entry finds out itself,
            // and this one does not take the refused token back from it.
            Err(e) => {
                lock(&self.state).refused_refresh = refused_refresh;
                debug!(store = %self.store.describe(), "could not forget the refused tokens in the store: {e}")
            }
        }
        Ok(())
    }

    /// `client_credentials` with the configured client: its secret, or a `private_key_jwt`
    /// assertion. The refresh lock must be held.
    async fn client_credentials_locked(&self) -> Result<TokenSet, AuthError> {
        let Grant::ClientCredentials { key } = &self.config.grant else {
            return Err(AuthError::Config("not a client_credentials client".into()));
        };
        let metadata = self.discover_auth_metadata(None).await?;
        let dpop_key = self.dpop_key_for(&metadata)?;
        let client = self.client_identity(&metadata, Purpose::Token).await?;
        let scopes = self.scopes_to_request(&metadata);
        let oauth = self.token_client(&metadata, &client)?;
        // A client assertion may be single-use (its `jti`): when the server asks for its DPoP
        // nonce, the request is built again with a new assertion rather than sent again.
        let mut http = self.token_http(dpop_key.as_ref());
        http.retry_on_nonce = key.is_none();
        let mut attempts = 0;
        let response = loop {
            attempts += 1;
            let mut request = oauth
                .exchange_client_credentials()
                .add_extra_param("resource", metadata.resource_indicator());
            if !scopes.is_empty() {
                request = request.add_scope(Scope::new(scopes.join(" ")));
            }
            if let Some(key) = key {
                let assertion = key.client_assertion(
                    &client.client_id,
                    &metadata.authorization_server.issuer,
                    unix_now(SystemTime::now()),
                )?;
                request = request
                    .add_extra_param("client_assertion_type", CLIENT_ASSERTION_TYPE)
                    .add_extra_param("client_assertion", assertion.expose().to_owned());
            }
            match request.request_async(&http).await {
                Ok(response) => break response,
                Err(e) => {
                    let e = token_error(e, &metadata, "client_credentials");
                    if !(e.is_use_dpop_nonce() && !http.retry_on_nonce && attempts < 2) {
                        return Err(e);
                    }
                }
            }
        };
        let tokens = token_set(&response, &scopes, None);
        let tokens = check_binding(tokens, dpop_key.as_ref(), &metadata)?;
        self.keep_refreshed(tokens.clone(), None).await;
        Ok(tokens)
    }

    /// Cross-app access: the ID token becomes an ID-JAG at the identity provider (token
    /// exchange), which becomes an access token at the server's authorization server (JWT
    /// bearer grant). The refresh lock must be held.
    async fn cross_app_access_locked(&self, xaa: &CrossAppAccess) -> Result<TokenSet, AuthError> {
        let metadata = self.discover_auth_metadata(None).await?;
        self.check_dpop(&metadata)?;
        let scopes = self.scopes_to_request(&metadata);
        let resource = metadata.resource_indicator();
        let issuer = metadata.authorization_server.issuer.clone();
        let scope = scopes.join(" ");
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("requested_token_type", ID_JAG_TYPE),
            ("subject_token", xaa.id_token.expose()),
            ("subject_token_type", ID_TOKEN_TYPE),
            ("audience", issuer.as_str()),
            ("resource", resource.as_str()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scope.as_str()));
        }
        let idp = ClientIdentity {
            client_id: xaa.idp_client_id.clone(),
            client_secret: xaa.idp_client_secret.clone(),
            auth_method: if xaa.idp_client_secret.is_some() {
                TokenEndpointAuth::ClientSecretBasic
            } else {
                TokenEndpointAuth::None
            },
            redirect_uri: None,
            issuer: None,
        };
        let exchanged = self
            .form_token_request(
                &xaa.idp_token_endpoint,
                Some(&idp),
                form,
                "token-exchange",
                None,
            )
            .await?;
        let jag = exchanged
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                AuthError::Http(format!(
                    "the identity provider's token exchange at {} returned no access_token",
                    redact_url(xaa.idp_token_endpoint.as_str())
                ))
            })?
            .to_owned();
        let client = self.client_identity(&metadata, Purpose::Token).await?;
        self.jwt_bearer_grant(&metadata, Some(&client), &jag, &scopes)
            .await
    }

    /// Workload identity: the held JWT in a JWT-bearer grant, no client authentication. The
    /// refresh lock must be held.
    async fn jwt_bearer_locked(&self, assertion: &Secret) -> Result<TokenSet, AuthError> {
        let metadata = self.discover_auth_metadata(None).await?;
        self.check_dpop(&metadata)?;
        let scopes = self.scopes_to_request(&metadata);
        self.jwt_bearer_grant(&metadata, None, assertion.expose(), &scopes)
            .await
    }

    /// The JWT-bearer grant (RFC 7523) at the server's authorization server, with `client`'s
    /// authentication (cross-app access) or none (workload identity: then the configured
    /// client id, if any, goes along); keeps the tokens.
    async fn jwt_bearer_grant(
        &self,
        metadata: &AuthMetadata,
        client: Option<&ClientIdentity>,
        assertion: &str,
        scopes: &[String],
    ) -> Result<TokenSet, AuthError> {
        let resource = metadata.resource_indicator();
        let scope = scopes.join(" ");
        let token_endpoint = metadata.endpoint(
            metadata.authorization_server.token_endpoint.as_ref(),
            "token_endpoint",
        )?;
        let mut form = vec![("grant_type", JWT_BEARER_GRANT), ("assertion", assertion)];
        if let (None, Some(id)) = (client, &self.config.client_id) {
            form.push(("client_id", id.as_str()));
        }
        if !scopes.is_empty() {
            form.push(("scope", scope.as_str()));
        }
        form.push(("resource", resource.as_str()));
        let key = self.dpop_key_for(metadata)?;
        let answer = self
            .form_token_request(&token_endpoint, client, form, "jwt-bearer", key.as_ref())
            .await?;
        let tokens = token_set_from_json(&answer, scopes).ok_or_else(|| {
            AuthError::Http(format!(
                "the JWT bearer grant at {} returned no access_token",
                redact_url(token_endpoint.as_str())
            ))
        })?;
        let tokens = check_binding(tokens, key.as_ref(), metadata)?;
        self.keep_refreshed(tokens.clone(), None).await;
        Ok(tokens)
    }

    /// A token request the `oauth2` crate has no grant for, with the client's authentication
    /// (and a DPoP proof with `key`).
    async fn form_token_request(
        &self,
        endpoint: &Url,
        client: Option<&ClientIdentity>,
        mut form: Vec<(&str, &str)>,
        grant: &'static str,
        key: Option<&DpopKey>,
    ) -> Result<Value, AuthError> {
        let mut headers = reqwest::header::HeaderMap::new();
        match client.map(|c| (c, c.client_auth())) {
            // No client authentication at all (workload identity).
            None => {}
            Some((client, ClientAuth::Basic(secret))) => {
                let mut value = reqwest::header::HeaderValue::from_str(&basic_auth(
                    &client.client_id,
                    secret.expose(),
                ))
                .map_err(|_| {
                    AuthError::Config("the client credentials are not a valid header".into())
                })?;
                value.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, value);
            }
            Some((client, ClientAuth::Post(secret))) => {
                form.push(("client_id", &client.client_id));
                form.push(("client_secret", secret.expose()));
            }
            Some((client, ClientAuth::Public)) => form.push(("client_id", &client.client_id)),
        }
        let fetched = self
            .token_http(key)
            .post_form(endpoint, &form, headers)
            .await?;
        let body: Value = serde_json::from_slice(&fetched.body).unwrap_or(Value::Null);
        if !fetched.is_success() {
            return Err(AuthError::TokenRefused {
                endpoint: redact_url(endpoint.as_str()),
                grant,
                error: body
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("HTTP error")
                    .to_owned(),
                description: body
                    .get("error_description")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| Some(format!("HTTP {}", fetched.status))),
            });
        }
        Ok(body)
    }

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
        let metadata = self.discover_auth_metadata(None).await?;
        let Some(endpoint) = metadata.authorization_server.revocation_endpoint.clone() else {
            return Ok(None);
        };
        let endpoint = parse_url(&endpoint, "revocation_endpoint")?;
        let client = self.client_identity(&metadata, Purpose::Token).await?;
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

    /// A 403 `insufficient_scope`: the scopes the next authorization asks for grow to the
    /// union of the granted, the last requested and the challenge's scopes. Fails after
    /// [`MAX_STEP_UPS`] step-ups, and on a second step-up in a row that would ask for nothing
    /// new (the server will not grant what it asks for).
    pub fn step_up(&self, challenge: &ResourceChallenge) -> Result<(), AuthError> {
        let server = redact_url(self.config.server_url.as_str());
        let mut state = lock(&self.state);
        let wanted: BTreeSet<String> = challenge.scope.iter().flatten().cloned().collect();
        let nothing_new = wanted.is_subset(&state.last_requested);
        if state.step_ups >= MAX_STEP_UPS || (nothing_new && state.repeated_step_up) {
            return Err(AuthError::GaveUp(format!(
                "{server} still answers 403 insufficient_scope (scope {:?}) after {} \
                 re-authorization(s); giving up",
                wanted.iter().cloned().collect::<Vec<_>>().join(" "),
                state.step_ups
            )));
        }
        state.step_ups += 1;
        state.repeated_step_up = nothing_new;
        let granted: Vec<String> = state
            .held
            .as_ref()
            .map(|h| h.tokens.scopes.clone())
            .unwrap_or_default();
        let last: Vec<String> = state.last_requested.iter().cloned().collect();
        state.step_up_scopes.extend(granted);
        state.step_up_scopes.extend(last);
        state.step_up_scopes.extend(wanted);
        Ok(())
    }

    /// Drops the held tokens (keeps the client identity), e.g. after the server refused them —
    /// in the store only while its entry is still the one these tokens came from (another
    /// process's newer tokens stay).
    pub async fn forget_tokens(&self) -> Result<(), AuthError> {
        let _guard = self.refresh_lock.lock().await;
        let entry = self.lock_entry().await;
        let generation = lock(&self.state).generation;
        let forgotten = self.forget_refused(generation).await;
        entry.release().await;
        forgotten
    }

    /// Whether tokens come without a user (client credentials, cross-app access).
    pub fn is_machine(&self) -> bool {
        !matches!(self.config.grant, Grant::AuthorizationCode)
    }

    /// The error for "a user must authorize", with the configured hint.
    pub fn needs_login(&self) -> AuthError {
        AuthError::NeedsLogin(format!(
            "authorization needed: no valid token is stored{}",
            self.config
                .login_hint
                .as_deref()
                .map(|h| format!(" ({h})"))
                .unwrap_or_default()
        ))
    }

    /// Loads from the store on first use.
    async fn current(&self) -> Option<Held> {
        if !lock(&self.state).loaded {
            // Concurrent first callers share one read of the store.
            let _loading = self.load_lock.lock().await;
            if !lock(&self.state).loaded {
                match self.store.load(&self.config.store_key).await {
                    Ok(stored) => {
                        let mut state = lock(&self.state);
                        state.loaded = true;
                        state.unreadable = None;
                        if let Some(stored) = stored {
                            state.generation = stored.generation;
                            state.held = stored.tokens.map(Held::loaded);
                            if state.client.is_none() {
                                state.client = stored.client;
                            }
                            if state.dpop_key.is_none() {
                                // A key that cannot be read leaves its tokens unusable: the
                                // server refuses them, and a new authorization follows.
                                state.dpop_key = stored.dpop_key.and_then(|k| {
                                    DpopKey::from_secret(&k)
                                        .map_err(|e| warn!(store = %self.store.describe(), "{e}"))
                                        .ok()
                                });
                            }
                        }
                    }
                    // An unreadable entry (a failing store, a corrupt entry) counts as none
                    // for now; the next call reads again.
                    Err(e) => {
                        warn!(store = %self.store.describe(), "cannot read the stored tokens: {e}");
                        lock(&self.state).unreadable = Some(e.0);
                    }
                }
            }
        }
        lock(&self.state).held.clone()
    }

    /// Holds new tokens (and the client identity they belong to) and stores them
    /// ([`store_held`](Self::store_held)). They are held either way; `Err` says why they could
    /// not be stored (they are stored at the next chance, [`store_pending`](Self::store_pending)).
    async fn keep(&self, tokens: TokenSet, client: Option<ClientIdentity>) -> Result<(), String> {
        {
            let mut state = lock(&self.state);
            state.held = Some(Held::obtained(tokens));
            state.loaded = true;
            state.unsaved = true;
            if client.is_some() {
                state.client = client;
            }
        }
        self.tokens_changed.notify_waiters();
        self.store_held().await
    }

    /// [`keep`](Self::keep) for tokens a refresh or a machine grant obtained: a store that fails
    /// costs a warning, not the request (the tokens are held, and stored later).
    async fn keep_refreshed(&self, tokens: TokenSet, client: Option<ClientIdentity>) {
        if let Err(e) = self.keep(tokens, client).await {
            warn!(store = %self.store.describe(), "could not store the new tokens (kept in this process, stored when the store answers): {e}");
        }
    }

    /// Writes the held tokens one generation above the held and the stored entry. Nothing is
    /// written when the store cannot be read (never blind: a wrong fleet key must not replace
    /// the fleet's entry). When another process wrote in between (it went without the lock): an
    /// entry with tokens is kept (both logins are good); one without — the forget of a refresh
    /// token older than these — is written over.
    async fn store_held(&self) -> Result<(), String> {
        for _ in 0..3 {
            let stored = match self.store.load(&self.config.store_key).await {
                Ok(stored) => {
                    lock(&self.state).unreadable = None;
                    stored
                }
                Err(e) => return Err(e.0),
            };
            let stored_generation = stored.as_ref().map_or(0, |s| s.generation);
            let (tokens, client, generation) = {
                let state = lock(&self.state);
                let Some(held) = &state.held else {
                    drop(state);
                    lock(&self.state).unsaved = false;
                    return Ok(());
                };
                (
                    held.tokens.clone(),
                    state.client.clone(),
                    state.generation.max(stored_generation) + 1,
                )
            };
            let entry = self.entry(Some(tokens), client, generation);
            match self
                .store
                .save_if_newer(&self.config.store_key, &entry)
                .await
            {
                Ok(true) => {
                    let mut state = lock(&self.state);
                    state.generation = state.generation.max(generation);
                    state.unsaved = false;
                    return Ok(());
                }
                Ok(false) => {
                    let newer = self
                        .store
                        .load(&self.config.store_key)
                        .await
                        .map_err(|e| e.0)?;
                    if let Some(newer) = newer.filter(|n| n.tokens.is_some()) {
                        debug!(store = %self.store.describe(), "another process stored tokens at the same time; both are kept");
                        let mut state = lock(&self.state);
                        state.generation = state.generation.max(newer.generation);
                        state.unsaved = false;
                        return Ok(());
                    }
                }
                Err(e) => return Err(e.0),
            }
        }
        Err("the entry kept changing under concurrent writes".into())
    }

    /// Whether the held tokens still wait to be stored (the store was unreachable when they
    /// came).
    pub fn has_unsaved_tokens(&self) -> bool {
        lock(&self.state).unsaved
    }

    /// Stores held tokens that could not be stored when they came (the store was unreachable),
    /// one process at a time: `Ok(true)` when stored now, `Ok(false)` when there was nothing
    /// to store. Once the store is back, the newest tokens win by generation.
    pub async fn store_pending(&self) -> Result<bool, AuthError> {
        if !self.has_unsaved_tokens() {
            return Ok(false);
        }
        let _guard = self.refresh_lock.lock().await;
        let entry = self.lock_entry().await;
        // Another process may have refreshed since: its tokens are newer than ours.
        self.adopt_newer_stored().await;
        let stored = if self.has_unsaved_tokens() {
            self.store_held().await.map(|()| true)
        } else {
            Ok(false)
        };
        entry.release().await;
        stored.map_err(AuthError::Store)
    }

    /// [`keep`](Self::keep) for a login, under the store's entry lock (its generation must be
    /// read and written by one process at a time); a login that cannot be stored is an error
    /// (the tokens are held by this process only).
    async fn keep_under_entry_lock(
        &self,
        tokens: TokenSet,
        client: Option<ClientIdentity>,
    ) -> Result<(), AuthError> {
        let entry = self.lock_entry().await;
        let kept = self.keep(tokens, client).await;
        entry.release().await;
        kept.map_err(|e| {
            AuthError::Store(format!(
                "authorized, but the tokens could not be stored ({e}); only this process holds them"
            ))
        })
    }

    /// The store entry for `tokens` and `client` at `generation`.
    fn entry(
        &self,
        tokens: Option<TokenSet>,
        client: Option<ClientIdentity>,
        generation: u64,
    ) -> StoredCredentials {
        // Only identities the server issued are stored: configured ones come from the config.
        let client = client.filter(|c| self.config.client_id.as_deref() != Some(&c.client_id));
        let dpop_key = lock(&self.state).dpop_key.as_ref().map(DpopKey::to_secret);
        StoredCredentials {
            tokens,
            client,
            dpop_key,
            generation,
            logged_out: false,
        }
    }

    /// The scopes for an authorization or grant: configured, else the challenge's or the
    /// metadata's; plus step-up scopes; plus `offline_access` where the server lists it.
    fn scopes_to_request(&self, metadata: &AuthMetadata) -> Vec<String> {
        let mut scopes: Vec<String> = if self.config.scopes.is_empty() {
            metadata.default_scopes()
        } else {
            self.config.scopes.clone()
        };
        for scope in &lock(&self.state).step_up_scopes {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        let offers_offline = metadata
            .authorization_server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == OFFLINE_ACCESS));
        // Only with other scopes: a server that defines none gets no `scope` at all.
        if offers_offline
            && !self.is_machine()
            && !scopes.is_empty()
            && !scopes.iter().any(|s| s == OFFLINE_ACCESS)
        {
            scopes.push(OFFLINE_ACCESS.into());
        }
        scopes
    }

    /// The client identity: pre-registered → a stored registration for this issuer (and
    /// redirect URI) → client ID metadata document → dynamic registration.
    async fn client_identity(
        &self,
        metadata: &AuthMetadata,
        purpose: Purpose<'_>,
    ) -> Result<ClientIdentity, AuthError> {
        let server = &metadata.authorization_server;
        if let Some(client_id) = &self.config.client_id {
            let auth_method = self.config.auth_method.unwrap_or_else(|| {
                match (&self.config.client_secret, &self.config.grant) {
                    (_, Grant::ClientCredentials { key: Some(_) }) => {
                        TokenEndpointAuth::PrivateKeyJwt
                    }
                    (Some(_), _) => {
                        pick_secret_method(server.token_endpoint_auth_methods_supported.as_deref())
                    }
                    (None, _) => TokenEndpointAuth::None,
                }
            });
            return Ok(ClientIdentity {
                client_id: client_id.clone(),
                client_secret: self.config.client_secret.clone(),
                auth_method,
                redirect_uri: None,
                issuer: Some(server.issuer.clone()),
            });
        }
        self.current().await;
        let stored = lock(&self.state).client.clone();
        if let Some(stored) = stored {
            let same_issuer = stored.issuer.as_deref() == Some(server.issuer.as_str());
            let fits = match (purpose, stored.redirect_uri.as_deref()) {
                (Purpose::Redirect(want), Some(have)) => want == have,
                (Purpose::Redirect(_), None) => false,
                // A device client has no redirect URI; one registered for redirects may not
                // have the device grant.
                (Purpose::Device, have) => have.is_none(),
                (Purpose::Token, _) => true,
            };
            if same_issuer && fits {
                return Ok(stored);
            }
        }
        if let Some(url) = &self.config.client_metadata_url {
            if server.client_id_metadata_document_supported == Some(true) {
                parse_url(url, "client metadata document URL")?;
                return Ok(ClientIdentity {
                    client_id: url.clone(),
                    client_secret: None,
                    auth_method: TokenEndpointAuth::None,
                    redirect_uri: None,
                    issuer: Some(server.issuer.clone()),
                });
            }
        }
        let client = self.register(metadata, purpose).await?;
        lock(&self.state).client = Some(client.clone());
        Ok(client)
    }

    /// Dynamic client registration (RFC 7591).
    async fn register(
        &self,
        metadata: &AuthMetadata,
        purpose: Purpose<'_>,
    ) -> Result<ClientIdentity, AuthError> {
        let server = &metadata.authorization_server;
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(AuthError::Registration(format!(
                "{} offers no dynamic registration and no client_id is configured; \
                 configure a pre-registered client (oauth.client_id)",
                server.issuer
            )));
        };
        let endpoint = parse_url(endpoint, "registration_endpoint")?;
        let method =
            pick_registration_method(server.token_endpoint_auth_methods_supported.as_deref());
        let (redirect_uri, mut body) = match purpose {
            Purpose::Redirect(uri) => (
                Some(uri.to_owned()),
                json!({
                    "client_name": self.config.client_name,
                    "application_type": application_type(uri),
                    "redirect_uris": [uri],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "token_endpoint_auth_method": method.as_str(),
                }),
            ),
            Purpose::Device => (
                None,
                json!({
                    "client_name": self.config.client_name,
                    "application_type": "native",
                    "grant_types": [DEVICE_CODE_GRANT, "refresh_token"],
                    "response_types": [],
                    "token_endpoint_auth_method": method.as_str(),
                }),
            ),
            Purpose::Token => {
                return Err(AuthError::Registration(
                    "no client is registered with this server yet (log in first)".into(),
                ))
            }
        };
        let scopes = self.scopes_to_request(metadata);
        if !scopes.is_empty() {
            body["scope"] = Value::String(scopes.join(" "));
        }
        let fetched = self.http.post_json(&endpoint, &body).await?;
        if !fetched.is_success() {
            return Err(AuthError::Registration(format!(
                "{} answered HTTP {}: {}",
                redact_url(endpoint.as_str()),
                fetched.status,
                fetched.snippet()
            )));
        }
        let answer: Value = serde_json::from_slice(&fetched.body).map_err(|e| {
            AuthError::Registration(format!(
                "the answer from {} is not JSON: {e}",
                redact_url(endpoint.as_str())
            ))
        })?;
        let client_id = answer
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                AuthError::Registration(format!(
                    "the answer from {} has no client_id",
                    redact_url(endpoint.as_str())
                ))
            })?
            .to_owned();
        let client_secret = answer
            .get("client_secret")
            .and_then(Value::as_str)
            .map(Secret::from);
        let auth_method = answer
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .and_then(TokenEndpointAuth::parse)
            .unwrap_or(method);
        info!(issuer = %server.issuer, method = auth_method.as_str(), "client registered");
        Ok(ClientIdentity {
            client_id,
            client_secret,
            auth_method,
            redirect_uri,
            issuer: Some(server.issuer.clone()),
        })
    }

    /// The DPoP key for a token request, when tokens are to be bound (see [`DpopMode`]): the
    /// key held (or stored) so far, else a new one. A key is also used whenever the held
    /// tokens are bound to it (their refresh token may be). Fails when the MCP server takes
    /// only bound tokens and they cannot be had.
    fn dpop_key_for(&self, metadata: &AuthMetadata) -> Result<Option<DpopKey>, AuthError> {
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
    fn check_dpop(&self, metadata: &AuthMetadata) -> Result<(), AuthError> {
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

    /// The HTTP client of a token request: with `key`, every request carries a DPoP proof
    /// (and one refused for want of the server's nonce is sent again with it).
    fn token_http<'a>(&'a self, key: Option<&'a DpopKey>) -> TokenHttp<'a> {
        TokenHttp {
            http: &self.http,
            key,
            nonces: &self.nonces,
            retry_on_nonce: true,
        }
    }

    /// An `oauth2` client for the token endpoint with this identity's authentication.
    fn token_client(
        &self,
        metadata: &AuthMetadata,
        client: &ClientIdentity,
    ) -> Result<TokenClient, AuthError> {
        let token = metadata.endpoint(
            metadata.authorization_server.token_endpoint.as_ref(),
            "token_endpoint",
        )?;
        let mut oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
            .set_token_uri(TokenUrl::from_url(token));
        oauth = match client.client_auth() {
            ClientAuth::Basic(secret) => oauth
                .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
                .set_auth_type(AuthType::BasicAuth),
            ClientAuth::Post(secret) => oauth
                .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
                .set_auth_type(AuthType::RequestBody),
            ClientAuth::Public => oauth.set_auth_type(AuthType::RequestBody),
        };
        Ok(oauth)
    }
}

/// `client_secret_post` where the server lists it (servers that list both do not all accept
/// Basic without a `client_id` in the body), else `client_secret_basic` (the RFC 6749
/// default).
fn pick_secret_method(supported: Option<&[String]>) -> TokenEndpointAuth {
    match supported {
        Some(s) if s.iter().any(|m| m == "client_secret_post") => {
            TokenEndpointAuth::ClientSecretPost
        }
        _ => TokenEndpointAuth::ClientSecretBasic,
    }
}

/// What to ask for in dynamic registration: a public client (`none`) where allowed, else a
/// secret the server will issue.
fn pick_registration_method(supported: Option<&[String]>) -> TokenEndpointAuth {
    match supported {
        None => TokenEndpointAuth::None,
        Some(s) if s.iter().any(|m| m == "none") => TokenEndpointAuth::None,
        Some(s) => pick_secret_method(Some(s)),
    }
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
fn basic_auth(client_id: &str, secret: &str) -> String {
    use base64::Engine;
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let raw = format!("{}:{}", enc(client_id), enc(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The tokens of a token answer: the new refresh token (else `old_refresh`), the expiry, and
/// the granted scopes (else those requested).
fn token_set_of(
    access: String,
    token_type: TokenType,
    refresh: Option<String>,
    expires_in_secs: Option<u64>,
    scope: Option<Vec<String>>,
    requested: &[String],
    old_refresh: Option<Secret>,
) -> TokenSet {
    let now = unix_now(SystemTime::now());
    TokenSet {
        access_token: Secret::new(access),
        token_type,
        refresh_token: refresh.map(Secret::new).or(old_refresh),
        expires_at: expires_in_secs.map(|secs| now.saturating_add(secs)),
        lifetime_secs: expires_in_secs,
        scopes: scope.unwrap_or_else(|| requested.to_vec()),
    }
}

/// A token answer the `oauth2` crate parsed.
fn token_set(
    response: &BasicTokenResponse,
    requested: &[String],
    old_refresh: Option<Secret>,
) -> TokenSet {
    token_set_of(
        response.access_token().secret().clone(),
        TokenType::parse(response.token_type().as_ref()),
        response.refresh_token().map(|r| r.secret().clone()),
        response.expires_in().map(|d| d.as_secs()),
        response.scopes().map(|s| {
            s.iter()
                .flat_map(|s| s.split_whitespace().map(str::to_owned))
                .collect()
        }),
        requested,
        old_refresh,
    )
}

/// A token answer read as JSON (the grants `oauth2` does not know).
fn token_set_from_json(answer: &Value, requested: &[String]) -> Option<TokenSet> {
    let text = |name: &str| answer.get(name).and_then(Value::as_str).map(str::to_owned);
    Some(token_set_of(
        text("access_token")?,
        TokenType::parse(text("token_type").as_deref().unwrap_or("Bearer")),
        text("refresh_token"),
        answer.get("expires_in").and_then(Value::as_u64),
        text("scope").map(|s| s.split_whitespace().map(str::to_owned).collect()),
        requested,
        None,
    ))
}

/// An `oauth2` failure as an [`AuthError`] — never with the response body, which may hold a
/// token.
fn token_error<T: oauth2::ErrorResponseType + fmt::Display + 'static>(
    e: RequestTokenError<AuthError, oauth2::StandardErrorResponse<T>>,
    metadata: &AuthMetadata,
    grant: &'static str,
) -> AuthError {
    let endpoint = metadata
        .authorization_server
        .token_endpoint
        .as_deref()
        .map(redact_url)
        .unwrap_or_default();
    match e {
        RequestTokenError::ServerResponse(r) => AuthError::TokenRefused {
            endpoint,
            grant,
            error: r.error().to_string(),
            description: r.error_description().cloned(),
        },
        RequestTokenError::Request(e) => e,
        RequestTokenError::Parse(e, _body) => AuthError::Http(format!(
            "the {grant} answer from {endpoint} is not a valid token response ({})",
            e.path()
        )),
        RequestTokenError::Other(m) => {
            AuthError::Http(format!("the {grant} request to {endpoint} failed: {m}"))
        }
    }
}

/// The OpenID `application_type` of a registration (SEP-837): `native` for a redirect to this
/// machine (a loopback listener, a custom scheme), `web` for an https redirect elsewhere.
fn application_type(redirect_uri: &str) -> &'static str {
    match Url::parse(redirect_uri) {
        Ok(url) if url.scheme() == "https" && !crate::http::is_loopback(&url) => "web",
        _ => "native",
    }
}

/// The SHA-256 of a secret, to recognise it later without keeping it.
fn fingerprint(secret: &Secret) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(secret.expose().as_bytes()).into()
}
