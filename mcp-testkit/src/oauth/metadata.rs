//! The two metadata documents: protected resource metadata (RFC 9728) and authorization
//! server metadata (RFC 8414), each listing what the options turn on.

use serde_json::{json, Value};

use super::{
    AuthServer, AUTHORIZE_PATH, DEVICE_AUTHORIZATION_PATH, DEVICE_CODE_GRANT, REGISTER_PATH,
    REVOKE_PATH, TOKEN_PATH,
};
use crate::dpop::DPOP_ALG;

impl AuthServer {
    /// The protected resource metadata of `/mcp` (RFC 9728).
    pub(super) fn resource_metadata(&self) -> Value {
        let mut prm = json!({
            "resource": self.resource(),
            "authorization_servers": [self.origin],
            "bearer_methods_supported": ["header"],
        });
        if let Some(scopes) = &self.options.scopes_supported {
            prm["scopes_supported"] = json!(scopes);
        }
        // Not under `dpop_optional`: the resource does not ask for DPoP.
        if self.options.resource_requires_dpop() {
            prm["dpop_signing_alg_values_supported"] = json!([DPOP_ALG]);
            prm["dpop_bound_access_tokens_required"] = json!(true);
        }
        prm
    }

    /// The authorization server metadata (RFC 8414).
    pub(super) fn server_metadata(&self) -> Value {
        let origin = &self.origin;
        let mut meta = json!({
            "issuer": self.issuer(),
            "authorization_endpoint": format!("{origin}{AUTHORIZE_PATH}"),
            "token_endpoint": format!("{origin}{TOKEN_PATH}"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": self.options.pkce_methods,
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        });
        if self.options.registration {
            meta["registration_endpoint"] = json!(format!("{origin}{REGISTER_PATH}"));
        }
        if self.options.revocation {
            meta["revocation_endpoint"] = json!(format!("{origin}{REVOKE_PATH}"));
            meta["revocation_endpoint_auth_methods_supported"] =
                json!(["none", "client_secret_post", "client_secret_basic"]);
        }
        if let Some(scopes) = &self.options.scopes_supported {
            meta["scopes_supported"] = json!(scopes);
        }
        if self.options.iss_parameter {
            meta["authorization_response_iss_parameter_supported"] = json!(true);
        }
        if self.options.dpop_enabled() {
            meta["dpop_signing_alg_values_supported"] = json!([DPOP_ALG]);
        }
        if !self.options.preregistered_jwt.is_empty() {
            for list in [
                "token_endpoint_auth_methods_supported",
                "revocation_endpoint_auth_methods_supported",
            ] {
                if let Some(methods) = meta.get_mut(list).and_then(Value::as_array_mut) {
                    methods.push(json!("private_key_jwt"));
                }
            }
            meta["token_endpoint_auth_signing_alg_values_supported"] = json!(["ES256"]);
        }
        if self.options.device_authorization {
            meta["device_authorization_endpoint"] =
                json!(format!("{origin}{DEVICE_AUTHORIZATION_PATH}"));
            if let Some(grants) = meta["grant_types_supported"].as_array_mut() {
                grants.push(json!(DEVICE_CODE_GRANT));
            }
        }
        meta
    }
}
