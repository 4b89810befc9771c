//! [`OAuthOptions`], how the OAuth mode behaves, and [`OAuthStats`], what it has seen.

use std::fmt;

use serde::Serialize;

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
    /// the module documentation.
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
    pub(crate) fn dpop_enabled(&self) -> bool {
        self.dpop
            || self.dpop_nonce
            || self.dpop_optional
            || self.dpop_split_challenges
            || self.dpop_refuse_proofs
    }

    /// Whether the protected resource takes only DPoP-bound tokens (DPoP on, not
    /// [`dpop_optional`](Self::dpop_optional)).
    pub(crate) fn resource_requires_dpop(&self) -> bool {
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

/// What the OAuth mode has seen so far (live counters; `GET /control/oauth/stats` serves the
/// same as JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OAuthStats {
    /// `/token` requests with `grant_type=authorization_code` (refused ones included).
    pub authorization_code: u64,
    /// `/token` requests with `grant_type=refresh_token` (refused ones included).
    pub refresh_token: u64,
    /// `/token` requests with `grant_type=client_credentials` (refused ones included).
    pub client_credentials: u64,
    /// `/token` requests with the device code grant (pending and refused ones included).
    pub device_code: u64,
    /// Device authorizations approved at the verification page.
    pub device_approvals: u64,
    /// `/token` requests that were refused (any grant type, unknown ones too).
    pub token_errors: u64,
    /// `refresh_token` grants refused with `invalid_grant` (an unknown, revoked or already
    /// rotated refresh token: what several processes refreshing with one token get).
    pub refresh_refused: u64,
    /// `refresh_token` grants answered with new tokens.
    pub refreshes_granted: u64,
    /// Successful dynamic registrations.
    pub registrations: u64,
    /// Successful authorizations (redirects with a code).
    pub authorizations: u64,
    /// The `scope` parameter of each successful authorization, in order (`""` when absent).
    pub authorization_scopes: Vec<String>,
    /// Authenticated `/revoke` requests.
    pub revocations: u64,
    /// Requests to `/mcp`, `/sse` and `/message` let through.
    pub mcp_requests_accepted: u64,
    /// Requests to `/mcp`, `/sse` and `/message` answered 401 or 403.
    pub mcp_requests_rejected: u64,
    /// Of the rejected requests, those whose token had been issued but had expired.
    pub expired_tokens_presented: u64,
    /// The `resource` parameter of each `/authorize` and `/token` request, in order (`""` when
    /// the request carried none).
    pub resources_seen: Vec<String>,
    /// DPoP proofs accepted, at `/token` and at the gate.
    pub dpop_proofs_accepted: u64,
    /// DPoP proofs refused as invalid (malformed, badly signed, made for another request or
    /// token, out of time, replayed; every proof under
    /// [`dpop_refuse_proofs`](OAuthOptions::dpop_refuse_proofs)). Not counted: proofs that
    /// lacked only the current nonce ([`dpop_nonce_challenges`](Self::dpop_nonce_challenges)),
    /// missing proofs and proofs by another key than a token's (refused requests all the
    /// same).
    pub dpop_proofs_rejected: u64,
    /// `use_dpop_nonce` answers, at `/token` and at the gate.
    pub dpop_nonce_challenges: u64,
    /// Access tokens issued bound to a DPoP key (`token_type: "DPoP"`).
    pub dpop_bound_tokens_issued: u64,
    /// Of the rejected proofs, those whose `jti` had been seen before.
    pub replayed_dpop_proofs: u64,
    /// `private_key_jwt` client assertions accepted (each one's `jti` is then used up).
    pub client_assertions_accepted: u64,
    /// Client assertions refused because their `jti` had been used before (a client that sent
    /// the same assertion twice, e.g. on a `use_dpop_nonce` retry).
    pub reused_client_assertions: u64,
}

impl OAuthStats {
    /// All `/token` requests of the four grant types.
    pub fn token_requests(&self) -> u64 {
        self.authorization_code + self.refresh_token + self.client_credentials + self.device_code
    }
}
