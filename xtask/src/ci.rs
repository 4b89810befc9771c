//! `cargo xtask ci`: the full CI pipeline, as a table of steps.
//!
//! Every step runs even when an earlier one failed (unless the failed step is
//! marked `fatal`), so the final summary shows the whole picture. The last
//! line printed is always `ci: N passed, N failed` with the test counts of the
//! main test step, for CI log readers.

use std::io::IsTerminal;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use crate::{interop, shell};

/// Context handed to every step.
pub struct Ctx<'a> {
    pub root: &'a Path,
}

impl Ctx<'_> {
    /// A `cargo` command in the workspace root.
    fn cargo(&self, args: &[&str]) -> Command {
        shell::command(shell::cargo(), args, self.root)
    }
}

/// Test counts parsed from a test runner's output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
}

/// What a step produced.
pub struct StepOutcome {
    pub ok: bool,
    /// Set by the step whose counts go into the final `ci:` line.
    pub counts: Option<Counts>,
    /// Short extra text for the summary table (e.g. "fallback: cargo test").
    pub note: String,
}

impl StepOutcome {
    fn from_ok(ok: bool) -> Self {
        StepOutcome {
            ok,
            counts: None,
            note: String::new(),
        }
    }
}

pub enum Action {
    /// Run `cargo <args>` with output streamed through.
    Cargo(&'static [&'static str]),
    /// Anything else.
    Custom(fn(&Ctx) -> StepOutcome),
}

pub struct Step {
    pub name: &'static str,
    pub action: Action,
    /// Export `MCP_INTEROP_DIR=<root>/.interop` to the step.
    pub interop_env: bool,
    /// Skip all later steps if this one fails.
    pub fatal: bool,
}

/// The pipeline. Add steps here (e.g. a conformance run, profile checks).
pub const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        action: Action::Custom(fmt),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "clippy",
        action: Action::Cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ]),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "deny",
        action: Action::Custom(deny),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "interop-setup",
        action: Action::Custom(interop_setup),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "profiles",
        action: Action::Custom(profiles),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "nextest",
        action: Action::Custom(tests),
        interop_env: true,
        fatal: false,
    },
    Step {
        name: "chaos",
        action: Action::Custom(chaos),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "conformance",
        action: Action::Custom(conformance),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "doctest",
        action: Action::Cargo(&["test", "--workspace", "--all-features", "--doc"]),
        interop_env: true,
        fatal: false,
    },
    Step {
        name: "doc",
        action: Action::Custom(docs),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "package",
        action: Action::Custom(package),
        interop_env: false,
        fatal: false,
    },
    // After every step that uses the debug build (tests, chaos, conformance, doc tests, docs).
    Step {
        name: "free-debug",
        action: Action::Custom(free_debug_build),
        interop_env: false,
        fatal: false,
    },
    // After free-debug, so its instrumented build (its own `fuzz/target/`, 3+ GB) never shares
    // the disk with the debug build; on CI it removes that build when done, before the release
    // build of the bench steps.
    Step {
        name: "fuzz",
        action: Action::Custom(fuzz_smoke),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "bench-build",
        action: Action::Cargo(&["bench", "--workspace", "--no-run"]),
        interop_env: false,
        fatal: false,
    },
    Step {
        name: "bench-quick",
        action: Action::Custom(bench_quick),
        interop_env: false,
        fatal: false,
    },
];

enum Status {
    Pass,
    Fail,
    Skipped,
}

struct Row {
    name: &'static str,
    status: Status,
    secs: f64,
    note: String,
}

pub fn run(root: &Path) -> ExitCode {
    if shell::on_ci() {
        // A CI run builds once from clean: incremental caches would only take disk (several
        // GiB across the feature sets the steps build). Not elsewhere: the setting is part of
        // the build's hash, so a developer's next build would start over.
        std::env::set_var("CARGO_INCREMENTAL", "0");
    }
    let ctx = Ctx { root };
    let interop_dir = interop::interop_dir(root);
    let mut rows = Vec::new();
    let mut counts = None;
    let mut abort = false;
    let total = Instant::now();

    for step in STEPS {
        if abort {
            rows.push(Row {
                name: step.name,
                status: Status::Skipped,
                secs: 0.0,
                note: String::new(),
            });
            continue;
        }
        eprintln!("\n==> ci step: {}", step.name);
        let start = Instant::now();
        let outcome = match &step.action {
            Action::Cargo(args) => {
                let mut cmd = ctx.cargo(args);
                if step.interop_env {
                    cmd.env("MCP_INTEROP_DIR", &interop_dir);
                }
                match shell::run(&mut cmd) {
                    Ok(s) => StepOutcome::from_ok(s.success()),
                    Err(e) => StepOutcome {
                        ok: false,
                        counts: None,
                        note: format!("could not start: {e}"),
                    },
                }
            }
            // Custom steps set `MCP_INTEROP_DIR` on their own commands.
            Action::Custom(f) => f(&ctx),
        };
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "==> ci step: {} {} in {:.1}s",
            step.name,
            if outcome.ok { "passed" } else { "FAILED" },
            secs
        );
        if outcome.counts.is_some() {
            counts = outcome.counts;
        }
        if !outcome.ok && step.fatal {
            abort = true;
        }
        rows.push(Row {
            name: step.name,
            status: if outcome.ok {
                Status::Pass
            } else {
                Status::Fail
            },
            secs,
            note: outcome.note,
        });
    }

    let failed_steps = rows
        .iter()
        .filter(|r| matches!(r.status, Status::Fail))
        .count();
    println!();
    println!("{:<16} {:<8} {:>9}  note", "step", "status", "seconds");
    println!("{}", "-".repeat(60));
    for r in &rows {
        let status = match r.status {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Skipped => "skipped",
        };
        println!("{:<16} {:<8} {:>9.1}  {}", r.name, status, r.secs, r.note);
    }
    println!("{}", "-".repeat(60));
    println!(
        "{:<16} {:<8} {:>9.1}  {} of {} steps failed",
        "total",
        if failed_steps == 0 { "pass" } else { "FAIL" },
        total.elapsed().as_secs_f64(),
        failed_steps,
        rows.len()
    );
    let c = counts.unwrap_or_default();
    println!(
        "tests: {} passed, {} failed, {} skipped",
        c.passed, c.failed, c.skipped
    );
    // Must stay the very last line (read by the CI log reader).
    println!("ci: {} passed, {} failed", c.passed, c.failed);
    if failed_steps == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn profiles(ctx: &Ctx) -> StepOutcome {
    let (ok, note) = crate::profiles::check(ctx.root);
    StepOutcome {
        ok,
        counts: None,
        note,
    }
}

/// `cargo xtask conformance`: both pinned official suites, client side against
/// `mcp-conformance-client` and server side against every server target (the fixture with
/// `--conformance-content`, and the gateway in front of it), each with its baselines in
/// `conformance/`.
fn conformance(ctx: &Ctx) -> StepOutcome {
    match crate::conformance::run(ctx.root, &crate::conformance::Selection::default()) {
        Ok(report) => StepOutcome {
            ok: report.code == Some(0),
            counts: None,
            note: report.summary,
        },
        Err(e) => {
            eprintln!("conformance: error: {e}");
            StepOutcome {
                ok: false,
                counts: None,
                note: e,
            }
        }
    }
}

/// The bounded chaos run (fixed seed, so a failure can be replayed with `cargo xtask chaos`).
fn chaos(ctx: &Ctx) -> StepOutcome {
    let seed = crate::chaos::CI_SEED;
    let iterations = crate::chaos::CI_ITERATIONS;
    match crate::chaos::soak(ctx.root, seed, iterations) {
        Ok(()) => StepOutcome {
            ok: true,
            counts: None,
            note: format!("seed {seed}, {iterations} iterations"),
        },
        Err(e) => StepOutcome {
            ok: false,
            counts: None,
            note: e,
        },
    }
}

fn interop_setup(ctx: &Ctx) -> StepOutcome {
    match interop::setup(ctx.root) {
        Ok(()) => StepOutcome::from_ok(true),
        Err(e) => {
            eprintln!("interop-setup: error: {e}");
            StepOutcome {
                ok: false,
                counts: None,
                note: "see log".into(),
            }
        }
    }
}

/// The API documentation builds without a warning (broken or private links included).
fn docs(ctx: &Ctx) -> StepOutcome {
    let mut cmd = ctx.cargo(&["doc", "--workspace", "--no-deps", "--all-features"]);
    cmd.env("RUSTDOCFLAGS", "-D warnings");
    eprintln!("$ RUSTDOCFLAGS=\"-D warnings\" {}", shell::display(&cmd));
    StepOutcome::from_ok(cmd.status().is_ok_and(|s| s.success()))
}

/// The crates meant for users: each must package for crates.io (`cargo install mcp-cli` works
/// from them). The others (`mcp-bench`, `mcp-conformance`, `mcp-transport-contract`, `xtask`)
/// are `publish = false`.
pub const PUBLISHED: &[&str] = &[
    "mcp-core",
    "mcp-wire",
    "mcp-session",
    "mcp-transport-stdio",
    "mcp-transport-http",
    "mcp-transport-ws",
    "mcp-transport-grpc",
    "mcp-transport-local",
    "mcp-resilience",
    "mcp-pool",
    "mcp-auth",
    "mcp-skills",
    "mcp-tasks",
    "mcp-resources",
    "mcp-metrics",
    "mcp-fleet",
    "mcp-client",
    "mcp-gateway",
    "mcp-fixture",
    "mcp-testkit",
    "mcp-cli",
];

/// `cargo package` of every published crate, offline and without the verifying build (the
/// workspace build and tests are that build): manifests complete, every dependency with a
/// version, every file the build needs inside its crate.
fn package(ctx: &Ctx) -> StepOutcome {
    let mut args = vec!["package", "--offline", "--no-verify", "--allow-dirty"];
    for name in PUBLISHED {
        args.extend(["-p", name]);
    }
    let mut cmd = ctx.cargo(&args);
    eprintln!("$ {}", shell::display(&cmd));
    let ok = cmd.status().is_ok_and(|s| s.success());
    StepOutcome {
        ok,
        counts: None,
        note: format!("{} crates", PUBLISHED.len()),
    }
}

/// On CI ([`shell::on_ci`]), removes the debug build once the steps that use it are
/// done, so the release build of the bench steps does not need the disk a second time: CI
/// machines' disks are small, and a clean clone rebuilds anyway. Elsewhere it keeps the build
/// (a developer's next `cargo test` would otherwise start from scratch).
fn free_debug_build(ctx: &Ctx) -> StepOutcome {
    if !shell::on_ci() {
        return StepOutcome {
            ok: true,
            counts: None,
            note: "kept (not on CI)".into(),
        };
    }
    let debug = shell::target_dir(ctx.root).join("debug");
    match std::fs::remove_dir_all(&debug) {
        Ok(()) => StepOutcome {
            ok: true,
            counts: None,
            note: format!("removed {}", debug.display()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => StepOutcome::from_ok(true),
        Err(e) => StepOutcome {
            ok: false,
            counts: None,
            note: format!("could not remove {}: {e}", debug.display()),
        },
    }
}

/// `cargo xtask deny`: licenses, bans and sources, offline.
fn deny(ctx: &Ctx) -> StepOutcome {
    match crate::deny::run(ctx.root, crate::deny::Checks::Offline) {
        Ok(()) => StepOutcome::from_ok(true),
        Err(e) => {
            eprintln!("deny: error: {e}");
            StepOutcome {
                ok: false,
                counts: None,
                note: e,
            }
        }
    }
}

/// The workspace and the fuzz crate (outside the workspace, so `--all` does not see it) are
/// formatted; the note names each that is not, with the command that formats it.
fn fmt(ctx: &Ctx) -> StepOutcome {
    let manifest = crate::fuzz::fuzz_dir(ctx.root).join("Cargo.toml");
    let manifest = manifest.to_string_lossy();
    let checks: [(&[&str], &str); 2] = [
        (
            &["fmt", "--all", "--", "--check"],
            "the workspace (cargo fmt --all)",
        ),
        (
            &["fmt", "--manifest-path", &manifest, "--", "--check"],
            "fuzz/ (cargo fmt --manifest-path fuzz/Cargo.toml)",
        ),
    ];
    let mut problems = Vec::new();
    for (args, what) in checks {
        match shell::run(&mut ctx.cargo(args)) {
            Ok(status) if status.success() => {}
            Ok(_) => problems.push(format!("not formatted: {what}")),
            Err(e) => problems.push(format!("could not run cargo fmt for {what}: {e}")),
        }
    }
    StepOutcome {
        ok: problems.is_empty(),
        counts: None,
        note: problems.join("; "),
    }
}

/// Every target of the fuzz crate runs [`crate::fuzz::CI_SECONDS`] from its seeds without a
/// crash (its formatting is checked by [`fmt`]).
/// On CI ([`shell::on_ci`]) the fuzz build output is removed afterwards, pass or fail (the logs
/// stay): the bench steps' release build needs the disk.
fn fuzz_smoke(ctx: &Ctx) -> StepOutcome {
    let seconds = crate::fuzz::CI_SECONDS;
    let mut outcome = match crate::fuzz::run(ctx.root, seconds, None) {
        Ok(run) => {
            let failed: Vec<&str> = run
                .reports
                .iter()
                .filter(|r| !r.ok)
                .map(|r| r.target.as_str())
                .collect();
            let execs: u64 = run.reports.iter().filter_map(|r| r.execs).sum();
            let mut note = format!(
                "built in {:.0} s, ran {:.0} s: {} targets × {seconds} s, {execs} execs",
                run.build_time.as_secs_f64(),
                run.run_time.as_secs_f64(),
                run.reports.len()
            );
            if !failed.is_empty() {
                note.push_str(&format!("; FAILED: {}", failed.join(", ")));
            }
            StepOutcome {
                ok: failed.is_empty(),
                counts: None,
                note,
            }
        }
        Err(e) => {
            eprintln!("fuzz: error: {e}");
            StepOutcome {
                ok: false,
                counts: None,
                note: e,
            }
        }
    };
    if shell::on_ci() {
        match crate::fuzz::remove_build_output(ctx.root) {
            Ok(freed) => outcome.note.push_str(&format!(
                "; removed fuzz/target ({:.1} GB, logs kept)",
                freed as f64 / 1e9
            )),
            Err(e) => {
                eprintln!("fuzz: error: {e}");
                outcome.ok = false;
                outcome.note.push_str(&format!("; {e}"));
            }
        }
    }
    outcome
}

/// `cargo xtask bench --quick --pin same`: keeps the harness working, never asserts on speed.
fn bench_quick(ctx: &Ctx) -> StepOutcome {
    match crate::bench::ci_quick(ctx.root) {
        Ok(()) => StepOutcome::from_ok(true),
        Err(e) => {
            eprintln!("bench-quick: error: {e}");
            StepOutcome {
                ok: false,
                counts: None,
                note: e,
            }
        }
    }
}

fn has_nextest(ctx: &Ctx) -> bool {
    ctx.cargo(&["nextest", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The main test step: nextest, or `cargo test` when nextest is missing.
fn tests(ctx: &Ctx) -> StepOutcome {
    let nextest = has_nextest(ctx);
    let mut cmd = if nextest {
        // The chaos test runs in its own step, alone on the machine: its deadlines are real.
        ctx.cargo(&[
            "nextest",
            "run",
            "--workspace",
            "--all-features",
            "--no-fail-fast",
            "-E",
            "not binary(chaos)",
        ])
    } else {
        eprintln!("cargo-nextest not found; falling back to `cargo test`");
        ctx.cargo(&[
            "test",
            "--workspace",
            "--all-features",
            "--no-fail-fast",
            "--",
            "--skip",
            "chaos_keeps_deadlines",
        ])
    };
    cmd.env("MCP_INTEROP_DIR", interop::interop_dir(ctx.root));
    // Output is piped through us for parsing; keep colours for humans.
    if std::io::stderr().is_terminal() && std::env::var_os("CARGO_TERM_COLOR").is_none() {
        cmd.env("CARGO_TERM_COLOR", "always");
    }
    let (status, output) = match shell::run_capture(&mut cmd) {
        Ok(r) => r,
        Err(e) => {
            return StepOutcome {
                ok: false,
                counts: None,
                note: format!("could not start: {e}"),
            }
        }
    };
    let counts = if nextest {
        parse_nextest(&output)
    } else {
        parse_cargo_test(&output)
    };
    let mut note = String::new();
    if !nextest {
        note.push_str("fallback: cargo test; ");
    }
    match counts {
        Some(c) => note.push_str(&format!(
            "{} passed, {} failed, {} skipped",
            c.passed, c.failed, c.skipped
        )),
        None => note.push_str("no test summary found"),
    }
    StepOutcome {
        ok: status.success(),
        counts: Some(counts.unwrap_or_default()),
        note,
    }
}

/// Parse nextest's final line, e.g.
/// `Summary [   1.234s] 12 tests run: 11 passed (1 slow), 1 failed, 2 skipped`.
fn parse_nextest(output: &str) -> Option<Counts> {
    let line = output.lines().rev().find(|l| {
        let t = l.trim_start();
        t.starts_with("Summary [") && (t.contains(" run:") || t.contains("tests run"))
    })?;
    let rest = &line[line.find(" run:")? + " run:".len()..];
    // Drop parenthesised details like "(1 slow, 2 flaky)".
    let mut flat = String::new();
    let mut depth = 0u32;
    for c in rest.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => flat.push(c),
            _ => {}
        }
    }
    let mut counts = Counts::default();
    for part in flat.split(',') {
        let part = part.trim();
        let Some((num, word)) = part.split_once(' ') else {
            continue;
        };
        let Ok(n) = num.parse::<u64>() else { continue };
        let word = word.trim();
        if word == "passed" {
            counts.passed += n;
        } else if word.ends_with("failed") || word == "timed out" {
            counts.failed += n;
        } else if word == "skipped" {
            counts.skipped += n;
        }
    }
    Some(counts)
}

/// Sum libtest's `test result: ok. N passed; N failed; N ignored; ...` lines.
fn parse_cargo_test(output: &str) -> Option<Counts> {
    let mut counts = Counts::default();
    let mut found = false;
    for line in output.lines() {
        let Some(idx) = line.find("test result:") else {
            continue;
        };
        found = true;
        for part in line[idx..].split(';') {
            let words: Vec<&str> = part.split_whitespace().collect();
            let n = words
                .iter()
                .rev()
                .nth(1)
                .and_then(|w| w.parse::<u64>().ok());
            match (n, words.last()) {
                (Some(n), Some(&"passed")) => counts.passed += n,
                (Some(n), Some(&"failed")) => counts.failed += n,
                (Some(n), Some(&"ignored")) => counts.skipped += n,
                _ => {}
            }
        }
    }
    found.then_some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position(name: &str) -> usize {
        STEPS
            .iter()
            .position(|s| s.name == name)
            .unwrap_or_else(|| panic!("no step {name}"))
    }

    #[test]
    fn the_fuzz_build_never_shares_the_disk_with_the_debug_build() {
        // free-debug after every step that builds or uses the debug build...
        for debug_user in [
            "clippy",
            "nextest",
            "chaos",
            "conformance",
            "doctest",
            "doc",
        ] {
            assert!(
                position(debug_user) < position("free-debug"),
                "{debug_user}"
            );
        }
        // ...then the fuzz step, whose build output is gone before the release build.
        assert!(position("free-debug") < position("fuzz"));
        assert!(position("fuzz") < position("bench-build"));
    }

    #[test]
    fn nextest_summary_all_pass() {
        let out = "        PASS [   0.003s] x::y\n────────────\n     Summary [   0.012s] 3 tests run: 3 passed, 1 skipped\n";
        assert_eq!(
            parse_nextest(out),
            Some(Counts {
                passed: 3,
                failed: 0,
                skipped: 1
            })
        );
    }

    #[test]
    fn nextest_summary_with_failures_and_details() {
        let out = "     Summary [  10.5s] 12 tests run: 9 passed (1 slow, 1 flaky), 2 failed, 1 timed out, 0 skipped\n";
        assert_eq!(
            parse_nextest(out),
            Some(Counts {
                passed: 9,
                failed: 3,
                skipped: 0
            })
        );
    }

    #[test]
    fn nextest_single_test_and_missing_summary() {
        let out = "     Summary [   0.001s] 1 test run: 1 passed, 0 skipped\n";
        assert_eq!(
            parse_nextest(out),
            Some(Counts {
                passed: 1,
                failed: 0,
                skipped: 0
            })
        );
        assert_eq!(parse_nextest("error: could not compile\n"), None);
    }

    #[test]
    fn cargo_test_summaries_are_summed() {
        let out = "test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\
                   test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n";
        assert_eq!(
            parse_cargo_test(out),
            Some(Counts {
                passed: 3,
                failed: 1,
                skipped: 1
            })
        );
    }
}
