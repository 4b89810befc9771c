//! The call stack's overhead: the bare session (`ours`) against `mcp-client`'s facade with its
//! full default stack (`stack`), on every (transport, pin, scenario, metric) of the main table.
//!
//! The rows come from the main table's cells — the same per-metric medians, measured in the
//! same interleaved repeats — so nothing is measured twice. [`stack_overhead`] derives them;
//! the markdown report shows them with [`render_stack_table`], and `report.json` carries them
//! as its `stack_overhead` section, for a script to read `stack/bare` per transport.

use serde::Serialize;

use crate::args::Transport;
use crate::report::{ratio, ratio_value, Cell, Client, Metric, Pin};

/// One entry of `report.json`'s `stack_overhead` section: one metric of one cell.
///
/// ```json
/// {"transport": "stdio", "pin": "same", "scenario": "latency small", "metric": "p50 µs",
///  "higher_is_better": false, "bare": 8.0, "stack": 10.0, "rmcp": 16.0, "floor": 2.5,
///  "stack_over_bare": 1.25, "stack_minus_bare": 2.0, "stack_over_rmcp": 0.625,
///  "stack_over_floor": 4.0}
/// ```
///
/// Every figure is the median over the run's repeats, as measured (not rounded); a figure is
/// `null` when its client is missing or failed on every repeat, and a ratio or difference is
/// `null` when either side is (or the ratio is not finite).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StackOverhead {
    /// `stdio` or `http`.
    pub transport: Transport,
    /// `same`, `split` or `none` (unpinned).
    pub pin: Pin,
    /// The scenario's label, as in the table: `latency small`, `throughput small ×16`, ….
    pub scenario: String,
    /// The metric's row label, with its unit: `p50 µs`, `p99 µs`, `calls/s`,
    /// `client CPU µs/call`, `peak RSS KiB`.
    pub metric: Metric,
    /// `true` for `calls/s` (a ratio above 1 is better), `false` for the others (below 1 is).
    pub higher_is_better: bool,
    /// `bench-client-ours`: the bare session.
    pub bare: Option<f64>,
    /// `bench-client-stack`: the facade and its full default stack in front of that session.
    pub stack: Option<f64>,
    /// `bench-client-rmcp`: the official Rust SDK.
    pub rmcp: Option<f64>,
    /// `bench-client-floor`: no MCP, the same bytes.
    pub floor: Option<f64>,
    /// `stack / bare`: what the stack costs relative to the session alone.
    pub stack_over_bare: Option<f64>,
    /// `stack − bare`, in the metric's unit.
    pub stack_minus_bare: Option<f64>,
    /// `stack / rmcp`: what a harness gets, against the SDK.
    pub stack_over_rmcp: Option<f64>,
    /// `stack / floor`: what a harness gets, against no MCP at all.
    pub stack_over_floor: Option<f64>,
}

/// One row per (transport, pin, scenario, metric) of `cells`, in table order.
pub fn stack_overhead(cells: &[Cell]) -> Vec<StackOverhead> {
    let mut rows = Vec::new();
    for cell in cells {
        for &metric in cell.scenario.metrics() {
            let [bare, stack, rmcp, floor] = Client::ALL.map(|c| cell.value(c, metric));
            rows.push(StackOverhead {
                transport: cell.transport,
                pin: cell.pin,
                scenario: cell.scenario.label(),
                metric,
                higher_is_better: metric.higher_is_better(),
                bare,
                stack,
                rmcp,
                floor,
                stack_over_bare: ratio_value(stack, bare),
                stack_minus_bare: stack.zip(bare).map(|(s, b)| s - b),
                stack_over_rmcp: ratio_value(stack, rmcp),
                stack_over_floor: ratio_value(stack, floor),
            });
        }
    }
    rows
}

/// The markdown table: bare session, full stack, their ratio and difference.
pub fn render_stack_table(rows: &[StackOverhead]) -> String {
    let mut out = String::from(
        "| transport | pin | scenario | metric | bare session | full stack | stack/bare | stack − bare |\n\
         |---|---|---|---|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let metric = row.metric;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.transport.name(),
            row.pin.name(),
            row.scenario,
            metric.label(),
            metric.format_or_na(row.bare),
            metric.format_or_na(row.stack),
            ratio(row.stack, row.bare),
            row.stack_minus_bare
                .map_or_else(|| "n/a".to_owned(), |d| metric.format_difference(d)),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::m;
    use crate::report::{HTTP_SCENARIOS, SCENARIOS};

    /// stdio latency with all four clients; http ×16 throughput without the stack.
    fn cells() -> Vec<Cell> {
        vec![
            Cell {
                transport: Transport::Stdio,
                pin: Pin::Same,
                scenario: SCENARIOS[0],
                results: [
                    Some(m("ours", 8.0, 20.0, 0.0, 5.0, 3000)),
                    Some(m("stack", 10.0, 25.0, 0.0, 6.0, 4000)),
                    Some(m("rmcp", 16.0, 40.0, 0.0, 12.0, 6000)),
                    Some(m("floor", 2.5, 5.0, 0.0, 1.5, 2000)),
                ],
            },
            Cell {
                transport: Transport::Http,
                pin: Pin::Split,
                scenario: HTTP_SCENARIOS[3],
                results: [
                    Some(m("ours", 0.0, 0.0, 40_000.0, 20.0, 3500)),
                    None,
                    Some(m("rmcp", 0.0, 0.0, 32_000.0, 25.0, 6500)),
                    Some(m("floor", 0.0, 0.0, 100_000.0, 2.0, 2000)),
                ],
            },
        ]
    }

    #[test]
    fn one_row_per_metric_of_every_cell_with_the_stack_ratios() {
        let rows = stack_overhead(&cells());
        // latency: p50, p99, CPU, RSS; throughput: calls/s, CPU, RSS.
        assert_eq!(rows.len(), 4 + 3);
        let p50 = &rows[0];
        assert_eq!(
            (p50.transport, p50.pin, p50.scenario.as_str(), p50.metric),
            (Transport::Stdio, Pin::Same, "latency small", Metric::P50)
        );
        assert_eq!(
            (p50.bare, p50.stack, p50.rmcp, p50.floor),
            (Some(8.0), Some(10.0), Some(16.0), Some(2.5))
        );
        assert_eq!(p50.stack_over_bare, Some(1.25));
        assert_eq!(p50.stack_minus_bare, Some(2.0));
        assert_eq!(p50.stack_over_rmcp, Some(0.625));
        assert_eq!(p50.stack_over_floor, Some(4.0));
        assert!(!p50.higher_is_better);
        let rss = &rows[3];
        assert_eq!(rss.metric, Metric::Rss);
        assert_eq!(
            (rss.stack_over_bare, rss.stack_minus_bare),
            (Some(4000.0 / 3000.0), Some(1000.0))
        );
    }

    #[test]
    fn a_missing_stack_is_null_but_the_other_figures_stay() {
        let rows = stack_overhead(&cells());
        let calls = &rows[4];
        assert_eq!(
            (calls.scenario.as_str(), calls.metric),
            ("throughput small ×16", Metric::CallsPerSec)
        );
        assert!(calls.higher_is_better);
        assert_eq!(
            (calls.bare, calls.stack, calls.rmcp, calls.floor),
            (Some(40_000.0), None, Some(32_000.0), Some(100_000.0))
        );
        assert_eq!(
            (
                calls.stack_over_bare,
                calls.stack_minus_bare,
                calls.stack_over_rmcp,
                calls.stack_over_floor
            ),
            (None, None, None, None)
        );
    }

    #[test]
    fn the_json_section_names_its_fields_and_writes_null_for_missing_values() {
        let json = serde_json::to_value(stack_overhead(&cells())).unwrap();
        assert_eq!(
            json[0],
            serde_json::json!({
                "transport": "stdio", "pin": "same", "scenario": "latency small",
                "metric": "p50 µs", "higher_is_better": false,
                "bare": 8.0, "stack": 10.0, "rmcp": 16.0, "floor": 2.5,
                "stack_over_bare": 1.25, "stack_minus_bare": 2.0,
                "stack_over_rmcp": 0.625, "stack_over_floor": 4.0,
            })
        );
        assert_eq!(json[4]["transport"], "http");
        assert_eq!(json[4]["pin"], "split");
        assert_eq!(json[4]["metric"], "calls/s");
        assert_eq!(json[4]["bare"], 40_000.0);
        assert!(json[4]["stack"].is_null());
        assert!(json[4]["stack_over_bare"].is_null());
        assert!(json[4]["stack_over_rmcp"].is_null());
    }

    #[test]
    fn the_table_shows_the_ratio_and_the_signed_difference_or_na() {
        let table = render_stack_table(&stack_overhead(&cells()));
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2 + 4 + 3, "{table}");
        assert_eq!(
            lines[0],
            "| transport | pin | scenario | metric | bare session | full stack | stack/bare | stack − bare |"
        );
        assert_eq!(
            lines[2],
            "| stdio | same | latency small | p50 µs | 8.0 | 10.0 | 1.25 | +2.0 |"
        );
        assert_eq!(
            lines[5],
            "| stdio | same | latency small | peak RSS KiB | 3000 | 4000 | 1.33 | +1000 |"
        );
        assert_eq!(
            lines[6],
            "| http | split | throughput small ×16 | calls/s | 40000 | n/a | n/a | n/a |"
        );
    }
}
