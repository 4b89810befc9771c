//! The bounded content cache: a moka `sync::Cache` weighed in bytes, least recently used
//! evicted first.
//!
//! Freshness is not moka's business: its time-based expiry runs on its own clock, which tests
//! cannot pause, so the TTL lives in the state table (`table.rs`) on tokio's clock and moka
//! only bounds memory. Evictions for capacity are queued by moka's listener (which must not
//! panic and must not take the table's lock: it may run while the table's lock is held) and
//! applied to the state table by its owner afterwards.

use std::sync::{Arc, Mutex};

use mcp_core::sync::lock;
use mcp_core::types::ReadResourceResult;
use moka::notification::RemovalCause;
use moka::policy::EvictionPolicy;

/// One cached result.
#[derive(Clone)]
pub(crate) struct Content {
    pub(crate) result: Arc<ReadResourceResult>,
    /// Identifies this content, so an eviction of content since replaced changes nothing.
    pub(crate) id: u64,
    weight: u32,
}

/// What a result weighs: its URI key plus, for every content, its URI, MIME type, text and
/// blob (the bytes that dominate; the small fixed parts are left out).
pub(crate) fn weight_of(uri: &str, result: &ReadResourceResult) -> u64 {
    let contents: usize = result
        .contents
        .iter()
        .map(|c| {
            c.uri.len()
                + c.mime_type.as_ref().map_or(0, String::len)
                + c.text.as_ref().map_or(0, String::len)
                + c.blob.as_ref().map_or(0, String::len)
        })
        .sum();
    u64::try_from(uri.len().saturating_add(contents)).unwrap_or(u64::MAX)
}

/// Evicted for capacity: (URI, content id), waiting to be applied to the state table.
type EvictionQueue = Arc<Mutex<Vec<(String, u64)>>>;

pub(crate) struct ContentCache {
    cache: moka::sync::Cache<String, Content>,
    evicted: EvictionQueue,
    max_bytes: u64,
}

impl ContentCache {
    pub(crate) fn new(max_bytes: u64) -> Self {
        let evicted = EvictionQueue::default();
        let queue = evicted.clone();
        let cache = moka::sync::Cache::builder()
            .max_capacity(max_bytes)
            .weigher(|_uri: &String, content: &Content| content.weight)
            // Least recently used out first: predictable, and what a reader expects of "the
            // cache is full" (TinyLFU may refuse a new entry outright).
            .eviction_policy(EvictionPolicy::lru())
            .eviction_listener(move |uri: Arc<String>, content: Content, cause| {
                if cause == RemovalCause::Size {
                    lock(&queue).push((uri.as_ref().clone(), content.id));
                }
            })
            .build();
        ContentCache {
            cache,
            evicted,
            max_bytes,
        }
    }

    /// Whether a result of `weight` bytes may be cached at all.
    pub(crate) fn fits(&self, weight: u64) -> bool {
        weight <= self.max_bytes && u32::try_from(weight).is_ok()
    }

    pub(crate) fn get(&self, uri: &str) -> Option<Content> {
        self.cache.get(uri)
    }

    /// Keeps `result` (the caller checked [`fits`](Self::fits)); evictions it causes are queued
    /// before this returns.
    pub(crate) fn insert(&self, uri: &str, result: Arc<ReadResourceResult>, weight: u64, id: u64) {
        let weight = u32::try_from(weight).unwrap_or(u32::MAX);
        self.cache
            .insert(uri.to_owned(), Content { result, id, weight });
        self.cache.run_pending_tasks();
    }

    pub(crate) fn remove(&self, uri: &str) {
        self.cache.invalidate(uri);
    }

    pub(crate) fn clear(&self) {
        self.cache.invalidate_all();
        self.cache.run_pending_tasks();
    }

    /// The evictions not yet applied.
    pub(crate) fn take_evicted(&self) -> Vec<(String, u64)> {
        std::mem::take(&mut *lock(&self.evicted))
    }

    /// (entries, weighted bytes), exact: pending maintenance is run first.
    pub(crate) fn size(&self) -> (u64, u64) {
        self.cache.run_pending_tasks();
        (self.cache.entry_count(), self.cache.weighted_size())
    }
}
