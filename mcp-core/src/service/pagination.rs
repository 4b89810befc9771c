//! Following `nextCursor` across pages, with a page cap and loop detection.

use std::collections::HashSet;
use std::future::Future;

use crate::error::Error;

/// The page cap of the `list_all_*` methods unless
/// [`RequestOptions::max_pages`](crate::RequestOptions::max_pages) says otherwise.
pub(crate) const DEFAULT_MAX_PAGES: usize = 100;

/// Fetches pages until one has no `nextCursor`. Fails clearly when the server returns more than
/// `max_pages` pages or repeats a cursor (which would loop forever).
pub(crate) async fn collect_pages<T, F, Fut>(
    method: &str,
    max_pages: usize,
    mut fetch: F,
) -> Result<Vec<T>, Error>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), Error>>,
{
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor = None;
    for _ in 0..max_pages.max(1) {
        let (page, next) = fetch(cursor).await?;
        items.extend(page);
        match next {
            None => return Ok(items),
            Some(next) => {
                if !seen.insert(next.clone()) {
                    return Err(Error::protocol(format!(
                        "{method}: the server repeated cursor {next:?}; stopping to avoid an endless loop"
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn follows_cursors_until_the_last_page() {
        let pages = collect_pages("tools/list", 10, |cursor| async move {
            Ok(match cursor.as_deref() {
                None => (vec![1, 2], Some("a".to_owned())),
                Some("a") => (vec![3], Some("b".to_owned())),
                Some("b") => (vec![4], None),
                Some(other) => panic!("unexpected cursor {other}"),
            })
        })
        .await
        .unwrap();
        assert_eq!(pages, vec![1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn stops_at_the_page_cap() {
        let mut n = 0;
        let err = collect_pages("tools/list", 3, |_| {
            n += 1;
            let next = format!("c{n}");
            async move { Ok((vec![0u8], Some(next))) }
        })
        .await
        .unwrap_err();
        assert!(err.message().contains("more than 3 pages"), "{err}");
    }

    #[tokio::test]
    async fn detects_a_repeated_cursor() {
        let err = collect_pages("prompts/list", 10, |_| async {
            Ok((vec![0u8], Some("same".to_owned())))
        })
        .await
        .unwrap_err();
        assert!(err.message().contains("repeated cursor"), "{err}");
    }
}
