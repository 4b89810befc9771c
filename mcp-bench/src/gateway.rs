//! The gateway comparison: the bare session (`bench-client-ours`) calling the fixture's `echo`
//! directly, through `mcph serve` (mcp-gateway) and through `mcp-proxy` (a tower-based Rust
//! gateway from crates.io), each gateway fronting the same fixture over stdio.
//!
//! Routes, per downstream transport:
//!
//! - `direct`: the client starts the fixture itself (what the main table measures);
//! - `mcph`: the client starts `mcph serve --config CFG` (stdio), or `mcph serve --config CFG
//!   --http 127.0.0.1:0` (Streamable HTTP: it prints `listening on http://ADDR/mcp`), and CFG
//!   names the fixture as the one stdio server; the tool keeps its name (`echo`);
//! - `mcp-proxy`: Streamable HTTP only — its command line has no stdio mode (`--config`,
//!   `--check`, `--import-mcp-json`, `--from-mcp-json`) and it always binds TCP — started as
//!   `mcp-proxy --config TOML`, the TOML importing CFG (`import_backends`) and giving the listen
//!   address (a free loopback port; `--from-mcp-json` always listens on 8080) and the log
//!   level (`warn`: its default, `info`, logs every request); it serves MCP at `/`, prefixes
//!   names (`fixture/echo`) and prints no address, so the client waits for the port.
//!
//! Pinning as in the main table: the client on CPU 0, the server it starts on CPU 0 (`same`)
//! or CPU 1 (`split`); a gateway's upstream fixture inherits the gateway's CPU.
//!
//! Every metric is the median over the run's repeats, the routes interleaved within each
//! repeat. Besides the client's CPU, the client reads the CPU of the process it started (the
//! gateway, or the fixture when direct) and of that process's children (the fixture behind a
//! gateway) from `/proc` before and after the measured calls ([`crate::usage::ServerUsage`]).
//!
//! [`gateway_rows`] derives one [`GatewayRow`] per (transport, pin, scenario, metric) and
//! [`gateway_targets`] checks them against the targets ([`P50_ADDED_LIMIT_US`],
//! [`THROUGHPUT_RATIO_LIMIT`], and mcph better than mcp-proxy on every row);
//! [`render_gateway`] writes the markdown section, and `report.json` carries both as `gateway`.

use serde::Serialize;

use crate::args::{Mode, Transport};
use crate::measure::Measurement;
use crate::report::{ratio, ratio_value, Metric, Pin, Scenario};
use crate::scenario::Payload;

/// How the client reaches the fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Route {
    /// The client starts the fixture itself.
    #[serde(rename = "direct")]
    Direct,
    /// Through `mcph serve`.
    #[serde(rename = "mcph")]
    Mcph,
    /// Through `mcp-proxy`.
    #[serde(rename = "mcp-proxy")]
    McpProxy,
}

impl Route {
    /// Every route, in column order (and in the order each repeat runs them).
    pub const ALL: [Route; 3] = [Route::Direct, Route::Mcph, Route::McpProxy];

    /// `direct`, `mcph` or `mcp-proxy`.
    pub fn name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::Mcph => "mcph",
            Route::McpProxy => "mcp-proxy",
        }
    }
}

/// The gateway's scenarios over stdio: the small echo, sequential, and with 1 and 16 in flight.
pub const STDIO_SCENARIOS: &[Scenario] = &[
    Scenario::latency(Payload::Small, 20_000, 500),
    Scenario::throughput(Payload::Small, 1, 20_000, 500),
    Scenario::throughput(Payload::Small, 16, 50_000, 500),
];

/// The same over Streamable HTTP (fewer calls: a round trip costs more).
pub const HTTP_SCENARIOS: &[Scenario] = &[
    Scenario::latency(Payload::Small, 10_000, 300),
    Scenario::throughput(Payload::Small, 1, 10_000, 300),
    Scenario::throughput(Payload::Small, 16, 20_000, 300),
];

/// The transports and their scenarios, in report order.
pub const TRANSPORTS: &[(Transport, &[Scenario])] = &[
    (Transport::Stdio, STDIO_SCENARIOS),
    (Transport::Http, HTTP_SCENARIOS),
];

/// Target: the gateway adds at most this much to the direct p50, µs.
pub const P50_ADDED_LIMIT_US: f64 = 15.0;

/// Target: the gateway keeps at least this fraction of the direct throughput.
pub const THROUGHPUT_RATIO_LIMIT: f64 = 0.8;

/// The rows of one scenario.
pub fn metrics(scenario: &Scenario) -> &'static [Metric] {
    match scenario.mode {
        Mode::Latency => &[
            Metric::P50,
            Metric::P99,
            Metric::Cpu,
            Metric::ServerCpu,
            Metric::UpstreamCpu,
            Metric::TotalCpu,
            Metric::ServerRss,
        ],
        Mode::Throughput => &[
            Metric::CallsPerSec,
            Metric::Cpu,
            Metric::ServerCpu,
            Metric::UpstreamCpu,
            Metric::TotalCpu,
        ],
    }
}

/// One (transport, pin, scenario): each route's median over the repeats.
#[derive(Debug, Clone)]
pub struct GatewayCell {
    /// The client's transport to what it starts.
    pub transport: Transport,
    /// Pinning.
    pub pin: Pin,
    /// What was measured.
    pub scenario: Scenario,
    /// Indexed by [`Route`] (in [`Route::ALL`] order): `None` when the route is unavailable
    /// or failed on every repeat.
    pub results: [Option<Measurement>; 3],
}

impl GatewayCell {
    /// `route`'s median value of `metric`, if it has one.
    pub fn value(&self, route: Route, metric: Metric) -> Option<f64> {
        self.results[route as usize]
            .as_ref()
            .and_then(|m| metric.value(m))
    }
}

/// One entry of `report.json`'s `gateway.rows`: one metric of one cell.
///
/// Figures are medians as measured; a figure is `null` when its route is unavailable or
/// failed, a ratio or difference when either side is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayRow {
    /// `stdio` or `http` (client to what it starts).
    pub transport: Transport,
    /// `same`, `split` or `none`.
    pub pin: Pin,
    /// `latency small`, `throughput small ×1`, `throughput small ×16`.
    pub scenario: String,
    /// The row label with its unit (`p50 µs`, `calls/s`, `server CPU µs/call`, …).
    pub metric: Metric,
    /// `true` for `calls/s`.
    pub higher_is_better: bool,
    /// The client straight to the fixture.
    pub direct: Option<f64>,
    /// Through `mcph serve`.
    pub mcph: Option<f64>,
    /// Through `mcp-proxy`.
    pub mcp_proxy: Option<f64>,
    /// `mcph / direct`.
    pub mcph_over_direct: Option<f64>,
    /// `mcph − direct`, in the metric's unit.
    pub mcph_minus_direct: Option<f64>,
    /// `mcp-proxy / direct`.
    pub mcp_proxy_over_direct: Option<f64>,
    /// `mcph / mcp-proxy`.
    pub mcph_over_mcp_proxy: Option<f64>,
}

/// One row per (transport, pin, scenario, metric) of `cells`, in table order.
pub fn gateway_rows(cells: &[GatewayCell]) -> Vec<GatewayRow> {
    let mut rows = Vec::new();
    for cell in cells {
        for &metric in metrics(&cell.scenario) {
            let [direct, mcph, mcp_proxy] = Route::ALL.map(|r| cell.value(r, metric));
            rows.push(GatewayRow {
                transport: cell.transport,
                pin: cell.pin,
                scenario: cell.scenario.label(),
                metric,
                higher_is_better: metric.higher_is_better(),
                direct,
                mcph,
                mcp_proxy,
                mcph_over_direct: ratio_value(mcph, direct),
                mcph_minus_direct: mcph.zip(direct).map(|(g, d)| g - d),
                mcp_proxy_over_direct: ratio_value(mcp_proxy, direct),
                mcph_over_mcp_proxy: ratio_value(mcph, mcp_proxy),
            });
        }
    }
    rows
}

/// Which target a [`Target`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// `mcph p50 − direct p50 ≤ 15 µs` (latency small).
    P50Added,
    /// `mcph calls/s ÷ direct calls/s ≥ 0.8` (×1 and ×16).
    ThroughputKept,
    /// mcph better than mcp-proxy (lower, or higher for calls/s) on one row.
    BeatsMcpProxy,
}

/// One target checked against one row: `report.json`'s `gateway.targets`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    /// What is checked.
    pub kind: TargetKind,
    /// The row's transport.
    pub transport: Transport,
    /// The row's pin.
    pub pin: Pin,
    /// The row's scenario.
    pub scenario: String,
    /// The row's metric.
    pub metric: Metric,
    /// The checked figure: µs added, the throughput ratio, or `mcph / mcp-proxy`.
    pub value: Option<f64>,
    /// The bound: 15 µs, 0.8, or 1 (`mcph / mcp-proxy` below 1, or above for calls/s).
    pub limit: f64,
    /// Whether the target is met; `null` when a figure is missing.
    pub met: Option<bool>,
}

/// Every target against `rows`: p50 added and throughput kept per (transport, pin), and mcph
/// against mcp-proxy on every row both have, except the upstream CPU (the fixture's work, not
/// the gateway's) — rows where mcp-proxy has no figure are listed with `met: null`.
pub fn gateway_targets(rows: &[GatewayRow]) -> Vec<Target> {
    let mut targets = Vec::new();
    let target = |kind, row: &GatewayRow, value: Option<f64>, limit, met: Option<bool>| Target {
        kind,
        transport: row.transport,
        pin: row.pin,
        scenario: row.scenario.clone(),
        metric: row.metric,
        value,
        limit,
        met,
    };
    for row in rows {
        if row.metric == Metric::P50 {
            let added = row.mcph_minus_direct;
            targets.push(target(
                TargetKind::P50Added,
                row,
                added,
                P50_ADDED_LIMIT_US,
                added.map(|a| a <= P50_ADDED_LIMIT_US),
            ));
        }
        if row.metric == Metric::CallsPerSec {
            let kept = row.mcph_over_direct;
            targets.push(target(
                TargetKind::ThroughputKept,
                row,
                kept,
                THROUGHPUT_RATIO_LIMIT,
                kept.map(|k| k >= THROUGHPUT_RATIO_LIMIT),
            ));
        }
    }
    for row in rows.iter().filter(|r| r.metric != Metric::UpstreamCpu) {
        let versus = row.mcph_over_mcp_proxy;
        let beats = versus.map(|v| {
            if row.higher_is_better {
                v > 1.0
            } else {
                v < 1.0
            }
        });
        targets.push(target(TargetKind::BeatsMcpProxy, row, versus, 1.0, beats));
    }
    targets
}

fn met_word(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "n/a",
    }
}

/// The markdown section: what was run, the table, the targets and their tally.
pub fn render_gateway(cells: &[GatewayCell], route_notes: &[String]) -> String {
    let rows = gateway_rows(cells);
    let targets = gateway_targets(&rows);
    let mut out = String::from(
        "\n## Through a gateway: `mcph serve` and `mcp-proxy`\n\n\
         The bare session (`bench-client-ours`) calling the fixture's `echo` (small) directly, \
         through `mcph serve --config CFG` and through `mcp-proxy` 0.6.0 (`--config TOML`, the \
         TOML importing CFG), each gateway fronting the same fixture over stdio; the client \
         reaches the gateway over stdio or Streamable HTTP. `server CPU` = the process the \
         client starts (the gateway; the fixture when direct), `upstream CPU` = its children \
         (the fixture behind a gateway), both from `/proc` around the measured calls \
         (the threads' `sched` runtimes; 10 ms ticks of `stat` when a thread came or went); \
         `total CPU` = client + server + upstream. Medians of the run's repeats, routes \
         interleaved (`report.json`: `gateway`).\n\n",
    );
    for note in route_notes {
        out.push_str(&format!("- {note}\n"));
    }
    if !route_notes.is_empty() {
        out.push('\n');
    }
    out.push_str(
        "| transport | pin | scenario | metric | direct | mcph | mcp-proxy | mcph/direct \
         | mcph − direct | mcp-proxy/direct | mcph/mcp-proxy |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in &rows {
        let metric = row.metric;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.transport.name(),
            row.pin.name(),
            row.scenario,
            metric.label(),
            metric.format_or_na(row.direct),
            metric.format_or_na(row.mcph),
            metric.format_or_na(row.mcp_proxy),
            ratio(row.mcph, row.direct),
            row.mcph_minus_direct
                .map_or_else(|| "n/a".to_owned(), |d| metric.format_difference(d)),
            ratio(row.mcp_proxy, row.direct),
            ratio(row.mcph, row.mcp_proxy),
        ));
    }
    out.push_str(&format!(
        "\n### Targets\n\n\
         mcph adds ≤ {P50_ADDED_LIMIT_US} µs p50 over direct; keeps ≥ {THROUGHPUT_RATIO_LIMIT}× \
         the direct throughput; beats mcp-proxy on every row (lower, or higher for calls/s; \
         every row but the upstream CPU, which is the fixture's).\n\n\
         | target | transport | pin | scenario | metric | value | limit | |\n\
         |---|---|---|---|---|---:|---:|---|\n",
    ));
    for t in &targets {
        let (what, value, limit) = match t.kind {
            TargetKind::P50Added => (
                "p50 added by mcph",
                t.value.map_or("n/a".to_owned(), |v| format!("{v:+.1} µs")),
                format!("≤ {:.0} µs", t.limit),
            ),
            TargetKind::ThroughputKept => (
                "throughput kept by mcph",
                t.value.map_or("n/a".to_owned(), |v| format!("{v:.2}×")),
                format!("≥ {:.1}×", t.limit),
            ),
            TargetKind::BeatsMcpProxy => (
                "mcph/mcp-proxy",
                t.value.map_or("n/a".to_owned(), |v| format!("{v:.2}")),
                if t.metric.higher_is_better() {
                    "> 1".to_owned()
                } else {
                    "< 1".to_owned()
                },
            ),
        };
        out.push_str(&format!(
            "| {what} | {} | {} | {} | {} | {value} | {limit} | {} |\n",
            t.transport.name(),
            t.pin.name(),
            t.scenario,
            t.metric.label(),
            met_word(t.met),
        ));
    }
    let count = |kind: TargetKind| {
        let of_kind: Vec<&Target> = targets.iter().filter(|t| t.kind == kind).collect();
        let met = of_kind.iter().filter(|t| t.met == Some(true)).count();
        let known = of_kind.iter().filter(|t| t.met.is_some()).count();
        format!("{met} of {known}")
    };
    out.push_str(&format!(
        "\nMet: p50 added {}; throughput kept {}; beats mcp-proxy {} rows (rows without an \
         mcp-proxy figure not counted).\n",
        count(TargetKind::P50Added),
        count(TargetKind::ThroughputKept),
        count(TargetKind::BeatsMcpProxy),
    ));
    out
}

/// `report.json`'s `gateway` section.
#[derive(Debug, Clone, Serialize)]
pub struct GatewaySection {
    /// One per (transport, pin, scenario, metric).
    pub rows: Vec<GatewayRow>,
    /// Every target checked.
    pub targets: Vec<Target>,
    /// What could not be measured, and why.
    pub notes: Vec<String>,
}

impl GatewaySection {
    /// The rows and targets of `cells`.
    pub fn new(cells: &[GatewayCell], notes: &[String]) -> GatewaySection {
        let rows = gateway_rows(cells);
        let targets = gateway_targets(&rows);
        GatewaySection {
            rows,
            targets,
            notes: notes.to_vec(),
        }
    }
}

/// The `.mcp.json` both gateways front: one stdio server `fixture` running `fixture`.
pub fn mcp_json(fixture: &str) -> String {
    serde_json::json!({
        "mcpServers": { "fixture": { "command": fixture, "args": [] } }
    })
    .to_string()
}

/// mcp-proxy's TOML: its one backend imported from the `.mcp.json` at `mcp_json` (the
/// `import_backends` key: `--import-mcp-json` is merged only after the TOML is validated, and
/// a TOML without a backend fails that), loopback `port`, warnings only.
pub fn mcp_proxy_toml(port: u16, mcp_json: &str) -> String {
    // A JSON string is a TOML basic string (the same escapes).
    let path = serde_json::Value::from(mcp_json).to_string();
    format!(
        "[proxy]\nname = \"bench\"\nimport_backends = {path}\n\n[proxy.listen]\n\
         host = \"127.0.0.1\"\nport = {port}\n\n[observability]\nlog_level = \"warn\"\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::m;

    fn with_server(mut m: Measurement, server: f64, upstream: Option<f64>) -> Measurement {
        m.server_cpu_us_per_call = Some(server);
        m.upstream_cpu_us_per_call = upstream;
        m.server_max_rss_kib = Some(4000);
        m
    }

    fn cells() -> Vec<GatewayCell> {
        vec![
            GatewayCell {
                transport: Transport::Stdio,
                pin: Pin::Same,
                scenario: STDIO_SCENARIOS[0],
                results: [
                    Some(with_server(
                        m("ours", 20.0, 40.0, 0.0, 8.0, 3000),
                        10.0,
                        None,
                    )),
                    Some(with_server(
                        m("ours", 30.0, 60.0, 0.0, 8.5, 3000),
                        15.0,
                        Some(10.0),
                    )),
                    None,
                ],
            },
            GatewayCell {
                transport: Transport::Http,
                pin: Pin::Split,
                scenario: HTTP_SCENARIOS[2],
                results: [
                    Some(m("ours", 0.0, 0.0, 40_000.0, 20.0, 3500)),
                    Some(m("ours", 0.0, 0.0, 30_000.0, 21.0, 3500)),
                    Some(m("ours", 0.0, 0.0, 20_000.0, 22.0, 3500)),
                ],
            },
        ]
    }

    #[test]
    fn rows_compare_each_gateway_with_direct_and_with_each_other() {
        let rows = gateway_rows(&cells());
        assert_eq!(rows.len(), 7 + 5);
        let p50 = &rows[0];
        assert_eq!(
            (p50.metric, p50.direct, p50.mcph),
            (Metric::P50, Some(20.0), Some(30.0))
        );
        assert_eq!(
            (p50.mcph_over_direct, p50.mcph_minus_direct),
            (Some(1.5), Some(10.0))
        );
        assert_eq!((p50.mcp_proxy, p50.mcph_over_mcp_proxy), (None, None));
        let upstream = &rows[4];
        assert_eq!(upstream.metric, Metric::UpstreamCpu);
        assert_eq!((upstream.direct, upstream.mcph), (None, Some(10.0)));
        let total = &rows[5];
        assert_eq!((total.direct, total.mcph), (Some(18.0), Some(33.5)));
        let calls = &rows[7];
        assert_eq!(calls.metric, Metric::CallsPerSec);
        assert_eq!(calls.mcph_over_direct, Some(0.75));
        assert_eq!(calls.mcph_over_mcp_proxy, Some(1.5));
        // No server figures over http in this fixture: n/a, not zero.
        assert_eq!(rows[9].metric, Metric::ServerCpu);
        assert_eq!(rows[9].direct, None);
    }

    #[test]
    fn targets_check_the_limits_and_say_na_without_a_figure() {
        let targets = gateway_targets(&gateway_rows(&cells()));
        let p50 = &targets[0];
        assert_eq!(
            (p50.kind, p50.value, p50.met),
            (TargetKind::P50Added, Some(10.0), Some(true))
        );
        let kept = &targets[1];
        assert_eq!(
            (kept.kind, kept.value, kept.met),
            (TargetKind::ThroughputKept, Some(0.75), Some(false))
        );
        let versus: Vec<&Target> = targets
            .iter()
            .filter(|t| t.kind == TargetKind::BeatsMcpProxy)
            .collect();
        // Every row but the two upstream-CPU ones.
        assert_eq!(versus.len(), 12 - 2);
        assert!(versus[..6].iter().all(|t| t.met.is_none()));
        let calls = versus[6];
        assert_eq!((calls.metric, calls.met), (Metric::CallsPerSec, Some(true)));
        let cpu = versus[7];
        assert_eq!((cpu.metric, cpu.met), (Metric::Cpu, Some(true)));
    }

    #[test]
    fn the_section_has_the_table_the_targets_and_the_tally() {
        let text = render_gateway(&cells(), &["mcp-proxy: no stdio".to_owned()]);
        assert!(text.contains("- mcp-proxy: no stdio\n"), "{text}");
        assert!(text.contains(
            "| stdio | same | latency small | p50 µs | 20.0 | 30.0 | n/a | 1.50 | +10.0 | n/a | n/a |"
        ));
        assert!(text.contains(
            "| http | split | throughput small ×16 | calls/s | 40000 | 30000 | 20000 | 0.75 | -10000 | 0.50 | 1.50 |"
        ));
        assert!(text.contains(
            "| p50 added by mcph | stdio | same | latency small | p50 µs | +10.0 µs | ≤ 15 µs | met |"
        ));
        assert!(text.contains(
            "| throughput kept by mcph | http | split | throughput small ×16 | calls/s | 0.75× | ≥ 0.8× | **missed** |"
        ));
        assert!(
            text.contains(
                "Met: p50 added 1 of 1; throughput kept 0 of 1; beats mcp-proxy 2 of 2 rows"
            ),
            "{text}"
        );
        let json = serde_json::to_value(GatewaySection::new(&cells(), &[])).unwrap();
        assert_eq!(json["rows"][0]["metric"], "p50 µs");
        assert_eq!(json["rows"][0]["mcph_minus_direct"], 10.0);
        assert!(json["rows"][0]["mcp_proxy"].is_null());
        assert_eq!(json["targets"][0]["kind"], "p50_added");
        assert_eq!(json["targets"][0]["met"], true);
    }

    #[test]
    fn the_configurations_name_the_fixture_and_the_port() {
        let json: serde_json::Value = serde_json::from_str(&mcp_json("/b/fix")).unwrap();
        assert_eq!(json["mcpServers"]["fixture"]["command"], "/b/fix");
        let toml = mcp_proxy_toml(4321, "/o/fixture.mcp.json");
        assert!(toml.contains("port = 4321\n"), "{toml}");
        assert!(
            toml.contains("import_backends = \"/o/fixture.mcp.json\"\n"),
            "{toml}"
        );
    }
}
