//! [`OAuthConfig`]: how a client authorizes with one server.

use std::time::Duration;

use url::Url;

use crate::address_policy::AddressPolicy;
use crate::credentials::TokenEndpointAuth;
use crate::jwt::Es256Key;
use crate::secret::Secret;
use crate::store::StoreKey;

/// Tokens are refreshed this long before they expire, unless configured otherwise.
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// How a client authorizes with one MCP server.
#[derive(Clone, Debug)]
pub struct OAuthConfig {
    /// The MCP server's URL (the protected resource).
    pub server_url: Url,
    /// Where the tokens are kept.
    pub store_key: StoreKey,
    /// A pre-registered client (preferred over everything else).
    pub client_id: Option<String>,
    /// The pre-registered client's secret.
    pub client_secret: Option<Secret>,
    /// How the pre-registered client authenticates at the token endpoint (default: Basic with
    /// a secret, `none` without).
    pub auth_method: Option<TokenEndpointAuth>,
    /// An https URL serving this client's metadata document, used as its `client_id` where
    /// the authorization server supports client ID metadata documents.
    pub client_metadata_url: Option<String>,
    /// The name shown to users on consent pages and sent in dynamic registration.
    pub client_name: String,
    /// The scopes to request; empty: chosen from the server's challenge or metadata.
    pub scopes: Vec<String>,
    /// How long before expiry tokens are refreshed.
    pub refresh_margin: Duration,
    /// How tokens are obtained.
    pub grant: Grant,
    /// What to tell a user when a login is needed (e.g. "run `mcph auth login github`").
    pub login_hint: Option<String>,
    /// When tokens are bound to a DPoP key (RFC 9449).
    pub dpop: DpopMode,
    /// Origins besides the MCP server's own where its 401's `resource_metadata` may point
    /// (RFC 9728 §5.1). Empty by default: a challenge naming another origin is refused, since
    /// the client would otherwise fetch whatever URL a server hands out.
    pub resource_metadata_origins: Vec<Url>,
    /// Which addresses the OAuth requests to origins the configuration does not name may go
    /// to; `None` (the default): decided from the MCP server's own addresses
    /// ([`AddressPolicy::for_server`]). `Some(AlsoLocalNetwork)` lets a public MCP server's
    /// authorization server be on the local network.
    pub address_policy: Option<AddressPolicy>,
}

impl OAuthConfig {
    /// A config for the authorization code flow with dynamic registration.
    pub fn new(server_url: Url, store_key: StoreKey) -> OAuthConfig {
        OAuthConfig {
            server_url,
            store_key,
            client_id: None,
            client_secret: None,
            auth_method: None,
            client_metadata_url: None,
            client_name: "mcph".into(),
            scopes: Vec::new(),
            refresh_margin: DEFAULT_REFRESH_MARGIN,
            grant: Grant::AuthorizationCode,
            login_hint: None,
            dpop: DpopMode::Auto,
            resource_metadata_origins: Vec::new(),
            address_policy: None,
        }
    }
}

/// When access tokens are bound to the client's DPoP key (RFC 9449), so that a leaked token is
/// useless without the key. DPoP needs an authorization server that lists `ES256` in
/// `dpop_signing_alg_values_supported`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpopMode {
    /// When the MCP server takes DPoP-bound tokens — its challenge offers the `DPoP` scheme, or
    /// its resource metadata lists DPoP algorithms or requires bound tokens — and the
    /// authorization server can bind them. Otherwise bearer tokens.
    #[default]
    Auto,
    /// Whenever the authorization server can bind tokens (and the MCP server, if it names
    /// DPoP algorithms, takes ours).
    Always,
    /// Never bind new tokens: bearer tokens only. A server that takes only DPoP-bound tokens
    /// is refused with an error that says so. Tokens bound earlier (stored with their key)
    /// keep being used, with proofs, until they are replaced.
    Never,
}

/// How tokens are obtained.
#[derive(Clone, Debug)]
pub enum Grant {
    /// A user authorizes in a browser (authorization code with PKCE).
    AuthorizationCode,
    /// A machine client: `client_credentials` with the configured client's secret, or with a
    /// signed assertion when `key` is set (`private_key_jwt`).
    ClientCredentials {
        /// The ES256 key for `private_key_jwt`.
        key: Option<Es256Key>,
    },
    /// Enterprise cross-app access: an ID token from the organisation's identity provider is
    /// exchanged there for an identity assertion grant (ID-JAG, RFC 8693), which the MCP
    /// server's authorization server takes in a JWT-bearer grant (RFC 7523).
    CrossAppAccess(CrossAppAccess),
    /// Workload identity federation: a JWT the workload already holds (issued by its platform's
    /// identity provider, e.g. a Kubernetes service-account or cloud workload token) is
    /// presented in a JWT-bearer grant (RFC 7523) without client authentication. A refused
    /// assertion is reported, never retried with another grant.
    JwtBearer {
        /// The assertion.
        assertion: Secret,
    },
}

/// The identity provider side of cross-app access.
#[derive(Clone, Debug)]
pub struct CrossAppAccess {
    /// The identity provider's token endpoint.
    pub idp_token_endpoint: Url,
    /// The user's ID token from that identity provider.
    pub id_token: Secret,
    /// This client at the identity provider.
    pub idp_client_id: String,
    /// Its secret there, if it has one.
    pub idp_client_secret: Option<Secret>,
}
