//! Finding the `mcp-fixture-server` binary from another crate's tests, benches and examples.
//!
//! Cargo only hands `CARGO_BIN_EXE_*` to the package that owns a binary, so other crates look
//! for it next to their own executable (`target/<profile>/`), and build it once if it is not
//! there yet (e.g. `cargo test -p mcp-transport-stdio` on a fresh checkout).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The fixture server binary's file name.
pub const FIXTURE_SERVER_BIN: &str = "mcp-fixture-server";
/// The raw pipe echo used as a benchmark floor.
pub const PIPE_PONG_BIN: &str = "mcp-pipe-pong";

/// Path of the `mcp-fixture-server` binary of this workspace's current build profile, building
/// it first when it is missing. Panics with the build's output if it cannot be built (this is
/// test support: a missing fixture is a broken test environment, not a test result).
pub fn fixture_server_bin() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| testkit_bin(FIXTURE_SERVER_BIN)).clone()
}

/// Path of the `mcp-pipe-pong` binary (the benchmarks' raw pipe floor), built when missing.
pub fn pipe_pong_bin() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| testkit_bin(PIPE_PONG_BIN)).clone()
}

fn testkit_bin(name: &str) -> PathBuf {
    let profile_dir = profile_dir();
    let candidate = profile_dir.join(name);
    if !candidate.is_file() {
        build_bin(&profile_dir, name);
    }
    assert!(
        candidate.is_file(),
        "{} was not found after building it",
        candidate.display()
    );
    candidate
}

/// `target/<profile>` of the running executable (tests live in `target/<profile>/deps`,
/// examples in `target/<profile>/examples`, benches in `deps`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the current executable has a path");
    let mut dir = exe
        .parent()
        .expect("executables live in a directory")
        .to_path_buf();
    if matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some("deps" | "examples")
    ) {
        dir.pop();
    }
    dir
}

fn build_bin(profile_dir: &Path, name: &str) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet", "-p", "mcp-testkit", "--bin", name]);
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            command.arg("--release");
        }
        Some(other) => {
            command.args(["--profile", other]);
        }
    }
    if let Some(target_dir) = profile_dir.parent() {
        command.arg("--target-dir").arg(target_dir);
    }
    let output = command
        .output()
        .expect("cargo can be run to build the fixture server");
    assert!(
        output.status.success(),
        "building {name} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
