//! [`ResourceConfig`]: the knobs of a [`ResourceManager`](crate::ResourceManager).

use std::time::Duration;

/// How a [`ResourceManager`](crate::ResourceManager) behaves. `Default` gives the documented
/// defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceConfig {
    /// How long read content stays fresh (CACHED) when nothing else makes it stale. A
    /// `resources/read` result's own `ttlMs` cache hint (2026-07-28) shortens it, and a hint of
    /// zero or less keeps the result from being cached at all. Zero disables caching.
    /// Default: 60 s.
    pub ttl: Duration,
    /// The cache's capacity in bytes, weighed as the URI plus every content's URI, text and
    /// blob. A result heavier than the whole capacity is returned but not cached. Default:
    /// 64 MiB.
    pub max_bytes: u64,
    /// Subscribe on first access (a read) when the server offers subscriptions. Without it
    /// (or without the capability) freshness relies on the TTL alone, unless
    /// [`subscribe`](crate::ResourceManager::subscribe) is called. Default: true.
    pub auto_subscribe: bool,
    /// The most automatic subscriptions (made by reads, not by
    /// [`subscribe`](crate::ResourceManager::subscribe)) held at once. Past it, the one read
    /// least recently loses its subscription: `resources/unsubscribe` is sent in the
    /// background (the read that pushed it out does not wait for it; it has its own
    /// [`request_timeout`](Self::request_timeout)) and the URI is fresh by the TTL only
    /// (SUBSCRIBED → UNKNOWN; CACHED and STALE keep their state), so a harness reading many
    /// distinct resources does not hold a subscription for each forever.
    /// Explicit subscriptions are never evicted and do not count. 0 counts as 1 (turn
    /// [`auto_subscribe`](Self::auto_subscribe) off for none). Default: 256.
    pub max_auto_subscriptions: usize,
    /// The deadline of each call that goes to the server (a read with its automatic
    /// subscription, a subscribe, an unsubscribe, an evicted subscription's unsubscribe, a
    /// discovery), also bounding how long a caller waits for a fetch another caller started.
    /// Default: 30 s.
    pub request_timeout: Duration,
    /// How long [`close`](crate::ResourceManager::close) spends on its best-effort
    /// `resources/unsubscribe` requests, all together. Default: 2 s.
    pub close_timeout: Duration,
    /// How many [`Transition`](crate::Transition)s a slow
    /// [`transitions`](crate::ResourceManager::transitions) receiver may fall behind before it
    /// skips the oldest. Default: 1024.
    pub transition_buffer: usize,
}

impl Default for ResourceConfig {
    fn default() -> Self {
        ResourceConfig {
            ttl: Duration::from_secs(60),
            max_bytes: 64 * 1024 * 1024,
            auto_subscribe: true,
            max_auto_subscriptions: 256,
            request_timeout: Duration::from_secs(30),
            close_timeout: Duration::from_secs(2),
            transition_buffer: 1024,
        }
    }
}

impl ResourceConfig {
    /// The defaults.
    pub fn new() -> Self {
        ResourceConfig::default()
    }

    /// Sets [`ttl`](Self::ttl).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets [`max_bytes`](Self::max_bytes).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets [`auto_subscribe`](Self::auto_subscribe).
    pub fn with_auto_subscribe(mut self, auto_subscribe: bool) -> Self {
        self.auto_subscribe = auto_subscribe;
        self
    }

    /// Sets [`max_auto_subscriptions`](Self::max_auto_subscriptions).
    pub fn with_max_auto_subscriptions(mut self, max: usize) -> Self {
        self.max_auto_subscriptions = max;
        self
    }

    /// Sets [`request_timeout`](Self::request_timeout).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`close_timeout`](Self::close_timeout).
    pub fn with_close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Sets [`transition_buffer`](Self::transition_buffer) (at least 1).
    pub fn with_transition_buffer(mut self, buffer: usize) -> Self {
        self.transition_buffer = buffer;
        self
    }
}
