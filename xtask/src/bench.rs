//! `cargo xtask bench [--quick] [DRIVER ARGS...]`: builds the benchmark binaries (and `mcph`)
//! in release mode, installs `mcp-proxy` into `.interop/mcp-proxy/` unless it is there
//! already, and runs the `mcp-bench` driver, which prints the markdown report and writes
//! `target/bench/report.md` and `report.json`.
//!
//! The driver compares our client (the bare session, and the facade with its full default stack:
//! what a harness gets), `rmcp` and a raw pipe floor against the fixture server; `report.json`
//! carries `stack_overhead` (stack/bare, stack/rmcp, stack/floor per transport, pin, scenario and
//! metric). `--quick` is a short run that CI executes to keep the harness working (it never
//! asserts on speed). Other arguments (`--pin same|split|both`, `--out DIR`, `--repeats N`) go to the
//! driver unchanged.
//!
//! A full run (not `--quick`) then runs the transports the driver has no peer for — in-process,
//! WebSocket, gRPC — through their crates' criterion benches, each against its own floor
//! measured in the same run (a direct call; a raw tokio-tungstenite echo; a raw tonic bidi
//! echo), and appends their rows to the report; then the facade's own costs (the discovery
//! cache's lookup and model tool list, the metrics layer per call, routing across endpoints:
//! the decision and what it adds per call).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::shell;

/// `cargo build --release` of every benchmark binary: the driver, the clients, the fixture
/// and, `with_gateway`, `mcph` (the gateway the driver compares).
pub fn build(root: &Path, with_gateway: bool) -> Result<(), String> {
    let mut args = vec!["build", "--release", "-p", "mcp-bench", "-p", "mcp-testkit"];
    if with_gateway {
        args.extend(["-p", "mcp-cli"]);
    }
    args.push("--bins");
    let mut cmd = shell::command(shell::cargo(), &args, root);
    match shell::run(&mut cmd) {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the release build failed ({s})")),
        Err(e) => Err(format!("could not start cargo: {e}")),
    }
}

/// The `mcp-proxy` release the gateway comparison measures `mcph serve` against: a tower-based
/// Rust MCP gateway from crates.io. Bump it here and the next `cargo xtask bench` reinstalls it.
pub const MCP_PROXY_VERSION: &str = "0.6.0";

/// Where mcp-proxy is installed (`cargo install --root`), in the git-ignored `.interop/`.
pub fn mcp_proxy_root(root: &Path) -> PathBuf {
    root.join(".interop").join("mcp-proxy")
}

/// Its executable.
pub fn mcp_proxy_bin(root: &Path) -> PathBuf {
    mcp_proxy_root(root).join("bin").join("mcp-proxy")
}

const STAMP: &str = ".xtask-stamp";

fn mcp_proxy_stamp() -> String {
    format!("mcp-proxy@{MCP_PROXY_VERSION}\n")
}

/// Installs mcp-proxy [`MCP_PROXY_VERSION`] with `cargo install --locked --root
/// .interop/mcp-proxy` (a few minutes: it builds from source in a temporary directory that
/// cargo removes afterwards), unless the stamp matches and the binary is there; a stale
/// install is wiped first. Returns the status word.
pub fn ensure_mcp_proxy(root: &Path) -> Result<&'static str, String> {
    let dir = mcp_proxy_root(root);
    let stamp = dir.join(STAMP);
    let binary = mcp_proxy_bin(root);
    if fs::read_to_string(&stamp).ok().as_deref() == Some(mcp_proxy_stamp().as_str())
        && binary.is_file()
    {
        return Ok("up to date");
    }
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("removing stale {}: {e}", dir.display()))?;
    }
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let install_root = dir.to_string_lossy().into_owned();
    let mut cmd = shell::command(
        shell::cargo(),
        &[
            "install",
            "mcp-proxy",
            "--version",
            MCP_PROXY_VERSION,
            "--locked",
            "--root",
            &install_root,
        ],
        &dir,
    );
    // A temporary target directory, removed when the install ends: the workspace's stays small.
    cmd.env_remove("CARGO_TARGET_DIR");
    match shell::run(&mut cmd) {
        Ok(s) if s.success() => {}
        Ok(s) => return Err(format!("`cargo install mcp-proxy` failed ({s})")),
        Err(e) => return Err(format!("could not start cargo: {e}")),
    }
    if !binary.is_file() {
        return Err(format!(
            "install finished but {} is missing",
            binary.display()
        ));
    }
    let tmp = stamp.with_extension("tmp");
    fs::write(&tmp, mcp_proxy_stamp())
        .and_then(|()| fs::rename(&tmp, &stamp))
        .map_err(|e| format!("writing {}: {e}", stamp.display()))?;
    Ok("installed")
}

/// Builds, then runs the driver with `args`, its output streamed through.
pub fn run_driver(root: &Path, args: &[&str], with_gateway: bool) -> Result<(), String> {
    build(root, with_gateway)?;
    let driver = shell::target_dir(root).join("release").join("mcp-bench");
    let mut cmd = shell::command(&driver, args, root);
    match shell::run(&mut cmd) {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("mcp-bench exited with {s}")),
        Err(e) => Err(format!("could not start {}: {e}", driver.display())),
    }
}

/// The transports `mcp-bench` does not drive, as (crate, criterion bench, features): each
/// bench prints one `<bench>: <row> …` line per row, its floor first.
const TRANSPORT_BENCHES: [(&str, &str, &str); 3] = [
    ("mcp-transport-local", "local_call", ""),
    ("mcp-transport-ws", "ws_call", ""),
    ("mcp-transport-grpc", "grpc_call", ""),
];

/// The facade's own costs, as (crate, criterion bench, features): the discovery cache (a tool
/// lookup, building the model's tool list for 1,000 tools), the metrics layer per call, and
/// routing across endpoints (the decision; a call to a server with three endpoints against
/// one with a single URL), and a fleet rate limit's decision on Redis against the local one.
const FACADE_BENCHES: [(&str, &str, &str); 4] = [
    ("mcp-client", "discovery", ""),
    ("mcp-metrics", "layer_call", ""),
    ("mcp-client", "routing", "enterprise"),
    ("mcp-fleet", "fleet_rate_limit", ""),
];

/// Runs each bench's summary (a criterion filter that matches no benchmark skips the
/// criterion group) and returns its lines.
fn bench_rows(root: &Path, benches: &[(&str, &str, &str)]) -> Result<Vec<String>, String> {
    let mut rows = Vec::new();
    for &(package, bench, features) in benches {
        let mut args = vec!["bench", "-p", package, "--bench", bench];
        if !features.is_empty() {
            args.extend(["--features", features]);
        }
        args.extend(["--", "summary-only"]);
        let mut cmd = shell::command(shell::cargo(), &args, root);
        let (status, output) = shell::run_capture(&mut cmd)
            .map_err(|e| format!("could not start cargo bench for {package}: {e}"))?;
        if !status.success() {
            return Err(format!(
                "cargo bench -p {package} --bench {bench} failed ({status})"
            ));
        }
        let prefix = format!("{bench}: ");
        let before = rows.len();
        rows.extend(
            output
                .lines()
                .filter_map(|line| line.strip_prefix(&prefix))
                .map(|row| format!("{bench}: {row}")),
        );
        if rows.len() == before {
            return Err(format!("{bench} printed no summary rows"));
        }
    }
    Ok(rows)
}

/// Appends the transport rows and the facade's rows to the driver's report.
fn append_rows(report: &Path, rows: &[String], facade: &[String]) -> Result<(), String> {
    let mut text = std::fs::read_to_string(report)
        .map_err(|e| format!("cannot read {}: {e}", report.display()))?;
    text.push_str(
        "\n## In-process, WebSocket and gRPC\n\n\
         Criterion benches of the transport crates, each against a floor measured in the same \
         run on one thread: a direct call of the tool's function (`local_call`), a raw \
         tokio-tungstenite echo of the same bytes (`ws_call`), a raw tonic bidi-stream echo \
         (`grpc_call`). Medians of 5 loops; rmcp has none of these transports.\n\n",
    );
    for row in rows {
        text.push_str(&format!("- {row}\n"));
    }
    text.push_str(
        "\n## Discovery cache and metrics\n\n\
         The facade's own costs: a tool lookup in the catalog on a cache hit and building the \
         model's tool list for 1,000 tools (`discovery`, mcp-client), the metrics layer per \
         call over a no-op service (`layer_call`, mcp-metrics), and routing across endpoints \
         (`routing`, mcp-client: the decision, and a full-stack call to an in-process server with \
         three endpoints against one with a single URL, alternated in the same loops), and one \
         decision of a fleet-wide rate limit (`fleet_rate_limit`, mcp-fleet: a GCRA script on a \
         loopback redis-server against governor in the process). Targets: < 100 ns per lookup, \
         per layer call and added by routing per call.\n\n",
    );
    for row in facade {
        text.push_str(&format!("- {row}\n"));
    }
    std::fs::write(report, text).map_err(|e| format!("cannot write {}: {e}", report.display()))
}

/// `cargo xtask bench ...`.
pub fn run(root: &Path, args: &[String]) -> ExitCode {
    let quick = args.iter().any(|a| a == "--quick");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .map(|dir| root.join(dir))
        .unwrap_or_else(|| shell::target_dir(root).join("bench"));
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .is_some();
    let mut args: Vec<String> = args.to_vec();
    if !args.iter().any(|a| a == "--mcp-proxy") {
        // Without it the gateway comparison shows mcp-proxy as n/a, with a note.
        match ensure_mcp_proxy(root) {
            Ok(status) => {
                println!("bench: mcp-proxy {MCP_PROXY_VERSION}: {status}");
                args.push("--mcp-proxy".to_owned());
                args.push(mcp_proxy_bin(root).to_string_lossy().into_owned());
            }
            Err(e) => eprintln!("bench: warning: mcp-proxy {MCP_PROXY_VERSION}: {e}"),
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = run_driver(root, &args, true).and_then(|()| {
        if quick || only {
            return Ok(());
        }
        let rows = bench_rows(root, &TRANSPORT_BENCHES)?;
        let facade = bench_rows(root, &FACADE_BENCHES)?;
        for row in rows.iter().chain(&facade) {
            println!("{row}");
        }
        append_rows(&out.join("report.md"), &rows, &facade)
    });
    match outcome {
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
    let out = shell::target_dir(root).join("bench");
    let report = out.join("report.md");
    let _ = std::fs::remove_file(&report);
    let out_arg = out.to_string_lossy().into_owned();
    // Without `mcph`: its release build would take CI minutes, and the gateway rows (shown
    // n/a) are measured by `cargo xtask bench`.
    run_driver(
        root,
        &["--quick", "--pin", "same", "--out", &out_arg],
        false,
    )?;
    if report.is_file() {
        Ok(())
    } else {
        Err(format!("{} was not written", report.display()))
    }
}
