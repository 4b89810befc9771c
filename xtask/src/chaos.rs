//! `cargo xtask chaos`: the chaos test (`mcp-client/tests/chaos.rs`) with a chosen seed and
//! length, its report written to `target/chaos/report.json`. CI runs a bounded one.

use std::path::Path;
use std::process::ExitCode;

use crate::{interop, shell};

/// The bounded run of CI: a fixed seed, so a failure can be replayed.
pub const CI_SEED: u64 = 7;
/// Fault iterations of the CI run (about a minute of faults).
pub const CI_ITERATIONS: u64 = 24;

/// `cargo xtask chaos [--seed S] [--iterations N]`: a soak (default 200 iterations, a seed
/// from the clock, printed so the run can be replayed).
pub fn run(root: &Path, args: &[String]) -> ExitCode {
    let mut seed = None;
    let mut iterations = 200;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let value = rest.next().and_then(|v| v.parse::<u64>().ok());
        match (arg.as_str(), value) {
            ("--seed", Some(v)) => seed = Some(v),
            ("--iterations", Some(v)) if v > 0 => iterations = v,
            _ => {
                eprintln!("xtask: usage: cargo xtask chaos [--seed S] [--iterations N]");
                return ExitCode::from(2);
            }
        }
    }
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
    });
    match soak(root, seed, iterations) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chaos: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the chaos test once; fails when it does.
pub fn soak(root: &Path, seed: u64, iterations: u64) -> Result<(), String> {
    interop::setup(root)?;
    let report = shell::target_dir(root).join("chaos/report.json");
    if let Some(dir) = report.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    // A report left by an earlier run must not pass for this one's.
    let _ = std::fs::remove_file(&report);
    eprintln!("chaos: seed {seed}, {iterations} iterations (replay: cargo xtask chaos --seed {seed} --iterations {iterations})");
    let mut cmd = shell::command(
        shell::cargo(),
        // The workspace's all-features build, as the test step has it: nothing is rebuilt.
        &[
            "test",
            "--workspace",
            "--all-features",
            "--test",
            "chaos",
            "--",
            "--nocapture",
        ],
        root,
    );
    cmd.env("MCP_CHAOS_SEED", seed.to_string())
        .env("MCP_CHAOS_ITERATIONS", iterations.to_string())
        .env("MCP_CHAOS_REPORT", &report)
        .env("MCP_INTEROP_DIR", interop::interop_dir(root));
    let status = shell::run(&mut cmd).map_err(|e| format!("could not start cargo: {e}"))?;
    if let Ok(text) = std::fs::read_to_string(&report) {
        println!("{text}");
        eprintln!("chaos: report in {}", report.display());
    }
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the chaos run failed (seed {seed}, {iterations} iterations)"
        ))
    }
}
