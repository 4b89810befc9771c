//! `local_call`: what a `tools/call` to an in-process server costs beyond the tool's own work.
//!
//! Rows (all sequential calls of `echo {"text":"hi"}` on a current-thread runtime, each
//! awaited before the next, through the full `ClientSession` and `call_tool`):
//! - `direct/echo`: the floor — the same async function the tool runs, called directly.
//! - `local/echo`: the default: the session picks the modern era (2026-07-28: `_meta` on every
//!   request, `resultType` checked), and the request is answered in the caller's task.
//! - `local/echo_raw`: the same call as a pass-through harness makes it (`call_tool_raw`: raw
//!   JSON arguments in, the result's JSON text out, no typed encoding or decoding by the caller).
//! - `local/echo_legacy`: the same in the legacy era (2025-11-25, `initialize`).
//! - `local/echo_via_reader`: the "before": the server answers on its connection task and the
//!   answer comes back through the channel, the session's reader task and a oneshot.
//! - `local/echo_via_reader_mt`: the same on a two-worker runtime (the hops cross threads).
//!
//! ```text
//! cargo bench -p mcp-transport-local --bench local_call
//! ```
//!
//! After the criterion group it times plain loops and prints one line per row and the
//! overhead and ratio against the floor: `local_call: local/echo … ns/call, overhead … ns,
//! ratio …×`.
//!
//! Instruction counts (stable on a noisy machine): with `LOCAL_CALL_COUNT=<row>:<calls>` the
//! bench runs only that many calls of that row and exits, e.g.
//!
//! ```text
//! BIN=$(ls -t target/release/deps/local_call-* | grep -v '\.d$' | head -1)
//! for n in 1000 11000; do
//!   LOCAL_CALL_COUNT=local/echo:$n valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n $BIN
//! done
//! ```
//!
//! and the difference of the two totals over 10 000 calls is the per-call count.

use std::hint::black_box;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use criterion::Criterion;
use mcp_core::{Era, McpServiceExt, RequestOptions};
use mcp_session::{ClientSession, SessionOptions};
use mcp_transport_local::{LocalServer, LocalTool, RequestContext};
use serde_json::json;
use serde_json::value::RawValue;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to echo.
    text: String,
}

/// The tool's own work, and the floor.
async fn echo(args: EchoArgs) -> String {
    args.text
}

fn server(in_place: bool) -> LocalServer {
    LocalServer::builder("bench", "1.0.0")
        .tool(LocalTool::new(
            "echo",
            |_ctx: RequestContext, args: EchoArgs| echo(args),
        ))
        .answer_in_place(in_place)
        .build()
        .expect("a valid server")
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Row {
    Direct,
    Local,
    Raw,
    Legacy,
    ViaReader,
    ViaReaderMultiThread,
}

impl Row {
    const ALL: [Row; 6] = [
        Row::Direct,
        Row::Local,
        Row::Raw,
        Row::Legacy,
        Row::ViaReader,
        Row::ViaReaderMultiThread,
    ];

    fn name(self) -> &'static str {
        match self {
            Row::Direct => "direct/echo",
            Row::Local => "local/echo",
            Row::Raw => "local/echo_raw",
            Row::Legacy => "local/echo_legacy",
            Row::ViaReader => "local/echo_via_reader",
            Row::ViaReaderMultiThread => "local/echo_via_reader_mt",
        }
    }

    fn runtime(self) -> tokio::runtime::Runtime {
        let mut builder = match self {
            Row::ViaReaderMultiThread => {
                let mut b = tokio::runtime::Builder::new_multi_thread();
                b.worker_threads(2);
                b
            }
            _ => tokio::runtime::Builder::new_current_thread(),
        };
        builder.enable_all().build().expect("a runtime")
    }

    /// A connected session for the row (none for the floor).
    async fn session(self) -> Option<(LocalServer, ClientSession)> {
        let (in_place, options) = match self {
            Row::Direct => return None,
            Row::Local | Row::Raw => (true, SessionOptions::default()),
            Row::Legacy => (true, SessionOptions::default().with_era(Era::Legacy)),
            Row::ViaReader | Row::ViaReaderMultiThread => (false, SessionOptions::default()),
        };
        let server = server(in_place);
        let transport = server.connect().expect("connects");
        let session = ClientSession::connect(transport, (), options)
            .await
            .expect("a session");
        let expected = if self == Row::Legacy {
            Era::Legacy
        } else {
            Era::Modern
        };
        assert_eq!(session.era(), expected, "{}", self.name());
        Some((server, session))
    }
}

/// One call of the row; returns the echoed text's length (kept from being optimized away).
async fn call(row: Row, session: Option<&ClientSession>) -> usize {
    match session {
        Some(session) if row == Row::Raw => {
            // The model's output, validated once when it arrived.
            static ARGUMENTS: LazyLock<Box<RawValue>> = LazyLock::new(|| {
                RawValue::from_string(r#"{"text":"hi"}"#.to_owned()).expect("JSON")
            });
            let payload = session
                .call_tool_raw("echo", &ARGUMENTS, RequestOptions::new())
                .await
                .expect("echo answers");
            // What a pass-through harness does with it: hands its JSON text on.
            let text = payload.to_json_string();
            if !text.contains("\"hi\"") {
                panic!("echo answered without its text: {text}");
            }
            text.len()
        }
        None => {
            let args = EchoArgs {
                text: "hi".to_owned(),
            };
            echo(args).await.len()
        }
        Some(session) => {
            let result = session
                .call_tool("echo", Some(json!({"text": "hi"})), RequestOptions::new())
                .await
                .expect("echo answers");
            match result.content.first().and_then(|c| c.as_text()) {
                Some(text) => text.len(),
                None => panic!("echo answered without text: {result:?}"),
            }
        }
    }
}

/// Times `calls` sequential calls of `row` (after a warm-up); nanoseconds per call.
fn time_row(row: Row, calls: u32) -> f64 {
    let runtime = row.runtime();
    runtime.block_on(async {
        let connected = row.session().await;
        let session = connected.as_ref().map(|(_, s)| s);
        for _ in 0..calls / 10 {
            black_box(call(row, session).await);
        }
        let started = Instant::now();
        for _ in 0..calls {
            black_box(call(row, session).await);
        }
        let per_call = started.elapsed().as_nanos() as f64 / f64::from(calls);
        if let Some((server, session)) = &connected {
            session.close().await;
            assert_eq!(server.running_calls(), 0);
        }
        per_call
    })
}

fn criterion_rows(c: &mut Criterion) {
    let mut group = c.benchmark_group("local_call");
    group.measurement_time(Duration::from_secs(3));
    for row in Row::ALL {
        let runtime = row.runtime();
        let connected = runtime.block_on(row.session());
        let session = connected.as_ref().map(|(_, s)| s);
        group.bench_function(row.name(), |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iters {
                        black_box(call(row, session).await);
                    }
                    started.elapsed()
                })
            })
        });
        if let Some((_, session)) = &connected {
            runtime.block_on(session.close());
        }
    }
    group.finish();
}

/// The plain-loop summary: every row, the overhead over the floor and the ratio.
fn summary() {
    let calls: u32 = std::env::var("LOCAL_CALL_SUMMARY_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    // The median of a few runs: the machine is shared and noisy.
    let median = |row: Row| {
        let mut runs: Vec<f64> = (0..5).map(|_| time_row(row, calls)).collect();
        runs.sort_by(f64::total_cmp);
        runs[runs.len() / 2]
    };
    let floor = median(Row::Direct);
    println!(
        "local_call: {} {floor:.1} ns/call (the floor)",
        Row::Direct.name()
    );
    for row in Row::ALL.into_iter().skip(1) {
        let ns = median(row);
        println!(
            "local_call: {} {ns:.1} ns/call, overhead {:.1} ns, ratio {:.1}x",
            row.name(),
            ns - floor,
            ns / floor
        );
    }
}

/// `LOCAL_CALL_COUNT=<row>:<calls>`: only that many calls of that row (for callgrind).
fn count_only(spec: &str) {
    let (name, calls) = spec
        .split_once(':')
        .unwrap_or_else(|| panic!("LOCAL_CALL_COUNT is <row>:<calls>, not {spec:?}"));
    let row = Row::ALL
        .into_iter()
        .find(|r| r.name() == name)
        .unwrap_or_else(|| panic!("no row {name:?}"));
    let calls: u32 = calls.parse().expect("a number of calls");
    let runtime = row.runtime();
    runtime.block_on(async {
        let connected = row.session().await;
        let session = connected.as_ref().map(|(_, s)| s);
        for _ in 0..calls {
            black_box(call(row, session).await);
        }
        if let Some((_, session)) = &connected {
            session.close().await;
        }
    });
}

fn main() {
    if let Ok(spec) = std::env::var("LOCAL_CALL_COUNT") {
        count_only(&spec);
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    criterion_rows(&mut criterion);
    criterion.final_summary();
    if std::env::var("LOCAL_CALL_SUMMARY").as_deref() != Ok("0") {
        summary();
    }
}
