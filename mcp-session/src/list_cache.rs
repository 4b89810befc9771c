//! A server's list kept until it changes: [`ListCache`], the one cache of the lists a client
//! keeps per server (tools aside, which the supervisor refreshes): the facade's resource index and
//! prompt list, the resource manager's discovery. The server says a list changed with
//! `notifications/*/list_changed`, and a new session may hold different lists: both invalidate.

use std::future::Future;
use std::sync::{Arc, Mutex};

use mcp_core::sync::lock;
use mcp_core::Error;

/// A list a server gave, kept until it is invalidated. A fetch that raced an invalidation is
/// used for its caller but not kept. The list an invalidation dropped is remembered, so the
/// next kept list can be compared with it (the change is reported once).
pub struct ListCache<T> {
    slot: Mutex<Slot<T>>,
}

struct Slot<T> {
    generation: u64,
    kept: Option<Arc<T>>,
    /// What the last invalidation dropped, until a new list is kept.
    dropped: Option<Arc<T>>,
}

/// A list from the cache or from the server.
#[derive(Debug)]
pub struct Fetched<T> {
    /// The list.
    pub list: Arc<T>,
    /// True when it was kept (no request was made).
    pub hit: bool,
    /// True when the cache holds it now (a hit, or a fetch no change overtook).
    pub kept: bool,
    /// When this fetch replaced a list an invalidation dropped: that list, to compare.
    pub replaced: Option<Arc<T>>,
}

impl<T> std::fmt::Debug for ListCache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slot = self.lock();
        f.debug_struct("ListCache")
            .field("generation", &slot.generation)
            .field("kept", &slot.kept.is_some())
            .finish_non_exhaustive()
    }
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
        lock(&self.slot)
    }

    /// Forgets the list (the server changed it, or a new session started). Returns whether
    /// the list is in use: one was kept, or one an earlier change dropped has not been
    /// replaced yet (a listing under way lost its race, or the server was away).
    pub fn invalidate(&self) -> bool {
        let mut slot = self.lock();
        slot.generation += 1;
        if let Some(kept) = slot.kept.take() {
            slot.dropped = Some(kept);
        }
        slot.dropped.is_some()
    }

    /// Forgets the list and what it was (the server stopped).
    pub fn clear(&self) {
        let mut slot = self.lock();
        slot.generation += 1;
        slot.kept = None;
        slot.dropped = None;
    }

    /// The kept list, if any.
    pub fn kept(&self) -> Option<Arc<T>> {
        self.lock().kept.clone()
    }

    /// The kept list, or a fresh one from `fetch`.
    pub async fn get_or_fetch<F>(&self, fetch: F) -> Result<Fetched<T>, Error>
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
}
