//! The transport of one server entry, as each format spells it: `type`, `command`, `url` (or
//! the first of `endpoints`), headers, and Codex's variables passed through.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::Flavor;
use crate::config::error::{ConfigError, ConfigErrorKind};
use crate::config::fields::{Ctx, Obj};
use crate::config::model::TransportConfig;

/// Claude / Cursor / VS Code: `type` selects the transport; without it `command` means stdio and
/// `url` (or `endpoints`, whose first URL is `first_url`) means "detect when connecting".
pub(super) fn typed_transport(
    obj: &Obj<'_>,
    ctx: &Ctx<'_>,
    flavor: Flavor,
    first_url: Option<&str>,
) -> Result<TransportConfig, ConfigError> {
    // VS Code and Cursor can load a dotenv file; ignoring it would start the server without
    // its variables, so say so instead.
    if obj.has("envFile") {
        let syntax = if flavor == Flavor::VsCode {
            "${env:VAR}"
        } else {
            "${VAR}"
        };
        return Err(ctx.error(
            ConfigErrorKind::Unsupported,
            "envFile",
            format!(
                "`envFile` is not supported; put the variables in `env` (values may use {syntax})"
            ),
        ));
    }
    let kind = obj.string(ctx, "type")?;
    match kind.as_deref() {
        Some("stdio") if first_url.is_some() => Err(ctx.error(
            ConfigErrorKind::Invalid,
            "endpoints",
            "expected a remote `type` with `endpoints` (\"http\", \"sse\", \"ws\", …), found \"stdio\"",
        )),
        Some("stdio") => stdio(obj, ctx),
        Some("http" | "streamable-http" | "streamableHttp") => {
            let (url, headers) = remote(obj, ctx, "headers", first_url)?;
            Ok(TransportConfig::Http { url, headers })
        }
        Some("sse") => {
            let (url, headers) = remote(obj, ctx, "headers", first_url)?;
            Ok(TransportConfig::Sse { url, headers })
        }
        // Any other transport is a registered factory's (`ws`, `grpc`, a downstream crate's);
        // a `type` nothing serves is reported when the client starts, with the known types.
        Some(other) => {
            if other.trim().is_empty() {
                return Err(ctx.error(
                    ConfigErrorKind::Invalid,
                    "type",
                    "expected a transport type (\"stdio\", \"http\", \"sse\", \"ws\", \"grpc\", …), found an empty string",
                ));
            }
            let kind = if other == "websocket" { "ws" } else { other };
            let (url, headers) = remote(obj, ctx, "headers", first_url)?;
            Ok(TransportConfig::Remote {
                kind: kind.to_owned(),
                url,
                headers,
            })
        }
        None => match (obj.has("command"), obj.has("url") || first_url.is_some()) {
            (true, false) => stdio(obj, ctx),
            (false, true) => {
                let (url, headers) = remote(obj, ctx, "headers", first_url)?;
                Ok(TransportConfig::Url { url, headers })
            }
            (true, true) => Err(both(ctx)),
            (false, false) => Err(neither(ctx)),
        },
    }
}

/// Codex: `command` is a stdio server, `url` (or `endpoints`, whose first URL is `first_url`) a
/// Streamable HTTP one.
pub(super) fn codex_transport(
    obj: &Obj<'_>,
    ctx: &Ctx<'_>,
    first_url: Option<&str>,
) -> Result<TransportConfig, ConfigError> {
    match (obj.has("command"), obj.has("url") || first_url.is_some()) {
        (true, false) => {
            let mut transport = stdio(obj, ctx)?;
            // `env_vars`: names of variables passed through from the harness's environment.
            if let (Some(names), TransportConfig::Stdio { env, .. }) =
                (obj.string_list(ctx, "env_vars", false)?, &mut transport)
            {
                for name in names {
                    match (ctx.env)(&name) {
                        Some(value) => {
                            env.entry(name).or_insert(value);
                        }
                        None => tracing::debug!(
                            server = ctx.server.unwrap_or(""),
                            variable = %name,
                            "env_vars names a variable that is not set; not passed"
                        ),
                    }
                }
            }
            Ok(transport)
        }
        (false, true) => {
            let (url, mut headers) = remote(obj, ctx, "http_headers", first_url)?;
            // `env_http_headers`: header name → variable; unset variables are skipped (as Codex does).
            if let Some(map) = obj.string_map(ctx, "env_http_headers", false)? {
                for (header, variable) in map {
                    match (ctx.env)(&variable).filter(|v| !v.trim().is_empty()) {
                        Some(value) => {
                            headers.insert(header, value);
                        }
                        None => tracing::debug!(
                            server = ctx.server.unwrap_or(""),
                            header = %header,
                            variable = %variable,
                            "env_http_headers names a variable that is not set; header not sent"
                        ),
                    }
                }
            }
            if let Some(variable) = obj.string(ctx, "bearer_token_env_var")? {
                let token = (ctx.env)(&variable)
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| {
                        ctx.error(
                            ConfigErrorKind::UnsetVariable,
                            "bearer_token_env_var",
                            format!(
                                "environment variable {variable} is not set (it should hold the \
                                 bearer token for this server)"
                            ),
                        )
                    })?;
                headers.retain(|k, _| !k.eq_ignore_ascii_case("authorization"));
                headers.insert("Authorization".to_owned(), format!("Bearer {token}"));
            }
            Ok(TransportConfig::Http { url, headers })
        }
        (true, true) => Err(both(ctx)),
        (false, false) => Err(neither(ctx)),
    }
}

fn both(ctx: &Ctx<'_>) -> ConfigError {
    ctx.error(
        ConfigErrorKind::Invalid,
        "",
        "expected either `command` (a stdio server) or `url` (a remote server), found both; \
         set `type` to say which transport to use",
    )
}

fn neither(ctx: &Ctx<'_>) -> ConfigError {
    ctx.error(
        ConfigErrorKind::Missing,
        "",
        "expected `command` (a stdio server) or `url` (a remote server), found neither",
    )
}

fn stdio(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<TransportConfig, ConfigError> {
    let command = obj.expanded(ctx, "command")?.ok_or_else(|| {
        ctx.error(
            ConfigErrorKind::Missing,
            "command",
            "a stdio server needs `command` (the program to start), found none",
        )
    })?;
    Ok(TransportConfig::Stdio {
        command,
        args: obj.string_list(ctx, "args", true)?.unwrap_or_default(),
        env: obj.string_map(ctx, "env", true)?.unwrap_or_default(),
        cwd: obj.expanded(ctx, "cwd")?.map(PathBuf::from),
    })
}

/// The URL (`url`, or `first_url`, the first of `endpoints`) and the server's own headers.
fn remote(
    obj: &Obj<'_>,
    ctx: &Ctx<'_>,
    headers_key: &str,
    first_url: Option<&str>,
) -> Result<(String, BTreeMap<String, String>), ConfigError> {
    let url = match first_url {
        Some(url) => Some(url.to_owned()),
        None => obj.expanded(ctx, "url")?,
    };
    let url = url.ok_or_else(|| {
        ctx.error(
            ConfigErrorKind::Missing,
            "url",
            "a remote server needs `url` (an http://, https://, ws:// or wss:// address), found none",
        )
    })?;
    let headers = obj.string_map(ctx, headers_key, true)?.unwrap_or_default();
    Ok((url, headers))
}
