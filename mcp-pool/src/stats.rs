//! What a pool reports about itself: [`PoolStats`], a snapshot, and the counters behind it.
//!
//! Where bb8 keeps a number ([`bb8::State`], [`bb8::Statistics`]) the snapshot takes it from bb8:
//! open and idle connections, connections created, closed for idleness or age. The pool counts
//! the rest itself, because bb8 cannot see them: a checkout cut short by the caller's deadline is
//! a dropped future to bb8 (it never records it), in-use is the pool's own checkout guards, and
//! keepalive and connect failures happen in the pool's code.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A snapshot of a pool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Whether the pool has started (its first call has come); before that, nothing is open.
    pub started: bool,
    /// Whether [`close`](crate::SessionPool::close) was called.
    pub closed: bool,
    /// Sessions open, in use or idle (bb8's `State::connections`; sessions being opened are
    /// not counted).
    pub connections: u32,
    /// Sessions bound to a call right now.
    pub in_use: u32,
    /// Sessions waiting in the pool for a call (bb8's `State::idle_connections`).
    pub idle: u32,
    /// Callers waiting for a session right now.
    pub waiting: u32,
    /// Checkouts that had to wait: no idle session was there at once (a session had to be
    /// opened, or every one was in use, or — load-sized — the target was reached).
    pub waits: u64,
    /// Checkouts that gave up because the call's deadline passed first.
    pub timeouts: u64,
    /// Sessions opened (bb8's `connections_created`).
    pub created: u64,
    /// Sessions discarded because they had ended (the server went away, a keepalive ping
    /// failed): found on checkout or on return.
    pub closed_broken: u64,
    /// Sessions closed by bb8's reaper for being idle past `idle_timeout`
    /// (bb8's `connections_closed_idle_timeout`).
    pub closed_idle: u64,
    /// Sessions closed for being older than `max_lifetime`
    /// (bb8's `connections_closed_max_lifetime`).
    pub closed_max_lifetime: u64,
    /// Attempts to open a session that failed (or timed out).
    pub connect_failures: u64,
    /// Keepalive pings the server answered.
    pub keepalive_pings: u64,
    /// Keepalive pings that failed or timed out (each closed its session).
    pub keepalive_failures: u64,
    /// Load-sized mode: how many sessions may be in use at once right now. `None` otherwise.
    pub target_size: Option<u32>,
    /// The hard cap (`max_size`).
    pub max_size: u32,
}

/// The counters the pool keeps itself (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) in_use: AtomicU32,
    pub(crate) waiting: AtomicU32,
    pub(crate) waits: AtomicU64,
    pub(crate) timeouts: AtomicU64,
    pub(crate) closed_broken: AtomicU64,
    pub(crate) connect_failures: AtomicU64,
    pub(crate) keepalive_pings: AtomicU64,
    pub(crate) keepalive_failures: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Fills in the pool's own numbers.
    pub(crate) fn fill(&self, stats: &mut PoolStats) {
        stats.in_use = self.in_use.load(Ordering::Relaxed);
        stats.waiting = self.waiting.load(Ordering::Relaxed);
        stats.waits = Self::get(&self.waits);
        stats.timeouts = Self::get(&self.timeouts);
        stats.closed_broken = Self::get(&self.closed_broken);
        stats.connect_failures = Self::get(&self.connect_failures);
        stats.keepalive_pings = Self::get(&self.keepalive_pings);
        stats.keepalive_failures = Self::get(&self.keepalive_failures);
    }
}

/// Counts one while alive: a caller waiting, a session in use.
pub(crate) struct Gauge<'a>(&'a AtomicU32);

impl<'a> Gauge<'a> {
    pub(crate) fn up(gauge: &'a AtomicU32) -> Self {
        gauge.fetch_add(1, Ordering::Relaxed);
        Gauge(gauge)
    }
}

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Copies what bb8 knows into a snapshot.
pub(crate) fn fill_from_bb8(stats: &mut PoolStats, state: &bb8::State) {
    stats.connections = state.connections;
    stats.idle = state.idle_connections;
    let s = &state.statistics;
    stats.created = s.connections_created;
    stats.closed_idle = s.connections_closed_idle_timeout;
    stats.closed_max_lifetime = s.connections_closed_max_lifetime;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gauge_counts_while_it_lives() {
        let counters = Counters::default();
        {
            let _a = Gauge::up(&counters.in_use);
            let _b = Gauge::up(&counters.in_use);
            let mut stats = PoolStats::default();
            counters.fill(&mut stats);
            assert_eq!(stats.in_use, 2);
        }
        let mut stats = PoolStats::default();
        counters.fill(&mut stats);
        assert_eq!(stats.in_use, 0);
    }
}
