//! Dynamic client registration (`POST /register`, RFC 7591): public clients, or confidential
//! ones with a secret the server makes up.

use serde_json::{json, Value};

use super::client_auth::{Client, Credential};
use super::{unix_now, AuthServer, OAuthError, DEVICE_CODE_GRANT};
use crate::http::{lock, random_hex};

impl AuthServer {
    /// Dynamic client registration: the JSON answer, or the RFC 7591 error.
    pub(super) fn register(&self, body: &str) -> Result<Value, OAuthError> {
        let request: Value = serde_json::from_str(body)
            .map_err(|e| OAuthError::bad("invalid_client_metadata", format!("not JSON: {e}")))?;
        if !request.is_object() {
            return Err(OAuthError::bad(
                "invalid_client_metadata",
                "the registration request is not a JSON object",
            ));
        }
        let uris: Vec<String> = request
            .get("redirect_uris")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .unwrap_or(None)
            .unwrap_or_default();
        // A device-only client (RFC 8628) has no redirect URI.
        let device_only = request
            .get("grant_types")
            .and_then(Value::as_array)
            .is_some_and(|g| {
                g.iter().any(|g| g == DEVICE_CODE_GRANT)
                    && !g.iter().any(|g| g == "authorization_code")
            });
        if uris.is_empty() && !device_only {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                "redirect_uris must be a non-empty array of strings",
            ));
        }
        if let Some(bad) = uris.iter().find(|u| !is_redirect_uri(u)) {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                format!("{bad:?} is not an absolute URI without fragment"),
            ));
        }
        let method = match request.get("token_endpoint_auth_method") {
            None => "client_secret_basic",
            Some(Value::String(m))
                if matches!(
                    m.as_str(),
                    "none" | "client_secret_post" | "client_secret_basic"
                ) =>
            {
                m.as_str()
            }
            Some(other) => {
                return Err(OAuthError::bad(
                    "invalid_client_metadata",
                    format!("unsupported token_endpoint_auth_method {other}"),
                ))
            }
        };
        let client_id = format!("client-{}", random_hex());
        let secret = (method != "none").then(|| format!("secret-{}", random_hex()));
        let mut answer = json!({
            "client_id": client_id,
            "client_id_issued_at": unix_now(),
            "redirect_uris": uris,
            "token_endpoint_auth_method": method,
            "grant_types": request.get("grant_types").cloned().unwrap_or(json!(["authorization_code"])),
            "response_types": ["code"],
        });
        if let Some(name) = request.get("client_name").and_then(Value::as_str) {
            answer["client_name"] = json!(name);
        }
        if let Some(scope) = request.get("scope").and_then(Value::as_str) {
            answer["scope"] = json!(scope);
        }
        if let Some(secret) = &secret {
            answer["client_secret"] = json!(secret);
            answer["client_secret_expires_at"] = json!(0);
        }
        let mut state = lock(&self.state);
        state.clients.insert(
            client_id,
            Client {
                credential: match secret {
                    Some(secret) => Credential::Secret(secret),
                    None => Credential::None,
                },
                redirect_uris: Some(uris),
            },
        );
        state.stats.registrations += 1;
        Ok(answer)
    }
}

/// An absolute URI (`scheme:…`) without a fragment.
pub(super) fn is_redirect_uri(uri: &str) -> bool {
    let scheme_ok = uri.split_once(':').is_some_and(|(scheme, rest)| {
        !rest.is_empty()
            && scheme
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    scheme_ok && !uri.contains('#')
}
