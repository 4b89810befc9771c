//! The `auth/…` scenarios: an [`OAuthProvider`] configured from the scenario and its
//! `MCP_CONFORMANCE_CONTEXT`, with an authorizer that stands in for the user. The suite's
//! authorization servers approve at once, so "the user" is a GET of the authorization URL
//! whose redirect (not followed) carries the code.

use std::sync::Arc;

use mcp_auth::jwt::Es256Key;
use mcp_auth::{
    AutoApprove, CrossAppAccess, Grant, MemoryStore, OAuthClient, OAuthConfig, OAuthProvider,
    Secret, StoreKey,
};
use serde_json::Value;
use url::Url;

/// The client ID metadata document URL the suite expects (`auth/basic-cimd`).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Nothing listens here: the authorizer reads the redirect's `Location` instead.
const REDIRECT_URI: &str = "http://127.0.0.1:3000/callback";

/// The provider for `scenario` against the server at `url`.
pub fn provider(scenario: &str, url: &str, context: &str) -> Result<Arc<OAuthProvider>, String> {
    let context: Value = if context.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(context).map_err(|e| format!("MCP_CONFORMANCE_CONTEXT: {e}"))?
    };
    let field = |name: &str| context.get(name).and_then(Value::as_str).map(str::to_owned);
    let server_url = Url::parse(url).map_err(|e| format!("server URL: {e}"))?;
    let mut config = OAuthConfig::new(server_url, StoreKey::new(url, "conformance"));
    config.client_name = "mcp-conformance-client".into();
    config.client_metadata_url = Some(CLIENT_METADATA_URL.into());
    config.client_id = field("client_id");
    config.client_secret = field("client_secret").map(Secret::new);
    config.grant = if scenario.starts_with("auth/client-credentials") {
        let key = match field("private_key_pem") {
            Some(pem) => {
                Some(Es256Key::from_pem(&Secret::new(pem), None).map_err(|e| e.to_string())?)
            }
            None => None,
        };
        Grant::ClientCredentials { key }
    } else if scenario.starts_with("auth/cross-app-access")
        || scenario == "auth/enterprise-managed-authorization"
    {
        let endpoint =
            field("idp_token_endpoint").ok_or("the context has no idp_token_endpoint")?;
        Grant::CrossAppAccess(CrossAppAccess {
            idp_token_endpoint: Url::parse(&endpoint)
                .map_err(|e| format!("idp_token_endpoint: {e}"))?,
            id_token: Secret::new(field("idp_id_token").ok_or("the context has no idp_id_token")?),
            idp_client_id: field("idp_client_id").ok_or("the context has no idp_client_id")?,
            idp_client_secret: field("idp_client_secret").map(Secret::new),
        })
    } else if scenario == "auth/wif-jwt-bearer" {
        Grant::JwtBearer {
            assertion: Secret::new(field("valid_jwt").ok_or("the context has no valid_jwt")?),
        }
    } else {
        Grant::AuthorizationCode
    };
    let client =
        OAuthClient::new(config, Arc::new(MemoryStore::new())).map_err(|e| e.to_string())?;
    let authorizer = AutoApprove::new(REDIRECT_URI).map_err(|e| e.to_string())?;
    Ok(Arc::new(OAuthProvider::new(
        Arc::new(client),
        Some(Arc::new(authorizer)),
    )))
}
