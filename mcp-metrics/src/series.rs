//! One operation series — one server × method × tool — and the table a server finds its
//! series in on the hot path: lock-free, allocation-free lookups by borrowed keys.
//!
//! A series' counters, histogram and QPS window are updated together under one spin lock
//! (see [`lock_counts`]).

use std::hash::{BuildHasher, Hasher};
use std::sync::{Mutex, OnceLock};

use mcp_core::sync::lock;
use mcp_core::types::methods;
use mcp_core::ErrorKind;
use spin::mutex::{SpinMutex, SpinMutexGuard};

use crate::call_end::CallEnd;
use crate::latency::{Latency, LatencySummary};
use crate::window::RateWindow;

/// The error-type slots: one per [`ErrorKind`], then `_OTHER` for a kind this crate was built
/// without (the enum is non-exhaustive).
const ERROR_SLOTS: usize = ErrorKind::ALL.len() + 1;

/// The name of the last error slot (OpenTelemetry's fallback `error.type`).
pub(crate) const OTHER_ERROR: &str = "_OTHER";

/// The tool (and method) name that series beyond the table's cap are folded into.
pub(crate) const OTHER: &str = "_other";

fn error_slot(kind: ErrorKind) -> usize {
    ErrorKind::ALL
        .iter()
        .position(|known| *known == kind)
        .unwrap_or(ERROR_SLOTS - 1)
}

fn slot_name(slot: usize) -> &'static str {
    ErrorKind::ALL
        .get(slot)
        .map_or(OTHER_ERROR, |kind| kind.as_str())
}

/// The counters of one series.
#[derive(Debug)]
pub(crate) struct OperationSeries {
    pub(crate) method: Box<str>,
    pub(crate) tool: Option<Box<str>>,
    /// The key's hash in its table (see [`SeriesTable::hash`]): compared before the names.
    hash: u64,
    /// Counts, latencies and the rate window, together under one short lock: one lock per
    /// call costs less than an atomic per counter. A spin lock (see [`lock_counts`]).
    counts: SpinMutex<Counts>,
}

#[derive(Debug)]
struct Counts {
    calls: u64,
    errors: [u64; ERROR_SLOTS],
    cancelled: u64,
    latency: Latency,
    rate: RateWindow,
}

impl OperationSeries {
    fn new(
        method: &str,
        tool: Option<&str>,
        hash: u64,
        window_seconds: u64,
        significant_figures: u8,
    ) -> OperationSeries {
        OperationSeries {
            method: method.into(),
            tool: tool.map(Into::into),
            hash,
            counts: SpinMutex::new(Counts {
                calls: 0,
                errors: [0; ERROR_SLOTS],
                cancelled: 0,
                latency: Latency::micros(significant_figures),
                rate: RateWindow::new(window_seconds),
            }),
        }
    }

    #[inline]
    fn is(&self, hash: u64, method: &str, tool: Option<&str>) -> bool {
        self.hash == hash
            && match (self.tool.as_deref(), tool) {
                (Some(mine), Some(tool)) => same(mine, tool),
                (None, None) => true,
                _ => false,
            }
            && same(&self.method, method)
    }

    /// Records one call that ended in second `second` after `elapsed_nanos`. An abandoned
    /// call is counted (and in the rate) but its duration is not: it says when the caller
    /// gave up, not how long the server took.
    #[inline]
    pub(crate) fn record(&self, end: CallEnd, elapsed_nanos: u64, second: u64) {
        let mut counts = lock_counts(&self.counts);
        counts.calls += 1;
        match end {
            CallEnd::Success => counts.latency.record_nanos(elapsed_nanos),
            CallEnd::Failed(kind) => {
                counts.errors[error_slot(kind)] += 1;
                counts.latency.record_nanos(elapsed_nanos);
            }
            CallEnd::Cancelled => counts.cancelled += 1,
        }
        counts.rate.record(second);
    }

    /// The counters now; `second` is the current second (for the rate). The latencies are
    /// summarized and added to `merged` under the series' lock, without copying the
    /// histogram.
    pub(crate) fn read(&self, second: u64, merged: &mut Latency) -> SeriesReading {
        let (calls, errors, cancelled, latency, qps) = {
            let counts = lock_counts(&self.counts);
            merged.merge(&counts.latency);
            (
                counts.calls,
                counts.errors,
                counts.cancelled,
                counts.latency.summary(),
                counts.rate.rate(second),
            )
        };
        let errors_by_type = errors
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(|(slot, count)| (slot_name(slot), *count))
            .collect();
        SeriesReading {
            calls,
            errors_by_type,
            cancelled,
            qps,
            latency,
        }
    }
}

/// Takes a series' lock.
///
/// A spin lock rather than `std`'s: what it guards is a few counter increments and one
/// histogram record (tens of nanoseconds), and releasing it is a plain store where a
/// `Mutex` needs a second atomic read-modify-write (to learn whether to wake a waiter) —
/// about 6 ns of the layer's per-call budget on this kind of machine. Contention is spun out
/// briefly, then waited out yielding the thread, so a holder descheduled mid-section (or
/// growing its histogram: an allocation) is not spun against for a whole time slice. No
/// poisoning: a panic cannot leave the counters half-updated in a way that matters more than
/// losing one call's record.
#[inline]
fn lock_counts(counts: &SpinMutex<Counts>) -> SpinMutexGuard<'_, Counts> {
    match counts.try_lock() {
        Some(guard) => guard,
        None => lock_contended(counts),
    }
}

#[cold]
fn lock_contended(counts: &SpinMutex<Counts>) -> SpinMutexGuard<'_, Counts> {
    let mut spins = 0u32;
    loop {
        while counts.is_locked() {
            if spins < 100 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        if let Some(guard) = counts.try_lock() {
            return guard;
        }
    }
}

/// What a series held when read.
pub(crate) struct SeriesReading {
    pub(crate) calls: u64,
    /// Non-zero error counts by `error.type`, in [`ErrorKind::ALL`] order.
    pub(crate) errors_by_type: Vec<(&'static str, u64)>,
    pub(crate) cancelled: u64,
    pub(crate) qps: f64,
    pub(crate) latency: LatencySummary,
}

impl SeriesReading {
    pub(crate) fn errors(&self) -> u64 {
        self.errors_by_type.iter().map(|(_, n)| n).sum()
    }
}

/// Whether two names are equal: inline for the short names methods and tools have (at most
/// three loads a side where `==` would call `memcmp`).
#[inline]
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let len = a.len();
    if len != b.len() {
        return false;
    }
    match len {
        0 => true,
        // First, middle and last byte: every byte of up to three.
        1..=3 => a[0] == b[0] && a[len / 2] == b[len / 2] && a[len - 1] == b[len - 1],
        // Two overlapping words cover the whole name.
        4..=7 => half(a, 0) == half(b, 0) && half(a, len - 4) == half(b, len - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, len - 8) == word(b, len - 8),
        _ => a == b,
    }
}

#[inline(always)]
fn half(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..)
        .and_then(<[u8]>::first_chunk::<4>)
        .map_or(0, |chunk| u32::from_ne_bytes(*chunk))
}

#[inline(always)]
fn word(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..)
        .and_then(<[u8]>::first_chunk::<8>)
        .map_or(0, |chunk| u64::from_ne_bytes(*chunk))
}

/// One server's series: a fixed-size open-addressing table of write-once slots.
///
/// Written by hand because the hot path wants what general concurrent maps do not give: a
/// lookup that takes no lock and no atomic read-modify-write (a `RwLock` read and an `Arc`
/// clone cost ~30 ns per call here, a third of the layer's budget), returning a plain
/// reference that lives as long as the table. That is possible because series are never
/// removed (a removed server drops its whole table) and the table never grows: it is sized
/// for its cap at twice the entries, and keys past the cap are folded into `_other`. A slot
/// is a `OnceLock`, so a lookup is acquire loads along the probe sequence; inserts are
/// serialized by a mutex, and a probe stops at the first empty slot because nothing is ever
/// taken out.
pub(crate) struct SeriesTable {
    slots: Box<[OnceLock<Box<OperationSeries>>]>,
    /// `_other` (no tool): every method past the cap but `tools/call`.
    overflow: OperationSeries,
    mask: usize,
    hasher: foldhash::fast::RandomState,
    /// Serializes inserts; holds how many series there are.
    inserting: Mutex<usize>,
    max_series: usize,
    window_seconds: u64,
    significant_figures: u8,
}

/// The most series one server may have, whatever the configuration says (its table is
/// allocated up front: 16 bytes a slot, two slots a series).
pub(crate) const MAX_SERIES_LIMIT: usize = 1 << 16;

impl SeriesTable {
    pub(crate) fn new(
        max_series: usize,
        window_seconds: u64,
        significant_figures: u8,
    ) -> SeriesTable {
        let max_series = max_series.clamp(1, MAX_SERIES_LIMIT);
        // Room for the cap and the fold key of tools, and as many empty slots again.
        let capacity = ((max_series + 1) * 2).next_power_of_two();
        SeriesTable {
            slots: (0..capacity).map(|_| OnceLock::new()).collect(),
            overflow: OperationSeries::new(OTHER, None, 0, window_seconds, significant_figures),
            mask: capacity - 1,
            hasher: foldhash::fast::RandomState::default(),
            inserting: Mutex::new(0),
            max_series,
            window_seconds,
            significant_figures,
        }
    }

    /// The series of `method` (and `tool`), made on its first call.
    #[inline]
    pub(crate) fn get_or_insert(&self, method: &str, tool: Option<&str>) -> &OperationSeries {
        match self.find(method, tool) {
            Some(series) => series,
            None => self.insert(method, tool),
        }
    }

    #[inline]
    fn find(&self, method: &str, tool: Option<&str>) -> Option<&OperationSeries> {
        self.find_hashed(self.hash(method, tool), method, tool)
    }

    #[inline]
    fn find_hashed(&self, hash: u64, method: &str, tool: Option<&str>) -> Option<&OperationSeries> {
        // Truncating the hash on 32-bit targets is fine: only its low bits are used.
        let start = hash as usize;
        for i in 0..self.slots.len() {
            match self.slots.get((start.wrapping_add(i)) & self.mask)?.get() {
                None => return None,
                Some(series) if series.is(hash, method, tool) => return Some(series),
                Some(_) => {}
            }
        }
        None
    }

    /// The hash of a key: of its tool when it has one, else of its method — one pass over
    /// one short name, inlined. Keys with a tool are `tools/call`'s, so hashing the method
    /// too would not spread them further; a method and a tool of the same name share a hash
    /// and are told apart by [`OperationSeries::is`].
    #[inline]
    fn hash(&self, method: &str, tool: Option<&str>) -> u64 {
        let mut hasher = self.hasher.build_hasher();
        hasher.write(tool.unwrap_or(method).as_bytes());
        hasher.finish()
    }

    #[cold]
    fn insert(&self, method: &str, tool: Option<&str>) -> &OperationSeries {
        let mut len = lock(&self.inserting);
        if let Some(series) = self.find(method, tool) {
            return series;
        }
        // Past the cap, new keys share a series: a tool's with the other tools of its method
        // (`tools/call`, one more slot), anything else the overflow series.
        let tool = if *len < self.max_series {
            tool
        } else if method == methods::TOOLS_CALL {
            Some(OTHER)
        } else {
            return &self.overflow;
        };
        let hash = self.hash(method, tool);
        if let Some(series) = self.find_hashed(hash, method, tool) {
            return series;
        }
        for i in 0..self.slots.len() {
            let Some(slot) = self.slots.get((hash as usize).wrapping_add(i) & self.mask) else {
                break;
            };
            if slot.get().is_none() {
                *len += 1;
                return slot.get_or_init(|| {
                    Box::new(OperationSeries::new(
                        method,
                        tool,
                        hash,
                        self.window_seconds,
                        self.significant_figures,
                    ))
                });
            }
        }
        // Not reached: at most `max_series + 1` entries in twice as many slots.
        &self.overflow
    }

    /// Every series, sorted by method then tool (no tool first).
    pub(crate) fn all(&self) -> Vec<&OperationSeries> {
        let mut all: Vec<&OperationSeries> = self
            .slots
            .iter()
            .filter_map(|slot| slot.get().map(|series| &**series))
            .collect();
        if lock_counts(&self.overflow.counts).calls > 0 {
            all.push(&self.overflow);
        }
        all.sort_by(|a, b| (&a.method, &a.tool).cmp(&(&b.method, &b.tool)));
        all
    }

    /// How many series there are.
    pub(crate) fn len(&self) -> usize {
        *lock(&self.inserting)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn every_error_kind_has_a_slot_named_after_it() {
        for kind in ErrorKind::ALL {
            assert_eq!(slot_name(error_slot(kind)), kind.as_str());
        }
        assert_eq!(slot_name(ERROR_SLOTS - 1), OTHER_ERROR);
    }

    #[test]
    fn names_are_compared_whole_at_every_length() {
        let name = "abcdefghijklmnopqrstuvwxyz0123456789";
        for len in 0..=name.len() {
            let a = &name[..len];
            let copy = String::from(a);
            assert!(same(a, &copy), "{a}");
            for at in 0..len {
                let mut b = a.as_bytes().to_vec();
                b[at] = b'_';
                let b = String::from_utf8(b).unwrap();
                assert!(!same(a, &b), "{a} vs {b}");
            }
            if len < name.len() {
                assert!(!same(a, &name[..len + 1]), "{a}");
            }
        }
    }

    #[test]
    fn a_series_is_found_again_by_its_borrowed_key() {
        let table = SeriesTable::new(16, 10, 2);
        let echo = table.get_or_insert("tools/call", Some("echo")) as *const _;
        let untooled = table.get_or_insert("tools/call", None) as *const _;
        let list = table.get_or_insert("tools/list", None) as *const _;
        assert_ne!(echo, untooled);
        assert_eq!(
            table.get_or_insert("tools/call", Some("echo")) as *const _,
            echo
        );
        assert_eq!(
            table.get_or_insert("tools/call", None) as *const _,
            untooled
        );
        assert_eq!(table.get_or_insert("tools/list", None) as *const _, list);
        assert!(table.find("tools/list", Some("echo")).is_none());
        assert!(table.find("tools/call", Some("ech")).is_none());
        assert_eq!(table.len(), 3);
    }

    #[test]
    fn keys_past_the_cap_are_folded_and_the_table_never_fills() {
        let table = SeriesTable::new(4, 10, 2);
        for i in 0..1000 {
            let tool = table.get_or_insert("tools/call", Some(&format!("tool{i}")));
            tool.record(CallEnd::Success, 0, 0);
            let custom = table.get_or_insert(&format!("custom/{i}"), None);
            custom.record(CallEnd::Success, 0, 0);
        }
        let keys: Vec<_> = table
            .all()
            .iter()
            .map(|s| {
                (
                    s.method.to_string(),
                    s.tool.as_deref().map(str::to_owned),
                    s.read(1, &mut Latency::micros(2)).calls,
                )
            })
            .collect();
        assert_eq!(
            keys,
            [
                ("_other".into(), None, 998),
                ("custom/0".into(), None, 1),
                ("custom/1".into(), None, 1),
                ("tools/call".into(), Some("_other".into()), 998),
                ("tools/call".into(), Some("tool0".into()), 1),
                ("tools/call".into(), Some("tool1".into()), 1),
            ]
        );
        assert_eq!(table.len(), 5);
    }

    #[test]
    fn concurrent_calls_are_all_counted() {
        let table = Arc::new(SeriesTable::new(16, 10, 2));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let table = table.clone();
                std::thread::spawn(move || {
                    let series = table.get_or_insert("tools/call", Some("echo"));
                    for _ in 0..10_000 {
                        series.record(CallEnd::Success, 5_000, 7);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let reading = table
            .get_or_insert("tools/call", Some("echo"))
            .read(8, &mut Latency::micros(2));
        assert_eq!(reading.calls, 80_000);
        assert_eq!(reading.latency.count, 80_000);
        // All in second 7, read at second 8: a one-second-old series.
        assert_eq!(reading.qps, 80_000.0);
    }

    #[test]
    fn racing_inserts_of_one_key_make_one_series() {
        let table = Arc::new(SeriesTable::new(64, 10, 2));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let table = table.clone();
                std::thread::spawn(move || {
                    (0..32)
                        .map(|i| {
                            table.get_or_insert("tools/call", Some(&format!("t{i}"))) as *const _
                                as usize
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let seen: Vec<Vec<usize>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(seen.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(table.len(), 32);
    }
}
