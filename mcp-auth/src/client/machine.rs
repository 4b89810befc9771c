//! Tokens without a user: client credentials (a secret or `private_key_jwt`), cross-app
//! access (token exchange, then a JWT-bearer grant) and workload identity (JWT bearer).

use std::time::SystemTime;

use mcp_wire::redact::redact_url;
use oauth2::Scope;
use serde_json::Value;

use super::registration::IdentityUse;
use super::token_request::{token_error, token_set, token_set_from_json};
use super::OAuthClient;
use crate::config::{CrossAppAccess, Grant};
use crate::credentials::{unix_now, ClientIdentity, TokenEndpointAuth, TokenSet};
use crate::dpop::check_binding;
use crate::error::AuthError;
use crate::jwt::CLIENT_ASSERTION_TYPE;
use crate::metadata::AuthMetadata;
use crate::secret::Secret;

const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

impl OAuthClient {
    /// New tokens for a machine client (client credentials, cross-app access) even when the
    /// held ones look valid — the server refused them.
    pub async fn refresh_machine_tokens(&self) -> Result<TokenSet, AuthError> {
        let _guard = self.refresh_lock.lock().await;
        self.machine_grant_locked().await
    }

    /// New tokens from the configured machine grant; [`needs_login`](Self::needs_login) for a
    /// client whose tokens need a user. The refresh lock must be held.
    pub(super) async fn machine_grant_locked(&self) -> Result<TokenSet, AuthError> {
        match &self.config.grant {
            Grant::AuthorizationCode => Err(self.needs_login()),
            Grant::ClientCredentials { .. } => self.client_credentials_locked().await,
            Grant::CrossAppAccess(xaa) => self.cross_app_access_locked(xaa).await,
            Grant::JwtBearer { assertion } => self.jwt_bearer_locked(assertion).await,
        }
    }

    /// `client_credentials` with the configured client: its secret, or a `private_key_jwt`
    /// assertion. The refresh lock must be held.
    async fn client_credentials_locked(&self) -> Result<TokenSet, AuthError> {
        let Grant::ClientCredentials { key } = &self.config.grant else {
            return Err(AuthError::Config("not a client_credentials client".into()));
        };
        let metadata = self.auth_metadata(None).await?;
        let dpop_key = self.dpop_key_for(&metadata)?;
        let client = self
            .client_identity(&metadata, IdentityUse::TokenRequest)
            .await?;
        let scopes = self.scopes_to_request(&metadata);
        let oauth = self.token_client(&metadata, &client)?;
        // A client assertion may be single-use (its `jti`): when the server asks for its DPoP
        // nonce, the request is built again with a new assertion rather than sent again.
        let mut http = self.token_http(dpop_key.as_ref());
        http.retry_on_nonce = key.is_none();
        let mut attempts = 0;
        let response = loop {
            attempts += 1;
            let mut request = oauth
                .exchange_client_credentials()
                .add_extra_param("resource", metadata.resource_indicator());
            if !scopes.is_empty() {
                request = request.add_scope(Scope::new(scopes.join(" ")));
            }
            if let Some(key) = key {
                let assertion = key.client_assertion(
                    &client.client_id,
                    &metadata.authorization_server.issuer,
                    unix_now(SystemTime::now()),
                )?;
                request = request
                    .add_extra_param("client_assertion_type", CLIENT_ASSERTION_TYPE)
                    .add_extra_param("client_assertion", assertion.expose().to_owned());
            }
            match request.request_async(&http).await {
                Ok(response) => break response,
                Err(e) => {
                    let e = token_error(e, &metadata, "client_credentials");
                    if !(e.is_use_dpop_nonce() && !http.retry_on_nonce && attempts < 2) {
                        return Err(e);
                    }
                }
            }
        };
        let tokens = token_set(&response, &scopes, None);
        let tokens = check_binding(tokens, dpop_key.as_ref(), &metadata)?;
        self.keep_refreshed(tokens.clone(), None).await;
        Ok(tokens)
    }

    /// Cross-app access: the ID token becomes an ID-JAG at the identity provider (token
    /// exchange), which becomes an access token at the server's authorization server (JWT
    /// bearer grant). The refresh lock must be held.
    async fn cross_app_access_locked(&self, xaa: &CrossAppAccess) -> Result<TokenSet, AuthError> {
        let metadata = self.auth_metadata(None).await?;
        self.check_dpop(&metadata)?;
        let scopes = self.scopes_to_request(&metadata);
        let resource = metadata.resource_indicator();
        let issuer = metadata.authorization_server.issuer.clone();
        let scope = scopes.join(" ");
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("requested_token_type", ID_JAG_TYPE),
            ("subject_token", xaa.id_token.expose()),
            ("subject_token_type", ID_TOKEN_TYPE),
            ("audience", issuer.as_str()),
            ("resource", resource.as_str()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scope.as_str()));
        }
        let idp = ClientIdentity {
            client_id: xaa.idp_client_id.clone(),
            client_secret: xaa.idp_client_secret.clone(),
            auth_method: if xaa.idp_client_secret.is_some() {
                TokenEndpointAuth::ClientSecretBasic
            } else {
                TokenEndpointAuth::None
            },
            redirect_uri: None,
            issuer: None,
        };
        let exchanged = self
            .form_token_request(
                &xaa.idp_token_endpoint,
                Some(&idp),
                form,
                "token-exchange",
                None,
            )
            .await?;
        let jag = exchanged
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                AuthError::Http(format!(
                    "the identity provider's token exchange at {} returned no access_token",
                    redact_url(xaa.idp_token_endpoint.as_str())
                ))
            })?
            .to_owned();
        let client = self
            .client_identity(&metadata, IdentityUse::TokenRequest)
            .await?;
        self.jwt_bearer_grant(&metadata, Some(&client), &jag, &scopes)
            .await
    }

    /// Workload identity: the held JWT in a JWT-bearer grant, no client authentication. The
    /// refresh lock must be held.
    async fn jwt_bearer_locked(&self, assertion: &Secret) -> Result<TokenSet, AuthError> {
        let metadata = self.auth_metadata(None).await?;
        self.check_dpop(&metadata)?;
        let scopes = self.scopes_to_request(&metadata);
        self.jwt_bearer_grant(&metadata, None, assertion.expose(), &scopes)
            .await
    }

    /// The JWT-bearer grant (RFC 7523) at the server's authorization server, with `client`'s
    /// authentication (cross-app access) or none (workload identity: then the configured
    /// client id, if any, goes along); keeps the tokens.
    async fn jwt_bearer_grant(
        &self,
        metadata: &AuthMetadata,
        client: Option<&ClientIdentity>,
        assertion: &str,
        scopes: &[String],
    ) -> Result<TokenSet, AuthError> {
        let resource = metadata.resource_indicator();
        let scope = scopes.join(" ");
        let token_endpoint = metadata.endpoint(
            metadata.authorization_server.token_endpoint.as_ref(),
            "token_endpoint",
        )?;
        let mut form = vec![("grant_type", JWT_BEARER_GRANT), ("assertion", assertion)];
        if let (None, Some(id)) = (client, &self.config.client_id) {
            form.push(("client_id", id.as_str()));
        }
        if !scopes.is_empty() {
            form.push(("scope", scope.as_str()));
        }
        form.push(("resource", resource.as_str()));
        let key = self.dpop_key_for(metadata)?;
        let answer = self
            .form_token_request(&token_endpoint, client, form, "jwt-bearer", key.as_ref())
            .await?;
        let tokens = token_set_from_json(&answer, scopes).ok_or_else(|| {
            AuthError::Http(format!(
                "the JWT bearer grant at {} returned no access_token",
                redact_url(token_endpoint.as_str())
            ))
        })?;
        let tokens = check_binding(tokens, key.as_ref(), metadata)?;
        self.keep_refreshed(tokens.clone(), None).await;
        Ok(tokens)
    }
}
