//! The Prometheus text exposition format, written from a snapshot (so the endpoint and
//! `mcph stats` read the same numbers). Written by hand: the format is a few lines per
//! family, and the `prometheus` crates bring their own registries this crate does not need.

use std::fmt::Write;

use crate::latency::LatencySummary;
use crate::snapshot::{EndpointSnapshot, MetricsSnapshot, OperationSnapshot, ServerSnapshot};

/// Renders `snapshot` with metric names starting with `prefix`.
pub(crate) fn render(snapshot: &MetricsSnapshot, prefix: &str) -> String {
    let mut out = Exposition {
        out: String::with_capacity(4096),
        prefix: sanitize_metric_name(prefix),
    };
    let servers = &snapshot.servers;
    let ops = || {
        servers
            .iter()
            .flat_map(|s| s.operations.iter().map(move |o| (s, o)))
    };

    out.family(
        "calls_total",
        "counter",
        "Calls that ended (successes, errors and cancellations).",
        |f| {
            for (s, o) in ops() {
                f.sample("", &op_labels(s, o, &[]), o.calls as f64);
            }
        },
    );
    out.family(
        "errors_total",
        "counter",
        "Calls that failed, by error type (tool_error includes results with isError: true).",
        |f| {
            for (s, o) in ops() {
                for (error_type, n) in &o.errors_by_type {
                    f.sample(
                        "",
                        &op_labels(s, o, &[("error_type", error_type)]),
                        *n as f64,
                    );
                }
            }
        },
    );
    out.family(
        "cancelled_total",
        "counter",
        "Calls their callers abandoned before they ended.",
        |f| {
            for (s, o) in ops() {
                f.sample("", &op_labels(s, o, &[]), o.cancelled as f64);
            }
        },
    );
    out.family(
        "operation_duration_seconds",
        "summary",
        "Duration of calls that ended, as the client saw it.",
        |f| {
            for (s, o) in ops() {
                summary(f, &op_labels(s, o, &[]), &o.latency);
            }
        },
    );
    out.family(
        "operation_qps",
        "gauge",
        "Calls per second over the sliding window.",
        |f| {
            for (s, o) in ops() {
                f.sample("", &op_labels(s, o, &[]), o.qps);
            }
        },
    );
    let per_server = |out: &mut Exposition,
                      name: &str,
                      kind: &str,
                      help: &str,
                      value: fn(&ServerSnapshot) -> Option<f64>| {
        out.family(name, kind, help, |f| {
            for s in servers {
                if let Some(v) = value(s) {
                    f.sample("", &[("server", &s.name)], v);
                }
            }
        });
    };
    per_server(
        &mut out,
        "reconnects_total",
        "counter",
        "New sessions made after one was lost.",
        |s| Some(s.reconnects as f64),
    );
    per_server(
        &mut out,
        "token_refreshes_total",
        "counter",
        "Access tokens refreshed.",
        |s| Some(s.token_refreshes as f64),
    );
    per_server(
        &mut out,
        "failovers_total",
        "counter",
        "Moves of a server's traffic from one endpoint to another.",
        |s| Some(s.failovers as f64),
    );
    per_server(
        &mut out,
        "sessions_ended_total",
        "counter",
        "Sessions that ended.",
        |s| Some(s.sessions.ended as f64),
    );
    out.family(
        "session_errors_total",
        "counter",
        "Sessions that ended in an error, by error type.",
        |f| {
            for s in servers {
                for (error_type, n) in &s.sessions.errors_by_type {
                    f.sample(
                        "",
                        &[("server", &s.name), ("error_type", error_type)],
                        *n as f64,
                    );
                }
            }
        },
    );
    out.family(
        "session_duration_seconds",
        "summary",
        "Duration of sessions that ended.",
        |f| {
            for s in servers {
                let labels = [("server", s.name.as_str())];
                let p50 = if s.sessions.ended == 0 {
                    f64::NAN
                } else {
                    s.sessions.duration_p50_seconds
                };
                f.sample("", &with(&labels, &[("quantile", "0.5")]), p50);
                f.sample("_sum", &labels, s.sessions.duration_sum_seconds);
                f.sample("_count", &labels, s.sessions.ended as f64);
            }
        },
    );
    for (name, help, hit) in [
        ("cache_hits_total", "Lookups answered by a cache.", true),
        (
            "cache_misses_total",
            "Lookups a cache could not answer.",
            false,
        ),
    ] {
        out.family(name, "counter", help, |f| {
            for s in servers {
                for row in &s.cache.caches {
                    let n = if hit { row.hits } else { row.misses };
                    f.sample(
                        "",
                        &[("server", &s.name), ("cache", row.cache.as_str())],
                        n as f64,
                    );
                }
            }
        });
    }
    out.family(
        "breaker_state",
        "gauge",
        "The circuit breaker's state (1 for the current one).",
        |f| {
            for s in servers {
                if let Some(state) = &s.breaker {
                    f.sample("", &[("server", &s.name), ("state", state)], 1.0);
                }
            }
        },
    );
    per_server(
        &mut out,
        "pool_connections",
        "gauge",
        "Pooled sessions open.",
        |s| s.pool.map(|p| p.connections as f64),
    );
    per_server(
        &mut out,
        "pool_in_use",
        "gauge",
        "Pooled sessions bound to a call.",
        |s| s.pool.map(|p| p.in_use as f64),
    );
    per_server(
        &mut out,
        "pool_idle",
        "gauge",
        "Pooled sessions waiting for a call.",
        |s| s.pool.map(|p| p.idle as f64),
    );
    per_server(
        &mut out,
        "pool_waiting",
        "gauge",
        "Callers waiting for a pooled session.",
        |s| s.pool.map(|p| p.waiting as f64),
    );
    per_server(
        &mut out,
        "pool_waits_total",
        "counter",
        "Checkouts that had to wait for a session.",
        |s| s.pool.map(|p| p.waits as f64),
    );
    // Only routed servers have endpoints: nothing of these for any other.
    let per_endpoint = |out: &mut Exposition,
                        name: &str,
                        kind: &str,
                        help: &str,
                        value: fn(&EndpointSnapshot) -> Option<f64>| {
        out.family(name, kind, help, |f| {
            for s in servers {
                for e in &s.endpoints {
                    if let Some(v) = value(e) {
                        let port = e.server_port.map(|p| p.to_string());
                        f.sample("", &endpoint_labels(s, e, port.as_deref()), v);
                    }
                }
            }
        });
    };
    per_endpoint(
        &mut out,
        "endpoint_calls_total",
        "counter",
        "Attempts sent to an endpoint of a routed server that ended.",
        |e| Some(e.calls as f64),
    );
    per_endpoint(
        &mut out,
        "endpoint_errors_total",
        "counter",
        "Attempts sent to an endpoint that failed.",
        |e| Some(e.errors as f64),
    );
    per_endpoint(
        &mut out,
        "endpoint_call_latency_seconds",
        "gauge",
        "Moving average (alpha 1/8) of the latency of an endpoint's successful attempts.",
        |e| e.call_latency_ewma_us.map(micros_to_seconds),
    );
    per_endpoint(
        &mut out,
        "endpoint_probe_latency_seconds",
        "gauge",
        "Moving average (alpha 0.1, outliers clamped) of an endpoint's health probe round trips.",
        |e| e.probe_latency_ewma_us.map(micros_to_seconds),
    );
    per_endpoint(
        &mut out,
        "endpoint_active",
        "gauge",
        "Whether the endpoint serves its server's calls now (1) or not (0).",
        |e| Some(if e.active { 1.0 } else { 0.0 }),
    );
    per_endpoint(
        &mut out,
        "endpoint_up",
        "gauge",
        "Whether the endpoint is up (0 when the router holds it down, else 1).",
        |e| {
            Some(if e.state.as_deref() == Some("down") {
                0.0
            } else {
                1.0
            })
        },
    );
    out.family(
        "server_info",
        "gauge",
        "The server's transport and negotiated protocol version (always 1).",
        |f| {
            for s in servers {
                f.sample(
                    "",
                    &[
                        ("server", s.name.as_str()),
                        (
                            "network_transport",
                            s.network_transport.as_deref().unwrap_or(""),
                        ),
                        (
                            "protocol_version",
                            s.protocol_version.as_deref().unwrap_or(""),
                        ),
                    ],
                    1.0,
                );
            }
        },
    );
    out.out
}

/// A summary's samples from a latency summary in microseconds (quantiles of nothing are
/// `NaN`, as Prometheus' own clients write them).
fn summary(f: &mut Family<'_>, labels: &[(&str, &str)], latency: &LatencySummary) {
    let seconds = |us: u64| us as f64 / 1e6;
    for (quantile, us) in [
        ("0.5", latency.p50_us),
        ("0.9", latency.p90_us),
        ("0.99", latency.p99_us),
    ] {
        let value = if latency.count == 0 {
            f64::NAN
        } else {
            seconds(us)
        };
        f.sample("", &with(labels, &[("quantile", quantile)]), value);
    }
    f.sample("_sum", labels, seconds(latency.sum_us));
    f.sample("_count", labels, latency.count as f64);
}

fn op_labels<'a>(
    server: &'a ServerSnapshot,
    operation: &'a OperationSnapshot,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut labels = vec![
        ("server", server.name.as_str()),
        ("method", operation.method.as_str()),
    ];
    if let Some(tool) = &operation.tool {
        labels.push(("tool", tool));
    }
    labels.extend_from_slice(extra);
    labels
}

fn micros_to_seconds(us: u64) -> f64 {
    us as f64 / 1e6
}

/// An endpoint's labels: its server and URL (which alone tell two endpoints at one host and
/// port apart), then its host, port and region when known.
fn endpoint_labels<'a>(
    server: &'a ServerSnapshot,
    endpoint: &'a EndpointSnapshot,
    port: Option<&'a str>,
) -> Vec<(&'a str, &'a str)> {
    let mut labels = vec![("server", server.name.as_str()), ("url", &endpoint.url)];
    if let Some(address) = &endpoint.server_address {
        labels.push(("server_address", address));
    }
    if let Some(port) = port {
        labels.push(("server_port", port));
    }
    if let Some(region) = &endpoint.region {
        labels.push(("region", region));
    }
    labels
}

fn with<'a>(
    labels: &[(&'a str, &'a str)],
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut all = labels.to_vec();
    all.extend_from_slice(extra);
    all
}

struct Exposition {
    out: String,
    prefix: String,
}

impl Exposition {
    /// Writes one family: its `# HELP` and `# TYPE` lines (only when it has samples) and its
    /// samples.
    fn family(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        samples: impl FnOnce(&mut Family<'_>),
    ) {
        let name = if self.prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{}_{name}", self.prefix)
        };
        let mut family = Family {
            out: &mut self.out,
            name: &name,
            kind,
            help,
            started: false,
        };
        samples(&mut family);
    }
}

struct Family<'a> {
    out: &'a mut String,
    name: &'a str,
    kind: &'a str,
    help: &'a str,
    started: bool,
}

impl Family<'_> {
    fn sample(&mut self, suffix: &str, labels: &[(&str, &str)], value: f64) {
        if !self.started {
            self.started = true;
            let _ = writeln!(self.out, "# HELP {} {}", self.name, escape_help(self.help));
            let _ = writeln!(self.out, "# TYPE {} {}", self.name, self.kind);
        }
        self.out.push_str(self.name);
        self.out.push_str(suffix);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (name, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(&sanitize_label_name(name));
                self.out.push_str("=\"");
                escape_label_value(value, self.out);
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
        write_value(value, self.out);
        self.out.push('\n');
    }
}

fn write_value(value: f64, out: &mut String) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{value}");
    }
}

/// A metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`, anything else replaced by `_`.
pub(crate) fn sanitize_metric_name(name: &str) -> String {
    sanitize(name, true)
}

/// A label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub(crate) fn sanitize_label_name(name: &str) -> String {
    sanitize(name, false)
}

fn sanitize(name: &str, colons: bool) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    for (i, c) in name.chars().enumerate() {
        let allowed = c.is_ascii_alphabetic()
            || c == '_'
            || (colons && c == ':')
            || (i > 0 && c.is_ascii_digit());
        if i == 0 && c.is_ascii_digit() {
            out.push('_');
            out.push(c);
        } else {
            out.push(if allowed { c } else { '_' });
        }
    }
    out
}

/// A label value: `\`, `"` and line feeds escaped.
pub(crate) fn escape_label_value(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Help text: `\` and line feeds escaped.
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_and_values_escaped() {
        assert_eq!(sanitize_metric_name("mcp.client-x:y"), "mcp_client_x:y");
        assert_eq!(sanitize_metric_name("9lives"), "_9lives");
        assert_eq!(sanitize_metric_name(""), "");
        assert_eq!(sanitize_label_name("a:b.c"), "a_b_c");
        assert_eq!(sanitize_label_name("é"), "_");
        let mut out = String::new();
        escape_label_value("a\\b\"c\nd é", &mut out);
        assert_eq!(out, r#"a\\b\"c\nd é"#);
    }

    #[test]
    fn values_are_written_as_prometheus_reads_them() {
        let text = |v: f64| {
            let mut out = String::new();
            write_value(v, &mut out);
            out
        };
        assert_eq!(text(3.0), "3");
        assert_eq!(text(0.000_25), "0.00025");
        assert_eq!(text(f64::NAN), "NaN");
        assert_eq!(text(f64::INFINITY), "+Inf");
        assert_eq!(text(f64::NEG_INFINITY), "-Inf");
    }
}
