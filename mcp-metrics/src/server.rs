//! One server's metrics: its operation series, its own counters (reconnects, token refreshes,
//! failovers, caches, sessions), its endpoints, what the facade told it (transport, protocol
//! version, address, region) and its gauge source.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use mcp_core::sync::lock;

use crate::cache::CacheCounters;
use crate::endpoint::{EndpointInfo, EndpointRecord, MAX_ENDPOINTS_PER_SERVER};
use crate::latency::Latency;
use crate::series::{OperationSeries, SeriesTable, OTHER_ERROR};
use crate::MetricsConfig;

/// Session end error types kept apart; later new ones are counted as `_OTHER`.
const MAX_SESSION_ERROR_TYPES: usize = 64;

/// What the facade tells the metrics about a server (all optional but the name).
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerInfo {
    /// OpenTelemetry `network.transport` (`pipe`, `tcp`, …).
    pub(crate) network_transport: Option<Arc<str>>,
    /// OpenTelemetry `mcp.protocol.version`: the negotiated version.
    pub(crate) protocol_version: Option<Arc<str>>,
    /// OpenTelemetry `server.address`.
    pub(crate) address: Option<Arc<str>>,
    /// OpenTelemetry `server.port`.
    pub(crate) port: Option<u16>,
    /// OpenTelemetry `cloud.region`: the region of the endpoint serving the calls now.
    pub(crate) region: Option<Arc<str>>,
}

/// How the server's sessions ended.
#[derive(Debug, Clone)]
pub(crate) struct SessionStats {
    pub(crate) ended: u64,
    pub(crate) by_error_type: BTreeMap<Box<str>, u64>,
    /// Durations, in milliseconds.
    pub(crate) durations: Latency,
}

/// One server's metrics (see the [module docs](self)).
pub(crate) struct ServerMetrics {
    pub(crate) name: Arc<str>,
    pub(crate) info: RwLock<ServerInfo>,
    series: SeriesTable,
    pub(crate) reconnects: AtomicU64,
    pub(crate) token_refreshes: AtomicU64,
    /// Moves of the server's traffic from one endpoint to another.
    pub(crate) failovers: AtomicU64,
    /// In registration order, at most [`MAX_ENDPOINTS_PER_SERVER`] (few: a scan finds one).
    endpoints: Mutex<Vec<Arc<EndpointRecord>>>,
    pub(crate) caches: CacheCounters,
    pub(crate) sessions: Mutex<SessionStats>,
    pub(crate) gauges: RwLock<Option<Arc<dyn crate::GaugeSource>>>,
}

impl ServerMetrics {
    pub(crate) fn new(name: &str, config: &MetricsConfig) -> ServerMetrics {
        ServerMetrics {
            name: name.into(),
            info: RwLock::default(),
            series: SeriesTable::new(
                config.max_series_per_server,
                config.window_seconds(),
                config.significant_figures,
            ),
            reconnects: AtomicU64::new(0),
            token_refreshes: AtomicU64::new(0),
            failovers: AtomicU64::new(0),
            endpoints: Mutex::default(),
            caches: CacheCounters::default(),
            sessions: Mutex::new(SessionStats {
                ended: 0,
                by_error_type: BTreeMap::new(),
                durations: Latency::millis(config.significant_figures),
            }),
            gauges: RwLock::default(),
        }
    }

    /// The series of `method` (and `tool`), made on its first call. A hit takes no lock and
    /// allocates nothing (see [`SeriesTable`]).
    #[inline]
    pub(crate) fn series(&self, method: &str, tool: Option<&str>) -> &OperationSeries {
        self.series.get_or_insert(method, tool)
    }

    /// Every series, sorted by method then tool (no tool first).
    pub(crate) fn all_series(&self) -> Vec<&OperationSeries> {
        self.series.all()
    }

    pub(crate) fn reconnected(&self) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn token_refreshed(&self) {
        self.token_refreshes.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn failed_over(&self) {
        self.failovers.fetch_add(1, Ordering::Relaxed);
    }

    /// The record of the endpoint at `info.url`, made on its first registration; past the
    /// cap, a record of its own that no snapshot shows.
    pub(crate) fn endpoint(&self, info: EndpointInfo) -> Arc<EndpointRecord> {
        let mut endpoints = lock(&self.endpoints);
        if let Some(record) = endpoints.iter().find(|e| e.info.url == info.url) {
            return record.clone();
        }
        let record = Arc::new(EndpointRecord::new(info));
        if endpoints.len() < MAX_ENDPOINTS_PER_SERVER {
            endpoints.push(record.clone());
        } else {
            tracing::warn!(
                server = &*self.name,
                url = %record.info.url,
                "more than {MAX_ENDPOINTS_PER_SERVER} endpoints: this one's metrics are not kept"
            );
        }
        record
    }

    /// The endpoints, in registration order.
    pub(crate) fn endpoints(&self) -> Vec<Arc<EndpointRecord>> {
        lock(&self.endpoints).clone()
    }

    pub(crate) fn session_ended(&self, duration: Duration, error_type: Option<&str>) {
        let mut sessions = lock(&self.sessions);
        sessions.ended += 1;
        sessions.durations.record(duration);
        if let Some(error_type) = error_type {
            let known = sessions.by_error_type.len() < MAX_SESSION_ERROR_TYPES
                || sessions.by_error_type.contains_key(error_type);
            let key = if known { error_type } else { OTHER_ERROR };
            match sessions.by_error_type.get_mut(key) {
                Some(count) => *count += 1,
                None => {
                    sessions.by_error_type.insert(key.into(), 1);
                }
            }
        }
    }

    pub(crate) fn info(&self) -> ServerInfo {
        read(&self.info).clone()
    }

    pub(crate) fn update_info(&self, change: impl FnOnce(&mut ServerInfo)) {
        change(&mut write(&self.info));
    }

    pub(crate) fn gauge_source(&self) -> Option<Arc<dyn crate::GaugeSource>> {
        read(&self.gauges).clone()
    }

    pub(crate) fn set_gauge_source(&self, source: Option<Arc<dyn crate::GaugeSource>>) {
        *write(&self.gauges) = source;
    }
}

impl std::fmt::Debug for ServerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerMetrics")
            .field("name", &self.name)
            .field("series", &self.series.len())
            .finish_non_exhaustive()
    }
}

// Poison-tolerant like `mcp_core::sync::lock`: every critical section here is one map or
// field operation, which a panic cannot leave half done.
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
