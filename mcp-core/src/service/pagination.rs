//! Following `nextCursor` with a page cap and loop detection: the one loop of every paginated
//! listing (`list_all_*`, the modern era's re-listing of tools, `skills/list`).

use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::future::Future;
use std::hash::BuildHasher;

use crate::error::Error;

/// The `list_all_*` page cap unless [`max_pages`](crate::RequestOptions::max_pages) says otherwise.
pub const DEFAULT_MAX_PAGES: usize = 100;

/// How much of a repeated cursor an error quotes: a cursor is the server's text, of any length.
const CURSOR_QUOTE_CHARS: usize = 64;

/// Fetches pages until one has no `nextCursor`: `fetch` gets the cursor to send (`None` first) and
/// returns the page's items and `nextCursor`. Fails with a protocol error naming `method` when the
/// server returns a cursor it returned before (which would loop forever), quoting it (its first 64
/// characters), and when there are more than `max_pages` pages (at least one is always read).
/// Cursors are kept as 64-bit hashes, not text: a server's cursor can be as long as a message, and
/// `max_pages` of them would be held at once. Two cursors with one hash would end the listing early
/// with the repeated-cursor error (never a wrong page); the hash keys are random per listing, so a
/// server cannot choose colliding cursors, and by chance it is 1 in 10¹⁶ for 100 pages.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use mcp_core::service::pagination::collect_pages;
/// let err = collect_pages("tools/list", 100, |_cursor| async {
///     Ok((vec![1], Some("again".to_owned())))
/// })
/// .await
/// .unwrap_err();
/// assert_eq!(
///     err.message(),
///     "tools/list: the server repeated cursor \"again\"; stopping to avoid an endless loop"
/// );
/// # });
/// ```
pub async fn collect_pages<T, F, Fut>(
    method: &str,
    max_pages: usize,
    mut fetch: F,
) -> Result<Vec<T>, Error>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), Error>>,
{
    let mut items = Vec::new();
    let hash_keys = RandomState::new();
    let mut seen = HashSet::new();
    let mut cursor = None;
    for _ in 0..max_pages.max(1) {
        let (page, next) = fetch(cursor).await?;
        items.extend(page);
        match next {
            None => return Ok(items),
            Some(next) => {
                if !seen.insert(hash_keys.hash_one(&next)) {
                    return Err(Error::protocol(format!(
                        "{method}: the server repeated cursor {}; stopping to avoid an endless loop",
                        quote_cursor(&next)
                    )));
                }
                cursor = Some(next);
            }
        }
    }
    Err(Error::protocol(format!(
        "{method}: the server returned more than {max_pages} pages; raise max_pages to read them all"
    )))
}

/// `"cursor"`, or its first [`CURSOR_QUOTE_CHARS`] characters and the cursor's length in bytes.
fn quote_cursor(cursor: &str) -> String {
    match cursor.char_indices().nth(CURSOR_QUOTE_CHARS) {
        None => format!("{cursor:?}"),
        Some((end, _)) => format!("{:?}… ({} bytes in all)", &cursor[..end], cursor.len()),
    }
}
