//! [`PeakAlloc`]: a global allocator that counts the bytes a test process holds and the most it
//! ever held, so a hostile-peer test can state a memory bound and check it.
//!
//! It counts allocations, not time, so the bound is the same on a busy machine as on an idle
//! one. A test binary installs it with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: mcp_testkit::peak_alloc::PeakAlloc = mcp_testkit::peak_alloc::PeakAlloc::new();
//! ```
//!
//! and measures one case with a [`Measure`]: [`Measure::start`] before, [`Measure::peak`] after.
//! The counts are process-wide. Under nextest every test runs in its own process, so the peak
//! is that test's. Under `cargo test`'s threads two measurements would spoil each other (a
//! start resets the one peak the other is reading), so a [`Measure`] holds a process-wide lock
//! for as long as it lives: a second [`Measure::start`] waits (blocking its thread) until the
//! first is dropped, and a test must drop one before starting the next (starting a second one
//! on the thread that holds the first panics, naming the mistake, where waiting would hang the
//! test for good). What other threads
//! allocate meanwhile (a test that is not measuring) is still counted, which makes a bound
//! stricter, never looser; a test binary whose cases must not count each other's traffic runs
//! them one at a time itself.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Held by the one [`Measure`] alive in the process.
static MEASURING: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread holds [`MEASURING`] (a [`Measure`] cannot move to another thread).
    static MEASURING_HERE: Cell<bool> = const { Cell::new(false) };
}

/// The counting allocator: the system allocator plus two counters.
#[derive(Debug)]
pub struct PeakAlloc {
    held: AtomicUsize,
    peak: AtomicUsize,
}

impl PeakAlloc {
    /// A new meter (a `const fn`, for a `static`).
    pub const fn new() -> Self {
        PeakAlloc {
            held: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Bytes held right now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Starts a measurement: the peak becomes what is held now.
    pub fn reset_peak(&self) {
        self.peak.store(self.held(), Ordering::Relaxed);
    }

    /// The most bytes held at once since [`PeakAlloc::reset_peak`], less what was held at the
    /// reset: what the measured case added at its worst.
    pub fn peak_since_reset(&self, held_at_reset: usize) -> usize {
        self.peak
            .load(Ordering::Relaxed)
            .saturating_sub(held_at_reset)
    }

    fn grew(&self, bytes: usize) {
        let now = self.held.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn shrank(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Default for PeakAlloc {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every call is passed to the system allocator unchanged; the counters only observe.
unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            self.grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            self.grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, which is the system allocator's.
        unsafe { System.dealloc(ptr, layout) };
        self.shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc` and `alloc`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            self.shrank(layout.size());
            self.grew(new_size);
        }
        new
    }
}

/// One measured case: the peak it added, read when the case is over. Only one is alive in the
/// process at a time (see the [module documentation](self)).
#[derive(Debug)]
pub struct Measure<'a> {
    alloc: &'a PeakAlloc,
    held_at_start: usize,
    _only_one: OnlyOne,
}

/// The process-wide lock, and this thread's note that it holds it, released together.
#[derive(Debug)]
struct OnlyOne {
    _lock: MutexGuard<'static, ()>,
}

impl Drop for OnlyOne {
    fn drop(&mut self) {
        MEASURING_HERE.with(|here| here.set(false));
    }
}

impl<'a> Measure<'a> {
    /// Starts measuring on `alloc`, once any other measurement in the process has ended (this
    /// blocks the thread until then).
    ///
    /// # Panics
    ///
    /// When this thread already holds a [`Measure`]: it would wait for itself forever.
    pub fn start(alloc: &'a PeakAlloc) -> Self {
        assert!(
            !MEASURING_HERE.with(Cell::get),
            "Measure::start on a thread that already holds a Measure: drop the first one \
             before starting the next (one measurement at a time per process)"
        );
        // A test that failed while measuring poisons the lock; the counters are still sound.
        let only_one = OnlyOne {
            _lock: MEASURING.lock().unwrap_or_else(|p| p.into_inner()),
        };
        MEASURING_HERE.with(|here| here.set(true));
        let held_at_start = alloc.held();
        alloc.reset_peak();
        Measure {
            alloc,
            held_at_start,
            _only_one: only_one,
        }
    }

    /// The most bytes the case added at once so far.
    pub fn peak(&self) -> usize {
        self.alloc.peak_since_reset(self.held_at_start)
    }
}

/// Hostile-peer cases of one test binary, run one at a time *peers included*: the allocation
/// counts are process-wide, so while one case is measured another case's traffic (a flood, an
/// endless frame being read) would be counted in its peak. A [`Measure`] alone only keeps two
/// measurements from overlapping; a case holds this guard for its whole run.
pub async fn one_case_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static ONE_CASE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    ONE_CASE.lock().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_peak_and_its_release() {
        let meter = PeakAlloc::new();
        let layout = Layout::from_size_align(4096, 8).unwrap();
        let start = Measure::start(&meter);
        // SAFETY: a plain allocation of a valid layout, freed below with the same layout.
        let ptr = unsafe { meter.alloc(layout) };
        assert!(!ptr.is_null());
        // SAFETY: `ptr` came from `meter.alloc(layout)`.
        unsafe { meter.dealloc(ptr, layout) };
        assert_eq!(start.peak(), 4096);
        assert_eq!(meter.held(), 0);
    }

    /// Allocates and frees `bytes` on `meter`.
    fn spike(meter: &PeakAlloc, bytes: usize) {
        let layout = Layout::from_size_align(bytes, 8).unwrap();
        // SAFETY: a plain allocation of a valid layout, freed below with the same layout.
        let ptr = unsafe { meter.alloc(layout) };
        assert!(!ptr.is_null());
        // SAFETY: `ptr` came from `meter.alloc(layout)`.
        unsafe { meter.dealloc(ptr, layout) };
    }

    #[test]
    fn a_measurement_started_on_another_thread_waits_and_erases_no_peak() {
        static METER: PeakAlloc = PeakAlloc::new();
        let first = Measure::start(&METER);
        spike(&METER, 1 << 20);
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let second = std::thread::spawn(move || {
            let second = Measure::start(&METER);
            spike(&METER, 10);
            started_tx.send(()).unwrap();
            second.peak()
        });
        // The second start waits for the first measurement: without the lock it would reset
        // the peak under it (bounded wait: it must not come while `first` lives).
        assert!(started_rx
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err());
        assert_eq!(first.peak(), 1 << 20, "the first peak was erased");
        drop(first);
        assert_eq!(second.join().unwrap(), 10);
    }

    #[test]
    fn a_second_measurement_on_the_same_thread_panics_instead_of_hanging() {
        static METER: PeakAlloc = PeakAlloc::new();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let first = Measure::start(&METER);
            let nested = std::panic::catch_unwind(|| Measure::start(&METER).peak());
            drop(first);
            // Once the first is dropped, the thread can measure again.
            let again = Measure::start(&METER).peak();
            done_tx.send((nested.is_err(), again)).unwrap();
        });
        // Generous: before the fix the nested start never returned.
        let (nested_panicked, _) = done_rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("a nested Measure::start hung instead of panicking");
        assert!(nested_panicked);
    }

    #[test]
    fn a_test_that_panicked_while_measuring_does_not_stop_the_next() {
        static METER: PeakAlloc = PeakAlloc::new();
        let panicked = std::thread::spawn(|| {
            let _measure = Measure::start(&METER);
            panic!("a failed assertion while measuring");
        })
        .join();
        assert!(panicked.is_err());
        let measure = Measure::start(&METER);
        spike(&METER, 64);
        assert_eq!(measure.peak(), 64);
    }
}
