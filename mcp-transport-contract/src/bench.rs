//! The harness of the transport benches that measure a row against a floor row in the same run
//! (`ws_call`, `grpc_call`): the criterion group, the plain-loop summary (the median of five
//! runs per row, each row's overhead and ratio over its floor) and the instruction-count mode.
//!
//! A bench describes its rows ([`BenchRow`]) and calls [`run`]. Everything runs on a
//! current-thread runtime, one call awaited before the next. Environment, with `<NAME>` the
//! bench's name in capitals (`WS_CALL`):
//! - `<NAME>_COUNT=<row>:<calls>`: only that many calls of that row, then exit (for callgrind);
//! - `<NAME>_SUMMARY=0`: no plain-loop summary;
//! - `<NAME>_SUMMARY_CALLS=<n>`: calls per run of the small rows (default 20 000; large rows
//!   make a tenth).

use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;

/// One row of a bench: a floor, or a measured row compared with its floor.
pub trait BenchRow: Copy + PartialEq + 'static {
    /// An open connection of a row, with its server.
    type Connected;

    /// Every row, each floor before the rows compared with it.
    const ALL: &'static [Self];

    /// The row's name (`ws/echo`).
    fn name(self) -> &'static str;

    /// The floor this row is compared with (a floor is its own).
    fn floor(self) -> Self;

    /// A row that moves a large payload (its summary runs make a tenth of the calls).
    fn is_large(self) -> bool;

    /// Opens the row's connection (and its server).
    fn connect(self) -> impl Future<Output = Self::Connected>;

    /// One call; returns something of the answer, checked, so it cannot be optimised away.
    fn call(self, connected: &mut Self::Connected) -> impl Future<Output = usize>;

    /// Closes the connection and its server.
    fn close(connected: Self::Connected) -> impl Future<Output = ()>;
}

/// Runs the bench `name` (`ws_call`) over the rows of `R`: see the [module docs](self).
pub fn run<R: BenchRow>(name: &str) {
    let env = name.to_ascii_uppercase();
    if let Ok(spec) = std::env::var(format!("{env}_COUNT")) {
        count_only::<R>(&env, &spec);
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    criterion_rows::<R>(name, &mut criterion);
    criterion.final_summary();
    if std::env::var(format!("{env}_SUMMARY")).as_deref() != Ok("0") {
        summary::<R>(name, &env);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Times `calls` sequential calls of `row` (after a warm-up); microseconds per call.
fn time_row<R: BenchRow>(row: R, calls: u32) -> f64 {
    runtime().block_on(async {
        let mut connected = row.connect().await;
        for _ in 0..calls / 10 {
            black_box(row.call(&mut connected).await);
        }
        let started = Instant::now();
        for _ in 0..calls {
            black_box(row.call(&mut connected).await);
        }
        let per_call = started.elapsed().as_secs_f64() * 1e6 / f64::from(calls);
        R::close(connected).await;
        per_call
    })
}

fn criterion_rows<R: BenchRow>(name: &str, c: &mut Criterion) {
    let mut group = c.benchmark_group(name);
    group.measurement_time(Duration::from_secs(3));
    for &row in R::ALL {
        let runtime = runtime();
        let mut connected = runtime.block_on(row.connect());
        group.bench_function(row.name(), |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iters {
                        black_box(row.call(&mut connected).await);
                    }
                    started.elapsed()
                })
            })
        });
        runtime.block_on(R::close(connected));
    }
    group.finish();
}

/// The plain-loop summary: every row, and each measured row's overhead over its floor and the
/// ratio.
fn summary<R: BenchRow>(name: &str, env: &str) {
    let calls: u32 = std::env::var(format!("{env}_SUMMARY_CALLS"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    // The median of a few runs: the machine is shared and noisy.
    let median = |row: R| {
        let row_calls = if row.is_large() {
            (calls / 10).max(1)
        } else {
            calls
        };
        let mut runs: Vec<f64> = (0..5).map(|_| time_row(row, row_calls)).collect();
        runs.sort_by(f64::total_cmp);
        runs[runs.len() / 2]
    };
    let mut floor_us = None;
    for &row in R::ALL {
        let us = median(row);
        if row.floor() == row {
            println!("{name}: {} {us:.2} µs/call (the floor)", row.name());
            floor_us = Some(us);
        } else {
            let floor = floor_us.expect("a floor row comes before its rows");
            println!(
                "{name}: {} {us:.2} µs/call, overhead {:.2} µs, ratio {:.1}x (vs {})",
                row.name(),
                us - floor,
                us / floor,
                row.floor().name()
            );
        }
    }
}

/// `<NAME>_COUNT=<row>:<calls>`: only that many calls of that row (for callgrind).
fn count_only<R: BenchRow>(env: &str, spec: &str) {
    let (name, calls) = spec
        .split_once(':')
        .unwrap_or_else(|| panic!("{env}_COUNT is <row>:<calls>, not {spec:?}"));
    let row = R::ALL
        .iter()
        .copied()
        .find(|r| r.name() == name)
        .unwrap_or_else(|| panic!("no row {name:?}"));
    let calls: u32 = calls.parse().expect("a number of calls");
    runtime().block_on(async {
        let mut connected = row.connect().await;
        for _ in 0..calls {
            black_box(row.call(&mut connected).await);
        }
        R::close(connected).await;
    });
}
