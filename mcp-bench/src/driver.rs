//! `mcp-bench`, the driver: runs every client binary on every scenario and pin mode, and writes
//! the report.
//!
//! ```text
//! mcp-bench [--quick] [--pin same|split|both] [--out DIR] [--repeats N] [--only gateway]
//!           [--mcp-proxy PATH]
//! ```
//!
//! It builds nothing: the client binaries (`bench-client-ours`, `-stack`, `-rmcp`, `-floor`)
//! and `mcp-fixture-server` must sit next to its own executable (`cargo xtask bench` builds
//! them all in release mode). A missing `bench-client-stack` or `bench-client-rmcp` is reported
//! as `n/a`, with a note; a missing `ours`, `floor` or fixture server is an error.
//!
//! Pinning: each client runs under `taskset -c 0` and is given the server command
//! `taskset -c <0|1> mcp-fixture-server`. Without a working `taskset` everything runs unpinned
//! and the report says so.
//!
//! Clients run interleaved — ours, stack, rmcp, floor for one scenario and repeat, then the
//! next — so that drift hits all of them alike. A full run repeats each measurement 3 times and
//! reports each metric's median over the repeats; `--quick` runs everything once with few
//! calls, to check the harness (its figures mean little). The call stack's overhead (the bare
//! session `ours` against the full stack `stack`) is read off the same medians, so every
//! scenario of every transport has it and nothing is measured twice.
//!
//! Then the gateway comparison ([`crate::gateway`]): `bench-client-ours` calling the fixture
//! directly, through `mcph serve` and through `mcp-proxy`, every route interleaved in each
//! repeat. It needs `mcph` next to the driver (`cargo xtask bench` builds it) and finds
//! `mcp-proxy` at `--mcp-proxy PATH` or at `.interop/mcp-proxy/bin/mcp-proxy` in a directory
//! above the driver (`cargo xtask bench` installs it there); a missing one is `n/a`, with a
//! note. `--only gateway` runs this comparison alone.
//!
//! Output: the markdown report on stdout and in `DIR/report.md`; in `DIR/report.json` the
//! header, every raw measurement (`runs`), the stack's overhead per (transport, pin, scenario,
//! metric) from the medians (`stack_overhead`, see [`StackOverhead`]), the gateway comparison
//! (`gateway`, see [`GatewaySection`]) and the notes; `DIR`
//! defaults to `target/bench` (the `target` directory holding the driver). Progress goes to
//! stderr. Exit status 1 when any run of an existing client failed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::args::Transport;
use crate::gateway::{self, GatewayCell, GatewaySection, Route};
use crate::measure::Measurement;
use crate::report::{self, Cell, Client, Pin, Report, Scenario, TRANSPORTS};
use crate::stack_overhead::{stack_overhead, StackOverhead};

/// Which pin modes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinChoice {
    /// `same` only.
    Same,
    /// `split` only.
    Split,
    /// Both, `same` first.
    Both,
}

/// Which part of the benchmark to run alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Only {
    /// The gateway comparison ([`crate::gateway`]) and nothing else.
    Gateway,
}

/// The driver's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Few calls, one repeat.
    pub quick: bool,
    /// Pin modes.
    pub pin: PinChoice,
    /// Output directory (default: `target/bench`).
    pub out: Option<PathBuf>,
    /// Repeats per measurement (default 3, or 1 with `--quick`).
    pub repeats: Option<usize>,
    /// Run only this part (`--only gateway`); everything when `None`.
    pub only: Option<Only>,
    /// The `mcp-proxy` executable (default: `.interop/mcp-proxy/bin/mcp-proxy` above the
    /// driver).
    pub mcp_proxy: Option<PathBuf>,
}

/// Usage text.
pub const USAGE: &str = "usage: mcp-bench [--quick] [--pin same|split|both] [--out DIR] \
     [--repeats N] [--only gateway] [--mcp-proxy PATH]";

impl Options {
    /// Parses the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut options = Options {
            quick: false,
            pin: PinChoice::Both,
            out: None,
            repeats: None,
            only: None,
            mcp_proxy: None,
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--quick" => options.quick = true,
                "--pin" => {
                    options.pin = match value()?.as_str() {
                        "same" => PinChoice::Same,
                        "split" => PinChoice::Split,
                        "both" => PinChoice::Both,
                        other => return Err(format!("--pin: unknown mode {other}")),
                    }
                }
                "--out" => options.out = Some(PathBuf::from(value()?)),
                "--repeats" => {
                    let v = value()?;
                    let n = v
                        .parse::<usize>()
                        .map_err(|_| format!("--repeats: not a number: {v}"))?;
                    options.repeats = Some(n.max(1));
                }
                "--only" => {
                    options.only = match value()?.as_str() {
                        "gateway" => Some(Only::Gateway),
                        other => return Err(format!("--only: unknown part {other}")),
                    }
                }
                "--mcp-proxy" => options.mcp_proxy = Some(PathBuf::from(value()?)),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(options)
    }

    fn repeats(&self) -> usize {
        self.repeats.unwrap_or(if self.quick { 1 } else { 3 })
    }
}

/// One client run, as kept in `report.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// stdio or http.
    pub transport: Transport,
    /// Pin mode.
    pub pin: Pin,
    /// Scenario label.
    pub scenario: String,
    /// Client name.
    pub client: String,
    /// In the gateway comparison: how the client reached the fixture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<Route>,
    /// 0-based repeat.
    pub repeat: usize,
    /// Wall time of the whole client process (start, handshake, warm-up, measurement), s.
    pub wall_secs: f64,
    /// What the client printed, when it succeeded.
    pub measurement: Option<Measurement>,
    /// Why it failed.
    pub error: Option<String>,
}

/// `report.json`.
#[derive(Serialize)]
struct JsonReport<'a> {
    header: Vec<(&'a str, &'a str)>,
    quick: bool,
    repeats: usize,
    /// One entry per (transport, pin, scenario, metric), from the medians.
    stack_overhead: &'a [StackOverhead],
    /// The gateway comparison, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    gateway: Option<&'a GatewaySection>,
    runs: &'a [Run],
    notes: &'a [String],
}

/// The text of `report.json`.
fn json_report(
    report: &Report,
    quick: bool,
    repeats: usize,
    runs: &[Run],
    gateway: Option<&GatewaySection>,
) -> Result<String, String> {
    let json = JsonReport {
        header: report
            .header
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        quick,
        repeats,
        stack_overhead: &stack_overhead(&report.cells),
        gateway,
        runs,
        notes: &report.notes,
    };
    serde_json::to_string_pretty(&json).map_err(|e| format!("report.json: {e}"))
}

/// The longest a client run may take before it is killed.
fn timeout(quick: bool) -> Duration {
    Duration::from_secs(if quick { 60 } else { 300 })
}

/// Runs one client process and parses its JSON line.
fn run_client(mut command: Command, limit: Duration) -> Result<Measurement, String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| format!("cannot start: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let err_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        let err = err_reader.join().unwrap_or_default();
        let _ = tx.send(());
        (out, err)
    });
    if rx.recv_timeout(limit).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("timed out after {}s", limit.as_secs()));
    }
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    let (out, err) = reader
        .join()
        .map_err(|_| "reader thread panicked".to_owned())?;
    if !status.success() {
        let err = err.trim();
        return Err(format!(
            "{status}{}{err}",
            if err.is_empty() { "" } else { ": " }
        ));
    }
    let line = out.lines().rev().find(|l| l.trim_start().starts_with('{'));
    let line = line.ok_or_else(|| format!("no JSON line in its output: {out:?}"))?;
    serde_json::from_str(line).map_err(|e| format!("bad JSON line {line:?}: {e}"))
}

/// Which of the clients' binaries (in [`Client::ALL`] order) exist; an optional one that does
/// not gets a note (its column shows `n/a`), a required one is an error.
fn present_clients(paths: &[PathBuf; 4], notes: &mut Vec<String>) -> Result<[bool; 4], String> {
    let present = paths.each_ref().map(|p| p.is_file());
    for ((client, path), &present) in Client::ALL.iter().zip(paths).zip(&present) {
        match (present, client.optional()) {
            (true, _) => {}
            (false, true) => notes.push(format!(
                "{}: n/a — {} is not built (`cargo build --release -p mcp-bench --bins`)",
                client.name(),
                path.display()
            )),
            (false, false) => return Err(missing_binary(path)),
        }
    }
    Ok(present)
}

fn missing_binary(path: &Path) -> String {
    format!(
        "{} is missing: build the benchmark binaries first (`cargo xtask bench` does)",
        path.display()
    )
}

/// Whether `taskset -c <cpu>` works here.
fn taskset_works(cpu: u32) -> bool {
    Command::new("taskset")
        .args(["-c", &cpu.to_string(), "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The command for one client run against the fixture.
fn client_command(
    client: &Path,
    fixture: &Path,
    transport: Transport,
    pin: Pin,
    scenario: &Scenario,
    quick: bool,
) -> Command {
    let fixture = [fixture.to_string_lossy().into_owned()];
    server_client_command(client, &fixture, transport, pin, scenario, quick)
}

/// The command for one client run that starts `server` (program and arguments) pinned.
fn server_client_command(
    client: &Path,
    server: &[String],
    transport: Transport,
    pin: Pin,
    scenario: &Scenario,
    quick: bool,
) -> Command {
    let mut command;
    let server: Vec<String> = match pin.server_cpu() {
        Some(cpu) => {
            command = Command::new("taskset");
            command.args(["-c", "0"]).arg(client);
            let mut pinned = ["taskset", "-c", &cpu.to_string()]
                .map(String::from)
                .to_vec();
            pinned.extend_from_slice(server);
            pinned
        }
        None => {
            command = Command::new(client);
            server.to_vec()
        }
    };
    command.arg("--server").arg(&server[0]);
    for arg in &server[1..] {
        command.arg("--server-arg").arg(arg);
    }
    command.args(scenario.client_args(quick));
    if transport == Transport::Http {
        command.args(["--transport", "http"]);
    }
    command
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// `N CPUs, MODEL, Linux RELEASE`.
fn machine() -> String {
    let cpus = std::fs::read_to_string("/proc/cpuinfo").ok();
    let count = cpus
        .as_deref()
        .map(|c| c.lines().filter(|l| l.starts_with("processor")).count())
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(0);
    let model = cpus
        .as_deref()
        .and_then(|c| c.lines().find(|l| l.starts_with("model name")))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_owned())
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let kernel = read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "?".to_owned());
    format!("{count} CPUs ({model}), Linux {kernel}")
}

/// The locked `rmcp` version, from the first `Cargo.lock` above the driver's executable.
fn rmcp_version(exe_dir: &Path) -> String {
    exe_dir
        .ancestors()
        .take(5)
        .find_map(|dir| std::fs::read_to_string(dir.join("Cargo.lock")).ok())
        .and_then(|lock| report::locked_version(&lock, "rmcp"))
        .unwrap_or_else(|| "unknown (no Cargo.lock found above the driver)".to_owned())
}

fn short(m: &Measurement, scenario: &Scenario) -> String {
    match scenario.mode {
        crate::Mode::Latency => format!(
            "p50 {:.1} µs, p99 {:.1} µs, CPU {:.1} µs/call, RSS {} KiB",
            m.p50_us, m.p99_us, m.cpu_us_per_call, m.max_rss_kib
        ),
        crate::Mode::Throughput => format!(
            "{:.0} calls/s, CPU {:.1} µs/call, RSS {} KiB",
            m.calls_per_sec, m.cpu_us_per_call, m.max_rss_kib
        ),
    }
}

/// The gateways' executables, when found.
#[derive(Debug, Clone)]
struct GatewayBinaries {
    /// `mcph`, next to the driver.
    mcph: Option<PathBuf>,
    /// `mcp-proxy`: `--mcp-proxy`, or `.interop/mcp-proxy/bin/mcp-proxy` above the driver.
    mcp_proxy: Option<PathBuf>,
    /// Where each was looked for, for the notes.
    looked_for: [PathBuf; 2],
}

/// Where `cargo xtask bench` installs mcp-proxy, relative to the workspace.
pub const MCP_PROXY_BIN: &str = ".interop/mcp-proxy/bin/mcp-proxy";

impl GatewayBinaries {
    fn find(exe_dir: &Path, mcp_proxy: Option<&Path>) -> GatewayBinaries {
        let mcph = exe_dir.join("mcph");
        let proxy = match mcp_proxy {
            Some(path) => path.to_path_buf(),
            None => exe_dir
                .ancestors()
                .take(5)
                .map(|dir| dir.join(MCP_PROXY_BIN))
                .find(|path| path.is_file())
                .unwrap_or_else(|| PathBuf::from(MCP_PROXY_BIN)),
        };
        GatewayBinaries {
            mcph: mcph.is_file().then(|| mcph.clone()),
            mcp_proxy: proxy.is_file().then(|| proxy.clone()),
            looked_for: [mcph, proxy],
        }
    }

    /// The header line: which binaries, and mcp-proxy's installed version.
    fn describe(&self) -> String {
        let proxy = match &self.mcp_proxy {
            Some(path) => format!(
                "`mcp-proxy` {} ({})",
                installed_version(path, "mcp-proxy").unwrap_or_else(|| "of unknown version".into()),
                path.display()
            ),
            None => "`mcp-proxy` not found".to_owned(),
        };
        let mcph = match &self.mcph {
            Some(path) => format!("`mcph serve` ({})", path.display()),
            None => "`mcph` not built".to_owned(),
        };
        format!(
            "{mcph}; {proxy}; each fronting `mcp-fixture-server` over stdio, from one `.mcp.json`"
        )
    }
}

/// The version `cargo install --root ROOT` recorded for `package` in `ROOT/.crates.toml`, the
/// binary being `ROOT/bin/<name>`.
fn installed_version(binary: &Path, package: &str) -> Option<String> {
    let root = binary.parent()?.parent()?;
    let crates = std::fs::read_to_string(root.join(".crates.toml")).ok()?;
    let prefix = format!("\"{package} ");
    crates.lines().find_map(|line| {
        let rest = line.trim().strip_prefix(&prefix)?;
        Some(rest.split_whitespace().next()?.to_owned())
    })
}

/// What one gateway comparison needs.
struct GatewayRun<'a> {
    /// `bench-client-ours`.
    client: &'a Path,
    /// `mcp-fixture-server`.
    fixture: &'a Path,
    binaries: &'a GatewayBinaries,
    /// Where the `.mcp.json` and mcp-proxy's TOML are written.
    config_dir: &'a Path,
    pins: &'a [Pin],
    repeats: usize,
    quick: bool,
    limit: Duration,
}

/// What the gateway comparison produced.
struct GatewayComparison {
    cells: Vec<GatewayCell>,
    /// Routes that could not run, and why (shown above the table).
    notes: Vec<String>,
    /// Failed runs (for the report's notes).
    failures: Vec<String>,
    failed: bool,
}

/// A loopback port nothing listens on right now.
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}

/// The client command for `route`, or why the route cannot run.
fn gateway_command(
    run: &GatewayRun,
    route: Route,
    mcp_json: &Path,
    transport: Transport,
    pin: Pin,
    scenario: &Scenario,
) -> Result<Command, String> {
    let text = |p: &Path| p.to_string_lossy().into_owned();
    let (server, extra): (Vec<String>, Vec<String>) = match route {
        Route::Direct => (vec![text(run.fixture)], vec![]),
        Route::Mcph => {
            let mcph = run.binaries.mcph.as_deref().ok_or("mcph is not built")?;
            let server = [
                text(mcph),
                "serve".into(),
                "--config".into(),
                text(mcp_json),
            ];
            (server.to_vec(), vec![])
        }
        Route::McpProxy => {
            let proxy = run
                .binaries
                .mcp_proxy
                .as_deref()
                .ok_or("mcp-proxy is not installed")?;
            if transport == Transport::Stdio {
                return Err("mcp-proxy serves only HTTP".into());
            }
            let port = free_port()?;
            let toml = run.config_dir.join("mcp-proxy.toml");
            std::fs::write(&toml, gateway::mcp_proxy_toml(port, &text(mcp_json)))
                .map_err(|e| format!("{}: {e}", toml.display()))?;
            let server = [text(proxy), "--config".into(), text(&toml)];
            let extra = [
                "--server-url".into(),
                format!("http://127.0.0.1:{port}/"),
                "--tool".into(),
                format!("fixture/{}", scenario.payload.tool()),
            ];
            (server.to_vec(), extra.to_vec())
        }
    };
    let mut command =
        server_client_command(run.client, &server, transport, pin, scenario, run.quick);
    command.args(extra);
    Ok(command)
}

/// Runs every route of every gateway scenario, interleaved per repeat; appends to `runs`.
fn run_gateways(run: &GatewayRun, runs: &mut Vec<Run>) -> Result<GatewayComparison, String> {
    let mcp_json = run.config_dir.join("fixture.mcp.json");
    std::fs::write(&mcp_json, gateway::mcp_json(&run.fixture.to_string_lossy()))
        .map_err(|e| format!("{}: {e}", mcp_json.display()))?;
    let mut comparison = GatewayComparison {
        cells: Vec::new(),
        notes: Vec::new(),
        failures: Vec::new(),
        failed: false,
    };
    let [mcph_path, proxy_path] = &run.binaries.looked_for;
    if run.binaries.mcph.is_none() {
        comparison.notes.push(format!(
            "mcph: n/a — {} is not built (`cargo build --release -p mcp-cli --bin mcph`)",
            mcph_path.display()
        ));
    }
    if run.binaries.mcp_proxy.is_none() {
        comparison.notes.push(format!(
            "mcp-proxy: n/a — {} is not there (`cargo xtask bench` installs it; or pass --mcp-proxy PATH)",
            proxy_path.display()
        ));
    } else {
        comparison.notes.push(
            "mcp-proxy: no stdio rows — its command line has no way to serve on stdio (`--help`: \
             only `--config`, `--check`, `--import-mcp-json`, `--from-mcp-json`; given an \
             `initialize` line on stdin it answers nothing and listens on TCP); over HTTP it \
             serves at `/` and names the tool `fixture/echo`"
                .to_owned(),
        );
    }
    for &(transport, scenarios) in gateway::TRANSPORTS {
        for &pin in run.pins {
            for scenario in scenarios {
                let mut per_route: [Vec<Measurement>; 3] = Default::default();
                for repeat in 0..run.repeats {
                    for route in Route::ALL {
                        let command = match gateway_command(
                            run, route, &mcp_json, transport, pin, scenario,
                        ) {
                            Ok(command) => command,
                            // Unavailable: the notes above say why.
                            Err(_) => continue,
                        };
                        let what = format!(
                            "[gateway {} {} {} #{}] {:<9}",
                            transport.name(),
                            pin.name(),
                            scenario.label(),
                            repeat + 1,
                            route.name()
                        );
                        let t = Instant::now();
                        let result = run_client(command, run.limit);
                        let wall_secs = t.elapsed().as_secs_f64();
                        match &result {
                            Ok(m) => {
                                let server =
                                    match (m.server_cpu_us_per_call, m.upstream_cpu_us_per_call) {
                                        (Some(s), Some(u)) => {
                                            format!(", server CPU {s:.1} + upstream {u:.1} µs/call")
                                        }
                                        (Some(s), None) => format!(", server CPU {s:.1} µs/call"),
                                        _ => String::new(),
                                    };
                                eprintln!(
                                    "{what} {}{server} ({wall_secs:.1}s)",
                                    short(m, scenario)
                                );
                                per_route[route as usize].push(m.clone());
                            }
                            Err(e) => {
                                eprintln!("{what} FAILED: {e}");
                                comparison.failures.push(format!(
                                    "gateway {} failed on {} {} {} (run {}): {e}",
                                    route.name(),
                                    transport.name(),
                                    pin.name(),
                                    scenario.label(),
                                    repeat + 1
                                ));
                                comparison.failed = true;
                            }
                        }
                        runs.push(Run {
                            transport,
                            pin,
                            scenario: scenario.label(),
                            client: Client::Ours.name().to_owned(),
                            route: Some(route),
                            repeat,
                            wall_secs,
                            measurement: result.as_ref().ok().cloned(),
                            error: result.err(),
                        });
                    }
                }
                comparison.cells.push(GatewayCell {
                    transport,
                    pin,
                    scenario: *scenario,
                    results: per_route.each_ref().map(|runs| report::median(runs)),
                });
            }
        }
    }
    Ok(comparison)
}

/// Runs everything; returns the process exit code.
pub fn main_with(options: &Options) -> Result<i32, String> {
    let started = Instant::now();
    let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let dir = exe
        .parent()
        .ok_or("the executable has no directory")?
        .to_path_buf();
    let fixture = dir.join(mcp_testkit::FIXTURE_SERVER_BIN);
    if !fixture.is_file() {
        return Err(missing_binary(&fixture));
    }
    let clients = Client::ALL.map(|c| dir.join(c.binary()));
    let mut notes = Vec::new();
    let present = present_clients(&clients, &mut notes)?;

    let quick = options.quick;
    let repeats = options.repeats();
    let wanted: &[Pin] = match options.pin {
        PinChoice::Same => &[Pin::Same],
        PinChoice::Split => &[Pin::Split],
        PinChoice::Both => &[Pin::Same, Pin::Split],
    };
    let pins: Vec<Pin> = if !taskset_works(0) {
        notes.push("`taskset -c 0` does not work here: everything ran UNPINNED (pin = none); the figures are noisy".to_owned());
        vec![Pin::None]
    } else {
        let mut pins = Vec::new();
        for &pin in wanted {
            if pin == Pin::Split && !taskset_works(1) {
                notes.push(
                    "split: skipped, `taskset -c 1` does not work here (one CPU?)".to_owned(),
                );
            } else {
                pins.push(pin);
            }
        }
        pins
    };

    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut header: Vec<(String, String)> = vec![
        ("date".into(), report::utc_datetime(unix)),
        ("machine".into(), machine()),
        ("rmcp".into(), rmcp_version(&dir)),
        (
            "server".into(),
            "`mcp-fixture-server` over stdio, and over Streamable HTTP on loopback (`--http 127.0.0.1:0`, SSE answers) for the `http` rows (`echo {\"text\":\"hi\"}` = small; `large {\"bytes\":262144}` = 256KiB); each client starts its own".into(),
        ),
        (
            "run".into(),
            if quick {
                "`--quick`: one short run per cell — checks the harness, the figures mean little".into()
            } else {
                format!("full: each cell is the per-metric median of {repeats} runs; clients interleaved")
            },
        ),
        (
            "pin".into(),
            "`same` = client and server on CPU 0, `split` = client on CPU 0, server on CPU 1 (`taskset`); `none` = unpinned".into(),
        ),
        (
            "clients".into(),
            "`ours` = the bare session (`mcp-core` + `mcp-session` + the transport); `stack` = `mcp-client`'s facade with its full default stack in front of that same session (catalog lookup, traced call, metrics, timeout, retry, breaker, gate; over HTTP also the pool, whose default `max` of 10 sessions caps the calls in flight; `enterprise` profile defaults): what a harness gets; `rmcp` = the official Rust SDK; `floor` = no MCP, the same bytes".into(),
        ),
        (
            "direction".into(),
            "lower is better for µs and KiB, higher for calls/s; so a ratio x/y < 1 means x is better for µs and KiB, x/y > 1 means x is better for calls/s".into(),
        ),
        (
            "metrics".into(),
            "client CPU = user + sys of the client process only, over the measured calls, per call; peak RSS = the client's `ru_maxrss`; throughput ×N = N calls in flight; the floor pipes the same request and response bytes to a non-MCP echo process (over http: the same POST and the fixture's recorded response, replayed by a std-only HTTP/1.1 responder with Content-Length, one keep-alive connection, requests pipelined when ×N)".into(),
        ),
    ];

    let limit = timeout(quick);
    let mut runs = Vec::new();
    let mut cells = Vec::new();
    let mut failed = false;
    let main_transports: &[(Transport, &[Scenario])] = match options.only {
        None => TRANSPORTS,
        Some(Only::Gateway) => &[],
    };
    for &(transport, scenarios) in main_transports {
        for &pin in &pins {
            for scenario in scenarios {
                let mut per_client: [Vec<Measurement>; 4] = Default::default();
                for repeat in 0..repeats {
                    for (i, client) in Client::ALL.iter().map(|c| c.name()).enumerate() {
                        if !present[i] {
                            continue;
                        }
                        let t = Instant::now();
                        let result = run_client(
                            client_command(&clients[i], &fixture, transport, pin, scenario, quick),
                            limit,
                        );
                        let wall_secs = t.elapsed().as_secs_f64();
                        match &result {
                            Ok(m) => {
                                eprintln!(
                                    "[{} {} {} #{}] {client:<5} {} ({wall_secs:.1}s)",
                                    transport.name(),
                                    pin.name(),
                                    scenario.label(),
                                    repeat + 1,
                                    short(m, scenario)
                                );
                                per_client[i].push(m.clone());
                            }
                            Err(e) => {
                                eprintln!(
                                    "[{} {} {} #{}] {client:<5} FAILED: {e}",
                                    transport.name(),
                                    pin.name(),
                                    scenario.label(),
                                    repeat + 1
                                );
                                notes.push(format!(
                                    "{client} failed on {} {} {} (run {}): {e}",
                                    transport.name(),
                                    pin.name(),
                                    scenario.label(),
                                    repeat + 1
                                ));
                                failed = true;
                            }
                        }
                        runs.push(Run {
                            transport,
                            pin,
                            scenario: scenario.label(),
                            client: client.to_owned(),
                            route: None,
                            repeat,
                            wall_secs,
                            measurement: result.as_ref().ok().cloned(),
                            error: result.err(),
                        });
                    }
                }
                cells.push(Cell {
                    transport,
                    pin,
                    scenario: *scenario,
                    results: per_client.each_ref().map(|runs| report::median(runs)),
                });
            }
        }
    }
    let gateways = GatewayBinaries::find(&dir, options.mcp_proxy.as_deref());
    let out = match &options.out {
        Some(out) => out.clone(),
        None => dir
            .parent()
            .map(|target| target.join("bench"))
            .unwrap_or_else(|| PathBuf::from("bench")),
    };
    let gateway_dir = out.join("gateway");
    std::fs::create_dir_all(&gateway_dir).map_err(|e| format!("{}: {e}", gateway_dir.display()))?;
    // Absolute: the gateways read it from wherever they run (mcp-proxy resolves a relative
    // `import_backends` against its TOML's directory).
    let gateway_dir = gateway_dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", gateway_dir.display()))?;
    header.push(("gateways".into(), gateways.describe()));
    let comparison = run_gateways(
        &GatewayRun {
            client: &clients[Client::Ours as usize],
            fixture: &fixture,
            binaries: &gateways,
            config_dir: &gateway_dir,
            pins: &pins,
            repeats,
            quick,
            limit,
        },
        &mut runs,
    )?;
    failed |= comparison.failed;
    notes.extend(comparison.failures.iter().cloned());
    let section = GatewaySection::new(&comparison.cells, &comparison.notes);
    notes.push(format!(
        "wall time of the run: {:.1} s",
        started.elapsed().as_secs_f64()
    ));

    let report = Report {
        header,
        cells,
        sections: vec![gateway::render_gateway(
            &comparison.cells,
            &comparison.notes,
        )],
        notes,
    };
    let markdown = report::render(&report);
    print!("{markdown}");

    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let md_path = out.join("report.md");
    std::fs::write(&md_path, &markdown).map_err(|e| format!("{}: {e}", md_path.display()))?;
    let json_path = out.join("report.json");
    let json = json_report(&report, quick, repeats, &runs, Some(&section))?;
    std::fs::write(&json_path, json).map_err(|e| format!("{}: {e}", json_path.display()))?;
    eprintln!(
        "mcp-bench: wrote {} and {}",
        md_path.display(),
        json_path.display()
    );
    Ok(if failed { 1 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SCENARIOS;
    use serde_json::json;

    fn m(client: &str, p50: f64, p99: f64, cpu: f64, rss: u64) -> Measurement {
        Measurement {
            client: client.to_owned(),
            calls: 500,
            inflight: 1,
            p50_us: p50,
            p99_us: p99,
            calls_per_sec: 0.0,
            cpu_us_per_call: cpu,
            max_rss_kib: rss,
            server_cpu_us_per_call: None,
            upstream_cpu_us_per_call: None,
            server_max_rss_kib: None,
        }
    }

    #[test]
    fn report_json_carries_the_stack_overhead_of_every_cell_from_the_medians() {
        let cell = |transport, stack| Cell {
            transport,
            pin: Pin::Same,
            scenario: SCENARIOS[0],
            results: [
                Some(m("ours", 6.0, 12.0, 4.0, 3000)),
                stack,
                Some(m("rmcp", 12.0, 30.0, 8.0, 6000)),
                Some(m("floor", 2.0, 3.0, 1.0, 2000)),
            ],
        };
        let report = Report {
            header: vec![("rmcp".into(), "3.11.0".into())],
            cells: vec![
                cell(Transport::Stdio, Some(m("stack", 7.5, 15.0, 5.0, 3300))),
                cell(Transport::Http, None),
            ],
            sections: vec![],
            notes: vec!["stack failed on http same latency small (run 1): boom".into()],
        };
        let runs = [Run {
            transport: Transport::Http,
            pin: Pin::Same,
            scenario: "latency small".into(),
            client: "stack".into(),
            route: None,
            repeat: 0,
            wall_secs: 0.5,
            measurement: None,
            error: Some("boom".into()),
        }];
        let text = json_report(&report, true, 1, &runs, None).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let rows = json["stack_overhead"].as_array().unwrap();
        // Four latency metrics per cell, two cells.
        assert_eq!(rows.len(), 8);
        let stdio_p50 = &rows[0];
        assert_eq!(
            (
                &stdio_p50["transport"],
                &stdio_p50["pin"],
                &stdio_p50["scenario"],
                &stdio_p50["metric"]
            ),
            (
                &json!("stdio"),
                &json!("same"),
                &json!("latency small"),
                &json!("p50 µs")
            )
        );
        assert_eq!(stdio_p50["bare"], 6.0);
        assert_eq!(stdio_p50["stack"], 7.5);
        assert_eq!(stdio_p50["stack_over_bare"], 1.25);
        assert_eq!(stdio_p50["stack_minus_bare"], 1.5);
        assert_eq!(stdio_p50["stack_over_rmcp"], 0.625);
        assert_eq!(stdio_p50["stack_over_floor"], 3.75);
        let stdio_rss = &rows[3];
        assert_eq!(stdio_rss["metric"], "peak RSS KiB");
        assert_eq!(stdio_rss["stack_over_bare"], 1.1);
        // The http cell's stack failed: its figures are null, the others are there.
        let http_p50 = &rows[4];
        assert_eq!(http_p50["transport"], "http");
        assert_eq!(http_p50["bare"], 6.0);
        assert_eq!(http_p50["rmcp"], 12.0);
        for key in [
            "stack",
            "stack_over_bare",
            "stack_minus_bare",
            "stack_over_rmcp",
        ] {
            assert!(http_p50[key].is_null(), "{key}: {}", http_p50[key]);
        }
        assert_eq!(json["runs"][0]["client"], "stack");
        assert_eq!(json["runs"][0]["error"], "boom");
        assert_eq!(json["notes"][0], report.notes[0].as_str());
        assert_eq!(json["header"][0], json!(["rmcp", "3.11.0"]));
    }

    #[test]
    fn a_missing_stack_or_rmcp_is_a_note_and_a_missing_ours_or_floor_an_error() {
        let dir = std::env::temp_dir().join(format!("mcp-bench-clients-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths = Client::ALL.map(|c| dir.join(c.binary()));
        for path in &paths {
            let _ = std::fs::remove_file(path);
        }
        std::fs::write(&paths[Client::Ours as usize], "").unwrap();
        std::fs::write(&paths[Client::Floor as usize], "").unwrap();
        let mut notes = Vec::new();
        let present = present_clients(&paths, &mut notes);
        assert_eq!(present, Ok([true, false, false, true]));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("stack: n/a — "), "{}", notes[0]);
        assert!(notes[0].contains("bench-client-stack is not built"));
        assert!(notes[1].starts_with("rmcp: n/a — "), "{}", notes[1]);

        std::fs::remove_file(&paths[Client::Floor as usize]).unwrap();
        let error = present_clients(&paths, &mut Vec::new()).unwrap_err();
        assert!(error.contains("bench-client-floor is missing"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parses_options() {
        let o = Options::parse(["--quick", "--pin", "same", "--out", "/tmp/x"].map(String::from))
            .unwrap();
        assert_eq!(
            o,
            Options {
                quick: true,
                pin: PinChoice::Same,
                out: Some(PathBuf::from("/tmp/x")),
                repeats: None,
                only: None,
                mcp_proxy: None,
            }
        );
        assert_eq!(o.repeats(), 1);
        let o = Options::parse(Vec::new()).unwrap();
        assert_eq!((o.pin, o.repeats()), (PinChoice::Both, 3));
        assert!(Options::parse(["--pin", "left"].map(String::from)).is_err());
        assert!(Options::parse(["--out"].map(String::from)).is_err());
        let o =
            Options::parse(["--only", "gateway", "--mcp-proxy", "/i/mcp-proxy"].map(String::from))
                .unwrap();
        assert_eq!(o.only, Some(Only::Gateway));
        assert_eq!(o.mcp_proxy, Some(PathBuf::from("/i/mcp-proxy")));
        assert!(Options::parse(["--only", "rmcp"].map(String::from)).is_err());
    }

    #[test]
    fn pinned_client_command_wraps_both_sides_in_taskset() {
        let c = client_command(
            Path::new("/b/ours"),
            Path::new("/b/fix"),
            Transport::Stdio,
            Pin::Split,
            &SCENARIOS[0],
            true,
        );
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(c.get_program(), "taskset");
        assert_eq!(
            args.join(" "),
            "-c 0 /b/ours --server taskset --server-arg -c --server-arg 1 --server-arg /b/fix \
             --mode latency --inflight 1 --warmup 50 --calls 500 --payload small"
        );
        let c = client_command(
            Path::new("/b/ours"),
            Path::new("/b/fix"),
            Transport::Http,
            Pin::None,
            &SCENARIOS[0],
            true,
        );
        assert_eq!(c.get_program(), "/b/ours");
        assert_eq!(c.get_args().nth(1).unwrap(), "/b/fix");
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.join(" ").ends_with("--payload small --transport http"));
    }
}
