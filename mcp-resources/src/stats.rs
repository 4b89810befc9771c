//! [`ResourceStats`]: what a [`ResourceManager`](crate::ResourceManager) has done and holds,
//! for metrics (hit rate, bytes), and the counters behind it.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) hits: AtomicU64,
    pub(crate) misses: AtomicU64,
    pub(crate) fetches: AtomicU64,
    pub(crate) shared_fetches: AtomicU64,
    pub(crate) updates: AtomicU64,
    pub(crate) list_fetches: AtomicU64,
    pub(crate) subscriptions_evicted: AtomicU64,
    pub(crate) evicted_unsubscribes_failed: AtomicU64,
}

impl Counters {
    /// Counts one more.
    pub(crate) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters, with the sizes the state table reports.
    pub(crate) fn snapshot(
        &self,
        tracked: u64,
        subscribed: u64,
        entries: u64,
        weighted_bytes: u64,
    ) -> ResourceStats {
        ResourceStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            fetches: self.fetches.load(Ordering::Relaxed),
            shared_fetches: self.shared_fetches.load(Ordering::Relaxed),
            updates: self.updates.load(Ordering::Relaxed),
            list_fetches: self.list_fetches.load(Ordering::Relaxed),
            subscriptions_evicted: self.subscriptions_evicted.load(Ordering::Relaxed),
            evicted_unsubscribes_failed: self.evicted_unsubscribes_failed.load(Ordering::Relaxed),
            entries,
            weighted_bytes,
            tracked,
            subscribed,
        }
    }
}

/// What the manager has done and holds, for metrics
/// ([`stats`](crate::ResourceManager::stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ResourceStats {
    /// Reads answered from the cache at once.
    pub hits: u64,
    /// Reads that waited for the server (their own fetch or one another read started).
    pub misses: u64,
    /// `resources/read` requests sent.
    pub fetches: u64,
    /// Reads that shared another read's fetch instead of sending their own.
    pub shared_fetches: u64,
    /// `notifications/resources/updated` handled.
    pub updates: u64,
    /// Listings fetched (`resources/list` + `resources/templates/list`).
    pub list_fetches: u64,
    /// Automatic subscriptions given up to stay within
    /// [`max_auto_subscriptions`](crate::ResourceConfig::max_auto_subscriptions) (each with a
    /// `resources/unsubscribe` sent in the background).
    pub subscriptions_evicted: u64,
    /// Of those, the ones whose `resources/unsubscribe` failed, got no answer within
    /// [`request_timeout`](crate::ResourceConfig::request_timeout), or was not sent (more than
    /// [`MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT`](crate::MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT)
    /// under way): the server may still send updates for them.
    pub evicted_unsubscribes_failed: u64,
    /// Results in the cache.
    pub entries: u64,
    /// Their weight in bytes (what [`ResourceConfig::max_bytes`](crate::ResourceConfig::max_bytes) bounds).
    pub weighted_bytes: u64,
    /// URIs with a state other than UNKNOWN.
    pub tracked: u64,
    /// URIs the server sends updates for.
    pub subscribed: u64,
}

impl ResourceStats {
    /// Hits over all reads (0 when there were none).
    pub fn hit_rate(&self) -> f64 {
        let reads = self.hits + self.misses;
        if reads == 0 {
            0.0
        } else {
            self.hits as f64 / reads as f64
        }
    }
}
