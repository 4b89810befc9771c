//! `mcp-bench`, the driver: runs every client binary on every scenario and pin mode, and writes
//! the report.
//!
//! ```text
//! mcp-bench [--quick] [--pin same|split|both] [--out DIR] [--repeats N]
//! ```
//!
//! It builds nothing: the client binaries (`bench-client-ours`, `-rmcp`, `-floor`) and
//! `mcp-fixture-server` must sit next to its own executable (`cargo xtask bench` builds them
//! all in release mode). A missing `bench-client-rmcp` is reported as `n/a`; a missing `ours`,
//! `floor` or fixture server is an error.
//!
//! Pinning: each client runs under `taskset -c 0` and is given the server command
//! `taskset -c <0|1> mcp-fixture-server`. Without a working `taskset` everything runs unpinned
//! and the report says so.
//!
//! Clients run interleaved — ours, rmcp, floor for one scenario and repeat, then the next — so
//! that drift hits all of them alike. A full run repeats each measurement 3 times and reports
//! each metric's median over the repeats; `--quick` runs everything once with few calls, to
//! check the harness (its figures mean little).
//!
//! Output: the markdown report on stdout and in `DIR/report.md`, every raw measurement in
//! `DIR/report.json`; `DIR` defaults to `target/bench` (the `target` directory holding the
//! driver). Progress goes to stderr. Exit status 1 when any run of an existing client failed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::args::Transport;
use crate::measure::Measurement;
use crate::report::{
    self, Cell, Pin, Report, Scenario, StackCell, CLIENTS, STACK_ROWS, TRANSPORTS,
};

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
}

/// Usage text.
pub const USAGE: &str =
    "usage: mcp-bench [--quick] [--pin same|split|both] [--out DIR] [--repeats N]";

impl Options {
    /// Parses the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut options = Options {
            quick: false,
            pin: PinChoice::Both,
            out: None,
            repeats: None,
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
    /// 0-based repeat.
    pub repeat: usize,
    /// Wall time of the whole client process (start, handshake, warm-up, measurement), s.
    pub wall_secs: f64,
    /// What the client printed, when it succeeded.
    pub measurement: Option<Measurement>,
    /// Why it failed.
    pub error: Option<String>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    header: Vec<(&'a str, &'a str)>,
    quick: bool,
    repeats: usize,
    runs: &'a [Run],
    notes: &'a [String],
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

/// The command for one client run.
fn client_command(
    client: &Path,
    fixture: &Path,
    transport: Transport,
    pin: Pin,
    scenario: &Scenario,
    quick: bool,
) -> Command {
    let fixture = fixture.to_string_lossy().into_owned();
    let mut command;
    let server: Vec<String> = match pin.server_cpu() {
        Some(cpu) => {
            command = Command::new("taskset");
            command.args(["-c", "0"]).arg(client);
            ["taskset", "-c", &cpu.to_string(), &fixture]
                .map(String::from)
                .to_vec()
        }
        None => {
            command = Command::new(client);
            vec![fixture]
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

/// Runs everything; returns the process exit code.
pub fn main_with(options: &Options) -> Result<i32, String> {
    let started = Instant::now();
    let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let dir = exe
        .parent()
        .ok_or("the executable has no directory")?
        .to_path_buf();
    let fixture = dir.join(mcp_testkit::FIXTURE_SERVER_BIN);
    let clients = CLIENTS.map(|c| dir.join(format!("bench-client-{c}")));
    let mut notes = Vec::new();
    for path in [&fixture, &clients[0], &clients[2]] {
        if !path.is_file() {
            return Err(format!(
                "{} is missing: build the benchmark binaries first (`cargo xtask bench` does)",
                path.display()
            ));
        }
    }
    let present = clients.each_ref().map(|p| p.is_file());
    if !present[1] {
        notes.push(format!(
            "rmcp: n/a — {} is not built (`cargo build --release -p mcp-bench --bins`)",
            clients[1].display()
        ));
    }

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
    let header: Vec<(String, String)> = vec![
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
            "direction".into(),
            "lower is better for µs and KiB, higher for calls/s; so ours/x < 1 is better for µs and KiB, ours/x > 1 for calls/s".into(),
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
    for &(transport, scenarios) in TRANSPORTS {
        for &pin in &pins {
            for scenario in scenarios {
                let mut per_client: [Vec<Measurement>; 3] = Default::default();
                for repeat in 0..repeats {
                    for (i, client) in CLIENTS.iter().enumerate() {
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
                            client: (*client).to_owned(),
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
    // The stack's overhead: the bare session and the full stack, interleaved.
    let stack_client = dir.join("bench-client-stack");
    let mut stack_cells = Vec::new();
    if !stack_client.is_file() {
        notes.push(format!(
            "stack: n/a — {} is not built (`cargo build --release -p mcp-bench --bins`)",
            stack_client.display()
        ));
    }
    for &(transport, scenarios) in STACK_ROWS {
        if !stack_client.is_file() {
            break;
        }
        for &pin in &pins {
            for scenario in scenarios {
                let mut bare = Vec::new();
                let mut stack = Vec::new();
                for repeat in 0..repeats {
                    for (name, path, into) in [
                        ("ours", &clients[0], &mut bare),
                        ("stack", &stack_client, &mut stack),
                    ] {
                        let t = Instant::now();
                        let result = run_client(
                            client_command(path, &fixture, transport, pin, scenario, quick),
                            limit,
                        );
                        let wall_secs = t.elapsed().as_secs_f64();
                        match &result {
                            Ok(m) => {
                                eprintln!(
                                    "[stack {} {} {} #{}] {name:<5} {} ({wall_secs:.1}s)",
                                    transport.name(),
                                    pin.name(),
                                    scenario.label(),
                                    repeat + 1,
                                    short(m, scenario)
                                );
                                into.push(m.clone());
                            }
                            Err(e) => {
                                notes.push(format!(
                                    "{name} failed on the stack row {} {} {} (run {}): {e}",
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
                            scenario: format!("stack-overhead {}", scenario.label()),
                            client: name.to_owned(),
                            repeat,
                            wall_secs,
                            measurement: result.as_ref().ok().cloned(),
                            error: result.err(),
                        });
                    }
                }
                stack_cells.push(StackCell {
                    transport,
                    pin,
                    scenario: *scenario,
                    bare: report::median(&bare),
                    stack: report::median(&stack),
                });
            }
        }
    }

    notes.push(format!(
        "wall time of the run: {:.1} s",
        started.elapsed().as_secs_f64()
    ));

    let report = Report {
        header,
        cells,
        stack_cells,
        notes,
    };
    let markdown = report::render(&report);
    print!("{markdown}");

    let out = match &options.out {
        Some(out) => out.clone(),
        None => dir
            .parent()
            .map(|target| target.join("bench"))
            .unwrap_or_else(|| PathBuf::from("bench")),
    };
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let md_path = out.join("report.md");
    std::fs::write(&md_path, &markdown).map_err(|e| format!("{}: {e}", md_path.display()))?;
    let json = JsonReport {
        header: report
            .header
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        quick,
        repeats,
        runs: &runs,
        notes: &report.notes,
    };
    let json_path = out.join("report.json");
    let json = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
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
                repeats: None
            }
        );
        assert_eq!(o.repeats(), 1);
        let o = Options::parse(Vec::new()).unwrap();
        assert_eq!((o.pin, o.repeats()), (PinChoice::Both, 3));
        assert!(Options::parse(["--pin", "left"].map(String::from)).is_err());
        assert!(Options::parse(["--out"].map(String::from)).is_err());
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
