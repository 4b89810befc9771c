//! The facade's caches whose hits and misses are counted per server.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// One of the facade's caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheKind {
    /// The server's tool list (the catalog).
    Tools,
    /// The server's prompt list.
    Prompts,
    /// The server's resource list.
    Resources,
    /// Contents of read resources.
    ResourceContents,
}

impl CacheKind {
    /// Every cache, in the order snapshots list them.
    pub const ALL: [CacheKind; 4] = [
        CacheKind::Tools,
        CacheKind::Prompts,
        CacheKind::Resources,
        CacheKind::ResourceContents,
    ];

    /// A stable snake_case name (snapshots, the Prometheus `cache` label).
    pub const fn as_str(self) -> &'static str {
        match self {
            CacheKind::Tools => "tools",
            CacheKind::Prompts => "prompts",
            CacheKind::Resources => "resources",
            CacheKind::ResourceContents => "resource_contents",
        }
    }

    const fn index(self) -> usize {
        match self {
            CacheKind::Tools => 0,
            CacheKind::Prompts => 1,
            CacheKind::Resources => 2,
            CacheKind::ResourceContents => 3,
        }
    }
}

/// Hits and misses of one server's caches.
#[derive(Debug, Default)]
pub(crate) struct CacheCounters {
    hits: [AtomicU64; 4],
    misses: [AtomicU64; 4],
}

impl CacheCounters {
    pub(crate) fn record(&self, cache: CacheKind, hit: bool) {
        let counters = if hit { &self.hits } else { &self.misses };
        counters[cache.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// `(hits, misses)` of `cache`.
    pub(crate) fn get(&self, cache: CacheKind) -> (u64, u64) {
        let i = cache.index();
        (
            self.hits[i].load(Ordering::Relaxed),
            self.misses[i].load(Ordering::Relaxed),
        )
    }
}
