//! The operations panel (`mcph serve --admin ADDR`, `mcph stats --web ADDR`): one page, live
//! from the client's status and metrics, on a loopback HTTP server.
//!
//! | route | what it serves |
//! |---|---|
//! | `GET /` | the page: one self-contained HTML file (inline CSS, script and SVG charts; it fetches nothing from elsewhere, so it works offline). Per server: state, breaker, pool, QPS, p50/p99 and mean latency and error-rate charts over the last minutes, cache hit rate, reconnects and failovers, its operations and endpoints (each with its state, breaker and charts), and the last errors. It follows `/events`, and polls `/api/snapshot` when it cannot. |
//! | `GET /api/snapshot` | the JSON the page renders (below); `?since=SEQ` leaves out the samples up to `SEQ` |
//! | `GET /events` | server-sent events: a `snapshot` event at once, then one per sample (every [`AdminOptions::with_interval`], 1 s by default), each the JSON below holding only the samples the stream has not sent yet; the event's `id` is the newest sample's `seq` (an `EventSource` that reconnects sends it back as `Last-Event-ID`) |
//! | `GET /metrics` | the Prometheus text exposition format, [`mcp_client::metrics::Metrics::render_prometheus`] |
//!
//! Anything else is 404, another method on these 405. The server answers only requests whose
//! `Host` is a loopback name (`127.0.0.1`, `[::1]`, `localhost`: a page elsewhere cannot read
//! the panel by pointing a name of its own at this machine) and binds only loopback
//! addresses ([`AdminError::NotLoopback`]): it has no authentication and no TLS. It shows
//! no secrets — of a server's configuration only its name and transport; error messages pass
//! a redaction of what looks like a credential (bearer tokens, `token=`/`api_key:` values,
//! URL user info and queries).
//!
//! # The JSON
//!
//! ```text
//! {
//!   "version": 1,                       // of this shape
//!   "generated_at_ms": 1767225600000,   // the newest sample's time, ms since the Unix epoch
//!   "seq": 42,                          // the newest sample's number (from 1)
//!   "interval_ms": 1000, "history_seconds": 600, "qps_window_seconds": 10,
//!   "servers": [{                       // the servers now, in configuration order
//!     "name": "files", "transport": "stdio",
//!     "state": "ready",                 // starting|ready|reconnecting|unavailable|probing|needs-auth|stopped|disabled|unknown
//!     "state_detail": "ready",          // e.g. "reconnecting (attempt 2)"
//!     "reason": null,                   // why unavailable / needs-auth (redacted)
//!     "tools": 12, "server_info": "files 1.2.0", "protocol_version": "2025-11-25",
//!     "breaker": "closed",              // closed|open|half-open|null
//!     "breaker_retry_in_ms": null,      // an open breaker: time before probes
//!     "pool": {"connections": 2, "in_use": 0, "idle": 2, "waits": 0},   // or null
//!     "calls": 120, "errors": 3, "cancelled": 0,        // since the start
//!     "error_rate": 0.025, "qps": 4.2,                  // qps over the QPS window
//!     "latency": {"count": 117, "sum_us": 9000, "mean_us": 76.9, "p50_us": 70,
//!                 "p90_us": 110, "p99_us": 300, "max_us": 410},   // since the start
//!     "cache_hits": 40, "cache_misses": 2, "cache_hit_rate": 0.952,
//!     "reconnects": 1, "failovers": 0, "token_refreshes": 0,
//!     "last_error": "…",               // redacted, or null
//!     "endpoints": [{"url": "https://eu.example.com/mcp", "region": "eu", "state": "active",
//!                    "active": true, "breaker": "closed", "down_reason": null,
//!                    "calls": 80, "errors": 0, "error_rate": 0.0,
//!                    "call_latency_us": 950, "probe_latency_us": 800}],
//!     "operations": [{"method": "tools/call", "tool": "read", "calls": 100, "errors": 3,
//!                     "error_rate": 0.03, "qps": 4.0, "p50_us": 70, "p99_us": 300,
//!                     "errors_by_type": {"tool_error": 3}}]
//!   }],
//!   "history": [{                       // samples, oldest first (newer than ?since)
//!     "seq": 42, "t_ms": 1767225600000,
//!     "servers": [{"name": "files",
//!                  "qps": 4.0,          // over the interval
//!                  "error_rate": 0.0,   // over the interval; null without calls
//!                  "mean_us": 75.0,     // over the interval; null without calls
//!                  "p50_us": 70, "p99_us": 300,   // since the start (see below)
//!                  "cache_hit_rate": 1.0,         // over the interval; null without lookups
//!                  "calls": 120, "errors": 3,     // since the start
//!                  "endpoints": [{"url": "…", "qps": 4.0, "error_rate": 0.0, "latency_us": 950}]}]
//!   }],
//!   "events": [{"t_ms": 1767225590000, "server": "files", "level": "error",   // error|warn|info
//!               "message": "tools/call read: 1 × tool_error"}]              // oldest first
//! }
//! ```
//!
//! The metrics are cumulative (counts, errors, latency count and sum, cache lookups) or
//! windowed (QPS): a sample's QPS, error rate, mean latency and cache hit rate are its own
//! interval's, from the difference of two readings. The registry keeps one latency histogram
//! per series since the start, not one per interval, so the charts' p50 and p99 are the
//! quantiles since the start as they stood at each sample (the mean line is the interval's).
//! The panel keeps [`AdminOptions::history`] of samples (10 minutes by default) and the last
//! [`AdminOptions::max_events`] events: state and breaker changes, new last errors, new
//! errors of an operation by kind, reconnects, failovers, endpoints going down.
//!
//! # Using it
//!
//! ```no_run
//! # async fn run(client: mcp_client::McpClient) -> Result<(), mcp_gateway::admin::AdminError> {
//! use mcp_gateway::admin::{AdminOptions, AdminPanel};
//!
//! let panel = AdminPanel::bind("127.0.0.1:8080".parse().unwrap(), client, AdminOptions::default()).await?;
//! println!("operations panel at {}", panel.url());
//! // … until the harness stops:
//! panel.shutdown().await;
//! # Ok(()) }
//! ```

mod history;
mod http;
mod redact;
mod source;
mod view;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::serving::ServerTask;

pub use source::PanelSource;

use history::{Limits, PanelState};
use http::Shared;

/// The shortest interval between samples.
const MIN_INTERVAL: Duration = Duration::from_millis(50);
/// The longest interval between samples.
const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// The most samples kept, whatever the history and interval.
const MAX_SAMPLES: usize = 36_000;
/// The most events kept.
const MAX_EVENTS: usize = 10_000;

/// How the panel samples and how much it keeps. `Default`: a sample a second, 10 minutes
/// of them, the last 50 events.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AdminOptions {
    /// The time between samples, and so between the events of `/events` (50 ms to 1 h).
    /// Default: 1 s.
    pub interval: Duration,
    /// How far back the charts reach: the samples kept are `history / interval` (at most
    /// 36 000). Default: 10 minutes.
    pub history: Duration,
    /// The errors and changes kept for the page's list (at most 10 000). Default: 50.
    pub max_events: usize,
}

impl Default for AdminOptions {
    fn default() -> Self {
        AdminOptions {
            interval: Duration::from_secs(1),
            history: Duration::from_secs(600),
            max_events: 50,
        }
    }
}

impl AdminOptions {
    /// The defaults.
    pub fn new() -> Self {
        AdminOptions::default()
    }

    /// Sets the time between samples.
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets how far back the charts reach.
    pub fn with_history(mut self, history: Duration) -> Self {
        self.history = history;
        self
    }

    /// Sets how many errors and changes the page lists.
    pub fn with_max_events(mut self, max_events: usize) -> Self {
        self.max_events = max_events;
        self
    }

    fn interval(&self) -> Duration {
        self.interval.clamp(MIN_INTERVAL, MAX_INTERVAL)
    }

    fn limits(&self) -> Limits {
        let interval = self.interval().as_secs_f64();
        let samples = (self.history.as_secs_f64() / interval).ceil();
        // Finite and positive: both durations are; `as` saturates.
        let samples = (samples as usize).clamp(1, MAX_SAMPLES);
        Limits {
            samples,
            events: self.max_events.min(MAX_EVENTS),
        }
    }
}

/// Why the panel did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// The address is not a loopback address: the panel has no authentication.
    #[error(
        "refusing to serve the operations panel on {addr}, which is beyond loopback: listen on \
         127.0.0.1 (or [::1]) and put an authenticating proxy in front to reach it from elsewhere"
    )]
    NotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The address could not be bound (in use, say).
    #[error("cannot listen on {addr} for the operations panel: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: io::Error,
    },
}

/// The operations panel (see the [module docs](self)).
#[derive(Debug)]
pub struct AdminPanel {
    _private: (),
}

impl AdminPanel {
    /// Binds `addr` — a loopback address; port 0 picks a free one (see
    /// [`AdminHandle::local_addr`]) — takes a first sample of `source` and serves the panel
    /// until the handle is dropped or shut down. Must be called within a tokio runtime, which
    /// runs the server.
    pub async fn bind(
        addr: SocketAddr,
        source: impl PanelSource,
        options: AdminOptions,
    ) -> Result<AdminHandle, AdminError> {
        if !addr.ip().is_loopback() {
            return Err(AdminError::NotLoopback { addr });
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| AdminError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| AdminError::Bind { addr, source })?;
        let interval = options.interval();
        let shared = Arc::new(Shared {
            source: Arc::new(source),
            state: Mutex::new(PanelState::new(interval, options.history, options.limits())),
            updates: watch::channel(0).0,
        });
        // The page has something to show from its first request on.
        shared.sample();
        let server = ServerTask::spawn(|stopped| http::serve(listener, shared, interval, stopped));
        Ok(AdminHandle { local_addr, server })
    }
}

/// The running panel. It owns the server — the accept loop, the sampling and every
/// connection (event streams included): dropping it, or [`shutdown`](Self::shutdown), stops
/// them all.
#[derive(Debug)]
pub struct AdminHandle {
    local_addr: SocketAddr,
    server: ServerTask,
}

impl AdminHandle {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The page's URL (`http://127.0.0.1:PORT/`).
    pub fn url(&self) -> String {
        format!("http://{}/", self.local_addr)
    }

    /// Stops accepting, closes every connection and waits (at most 5 s) for the server task
    /// to end.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}
