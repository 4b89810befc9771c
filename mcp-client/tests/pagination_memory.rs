//! A listing's memory stays bounded whatever its cursors: a server may send cursors as long as
//! a message, and the repeated-cursor check keeps a 64-bit hash of each, not the cursor, so
//! `max_pages` long cursors are never held at once (measured by [`PeakAlloc`]).

use mcp_core::service::pagination::collect_pages;
use mcp_testkit::peak_alloc::{Measure, PeakAlloc};

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc::new();

/// The length of each cursor the server sends.
const CURSOR_BYTES: usize = 256 * 1024;
/// Pages in the listing (each with a new cursor, until the last).
const PAGES: usize = 200;
/// What the listing may hold at once: the cursor being sent, the next one, and room for the
/// hashes and the items; far below the `PAGES` cursors (50 MiB) remembering them whole would.
const BOUND: usize = 4 * CURSOR_BYTES;

#[tokio::test]
async fn long_distinct_cursors_are_remembered_by_hash_not_kept() {
    let measure = Measure::start(&ALLOC);
    let mut page = 0;
    let items = collect_pages("tools/list", PAGES, |cursor: Option<String>| {
        page += 1;
        let next = (page < PAGES).then(|| {
            // A distinct cursor per page: its number, then filler.
            let mut next = format!("{page:08}");
            next.extend(std::iter::repeat_n('c', CURSOR_BYTES - next.len()));
            next
        });
        drop(cursor);
        async move { Ok((vec![page], next)) }
    })
    .await
    .expect("every cursor is new");
    assert_eq!(items.len(), PAGES);
    let peak = measure.peak();
    println!(
        "{PAGES} cursors of {CURSOR_BYTES} bytes: peak {} KiB",
        peak / 1024
    );
    assert!(
        peak < BOUND,
        "the listing held {peak} bytes at its peak, over the bound of {BOUND}"
    );
}
