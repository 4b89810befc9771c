//! Reading one server entry: the transport fields of each format, then the harness extras shared
//! by all formats, then validation.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::endpoints::{check_endpoint_urls, read_endpoints};
use super::error::{ConfigError, ConfigErrorKind};
use super::fields::{Ctx, Obj};
use super::model::{
    AddressPolicySetting, DpopSetting, OAuthSettings, ServerConfig, TransportConfig,
};
use super::node::Node;
use super::settings::{
    BreakerSettings, HarnessSettings, PoolSettings, RateLimitScope, RateLimitSettings,
    RetrySettings, DEFAULT_FAILBACK_AFTER, DEFAULT_IDLE_TIMEOUT, DEFAULT_PROBE_INTERVAL,
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT,
};

/// Which format's entry shape to expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `mcpServers` entries (Claude Desktop, Claude Code, Cursor).
    Claude,
    /// VS Code `servers` entries.
    VsCode,
    /// Codex `[mcp_servers.<name>]` tables.
    Codex,
}

/// The most servers one configuration file may list: 1,000. Every server is a process or a
/// connection of the client's; a file with more is refused instead of started.
pub const MAX_SERVERS: usize = 1000;

/// Reads the server entries (`name`, entry), in the given order, of the object at the keys
/// `servers_at` (`["mcpServers"]`, `["mcp", "servers"]`, `["mcp_servers"]`): refused as a
/// whole when there are more than [`MAX_SERVERS`].
pub(crate) fn read_servers<'n>(
    entries: &[(&'n String, &'n Node)],
    servers_at: &'n [&'n str],
    ctx: &Ctx<'n>,
    flavor: Flavor,
) -> Result<Vec<ServerConfig>, ConfigError> {
    if entries.len() > MAX_SERVERS {
        return Err(ctx.error(
            ConfigErrorKind::TooLarge,
            &servers_at.join("."),
            format!(
                "{} servers are listed; at most {MAX_SERVERS} are supported in one file",
                entries.len()
            ),
        ));
    }
    entries
        .iter()
        .map(|(name, entry)| read_server(name, entry, &ctx.for_server(servers_at, name), flavor))
        .collect()
}

/// Reads the entry `node` of server `name` (`ctx` already names the server).
pub(crate) fn read_server(
    name: &str,
    node: &Node,
    ctx: &Ctx<'_>,
    flavor: Flavor,
) -> Result<ServerConfig, ConfigError> {
    let obj = Obj::new(node, ctx, "", "an object describing the server")?;
    let endpoints = read_endpoints(&obj, ctx, flavor)?;
    // With `endpoints`, the transport's URL is the first endpoint's.
    let first_url = endpoints.first().map(|e| e.url.as_str());
    let transport = match flavor {
        Flavor::Claude | Flavor::VsCode => typed_transport(&obj, ctx, flavor, first_url)?,
        Flavor::Codex => codex_transport(&obj, ctx, first_url)?,
    };
    let mut server = ServerConfig::new(name, transport);
    server.endpoints = endpoints;
    read_extras(&obj, ctx, &mut server)?;
    validate(&server, ctx)?;
    obj.log_unknown(ctx);
    Ok(server)
}

/// Claude / Cursor / VS Code: `type` selects the transport; without it `command` means stdio and
/// `url` (or `endpoints`, whose first URL is `first_url`) means "detect when connecting".
fn typed_transport(
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
fn codex_transport(
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

/// The harness fields every format accepts.
fn read_extras(obj: &Obj<'_>, ctx: &Ctx<'_>, server: &mut ServerConfig) -> Result<(), ConfigError> {
    let enabled = obj.bool(ctx, "enabled")?.unwrap_or(true);
    let disabled = obj.bool(ctx, "disabled")?.unwrap_or(false);
    server.enabled = enabled && !disabled;
    server.enabled_tools = obj.string_list(ctx, "enabled_tools", false)?;
    server.disabled_tools = obj
        .string_list(ctx, "disabled_tools", false)?
        .unwrap_or_default();

    let startup_sec = obj.duration(ctx, "startup_timeout_sec", 1.0)?;
    let startup_ms = obj.duration(ctx, "startup_timeout_ms", 1000.0)?;
    if startup_sec.is_some() && startup_ms.is_some() {
        return Err(ctx.error(
            ConfigErrorKind::Invalid,
            "startup_timeout_ms",
            "expected one of startup_timeout_sec and startup_timeout_ms, found both",
        ));
    }
    server.startup_timeout = startup_sec
        .or(startup_ms)
        .unwrap_or(DEFAULT_STARTUP_TIMEOUT);
    server.tool_timeout = obj
        .duration(ctx, "tool_timeout_sec", 1.0)?
        .unwrap_or(DEFAULT_TOOL_TIMEOUT);

    server.settings = HarnessSettings {
        idle_timeout: obj
            .duration(ctx, "idle_timeout_sec", 1.0)?
            .unwrap_or(DEFAULT_IDLE_TIMEOUT),
        pool: read_pool(obj, ctx)?,
        retry: read_retry(obj, ctx)?,
        breaker: read_breaker(obj, ctx)?,
        rate_limit: read_rate_limit(obj, ctx)?,
        probe_interval: obj
            .duration(ctx, "probe_interval_sec", 1.0)?
            .unwrap_or(DEFAULT_PROBE_INTERVAL),
        failback_after: obj
            .duration(ctx, "failback_after_sec", 1.0)?
            .unwrap_or(DEFAULT_FAILBACK_AFTER),
    };
    server.oauth = read_oauth(obj, ctx)?;
    server.era = read_era(obj, ctx)?;
    Ok(())
}

/// `era` (or `protocolEra`): `"auto"` (the default: detected per server), `"legacy"`
/// (2025-11-25 and older, the `initialize` handshake) or `"modern"` (2026-07-28).
fn read_era(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<Option<mcp_core::Era>, ConfigError> {
    let key = if obj.has("protocolEra") {
        "protocolEra"
    } else {
        "era"
    };
    match obj.string(ctx, key)?.as_deref() {
        None | Some("auto") => Ok(None),
        Some("legacy") => Ok(Some(mcp_core::Era::Legacy)),
        Some("modern") => Ok(Some(mcp_core::Era::Modern)),
        Some(other) => Err(ctx.error(
            ConfigErrorKind::Invalid,
            key,
            format!("expected \"auto\", \"legacy\" (2025-11-25 and older) or \"modern\" (2026-07-28), found {other:?}"),
        )),
    }
}

/// `oauth: { … }` (snake_case or the camelCase other tools write), or `oauth: false`.
fn read_oauth(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<OAuthSettings, ConfigError> {
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
                                mcp_core::auth::redact_url(origin)
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

fn read_pool(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<PoolSettings, ConfigError> {
    let defaults = PoolSettings::default();
    let Some(pool) = obj.object(ctx, "pool")? else {
        return Ok(defaults);
    };
    let min = pool.u32(ctx, "min")?;
    let max = pool.u32(ctx, "max")?;
    pool.log_unknown(ctx);
    // A bound left out follows the one given, so `pool: { max: 1 }` means min 1, not an error.
    let (min, max) = match (min, max) {
        (Some(min), Some(max)) => (min, max),
        (Some(min), None) => (min, defaults.max.max(min)),
        (None, Some(max)) => (defaults.min.min(max), max),
        (None, None) => (defaults.min, defaults.max),
    };
    Ok(PoolSettings {
        min,
        max,
        configured: true,
    })
}

fn read_retry(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<RetrySettings, ConfigError> {
    let defaults = RetrySettings::default();
    let Some(retry) = obj.object(ctx, "retry")? else {
        return Ok(defaults);
    };
    let settings = RetrySettings {
        max_retries: retry
            .u32(ctx, "max_retries")?
            .unwrap_or(defaults.max_retries),
        max_wait: retry
            .duration(ctx, "max_wait_sec", 1.0)?
            .unwrap_or(defaults.max_wait),
        jitter: retry.number(ctx, "jitter")?.unwrap_or(defaults.jitter),
        configured: true,
    };
    retry.log_unknown(ctx);
    Ok(settings)
}

fn read_breaker(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<BreakerSettings, ConfigError> {
    let defaults = BreakerSettings::default();
    let Some(breaker) = obj.object(ctx, "breaker")? else {
        return Ok(defaults);
    };
    let settings = BreakerSettings {
        failure_threshold: breaker
            .u32(ctx, "failure_threshold")?
            .unwrap_or(defaults.failure_threshold),
        window: breaker
            .duration(ctx, "window_sec", 1.0)?
            .unwrap_or(defaults.window),
        cooldown: breaker
            .duration(ctx, "cooldown_sec", 1.0)?
            .unwrap_or(defaults.cooldown),
        half_open_max_requests: breaker
            .u32(ctx, "half_open_max_requests")?
            .unwrap_or(defaults.half_open_max_requests),
        per_tool: breaker.bool(ctx, "per_tool")?.unwrap_or(defaults.per_tool),
    };
    breaker.log_unknown(ctx);
    Ok(settings)
}

fn read_rate_limit(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<Option<RateLimitSettings>, ConfigError> {
    let Some(limit) = obj.object(ctx, "rate_limit")? else {
        return Ok(None);
    };
    // `per_second` is the fleet issue's spelling of `calls_per_sec`; either is read.
    let calls_per_sec =
        match (
            limit.u32(ctx, "calls_per_sec")?,
            limit.u32(ctx, "per_second")?,
        ) {
            (Some(_), Some(_)) => return Err(ctx.error(
                ConfigErrorKind::Invalid,
                "rate_limit.per_second",
                "expected one of `calls_per_sec` and `per_second` (two names for one setting), \
                 found both",
            )),
            (one, other) => one.or(other),
        };
    let calls_per_sec = calls_per_sec.ok_or_else(|| {
        ctx.error(
            ConfigErrorKind::Missing,
            "rate_limit.calls_per_sec",
            "a rate limit needs `calls_per_sec` (or `per_second`: a whole number ≥ 1), found none",
        )
    })?;
    let burst = limit.u32(ctx, "burst")?.unwrap_or(calls_per_sec);
    let wait = limit.bool(ctx, "wait")?.unwrap_or(true);
    let scope = match limit.string(ctx, "scope")?.as_deref() {
        None | Some("process") => RateLimitScope::Process,
        Some("fleet") => RateLimitScope::Fleet,
        Some(other) => {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                "rate_limit.scope",
                format!("expected \"process\" or \"fleet\", found {other:?}"),
            ))
        }
    };
    limit.log_unknown(ctx);
    Ok(Some(RateLimitSettings {
        calls_per_sec,
        burst,
        wait,
        scope,
    }))
}

fn validate(server: &ServerConfig, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
    match &server.transport {
        TransportConfig::Stdio { command, .. } => {
            if command.trim().is_empty() {
                return Err(ctx.error(
                    ConfigErrorKind::Invalid,
                    "command",
                    "expected the program to start, found an empty string",
                ));
            }
        }
        // The URL is the first endpoint's: checked (and named) as `endpoints[0].url` below.
        _ if !server.endpoints.is_empty() => check_endpoint_urls(server, ctx)?,
        TransportConfig::Http { url, .. } | TransportConfig::Sse { url, .. } => {
            check_url(url).map_err(|m| ctx.error(ConfigErrorKind::Invalid, "url", m))?;
        }
        TransportConfig::Url { url, .. } | TransportConfig::Remote { url, .. } => {
            check_any_url(url).map_err(|m| ctx.error(ConfigErrorKind::Invalid, "url", m))?;
        }
        TransportConfig::InProcess => {}
    }
    let oauth = &server.oauth;
    let is_stdio = matches!(server.transport, TransportConfig::Stdio { .. });
    if !is_stdio && (oauth.resource.is_some() || oauth.token_env.is_some()) {
        let field = if oauth.resource.is_some() {
            "oauth.resource"
        } else {
            "oauth.token_env"
        };
        return Err(ctx.error(
            ConfigErrorKind::Invalid,
            field,
            "only stdio servers take `resource` and `token_env` (a remote server is its own resource)",
        ));
    }
    match (&oauth.resource, &oauth.token_env) {
        (Some(resource), Some(_)) => {
            check_url(resource)
                .map_err(|m| ctx.error(ConfigErrorKind::Invalid, "oauth.resource", m))?;
        }
        (None, None) => {}
        (Some(_), None) => {
            return Err(ctx.error(
                ConfigErrorKind::Missing,
                "oauth.token_env",
                "`resource` needs `token_env`, the variable the token is passed to the server in",
            ))
        }
        (None, Some(_)) => {
            return Err(ctx.error(
                ConfigErrorKind::Missing,
                "oauth.resource",
                "`token_env` needs `resource`, the http(s) URL of the protected resource whose token the server needs",
            ))
        }
    }
    server
        .settings
        .validate()
        .map_err(|(field, message)| ctx.error(ConfigErrorKind::Invalid, field, message))
}

/// Accepts `http://host…` and `https://host…`. The message describes the problem without
/// repeating the URL (it may carry a token in its query).
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    check_url_with(
        url,
        &["http", "https"],
        "expected an http:// or https:// URL with a host",
    )
}

/// [`check_url`] for a transport chosen by its URL or `type`: any scheme of letters, digits,
/// `+`, `-` and `.` (`ws`, `wss`, `http`, …).
pub(crate) fn check_any_url(url: &str) -> Result<(), String> {
    check_url_with(
        url,
        &[],
        "expected a URL with a host (http://, https://, ws://, wss://, …)",
    )
}

/// A URL with one of `schemes` (any well-formed scheme when empty) and a host.
pub(crate) fn check_url_with(url: &str, schemes: &[&str], expected: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("{expected}, found text without a scheme"));
    };
    let well_formed = !scheme.is_empty()
        && scheme.len() <= 16
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let allowed = well_formed
        && (schemes.is_empty() || schemes.iter().any(|s| scheme.eq_ignore_ascii_case(s)));
    if !allowed {
        let shown = if well_formed {
            format!("a URL with scheme `{scheme}`")
        } else {
            "text without a valid scheme".to_owned()
        };
        return Err(format!("{expected}, found {shown}"));
    }
    if url.chars().any(char::is_whitespace) {
        return Err(format!("{expected}, found a URL containing whitespace"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    if host.is_empty() {
        return Err(format!("{expected}, found a URL without a host"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_url;

    #[test]
    fn urls() {
        for good in [
            "http://localhost",
            "https://example.com/mcp",
            "HTTPS://Example.com:8443/x?y=1#z",
            "http://user:pw@host:1/",
            "http://[::1]:8080/mcp",
        ] {
            assert!(check_url(good).is_ok(), "{good}");
        }
        for (bad, says) in [
            ("example.com/mcp", "without a scheme"),
            ("ftp://example.com", "scheme `ftp`"),
            ("http://", "without a host"),
            ("https:///path", "without a host"),
            ("http://:80/", "without a host"),
            ("http://exa mple.com", "whitespace"),
            ("ws://host/x", "scheme `ws`"),
        ] {
            let err = check_url(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(err.starts_with("expected an http:// or https:// URL"));
        }
        let err = check_url("https//host?token=sekrit").unwrap_err();
        assert!(!err.contains("sekrit"));
    }
}
