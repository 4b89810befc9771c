//! The driver's pure logic: the scenarios, the metrics of each, medians of repeated runs,
//! ratios, and the markdown report.

use serde::Serialize;

use crate::args::{Mode, Transport};
use crate::measure::Measurement;
use crate::scenario::Payload;

/// The clients compared, in column order.
pub const CLIENTS: [&str; 3] = ["ours", "rmcp", "floor"];

/// Where the server runs relative to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pin {
    /// Client and server on CPU 0.
    Same,
    /// Client on CPU 0, server on CPU 1.
    Split,
    /// No `taskset`: wherever the scheduler puts them.
    None,
}

impl Pin {
    /// `same`, `split` or `none`.
    pub fn name(self) -> &'static str {
        match self {
            Pin::Same => "same",
            Pin::Split => "split",
            Pin::None => "none",
        }
    }

    /// The CPU of the server, when pinned.
    pub fn server_cpu(self) -> Option<u32> {
        match self {
            Pin::Same => Some(0),
            Pin::Split => Some(1),
            Pin::None => None,
        }
    }
}

/// One measured situation: what is called, how, and how many times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// Sequential latency or throughput.
    pub mode: Mode,
    /// Small echo or 256 KiB result.
    pub payload: Payload,
    /// Calls in flight (1 in latency mode).
    pub inflight: usize,
    /// Measured calls of a full run.
    pub full_calls: usize,
    /// Measured calls of a `--quick` run.
    pub quick_calls: usize,
}

/// Every scenario, in report order.
pub const SCENARIOS: &[Scenario] = &[
    Scenario::latency(Payload::Small, 20_000, 500),
    Scenario::latency(Payload::Large, 2_000, 50),
    Scenario::throughput(Payload::Small, 1, 50_000, 500),
    Scenario::throughput(Payload::Small, 16, 50_000, 500),
    Scenario::throughput(Payload::Small, 64, 50_000, 500),
    Scenario::throughput(Payload::Large, 16, 2_000, 50),
];

/// The scenarios run over Streamable HTTP (fewer calls: an HTTP round trip costs more).
pub const HTTP_SCENARIOS: &[Scenario] = &[
    Scenario::latency(Payload::Small, 10_000, 300),
    Scenario::latency(Payload::Large, 1_000, 30),
    Scenario::throughput(Payload::Small, 1, 10_000, 300),
    Scenario::throughput(Payload::Small, 16, 20_000, 300),
    Scenario::throughput(Payload::Small, 64, 20_000, 300),
];

/// The rows of the call stack's overhead: the small call, sequential and 16 in flight, each
/// measured with the bare session (`ours`) and with the facade's full default stack (`stack`).
pub const STACK_ROWS: &[(Transport, &[Scenario])] = &[
    (
        Transport::Stdio,
        &[
            Scenario::latency(Payload::Small, 20_000, 500),
            Scenario::throughput(Payload::Small, 16, 50_000, 500),
        ],
    ),
    (
        Transport::Http,
        &[
            Scenario::latency(Payload::Small, 10_000, 300),
            Scenario::throughput(Payload::Small, 16, 20_000, 300),
        ],
    ),
];

/// The transports and their scenarios, in report order.
pub const TRANSPORTS: &[(Transport, &[Scenario])] = &[
    (Transport::Stdio, SCENARIOS),
    (Transport::Http, HTTP_SCENARIOS),
];

impl Scenario {
    const fn latency(payload: Payload, full_calls: usize, quick_calls: usize) -> Scenario {
        Scenario {
            mode: Mode::Latency,
            payload,
            inflight: 1,
            full_calls,
            quick_calls,
        }
    }

    const fn throughput(
        payload: Payload,
        inflight: usize,
        full_calls: usize,
        quick_calls: usize,
    ) -> Scenario {
        Scenario {
            mode: Mode::Throughput,
            payload,
            inflight,
            full_calls,
            quick_calls,
        }
    }

    /// E.g. `latency small`, `throughput 256KiB ×16`.
    pub fn label(&self) -> String {
        match self.mode {
            Mode::Latency => format!("latency {}", self.payload.name()),
            Mode::Throughput => format!("throughput {} ×{}", self.payload.name(), self.inflight),
        }
    }

    /// Measured calls for a full or quick run.
    pub fn calls(&self, quick: bool) -> usize {
        if quick {
            self.quick_calls
        } else {
            self.full_calls
        }
    }

    /// Unmeasured warm-up calls: 10 % of the measured ones.
    pub fn warmup(&self, quick: bool) -> usize {
        (self.calls(quick) / 10).max(1)
    }

    /// The client arguments after `--server …`.
    pub fn client_args(&self, quick: bool) -> Vec<String> {
        let mode = match self.mode {
            Mode::Latency => "latency",
            Mode::Throughput => "throughput",
        };
        let payload = match self.payload {
            Payload::Small => "small",
            Payload::Large => "large",
        };
        [
            "--mode",
            mode,
            "--inflight",
            &self.inflight.to_string(),
            "--warmup",
            &self.warmup(quick).to_string(),
            "--calls",
            &self.calls(quick).to_string(),
            "--payload",
            payload,
        ]
        .map(String::from)
        .to_vec()
    }

    /// The metrics reported for it.
    pub fn metrics(&self) -> &'static [Metric] {
        match self.mode {
            Mode::Latency => &[Metric::P50, Metric::P99, Metric::Cpu, Metric::Rss],
            Mode::Throughput => &[Metric::CallsPerSec, Metric::Cpu, Metric::Rss],
        }
    }
}

/// A row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Median latency, µs.
    P50,
    /// 99th percentile latency, µs.
    P99,
    /// Calls per second.
    CallsPerSec,
    /// Client CPU (user + sys) per call, µs.
    Cpu,
    /// Client peak RSS, KiB.
    Rss,
}

impl Metric {
    /// The row label, with its unit.
    pub fn label(self) -> &'static str {
        match self {
            Metric::P50 => "p50 µs",
            Metric::P99 => "p99 µs",
            Metric::CallsPerSec => "calls/s",
            Metric::Cpu => "client CPU µs/call",
            Metric::Rss => "peak RSS KiB",
        }
    }

    /// Its value in a measurement.
    pub fn value(self, m: &Measurement) -> f64 {
        match self {
            Metric::P50 => m.p50_us,
            Metric::P99 => m.p99_us,
            Metric::CallsPerSec => m.calls_per_sec,
            Metric::Cpu => m.cpu_us_per_call,
            Metric::Rss => m.max_rss_kib as f64,
        }
    }

    /// Formats a value of this metric.
    pub fn format(self, v: f64) -> String {
        match self {
            Metric::P50 | Metric::P99 | Metric::Cpu => format!("{v:.1}"),
            Metric::CallsPerSec | Metric::Rss => format!("{v:.0}"),
        }
    }
}

/// `a / b` with two decimals, or `n/a` when either is missing or the ratio is not finite.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 && (a / b).is_finite() => format!("{:.2}", a / b),
        _ => "n/a".to_owned(),
    }
}

fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Each field's median over repeated runs of one client (`None` when there are none).
pub fn median(runs: &[Measurement]) -> Option<Measurement> {
    let first = runs.first()?;
    let of = |f: fn(&Measurement) -> f64| median_f64(runs.iter().map(f).collect());
    Some(Measurement {
        client: first.client.clone(),
        calls: first.calls,
        inflight: first.inflight,
        p50_us: of(|m| m.p50_us),
        p99_us: of(|m| m.p99_us),
        calls_per_sec: of(|m| m.calls_per_sec),
        cpu_us_per_call: of(|m| m.cpu_us_per_call),
        max_rss_kib: of(|m| m.max_rss_kib as f64).round() as u64,
    })
}

/// The result of one (pin, scenario): each client's median, in [`CLIENTS`] order.
#[derive(Debug, Clone)]
pub struct Cell {
    /// stdio or http.
    pub transport: Transport,
    /// Pinning.
    pub pin: Pin,
    /// What was measured.
    pub scenario: Scenario,
    /// ours, rmcp, floor: `None` when the client failed or is missing.
    pub results: [Option<Measurement>; 3],
}

/// One row group of the stack's overhead: the bare session and the full stack on one
/// (transport, pin, scenario).
#[derive(Debug, Clone)]
pub struct StackCell {
    /// stdio or http.
    pub transport: Transport,
    /// Pinning.
    pub pin: Pin,
    /// What was measured.
    pub scenario: Scenario,
    /// `bench-client-ours`: the session alone.
    pub bare: Option<Measurement>,
    /// `bench-client-stack`: the facade and its stack in front of the session.
    pub stack: Option<Measurement>,
}

/// The stack-overhead table: bare session, full stack, their ratio and difference.
pub fn render_stack_table(cells: &[StackCell]) -> String {
    let mut out = String::from(
        "| transport | pin | scenario | metric | bare session | full stack | stack/bare | stack − bare |\n\
         |---|---|---|---|---:|---:|---:|---:|\n",
    );
    for cell in cells {
        let metrics: &[Metric] = match cell.scenario.mode {
            Mode::Latency => &[Metric::P50, Metric::P99, Metric::Cpu],
            Mode::Throughput => &[Metric::CallsPerSec, Metric::Cpu],
        };
        for &metric in metrics {
            let bare = cell.bare.as_ref().map(|m| metric.value(m));
            let stack = cell.stack.as_ref().map(|m| metric.value(m));
            let show = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| metric.format(v));
            let difference = match (stack, bare) {
                (Some(s), Some(b)) => format!("{:+.1}", s - b),
                _ => "n/a".to_owned(),
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                cell.transport.name(),
                cell.pin.name(),
                cell.scenario.label(),
                metric.label(),
                show(bare),
                show(stack),
                ratio(stack, bare),
                difference,
            ));
        }
    }
    out
}

/// Everything the markdown report shows.
#[derive(Debug, Clone)]
pub struct Report {
    /// Header lines (`- key: value` items), in order.
    pub header: Vec<(String, String)>,
    /// The cells, in table order.
    pub cells: Vec<Cell>,
    /// The stack-overhead cells (empty when `bench-client-stack` is not built).
    pub stack_cells: Vec<StackCell>,
    /// Remarks printed under the table (missing clients, failures).
    pub notes: Vec<String>,
}

/// The markdown table alone.
pub fn render_table(cells: &[Cell]) -> String {
    let mut out = String::from(
        "| transport | pin | scenario | metric | ours | rmcp | floor | ours/rmcp | ours/floor |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|\n",
    );
    for cell in cells {
        for &metric in cell.scenario.metrics() {
            let values = cell
                .results
                .each_ref()
                .map(|r| r.as_ref().map(|m| metric.value(m)));
            let shown = values.map(|v| v.map_or_else(|| "n/a".to_owned(), |v| metric.format(v)));
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                cell.transport.name(),
                cell.pin.name(),
                cell.scenario.label(),
                metric.label(),
                shown[0],
                shown[1],
                shown[2],
                ratio(values[0], values[1]),
                ratio(values[0], values[2]),
            ));
        }
    }
    out
}

/// The whole report: title, header, table, notes.
pub fn render(report: &Report) -> String {
    let mut out = String::from("# mcp-bench report\n\n");
    for (key, value) in &report.header {
        out.push_str(&format!("- {key}: {value}\n"));
    }
    out.push('\n');
    out.push_str(&render_table(&report.cells));
    if !report.stack_cells.is_empty() {
        out.push_str(
            "\n## The call stack's overhead\n\nThe same calls through the bare session \
             (`ours`) and through `mcp-client`'s facade with its full default stack (catalog \
             lookup, traced call, timeout, retry, breaker, gate; over HTTP also the pool), \
             `enterprise` profile defaults:\n\n",
        );
        out.push_str(&render_stack_table(&report.stack_cells));
    }
    if !report.notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        for note in &report.notes {
            out.push_str(&format!("- {note}\n"));
        }
    }
    out
}

/// The version of `package` in a `Cargo.lock`'s text (the first one listed).
pub fn locked_version(cargo_lock: &str, package: &str) -> Option<String> {
    let wanted = format!("name = \"{package}\"");
    let mut lines = cargo_lock.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == wanted {
            let version = lines
                .next()?
                .strip_prefix("version = \"")?
                .strip_suffix('"')?;
            return Some(version.to_owned());
        }
    }
    None
}

/// `YYYY-MM-DD HH:MM UTC` for seconds since the Unix epoch.
pub fn utc_datetime(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let secs = unix_secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(client: &str, p50: f64, p99: f64, cps: f64, cpu: f64, rss: u64) -> Measurement {
        Measurement {
            client: client.to_owned(),
            calls: 100,
            inflight: 1,
            p50_us: p50,
            p99_us: p99,
            calls_per_sec: cps,
            cpu_us_per_call: cpu,
            max_rss_kib: rss,
        }
    }

    #[test]
    fn ratios_have_two_decimals_and_na_when_missing() {
        assert_eq!(ratio(Some(30.0), Some(40.0)), "0.75");
        assert_eq!(ratio(Some(2.0), Some(3.0)), "0.67");
        assert_eq!(ratio(Some(50.0), Some(5.0)), "10.00");
        assert_eq!(ratio(None, Some(1.0)), "n/a");
        assert_eq!(ratio(Some(1.0), None), "n/a");
        assert_eq!(ratio(Some(1.0), Some(0.0)), "n/a");
    }

    #[test]
    fn median_is_per_field() {
        let runs = [
            m("ours", 10.0, 90.0, 300.0, 5.0, 3000),
            m("ours", 30.0, 50.0, 100.0, 7.0, 3100),
            m("ours", 20.0, 70.0, 200.0, 6.0, 2900),
        ];
        let med = median(&runs).unwrap();
        assert_eq!(
            (
                med.p50_us,
                med.p99_us,
                med.calls_per_sec,
                med.cpu_us_per_call,
                med.max_rss_kib
            ),
            (20.0, 70.0, 200.0, 6.0, 3000)
        );
        let even = median(&runs[..2]).unwrap();
        assert_eq!(even.p50_us, 20.0);
        assert!(median(&[]).is_none());
    }

    #[test]
    fn table_has_a_row_per_metric_and_na_for_missing_clients() {
        let cells = [
            Cell {
                transport: Transport::Stdio,
                pin: Pin::Same,
                scenario: SCENARIOS[0],
                results: [
                    Some(m("ours", 30.0, 60.0, 0.0, 20.0, 3000)),
                    None,
                    Some(m("floor", 5.0, 6.0, 0.0, 2.5, 2000)),
                ],
            },
            Cell {
                transport: Transport::Http,
                pin: Pin::Split,
                scenario: SCENARIOS[4],
                results: [
                    Some(m("ours", 0.0, 0.0, 40_000.0, 20.0, 3500)),
                    Some(m("rmcp", 0.0, 0.0, 30_000.0, 25.0, 6500)),
                    Some(m("floor", 0.0, 0.0, 400_000.4, 1.0, 2000)),
                ],
            },
        ];
        let table = render_table(&cells);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2 + 4 + 3, "{table}");
        assert_eq!(
            lines[0],
            "| transport | pin | scenario | metric | ours | rmcp | floor | ours/rmcp | ours/floor |"
        );
        assert_eq!(
            lines[2],
            "| stdio | same | latency small | p50 µs | 30.0 | n/a | 5.0 | n/a | 6.00 |"
        );
        assert_eq!(
            lines[5],
            "| stdio | same | latency small | peak RSS KiB | 3000 | n/a | 2000 | n/a | 1.50 |"
        );
        assert_eq!(
            lines[6],
            "| http | split | throughput small ×64 | calls/s | 40000 | 30000 | 400000 | 1.33 | 0.10 |"
        );
        assert_eq!(
            lines[7],
            "| http | split | throughput small ×64 | client CPU µs/call | 20.0 | 25.0 | 1.0 | 0.80 | 20.00 |"
        );
    }

    #[test]
    fn report_has_header_table_and_notes() {
        let report = Report {
            header: vec![("rmcp".into(), "3.11.0".into())],
            cells: vec![],
            stack_cells: vec![],
            notes: vec!["rmcp: missing".into()],
        };
        let text = render(&report);
        assert!(text.starts_with("# mcp-bench report\n\n- rmcp: 3.11.0\n\n| transport |"));
        assert!(text.ends_with("\nNotes:\n\n- rmcp: missing\n"));
        assert!(!text.contains("overhead"));
    }

    #[test]
    fn stack_rows_show_the_ratio_and_the_difference() {
        let cells = [StackCell {
            transport: Transport::Stdio,
            pin: Pin::Same,
            scenario: STACK_ROWS[0].1[0],
            bare: Some(m("ours", 10.0, 20.0, 0.0, 5.0, 3000)),
            stack: Some(m("stack", 10.4, 21.0, 0.0, 5.2, 3100)),
        }];
        let table = render_stack_table(&cells);
        assert!(
            table.contains("| stdio | same | latency small | p50 µs | 10.0 | 10.4 | 1.04 | +0.4 |"),
            "{table}"
        );
        assert!(
            table.contains("| client CPU µs/call | 5.0 | 5.2 | 1.04 | +0.2 |"),
            "{table}"
        );
    }

    #[test]
    fn scenarios_build_the_client_command_line() {
        let s = SCENARIOS[5];
        assert_eq!(s.label(), "throughput 256KiB ×16");
        assert_eq!(
            s.client_args(true).join(" "),
            "--mode throughput --inflight 16 --warmup 5 --calls 50 --payload large"
        );
        assert_eq!(s.client_args(false)[7], "2000");
    }

    #[test]
    fn reads_a_locked_version() {
        let lock = "[[package]]\nname = \"rmcp-macros\"\nversion = \"1.0.0\"\n\n[[package]]\nname = \"rmcp\"\nversion = \"3.11.0\"\nsource = \"registry\"\n";
        assert_eq!(locked_version(lock, "rmcp").as_deref(), Some("3.11.0"));
        assert_eq!(locked_version(lock, "tokio"), None);
    }

    #[test]
    fn formats_utc_dates() {
        assert_eq!(utc_datetime(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_datetime(951_782_400 + 3_661), "2000-02-29 01:01 UTC");
        assert_eq!(utc_datetime(1_767_225_600), "2026-01-01 00:00 UTC");
    }
}
