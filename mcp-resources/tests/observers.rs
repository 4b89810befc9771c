//! Update observers: called per URI and for every URI, removed when their guard drops, never
//! poisoned by a panicking callback.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use mcp_core::types::ResourceUpdatedNotificationParams;
use mcp_resources::ResourceConfig;
use mcp_session::ServerNotification;
use serde_json::json;

const X: &str = "test://x";
const Y: &str = "test://y";

fn counter() -> (
    Arc<AtomicUsize>,
    impl Fn(&ResourceUpdatedNotificationParams) + Send + Sync,
) {
    let count = Arc::new(AtomicUsize::new(0));
    let callback = {
        let count = count.clone();
        move |_: &ResourceUpdatedNotificationParams| {
            count.fetch_add(1, Ordering::SeqCst);
        }
    };
    (count, callback)
}

fn n(count: &AtomicUsize) -> usize {
    count.load(Ordering::SeqCst)
}

#[tokio::test]
async fn observers_are_called_for_their_uri_and_removed_when_the_guard_drops() {
    let server = FakeServer::new();
    let resources = manager(&server, ResourceConfig::default());
    let (first, callback) = counter();
    let first_guard = resources.on_update(X, callback);
    let (second, callback) = counter();
    let _second_guard = resources.on_update(X, callback);
    let (other, callback) = counter();
    let _other_guard = resources.on_update(Y, callback);
    let (every, callback) = counter();
    let every_guard = resources.on_any_update(callback);
    assert_eq!(resources.observer_count(X), 2);
    assert_eq!(first_guard.uri(), Some(X));
    assert_eq!(every_guard.uri(), None);

    resources.handle_notification(&updated(X));
    assert_eq!((n(&first), n(&second), n(&other), n(&every)), (1, 1, 0, 1));

    drop(first_guard);
    assert_eq!(resources.observer_count(X), 1);
    resources.handle_notification(&updated(X));
    resources.handle_notification(&updated(Y));
    assert_eq!((n(&first), n(&second), n(&other), n(&every)), (1, 2, 1, 3));

    drop(every_guard);
    resources.handle_notification(&updated(Y));
    assert_eq!((n(&other), n(&every)), (2, 3));
}

#[tokio::test]
async fn a_panicking_callback_does_not_stop_the_others_or_poison_anything() {
    let server = FakeServer::new().with_text(X, "x1");
    let resources = manager(&server, ResourceConfig::default());
    let _panics = resources.on_update(X, |_| panic!("a harness bug"));
    let (after, callback) = counter();
    let _after = resources.on_update(X, callback);
    let (every, callback) = counter();
    let _every = resources.on_any_update(callback);

    resources.handle_notification(&updated(X));
    resources.handle_notification(&updated(X));
    assert_eq!((n(&after), n(&every)), (2, 2));
    // Everything still works.
    assert_eq!(text(&resources.read(X).await.unwrap()), "x1");
    assert_eq!(resources.observer_count(X), 2);
}

#[tokio::test]
async fn a_callback_sees_the_state_after_the_update_and_the_servers_extra_members() {
    let server = FakeServer::new().with_text(X, "x1");
    let resources = manager(&server, ResourceConfig::default());
    resources.read(X).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _guard = resources.on_update(X, {
        let seen = seen.clone();
        let resources = resources.clone();
        move |update| {
            seen.lock().unwrap().push((
                resources.state(&update.uri),
                update.extra.get("title").cloned(),
            ));
        }
    });
    let mut extra = serde_json::Map::new();
    extra.insert("title".into(), json!("Counter"));
    resources.handle_notification(&ServerNotification::ResourceUpdated(
        ResourceUpdatedNotificationParams {
            uri: X.into(),
            extra,
        },
    ));
    assert_eq!(*seen.lock().unwrap(), [(Stale, Some(json!("Counter")))]);
    // The guard's callback holds a manager clone; closing drops the callbacks.
    resources.close().await;
    assert_eq!(resources.observer_count(X), 0);
}

#[tokio::test]
async fn a_callback_may_add_and_drop_observers() {
    let server = FakeServer::new();
    let resources = manager(&server, ResourceConfig::default());
    let added = Arc::new(Mutex::new(Vec::new()));
    let _guard = resources.on_update(X, {
        let added = added.clone();
        let resources = resources.clone();
        move |_| {
            let guard = resources.on_update(Y, |_| {});
            added.lock().unwrap().push(guard);
        }
    });
    resources.handle_notification(&updated(X));
    assert_eq!(resources.observer_count(Y), 1);
    added.lock().unwrap().clear();
    assert_eq!(resources.observer_count(Y), 0);
    resources.close().await;
}
