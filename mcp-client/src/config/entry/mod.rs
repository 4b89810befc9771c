//! Reading one server entry: the transport fields of each format (`transport.rs`), then the
//! harness extras shared by all formats (`extras.rs`, `oauth.rs`), then validation
//! (`validate.rs`).

mod extras;
mod oauth;
mod transport;
mod validate;

use super::endpoints::read_endpoints;
use super::error::{ConfigError, ConfigErrorKind};
use super::fields::{Ctx, Obj};
use super::model::ServerConfig;
use super::node::Node;
use extras::read_extras;
use transport::{codex_transport, typed_transport};
use validate::validate;
pub(crate) use validate::{check_any_url, check_url, check_url_with};

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
