//! VS Code: `.vscode/mcp.json` (`{"servers": {...}, "inputs": [...]}`) and user settings
//! (`{"mcp": {"servers": {...}}}`). Files may carry comments and trailing commas.
//!
//! Entries: `type` (`stdio` / `http` / `sse`), `command`, `args`, `env`, `cwd`, `url`, `headers`,
//! or instead of `url` `endpoints` (`[{ "url", "region", "headers" }]`, the same server at several
//! addresses), plus the harness extras. `"region"` next to `servers` (`mcp.region` in a settings
//! file) is the client's own. Variables: `${workspaceFolder}` (the parent of the `.vscode` folder
//! holding the file, else the file's folder), `${workspaceFolderBasename}`, `${userHome}`,
//! `${env:VAR}` (an unset variable is an error), `${pathSeparator}`. `${input:...}` needs an
//! interactive prompt and `envFile` is not supported: both are clear errors.

use std::path::{Path, PathBuf};

use super::endpoints::read_region;
use super::entry::{read_servers, Flavor};
use super::error::{ConfigError, ConfigErrorKind};
use super::expand::{EnvLookup, VsCodeVars};
use super::fields::{Ctx, Obj, Vars};
use super::locate::Locator;
use super::model::ClientConfig;
use super::node::{parse_json, Node};
use super::store::read_store;

/// Parses a VS Code `mcp.json` (or a settings file with `mcp.servers`), reading `${env:VAR}` from
/// the process environment.
pub fn parse_vscode(text: &str, source: &Path) -> Result<ClientConfig, ConfigError> {
    parse_vscode_with_env(text, source, &super::process_env)
}

/// [`parse_vscode`] reading variables through `env`.
pub fn parse_vscode_with_env(
    text: &str,
    source: &Path,
    env: EnvLookup<'_>,
) -> Result<ClientConfig, ConfigError> {
    from_node(&parse_json(text, source)?, text, source, env)
}

/// The folder `${workspaceFolder}` stands for.
pub(crate) fn workspace_folder(source: &Path) -> PathBuf {
    let absolute = std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf());
    let dir = absolute.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.file_name().is_some_and(|n| n == ".vscode") {
        dir.parent().map(Path::to_path_buf).unwrap_or(dir)
    } else {
        dir
    }
}

/// Reads the tree `node` parsed from `text`.
pub(crate) fn from_node(
    node: &Node,
    text: &str,
    source: &Path,
    env: EnvLookup<'_>,
) -> Result<ClientConfig, ConfigError> {
    let vars = Vars::VsCode(VsCodeVars {
        workspace_folder: workspace_folder(source),
    });
    let locator = Locator::json(text);
    let ctx = Ctx {
        file: source,
        locator: &locator,
        servers_at: &[],
        server: None,
        env,
        vars: &vars,
    };
    let top = Obj::new(node, &ctx, "", "an object with `servers`")?;
    // The client's region sits next to the servers: top level, or `mcp.region` in a settings file.
    let (servers, servers_at, region, store): (_, &[&str], _, _) =
        match top.object(&ctx, "servers")? {
            Some(servers) => (
                servers,
                &["servers"],
                read_region(&top, &ctx)?,
                read_store(&top, &ctx)?,
            ),
            None => match top.object(&ctx, "mcp")? {
                Some(mcp) => match mcp.object(&ctx, "servers")? {
                    Some(servers) => (
                        servers,
                        &["mcp", "servers"],
                        read_region(&mcp, &ctx)?,
                        read_store(&mcp, &ctx)?,
                    ),
                    None => return Err(missing_servers(&ctx)),
                },
                None => return Err(missing_servers(&ctx)),
            },
        };
    let mut config = ClientConfig {
        servers: Vec::new(),
        source: Some(source.to_path_buf()),
        region,
        store,
    };
    let entries: Vec<_> = servers.entries().iter().map(|(n, e)| (n, e)).collect();
    config.servers = read_servers(&entries, servers_at, &ctx, Flavor::VsCode)?;
    Ok(config)
}

fn missing_servers(ctx: &Ctx<'_>) -> ConfigError {
    ctx.error(
        ConfigErrorKind::Missing,
        "servers",
        "expected a top-level `servers` object (or `mcp.servers` in a settings file), found none",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_folder_is_the_parent_of_dot_vscode() {
        assert_eq!(
            workspace_folder(Path::new("/ws/proj/.vscode/mcp.json")),
            PathBuf::from("/ws/proj")
        );
        assert_eq!(
            workspace_folder(Path::new("/ws/proj/mcp.json")),
            PathBuf::from("/ws/proj")
        );
        assert!(workspace_folder(Path::new("mcp.json")).is_absolute());
    }
}
