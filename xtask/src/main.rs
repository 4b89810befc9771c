//! Project automation, following the cargo-xtask pattern.
//!
//! Run through the alias in `.cargo/config.toml`: `cargo xtask <command>`.
//! Arguments are parsed by hand to keep this crate dependency-free.

mod bench;
mod chaos;
mod chromium;
mod ci;
mod conformance;
mod deny;
mod fuzz;
mod interop;
#[cfg(test)]
mod layering;
mod profiles;
mod redis_server;
mod secret_service;
mod shell;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
Usage: cargo xtask <command>

Commands:
  ci               Run every CI step (fmt, clippy, the supply-chain check,
                   interop-setup, profile checks, nextest, a bounded chaos
                   run, conformance, doc tests, fuzz smoke runs, bench build,
                   quick bench run),
                   print a summary, and exit non-zero if any step failed.
                   This is what `.ci/run` executes.
  bench [--quick] [--pin same|split|both] [--out DIR] [--repeats N]
        [--only gateway] [--mcp-proxy PATH]
                   Build the benchmark binaries and mcph (release), install
                   mcp-proxy 0.6.0 into .interop/mcp-proxy (once), and run
                   `mcp-bench`: ours (bare session and full stack) vs rmcp vs
                   a raw pipe floor against the fixture server, then the
                   fixture direct vs through `mcph serve` vs through
                   mcp-proxy, pinned with taskset. Prints a markdown table and
                   writes target/bench/report.md and report.json. --quick: a
                   short run that only checks the harness (CI runs it);
                   --only gateway: the gateway comparison alone.
  chaos [--seed S] [--iterations N]
                   The chaos soak (mcp-client/tests/chaos.rs): 16 callers against
                   real servers that are killed, frozen, cut off, answer 503
                   bursts and forget sessions. Default 200 iterations and a
                   seed from the clock (printed for replay); the report goes to
                   target/chaos/report.json. CI runs seed 7, 24 iterations.
  conformance [--side client|server] [--suite VERSION] [--target NAME]
              [--scenario S [--spec-version V]]
                   Run the official MCP conformance suites
                   (@modelcontextprotocol/conformance 0.1.16 and 0.2.0-alpha.12):
                   installs Node 22 + each suite into
                   `<workspace>/.interop/conformance-<version>/` (idempotent).
                   Client side: builds `mcp-conformance-client`, runs 0.1.16
                   `--suite all`, 0.2 `--suite all` and `--requirements
                   2026-07-28`. Server side: builds each server target (today
                   `fixture`: mcp-fixture-server --conformance-content --era
                   dual), starts it on a free loopback port per run and runs
                   0.1.16 `--suite all`, 0.2 `--suite active` and
                   `--requirements 2026-07-28` against it, then stops it.
                   --side runs one side only; --target one server target;
                   --scenario one scenario on one suite (client side unless
                   --side server). Baselines in conformance/, results in
                   target/conformance/, per-scenario check counts printed.
                   Exits with the suites' code.
  deny [--advisories]
                   Supply chain: cargo-deny (installed, pinned, into
                   `<workspace>/.tools/`) checks licenses, banned and duplicate
                   crates and sources against deny.toml, offline (CI runs it).
                   --advisories: the RustSec advisories instead (needs the
                   network to fetch the advisory database).
  fuzz [--seconds N] [TARGET]
                   Build the fuzz targets of fuzz/ with cargo-fuzz (libFuzzer,
                   no sanitizer; installed, pinned, into `<workspace>/.tools/`)
                   and run each (or TARGET) for N seconds (default 60) from its
                   seeds in fuzz/corpus/<target>/. Prints executions and
                   coverage per target; fails on a crash, naming the saved
                   input. CI runs every target for 5 s.
  interop-setup    Install the pinned third-party MCP servers used by the
                   interop tests into `<workspace>/.interop/`, and the Debian
                   packages of the Secret Service tests (gnome-keyring,
                   dbus-daemon), the fleet tests (redis-server) and the
                   operations panel's browser test (chromium) with apt-get
                   (idempotent).
  help             Show this message.

Environment:
  MCP_INTEROP_DIR  Set by `ci` for the test steps to `<workspace>/.interop`.
  PYTHON           Interpreter used to create the interop venv (default: python3).
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    match args.first().map(String::as_str) {
        None | Some("help" | "-h" | "--help") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some("ci") if args.len() == 1 => ci::run(&root),
        Some("bench") => bench::run(&root, &args[1..]),
        Some("chaos") => chaos::run(&root, &args[1..]),
        Some("conformance") => {
            let mut selection = conformance::Selection::default();
            let mut rest = args[1..].iter();
            while let Some(flag) = rest.next() {
                let value = rest.next().map(String::as_str);
                match (flag.as_str(), value) {
                    ("--suite", Some(v)) => selection.suite = Some(v),
                    ("--scenario", Some(v)) => selection.scenario = Some(v),
                    ("--spec-version", Some(v)) => selection.spec_version = Some(v),
                    ("--target", Some(v)) => selection.target = Some(v),
                    ("--side", Some(v)) if conformance::Side::parse(v).is_some() => {
                        selection.side = conformance::Side::parse(v);
                    }
                    _ => {
                        eprintln!("xtask: usage: cargo xtask conformance [--side client|server] [--suite VERSION] [--target NAME] [--scenario S [--spec-version V]]");
                        return ExitCode::from(2);
                    }
                }
            }
            if selection.spec_version.is_some() && selection.scenario.is_none() {
                eprintln!("xtask: --spec-version needs --scenario");
                return ExitCode::from(2);
            }
            match conformance::run(&root, &selection) {
                Ok(report) => match report.code {
                    Some(0) => ExitCode::SUCCESS,
                    Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1).max(1)),
                    None => ExitCode::FAILURE,
                },
                Err(e) => {
                    eprintln!("conformance: error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("deny") => {
            let checks = match &args[1..] {
                [] => deny::Checks::Offline,
                [flag] if flag == "--advisories" => deny::Checks::Advisories,
                _ => {
                    eprintln!("xtask: usage: cargo xtask deny [--advisories]");
                    return ExitCode::from(2);
                }
            };
            match deny::run(&root, checks) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("deny: error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("fuzz") => {
            let mut seconds = fuzz::DEFAULT_SECONDS;
            let mut target = None;
            let mut rest = args[1..].iter();
            while let Some(arg) = rest.next() {
                match (arg.as_str(), target) {
                    ("--seconds", _) => match rest.next().and_then(|v| v.parse().ok()) {
                        Some(n) if n > 0 => seconds = n,
                        _ => {
                            eprintln!("xtask: --seconds needs a positive number of seconds");
                            return ExitCode::from(2);
                        }
                    },
                    (name, None) if !name.starts_with('-') => target = Some(name),
                    _ => {
                        eprintln!("xtask: usage: cargo xtask fuzz [--seconds N] [TARGET]");
                        return ExitCode::from(2);
                    }
                }
            }
            match fuzz::run(&root, seconds, target) {
                Ok(run) if run.ok() => ExitCode::SUCCESS,
                Ok(_) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("fuzz: error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("interop-setup") if args.len() == 1 => match interop::setup(&root) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("interop-setup: error: {e}");
                ExitCode::FAILURE
            }
        },
        Some(_) => {
            eprintln!("xtask: unknown command or arguments: {}\n", args.join(" "));
            eprint!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The workspace root: the parent of this crate's manifest directory.
fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
