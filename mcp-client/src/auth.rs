//! OAuth for the configured servers (feature `oauth`, in the `professional` profile).
//!
//! A remote server uses OAuth unless its config sends its own `Authorization` header or says
//! `oauth: false`: requests carry the stored token for it (refreshed ahead of expiry by
//! `mcp-auth`), and a server that asks for authorization while no token is stored becomes
//! `needs-auth` with the login hint (`OAuthPolicy::login_hint`) — it never blocks the other servers. A
//! stdio server with `oauth: { resource, token_env }` gets the token of that protected
//! resource in the environment variable `token_env`.
//!
//! [`oauth_config`] is the one place a server's OAuth settings become an
//! [`mcp_auth::OAuthConfig`], so `mcph auth login|status|logout` and the facade agree on the
//! store entry of every server.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_auth::address_policy::AddressPolicy;
use mcp_auth::{
    default_store, Authorizer, DpopMode, OAuthClient, OAuthConfig, OAuthProvider, Secret, StoreKey,
    TokenStore,
};

use crate::config::{AddressPolicySetting, DpopSetting, ServerConfig, TransportConfig};

/// The credential store service name tokens are kept under (shared with `mcph`).
pub const STORE_SERVICE: &str = "mcp-client";
/// The store account of every entry (one user per machine account).
pub const STORE_ACCOUNT: &str = "default";

/// How the client authorizes with servers that use OAuth.
#[derive(Clone)]
pub struct OAuthPolicy {
    store: Arc<OnceLock<StoreChoice>>,
    /// Whether the harness chose the store ([`OAuthPolicy::with_store`]).
    store_chosen: bool,
    login_hint: Arc<dyn Fn(&str) -> String + Send + Sync>,
    authorizer: Option<Arc<dyn Authorizer>>,
    refresh_margin: Duration,
}

/// The store in use, and why it is not the OS credential store when it is not.
#[derive(Clone)]
struct StoreChoice {
    store: Arc<dyn TokenStore>,
    fallback_reason: Option<String>,
}

impl std::fmt::Debug for OAuthPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthPolicy")
            .field("interactive", &self.authorizer.is_some())
            .field("refresh_margin", &self.refresh_margin)
            .finish_non_exhaustive()
    }
}

impl Default for OAuthPolicy {
    /// The OS credential store (opened when a server first needs it; memory when none is
    /// reachable), no interactive login, `mcph auth login` as the hint.
    fn default() -> Self {
        OAuthPolicy {
            store: Arc::new(OnceLock::new()),
            store_chosen: false,
            login_hint: Arc::new(|server| format!("run `mcph auth login {server}`")),
            authorizer: None,
            refresh_margin: mcp_auth::config::DEFAULT_REFRESH_MARGIN,
        }
    }
}

impl OAuthPolicy {
    /// Keeps tokens in `store` instead of the OS credential store.
    pub fn with_store(self, store: Arc<dyn TokenStore>) -> Self {
        let cell = OnceLock::new();
        let _ = cell.set(StoreChoice {
            store,
            fallback_reason: None,
        });
        OAuthPolicy {
            store: Arc::new(cell),
            store_chosen: true,
            ..self
        }
    }

    /// Keeps tokens in `store` unless the harness chose a store ([`with_store`](Self::with_store)):
    /// how a fleet's store becomes the default without overriding the harness's own choice.
    pub fn with_store_unless_set(self, store: Arc<dyn TokenStore>) -> Self {
        if self.store_chosen {
            self
        } else {
            self.with_store(store)
        }
    }

    /// What a `needs-auth` server tells the user to do, given the server's name.
    pub fn with_login_hint(self, hint: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        OAuthPolicy {
            login_hint: Arc::new(hint),
            ..self
        }
    }

    /// Logs in on demand with `authorizer` (e.g. [`mcp_auth::LoopbackLogin`]) instead of
    /// reporting `needs-auth`.
    pub fn with_authorizer(self, authorizer: Arc<dyn Authorizer>) -> Self {
        OAuthPolicy {
            authorizer: Some(authorizer),
            ..self
        }
    }

    /// Refreshes tokens this long before they expire (default 60 s).
    pub fn with_refresh_margin(self, margin: Duration) -> Self {
        OAuthPolicy {
            refresh_margin: margin,
            ..self
        }
    }

    /// The token store (opened on first use).
    pub fn store(&self) -> Arc<dyn TokenStore> {
        self.choice().store.clone()
    }

    /// Why tokens live in memory only, when the OS credential store is not reachable.
    pub fn store_fallback_reason(&self) -> Option<String> {
        self.choice().fallback_reason.clone()
    }

    fn choice(&self) -> &StoreChoice {
        self.store.get_or_init(|| {
            let chosen = default_store(STORE_SERVICE);
            if let Some(reason) = &chosen.fallback_reason {
                tracing::info!("no OS credential store ({reason}); OAuth tokens live in memory for this process");
            }
            StoreChoice {
                store: chosen.store,
                fallback_reason: chosen.fallback_reason,
            }
        })
    }

    /// The OAuth client for `server`, when it uses OAuth.
    pub fn client_for(&self, server: &ServerConfig) -> Result<Option<OAuthClient>, String> {
        let Some(mut config) = oauth_config(server)? else {
            return Ok(None);
        };
        config.login_hint = Some((self.login_hint)(&server.name));
        config.refresh_margin = self.refresh_margin;
        OAuthClient::new(config, self.store())
            .map(Some)
            .map_err(|e| format!("server \"{}\": {e}", server.name))
    }

    /// The provider the server's transport uses, when it uses OAuth. A server OAuth cannot
    /// serve (a plain-http remote URL) gets none: it may need no authorization at all.
    pub fn provider_for(&self, server: &ServerConfig) -> Option<Arc<OAuthProvider>> {
        let stdio = matches!(server.transport, TransportConfig::Stdio { .. });
        match self.client_for(server) {
            // A stdio server's token is read when its child starts: refreshing it in the
            // background would only rotate refresh tokens (or a bound token it refuses).
            Ok(Some(client)) if stdio => Some(Arc::new(OAuthProvider::on_demand(
                Arc::new(client),
                self.authorizer.clone(),
            ))),
            Ok(Some(client)) => Some(Arc::new(OAuthProvider::new(
                Arc::new(client),
                self.authorizer.clone(),
            ))),
            Ok(None) => None,
            Err(e) => {
                tracing::debug!("no OAuth for this server: {e}");
                None
            }
        }
    }
}

/// The OAuth settings of `server` as an [`OAuthConfig`], or `None` when it does not use OAuth
/// (stdio without `oauth.resource`; a remote server with its own `Authorization` header or
/// `oauth: false`).
pub fn oauth_config(server: &ServerConfig) -> Result<Option<OAuthConfig>, String> {
    let settings = &server.oauth;
    let url = match &server.transport {
        TransportConfig::Stdio { .. } => match &settings.resource {
            Some(resource) => resource,
            None => return Ok(None),
        },
        TransportConfig::InProcess => return Ok(None),
        TransportConfig::Http { url, headers }
        | TransportConfig::Sse { url, headers }
        | TransportConfig::Url { url, headers }
        | TransportConfig::Remote { url, headers, .. } => {
            let own_header = headers
                .keys()
                .any(|k| k.eq_ignore_ascii_case("authorization"));
            // OAuth metadata discovery is defined for http(s) resources (a gRPC server's URL
            // is one; a WebSocket's `ws://` is not).
            let http = url.starts_with("https://") || url.starts_with("http://");
            if settings.disabled || own_header || !http {
                return Ok(None);
            }
            url
        }
    };
    let server_url = url::Url::parse(url).map_err(|e| {
        format!(
            "server \"{}\": {} is not a URL: {e}",
            server.name,
            mcp_wire::redact::redact_url(url)
        )
    })?;
    let mut config = OAuthConfig::new(server_url, store_key(url));
    config.client_id = settings.client_id.clone();
    config.client_secret = settings.client_secret.clone().map(Secret::new);
    config.client_metadata_url = settings.client_metadata_url.clone();
    config.scopes = settings.scopes.clone();
    config.dpop = match (&server.transport, settings.dpop) {
        // The token is handed to a child process, which holds no key to prove it with.
        (TransportConfig::Stdio { .. }, _) => DpopMode::Never,
        (_, DpopSetting::Auto) => DpopMode::Auto,
        (_, DpopSetting::Always) => DpopMode::Always,
        (_, DpopSetting::Never) => DpopMode::Never,
    };
    config.resource_metadata_origins = settings
        .resource_metadata_origins
        .iter()
        .map(|origin| {
            url::Url::parse(origin).map_err(|e| {
                format!(
                    "server \"{}\": oauth.resource_metadata_origins: {} is not a URL: {e}",
                    server.name,
                    mcp_wire::redact::redact_url(origin)
                )
            })
        })
        .collect::<Result<_, _>>()?;
    config.address_policy = match settings.address_policy {
        AddressPolicySetting::Auto => None,
        AddressPolicySetting::Public => Some(AddressPolicy::PublicOnly),
        AddressPolicySetting::LocalNetwork => Some(AddressPolicy::AlsoLocalNetwork),
        AddressPolicySetting::LinkLocal => Some(AddressPolicy::AlsoLinkLocal),
    };
    Ok(Some(config))
}

/// The store entry of the protected resource at `url`: one per resource and account, so two
/// configured names for one server share its tokens and two servers never do.
pub fn store_key(url: &str) -> StoreKey {
    let canonical = url::Url::parse(url)
        .map(|u| mcp_auth::metadata::canonical_resource(&u))
        .unwrap_or_else(|_| url.to_owned());
    StoreKey::new(canonical, STORE_ACCOUNT)
}
