//! The refresh lock across replicas on a real redis-server: mutual exclusion, a holder that
//! never gives it back, and the fall back to this machine's file lock while Redis is down.

mod common;

use mcp_auth::store::ENTRY_LOCK_TTL;
use std::time::Duration;

use common::{key, raw, redis, settings, LogCapture, TempDir};
use mcp_auth::store::LockDir;
use mcp_auth::{StoreKey, TokenStore};
use mcp_fleet::Fleet;
use redis::AsyncCommands;
use tokio::time::Instant;

fn entry() -> StoreKey {
    StoreKey::new("https://mcp.example/mcp", "default")
}

/// Two replicas of one fleet: same Redis, key, prefix and (one machine) lock directory,
/// removed when the returned guard is dropped.
fn replicas(url: &str, lock_ttl: Duration) -> (Fleet, Fleet, TempDir) {
    let key = key();
    let dir = TempDir::new("locks");
    let locks = LockDir::at(dir.path());
    let replica = || {
        Fleet::new(
            settings(url, &key, "mcph")
                .with_lock_ttl(lock_ttl)
                .with_lock_dir(locks.clone()),
        )
        .unwrap()
    };
    (replica(), replica(), dir)
}

async fn lock_exists(url: &str, fleet: &Fleet) -> bool {
    let exists: bool = raw(url)
        .await
        .exists(fleet.token_store().lock_key(&entry()))
        .await
        .unwrap();
    exists
}

#[tokio::test]
async fn a_second_replica_waits_for_the_lock_and_gets_it_once_released() {
    let redis = redis();
    let (a, b, _locks) = replicas(&redis.url(), Duration::from_secs(40));
    let held = a
        .token_store()
        .lock_entry(&entry(), Duration::from_secs(1))
        .await
        .unwrap();
    assert!(held.is_held());
    assert!(lock_exists(&redis.url(), &a).await);

    let refused = b
        .token_store()
        .lock_entry(&entry(), Duration::from_millis(50))
        .await
        .unwrap_err()
        .0;
    assert!(
        refused.contains("another replica has held the refresh lock mcph:lock:")
            && refused.contains("for longer than 50ms"),
        "{refused}"
    );
    let other_entry = StoreKey::new("https://other.example/mcp", "default");
    let unrelated = b
        .token_store()
        .lock_entry(&other_entry, Duration::ZERO)
        .await
        .unwrap();
    assert!(unrelated.is_held(), "one lock per entry");
    unrelated.release().await;

    let mut waiter = {
        let store = b.token_store();
        tokio::spawn(async move { store.lock_entry(&entry(), Duration::from_secs(5)).await })
    };
    // The waiter is still waiting a while after it started (it polls every ≤ 50 ms).
    assert!(
        tokio::time::timeout(Duration::from_millis(150), &mut waiter)
            .await
            .is_err(),
        "the second replica waits while the first holds it"
    );
    let released_at = Instant::now();
    held.release().await;
    let second = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the waiter gets the lock once it is given back")
        .unwrap()
        .unwrap();
    assert!(second.is_held());
    // Handed over on release, not after the lock's 40 s time-to-live.
    assert!(
        released_at.elapsed() < ENTRY_LOCK_TTL / 8,
        "{:?}",
        released_at.elapsed()
    );
    second.release().await;
    assert!(!lock_exists(&redis.url(), &a).await, "given back: deleted");
}

#[tokio::test]
async fn a_lock_never_given_back_ends_with_its_time_to_live() {
    let redis = redis();
    let ttl = Duration::from_millis(400);
    let (a, b, _locks) = replicas(&redis.url(), ttl);

    // Forgotten: no release, no drop.
    let taken = Instant::now();
    let held = a
        .token_store()
        .lock_entry(&entry(), Duration::from_secs(1))
        .await
        .unwrap();
    std::mem::forget(held);
    let next = b
        .token_store()
        .lock_entry(&entry(), Duration::from_secs(5))
        .await
        .unwrap();
    let waited = taken.elapsed();
    assert!(
        waited >= ttl - Duration::from_millis(50) && waited < ttl + Duration::from_secs(1),
        "{waited:?}"
    );

    // Dropped where no tokio runtime runs: nobody can give it back, the TTL ends it.
    let taken = Instant::now();
    std::thread::spawn(move || drop(next))
        .join()
        .expect("the thread dropping the lock");
    let again = a
        .token_store()
        .lock_entry(&entry(), Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        taken.elapsed() >= ttl - Duration::from_millis(100),
        "{:?}",
        taken.elapsed()
    );
    again.release().await;
}

#[tokio::test]
async fn a_lock_dropped_on_a_runtime_is_given_back_at_once() {
    let redis = redis();
    let (a, b, _locks) = replicas(&redis.url(), Duration::from_secs(30));
    let held = a
        .token_store()
        .lock_entry(&entry(), Duration::from_secs(1))
        .await
        .unwrap();
    let dropped = Instant::now();
    drop(held);
    let next = b
        .token_store()
        .lock_entry(&entry(), Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        dropped.elapsed() < Duration::from_secs(2),
        "given back by the spawned task, not by the 30 s TTL: {:?}",
        dropped.elapsed()
    );
    next.release().await;
}

#[tokio::test]
async fn while_redis_is_down_the_lock_is_this_machines_file_lock_with_one_warning() {
    let mut redis = redis();
    let (logs, _guard) = LogCapture::start();
    let (a, b, _locks) = replicas(&redis.url(), Duration::from_secs(40));
    let warning = "refresh coordinated on this machine only";
    // Connected and working first.
    a.token_store()
        .lock_entry(&entry(), Duration::from_secs(1))
        .await
        .unwrap()
        .release()
        .await;

    redis.kill().unwrap();
    let held = a
        .token_store()
        .lock_entry(&entry(), Duration::from_secs(2))
        .await
        .expect("the file lock while Redis is down");
    assert!(held.is_held());
    assert_eq!(logs.count("WARN", warning), 1, "{}", logs.text());
    // Still one holder at a time on this machine.
    let refused = b
        .token_store()
        .lock_entry(&entry(), Duration::from_millis(100))
        .await
        .unwrap_err()
        .0;
    assert!(refused.contains("for longer than"), "{refused}");
    let waiter = {
        let store = b.token_store();
        tokio::spawn(async move { store.lock_entry(&entry(), Duration::from_secs(5)).await })
    };
    held.release().await;
    let second = tokio::time::timeout(Duration::from_secs(6), waiter)
        .await
        .expect("the file lock is handed on")
        .unwrap()
        .unwrap();
    second.release().await;
    // One warning per replica (each is its own process in a real fleet), however many locks
    // each took meanwhile.
    assert_eq!(logs.count("WARN", warning), 2, "{}", logs.text());
    a.token_store()
        .lock_entry(&entry(), Duration::from_secs(1))
        .await
        .unwrap()
        .release()
        .await;
    assert_eq!(logs.count("WARN", warning), 2, "{}", logs.text());
    assert!(logs.text().contains(&format!(
        "Redis at redis://127.0.0.1:{}/0 is unreachable",
        redis.port()
    )));

    // Redis is back: the lock is on Redis again, and the next outage warns again.
    redis.restart().unwrap();
    mcp_testkit::wait::until_async(
        "the fleet reaches Redis again",
        Duration::from_secs(5),
        || async { a.ping().await.is_ok() },
    )
    .await;
    let held = a
        .token_store()
        .lock_entry(&entry(), Duration::from_secs(1))
        .await
        .unwrap();
    assert!(lock_exists(&redis.url(), &a).await, "on Redis again");
    held.release().await;
    assert_eq!(
        logs.count("INFO", "Redis answers again"),
        1,
        "{}",
        logs.text()
    );
    assert_eq!(logs.count("WARN", warning), 2);

    redis.kill().unwrap();
    a.token_store()
        .lock_entry(&entry(), Duration::from_secs(1))
        .await
        .unwrap()
        .release()
        .await;
    assert_eq!(
        logs.count("WARN", warning),
        3,
        "a new outage, a new warning"
    );
}
