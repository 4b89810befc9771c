//! The panel's state: the servers now, a ring of per-interval samples (the charts' points)
//! and the last errors and changes — made from successive readings of the
//! [`PanelSource`](super::PanelSource).
//!
//! What the metrics hold is cumulative (counts, errors, latency count and sum, cache lookups,
//! an endpoint's calls and errors; one latency histogram per series since the start) or
//! windowed (QPS over the registry's window). A sample therefore takes the difference of two
//! readings for what is cumulative: its QPS, error rate, mean latency and cache hit rate are
//! those of its own interval, exact. Percentiles cannot be taken apart that way (the registry
//! keeps no histogram per interval), so a sample's `p50_us`/`p99_us` are the server's
//! quantiles since the start as they stood at the sample. The first sample, with no reading
//! before it, takes the window's QPS and the rates since the start.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp_client::metrics::MetricsSnapshot;
use mcp_client::ServerReport;
use serde::Serialize;

use super::view::{ratio, server_views, ServerView};

/// The version of the JSON's shape; bumped when a field changes meaning or goes away.
pub(crate) const DOCUMENT_VERSION: u32 = 1;

/// One interval's points: `history[]` of the panel's JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Sample {
    /// Increases by one per sample, from 1.
    pub(crate) seq: u64,
    /// When it was taken, in milliseconds since the Unix epoch.
    pub(crate) t_ms: u64,
    pub(crate) servers: Vec<ServerSample>,
}

/// One server's points in a sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ServerSample {
    pub(crate) name: String,
    /// Calls per second over the interval.
    pub(crate) qps: f64,
    /// Errors over calls in the interval; `null` without calls.
    pub(crate) error_rate: Option<f64>,
    /// The interval's mean latency; `null` without calls.
    pub(crate) mean_us: Option<f64>,
    /// The median since the start; `null` before the first call.
    pub(crate) p50_us: Option<u64>,
    /// The 99th percentile since the start; `null` before the first call.
    pub(crate) p99_us: Option<u64>,
    /// Cache hits over lookups in the interval; `null` without lookups.
    pub(crate) cache_hit_rate: Option<f64>,
    /// Calls since the start, as they stood.
    pub(crate) calls: u64,
    /// Errors since the start.
    pub(crate) errors: u64,
    pub(crate) endpoints: Vec<EndpointSample>,
}

/// One endpoint's points in a sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EndpointSample {
    pub(crate) url: String,
    /// Attempts per second over the interval.
    pub(crate) qps: f64,
    /// Failed attempts over attempts in the interval; `null` without attempts.
    pub(crate) error_rate: Option<f64>,
    /// The successful calls' moving average as it stood.
    pub(crate) latency_us: Option<u64>,
}

/// An error or change the panel noticed between two readings: `events[]` of the JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PanelEvent {
    pub(crate) t_ms: u64,
    pub(crate) server: String,
    /// `error`, `warn` or `info`.
    pub(crate) level: &'static str,
    /// Redacted (it is made of redacted parts).
    pub(crate) message: String,
}

/// Cumulative counts of one server at the last reading.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    calls: u64,
    errors: u64,
    latency_count: u64,
    latency_sum_us: u64,
    cache_hits: u64,
    cache_misses: u64,
}

impl Totals {
    fn of(view: &ServerView) -> Totals {
        Totals {
            calls: view.calls,
            errors: view.errors,
            latency_count: view.latency.count,
            latency_sum_us: view.latency.sum_us,
            cache_hits: view.cache_hits,
            cache_misses: view.cache_misses,
        }
    }
}

/// The reading before: when, and the servers as they were.
#[derive(Debug)]
struct Previous {
    at: Instant,
    views: Vec<ServerView>,
}

/// How long the panel keeps samples and how many events.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) samples: usize,
    pub(crate) events: usize,
}

/// See the [module docs](self).
#[derive(Debug)]
pub(crate) struct PanelState {
    limits: Limits,
    interval: Duration,
    history: Duration,
    seq: u64,
    generated_at_ms: u64,
    qps_window_seconds: u64,
    servers: Vec<ServerView>,
    samples: VecDeque<Sample>,
    events: VecDeque<PanelEvent>,
    previous: Option<Previous>,
}

/// The panel's JSON (see the [module docs](super)).
#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    generated_at_ms: u64,
    seq: u64,
    interval_ms: u64,
    history_seconds: u64,
    qps_window_seconds: u64,
    servers: &'a [ServerView],
    history: Vec<&'a Sample>,
    events: &'a VecDeque<PanelEvent>,
}

/// Milliseconds since the Unix epoch (0 for a clock set before it).
pub(crate) fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl PanelState {
    pub(crate) fn new(interval: Duration, history: Duration, limits: Limits) -> PanelState {
        PanelState {
            limits,
            interval,
            history,
            seq: 0,
            generated_at_ms: 0,
            qps_window_seconds: 0,
            servers: Vec::new(),
            samples: VecDeque::with_capacity(limits.samples.min(4096)),
            events: VecDeque::with_capacity(limits.events.min(4096)),
            previous: None,
        }
    }

    /// The newest sample's number (0 before the first).
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Takes a reading: the servers now, one more sample (the oldest dropped past the
    /// limit), and the events since the reading before.
    pub(crate) fn record(
        &mut self,
        reports: &[ServerReport],
        metrics: &MetricsSnapshot,
        at: Instant,
        t_ms: u64,
    ) {
        let views = server_views(reports, &metrics.servers);
        let previous = self.previous.take();
        self.seq += 1;
        let sample = Sample {
            seq: self.seq,
            t_ms,
            servers: views
                .iter()
                .map(|view| {
                    let before = previous.as_ref().map(|p| {
                        let seconds = at.saturating_duration_since(p.at).as_secs_f64();
                        let view = p.views.iter().find(|v| v.name == view.name);
                        (seconds, view)
                    });
                    server_sample(view, before)
                })
                .collect(),
        };
        self.samples.push_back(sample);
        while self.samples.len() > self.limits.samples.max(1) {
            self.samples.pop_front();
        }
        let old_views = previous.as_ref().map(|p| &p.views[..]);
        for event in events(old_views, &views, t_ms) {
            self.events.push_back(event);
        }
        while self.events.len() > self.limits.events {
            self.events.pop_front();
        }
        self.generated_at_ms = t_ms;
        self.qps_window_seconds = metrics.qps_window_seconds;
        self.servers = views.clone();
        self.previous = Some(Previous { at, views });
    }

    /// The JSON document: the servers now, the samples newer than `since` (all of them
    /// without it, or when `since` is not one of this panel's numbers), the events.
    pub(crate) fn document(&self, since: Option<u64>) -> Result<String, serde_json::Error> {
        let since = since.filter(|&s| s <= self.seq).unwrap_or(0);
        let document = Document {
            version: DOCUMENT_VERSION,
            generated_at_ms: self.generated_at_ms,
            seq: self.seq,
            interval_ms: u64::try_from(self.interval.as_millis()).unwrap_or(u64::MAX),
            history_seconds: self.history.as_secs(),
            qps_window_seconds: self.qps_window_seconds,
            servers: &self.servers,
            history: self.samples.iter().filter(|s| s.seq > since).collect(),
            events: &self.events,
        };
        serde_json::to_string(&document)
    }
}

/// The difference of two cumulative counts; the whole count when it went down (the series
/// was reset: a server removed and added again).
fn delta(now: u64, before: u64) -> u64 {
    now.checked_sub(before).unwrap_or(now)
}

fn server_sample(view: &ServerView, before: Option<(f64, Option<&ServerView>)>) -> ServerSample {
    let quantile = |v: u64| (view.latency.count > 0).then_some(v);
    let now = Totals::of(view);
    let (qps, error_rate, mean_us, cache_hit_rate) = match before {
        Some((seconds, old)) => {
            let old = old.map(Totals::of).unwrap_or_default();
            let calls = delta(now.calls, old.calls);
            let errors = delta(now.errors, old.errors).min(calls);
            let count = delta(now.latency_count, old.latency_count);
            let sum = delta(now.latency_sum_us, old.latency_sum_us);
            let hits = delta(now.cache_hits, old.cache_hits);
            let misses = delta(now.cache_misses, old.cache_misses);
            // A reading taken at once after the one before still gives a finite rate.
            let seconds = seconds.max(0.001);
            (
                calls as f64 / seconds,
                ratio(errors, calls),
                (count > 0).then(|| sum as f64 / count as f64),
                ratio(hits, hits.saturating_add(misses)),
            )
        }
        None => (
            view.qps,
            ratio(now.errors, now.calls),
            (view.latency.count > 0).then_some(view.latency.mean_us),
            view.cache_hit_rate,
        ),
    };
    let endpoints = view
        .endpoints
        .iter()
        .map(|endpoint| {
            let rates = before.map(|(seconds, old)| {
                let old = old
                    .and_then(|o| o.endpoints.iter().find(|e| e.url == endpoint.url))
                    .map_or((0, 0), |e| (e.calls, e.errors));
                let calls = delta(endpoint.calls, old.0);
                let errors = delta(endpoint.errors, old.1).min(calls);
                (calls as f64 / seconds.max(0.001), ratio(errors, calls))
            });
            let (qps, error_rate) = rates.unwrap_or((0.0, ratio(endpoint.errors, endpoint.calls)));
            EndpointSample {
                url: endpoint.url.clone(),
                qps: finite(qps),
                error_rate: error_rate.map(finite),
                latency_us: endpoint.call_latency_us,
            }
        })
        .collect();
    ServerSample {
        name: view.name.clone(),
        qps: finite(qps),
        error_rate: error_rate.map(finite),
        mean_us: mean_us.map(finite),
        p50_us: quantile(view.latency.p50_us),
        p99_us: quantile(view.latency.p99_us),
        cache_hit_rate: cache_hit_rate.map(finite),
        calls: now.calls,
        errors: now.errors,
        endpoints,
    }
}

/// A chart cannot draw NaN or infinity: 0 instead.
fn finite(value: f64) -> f64 {
    if value.is_finite() {
        value
    } else {
        0.0
    }
}

/// What changed between the reading before (`None`: this is the first) and now.
fn events(before: Option<&[ServerView]>, now: &[ServerView], t_ms: u64) -> Vec<PanelEvent> {
    let mut events = Vec::new();
    let mut push = |server: &str, level: &'static str, message: String| {
        events.push(PanelEvent {
            t_ms,
            server: server.to_owned(),
            level,
            message,
        });
    };
    for view in now {
        let old = before.and_then(|b| b.iter().find(|v| v.name == view.name));
        let name = view.name.as_str();

        let old_state = old.map(|o| o.state_detail.as_str());
        let mut reason_told = false;
        if old_state != Some(view.state_detail.as_str()) && !(old.is_none() && quiet(&view.state)) {
            reason_told = view.reason.is_some();
            let reason = view
                .reason
                .as_deref()
                .map_or_else(String::new, |r| format!(": {r}"));
            let message = match old_state {
                Some(old) => format!("state {old} → {}{reason}", view.state_detail),
                None => format!("state {}{reason}", view.state_detail),
            };
            push(name, state_level(&view.state), message);
        }

        if let Some(error) = &view.last_error {
            // Often the reason the state change above just told.
            let told = reason_told && view.reason.as_ref() == Some(error);
            if !told && old.and_then(|o| o.last_error.as_ref()) != Some(error) {
                push(name, "error", format!("last error: {error}"));
            }
        }

        let old_breaker = old.and_then(|o| o.breaker.as_deref());
        if let Some(breaker) = view.breaker.as_deref() {
            let changed = match old {
                Some(_) => old_breaker != Some(breaker),
                None => breaker != "closed",
            };
            if changed {
                let level = match breaker {
                    "open" => "error",
                    "half-open" => "warn",
                    _ => "info",
                };
                let message = match old_breaker {
                    Some(old) => format!("breaker {old} → {breaker}"),
                    None => format!("breaker {breaker}"),
                };
                push(name, level, message);
            }
        }

        for op in &view.operations {
            let old_op = old.and_then(|o| {
                o.operations
                    .iter()
                    .find(|p| p.method == op.method && p.tool == op.tool)
            });
            for (kind, &count) in &op.errors_by_type {
                let was = old_op
                    .and_then(|p| p.errors_by_type.get(kind))
                    .copied()
                    .unwrap_or(0);
                if count > was {
                    let what = match &op.tool {
                        Some(tool) => format!("{} {tool}", op.method),
                        None => op.method.clone(),
                    };
                    let new = delta(count, was);
                    let since = if old.is_none() { " so far" } else { "" };
                    push(name, "error", format!("{what}: {new} × {kind}{since}"));
                }
            }
        }

        if let Some(old) = old {
            if view.reconnects > old.reconnects {
                push(
                    name,
                    "warn",
                    format!("reconnected ({} in all)", view.reconnects),
                );
            }
            if view.failovers > old.failovers {
                push(
                    name,
                    "warn",
                    format!("failed over ({} in all)", view.failovers),
                );
            }
        }

        for endpoint in &view.endpoints {
            let old_endpoint = old.and_then(|o| o.endpoints.iter().find(|e| e.url == endpoint.url));
            let old_state = old_endpoint.and_then(|e| e.state.as_deref());
            let state = endpoint.state.as_deref();
            let changed = match old {
                Some(_) => old_state != state,
                None => state == Some("down"),
            };
            if changed {
                if let Some(state) = state {
                    let reason = endpoint
                        .down_reason
                        .as_deref()
                        .map_or_else(String::new, |r| format!(": {r}"));
                    let level = if state == "down" { "error" } else { "info" };
                    push(
                        name,
                        level,
                        format!("endpoint {} {state}{reason}", endpoint.url),
                    );
                }
            }
        }
    }
    if let Some(before) = before {
        for gone in before
            .iter()
            .filter(|b| !now.iter().any(|v| v.name == b.name))
        {
            push(&gone.name, "info", "removed".to_owned());
        }
    }
    events
}

/// States not worth an event when the panel first sees them.
fn quiet(state: &str) -> bool {
    matches!(state, "ready" | "starting" | "unknown" | "disabled")
}

fn state_level(state: &str) -> &'static str {
    match state {
        "unavailable" | "needs-auth" => "error",
        "reconnecting" | "probing" => "warn",
        _ => "info",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_client::metrics::Metrics;
    use mcp_client::{ServerReport, ServerStatus};

    fn report(status: ServerStatus, last_error: Option<&str>) -> ServerReport {
        ServerReport {
            name: "files".into(),
            status,
            transport: "stdio".into(),
            tools: 1,
            server_info: None,
            protocol_version: None,
            breaker: None,
            reconnects: 0,
            last_error: last_error.map(str::to_owned),
            pool: None,
            endpoints: Vec::new(),
        }
    }

    /// A snapshot of `files` with these cumulative counts.
    fn metrics(calls: u64, errors: u64, sum_us: u64) -> MetricsSnapshot {
        let registry = Metrics::new();
        registry.server("files");
        let mut snapshot = registry.snapshot();
        let server = &mut snapshot.servers[0];
        server.calls = calls;
        server.errors = errors;
        server.qps = 2.0;
        server.latency.count = calls;
        server.latency.sum_us = sum_us;
        server.latency.mean_us = if calls > 0 {
            sum_us as f64 / calls as f64
        } else {
            0.0
        };
        server.latency.p50_us = 90;
        server.latency.p99_us = 400;
        snapshot
    }

    fn state(samples: usize) -> PanelState {
        PanelState::new(
            Duration::from_secs(1),
            Duration::from_secs(600),
            Limits { samples, events: 4 },
        )
    }

    #[test]
    fn samples_take_each_interval_from_the_difference_of_two_readings() {
        let mut panel = state(10);
        let start = Instant::now();
        let ready = [report(ServerStatus::Ready, None)];
        panel.record(&ready, &metrics(10, 1, 1_000), start, 1_000);
        panel.record(
            &ready,
            &metrics(30, 3, 5_000),
            start + Duration::from_secs(2),
            3_000,
        );
        // Fewer than before: the series was reset, and the count is all new.
        panel.record(
            &ready,
            &metrics(5, 0, 500),
            start + Duration::from_secs(3),
            4_000,
        );
        // Nothing new.
        panel.record(
            &ready,
            &metrics(5, 0, 500),
            start + Duration::from_secs(4),
            5_000,
        );
        let samples: Vec<&ServerSample> = panel.samples.iter().map(|s| &s.servers[0]).collect();

        // The first has no reading before it: the window's QPS, the rates since the start.
        assert_eq!(samples[0].qps, 2.0);
        assert_eq!(samples[0].error_rate, Some(0.1));
        assert_eq!(samples[0].mean_us, Some(100.0));
        // 20 calls in 2 s, 2 of them errors, 4000 µs among them.
        assert_eq!(samples[1].qps, 10.0);
        assert_eq!(samples[1].error_rate, Some(0.1));
        assert_eq!(samples[1].mean_us, Some(200.0));
        assert_eq!(
            (samples[1].p50_us, samples[1].p99_us),
            (Some(90), Some(400))
        );
        assert_eq!(samples[1].calls, 30);
        assert_eq!(samples[2].qps, 5.0);
        assert_eq!(samples[2].error_rate, Some(0.0));
        assert_eq!(samples[3].qps, 0.0);
        assert_eq!((samples[3].error_rate, samples[3].mean_us), (None, None));
        let seqs: Vec<u64> = panel.samples.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
    }

    #[test]
    fn the_ring_keeps_the_newest_samples_and_events() {
        let mut panel = state(3);
        let start = Instant::now();
        for i in 0..10u64 {
            let status = if i % 2 == 0 {
                ServerStatus::Ready
            } else {
                ServerStatus::Reconnecting { attempt: 1 }
            };
            panel.record(
                &[report(status, None)],
                &metrics(i, 0, i),
                start + Duration::from_secs(i),
                i,
            );
        }
        let seqs: Vec<u64> = panel.samples.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, [8, 9, 10]);
        assert_eq!(panel.events.len(), 4);
        let json: serde_json::Value =
            serde_json::from_str(&panel.document(Some(9)).unwrap_or_default()).unwrap_or_default();
        assert_eq!(json["history"].as_array().map(Vec::len), Some(1));
        assert_eq!(json["seq"], 10);
    }

    #[test]
    fn changes_become_events_once() {
        let mut panel = state(10);
        let start = Instant::now();
        let down = ServerStatus::Unavailable {
            reason: "exited (status 1)".into(),
            kind: mcp_core::ErrorKind::Network,
        };
        panel.record(
            &[report(ServerStatus::Ready, None)],
            &metrics(0, 0, 0),
            start,
            0,
        );
        assert!(panel.events.is_empty(), "a ready server is no news");
        let failed = [report(down, Some("exited (status 1)"))];
        panel.record(&failed, &metrics(0, 0, 0), start, 1);
        panel.record(&failed, &metrics(0, 0, 0), start, 2);
        let messages: Vec<&str> = panel.events.iter().map(|e| e.message.as_str()).collect();
        // The reason once (not again as the last error), and nothing when nothing changed.
        assert_eq!(messages, ["state ready → unavailable: exited (status 1)"]);
        assert_eq!(panel.events[0].level, "error");
        panel.record(
            &[report(ServerStatus::Ready, Some("exited (status 1)"))],
            &metrics(0, 0, 0),
            start,
            3,
        );
        assert_eq!(panel.events.len(), 2);
        assert_eq!(panel.events[1].message, "state unavailable → ready");
    }
}
