//! `cargo xtask bench [--quick] [DRIVER ARGS...]`: builds the benchmark binaries in release
//! mode and runs the `mcp-bench` driver, which prints the markdown report and writes
//! `target/bench/report.md` and `report.json`.
//!
//! The driver compares our client, `rmcp` and a raw pipe floor against the fixture server;
//! `--quick` is a short run that CI executes to keep the harness working (it never asserts on
//! speed). Other arguments (`--pin same|split|both`, `--out DIR`, `--repeats N`) go to the
//! driver unchanged.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::shell;

/// `cargo build --release` of every benchmark binary: the driver, the clients and the fixture.
pub fn build(root: &Path) -> Result<(), String> {
    let mut cmd = shell::command(
        shell::cargo(),
        &[
            "build",
            "--release",
            "-p",
            "mcp-bench",
            "-p",
            "mcp-testkit",
            "--bins",
        ],
        root,
    );
    match shell::run(&mut cmd) {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the release build failed ({s})")),
        Err(e) => Err(format!("could not start cargo: {e}")),
    }
}

/// The cargo target directory (`CARGO_TARGET_DIR`, else `<root>/target`).
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

/// Builds, then runs the driver with `args`, its output streamed through.
pub fn run_driver(root: &Path, args: &[&str]) -> Result<(), String> {
    build(root)?;
    let driver = target_dir(root).join("release").join("mcp-bench");
    let mut cmd = shell::command(&driver, args, root);
    match shell::run(&mut cmd) {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("mcp-bench exited with {s}")),
        Err(e) => Err(format!("could not start {}: {e}", driver.display())),
    }
}

/// `cargo xtask bench ...`.
pub fn run(root: &Path, args: &[String]) -> ExitCode {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match run_driver(root, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The CI step: the quick run on one core, into `target/bench`; passes when the driver exits 0
/// and the report exists. Never looks at the figures.
pub fn ci_quick(root: &Path) -> Result<(), String> {
    let out = target_dir(root).join("bench");
    let report = out.join("report.md");
    let _ = std::fs::remove_file(&report);
    let out_arg = out.to_string_lossy().into_owned();
    run_driver(root, &["--quick", "--pin", "same", "--out", &out_arg])?;
    if report.is_file() {
        Ok(())
    } else {
        Err(format!("{} was not written", report.display()))
    }
}
