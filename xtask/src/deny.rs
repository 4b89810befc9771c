//! `cargo xtask deny [--advisories]`: the supply-chain check with cargo-deny and the root
//! `deny.toml`. By default licenses, bans (banned and duplicate crates) and sources, offline
//! (what CI runs); `--advisories` checks the RustSec advisories instead, which fetches the
//! advisory database and so needs the network.

use std::path::Path;

use crate::shell;
use crate::tools::{self, Tool};

/// The pinned cargo-deny.
pub const CARGO_DENY: Tool = Tool {
    name: "cargo-deny",
    version: "0.20.2",
};

/// Which checks to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checks {
    /// Licenses, bans and sources; offline.
    Offline,
    /// RustSec advisories (fetches the database).
    Advisories,
}

/// Installs cargo-deny if needed and runs the checks; `Err` names what failed.
pub fn run(root: &Path, checks: Checks) -> Result<(), String> {
    tools::ensure(root, &CARGO_DENY)?;
    let args: &[&str] = match checks {
        Checks::Offline => &[
            "deny",
            "--offline",
            "--locked",
            "check",
            "licenses",
            "bans",
            "sources",
        ],
        Checks::Advisories => &["deny", "--locked", "check", "advisories"],
    };
    let mut cmd = shell::command(shell::cargo(), args, root);
    cmd.env("PATH", tools::path_with_tools(root));
    let status = shell::run(&mut cmd).map_err(|e| format!("could not run cargo deny: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "cargo deny check failed ({status}); see the report above"
        ))
    }
}
