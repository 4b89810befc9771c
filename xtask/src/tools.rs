//! Cargo subcommands the tasks need (`cargo-fuzz`, `cargo-deny`), installed from crates.io at a
//! pinned version into the git-ignored `<workspace>/.tools/` (idempotent: skipped when the
//! installed binary reports the pinned version).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::shell;

/// A cargo subcommand installed with `cargo install`.
pub struct Tool {
    /// The crate, and the binary it installs.
    pub name: &'static str,
    /// The pinned version.
    pub version: &'static str,
}

/// Where tools are installed: `cargo install --root` of this folder puts them in `bin/`.
pub fn tools_dir(root: &Path) -> PathBuf {
    root.join(".tools")
}

/// `PATH` with `<workspace>/.tools/bin` first, so that `cargo fuzz` / `cargo deny` find the
/// pinned tools.
pub fn path_with_tools(root: &Path) -> OsString {
    let bin = tools_dir(root).join("bin");
    let mut paths = vec![bin];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(paths).unwrap_or_default()
}

/// Installs `tool` unless the pinned version is already there.
pub fn ensure(root: &Path, tool: &Tool) -> Result<(), String> {
    let binary = tools_dir(root).join("bin").join(tool.name);
    if installed_version(&binary).as_deref() == Some(tool.version) {
        return Ok(());
    }
    let version = format!("={}", tool.version);
    let dir = tools_dir(root);
    let dir = dir.to_string_lossy();
    let mut cmd = shell::command(
        shell::cargo(),
        &[
            "install",
            tool.name,
            "--version",
            &version,
            "--locked",
            "--root",
            &dir,
        ],
        root,
    );
    let status = shell::run(&mut cmd)
        .map_err(|e| format!("could not run `cargo install {}`: {e}", tool.name))?;
    if !status.success() {
        return Err(format!(
            "`cargo install {} --version {version}` failed ({status})",
            tool.name
        ));
    }
    match installed_version(&binary) {
        Some(v) if v == tool.version => Ok(()),
        other => Err(format!(
            "installed {} but {} reports version {other:?}, not {}",
            tool.name,
            binary.display(),
            tool.version
        )),
    }
}

/// The version a cargo subcommand binary prints (`cargo-fuzz 0.13.2` → `0.13.2`).
fn installed_version(binary: &Path) -> Option<String> {
    // Cargo subcommands take their own name first (`cargo-deny deny --version`).
    let name = binary.file_name()?.to_str()?.strip_prefix("cargo-")?;
    let output = std::process::Command::new(binary)
        .args([name, "--version"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    text.split_whitespace().nth(1).map(str::to_owned)
}
