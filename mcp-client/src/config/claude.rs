//! Claude Desktop (`claude_desktop_config.json`), Claude Code (`.mcp.json`) and Cursor
//! (`.cursor/mcp.json`): `{"mcpServers": {"<name>": {...}}}`.
//!
//! An entry is stdio (`command`, `args`, `env`, optional `cwd`, optional `type: "stdio"`) or remote
//! (`type: "http"` / `"streamable-http"` / `"streamableHttp"` / `"sse"` with `url` and `headers`; a
//! `url` without `type` is detected when connecting). Instead of `url`, a remote entry may list
//! `endpoints` (`[{ "url", "region", "headers" }]`: the same server at several addresses); the
//! top-level `"region"` is the client's own. `"disabled": true` turns a server off.
//! String values expand `${VAR}` and `${VAR:-default}`; `envFile` (Cursor) is an error. Fields of
//! other tools (`autoApprove`, …) are ignored and logged at debug.

use std::path::Path;

use super::endpoints::read_region;
use super::entry::{read_servers, Flavor};
use super::error::{ConfigError, ConfigErrorKind};
use super::expand::EnvLookup;
use super::fields::{Ctx, Obj, Vars};
use super::locate::Locator;
use super::model::ClientConfig;
use super::node::{parse_json, Node};
use super::store::read_store;

/// Parses a Claude Desktop / Claude Code / Cursor file, expanding variables from the process
/// environment.
pub fn parse_claude(text: &str, source: &Path) -> Result<ClientConfig, ConfigError> {
    parse_claude_with_env(text, source, &super::process_env)
}

/// [`parse_claude`] reading variables through `env`.
pub fn parse_claude_with_env(
    text: &str,
    source: &Path,
    env: EnvLookup<'_>,
) -> Result<ClientConfig, ConfigError> {
    from_node(&parse_json(text, source)?, text, source, env)
}

/// Reads the tree `node` parsed from `text`.
pub(crate) fn from_node(
    node: &Node,
    text: &str,
    source: &Path,
    env: EnvLookup<'_>,
) -> Result<ClientConfig, ConfigError> {
    let vars = Vars::Shell;
    let locator = Locator::json(text);
    let ctx = Ctx {
        file: source,
        locator: &locator,
        servers_at: &[],
        server: None,
        env,
        vars: &vars,
    };
    let top = Obj::new(node, &ctx, "", "an object with `mcpServers`")?;
    let Some(servers) = top.object(&ctx, "mcpServers")? else {
        return Err(ctx.error(
            ConfigErrorKind::Missing,
            "mcpServers",
            "expected a top-level `mcpServers` object, found none",
        ));
    };
    let mut config = ClientConfig {
        servers: Vec::new(),
        source: Some(source.to_path_buf()),
        region: read_region(&top, &ctx)?,
        store: read_store(&top, &ctx)?,
    };
    let entries: Vec<_> = servers.entries().iter().map(|(n, e)| (n, e)).collect();
    config.servers = read_servers(&entries, &["mcpServers"], &ctx, Flavor::Claude)?;
    Ok(config)
}
