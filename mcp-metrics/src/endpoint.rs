//! [`EndpointHandle`]: one endpoint of a server that has several (multi-region routing) — the
//! calls sent to it, their errors and smoothed latency, and its health probes — what the
//! facade's router reads to choose the active endpoint, and what snapshots and Prometheus
//! show per endpoint.
//!
//! # The two averages
//!
//! - **Calls** ([`record_call`](EndpointHandle::record_call), every call of a routed server):
//!   an exponentially weighted moving average of successful calls' latency, alpha 1/8, kept
//!   as whole nanoseconds in one atomic and updated by a compare-and-swap loop, so the hot
//!   path takes no lock and allocates nothing. The first sample sets it; failed calls are
//!   counted but leave it alone (a refused connection is fast, and would make a failing
//!   endpoint look good).
//! - **Probes** ([`record_probe`](EndpointHandle::record_probe), rare): alpha 0.1 and, once
//!   three samples are in, each new sample first clamped to at most twice the average, so one
//!   freak round trip cannot move it far (a sustained slowdown still does: each sample may
//!   raise the average by up to 10 %).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::sync::lock;

/// Endpoints one server keeps apart; one registered beyond them records into a record no
/// snapshot shows.
pub(crate) const MAX_ENDPOINTS_PER_SERVER: usize = 64;

/// The call average's weight of a new sample: 1/2^3.
const CALL_EWMA_SHIFT: u32 = 3;

/// The probe average's weight of a new sample.
const PROBE_ALPHA: f64 = 0.1;

/// Samples the probe average takes before it clamps new ones.
const PROBE_CLAMP_AFTER: u64 = 3;

/// The most a probe sample may be, as a multiple of the average, once it clamps.
const PROBE_CLAMP_FACTOR: f64 = 2.0;

/// The call average before its first sample (no latency is this long: samples are capped
/// one below).
const NO_SAMPLE: u64 = u64::MAX;

/// One endpoint of a server, as the facade describes it when it registers it with
/// [`ServerHandle::endpoint`](crate::ServerHandle::endpoint).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct EndpointInfo {
    /// The endpoint's URL, already redacted by the caller (no user info or query): shown as
    /// is, and the key endpoints are told apart by (and gauges matched to them by).
    pub url: String,
    /// Its host (`server.address`).
    pub address: Option<String>,
    /// Its port (`server.port`).
    pub port: Option<u16>,
    /// The region it is deployed in (`cloud.region`; the Prometheus `region` label).
    pub region: Option<String>,
}

/// What one endpoint recorded (see the [module docs](self)).
pub(crate) struct EndpointRecord {
    pub(crate) info: EndpointInfo,
    calls: CallStats,
    probes: Mutex<ProbeStats>,
}

/// The calls' counters, on a cache line of their own: every call of a routed server writes
/// them, and the endpoints' records sit side by side in memory.
#[repr(align(64))]
struct CallStats {
    calls: AtomicU64,
    errors: AtomicU64,
    /// The successful calls' average in nanoseconds, [`NO_SAMPLE`] before the first.
    latency_ewma_ns: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default)]
struct ProbeStats {
    probes: u64,
    failures: u64,
    /// In nanoseconds; meaningful once `samples > 0`.
    ewma_ns: f64,
    samples: u64,
}

/// One endpoint's numbers at one moment (the snapshot's part that is not a gauge).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EndpointReading {
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) call_latency: Option<Duration>,
    pub(crate) probes: u64,
    pub(crate) probe_failures: u64,
    pub(crate) probe_latency: Option<Duration>,
    pub(crate) probe_samples: u64,
}

impl EndpointRecord {
    pub(crate) fn new(info: EndpointInfo) -> EndpointRecord {
        EndpointRecord {
            info,
            calls: CallStats {
                calls: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                latency_ewma_ns: AtomicU64::new(NO_SAMPLE),
            },
            probes: Mutex::new(ProbeStats::default()),
        }
    }

    #[inline]
    fn record_call(&self, latency: Duration, ok: bool) {
        let stats = &self.calls;
        stats.calls.fetch_add(1, Ordering::Relaxed);
        if !ok {
            stats.errors.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let sample = nanos(latency).min(NO_SAMPLE - 1);
        // `fetch_update` is the CAS loop; the closure always gives a value, so it cannot fail.
        let _ =
            stats
                .latency_ewma_ns
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |average| {
                    Some(call_ewma(average, sample))
                });
    }

    fn record_probe(&self, latency: Option<Duration>) {
        let mut probes = lock(&self.probes);
        probes.probes += 1;
        match latency {
            Some(rtt) => probes.sample(nanos(rtt) as f64),
            None => probes.failures += 1,
        }
    }

    fn call_latency(&self) -> Option<Duration> {
        match self.calls.latency_ewma_ns.load(Ordering::Relaxed) {
            NO_SAMPLE => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    fn probe_latency(&self) -> Option<(Duration, u64)> {
        let probes = *lock(&self.probes);
        probes.average()
    }

    pub(crate) fn read(&self) -> EndpointReading {
        let probes = *lock(&self.probes);
        EndpointReading {
            calls: self.calls.calls.load(Ordering::Relaxed),
            errors: self.calls.errors.load(Ordering::Relaxed),
            call_latency: self.call_latency(),
            probes: probes.probes,
            probe_failures: probes.failures,
            probe_latency: probes.average().map(|(latency, _)| latency),
            probe_samples: probes.samples,
        }
    }
}

/// The call average after `sample`: the first sample, or 7/8 of the average plus 1/8 of the
/// sample, rounded to the nearest nanosecond (in 128 bits: no latency overflows it). In whole
/// nanoseconds it settles within 4 ns of a steady sample: nothing at the microseconds it is
/// shown in.
#[inline]
fn call_ewma(average: u64, sample: u64) -> u64 {
    if average == NO_SAMPLE {
        return sample;
    }
    let weight = 1u128 << CALL_EWMA_SHIFT;
    let sum = u128::from(average) * (weight - 1) + u128::from(sample) + weight / 2;
    // At most the larger of the two, both below `NO_SAMPLE`.
    (sum >> CALL_EWMA_SHIFT) as u64
}

impl ProbeStats {
    fn sample(&mut self, ns: f64) {
        if self.samples == 0 {
            self.ewma_ns = ns;
        } else {
            let ns = if self.samples >= PROBE_CLAMP_AFTER {
                ns.min(self.ewma_ns * PROBE_CLAMP_FACTOR)
            } else {
                ns
            };
            self.ewma_ns += PROBE_ALPHA * (ns - self.ewma_ns);
        }
        self.samples += 1;
    }

    fn average(&self) -> Option<(Duration, u64)> {
        (self.samples > 0).then(|| {
            // Finite and non-negative: a mean of `u64` nanoseconds.
            (
                Duration::from_nanos(self.ewma_ns.round() as u64),
                self.samples,
            )
        })
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// One endpoint of a server (see the [module docs](self)): what the facade records every
/// call sent to it and every health probe of it through, and what its router reads the
/// smoothed latencies from. Made by [`ServerHandle::endpoint`](crate::ServerHandle::endpoint);
/// cheap to clone (clones share the record).
///
/// ```
/// use std::time::Duration;
/// use mcp_metrics::{EndpointInfo, Metrics};
///
/// let metrics = Metrics::new();
/// let github = metrics.server("github");
/// let eu = github.endpoint(EndpointInfo {
///     url: "https://eu.api.example.com/mcp".into(),
///     address: Some("eu.api.example.com".into()),
///     port: Some(443),
///     region: Some("eu-west-1".into()),
/// });
/// eu.record_probe(Some(Duration::from_millis(20)));
/// eu.record_call(Duration::from_millis(35), true);
/// assert_eq!(eu.probe_latency(), Some((Duration::from_millis(20), 1)));
/// assert_eq!(eu.call_latency(), Some(Duration::from_millis(35)));
///
/// let snapshot = github.snapshot();
/// assert_eq!(snapshot.endpoints[0].calls, 1);
/// assert_eq!(snapshot.endpoints[0].region.as_deref(), Some("eu-west-1"));
/// ```
#[derive(Clone)]
pub struct EndpointHandle {
    record: Arc<EndpointRecord>,
    registry: Arc<crate::registry::Registry>,
}

/// When a call to an endpoint started, on the registry's clock ([`EndpointHandle::start_call`]).
#[derive(Debug, Clone, Copy)]
pub struct CallStart(u64);

impl EndpointHandle {
    pub(crate) fn new(
        record: Arc<EndpointRecord>,
        registry: Arc<crate::registry::Registry>,
    ) -> EndpointHandle {
        EndpointHandle { record, registry }
    }

    /// Marks the start of a call, on the registry's clock (the CPU's counter: a few
    /// nanoseconds); [`finish_call`](Self::finish_call) records it.
    #[inline]
    pub fn start_call(&self) -> CallStart {
        CallStart(self.registry.clock.now())
    }

    /// Records the call started at `start` as [`record_call`](Self::record_call) does, its
    /// latency read off the registry's clock.
    #[inline]
    pub fn finish_call(&self, start: CallStart, ok: bool) {
        let elapsed = self.registry.clock.now().saturating_sub(start.0);
        self.record.record_call(Duration::from_nanos(elapsed), ok);
    }

    /// The endpoint as it was registered (the first registration of its URL).
    pub fn info(&self) -> &EndpointInfo {
        &self.record.info
    }

    /// Records one attempt sent to this endpoint that ended after `latency`, successfully or
    /// not: counts it (and its error), and moves the successful calls' average (alpha 1/8).
    /// Atomics only — no lock, no allocation.
    #[inline]
    pub fn record_call(&self, latency: Duration, ok: bool) {
        self.record.record_call(latency, ok);
    }

    /// Records a health probe of this endpoint: `Some(rtt)` when it answered, `None` when it
    /// failed. Counts it (and its failure) and moves the probe average (alpha 0.1; after
    /// three samples, a sample is first clamped to twice the average).
    pub fn record_probe(&self, latency: Option<Duration>) {
        self.record.record_probe(latency);
    }

    /// The probes' average round trip and how many samples it holds; `None` before the first
    /// probe that answered.
    pub fn probe_latency(&self) -> Option<(Duration, u64)> {
        self.record.probe_latency()
    }

    /// The successful calls' average latency; `None` before the first.
    pub fn call_latency(&self) -> Option<Duration> {
        self.record.call_latency()
    }
}

impl std::fmt::Debug for EndpointHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointHandle")
            .field("url", &self.record.info.url)
            .field("region", &self.record.info.region)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> EndpointRecord {
        EndpointRecord::new(EndpointInfo {
            url: "https://a.example.com/mcp".into(),
            ..Default::default()
        })
    }

    #[test]
    fn the_call_average_starts_at_its_first_sample_and_moves_by_an_eighth() {
        let record = record();
        assert_eq!(record.call_latency(), None);
        record.record_call(Duration::from_millis(8), true);
        assert_eq!(record.call_latency(), Some(Duration::from_millis(8)));
        record.record_call(Duration::from_millis(16), true);
        assert_eq!(record.call_latency(), Some(Duration::from_millis(9)));
        // Failures are counted and leave the average alone.
        record.record_call(Duration::from_secs(30), false);
        record.record_call(Duration::ZERO, false);
        assert_eq!(record.call_latency(), Some(Duration::from_millis(9)));
        let reading = record.read();
        assert_eq!((reading.calls, reading.errors), (4, 2));
        // In whole nanoseconds, rounded: it settles within 4 ns of a steady sample, from
        // either side.
        for steady in [9_000_007, 8_000_000, 8_000_000 + 1] {
            for _ in 0..400 {
                record.record_call(Duration::from_nanos(steady), true);
            }
            let average = record.call_latency().unwrap().as_nanos() as u64;
            assert!(average.abs_diff(steady) <= 4, "{average} for {steady}");
        }
    }

    #[test]
    fn the_call_average_neither_overflows_nor_mistakes_a_sample_for_none() {
        assert_eq!(call_ewma(NO_SAMPLE, 0), 0);
        assert_eq!(call_ewma(0, 0), 0);
        assert_eq!(call_ewma(NO_SAMPLE - 1, NO_SAMPLE - 1), NO_SAMPLE - 1);
        let record = record();
        record.record_call(Duration::MAX, true);
        assert_eq!(
            record.call_latency(),
            Some(Duration::from_nanos(NO_SAMPLE - 1))
        );
        record.record_call(Duration::MAX, true);
        assert_eq!(
            record.call_latency(),
            Some(Duration::from_nanos(NO_SAMPLE - 1))
        );
    }

    #[test]
    fn concurrent_calls_are_all_counted() {
        let record = Arc::new(record());
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let record = record.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        record.record_call(Duration::from_micros(100), i % 2 == 0);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let reading = record.read();
        assert_eq!((reading.calls, reading.errors), (40_000, 20_000));
        assert_eq!(reading.call_latency, Some(Duration::from_micros(100)));
    }
}
