//! [`OAuthOptions`], how the OAuth mode of mcp-testkit's HTTP fixture behaves (`--oauth*`):
//! plain data, parsed here with the other flags; the fixture's stdio server never reads it.

use std::fmt;

/// How the OAuth mode behaves. [`Default`] is a well-behaved server: one-hour tokens, rotated
/// refresh tokens, PKCE S256, dynamic registration and revocation, no required scopes.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthOptions {
    /// Lifetime of access tokens, in seconds (`expires_in`; default 3600; `--oauth-token-ttl`).
    pub token_ttl_secs: u64,
    /// Whether the authorization code grant issues a refresh token (default true).
    pub issue_refresh_tokens: bool,
    /// Whether each refresh answers with a new refresh token and invalidates the old one
    /// (default true). Without rotation a refresh answer carries no `refresh_token` at all and
    /// the old refresh token stays valid.
    pub rotate_refresh_tokens: bool,
    /// `code_challenge_methods_supported`, and the methods `/authorize` accepts (default
    /// `["S256"]`).
    pub pkce_methods: Vec<String>,
    /// `scopes_supported` in both metadata documents (default none).
    pub scopes_supported: Option<Vec<String>>,
    /// Scopes every `/mcp` request's token must have (403 `insufficient_scope` otherwise;
    /// `--oauth-required-scope`, repeatable). Default none.
    pub required_scopes: Vec<String>,
    /// The scopes the server grants at most: a request for more gets a token with only the
    /// grantable subset (`None`, the default: whatever is asked for).
    pub grantable_scopes: Option<Vec<String>>,
    /// An issuer for the authorization server metadata other than the real one (to test
    /// issuer checks).
    pub issuer_override: Option<String>,
    /// A `resource` for the protected resource metadata other than `ORIGIN/mcp` (to test
    /// resource checks).
    pub resource_override: Option<String>,
    /// Serve and advertise dynamic client registration at `/register` (default true).
    pub registration: bool,
    /// Serve and advertise RFC 7009 revocation at `/revoke` (default true).
    pub revocation: bool,
    /// `/token` waits this many milliseconds before answering (default 0), so that concurrent
    /// refreshes overlap.
    pub token_delay_ms: u64,
    /// Advertise `authorization_response_iss_parameter_supported` and add `iss` to the
    /// authorization redirect (RFC 9207; default false).
    pub iss_parameter: bool,
    /// The authorization redirect carries this `state` instead of the client's (to test state
    /// checks).
    pub state_override: Option<String>,
    /// Clients known without registration: `(client_id, client_secret)`; a secret makes the
    /// client confidential (it must authenticate at `/token`). They accept any redirect URI.
    pub preregistered: Vec<(String, Option<String>)>,
    /// Clients known without registration that authenticate with `private_key_jwt`
    /// (RFC 7523 §2.2): `(client_id, public key)`, the key an ES256 (P-256) public key as an
    /// SPKI PEM (`-----BEGIN PUBLIC KEY-----`) or a JWK (`{"kty":"EC","crv":"P-256",…}`).
    /// They are confidential (`client_credentials` is open to them); each assertion is good
    /// for one request. With any, the authorization server metadata lists `private_key_jwt`.
    pub preregistered_jwt: Vec<(String, String)>,
    /// Serve and advertise the device authorization grant (RFC 8628; default false):
    /// `/device_authorization`, a verification page that approves at once, and the
    /// device code grant at `/token` (`authorization_pending` until approved).
    pub device_authorization: bool,
    /// DPoP (RFC 9449; default false; `--oauth-dpop`): tokens requested with a proof are bound
    /// to its key, and `/mcp` takes only bound tokens, each request with a fresh proof. See
    /// the "DPoP" section of mcp-testkit's `oauth` module.
    pub dpop: bool,
    /// DPoP with server nonces (default false; `--oauth-dpop-nonce`; implies [`dpop`]): every
    /// proof must carry the server's current nonce, which `/control/oauth/rotate-dpop-nonce`
    /// changes.
    ///
    /// [`dpop`]: OAuthOptions::dpop
    pub dpop_nonce: bool,
    /// DPoP at the authorization server only (default false; `--oauth-dpop-optional`; implies
    /// [`dpop`] at the token endpoint): it binds tokens requested with a proof, but the
    /// protected resource neither lists nor requires DPoP, challenges with `Bearer` only, and
    /// takes bearer tokens as well as bound ones (a bound one still with a valid proof).
    ///
    /// [`dpop`]: OAuthOptions::dpop
    pub dpop_optional: bool,
    /// Fault (default false; `--oauth-dpop-split-challenges`; implies [`dpop`]): a refusal at
    /// the gate carries two `WWW-Authenticate` headers, a `Bearer` challenge first and the
    /// `DPoP` challenge (with its `error`, `use_dpop_nonce` included) second, as servers that
    /// take both schemes send them.
    ///
    /// [`dpop`]: OAuthOptions::dpop
    pub dpop_split_challenges: bool,
    /// Fault (default false; `--oauth-dpop-refuse-proofs`; implies [`dpop`]): the gate refuses
    /// every DPoP proof with `DPoP error="invalid_dpop_proof"` (the token endpoint still takes
    /// them), like a server whose clock is far off or that sees another URL than the client.
    ///
    /// [`dpop`]: OAuthOptions::dpop
    pub dpop_refuse_proofs: bool,
}

impl OAuthOptions {
    /// Whether the token endpoint takes DPoP proofs and binds tokens (any of the `dpop*`
    /// options).
    pub fn dpop_enabled(&self) -> bool {
        self.dpop
            || self.dpop_nonce
            || self.dpop_optional
            || self.dpop_split_challenges
            || self.dpop_refuse_proofs
    }

    /// Whether the protected resource takes only DPoP-bound tokens (DPoP on, not
    /// [`dpop_optional`](Self::dpop_optional)).
    pub fn resource_requires_dpop(&self) -> bool {
        self.dpop_enabled() && !self.dpop_optional
    }
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            token_ttl_secs: 3600,
            issue_refresh_tokens: true,
            rotate_refresh_tokens: true,
            pkce_methods: vec!["S256".to_owned()],
            scopes_supported: None,
            required_scopes: Vec::new(),
            grantable_scopes: None,
            issuer_override: None,
            resource_override: None,
            registration: true,
            revocation: true,
            token_delay_ms: 0,
            iss_parameter: false,
            state_override: None,
            preregistered: Vec::new(),
            preregistered_jwt: Vec::new(),
            device_authorization: false,
            dpop: false,
            dpop_nonce: false,
            dpop_optional: false,
            dpop_split_challenges: false,
            dpop_refuse_proofs: false,
        }
    }
}

/// Shows everything but the pre-registered clients' secrets (and their public keys, which
/// are long and say nothing).
impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let preregistered: Vec<(&str, &str)> = self
            .preregistered
            .iter()
            .map(|(id, secret)| {
                (
                    id.as_str(),
                    if secret.is_some() {
                        "<secret>"
                    } else {
                        "<public>"
                    },
                )
            })
            .collect();
        let preregistered_jwt: Vec<(&str, &str)> = self
            .preregistered_jwt
            .iter()
            .map(|(id, _)| (id.as_str(), "<public key>"))
            .collect();
        f.debug_struct("OAuthOptions")
            .field("token_ttl_secs", &self.token_ttl_secs)
            .field("issue_refresh_tokens", &self.issue_refresh_tokens)
            .field("rotate_refresh_tokens", &self.rotate_refresh_tokens)
            .field("pkce_methods", &self.pkce_methods)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .field("grantable_scopes", &self.grantable_scopes)
            .field("issuer_override", &self.issuer_override)
            .field("resource_override", &self.resource_override)
            .field("registration", &self.registration)
            .field("revocation", &self.revocation)
            .field("token_delay_ms", &self.token_delay_ms)
            .field("iss_parameter", &self.iss_parameter)
            .field("state_override", &self.state_override)
            .field("preregistered", &preregistered)
            .field("preregistered_jwt", &preregistered_jwt)
            .field("device_authorization", &self.device_authorization)
            .field("dpop", &self.dpop)
            .field("dpop_nonce", &self.dpop_nonce)
            .field("dpop_optional", &self.dpop_optional)
            .field("dpop_split_challenges", &self.dpop_split_challenges)
            .field("dpop_refuse_proofs", &self.dpop_refuse_proofs)
            .finish()
    }
}
