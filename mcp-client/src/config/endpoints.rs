//! Servers reached at several addresses: an entry's `endpoints` list (`[{ url, region, headers }]`)
//! and the client's own `region` they are compared with.
//!
//! Reading is the same in every format; which URLs an endpoint may have depends on the entry's
//! transport, so [`check_endpoint_urls`] runs once the transport is known.

use super::entry::{check_any_url, check_url, Flavor};
use super::error::{ConfigError, ConfigErrorKind};
use super::fields::{Ctx, Obj};
use super::model::{EndpointConfig, ServerConfig, TransportConfig};
use super::node::Node;

/// The entry's `endpoints`, in file order (empty when it has none). Refuses `endpoints` beside
/// `url` or `command`, a value that is not a non-empty array of endpoint objects, an endpoint
/// without `url`, a `region` that is not a non-empty string, and two endpoints with one URL.
pub(crate) fn read_endpoints(
    obj: &Obj<'_>,
    ctx: &Ctx<'_>,
    flavor: Flavor,
) -> Result<Vec<EndpointConfig>, ConfigError> {
    if !obj.has("endpoints") {
        return Ok(Vec::new());
    }
    let field = obj.path("endpoints");
    if obj.has("url") {
        return Err(ctx.error(
            ConfigErrorKind::Invalid,
            &field,
            "expected either `url` or `endpoints`, found both",
        ));
    }
    if obj.has("command") {
        return Err(ctx.error(
            ConfigErrorKind::Invalid,
            &field,
            "expected either `command` (a stdio server) or `endpoints` (the addresses of a remote \
             server), found both",
        ));
    }
    let items = match obj.get("endpoints") {
        Some(Node::Array(items)) => items,
        Some(other) => {
            return Err(ctx.wrong_type(
                &field,
                "an array of endpoints ({ url, region, headers })",
                other,
            ))
        }
        None => return Ok(Vec::new()),
    };
    if items.is_empty() {
        return Err(ctx.error(
            ConfigErrorKind::Invalid,
            &field,
            "expected at least one endpoint ({ url, region, headers }), found an empty array",
        ));
    }
    let mut endpoints: Vec<EndpointConfig> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("{field}[{i}]");
        let endpoint = read_endpoint(item, ctx, &path, flavor)?;
        // The message names the other endpoint, never the URL (its query may hold a token).
        if let Some(first) = endpoints.iter().position(|e| e.url == endpoint.url) {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                &format!("{path}.url"),
                format!("expected a URL no other endpoint has, found the URL of {field}[{first}]"),
            ));
        }
        endpoints.push(endpoint);
    }
    Ok(endpoints)
}

/// One element of `endpoints`, at field path `path` (`endpoints[2]`).
fn read_endpoint(
    node: &Node,
    ctx: &Ctx<'_>,
    path: &str,
    flavor: Flavor,
) -> Result<EndpointConfig, ConfigError> {
    let expected = "an endpoint object ({ url, region, headers })";
    let obj = Obj::new(node, ctx, path, expected)?;
    let url = obj.expanded(ctx, "url")?.ok_or_else(|| {
        ctx.error(
            ConfigErrorKind::Missing,
            &obj.path("url"),
            "an endpoint needs `url` (an http://, https://, ws:// or wss:// address), found none",
        )
    })?;
    let region = read_region(&obj, ctx)?;
    let mut headers = obj.string_map(ctx, "headers", true)?.unwrap_or_default();
    // Codex names a server's headers `http_headers`; its endpoints take either name.
    if flavor == Flavor::Codex {
        let http_headers = obj.string_map(ctx, "http_headers", true)?;
        headers.extend(http_headers.unwrap_or_default());
    }
    obj.log_unknown(ctx);
    Ok(EndpointConfig {
        url,
        region,
        headers,
    })
}

/// `region` of `obj` (an endpoint, or the file's top level for the client's own region):
/// a non-empty string, variables expanded.
pub(crate) fn read_region(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<Option<String>, ConfigError> {
    let path = obj.path("region");
    match obj.get("region") {
        None => Ok(None),
        Some(Node::Str(text)) => {
            let region = ctx.expand(&path, text)?;
            if region.trim().is_empty() {
                return Err(ctx.error(
                    ConfigErrorKind::Invalid,
                    &path,
                    "expected a region name (such as \"eu-west\"), found an empty string",
                ));
            }
            Ok(Some(region))
        }
        Some(other) => Err(ctx.wrong_type(&path, "a region name (a non-empty string)", other)),
    }
}

/// Checks every endpoint's URL the way the transport's own `url` is checked: http(s) only for
/// Streamable HTTP and SSE, any scheme for a transport picked by `type` or by the URL.
pub(crate) fn check_endpoint_urls(server: &ServerConfig, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
    let check: fn(&str) -> Result<(), String> = match server.transport {
        TransportConfig::Http { .. } | TransportConfig::Sse { .. } => check_url,
        TransportConfig::Url { .. } | TransportConfig::Remote { .. } => check_any_url,
        // Refused when the entry was read; nothing to check.
        TransportConfig::Stdio { .. } | TransportConfig::InProcess => return Ok(()),
    };
    for (i, endpoint) in server.endpoints.iter().enumerate() {
        check(&endpoint.url).map_err(|message| {
            ctx.error(
                ConfigErrorKind::Invalid,
                &format!("endpoints[{i}].url"),
                message,
            )
        })?;
    }
    Ok(())
}
