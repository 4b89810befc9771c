//! The knobs of a pool ([`PoolConfig`]) and their defaults.

use std::time::Duration;

/// How a [`SessionPool`](crate::SessionPool) behaves. `Default` gives the documented defaults
/// (requirement R-POOL): at least 2 idle sessions once used, at most 10, idle ones closed after
/// 300 s, a `ping` on idle ones every 60 s.
///
/// Values that would make no sense (a maximum of 0, zero durations, more idle than maximum) are
/// corrected when the pool is built, never a panic: see [`PoolConfig::normalized`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Idle sessions the pool keeps ready once it has started (bb8's `min_idle`). bb8 counts
    /// *idle* sessions, not all of them: while `n` calls are running it keeps up to `min_idle`
    /// more open, within `max_size`. Default: 2.
    pub min_idle: u32,
    /// Most sessions open at once, in use or idle (bb8's `max_size`; the hard cap in
    /// load-sized mode too). Default: 10.
    pub max_size: u32,
    /// A session idle for this long is closed by bb8's reaper (which then opens new ones to get
    /// back to `min_idle`; see the crate documentation). Default: 300 s.
    pub idle_timeout: Duration,
    /// How often bb8's reaper looks for sessions past `idle_timeout` (and past `max_lifetime`):
    /// an idle session is closed between `idle_timeout` and `idle_timeout + reaper_interval`
    /// after its last call. Default: 30 s (bb8's own).
    pub reaper_interval: Duration,
    /// A session older than this is closed when it is next idle (bb8's `max_lifetime`). Default:
    /// none (sessions live as long as they work).
    pub max_lifetime: Option<Duration>,
    /// A session that has not served a call (nor been pinged) for this long is sent a `ping`;
    /// `None` disables keepalive. Default: 60 s.
    pub keepalive_interval: Option<Duration>,
    /// How long a keepalive `ping` may take before the session is considered dead and closed.
    /// Default: 10 s.
    pub ping_timeout: Duration,
    /// How long opening one session (the [`SessionConnector`](mcp_session::SessionConnector)'s `connect`,
    /// handshake included) may take. Default: 10 s.
    pub connect_timeout: Duration,
    /// The deadline of a call whose [`RequestOptions`](mcp_core::RequestOptions) set neither
    /// `timeout` nor `deadline`; it covers waiting for a connection and the call together. Keep
    /// it equal to the sessions' [`SessionOptions::request_timeout`](mcp_session::SessionOptions).
    /// Default: 30 s.
    pub request_timeout: Duration,
    /// Load-sized mode (the enterprise profile): the number of sessions that may be in use at
    /// once starts at `max(min_idle, 1)`, grows by one each time a caller has to wait because
    /// that many are in use (up to `max_size`), and shrinks by one after each `idle_timeout`
    /// period in which it was never reached (down to its start). Default: false (bb8 alone:
    /// grows on demand up to `max_size`, shrinks by `idle_timeout`).
    pub load_sized: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            min_idle: 2,
            max_size: 10,
            idle_timeout: Duration::from_secs(300),
            reaper_interval: Duration::from_secs(30),
            max_lifetime: None,
            keepalive_interval: Some(Duration::from_secs(60)),
            ping_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            load_sized: false,
        }
    }
}

/// The shortest duration a pool uses where a zero was configured.
const SHORTEST: Duration = Duration::from_millis(1);

impl PoolConfig {
    /// The defaults.
    pub fn new() -> Self {
        PoolConfig::default()
    }

    /// Sets how many idle sessions are kept ready.
    pub fn with_min_idle(mut self, min_idle: u32) -> Self {
        self.min_idle = min_idle;
        self
    }

    /// Sets the most sessions open at once.
    pub fn with_max_size(mut self, max_size: u32) -> Self {
        self.max_size = max_size;
        self
    }

    /// Sets how long a session may stay idle before it is closed.
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// Sets how often bb8's reaper runs.
    pub fn with_reaper_interval(mut self, interval: Duration) -> Self {
        self.reaper_interval = interval;
        self
    }

    /// Sets (or removes) the longest a session may live.
    pub fn with_max_lifetime(mut self, lifetime: Option<Duration>) -> Self {
        self.max_lifetime = lifetime;
        self
    }

    /// Sets (or, with `None`, disables) the keepalive interval.
    pub fn with_keepalive(mut self, interval: Option<Duration>) -> Self {
        self.keepalive_interval = interval;
        self
    }

    /// Sets how long a keepalive ping may take.
    pub fn with_ping_timeout(mut self, timeout: Duration) -> Self {
        self.ping_timeout = timeout;
        self
    }

    /// Sets how long opening one session may take.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the deadline of calls that set none.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Turns load-sized mode on or off.
    pub fn with_load_sized(mut self, load_sized: bool) -> Self {
        self.load_sized = load_sized;
        self
    }

    /// The configuration the pool actually runs with: `max_size` at least 1, `min_idle` at most
    /// `max_size`, every zero duration raised to 1 ms, a zero keepalive interval meaning no
    /// keepalive. (bb8 would panic on some of these.)
    pub fn normalized(mut self) -> Self {
        self.max_size = self.max_size.max(1);
        self.min_idle = self.min_idle.min(self.max_size);
        for d in [
            &mut self.idle_timeout,
            &mut self.reaper_interval,
            &mut self.ping_timeout,
            &mut self.connect_timeout,
            &mut self.request_timeout,
        ] {
            *d = (*d).max(SHORTEST);
        }
        self.max_lifetime = self.max_lifetime.map(|d| d.max(SHORTEST));
        self.keepalive_interval = self.keepalive_interval.filter(|d| !d.is_zero());
        self
    }

    /// The smallest load-sized target: `max(min_idle, 1)`.
    pub(crate) fn min_target(&self) -> u32 {
        self.min_idle.max(1).min(self.max_size.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_requirement() {
        let c = PoolConfig::default();
        assert_eq!(c.min_idle, 2);
        assert_eq!(c.max_size, 10);
        assert_eq!(c.idle_timeout, Duration::from_secs(300));
        assert_eq!(c.keepalive_interval, Some(Duration::from_secs(60)));
        assert_eq!(c.connect_timeout, Duration::from_secs(10));
        assert_eq!(c.request_timeout, Duration::from_secs(30));
        assert!(!c.load_sized);
        assert_eq!(c.clone().normalized(), c, "the defaults need no correction");
    }

    #[test]
    fn nonsense_values_are_corrected_not_panicked_on() {
        let c = PoolConfig::default()
            .with_max_size(0)
            .with_min_idle(7)
            .with_idle_timeout(Duration::ZERO)
            .with_connect_timeout(Duration::ZERO)
            .with_max_lifetime(Some(Duration::ZERO))
            .with_keepalive(Some(Duration::ZERO))
            .normalized();
        assert_eq!(c.max_size, 1);
        assert_eq!(c.min_idle, 1);
        assert_eq!(c.idle_timeout, SHORTEST);
        assert_eq!(c.connect_timeout, SHORTEST);
        assert_eq!(c.max_lifetime, Some(SHORTEST));
        assert_eq!(c.keepalive_interval, None);
        assert_eq!(c.min_target(), 1);
    }

    #[test]
    fn the_load_sized_floor_is_at_least_one() {
        assert_eq!(PoolConfig::default().with_min_idle(0).min_target(), 1);
        assert_eq!(PoolConfig::default().with_min_idle(3).min_target(), 3);
    }
}
