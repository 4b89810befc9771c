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
//! and measures one case with [`PeakAlloc::reset_peak`] before and [`PeakAlloc::peak_since_reset`]
//! after. The counts are process-wide: under nextest every test runs in its own process, so the
//! peak is that test's; under `cargo test`'s threads a concurrent test's allocations are counted
//! too, which only makes a bound stricter, never looser.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// One measured case: the peak it added, read when the case is over.
#[derive(Debug)]
pub struct Measure<'a> {
    alloc: &'a PeakAlloc,
    held_at_start: usize,
}

impl<'a> Measure<'a> {
    /// Starts measuring on `alloc`.
    pub fn start(alloc: &'a PeakAlloc) -> Self {
        let held_at_start = alloc.held();
        alloc.reset_peak();
        Measure {
            alloc,
            held_at_start,
        }
    }

    /// The most bytes the case added at once so far.
    pub fn peak(&self) -> usize {
        self.alloc.peak_since_reset(self.held_at_start)
    }
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
}
