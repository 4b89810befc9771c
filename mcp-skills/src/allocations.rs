//! Test-only: counts the bytes the current thread allocates, so that a test can prove a hostile
//! input is refused without first building what it describes (an alias expansion, a body
//! larger than listed).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // `const`-initialized and without a destructor: reading it never allocates, which an
    // allocator requires.
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    // `try_with`: the thread may be exiting (its locals gone) while it still frees memory.
    let _ = ALLOCATED.try_with(|total| total.set(total.get().saturating_add(bytes)));
}

/// The system allocator, counting what each thread asks for.
struct Counting;

// SAFETY: every call is passed to `System` unchanged; only a counter is updated on the way.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size.saturating_sub(layout.size()));
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Runs `f` and returns its result with the bytes this thread allocated meanwhile (freed or
/// not: a measure of the work done, not of what is kept).
pub(crate) fn counted<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.with(Cell::get);
    let result = f();
    (result, ALLOCATED.with(Cell::get) - before)
}
