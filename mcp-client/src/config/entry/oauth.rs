//! A server entry's `oauth` settings: client, secret, scopes, redirect port, DPoP, the origins
//! trusted for resource metadata and the address policy.

use crate::config::error::{ConfigError, ConfigErrorKind};
use crate::config::fields::{Ctx, Obj};
use crate::config::model::{AddressPolicySetting, DpopSetting, OAuthSettings};
use crate::config::node::Node;

/// `oauth: { … }` (snake_case or the camelCase other tools write), or `oauth: false`.
pub(super) fn read_oauth(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<OAuthSettings, ConfigError> {
    if let Some(Node::Bool(on)) = obj.get("oauth") {
        return Ok(OAuthSettings {
            disabled: !on,
            ..OAuthSettings::default()
        });
    }
    let Some(oauth) = obj.object(ctx, "oauth")? else {
        return Ok(OAuthSettings::default());
    };
    let either = |a: &str, b: &str| -> Result<Option<String>, ConfigError> {
        Ok(oauth.expanded(ctx, a)?.or(oauth.expanded(ctx, b)?))
    };
    let client_secret_env = either("client_secret_env", "clientSecretEnv")?;
    let client_secret = match &client_secret_env {
        None => None,
        Some(variable) => match (ctx.env)(variable).filter(|v| !v.is_empty()) {
            Some(secret) => Some(secret),
            None => {
                return Err(ctx.error(
                    ConfigErrorKind::UnsetVariable,
                    "oauth.client_secret_env",
                    format!(
                        "environment variable {variable} is not set (it should hold the OAuth \
                         client secret for this server)"
                    ),
                ))
            }
        },
    };
    let scopes = match oauth.get("scopes") {
        Some(Node::Str(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(_) => oauth.string_list(ctx, "scopes", true)?.unwrap_or_default(),
        None => Vec::new(),
    };
    let port_key = [
        "redirect_port",
        "redirectPort",
        "callbackPort",
        "callback_port",
    ]
    .into_iter()
    .find(|k| oauth.has(k));
    let redirect_port = match port_key {
        None => None,
        Some(key) => {
            let port = oauth.u32(ctx, key)?.unwrap_or(0);
            Some(u16::try_from(port).map_err(|_| {
                ctx.error(
                    ConfigErrorKind::Invalid,
                    &oauth.path(key),
                    format!("expected a port number (0-65535), found {port}"),
                )
            })?)
        }
    };
    let dpop = match oauth.string(ctx, "dpop")?.as_deref() {
        None | Some("auto") => DpopSetting::Auto,
        Some("always") => DpopSetting::Always,
        Some("never") => DpopSetting::Never,
        Some(other) => {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                &oauth.path("dpop"),
                format!(
                    "expected \"auto\" (DPoP-bound tokens where the server takes them), \
                     \"always\" or \"never\", found {other:?}"
                ),
            ))
        }
    };
    let resource_metadata_origins =
        match oauth.string_list(ctx, "resource_metadata_origins", true)? {
            None => Vec::new(),
            Some(origins) => {
                for (i, origin) in origins.iter().enumerate() {
                    let host_and_rest = origin
                        .strip_prefix("https://")
                        .or_else(|| origin.strip_prefix("http://"));
                    if !host_and_rest.is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
                    {
                        return Err(ctx.error(
                            ConfigErrorKind::Invalid,
                            &format!("{}[{i}]", oauth.path("resource_metadata_origins")),
                            format!(
                                "expected an https origin such as \"https://auth.example.com\", \
                             found {:?}",
                                mcp_wire::redact::redact_url(origin)
                            ),
                        ));
                    }
                }
                origins
            }
        };
    let address_policy = match oauth.string(ctx, "address_policy")?.as_deref() {
        None | Some("auto") => AddressPolicySetting::Auto,
        Some("public") => AddressPolicySetting::Public,
        Some("local-network") => AddressPolicySetting::LocalNetwork,
        Some("link-local") => AddressPolicySetting::LinkLocal,
        Some(other) => {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                &oauth.path("address_policy"),
                format!(
                    "expected \"auto\" (decided by the server's own addresses), \"public\", \
                     \"local-network\" or \"link-local\", found {other:?}"
                ),
            ))
        }
    };
    let settings = OAuthSettings {
        disabled: false,
        client_id: either("client_id", "clientId")?,
        client_secret_env,
        client_secret,
        scopes,
        redirect_port,
        client_metadata_url: either("client_metadata_url", "clientMetadataUrl")?,
        resource: either("resource", "resource_url")?,
        token_env: either("token_env", "tokenEnv")?,
        dpop,
        resource_metadata_origins,
        address_policy,
    };
    oauth.log_unknown(ctx);
    Ok(settings)
}
