//! Codex (`~/.codex/config.toml`): `[mcp_servers.<name>]` tables.
//!
//! Stdio: `command`, `args`, `env` (table), `env_vars` (names passed through from the harness's
//! environment), `cwd`. Remote (Streamable HTTP): `url`, `http_headers`, `env_http_headers`
//! (header → variable; unset ones skipped), `bearer_token_env_var` (→ `Authorization: Bearer …`,
//! read at load; unset is an error). Instead of `url`, `endpoints` lists the same server at several
//! addresses: `[{ url, region, headers }]` inline or as `[[mcp_servers.<name>.endpoints]]` tables
//! (an endpoint's headers may also be called `http_headers`). Both: `startup_timeout_sec` /
//! `startup_timeout_ms`, `tool_timeout_sec`, `enabled`, `enabled_tools`, `disabled_tools`, plus
//! the harness extras.
//! String values expand `${VAR}` and `${VAR:-default}`. A top-level `region = "…"` is the
//! client's own; other top-level keys (`model`, …) are ignored.

use std::path::Path;

use super::endpoints::read_region;
use super::entry::{read_servers, Flavor};
use super::error::ConfigError;
use super::expand::EnvLookup;
use super::fields::{Ctx, Obj, Vars};
use super::locate::Locator;
use super::model::ClientConfig;
use super::node::{parse_toml, toml_server_order};
use super::store::read_store;

/// Parses a Codex `config.toml`, expanding variables from the process environment.
pub fn parse_codex(text: &str, source: &Path) -> Result<ClientConfig, ConfigError> {
    parse_codex_with_env(text, source, &super::process_env)
}

/// [`parse_codex`] reading variables through `env`.
pub fn parse_codex_with_env(
    text: &str,
    source: &Path,
    env: EnvLookup<'_>,
) -> Result<ClientConfig, ConfigError> {
    let node = parse_toml(text, source)?;
    let vars = Vars::Shell;
    let locator = Locator::toml(text);
    let ctx = Ctx {
        file: source,
        locator: &locator,
        servers_at: &[],
        server: None,
        env,
        vars: &vars,
    };
    let top = Obj::new(&node, &ctx, "", "a TOML table")?;
    let mut config = ClientConfig {
        servers: Vec::new(),
        source: Some(source.to_path_buf()),
        region: read_region(&top, &ctx)?,
        store: read_store(&top, &ctx)?,
    };
    let Some(servers) = top.object(&ctx, "mcp_servers")? else {
        return Ok(config);
    };
    // TOML tables come back sorted by name; restore the file's order.
    let order = toml_server_order(text);
    let mut entries: Vec<_> = servers.entries().iter().map(|(n, e)| (n, e)).collect();
    entries.sort_by_key(|(name, _)| order.iter().position(|n| n == *name).unwrap_or(usize::MAX));
    config.servers = read_servers(&entries, &["mcp_servers"], &ctx, Flavor::Codex)?;
    Ok(config)
}
