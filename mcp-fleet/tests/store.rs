//! The token store on a real redis-server: round trips, generations, tombstones, prefixes,
//! keys, tampering, what Redis holds, passwords and outages.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{credentials, key, raw, redis, secrets, settings, LogCapture, KEY_SOURCE};
use mcp_auth::{Secret, StoreKey, StoredCredentials, TokenStore};
use mcp_fleet::{Fleet, FleetSettings, StoreKeyMaterial};
use mcp_testkit::redis::RedisServer;
use redis::AsyncCommands;
use tokio::time::Instant;

fn entry() -> StoreKey {
    StoreKey::new("https://mcp.example/mcp", "default")
}

#[tokio::test]
async fn an_entry_round_trips_and_an_absent_one_is_none() {
    let redis = redis();
    let fleet = Fleet::new(settings(&redis.url(), &key(), "mcph")).unwrap();
    let store = fleet.token_store();
    assert!(store.load(&entry()).await.unwrap().is_none());
    let saved = credentials(3, "a");
    store.save(&entry(), &saved).await.unwrap();
    assert_eq!(store.load(&entry()).await.unwrap(), Some(saved));
    let other = StoreKey::new("https://mcp.example/mcp", "someone-else");
    assert!(
        store.load(&other).await.unwrap().is_none(),
        "one entry per account"
    );

    assert!(store.is_persistent());
    let url = format!("redis://127.0.0.1:{}/0", redis.port());
    assert_eq!(
        store.describe(),
        format!("Redis at {url} (prefix mcph, AES-256-GCM)")
    );
    assert_eq!(fleet.describe(), format!("Redis at {url} (prefix mcph)"));
}

#[tokio::test]
async fn save_if_newer_refuses_equal_and_older_generations_and_takes_newer_ones() {
    let redis = redis();
    let store = Fleet::new(settings(&redis.url(), &key(), "mcph"))
        .unwrap()
        .token_store();
    assert!(store
        .save_if_newer(&entry(), &credentials(1, "one"))
        .await
        .unwrap());
    assert!(!store
        .save_if_newer(&entry(), &credentials(1, "same"))
        .await
        .unwrap());
    assert!(!store
        .save_if_newer(&entry(), &credentials(0, "older"))
        .await
        .unwrap());
    assert_eq!(
        store.load(&entry()).await.unwrap(),
        Some(credentials(1, "one"))
    );
    assert!(store
        .save_if_newer(&entry(), &credentials(2, "two"))
        .await
        .unwrap());
    // Generations compare as numbers, not as text ("10" > "9").
    store.save(&entry(), &credentials(9, "nine")).await.unwrap();
    assert!(store
        .save_if_newer(&entry(), &credentials(10, "ten"))
        .await
        .unwrap());
    assert!(!store
        .save_if_newer(&entry(), &credentials(9, "nine"))
        .await
        .unwrap());
    assert_eq!(
        store.load(&entry()).await.unwrap(),
        Some(credentials(10, "ten"))
    );
}

#[tokio::test]
async fn delete_leaves_a_tombstone_that_keeps_the_generation() {
    let redis = redis();
    let store = Fleet::new(settings(&redis.url(), &key(), "mcph"))
        .unwrap()
        .token_store();
    store.save(&entry(), &credentials(5, "a")).await.unwrap();
    store.delete(&entry()).await.unwrap();

    let fields: HashMap<String, String> = raw(&redis.url())
        .await
        .hgetall(store.entry_key(&entry()))
        .await
        .unwrap();
    assert_eq!(
        fields,
        HashMap::from([("gen".to_owned(), "5".to_owned())]),
        "only the generation stays"
    );
    // Read back as an entry without tokens at that generation: a login stores above it.
    let tombstone = store.load(&entry()).await.unwrap();
    assert_eq!(
        tombstone,
        Some(StoredCredentials {
            generation: 5,
            ..StoredCredentials::default()
        })
    );
    // A process still holding the deleted tokens cannot bring them back…
    assert!(!store
        .save_if_newer(&entry(), &credentials(5, "a"))
        .await
        .unwrap());
    // …a newer login can.
    assert!(store
        .save_if_newer(&entry(), &credentials(6, "b"))
        .await
        .unwrap());
    assert_eq!(
        store.load(&entry()).await.unwrap(),
        Some(credentials(6, "b"))
    );
    // Deleting what is not there is no error.
    store
        .delete(&StoreKey::new("https://never.example", "default"))
        .await
        .unwrap();
}

#[tokio::test]
async fn two_prefixes_on_one_redis_do_not_see_each_other() {
    let redis = redis();
    let key = key();
    let a = Fleet::new(settings(&redis.url(), &key, "team-a")).unwrap();
    let b = Fleet::new(settings(&redis.url(), &key, "team-b")).unwrap();
    a.token_store()
        .save(&entry(), &credentials(1, "a"))
        .await
        .unwrap();
    assert!(b.token_store().load(&entry()).await.unwrap().is_none());
    b.token_store()
        .save(&entry(), &credentials(7, "b"))
        .await
        .unwrap();
    assert_eq!(
        a.token_store().load(&entry()).await.unwrap(),
        Some(credentials(1, "a"))
    );
    let mut keys: Vec<String> = raw(&redis.url()).await.keys("*").await.unwrap();
    keys.sort();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys[0].starts_with("team-a:oauth:"), "{keys:?}");
    assert!(keys[1].starts_with("team-b:oauth:"), "{keys:?}");
}

#[tokio::test]
async fn a_wrong_key_is_an_error_naming_both_key_ids_and_the_entry_stays() {
    let redis = redis();
    let right = key();
    let wrong = key();
    let writer = Fleet::new(settings(&redis.url(), &right, "mcph")).unwrap();
    writer
        .token_store()
        .save(&entry(), &credentials(4, "a"))
        .await
        .unwrap();

    let reader = Fleet::new(settings(&redis.url(), &wrong, "mcph")).unwrap();
    let error = reader.token_store().load(&entry()).await.unwrap_err().0;
    let expected = format!(
        "it was written with key id {}, {KEY_SOURCE} has id {}: every replica needs the same key",
        right.key_id(),
        wrong.key_id()
    );
    assert!(error.contains(&expected), "{error}");
    assert!(
        !error.contains(right.to_base64().expose()) && !error.contains(wrong.to_base64().expose()),
        "{error}"
    );
    // Nothing was deleted or changed: the right key still reads it.
    assert_eq!(
        writer.token_store().load(&entry()).await.unwrap(),
        Some(credentials(4, "a"))
    );
    // And the wrong key cannot overwrite a newer entry by accident.
    assert!(!reader
        .token_store()
        .save_if_newer(&entry(), &credentials(4, "other"))
        .await
        .unwrap());
}

#[tokio::test]
async fn an_edited_generation_or_a_copied_entry_does_not_decrypt() {
    let redis = redis();
    let key = key();
    let store = Fleet::new(settings(&redis.url(), &key, "mcph"))
        .unwrap()
        .token_store();
    store.save(&entry(), &credentials(4, "a")).await.unwrap();
    let name = store.entry_key(&entry());
    let mut raw = raw(&redis.url()).await;

    let _: () = raw.hset(&name, "gen", "9").await.unwrap();
    let error = store.load(&entry()).await.unwrap_err().0;
    assert!(error.contains("cannot be decrypted"), "{error}");
    assert!(error.contains("edited"), "{error}");
    let _: () = raw.hset(&name, "gen", "4").await.unwrap();
    assert_eq!(
        store.load(&entry()).await.unwrap(),
        Some(credentials(4, "a")),
        "the original generation reads again"
    );

    // The same fields under another entry's key.
    let other = StoreKey::new("https://other.example/mcp", "default");
    let fields: HashMap<String, String> = raw.hgetall(&name).await.unwrap();
    let copied: Vec<(String, String)> = fields.into_iter().collect();
    let _: () = raw
        .hset_multiple(store.entry_key(&other), &copied)
        .await
        .unwrap();
    let error = store.load(&other).await.unwrap_err().0;
    assert!(error.contains("cannot be decrypted"), "{error}");
}

#[tokio::test]
async fn redis_never_holds_a_secret_in_plain_text() {
    let redis = redis();
    let key = key();
    let fleet = Fleet::new(settings(&redis.url(), &key, "mcph")).unwrap();
    let store = fleet.token_store();
    store.save(&entry(), &credentials(1, "a")).await.unwrap();
    store
        .save_if_newer(
            &StoreKey::new("https://b.example/mcp", "default"),
            &credentials(1, "b"),
        )
        .await
        .unwrap();
    // A lock and a rate limit too, so every kind of key is looked at.
    let lock = store
        .lock_entry(&entry(), Duration::from_secs(1))
        .await
        .unwrap();
    fleet
        .permits("github")
        .try_take(&mcp_resilience::RateLimitPolicy::default())
        .await
        .unwrap();

    let mut raw = raw(&redis.url()).await;
    let keys: Vec<String> = raw.keys("*").await.unwrap();
    assert_eq!(keys.len(), 4, "{keys:?}");
    let mut everything = String::new();
    for name in &keys {
        everything.push_str(name);
        everything.push('\n');
        let kind: String = redis::cmd("TYPE")
            .arg(name)
            .query_async(&mut raw)
            .await
            .unwrap();
        match kind.as_str() {
            "hash" => {
                let fields: HashMap<String, Vec<u8>> = raw.hgetall(name).await.unwrap();
                for (field, value) in fields {
                    everything.push_str(&field);
                    everything.push_str(&String::from_utf8_lossy(&value));
                    everything.push('\n');
                }
            }
            "string" => {
                let value: Vec<u8> = raw.get(name).await.unwrap();
                everything.push_str(&String::from_utf8_lossy(&value));
                everything.push('\n');
            }
            other => panic!("unexpected key type {other} of {name}"),
        }
    }
    let key_hex: String = key.to_base64().expose().to_owned();
    for secret in secrets("a").into_iter().chain(secrets("b")).chain([
        key_hex,
        "https://mcp.example".into(),
        "client-a".into(),
    ]) {
        assert!(!everything.contains(&secret), "{secret} in {everything}");
    }
    lock.release().await;
}

#[tokio::test]
async fn a_password_protected_redis_needs_the_right_password_and_never_shows_it() {
    let password = "pw-Redis-4e8b1c";
    let redis = RedisServer::start_with_password(password).unwrap();
    let key = key();
    let (logs, _guard) = LogCapture::start();

    let without = Fleet::new(settings(&redis.url(), &key, "mcph")).unwrap();
    let error = without.token_store().load(&entry()).await.unwrap_err().0;
    assert!(error.contains(&redis.url()), "{error}");
    assert!(
        error.to_lowercase().contains("auth"),
        "says it is about authentication: {error}"
    );

    let wrong = Fleet::new(
        settings(&redis.url(), &key, "mcph").with_password(Secret::new("pw-Wrong-77aa01")),
    )
    .unwrap();
    let error = wrong.token_store().load(&entry()).await.unwrap_err().0;
    assert!(
        !error.contains("pw-Wrong-77aa01") && !error.contains(password),
        "{error}"
    );
    assert!(error.to_lowercase().contains("pass"), "{error}");

    let right_settings = settings(&redis.url(), &key, "mcph").with_password(Secret::new(password));
    assert!(!format!("{right_settings:?}").contains(password));
    let right = Fleet::new(right_settings).unwrap();
    assert!(!format!("{right:?}").contains(password));
    let store = right.token_store();
    store.save(&entry(), &credentials(1, "a")).await.unwrap();
    assert_eq!(
        store.load(&entry()).await.unwrap(),
        Some(credentials(1, "a"))
    );

    let logged = logs.text();
    for secret in ["pw-Wrong-77aa01", password]
        .into_iter()
        .map(str::to_owned)
        .chain(secrets("a"))
    {
        assert!(!logged.contains(&secret), "{secret} logged: {logged}");
    }
}

#[tokio::test]
async fn a_password_in_the_url_is_refused_without_showing_it() {
    let settings = FleetSettings::new(
        "redis://:pw-in-url-5d2a@127.0.0.1:6379/0",
        StoreKeyMaterial::from_bytes([3; 32]),
        KEY_SOURCE,
    );
    let error = Fleet::new(settings).unwrap_err().to_string();
    assert!(!error.contains("pw-in-url-5d2a"), "{error}");
    assert!(
        error.contains("redis://:<redacted>@127.0.0.1:6379/0"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unreachable_redis_fails_every_operation_within_the_timeout() {
    let mut redis = redis();
    let store = Fleet::new(settings(&redis.url(), &key(), "mcph"))
        .unwrap()
        .token_store();
    store.save(&entry(), &credentials(1, "a")).await.unwrap();
    let op_timeout = Duration::from_millis(500);
    let bound = op_timeout + Duration::from_millis(500);

    // Killed: refused connections.
    redis.kill().unwrap();
    for _ in 0..2 {
        let started = Instant::now();
        let error = store.load(&entry()).await.unwrap_err().0;
        assert!(started.elapsed() < bound, "{:?}", started.elapsed());
        assert!(error.contains("is unreachable"), "{error}");
        assert!(
            error.contains(&format!("127.0.0.1:{}", redis.port())),
            "{error}"
        );
        let started = Instant::now();
        assert!(store.save(&entry(), &credentials(2, "b")).await.is_err());
        assert!(store
            .save_if_newer(&entry(), &credentials(2, "b"))
            .await
            .is_err());
        assert!(store.delete(&entry()).await.is_err());
        assert!(started.elapsed() < bound * 3, "{:?}", started.elapsed());
    }

    // Frozen: connected, but no answer — the timeout ends the wait.
    redis.restart().unwrap();
    mcp_testkit::wait::until_async("Redis answers again", Duration::from_secs(5), || async {
        store.load(&entry()).await.is_ok()
    })
    .await;
    redis.freeze().unwrap();
    let started = Instant::now();
    let error = store.load(&entry()).await.unwrap_err().0;
    let took = started.elapsed();
    assert!(took >= op_timeout && took < bound, "{took:?}");
    assert!(error.contains("is unreachable"), "{error}");
    redis.thaw().unwrap();
}
