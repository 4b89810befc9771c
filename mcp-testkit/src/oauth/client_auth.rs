//! The clients the authorization server knows, and how a request at `/token`, `/revoke` or
//! `/device_authorization` authenticates as one (RFC 6749 §2.3): HTTP Basic or
//! `client_secret` in the body for clients with a secret, a `private_key_jwt` assertion
//! (RFC 7523) for clients with a public key, `client_id` alone for public clients.

use base64::Engine;
use hyper::header::{self, HeaderMap};
use p256::ecdsa::VerifyingKey;

use super::assertion::{self, AssertionError, CLIENT_ASSERTION_TYPE};
use super::form::{decode, param};
use super::{unix_now, AuthServer, OAuthError, State, TOKEN_PATH};

/// How a client proves who it is.
pub(super) enum Credential {
    /// A public client: its `client_id` is enough.
    None,
    /// A confidential client with this secret.
    Secret(String),
    /// A confidential client that signs assertions (`private_key_jwt`) with the private half of
    /// this key (or the reason the registered key is unusable).
    PublicKey(Result<VerifyingKey, String>),
}

/// A client the server knows.
pub(super) struct Client {
    pub(super) credential: Credential,
    /// `None`: any redirect URI (pre-registered clients).
    pub(super) redirect_uris: Option<Vec<String>>,
}

impl Client {
    /// Whether the client authenticates (and may use `client_credentials`).
    pub(super) fn is_confidential(&self) -> bool {
        !matches!(self.credential, Credential::None)
    }
}

impl AuthServer {
    /// The client a request to `endpoint` (a path) authenticates as. An accepted client
    /// assertion is spent, whatever happens to the request afterwards.
    pub(super) fn authenticate(
        &self,
        state: &mut State,
        headers: &HeaderMap,
        form: &[(String, String)],
        endpoint: &str,
    ) -> Result<String, OAuthError> {
        let body_id = param(form, "client_id")?;
        let body_secret = param(form, "client_secret")?;
        let assertion_type = param(form, "client_assertion_type")?;
        let assertion = param(form, "client_assertion")?;
        let basic = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
            .map(|(_, credentials)| {
                decode_basic(credentials.trim())
                    .ok_or_else(|| OAuthError::invalid_client("malformed Basic credentials"))
            })
            .transpose()?;
        let more_than_one = || {
            OAuthError::bad(
                "invalid_request",
                "more than one client authentication method",
            )
        };
        if assertion_type.is_some() || assertion.is_some() {
            if basic.is_some() || body_secret.is_some() {
                return Err(more_than_one());
            }
            return self.authenticate_assertion(
                state,
                body_id,
                assertion_type,
                assertion,
                endpoint,
            );
        }
        let (client_id, secret) = match (basic, body_secret) {
            (Some(_), Some(_)) => return Err(more_than_one()),
            (Some((id, secret)), None) => {
                if body_id.is_some_and(|b| b != id) {
                    return Err(OAuthError::bad(
                        "invalid_request",
                        "client_id differs from the Basic credentials",
                    ));
                }
                (id, Some(secret))
            }
            (None, secret) => {
                let id = body_id
                    .ok_or_else(|| OAuthError::invalid_client("no client authentication"))?;
                (id.to_owned(), secret.map(str::to_owned))
            }
        };
        let Some(client) = state.clients.get(&client_id) else {
            return Err(OAuthError::invalid_client("unknown client"));
        };
        match (&client.credential, secret) {
            (Credential::None, None) => Ok(client_id),
            (Credential::Secret(expected), Some(given)) if *expected == given => Ok(client_id),
            (Credential::Secret(_), None) => Err(OAuthError::invalid_client(
                "this confidential client must authenticate",
            )),
            (Credential::None, Some(_)) => {
                Err(OAuthError::invalid_client("this client has no secret"))
            }
            (Credential::Secret(_), Some(_)) => {
                Err(OAuthError::invalid_client("wrong client secret"))
            }
            (Credential::PublicKey(_), _) => Err(OAuthError::invalid_client(
                "this client authenticates with private_key_jwt (a client_assertion)",
            )),
        }
    }

    /// `private_key_jwt`: the client the assertion is for (`client_id`, else its `sub`),
    /// checked with that client's key. Refusals are 400 `invalid_client`.
    fn authenticate_assertion(
        &self,
        state: &mut State,
        body_id: Option<&str>,
        assertion_type: Option<&str>,
        assertion: Option<&str>,
        endpoint: &str,
    ) -> Result<String, OAuthError> {
        let refused = |why: String| OAuthError::bad("invalid_client", why);
        if assertion_type != Some(CLIENT_ASSERTION_TYPE) {
            return Err(refused(format!(
                "client_assertion_type must be {CLIENT_ASSERTION_TYPE}"
            )));
        }
        let assertion = assertion
            .ok_or_else(|| OAuthError::bad("invalid_request", "client_assertion is missing"))?;
        let client_id = match body_id {
            Some(id) => id.to_owned(),
            None => assertion::subject(assertion)
                .ok_or_else(|| refused("the client assertion names no client (sub)".into()))?,
        };
        let key = match state.clients.get(&client_id).map(|c| &c.credential) {
            None => return Err(refused(format!("unknown client {client_id}"))),
            Some(Credential::PublicKey(Ok(key))) => *key,
            Some(Credential::PublicKey(Err(why))) => {
                return Err(refused(format!(
                    "the public key registered for {client_id} is unusable: {why}"
                )))
            }
            Some(_) => {
                return Err(refused(format!(
                    "{client_id} has no public key registered (private_key_jwt)"
                )))
            }
        };
        let audiences = [
            self.issuer(),
            format!("{}{TOKEN_PATH}", self.origin),
            format!("{}{endpoint}", self.origin),
        ];
        let outcome = state
            .assertions
            .check(assertion, &client_id, &key, &audiences, unix_now());
        match outcome {
            Ok(()) => {
                state.stats.client_assertions_accepted += 1;
                Ok(client_id)
            }
            Err(AssertionError::Reused) => {
                state.stats.reused_client_assertions += 1;
                Err(refused(
                    "the client assertion was used before (its jti is spent): make a new one \
                     for every request"
                        .into(),
                ))
            }
            Err(AssertionError::Invalid(why)) => {
                Err(refused(format!("invalid client assertion: {why}")))
            }
        }
    }
}

/// `base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
fn decode_basic(credentials: &str) -> Option<(String, String)> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(credentials)
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (id, secret) = text.split_once(':')?;
    Some((decode(id), decode(secret)))
}
