//! What a client holds for one server: its tokens and the client identity it obtained (by
//! dynamic registration). This is what a [`TokenStore`](crate::store::TokenStore) keeps, one
//! entry per server and account.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// How an access token is presented (the token answer's `token_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TokenType {
    /// `Authorization: Bearer …` (RFC 6750).
    #[default]
    Bearer,
    /// Bound to the client's DPoP key: `Authorization: DPoP …` with a proof on every request
    /// (RFC 9449).
    #[serde(rename = "DPoP")]
    Dpop,
}

impl TokenType {
    /// The `Authorization` scheme.
    pub fn scheme(self) -> &'static str {
        match self {
            TokenType::Bearer => "Bearer",
            TokenType::Dpop => "DPoP",
        }
    }

    /// A `token_type` as a token endpoint sends it (case-insensitive); anything but `DPoP` is
    /// presented as a bearer token.
    pub fn parse(token_type: &str) -> TokenType {
        if token_type.eq_ignore_ascii_case("dpop") {
            TokenType::Dpop
        } else {
            TokenType::Bearer
        }
    }

    fn is_bearer(&self) -> bool {
        *self == TokenType::Bearer
    }
}

/// The tokens from a token endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The access token (sent as `Authorization: <token_type> …`).
    pub access_token: Secret,
    /// How the access token is presented: `Bearer`, or `DPoP` for a token bound to the
    /// client's DPoP key.
    #[serde(default, skip_serializing_if = "TokenType::is_bearer")]
    pub token_type: TokenType,
    /// The refresh token, if the server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch (`None`: not said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// How long the access token lived when it was issued (`expires_in`), in seconds: a process
    /// that reads the entry later knows how early to refresh it (`None`: not said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_secs: Option<u64>,
    /// The scopes granted (the token response's `scope`, else those requested).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

impl TokenSet {
    /// The time left before the access token expires (`None`: no expiry known; zero: expired).
    pub fn remaining(&self, now: SystemTime) -> Option<Duration> {
        // A server may send any number: past what `SystemTime` holds counts as "never".
        let expires = UNIX_EPOCH.checked_add(Duration::from_secs(self.expires_at?))?;
        Some(expires.duration_since(now).unwrap_or(Duration::ZERO))
    }

    /// Whether the token expires within `margin` of `now`.
    pub fn expires_within(&self, margin: Duration, now: SystemTime) -> bool {
        self.remaining(now).is_some_and(|left| left <= margin)
    }
}

/// How the client authenticates at the token endpoint (RFC 7591 `token_endpoint_auth_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenEndpointAuth {
    /// HTTP Basic with the client ID and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    ClientSecretPost,
    /// A public client: `client_id` in the body, no secret.
    None,
    /// A signed JWT assertion (RFC 7523), for machine clients with a key.
    PrivateKeyJwt,
}

impl TokenEndpointAuth {
    /// The RFC 7591 name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenEndpointAuth::ClientSecretBasic => "client_secret_basic",
            TokenEndpointAuth::ClientSecretPost => "client_secret_post",
            TokenEndpointAuth::None => "none",
            TokenEndpointAuth::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// Parses an RFC 7591 name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "client_secret_basic" => TokenEndpointAuth::ClientSecretBasic,
            "client_secret_post" => TokenEndpointAuth::ClientSecretPost,
            "none" => TokenEndpointAuth::None,
            "private_key_jwt" => TokenEndpointAuth::PrivateKeyJwt,
            _ => return None,
        })
    }
}

/// A client identity: pre-registered, a client ID metadata document URL, or one the server
/// issued by dynamic registration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientIdentity {
    /// The `client_id`.
    pub client_id: String,
    /// The secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// How to authenticate at the token endpoint.
    pub auth_method: TokenEndpointAuth,
    /// The redirect URI registered with the client (dynamic registration), if fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// The authorization server (issuer) this identity belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
}

/// How a [`ClientIdentity`] authenticates at a token endpoint, as it is put on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientAuth<'a> {
    /// `Authorization: Basic` with the client ID and this secret.
    Basic(&'a Secret),
    /// `client_id` and this `client_secret` in the form body.
    Post(&'a Secret),
    /// `client_id` in the body only (public clients, and assertions that travel separately).
    Public,
}

impl ClientIdentity {
    /// The authentication a token request carries: the secret as the method says, or none
    /// without a secret (`none`, `private_key_jwt`).
    pub(crate) fn client_auth(&self) -> ClientAuth<'_> {
        match (self.auth_method, &self.client_secret) {
            (TokenEndpointAuth::ClientSecretBasic, Some(secret)) => ClientAuth::Basic(secret),
            (TokenEndpointAuth::ClientSecretPost, Some(secret)) => ClientAuth::Post(secret),
            _ => ClientAuth::Public,
        }
    }
}

/// Everything stored for one server and account.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCredentials {
    /// The current tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
    /// A client identity from dynamic registration, reused instead of registering again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientIdentity>,
    /// The DPoP key the tokens are bound to ([`DpopKey::to_secret`](crate::dpop::DpopKey)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
    /// How many times the entry was written: each write by [`OAuthClient`](crate::OAuthClient)
    /// is one above the entry it replaces, so a store can refuse an older write over a newer
    /// one ([`TokenStore::save_if_newer`](crate::TokenStore::save_if_newer)). 0 for entries
    /// from before generations were kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: u64,
    /// Written by a logout: the login was removed on purpose (an entry without tokens and
    /// without this flag is a refused refresh token forgotten, which newer tokens may replace).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub logged_out: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Seconds since the Unix epoch (0 before it).
pub fn unix_now(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_arithmetic() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let mut t = TokenSet {
            access_token: Secret::new("a"),
            token_type: TokenType::Bearer,
            refresh_token: None,
            expires_at: Some(1_060),
            lifetime_secs: None,
            scopes: vec![],
        };
        assert_eq!(t.remaining(now), Some(Duration::from_secs(60)));
        assert!(t.expires_within(Duration::from_secs(60), now));
        assert!(!t.expires_within(Duration::from_secs(59), now));
        t.expires_at = Some(10);
        assert_eq!(t.remaining(now), Some(Duration::ZERO));
        t.expires_at = None;
        assert!(!t.expires_within(Duration::from_secs(3600), now));
    }

    #[test]
    fn token_types_parse_and_only_dpop_is_stored() {
        assert_eq!(TokenType::parse("DPoP"), TokenType::Dpop);
        assert_eq!(TokenType::parse("dpop"), TokenType::Dpop);
        assert_eq!(TokenType::parse("Bearer"), TokenType::Bearer);
        assert_eq!(TokenType::parse("N_A"), TokenType::Bearer);
        let mut tokens = TokenSet {
            access_token: Secret::new("a"),
            token_type: TokenType::Bearer,
            refresh_token: None,
            expires_at: None,
            lifetime_secs: None,
            scopes: vec![],
        };
        let bearer = serde_json::to_value(&tokens).unwrap();
        assert!(bearer.get("token_type").is_none(), "{bearer}");
        tokens.token_type = TokenType::Dpop;
        let dpop = serde_json::to_value(&tokens).unwrap();
        assert_eq!(dpop["token_type"], "DPoP");
        let back: TokenSet = serde_json::from_value(dpop).unwrap();
        assert_eq!(back, tokens);
        // Entries stored before DPoP existed read as bearer tokens.
        let old: TokenSet =
            serde_json::from_value(serde_json::json!({"access_token": "a"})).unwrap();
        assert_eq!(old.token_type, TokenType::Bearer);
    }

    #[test]
    fn debug_shows_no_secret() {
        let creds = StoredCredentials {
            tokens: Some(TokenSet {
                access_token: Secret::new("at-123"),
                token_type: TokenType::Dpop,
                refresh_token: Some(Secret::new("rt-456")),
                expires_at: None,
                lifetime_secs: None,
                scopes: vec!["read".into()],
            }),
            client: Some(ClientIdentity {
                client_id: "cid".into(),
                client_secret: Some(Secret::new("cs-789")),
                auth_method: TokenEndpointAuth::ClientSecretBasic,
                redirect_uri: None,
                issuer: None,
            }),
            dpop_key: Some(Secret::new("dk-000")),
            generation: 0,
            logged_out: false,
        };
        let shown = format!("{creds:?}");
        for secret in ["at-123", "rt-456", "cs-789", "dk-000"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
