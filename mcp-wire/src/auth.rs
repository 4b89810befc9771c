//! The seam through which HTTP-based transports (Streamable HTTP, HTTP+SSE, WebSocket, gRPC)
//! get the credentials of each request (an `Authorization` value, and a DPoP proof for
//! proof-of-possession tokens) and report the server's challenges and nonces, without depending on an
//! OAuth implementation: the auth crate implements [`AuthProvider`]; configs with a static token
//! use [`StaticBearer`].

use std::fmt;

use async_trait::async_trait;

use crate::redact::redact_url;
use mcp_core::Error;

/// An `Authorization` header value. Its `Debug` and `Display` never show the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthorizationValue(String);

impl AuthorizationValue {
    /// Wraps a complete header value (e.g. `Bearer abc…`).
    pub fn new(value: impl Into<String>) -> Self {
        AuthorizationValue(value.into())
    }

    /// `Bearer <token>`.
    pub fn bearer(token: &str) -> Self {
        AuthorizationValue(format!("Bearer {token}"))
    }

    /// The value to put on the wire — the only way to read the secret.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AuthorizationValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = self.0.split_whitespace().next().unwrap_or("");
        write!(f, "AuthorizationValue({scheme} <redacted>)")
    }
}

impl fmt::Display for AuthorizationValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The header a DPoP proof travels in (RFC 9449 §4.1).
pub const DPOP_HEADER: &str = "dpop";
/// The header a server's DPoP nonce comes in (RFC 9449 §8, §9).
pub const DPOP_NONCE_HEADER: &str = "dpop-nonce";

/// The HTTP request credentials are asked for. Proof-of-possession schemes (DPoP, RFC 9449)
/// bind a proof to its method and URL; bearer tokens ignore it. `Debug` shows the URL
/// redacted ([`redact_url`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AuthTarget<'a> {
    /// The HTTP method (`POST`, `GET`).
    pub method: &'a str,
    /// The request URL (a proof leaves out its query and fragment).
    pub url: &'a str,
}

impl fmt::Debug for AuthTarget<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthTarget")
            .field("method", &self.method)
            .field("url", &redact_url(self.url))
            .finish()
    }
}

/// A DPoP proof (RFC 9449 §4): the `DPoP` header of one request, a signed JWT that is valid
/// for that request only. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct DpopProof(String);

impl DpopProof {
    /// Wraps a compact JWS.
    pub fn new(jwt: impl Into<String>) -> Self {
        DpopProof(jwt.into())
    }

    /// The value to put on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for DpopProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DpopProof(<redacted>)")
    }
}

impl fmt::Display for DpopProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What one request carries to say who sends it: an `Authorization` value and, for a
/// DPoP-bound token, the proof that goes with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// The `Authorization` header (`Bearer …` or `DPoP …`).
    pub authorization: AuthorizationValue,
    /// The `DPoP` header, bound to this request's method and URL.
    pub dpop: Option<DpopProof>,
}

impl From<AuthorizationValue> for Credentials {
    fn from(authorization: AuthorizationValue) -> Self {
        Credentials {
            authorization,
            dpop: None,
        }
    }
}

/// What the server answered when it refused a request's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// 401 (missing or invalid credentials) or 403 (e.g. `insufficient_scope`).
    pub status: u16,
    /// The `WWW-Authenticate` headers, if any, joined with `, ` (carry `resource_metadata`,
    /// `scope`, `error`; a server may send its `Bearer` and `DPoP` challenges separately).
    pub www_authenticate: Option<String>,
    /// The `DPoP-Nonce` header, if any: the nonce the server wants in the next proof
    /// (RFC 9449 §9).
    pub dpop_nonce: Option<String>,
    /// Whether the request may still be retried with new credentials. `false` once it had
    /// that retry: new credentials would not be used, so a provider should not obtain any
    /// (no refresh, no login); it may still answer
    /// [`RetryWithNonce`](ChallengeOutcome::RetryWithNonce).
    pub credentials_retry_left: bool,
    /// Whether the refused request carried the provider's credentials. `false`: it went
    /// without (the provider had none to give), so the refusal says nothing about the
    /// credentials the provider may hold by now.
    pub credentials_sent: bool,
}

/// What a provider made of a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChallengeOutcome {
    /// No new credentials: the request fails with an auth error.
    GiveUp,
    /// New credentials were obtained (refreshed, re-authorized, stepped up): send the request
    /// once more.
    Retry,
    /// The credentials stand, but the server wants a proof carrying its nonce (DPoP
    /// `use_dpop_nonce`): send the request once more with a fresh proof. Allowed once per
    /// request besides a [`Retry`](ChallengeOutcome::Retry).
    RetryWithNonce,
}

/// Supplies credentials to a transport and hears the server's challenges.
#[async_trait]
pub trait AuthProvider: Send + Sync + 'static {
    /// The credentials for the next request to `target`, or `None` to send none. Called
    /// before every request (and every retry), so a provider can refresh tokens ahead of
    /// expiry and make a fresh proof for each request.
    async fn authorization(&self, target: &AuthTarget<'_>) -> Result<Option<Credentials>, Error>;

    /// The server refused the credentials; says whether (and why) the request should be sent
    /// once more. An error fails the request with that error's message.
    async fn on_challenge(&self, challenge: &AuthChallenge) -> Result<ChallengeOutcome, Error>;

    /// An answer that was not a refusal carried a `DPoP-Nonce` (RFC 9449 §8, §9): the next
    /// proofs carry it. Ignored by default.
    fn accept_nonce(&self, _nonce: &str) {}
}

/// A fixed bearer token (from configuration or the environment). Challenges are final.
#[derive(Clone, Debug)]
pub struct StaticBearer {
    value: AuthorizationValue,
}

impl StaticBearer {
    /// Sends `Authorization: Bearer <token>`.
    pub fn new(token: &str) -> Self {
        StaticBearer {
            value: AuthorizationValue::bearer(token),
        }
    }
}

#[async_trait]
impl AuthProvider for StaticBearer {
    async fn authorization(&self, _target: &AuthTarget<'_>) -> Result<Option<Credentials>, Error> {
        Ok(Some(self.value.clone().into()))
    }

    async fn on_challenge(&self, _challenge: &AuthChallenge) -> Result<ChallengeOutcome, Error> {
        Ok(ChallengeOutcome::GiveUp)
    }
}

/// Compares two secrets without stopping at the first difference (no timing oracle on where a
/// guess goes wrong); the length is not secret.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether an `Authorization` value (`given`) presents `token` as a bearer token: the scheme
/// matched without regard to case (RFC 6750), the token in constant time ([`same_secret`]).
pub fn bearer_matches(given: &[u8], token: &[u8]) -> bool {
    const SCHEME: &[u8] = b"Bearer ";
    given.len() == SCHEME.len() + token.len()
        && given[..SCHEME.len()].eq_ignore_ascii_case(SCHEME)
        && same_secret(&given[SCHEME.len()..], token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"ab"));
        assert!(same_secret(b"", b""));
    }

    #[test]
    fn bearer_tokens_match_with_any_scheme_case_and_nothing_else() {
        assert!(bearer_matches(b"Bearer t0k", b"t0k"));
        assert!(bearer_matches(b"bearer t0k", b"t0k"));
        assert!(!bearer_matches(b"Bearer t0K", b"t0k"));
        assert!(!bearer_matches(b"Bearer t0k ", b"t0k"));
        assert!(!bearer_matches(b"Basic t0k", b"t0k"));
        assert!(!bearer_matches(b"t0k", b"t0k"));
    }

    #[test]
    fn urls_lose_user_info_query_and_fragment() {
        for (raw, shown) in [
            ("https://api.example.com/mcp", "https://api.example.com/mcp"),
            (
                "http://u:p@127.0.0.1:8080/mcp?token=abc",
                "http://<redacted>@127.0.0.1:8080/mcp",
            ),
            ("https://h/mcp#frag", "https://h/mcp"),
            ("https://u@h?k=v", "https://<redacted>@h"),
            ("not a url?secret=1", "not a url"),
            ("user:pw@host/path", "<redacted>@host/path"),
            (
                "https://user:abc/def+g==@host/mcp",
                "https://<redacted>@host/mcp",
            ),
            (
                "https://user:pa?ss#x@host/mcp",
                "https://<redacted>@host/mcp",
            ),
        ] {
            assert_eq!(redact_url(raw), shown, "{raw}");
        }
    }

    #[test]
    fn secrets_never_show_in_debug_or_display() {
        let v = AuthorizationValue::bearer("s3cr3t-token");
        assert_eq!(v.expose(), "Bearer s3cr3t-token");
        for shown in [
            format!("{v:?}"),
            format!("{v}"),
            format!("{:?}", StaticBearer::new("s3cr3t-token")),
            format!("{:?}", Credentials::from(v.clone())),
        ] {
            assert!(!shown.contains("s3cr3t"), "{shown}");
            assert!(shown.contains("Bearer"), "{shown}");
        }
        let proof = DpopProof::new("eyJ0eXAiOiJkcG9wK2p3dCJ9.s3cr3t.sig");
        let target = AuthTarget {
            method: "POST",
            url: "https://h/mcp?key=s3cr3t",
        };
        for shown in [
            format!("{proof:?}"),
            format!("{proof}"),
            format!("{target:?}"),
        ] {
            assert!(
                !shown.contains("s3cr3t") && !shown.contains("eyJ"),
                "{shown}"
            );
        }
    }

    #[tokio::test]
    async fn a_static_bearer_gives_its_token_and_never_retries() {
        let auth = StaticBearer::new("t");
        let target = AuthTarget {
            method: "POST",
            url: "https://h/mcp",
        };
        let credentials = auth.authorization(&target).await.unwrap().unwrap();
        assert_eq!(credentials.authorization.expose(), "Bearer t");
        assert_eq!(credentials.dpop, None);
        let challenge = AuthChallenge {
            status: 401,
            www_authenticate: Some("Bearer".into()),
            dpop_nonce: None,
            credentials_retry_left: true,
            credentials_sent: true,
        };
        assert_eq!(
            auth.on_challenge(&challenge).await.unwrap(),
            ChallengeOutcome::GiveUp
        );
    }
}
