//! Which configuration a command runs with: `--config PATH`, a default file found, or the
//! embedded default (one stdio server, `fixture`, that runs this executable as the fixture MCP
//! server).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_client::config::{self, ClientConfig, ServerConfig, TransportConfig};

use crate::errors::CliError;

/// The hidden subcommand that turns `mcph` into the fixture MCP server.
pub const FIXTURE_SUBCOMMAND: &str = "__fixture-server";

/// The name of the built-in server.
pub const EMBEDDED_SERVER: &str = "fixture";

/// Where the configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--config PATH`.
    Explicit(PathBuf),
    /// The first default file that exists, loaded by [`config::load_default`].
    DefaultFile(PathBuf),
    /// Nothing found: the built-in fixture server.
    Embedded,
}

/// Resolves the configuration: `--config` (must exist), else the default file found from `cwd`, else the
/// embedded default.
pub fn resolve(explicit: Option<&Path>, cwd: &Path) -> Result<(ClientConfig, Source), CliError> {
    if let Some(path) = explicit {
        let config = config::load(path)?;
        return Ok((config, Source::Explicit(path.to_path_buf())));
    }
    if let Some(config) = config::load_default(cwd)? {
        let path = config.source.clone().unwrap_or_default();
        return Ok((config, Source::DefaultFile(path)));
    }
    let exe = std::env::current_exe().map_err(|e| {
        CliError::Other(format!(
            "cannot find the mcph executable for the built-in server: {e}"
        ))
    })?;
    Ok((embedded_default(&exe), Source::Embedded))
}

/// The built-in configuration: one stdio server `fixture` running
/// `<exe> __fixture-server --era dual` (it speaks 2026-07-28, with the Tasks extension, and the
/// 2025 era to older clients).
pub fn embedded_default(exe: &Path) -> ClientConfig {
    let transport = TransportConfig::Stdio {
        command: exe.to_string_lossy().into_owned(),
        args: vec![
            FIXTURE_SUBCOMMAND.to_owned(),
            "--era".to_owned(),
            "dual".to_owned(),
        ],
        env: BTreeMap::new(),
        cwd: None,
    };
    ClientConfig {
        servers: vec![ServerConfig::new(EMBEDDED_SERVER, transport)],
        source: None,
        region: None,
        store: None,
    }
}

/// Runs the fixture MCP server on stdin/stdout (mcp-fixture's stdio server), as the
/// `mcp-fixture-server` binary of `mcp-testkit` does without `--http` or `--ws` (same flags,
/// same start-up fault handling; those two are refused). Returns the exit code.
pub fn run_fixture_server(args: Vec<String>) -> i32 {
    mcp_fixture::run::run(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_runs_this_executable_as_the_fixture() {
        let config = embedded_default(Path::new("/bin/mcph"));
        assert_eq!(config.servers.len(), 1);
        let server = &config.servers[0];
        assert_eq!(server.name, "fixture");
        assert!(server.enabled);
        match &server.transport {
            TransportConfig::Stdio { command, args, .. } => {
                assert_eq!(command, "/bin/mcph");
                assert_eq!(args, &["__fixture-server", "--era", "dual"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_explicit_file_is_a_config_error() {
        let err = resolve(Some(Path::new("/nonexistent/mcph.json")), Path::new("/")).unwrap_err();
        assert_eq!(err.exit_code(), crate::errors::EXIT_CONFIG);
        assert!(err.message().contains("/nonexistent/mcph.json"));
    }
}
