//! `rediss://`: the store and the rate limit over TLS to a real redis-server with a
//! self-signed certificate, trusted through `FleetSettings::tls_ca_pem`.

mod common;

use std::time::Duration;

use common::{credentials, key, settings, TempDir};
use mcp_auth::{StoreKey, TokenStore};
use mcp_fleet::Fleet;
use mcp_resilience::RateLimitPolicy;
use mcp_testkit::redis::{RedisOptions, RedisServer, RedisTls};

/// A redis-server with a TLS port whose certificate (for `localhost`) is returned as PEM.
fn tls_redis() -> (RedisServer, Vec<u8>, TempDir) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("a self-signed certificate");
    let dir = TempDir::new("tls");
    std::fs::create_dir_all(dir.path()).unwrap();
    let cert_file = dir.path().join("cert.pem");
    let key_file = dir.path().join("key.pem");
    let cert_pem = certified.cert.pem();
    std::fs::write(&cert_file, &cert_pem).unwrap();
    std::fs::write(&key_file, certified.signing_key.serialize_pem()).unwrap();
    let redis = RedisServer::start_with(RedisOptions {
        password: None,
        tls: Some(RedisTls {
            cert_file,
            key_file,
        }),
    })
    .unwrap_or_else(|e| panic!("{e}"));
    (redis, cert_pem.into_bytes(), dir)
}

#[tokio::test]
async fn the_store_and_the_rate_limit_work_over_tls() {
    let (redis, ca, _dir) = tls_redis();
    let url = redis.tls_url().unwrap();
    assert!(url.starts_with("rediss://localhost:"));
    let fleet = Fleet::new(settings(&url, &key(), "mcph").with_tls_ca_pem(ca)).unwrap();
    assert!(fleet.describe().starts_with("Redis at rediss://localhost:"));
    let store = fleet.token_store();
    let entry = StoreKey::new("https://mcp.example/mcp", "default");
    store.save(&entry, &credentials(1, "tls")).await.unwrap();
    assert_eq!(
        store.load(&entry).await.unwrap(),
        Some(credentials(1, "tls"))
    );
    let lock = store
        .lock_entry(&entry, Duration::from_secs(1))
        .await
        .unwrap();
    lock.release().await;
    assert_eq!(
        fleet
            .permits("github")
            .try_take(&RateLimitPolicy::default())
            .await,
        Ok(None)
    );
}

#[tokio::test]
async fn a_certificate_nobody_trusts_is_refused() {
    let (redis, _ca, _dir) = tls_redis();
    let url = redis.tls_url().unwrap();
    // The system's roots do not know the test's certificate.
    let fleet = Fleet::new(settings(&url, &key(), "mcph")).unwrap();
    let error = fleet.ping().await.unwrap_err().to_string();
    assert!(error.contains(&url), "{error}");
    let lowered = error.to_lowercase();
    assert!(
        lowered.contains("certificate") || lowered.contains("issuer"),
        "{error}"
    );
}
