//! `stdio_roundtrip`: sequential `tools/call` round trips of our client against the fixture
//! server, next to the floor: a blocking ping-pong of the same bytes over pipes between two
//! processes (`mcp-pipe-pong`). Two rows for our client: the legacy era (2025-11-25, the
//! handshake) and the modern one (2026-07-28: `_meta` on every request, `resultType` checked on
//! every result), both against the same fixture (`--era dual`).
//!
//! ```text
//! cargo bench -p mcp-transport-stdio --bench stdio_roundtrip
//! MCP_BENCH_PIN=split cargo bench -p mcp-transport-stdio --bench stdio_roundtrip
//! ```
//!
//! Environment:
//! - `MCP_BENCH_PIN=same|split|none` (default `same`): `same` pins the bench and every server
//!   child to CPU 0 (the children inherit the affinity); `split` keeps the bench on CPU 0 and
//!   starts the children through `taskset -c 1`; `none` pins nothing (noisy on 2 vCPUs, see
//!   `/work/shared/benchmarking.md`).
//! - `MCP_BENCH_SUMMARY_ITERS` (default 5000): calls timed one by one for the summary line.
//! - `MCP_BENCH_SUMMARY=0`: skip the summary.
//! - `MCP_BENCH_SERVER=/path/to/server`: run `ours/echo` against another stdio server (it must
//!   answer `tools/call echo`); the floor still replays the fixture's bytes. Default: the
//!   fixture server.
//!
//! After the criterion group, the bench times each call of a plain loop and prints
//! `stdio_roundtrip [pin=…]: ours p50 X µs …, floor p50 Y µs …, ratio Z×`, with the client's CPU
//! time per call (`getrusage(RUSAGE_SELF)`, the bench process only).

use mcp_core::McpServiceExt;
use mcp_core::RequestOptions;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use mcp_core::Era;
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
use serde_json::{json, Value};

const PAYLOAD: &str = "hi";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pin {
    Same,
    Split,
    None,
}

impl Pin {
    fn from_env() -> Pin {
        match std::env::var("MCP_BENCH_PIN").as_deref() {
            Ok("same") | Err(_) => Pin::Same,
            Ok("split") => Pin::Split,
            Ok("none") => Pin::None,
            Ok(other) => panic!("MCP_BENCH_PIN must be same, split or none, not {other:?}"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Pin::Same => "same",
            Pin::Split => "split",
            Pin::None => "none",
        }
    }

    /// Program and arguments that start `bin args…` on the right CPU. Children inherit the
    /// bench's affinity, so only `split` needs `taskset`.
    fn command(self, bin: &Path, args: &[&str]) -> (PathBuf, Vec<String>) {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        match self {
            Pin::Split => {
                let mut all = vec!["-c".to_owned(), "1".to_owned(), path_string(bin)];
                all.extend(args);
                (PathBuf::from("taskset"), all)
            }
            Pin::Same | Pin::None => (bin.to_path_buf(), args),
        }
    }
}

fn path_string(path: &Path) -> String {
    path.to_str()
        .expect("binary paths are UTF-8 in this workspace")
        .to_owned()
}

/// Pins the calling thread (and so every thread and child created after it) to one CPU.
fn pin_to_cpu(cpu: usize) {
    // SAFETY: `set` is a plain bit mask owned by this frame; the kernel only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let rc = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(
            rc,
            0,
            "sched_setaffinity(cpu {cpu}): {}",
            std::io::Error::last_os_error()
        );
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

/// The exact `tools/call` request line our client sends and the exact response line the fixture
/// returns for it.
struct WireBytes {
    request: String,
    response: String,
}

/// Records what our client writes (a `tee` in front of the fixture) during one session with one
/// echo call, then replays those lines to a fresh fixture over plain pipes to get its response.
fn capture_wire_bytes(fixture: &Path) -> WireBytes {
    let dir = std::env::temp_dir().join(format!("mcp-stdio-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let record = dir.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);

    let rt = runtime();
    rt.block_on(async {
        let config = StdioServerConfig::new("sh").args([
            "-c",
            r#"tee -a "$1" | "$2""#,
            "sh",
            &path_string(&record),
            &path_string(fixture),
        ]);
        let transport = StdioTransport::spawn(config).expect("sh and tee can be started");
        let session = ClientSession::connect(transport, (), SessionOptions::default())
            .await
            .expect("the fixture (behind tee) initializes");
        let result = session
            .call_tool(
                "echo",
                Some(json!({ "text": PAYLOAD })),
                RequestOptions::new(),
            )
            .await
            .expect("echo answers");
        assert_eq!(result.text(), PAYLOAD);
        // tee writes the pipe before the file: give it a moment before the group is stopped.
        tokio::time::sleep(Duration::from_millis(100)).await;
        session.close().await;
    });
    drop(rt);

    let recorded = std::fs::read_to_string(&record).expect("tee recorded the requests");
    let _ = std::fs::remove_dir_all(&dir);
    let lines: Vec<&str> = recorded.lines().filter(|l| !l.trim().is_empty()).collect();
    let call_at = lines
        .iter()
        .position(|l| {
            serde_json::from_str::<Value>(l)
                .map(|v| v["method"] == "tools/call")
                .unwrap_or(false)
        })
        .unwrap_or_else(|| panic!("no tools/call among the recorded lines:\n{recorded}"));
    let request = lines[call_at].to_owned();
    let id = serde_json::from_str::<Value>(&request).expect("JSON")["id"].clone();

    // Replay everything up to and including the call to a fresh fixture.
    let mut child = Command::new(fixture)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the fixture can be started");
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut response = None;
    let mut line = String::new();
    for (i, sent) in lines[..=call_at].iter().enumerate() {
        stdin.write_all(sent.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
        let sent_id = serde_json::from_str::<Value>(sent).expect("JSON")["id"].clone();
        if sent_id.is_null() {
            continue; // a notification: no answer
        }
        loop {
            line.clear();
            let n = stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "the fixture closed its stdout during the replay");
            let value: Value = match serde_json::from_str(line.trim_end()) {
                Ok(v) => v,
                Err(_) => continue,
            };
            if value["id"] == sent_id && value.get("method").is_none() {
                if i == call_at {
                    response = Some(line.trim_end_matches(['\n', '\r']).to_owned());
                }
                break;
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    let response = response.expect("the fixture answered the call");
    assert_eq!(
        serde_json::from_str::<Value>(&response).expect("JSON")["id"],
        id
    );
    WireBytes { request, response }
}

/// Our side: a session on a current-thread runtime.
struct Ours {
    rt: tokio::runtime::Runtime,
    session: ClientSession,
}

impl Ours {
    fn start(pin: Pin, fixture: &Path, args: &[&str], era: Era) -> Ours {
        let rt = runtime();
        let (program, args) = pin.command(fixture, args);
        let session = rt.block_on(async {
            let transport = StdioTransport::spawn(StdioServerConfig::new(program).args(args))
                .expect("the fixture can be started");
            ClientSession::connect(transport, (), SessionOptions::default().with_era(era))
                .await
                .expect("the fixture initializes")
        });
        assert_eq!(session.era(), era);
        Ours { rt, session }
    }

    async fn call(session: &ClientSession) {
        let result = session
            .call_tool(
                "echo",
                Some(json!({ "text": PAYLOAD })),
                RequestOptions::new(),
            )
            .await
            .expect("echo answers");
        black_box(result);
    }

    fn run(&self, iters: u64) -> Duration {
        self.rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                Self::call(&self.session).await;
            }
            start.elapsed()
        })
    }

    fn latencies(&self, n: usize) -> Vec<Duration> {
        self.rt.block_on(async {
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                Self::call(&self.session).await;
                out.push(start.elapsed());
            }
            out
        })
    }

    fn stop(self) {
        self.rt.block_on(self.session.close());
    }
}

/// The floor: blocking `write_all(request)` + `read_line(response)` against `mcp-pipe-pong`.
struct Floor {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    request: Vec<u8>,
    line: String,
}

impl Floor {
    fn start(pin: Pin, pong: &Path, wire: &WireBytes) -> Floor {
        let (program, args) = pin.command(pong, &[&wire.response]);
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("mcp-pipe-pong can be started");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("piped"));
        let mut request = wire.request.clone().into_bytes();
        request.push(b'\n');
        let mut floor = Floor {
            child,
            stdin,
            stdout,
            request,
            line: String::with_capacity(wire.response.len() + 1),
        };
        floor.roundtrip();
        assert_eq!(floor.line.trim_end(), wire.response);
        floor
    }

    fn roundtrip(&mut self) {
        self.stdin.write_all(&self.request).expect("write");
        self.line.clear();
        let n = self.stdout.read_line(&mut self.line).expect("read");
        assert!(n > 0, "mcp-pipe-pong closed its stdout");
    }

    fn run(&mut self, iters: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..iters {
            self.roundtrip();
        }
        start.elapsed()
    }

    fn latencies(&mut self, n: usize) -> Vec<Duration> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            self.roundtrip();
            out.push(start.elapsed());
        }
        out
    }

    fn stop(self) {
        let Floor {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

fn bench(c: &mut Criterion, ours: &Ours, modern: Option<&Ours>, floor: &mut Floor) {
    let mut group = c.benchmark_group("stdio_roundtrip");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    group.bench_function("ours/echo", |b| b.iter_custom(|iters| ours.run(iters)));
    if let Some(modern) = modern {
        group.bench_function("ours/echo-2026-07-28", |b| {
            b.iter_custom(|iters| modern.run(iters))
        });
    }
    group.bench_function("floor/raw_pipe", |b| {
        b.iter_custom(|iters| floor.run(iters))
    });
    group.finish();
}

/// CPU time (user + system) of this process so far.
fn cpu_time() -> Duration {
    // SAFETY: `usage` is a plain struct the kernel fills in.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

struct Stats {
    p50: f64,
    p99: f64,
    mean: f64,
    cpu: f64,
}

impl Stats {
    fn of(mut latencies: Vec<Duration>, cpu: Duration) -> Stats {
        let n = latencies.len();
        let cpu = cpu.as_secs_f64() * 1e6 / n as f64;
        let mean = latencies.iter().sum::<Duration>().as_secs_f64() * 1e6 / n as f64;
        latencies.sort_unstable();
        let at = |q: f64| latencies[((n as f64 * q) as usize).min(n - 1)].as_secs_f64() * 1e6;
        Stats {
            p50: at(0.50),
            p99: at(0.99),
            mean,
            cpu,
        }
    }

    fn describe(&self) -> String {
        format!(
            "p50 {:.1} µs (p99 {:.1}, mean {:.1}, client CPU {:.1} µs/call)",
            self.p50, self.p99, self.mean, self.cpu
        )
    }
}

fn summary(pin: Pin, ours: &Ours, modern: Option<&Ours>, floor: &mut Floor) {
    let iters: usize = std::env::var("MCP_BENCH_SUMMARY_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000)
        .max(1);
    // Warm up both, then time each call; alternate the two halves to share the machine's noise.
    ours.latencies(iters / 10);
    floor.latencies(iters / 10);
    let (mut ours_lat, mut floor_lat) = (Vec::new(), Vec::new());
    let (mut ours_cpu, mut floor_cpu) = (Duration::ZERO, Duration::ZERO);
    let (mut modern_lat, mut modern_cpu) = (Vec::new(), Duration::ZERO);
    if let Some(modern) = modern {
        modern.latencies(iters / 10);
    }
    for _ in 0..2 {
        let before = cpu_time();
        ours_lat.extend(ours.latencies(iters / 2));
        ours_cpu += cpu_time() - before;
        if let Some(modern) = modern {
            let before = cpu_time();
            modern_lat.extend(modern.latencies(iters / 2));
            modern_cpu += cpu_time() - before;
        }
        let before = cpu_time();
        floor_lat.extend(floor.latencies(iters / 2));
        floor_cpu += cpu_time() - before;
    }
    let ours = Stats::of(ours_lat, ours_cpu);
    let floor = Stats::of(floor_lat, floor_cpu);
    if !modern_lat.is_empty() {
        let modern = Stats::of(modern_lat, modern_cpu);
        println!(
            "stdio_roundtrip eras: 2026-07-28 p50 {:.1} µs, 2025-11-25 p50 {:.1} µs, ratio {:.2}× (p99 ratio {:.2}×, CPU {:.1} vs {:.1} µs/call)",
            modern.p50,
            ours.p50,
            modern.p50 / ours.p50,
            modern.p99 / ours.p99,
            modern.cpu,
            ours.cpu
        );
    }
    println!(
        "stdio_roundtrip [pin={}]: ours {}, floor {}",
        pin.name(),
        ours.describe(),
        floor.describe()
    );
    println!(
        "stdio_roundtrip: ours p50 {:.1} µs, floor p50 {:.1} µs, ratio {:.2}× (pin={}, p99 ratio {:.2}×, CPU ratio {:.2}×)",
        ours.p50,
        floor.p50,
        ours.p50 / floor.p50,
        pin.name(),
        ours.p99 / floor.p99,
        ours.cpu / floor.cpu
    );
}

fn main() {
    let pin = Pin::from_env();
    // Find (and if needed build) the binaries before pinning, so a build uses every CPU.
    let fixture = mcp_testkit::fixture_server_bin();
    let pong = mcp_testkit::pipe_pong_bin();
    if pin != Pin::None {
        pin_to_cpu(0);
    }
    let wire = capture_wire_bytes(&fixture);

    let server = std::env::var_os("MCP_BENCH_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| fixture.clone());
    let ours = Ours::start(pin, &server, &[], Era::Legacy);
    // The modern row needs the fixture (another server may not speak 2026-07-28).
    let modern =
        (server == fixture).then(|| Ours::start(pin, &fixture, &["--era", "dual"], Era::Modern));
    let mut floor = Floor::start(pin, &pong, &wire);

    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion, &ours, modern.as_ref(), &mut floor);
    criterion.final_summary();

    // Only under `cargo bench` (which passes `--bench`), not `cargo test --benches`.
    let benching = std::env::args().any(|a| a == "--bench")
        && !std::env::args().any(|a| a == "--list" || a == "--profile-time")
        && std::env::var("MCP_BENCH_SUMMARY").as_deref() != Ok("0");
    if benching {
        eprintln!(
            "stdio_roundtrip: request line ({} bytes): {}",
            wire.request.len() + 1,
            wire.request
        );
        eprintln!(
            "stdio_roundtrip: response line ({} bytes): {}",
            wire.response.len() + 1,
            wire.response
        );
        if server != fixture {
            eprintln!("stdio_roundtrip: ours against {}", server.display());
        }
        summary(pin, &ours, modern.as_ref(), &mut floor);
    }

    floor.stop();
    ours.stop();
    if let Some(modern) = modern {
        modern.stop();
    }
}
