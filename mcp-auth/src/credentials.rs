//! What a client holds for one server: its tokens and the client identity it obtained (by
//! dynamic registration). This is what a [`TokenStore`](crate::store::TokenStore) keeps, one
//! entry per server and account.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// The tokens from a token endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The access token (sent as `Authorization: Bearer …`).
    pub access_token: Secret,
    /// The refresh token, if the server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch (`None`: not said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
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
            refresh_token: None,
            expires_at: Some(1_060),
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
    fn debug_shows_no_secret() {
        let creds = StoredCredentials {
            tokens: Some(TokenSet {
                access_token: Secret::new("at-123"),
                refresh_token: Some(Secret::new("rt-456")),
                expires_at: None,
                scopes: vec!["read".into()],
            }),
            client: Some(ClientIdentity {
                client_id: "cid".into(),
                client_secret: Some(Secret::new("cs-789")),
                auth_method: TokenEndpointAuth::ClientSecretBasic,
                redirect_uri: None,
                issuer: None,
            }),
        };
        let shown = format!("{creds:?}");
        for secret in ["at-123", "rt-456", "cs-789"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
