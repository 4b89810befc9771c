//! [`OAuthStats`], what the OAuth mode has seen; [`OAuthOptions`], how it behaves, is
//! mcp-fixture's (parsed with the other flags).

use serde::Serialize;

pub use mcp_fixture::options::OAuthOptions;

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
