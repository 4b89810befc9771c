//! The client identity: pre-registered, a stored registration, a client ID metadata document
//! or dynamic registration (RFC 7591), and the token endpoint authentication each uses.

use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;
use serde_json::{json, Value};
use tracing::info;
use url::Url;

use super::OAuthClient;
use crate::config::Grant;
use crate::credentials::{ClientIdentity, TokenEndpointAuth};
use crate::error::AuthError;
use crate::http::parse_url;
use crate::metadata::AuthMetadata;
use crate::secret::Secret;

const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// What a client identity is needed for; decides what a registration asks for.
#[derive(Clone, Copy, Debug)]
pub(super) enum IdentityUse<'a> {
    /// The authorization code flow with this redirect URI.
    Redirect(&'a str),
    /// The device authorization grant (no redirect URI).
    Device,
    /// A token request with an identity obtained earlier (refresh, revocation, machine
    /// grants): nothing is registered.
    TokenRequest,
}

impl OAuthClient {
    /// The client identity: pre-registered → a stored registration for this issuer (and
    /// redirect URI) → client ID metadata document → dynamic registration.
    pub(super) async fn client_identity(
        &self,
        metadata: &AuthMetadata,
        used_for: IdentityUse<'_>,
    ) -> Result<ClientIdentity, AuthError> {
        let server = &metadata.authorization_server;
        if let Some(client_id) = &self.config.client_id {
            let auth_method = self.config.auth_method.unwrap_or_else(|| {
                match (&self.config.client_secret, &self.config.grant) {
                    (_, Grant::ClientCredentials { key: Some(_) }) => {
                        TokenEndpointAuth::PrivateKeyJwt
                    }
                    (Some(_), _) => {
                        pick_secret_method(server.token_endpoint_auth_methods_supported.as_deref())
                    }
                    (None, _) => TokenEndpointAuth::None,
                }
            });
            return Ok(ClientIdentity {
                client_id: client_id.clone(),
                client_secret: self.config.client_secret.clone(),
                auth_method,
                redirect_uri: None,
                issuer: Some(server.issuer.clone()),
            });
        }
        self.current().await;
        let stored = lock(&self.state).client.clone();
        if let Some(stored) = stored {
            let same_issuer = stored.issuer.as_deref() == Some(server.issuer.as_str());
            let fits = match (used_for, stored.redirect_uri.as_deref()) {
                (IdentityUse::Redirect(want), Some(have)) => want == have,
                (IdentityUse::Redirect(_), None) => false,
                // A device client has no redirect URI; one registered for redirects may not
                // have the device grant.
                (IdentityUse::Device, have) => have.is_none(),
                (IdentityUse::TokenRequest, _) => true,
            };
            if same_issuer && fits {
                return Ok(stored);
            }
        }
        if let Some(url) = &self.config.client_metadata_url {
            if server.client_id_metadata_document_supported == Some(true) {
                parse_url(url, "client metadata document URL")?;
                return Ok(ClientIdentity {
                    client_id: url.clone(),
                    client_secret: None,
                    auth_method: TokenEndpointAuth::None,
                    redirect_uri: None,
                    issuer: Some(server.issuer.clone()),
                });
            }
        }
        let client = self.register(metadata, used_for).await?;
        lock(&self.state).client = Some(client.clone());
        Ok(client)
    }

    /// Dynamic client registration (RFC 7591).
    async fn register(
        &self,
        metadata: &AuthMetadata,
        used_for: IdentityUse<'_>,
    ) -> Result<ClientIdentity, AuthError> {
        let server = &metadata.authorization_server;
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(AuthError::Registration(format!(
                "{} offers no dynamic registration and no client_id is configured; \
                 configure a pre-registered client (oauth.client_id)",
                server.issuer
            )));
        };
        let endpoint = parse_url(endpoint, "registration_endpoint")?;
        let method =
            pick_registration_method(server.token_endpoint_auth_methods_supported.as_deref());
        let (redirect_uri, mut body) = match used_for {
            IdentityUse::Redirect(uri) => (
                Some(uri.to_owned()),
                json!({
                    "client_name": self.config.client_name,
                    "application_type": application_type(uri),
                    "redirect_uris": [uri],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "token_endpoint_auth_method": method.as_str(),
                }),
            ),
            IdentityUse::Device => (
                None,
                json!({
                    "client_name": self.config.client_name,
                    "application_type": "native",
                    "grant_types": [DEVICE_CODE_GRANT, "refresh_token"],
                    "response_types": [],
                    "token_endpoint_auth_method": method.as_str(),
                }),
            ),
            IdentityUse::TokenRequest => {
                return Err(AuthError::Registration(
                    "no client is registered with this server yet (log in first)".into(),
                ))
            }
        };
        let scopes = self.scopes_to_request(metadata);
        if !scopes.is_empty() {
            body["scope"] = Value::String(scopes.join(" "));
        }
        let fetched = self.http.post_json(&endpoint, &body).await?;
        if !fetched.is_success() {
            return Err(AuthError::Registration(format!(
                "{} answered HTTP {}: {}",
                redact_url(endpoint.as_str()),
                fetched.status,
                fetched.snippet()
            )));
        }
        let answer: Value = serde_json::from_slice(&fetched.body).map_err(|e| {
            AuthError::Registration(format!(
                "the answer from {} is not JSON: {e}",
                redact_url(endpoint.as_str())
            ))
        })?;
        let client_id = answer
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                AuthError::Registration(format!(
                    "the answer from {} has no client_id",
                    redact_url(endpoint.as_str())
                ))
            })?
            .to_owned();
        let client_secret = answer
            .get("client_secret")
            .and_then(Value::as_str)
            .map(Secret::from);
        let auth_method = answer
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .and_then(TokenEndpointAuth::parse)
            .unwrap_or(method);
        info!(issuer = %server.issuer, method = auth_method.as_str(), "client registered");
        Ok(ClientIdentity {
            client_id,
            client_secret,
            auth_method,
            redirect_uri,
            issuer: Some(server.issuer.clone()),
        })
    }
}

/// `client_secret_post` where the server lists it (servers that list both do not all accept
/// Basic without a `client_id` in the body), else `client_secret_basic` (the RFC 6749
/// default).
fn pick_secret_method(supported: Option<&[String]>) -> TokenEndpointAuth {
    match supported {
        Some(s) if s.iter().any(|m| m == "client_secret_post") => {
            TokenEndpointAuth::ClientSecretPost
        }
        _ => TokenEndpointAuth::ClientSecretBasic,
    }
}

/// What to ask for in dynamic registration: a public client (`none`) where allowed, else a
/// secret the server will issue.
fn pick_registration_method(supported: Option<&[String]>) -> TokenEndpointAuth {
    match supported {
        None => TokenEndpointAuth::None,
        Some(s) if s.iter().any(|m| m == "none") => TokenEndpointAuth::None,
        Some(s) => pick_secret_method(Some(s)),
    }
}

/// The OpenID `application_type` of a registration (SEP-837): `native` for a redirect to this
/// machine (a loopback listener, a custom scheme), `web` for an https redirect elsewhere.
fn application_type(redirect_uri: &str) -> &'static str {
    match Url::parse(redirect_uri) {
        Ok(url) if url.scheme() == "https" && !crate::http::is_loopback(&url) => "web",
        _ => "native",
    }
}
