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

/// The error when cargo-deny could not be installed: the check itself runs offline, but the
/// first run in a fresh clone installs the pinned cargo-deny from crates.io into `.tools/`.
fn not_installed(cause: &str) -> String {
    format!(
        "cargo-deny {version} is not installed and could not be: {cause}. The check runs \
         offline, but a fresh clone needs crates.io once to install cargo-deny {version} into \
         .tools/ (`cargo install cargo-deny --version ={version} --locked --root .tools`)",
        version = CARGO_DENY.version
    )
}

/// Installs cargo-deny if needed and runs the checks; `Err` names what failed.
pub fn run(root: &Path, checks: Checks) -> Result<(), String> {
    tools::ensure(root, &CARGO_DENY).map_err(|e| not_installed(&e))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_install_says_crates_io_is_needed_once() {
        let message = not_installed("`cargo install cargo-deny --version =0.20.2` failed");
        assert!(message.contains("fresh clone needs crates.io"), "{message}");
        assert!(message.contains(CARGO_DENY.version), "{message}");
        assert!(message.contains("`cargo install cargo-deny"), "{message}");
    }
}
