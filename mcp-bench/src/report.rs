//! The driver's pure logic: the clients, the scenarios, the metrics of each, medians of
//! repeated runs, ratios, and the markdown report (its stack-overhead part comes from
//! [`stack_overhead`](crate::stack_overhead)).

use serde::{Serialize, Serializer};

use crate::args::{Mode, Transport};
use crate::measure::Measurement;
use crate::scenario::Payload;
use crate::stack_overhead::{render_stack_table, stack_overhead};

/// The clients compared, in column order (and in the order each repeat runs them). Each is the
/// binary `bench-client-<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// The bare session: `mcp-core` + `mcp-session` + the transport, nothing in front.
    Ours,
    /// `mcp-client`'s facade with its full default stack in front of the same session: what a
    /// harness gets.
    Stack,
    /// The official Rust SDK.
    Rmcp,
    /// No MCP: the same bytes over a raw pipe (or one keep-alive HTTP connection).
    Floor,
}

impl Client {
    /// Every client, in column order.
    pub const ALL: [Client; 4] = [Client::Ours, Client::Stack, Client::Rmcp, Client::Floor];

    /// `ours`, `stack`, `rmcp` or `floor`.
    pub fn name(self) -> &'static str {
        match self {
            Client::Ours => "ours",
            Client::Stack => "stack",
            Client::Rmcp => "rmcp",
            Client::Floor => "floor",
        }
    }

    /// Its executable's file name.
    pub fn binary(self) -> String {
        format!("bench-client-{}", self.name())
    }

    /// Whether the driver runs without it (its column then shows `n/a`, with a note). The bare
    /// session and the floor are what every ratio needs, so they are required.
    pub fn optional(self) -> bool {
        matches!(self, Client::Stack | Client::Rmcp)
    }
}

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

/// The transports and their scenarios, in report order.
pub const TRANSPORTS: &[(Transport, &[Scenario])] = &[
    (Transport::Stdio, SCENARIOS),
    (Transport::Http, HTTP_SCENARIOS),
];

impl Scenario {
    /// Sequential calls with this payload; `full_calls` measured in a full run, `quick_calls`
    /// with `--quick`.
    pub const fn latency(payload: Payload, full_calls: usize, quick_calls: usize) -> Scenario {
        Scenario {
            mode: Mode::Latency,
            payload,
            inflight: 1,
            full_calls,
            quick_calls,
        }
    }

    /// `inflight` calls in flight at all times with this payload.
    pub const fn throughput(
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
    /// CPU per call of the server process the client started (a gateway, or the server when
    /// direct), µs.
    ServerCpu,
    /// CPU per call of that server's own children (what a gateway fronts), µs.
    UpstreamCpu,
    /// Client + server + upstream CPU per call, µs: the whole machine's cost of a call.
    TotalCpu,
    /// Peak RSS of the server process the client started, KiB.
    ServerRss,
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
            Metric::ServerCpu => "server CPU µs/call",
            Metric::UpstreamCpu => "upstream CPU µs/call",
            Metric::TotalCpu => "total CPU µs/call",
            Metric::ServerRss => "server peak RSS KiB",
        }
    }

    /// Its value in a measurement (`None` for a server figure the client could not read).
    pub fn value(self, m: &Measurement) -> Option<f64> {
        match self {
            Metric::P50 => Some(m.p50_us),
            Metric::P99 => Some(m.p99_us),
            Metric::CallsPerSec => Some(m.calls_per_sec),
            Metric::Cpu => Some(m.cpu_us_per_call),
            Metric::Rss => Some(m.max_rss_kib as f64),
            Metric::ServerCpu => m.server_cpu_us_per_call,
            Metric::UpstreamCpu => m.upstream_cpu_us_per_call,
            Metric::TotalCpu => m.server_cpu_us_per_call.map(|server| {
                m.cpu_us_per_call + server + m.upstream_cpu_us_per_call.unwrap_or(0.0)
            }),
            Metric::ServerRss => m.server_max_rss_kib.map(|k| k as f64),
        }
    }

    /// Whether more is better (calls/s); for the others less is.
    pub fn higher_is_better(self) -> bool {
        self == Metric::CallsPerSec
    }

    fn decimals(self) -> usize {
        match self {
            Metric::P50
            | Metric::P99
            | Metric::Cpu
            | Metric::ServerCpu
            | Metric::UpstreamCpu
            | Metric::TotalCpu => 1,
            Metric::CallsPerSec | Metric::Rss | Metric::ServerRss => 0,
        }
    }

    /// Formats a value of this metric.
    pub fn format(self, v: f64) -> String {
        format!("{v:.*}", self.decimals())
    }

    /// Formats a value of this metric, or `n/a`.
    pub fn format_or_na(self, v: Option<f64>) -> String {
        v.map_or_else(|| "n/a".to_owned(), |v| self.format(v))
    }

    /// Formats a difference of two values of this metric, always signed.
    pub fn format_difference(self, d: f64) -> String {
        format!("{d:+.*}", self.decimals())
    }
}

/// In `report.json`, a metric is its row label (`p50 µs`, `calls/s`, …).
impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.label())
    }
}

/// `a / b`, or `None` when either is missing or the ratio is not finite.
pub fn ratio_value(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    let r = a? / b?;
    r.is_finite().then_some(r)
}

/// `a / b` with two decimals, or `n/a` when either is missing or the ratio is not finite.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    ratio_value(a, b).map_or_else(|| "n/a".to_owned(), |r| format!("{r:.2}"))
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

/// The median of an optional field over the runs that have it (`None` when none does).
fn median_some(runs: &[Measurement], f: impl Fn(&Measurement) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = runs.iter().filter_map(f).collect();
    (!values.is_empty()).then(|| median_f64(values))
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
        server_cpu_us_per_call: median_some(runs, |m| m.server_cpu_us_per_call),
        upstream_cpu_us_per_call: median_some(runs, |m| m.upstream_cpu_us_per_call),
        server_max_rss_kib: median_some(runs, |m| m.server_max_rss_kib.map(|k| k as f64))
            .map(|k| k.round() as u64),
    })
}

/// The result of one (transport, pin, scenario): each client's median over the repeats.
#[derive(Debug, Clone)]
pub struct Cell {
    /// stdio or http.
    pub transport: Transport,
    /// Pinning.
    pub pin: Pin,
    /// What was measured.
    pub scenario: Scenario,
    /// Indexed by [`Client`] (in [`Client::ALL`] order): `None` when the client failed on
    /// every repeat or is missing.
    pub results: [Option<Measurement>; 4],
}

impl Cell {
    /// `client`'s median value of `metric`, if it has one.
    pub fn value(&self, client: Client, metric: Metric) -> Option<f64> {
        self.results[client as usize]
            .as_ref()
            .and_then(|m| metric.value(m))
    }
}

/// Everything the markdown report shows.
#[derive(Debug, Clone)]
pub struct Report {
    /// Header lines (`- key: value` items), in order.
    pub header: Vec<(String, String)>,
    /// The cells, in table order (none: no main table, e.g. `--only gateway`).
    pub cells: Vec<Cell>,
    /// Markdown sections after the tables (the gateway comparison), in order.
    pub sections: Vec<String>,
    /// Remarks printed under the tables (missing clients, failures).
    pub notes: Vec<String>,
}

/// The main markdown table: every client's median, and the bare session's and the full
/// stack's ratios to rmcp and to the floor.
pub fn render_table(cells: &[Cell]) -> String {
    let mut out = String::from(
        "| transport | pin | scenario | metric | ours | stack | rmcp | floor \
         | ours/rmcp | stack/rmcp | ours/floor | stack/floor |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for cell in cells {
        for &metric in cell.scenario.metrics() {
            let [ours, stack, rmcp, floor] = Client::ALL.map(|c| cell.value(c, metric));
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                cell.transport.name(),
                cell.pin.name(),
                cell.scenario.label(),
                metric.label(),
                metric.format_or_na(ours),
                metric.format_or_na(stack),
                metric.format_or_na(rmcp),
                metric.format_or_na(floor),
                ratio(ours, rmcp),
                ratio(stack, rmcp),
                ratio(ours, floor),
                ratio(stack, floor),
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
    if !report.cells.is_empty() {
        out.push('\n');
        out.push_str(&render_table(&report.cells));
    }
    let overhead = stack_overhead(&report.cells);
    // Without a single stack figure (not built, or it failed everywhere) the table would be
    // all n/a; the notes say why instead.
    if overhead.iter().any(|row| row.stack.is_some()) {
        out.push_str(
            "\n## The call stack's overhead\n\nThe `ours` and `stack` columns above side by \
             side: the same calls through the bare session and through `mcp-client`'s facade \
             with its full default stack (`report.json`: `stack_overhead`).\n\n",
        );
        out.push_str(&render_stack_table(&overhead));
    }
    for section in &report.sections {
        out.push_str(section);
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
pub(crate) mod tests {
    use super::*;

    /// A measurement of `client` with these figures (100 calls, one in flight).
    pub(crate) fn m(client: &str, p50: f64, p99: f64, cps: f64, cpu: f64, rss: u64) -> Measurement {
        Measurement {
            client: client.to_owned(),
            calls: 100,
            inflight: 1,
            p50_us: p50,
            p99_us: p99,
            calls_per_sec: cps,
            cpu_us_per_call: cpu,
            max_rss_kib: rss,
            server_cpu_us_per_call: None,
            upstream_cpu_us_per_call: None,
            server_max_rss_kib: None,
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
        assert_eq!(ratio_value(Some(30.0), Some(40.0)), Some(0.75));
        assert_eq!(ratio_value(Some(0.0), Some(0.0)), None);
        assert_eq!(ratio_value(None, Some(1.0)), None);
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
                    Some(m("stack", 36.0, 72.0, 0.0, 24.0, 4000)),
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
                    None,
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
            "| transport | pin | scenario | metric | ours | stack | rmcp | floor \
             | ours/rmcp | stack/rmcp | ours/floor | stack/floor |"
        );
        assert_eq!(
            lines[1],
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        assert_eq!(
            lines[2],
            "| stdio | same | latency small | p50 µs | 30.0 | 36.0 | n/a | 5.0 | n/a | n/a | 6.00 | 7.20 |"
        );
        assert_eq!(
            lines[5],
            "| stdio | same | latency small | peak RSS KiB | 3000 | 4000 | n/a | 2000 | n/a | n/a | 1.50 | 2.00 |"
        );
        assert_eq!(
            lines[6],
            "| http | split | throughput small ×64 | calls/s | 40000 | n/a | 30000 | 400000 | 1.33 | n/a | 0.10 | n/a |"
        );
        assert_eq!(
            lines[7],
            "| http | split | throughput small ×64 | client CPU µs/call | 20.0 | n/a | 25.0 | 1.0 | 0.80 | n/a | 20.00 | n/a |"
        );
    }

    #[test]
    fn a_cell_reads_each_client_by_name() {
        let cell = Cell {
            transport: Transport::Stdio,
            pin: Pin::Same,
            scenario: SCENARIOS[0],
            results: [
                Some(m("ours", 1.0, 0.0, 0.0, 0.0, 0)),
                Some(m("stack", 2.0, 0.0, 0.0, 0.0, 0)),
                None,
                Some(m("floor", 4.0, 0.0, 0.0, 0.0, 0)),
            ],
        };
        let p50 = Client::ALL.map(|c| cell.value(c, Metric::P50));
        assert_eq!(p50, [Some(1.0), Some(2.0), None, Some(4.0)]);
        assert_eq!(
            Client::ALL.map(Client::binary),
            [
                "bench-client-ours",
                "bench-client-stack",
                "bench-client-rmcp",
                "bench-client-floor"
            ]
        );
        assert_eq!(
            Client::ALL.map(Client::optional),
            [false, true, true, false]
        );
    }

    #[test]
    fn report_has_header_table_and_notes() {
        let report = Report {
            header: vec![("rmcp".into(), "3.11.0".into())],
            cells: vec![Cell {
                transport: Transport::Stdio,
                pin: Pin::Same,
                scenario: SCENARIOS[0],
                results: [None, None, None, None],
            }],
            sections: vec!["\n## More\n".into()],
            notes: vec!["rmcp: missing".into()],
        };
        let text = render(&report);
        assert!(text.starts_with("# mcp-bench report\n\n- rmcp: 3.11.0\n\n| transport |"));
        assert!(text.contains("|\n\n## More\n\nNotes:"), "{text}");
        assert!(text.ends_with("\nNotes:\n\n- rmcp: missing\n"));
        assert!(!text.contains("overhead"));
    }

    #[test]
    fn the_overhead_table_follows_the_main_table_when_the_stack_was_measured() {
        let cell = |stack: Option<Measurement>| Cell {
            transport: Transport::Http,
            pin: Pin::Same,
            scenario: SCENARIOS[0],
            results: [
                Some(m("ours", 10.0, 20.0, 0.0, 5.0, 3000)),
                stack,
                Some(m("rmcp", 20.0, 40.0, 0.0, 10.0, 6000)),
                Some(m("floor", 2.0, 4.0, 0.0, 1.0, 2000)),
            ],
        };
        let report = |cells| Report {
            header: vec![],
            cells,
            sections: vec![],
            notes: vec![],
        };
        let with = render(&report(vec![cell(Some(m(
            "stack", 12.0, 25.0, 0.0, 6.0, 3500,
        )))]));
        let (main, overhead) = with
            .split_once("\n## The call stack's overhead\n")
            .expect("an overhead section");
        assert!(main.contains(
            "| http | same | latency small | p50 µs | 10.0 | 12.0 | 20.0 | 2.0 | 0.50 | 0.60 | 5.00 | 6.00 |"
        ));
        assert!(
            overhead
                .contains("| http | same | latency small | p50 µs | 10.0 | 12.0 | 1.20 | +2.0 |"),
            "{overhead}"
        );
        assert!(overhead.contains("| peak RSS KiB | 3000 | 3500 | 1.17 | +500 |"));
        // No stack figure at all: the stack column says n/a and there is no overhead section.
        let without = render(&report(vec![cell(None)]));
        assert!(without.contains("| p50 µs | 10.0 | n/a | 20.0 | 2.0 | 0.50 | n/a | 5.00 | n/a |"));
        assert!(!without.contains("overhead"));
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
