//! Token endpoint requests: the HTTP and `oauth2` clients with the client's authentication,
//! form requests for the grants `oauth2` does not know, and token answers as [`TokenSet`]s.

use std::fmt;
use std::time::SystemTime;

use mcp_wire::redact::redact_url;
use oauth2::basic::{BasicClient, BasicTokenResponse};
use oauth2::{
    AuthType, ClientId, ClientSecret, EndpointNotSet, EndpointSet, RequestTokenError,
    TokenResponse, TokenUrl,
};
use serde_json::Value;
use url::Url;

use super::OAuthClient;
use crate::credentials::{unix_now, ClientAuth, ClientIdentity, TokenSet, TokenType};
use crate::dpop::DpopKey;
use crate::error::AuthError;
use crate::metadata::AuthMetadata;
use crate::secret::Secret;
use crate::token_http::TokenHttp;

type TokenClient =
    BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

impl OAuthClient {
    /// The HTTP client of a token request: with `key`, every request carries a DPoP proof
    /// (and one refused for want of the server's nonce is sent again with it).
    pub(super) fn token_http<'a>(&'a self, key: Option<&'a DpopKey>) -> TokenHttp<'a> {
        TokenHttp {
            http: &self.http,
            key,
            nonces: &self.nonces,
            retry_on_nonce: true,
        }
    }

    /// An `oauth2` client for the token endpoint with this identity's authentication.
    pub(super) fn token_client(
        &self,
        metadata: &AuthMetadata,
        client: &ClientIdentity,
    ) -> Result<TokenClient, AuthError> {
        let token = metadata.endpoint(
            metadata.authorization_server.token_endpoint.as_ref(),
            "token_endpoint",
        )?;
        let mut oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
            .set_token_uri(TokenUrl::from_url(token));
        oauth = match client.client_auth() {
            ClientAuth::Basic(secret) => oauth
                .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
                .set_auth_type(AuthType::BasicAuth),
            ClientAuth::Post(secret) => oauth
                .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
                .set_auth_type(AuthType::RequestBody),
            ClientAuth::Public => oauth.set_auth_type(AuthType::RequestBody),
        };
        Ok(oauth)
    }

    /// A token request the `oauth2` crate has no grant for, with the client's authentication
    /// (and a DPoP proof with `key`).
    pub(super) async fn form_token_request(
        &self,
        endpoint: &Url,
        client: Option<&ClientIdentity>,
        mut form: Vec<(&str, &str)>,
        grant: &'static str,
        key: Option<&DpopKey>,
    ) -> Result<Value, AuthError> {
        let mut headers = reqwest::header::HeaderMap::new();
        match client.map(|c| (c, c.client_auth())) {
            // No client authentication at all (workload identity).
            None => {}
            Some((client, ClientAuth::Basic(secret))) => {
                let mut value = reqwest::header::HeaderValue::from_str(&basic_auth(
                    &client.client_id,
                    secret.expose(),
                ))
                .map_err(|_| {
                    AuthError::Config("the client credentials are not a valid header".into())
                })?;
                value.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, value);
            }
            Some((client, ClientAuth::Post(secret))) => {
                form.push(("client_id", &client.client_id));
                form.push(("client_secret", secret.expose()));
            }
            Some((client, ClientAuth::Public)) => form.push(("client_id", &client.client_id)),
        }
        let fetched = self
            .token_http(key)
            .post_form(endpoint, &form, headers)
            .await?;
        let body: Value = serde_json::from_slice(&fetched.body).unwrap_or(Value::Null);
        if !fetched.is_success() {
            return Err(AuthError::TokenRefused {
                endpoint: redact_url(endpoint.as_str()),
                grant,
                error: body
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("HTTP error")
                    .to_owned(),
                description: body
                    .get("error_description")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| Some(format!("HTTP {}", fetched.status))),
            });
        }
        Ok(body)
    }
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
fn basic_auth(client_id: &str, secret: &str) -> String {
    use base64::Engine;
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let raw = format!("{}:{}", enc(client_id), enc(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// The tokens of a token answer: the new refresh token (else `old_refresh`), the expiry, and
/// the granted scopes (else those requested).
fn token_set_of(
    access: String,
    token_type: TokenType,
    refresh: Option<String>,
    expires_in_secs: Option<u64>,
    scope: Option<Vec<String>>,
    requested: &[String],
    old_refresh: Option<Secret>,
) -> TokenSet {
    let now = unix_now(SystemTime::now());
    TokenSet {
        access_token: Secret::new(access),
        token_type,
        refresh_token: refresh.map(Secret::new).or(old_refresh),
        expires_at: expires_in_secs.map(|secs| now.saturating_add(secs)),
        lifetime_secs: expires_in_secs,
        scopes: scope.unwrap_or_else(|| requested.to_vec()),
    }
}

/// A token answer the `oauth2` crate parsed.
pub(super) fn token_set(
    response: &BasicTokenResponse,
    requested: &[String],
    old_refresh: Option<Secret>,
) -> TokenSet {
    token_set_of(
        response.access_token().secret().clone(),
        TokenType::parse(response.token_type().as_ref()),
        response.refresh_token().map(|r| r.secret().clone()),
        response.expires_in().map(|d| d.as_secs()),
        response.scopes().map(|s| {
            s.iter()
                .flat_map(|s| s.split_whitespace().map(str::to_owned))
                .collect()
        }),
        requested,
        old_refresh,
    )
}

/// A token answer read as JSON (the grants `oauth2` does not know).
pub(super) fn token_set_from_json(answer: &Value, requested: &[String]) -> Option<TokenSet> {
    let text = |name: &str| answer.get(name).and_then(Value::as_str).map(str::to_owned);
    Some(token_set_of(
        text("access_token")?,
        TokenType::parse(text("token_type").as_deref().unwrap_or("Bearer")),
        text("refresh_token"),
        answer.get("expires_in").and_then(Value::as_u64),
        text("scope").map(|s| s.split_whitespace().map(str::to_owned).collect()),
        requested,
        None,
    ))
}

/// An `oauth2` failure as an [`AuthError`] — never with the response body, which may hold a
/// token.
pub(super) fn token_error<T: oauth2::ErrorResponseType + fmt::Display + 'static>(
    e: RequestTokenError<AuthError, oauth2::StandardErrorResponse<T>>,
    metadata: &AuthMetadata,
    grant: &'static str,
) -> AuthError {
    let endpoint = metadata
        .authorization_server
        .token_endpoint
        .as_deref()
        .map(redact_url)
        .unwrap_or_default();
    match e {
        RequestTokenError::ServerResponse(r) => AuthError::TokenRefused {
            endpoint,
            grant,
            error: r.error().to_string(),
            description: r.error_description().cloned(),
        },
        RequestTokenError::Request(e) => e,
        RequestTokenError::Parse(e, _body) => AuthError::Http(format!(
            "the {grant} answer from {endpoint} is not a valid token response ({})",
            e.path()
        )),
        RequestTokenError::Other(m) => {
            AuthError::Http(format!("the {grant} request to {endpoint} failed: {m}"))
        }
    }
}
