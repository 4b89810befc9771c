//! Finding the server for a resource or prompt without asking every server on every call: each
//! server's resource and prompt lists are kept ([`ListCache`]) until the server says they changed
//! (`notifications/*/list_changed`) or a new session starts.

use std::future::Future;
use std::sync::{Arc, Mutex};

use mcp_core::types::{Resource, ResourceTemplate};
use mcp_core::{Error, ErrorKind};

/// A list a server gave, kept until it is invalidated. A fetch that raced an invalidation is
/// used for its caller but not kept. The list an invalidation dropped is remembered, so the
/// next kept list can be compared with it (the change is reported once).
pub(crate) struct ListCache<T> {
    slot: Mutex<Slot<T>>,
}

struct Slot<T> {
    generation: u64,
    kept: Option<Arc<T>>,
    /// What the last invalidation dropped, until a new list is kept.
    dropped: Option<Arc<T>>,
}

/// A list from the cache or from the server.
pub(crate) struct Fetched<T> {
    /// The list.
    pub(crate) list: Arc<T>,
    /// True when it was kept (no request was made).
    pub(crate) hit: bool,
    /// True when the cache holds it now (a hit, or a fetch no change overtook).
    pub(crate) kept: bool,
    /// When this fetch replaced a list an invalidation dropped: that list, to compare.
    pub(crate) replaced: Option<Arc<T>>,
}

impl<T> Default for ListCache<T> {
    fn default() -> Self {
        ListCache {
            slot: Mutex::new(Slot {
                generation: 0,
                kept: None,
                dropped: None,
            }),
        }
    }
}

impl<T> ListCache<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot<T>> {
        mcp_core::sync::lock(&self.slot)
    }

    /// Forgets the list (the server changed it, or a new session started). Returns whether
    /// the list is in use: one was kept, or one an earlier change dropped has not been
    /// replaced yet (a listing under way lost its race, or the server was away).
    pub(crate) fn invalidate(&self) -> bool {
        let mut slot = self.lock();
        slot.generation += 1;
        if let Some(kept) = slot.kept.take() {
            slot.dropped = Some(kept);
        }
        slot.dropped.is_some()
    }

    /// Forgets the list and what it was (the server stopped).
    pub(crate) fn clear(&self) {
        let mut slot = self.lock();
        slot.generation += 1;
        slot.kept = None;
        slot.dropped = None;
    }

    /// The kept list, or a fresh one from `fetch`.
    pub(crate) async fn get_or_fetch<F>(&self, fetch: F) -> Result<Fetched<T>, Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        let generation = {
            let slot = self.lock();
            if let Some(list) = &slot.kept {
                return Ok(Fetched {
                    list: list.clone(),
                    hit: true,
                    kept: true,
                    replaced: None,
                });
            }
            slot.generation
        };
        let list = Arc::new(fetch.await?);
        let mut slot = self.lock();
        let mut replaced = None;
        let kept = slot.generation == generation;
        if kept {
            slot.kept = Some(list.clone());
            replaced = slot.dropped.take();
        }
        Ok(Fetched {
            list,
            hit: false,
            kept,
            replaced,
        })
    }
}

/// What one server offers to read.
#[derive(Debug, Default)]
pub(crate) struct ResourceIndex {
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
}

/// How well a server's index matches a URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    /// The server lists the URI.
    Listed,
    /// One of its templates' fixed prefixes matches.
    ByTemplate,
    /// Neither.
    No,
}

impl ResourceIndex {
    pub(crate) fn offers(&self, uri: &str) -> Offer {
        if self.resources.iter().any(|r| r.uri == uri) {
            return Offer::Listed;
        }
        let by_template = self.templates.iter().any(|t| {
            let prefix = t.uri_template.split('{').next().unwrap_or("");
            !prefix.is_empty() && uri.starts_with(prefix)
        });
        if by_template {
            Offer::ByTemplate
        } else {
            Offer::No
        }
    }
}

/// The one server among `offers` (server name, offer) that offers `uri`: a listing wins over a
/// template; none, or several equally good, is an error that says so.
pub(crate) fn pick_resource_server(uri: &str, offers: &[(String, Offer)]) -> Result<String, Error> {
    let listed: Vec<&str> = offers
        .iter()
        .filter(|(_, o)| *o == Offer::Listed)
        .map(|(s, _)| s.as_str())
        .collect();
    let candidates = if listed.is_empty() {
        offers
            .iter()
            .filter(|(_, o)| *o == Offer::ByTemplate)
            .map(|(s, _)| s.as_str())
            .collect()
    } else {
        listed
    };
    match candidates.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(
            Error::new(ErrorKind::Resource, format!("no ready server offers {uri}"))
                .with_subject(uri),
        ),
        many => Err(Error::new(
            ErrorKind::Resource,
            format!(
                "several servers offer {uri} ({}); name the server",
                many.join(", ")
            ),
        )
        .with_subject(uri)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_list_is_fetched_once_until_invalidated() {
        let cache = ListCache::<Vec<u32>>::default();
        let fetches = AtomicUsize::new(0);
        let fetch = || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            Ok(vec![1, 2])
        };
        let first = cache.get_or_fetch(fetch()).await.unwrap();
        assert_eq!((*first.list).clone(), [1, 2]);
        assert!(!first.hit && first.replaced.is_none());
        let second = cache.get_or_fetch(fetch()).await.unwrap();
        assert!(second.hit && Arc::ptr_eq(&first.list, &second.list));
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        assert!(cache.invalidate(), "a list was kept");
        let third = cache.get_or_fetch(fetch()).await.unwrap();
        assert!(!third.hit);
        assert!(
            third.replaced.is_some_and(|r| Arc::ptr_eq(&r, &first.list)),
            "the dropped list comes back once, to compare"
        );
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
        // A failed fetch keeps nothing.
        cache.invalidate();
        let failed: Result<Vec<u32>, Error> = Err(Error::network("down"));
        assert!(cache.get_or_fetch(async { failed }).await.is_err());
        assert!(
            cache.invalidate(),
            "the list the last change dropped was never replaced"
        );
        cache.get_or_fetch(fetch()).await.unwrap();
        assert_eq!(fetches.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_listing_wins_over_a_template_and_ties_are_errors() {
        let offers = [
            ("a".to_owned(), Offer::ByTemplate),
            ("b".to_owned(), Offer::Listed),
        ];
        assert_eq!(pick_resource_server("x://1", &offers).unwrap(), "b");
        let offers = [
            ("a".to_owned(), Offer::ByTemplate),
            ("b".to_owned(), Offer::ByTemplate),
        ];
        let err = pick_resource_server("x://1", &offers).unwrap_err();
        assert!(err.message().contains("several servers"), "{err}");
        let err = pick_resource_server("x://1", &[("a".to_owned(), Offer::No)]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Resource);
    }
}
