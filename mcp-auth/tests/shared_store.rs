//! Several OAuth clients sharing one token store — as the processes of one machine share the OS
//! store and the replicas of a fleet share Redis — against the fixture's authorization server,
//! which rotates refresh tokens (each one is good for a single refresh).
//!
//! Each [`OAuthClient`] here has its own in-process refresh lock, exactly like a separate
//! process: only the store's entry lock and generations coordinate them.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_auth::http::AuthHttp;
use mcp_auth::login::approved_callback;
use mcp_auth::store::{EntryLock, StoreError};
use mcp_auth::{MemoryStore, OAuthClient, StoreKey, StoredCredentials, TokenSet, TokenStore};
use mcp_testkit::{HttpFixture, OAuthOptions};

mod common;

use common::{config, start, stats, within, REDIRECT_URI};

const ACCOUNT: &str = "shared";
const CLIENTS: usize = 8;

async fn login(client: &OAuthClient) -> TokenSet {
    let http = AuthHttp::new().expect("http");
    let request = within("authorize", client.initiate_authorization(REDIRECT_URI))
        .await
        .expect("authorization request");
    let callback = within("approve", approved_callback(&http, &request.url))
        .await
        .expect("callback");
    within("code", client.exchange_code(&request, &callback))
        .await
        .expect("code exchange")
}

fn clients(fixture: &HttpFixture, store: Arc<dyn TokenStore>) -> Vec<Arc<OAuthClient>> {
    (0..CLIENTS)
        .map(|_| {
            Arc::new(OAuthClient::new(config(fixture, ACCOUNT), store.clone()).expect("client"))
        })
        .collect()
}

fn key(fixture: &HttpFixture) -> StoreKey {
    common::store_key(fixture, ACCOUNT)
}

async fn stored(store: &dyn TokenStore, fixture: &HttpFixture) -> StoredCredentials {
    store
        .load(&key(fixture))
        .await
        .expect("load")
        .expect("an entry")
}

#[tokio::test]
async fn eight_clients_refreshing_at_once_make_one_refresh_and_all_get_its_tokens() {
    let fixture = start(OAuthOptions::default()).await;
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let clients = clients(&fixture, store.clone());
    let first = login(&clients[0]).await;
    assert_eq!(stored(&*store, &fixture).await.generation, 1);
    // Every client holds the login's tokens (as processes that started before the refresh).
    for client in &clients {
        assert_eq!(client.tokens().await.expect("tokens"), Some(first.clone()));
    }
    for round in 1..=3u64 {
        let refreshed = within(
            "the refreshes",
            futures_join_all(clients.iter().map(|c| {
                let c = c.clone();
                async move { c.refresh_access_token().await }
            })),
        )
        .await;
        let tokens: Vec<TokenSet> = refreshed
            .into_iter()
            .map(|r| r.expect("every client gets a token"))
            .collect();
        assert!(
            tokens.iter().all(|t| t == &tokens[0]),
            "round {round}: all clients hold the one refreshed token"
        );
        assert_ne!(tokens[0].access_token, first.access_token);
        let s = stats(&fixture);
        assert_eq!(
            s.refreshes_granted, round,
            "round {round}: exactly one refresh"
        );
        assert_eq!(
            s.refresh_refused, 0,
            "round {round}: no refresh token refused"
        );
        let entry = stored(&*store, &fixture).await;
        assert_eq!(entry.generation, 1 + round);
        assert_eq!(
            entry.tokens.as_ref(),
            Some(&tokens[0]),
            "the login survives"
        );
    }
}

#[tokio::test]
async fn a_client_that_lost_the_race_keeps_the_winners_tokens_instead_of_deleting_them() {
    // Both refreshes reach the server (no lock): the second with an already rotated token.
    let fixture = start(OAuthOptions {
        token_delay_ms: 200,
        ..OAuthOptions::default()
    })
    .await;
    let store: Arc<dyn TokenStore> = TestStore::lockless();
    let clients = clients(&fixture, store.clone());
    login(&clients[0]).await;
    let (a, b) = (clients[1].clone(), clients[2].clone());
    assert!(a.tokens().await.expect("tokens").is_some());
    assert!(b.tokens().await.expect("tokens").is_some());
    let (from_a, from_b) = within("two refreshes", async {
        tokio::join!(a.refresh_access_token(), b.refresh_access_token())
    })
    .await;
    let (from_a, from_b) = (from_a.expect("a"), from_b.expect("b"));
    let s = stats(&fixture);
    assert_eq!(s.refreshes_granted, 1, "one refresh won");
    assert_eq!(s.refresh_refused, 1, "the other was refused");
    assert_eq!(from_a, from_b, "the loser read the winner's tokens");
    let entry = stored(&*store, &fixture).await;
    assert_eq!(
        entry.tokens.as_ref(),
        Some(&from_a),
        "the winner's tokens stay stored"
    );
    assert_eq!(entry.generation, 2);
}

#[tokio::test]
async fn a_refused_refresh_token_is_forgotten_only_while_it_is_the_stored_one() {
    let fixture = start(OAuthOptions::default()).await;
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let clients = clients(&fixture, store.clone());
    login(&clients[0]).await;
    common::control(&fixture, "revoke-all").await;
    let refused = within("refresh", clients[1].refresh_access_token())
        .await
        .expect_err("the revoked refresh token is refused");
    assert!(refused.is_invalid_grant(), "{refused}");
    let entry = stored(&*store, &fixture).await;
    assert_eq!(
        entry.tokens, None,
        "the refused tokens are gone from the store"
    );
    assert!(entry.client.is_some(), "the registration stays");
    assert_eq!(entry.generation, 2);
    assert_eq!(stats(&fixture).refresh_refused, 1);
    // The 401 path forgets after a refused refresh: with nothing held, nothing more happens
    // (a second forget would write over whatever came next).
    within("forget", clients[1].forget_tokens())
        .await
        .expect("forget");
    assert_eq!(stored(&*store, &fixture).await.generation, 2);
}

/// `futures::future::join_all` without the dependency: each future on its own task.
async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(handles.len());
    for handle in handles {
        outputs.push(handle.await.expect("task"));
    }
    outputs
}

#[tokio::test]
async fn forgetting_after_another_client_refreshed_keeps_and_takes_its_tokens() {
    let fixture = start(OAuthOptions::default()).await;
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let clients = clients(&fixture, store.clone());
    login(&clients[0]).await;
    let (a, b) = (clients[1].clone(), clients[2].clone());
    a.tokens().await.expect("a loads");
    let refreshed = within("b refreshes", b.refresh_access_token())
        .await
        .expect("b refreshes");
    // `a` was refused with its older token (a 401 path forgets): the newer entry stays, and
    // `a` takes it.
    within("forget", a.forget_tokens()).await.expect("forget");
    let entry = stored(&*store, &fixture).await;
    assert_eq!(
        entry.tokens.as_ref(),
        Some(&refreshed),
        "b's tokens stay stored"
    );
    assert_eq!(entry.generation, 2);
    assert_eq!(a.tokens().await.expect("tokens"), Some(refreshed));
}

#[tokio::test]
async fn a_logout_elsewhere_is_not_undone_and_a_later_login_is_taken() {
    let fixture = start(OAuthOptions::default()).await;
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let clients = clients(&fixture, store.clone());
    login(&clients[0]).await;
    let (running, other) = (clients[1].clone(), clients[2].clone());
    running
        .tokens()
        .await
        .expect("the running client holds the login");
    within("logout", other.logout()).await.expect("logout");
    assert_eq!(
        stored(&*store, &fixture).await.generation,
        2,
        "a logged-out entry"
    );
    // The running client must not refresh its old tokens back into the store.
    let refused = within("refresh", running.refresh_access_token())
        .await
        .expect_err("logged out elsewhere");
    assert!(
        matches!(refused, mcp_auth::AuthError::NeedsLogin(_)),
        "{refused}"
    );
    assert_eq!(stats(&fixture).refresh_token, 0, "no refresh was tried");
    let entry = stored(&*store, &fixture).await;
    assert_eq!((entry.tokens, entry.generation), (None, 2));
    // A new login (generation 3) reaches the running client.
    let again = login(&other).await;
    assert_eq!(stored(&*store, &fixture).await.generation, 3);
    let token = within("token", running.get_valid_token())
        .await
        .expect("the new login");
    assert_eq!(token, again.access_token);
}

/// The memory store as the tests share it: switched off on demand (unreachable, like a Redis
/// that went away), and optionally without its entry lock (a holder that outlived the bounded
/// wait, or a lock service that is down: only the generations protect the entry).
struct TestStore {
    inner: MemoryStore,
    down: std::sync::atomic::AtomicBool,
    locked: bool,
    /// How often it was read.
    loads: std::sync::atomic::AtomicUsize,
}

impl TestStore {
    /// A store that can be switched off.
    fn switchable() -> Arc<TestStore> {
        Arc::new(TestStore {
            inner: MemoryStore::new(),
            down: false.into(),
            locked: true,
            loads: 0.into(),
        })
    }

    /// A store without the entry lock.
    fn lockless() -> Arc<TestStore> {
        Arc::new(TestStore {
            locked: false,
            ..Arc::into_inner(TestStore::switchable()).expect("one owner")
        })
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            Err(StoreError("the store is unreachable".into()))
        } else {
            Ok(())
        }
    }

    fn loads(&self) -> usize {
        self.loads.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait]
impl TokenStore for TestStore {
    fn describe(&self) -> String {
        "the tests' memory store".into()
    }
    fn is_persistent(&self) -> bool {
        false
    }
    async fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, StoreError> {
        self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.check()?;
        self.inner.load(key).await
    }
    async fn save(&self, key: &StoreKey, creds: &StoredCredentials) -> Result<(), StoreError> {
        self.check()?;
        self.inner.save(key, creds).await
    }
    async fn delete(&self, key: &StoreKey) -> Result<(), StoreError> {
        self.check()?;
        self.inner.delete(key).await
    }
    async fn save_if_newer(
        &self,
        key: &StoreKey,
        creds: &StoredCredentials,
    ) -> Result<bool, StoreError> {
        self.check()?;
        self.inner.save_if_newer(key, creds).await
    }
    async fn lock_entry(&self, key: &StoreKey, wait: Duration) -> Result<EntryLock, StoreError> {
        if self.locked {
            self.inner.lock_entry(key, wait).await
        } else {
            Ok(EntryLock::none())
        }
    }
}

#[tokio::test]
async fn tokens_refreshed_while_the_store_is_down_are_stored_once_it_is_back() {
    let fixture = start(OAuthOptions::default()).await;
    let switchable = TestStore::switchable();
    let store: Arc<dyn TokenStore> = switchable.clone();
    let clients = clients(&fixture, store.clone());
    login(&clients[0]).await;
    let client = clients[1].clone();
    client.tokens().await.expect("loaded");
    switchable.set_down(true);
    let refreshed = within("refresh", client.refresh_access_token())
        .await
        .expect("the refresh itself needs no store");
    assert!(client.has_unsaved_tokens());
    // Still down: nothing stored, nothing lost.
    assert!(within("pending", client.store_pending()).await.is_err());
    assert_eq!(
        client.tokens().await.expect("held"),
        Some(refreshed.clone())
    );
    switchable.set_down(false);
    assert!(within("pending", client.store_pending())
        .await
        .expect("stored"));
    assert!(!client.has_unsaved_tokens());
    let entry = stored(&*store, &fixture).await;
    assert_eq!(entry.tokens, Some(refreshed), "the newest tokens won");
    assert_eq!(entry.generation, 2);
    // Another process now refreshes from them: not refused.
    let other = clients[2].clone();
    within("refresh", other.refresh_access_token())
        .await
        .expect("refresh");
    assert_eq!(stats(&fixture).refresh_refused, 0);
}

#[tokio::test]
async fn a_store_that_cannot_be_read_is_an_error_not_a_logout() {
    let fixture = start(OAuthOptions::default()).await;
    let switchable = TestStore::switchable();
    let store: Arc<dyn TokenStore> = switchable.clone();
    let clients = clients(&fixture, store.clone());
    login(&clients[0]).await;
    switchable.set_down(true);
    let client = clients[1].clone();
    let error = within("token", client.get_valid_token())
        .await
        .expect_err("nothing can be read");
    assert!(
        error.to_string().contains("cannot read the stored tokens"),
        "{error}"
    );
    assert!(client.tokens().await.is_err(), "tokens() says so too");
    // A login that cannot be stored fails (the login itself went through).
    let relogin = clients[2].clone();
    let http = AuthHttp::new().expect("http");
    switchable.set_down(false);
    let request = within("authorize", relogin.initiate_authorization(REDIRECT_URI))
        .await
        .expect("request");
    let callback = within("approve", approved_callback(&http, &request.url))
        .await
        .expect("callback");
    switchable.set_down(true);
    let failed = within("code", relogin.exchange_code(&request, &callback))
        .await
        .expect_err("not stored");
    assert!(
        failed.to_string().contains("could not be stored"),
        "{failed}"
    );
    // Back: it reads again, and the first login is still there.
    switchable.set_down(false);
    assert!(within("token", client.get_valid_token()).await.is_ok());
}

/// Redis down across a refresh: `a` refreshes (and cannot store), `b` is refused with the same
/// refresh token (and cannot forget it), then the store is back. `b` must not take the refused
/// token back and `a`'s tokens must reach the store, whoever writes first.
#[tokio::test]
async fn a_refresh_made_while_the_store_was_down_survives_the_losers() {
    let fixture = start(OAuthOptions::default()).await;
    let switchable = TestStore::switchable();
    let store: Arc<dyn TokenStore> = switchable.clone();
    let clients = clients(&fixture, store.clone());
    login(&clients[0]).await;
    let (a, b) = (clients[1].clone(), clients[2].clone());
    a.tokens().await.expect("a loads");
    b.tokens().await.expect("b loads");
    switchable.set_down(true);
    let refreshed = within("a refreshes", a.refresh_access_token())
        .await
        .expect("a refreshes");
    assert!(a.has_unsaved_tokens());
    let refused = within("b refreshes", b.refresh_access_token())
        .await
        .expect_err("the same refresh token, refused");
    assert!(refused.is_invalid_grant(), "{refused}");
    switchable.set_down(false);

    // `b` does not refresh with the refused token it finds in the store again.
    assert!(within("b", b.get_valid_token()).await.is_err());
    // A process that starts now and must refresh (its access token was refused) knows nothing:
    // refused, and it forgets the entry.
    let late = clients[3].clone();
    assert!(within("late", late.refresh_access_token()).await.is_err());
    assert_eq!(
        stats(&fixture).refresh_refused,
        2,
        "b once, the late process once"
    );
    let forgotten = stored(&*store, &fixture).await;
    assert_eq!(
        (forgotten.tokens.is_none(), forgotten.logged_out),
        (true, false)
    );

    // `a`'s tokens go over that forget: the newest tokens win.
    assert!(within("pending", a.store_pending()).await.expect("stored"));
    let entry = stored(&*store, &fixture).await;
    assert_eq!(entry.tokens.as_ref(), Some(&refreshed));
    assert!(entry.generation > forgotten.generation);
    // And everyone takes them.
    for client in [&b, &late] {
        let token = within("token", client.get_valid_token())
            .await
            .expect("a's login");
        assert_eq!(token, refreshed.access_token);
    }
    assert_eq!(stats(&fixture).refreshes_granted, 1);
}

#[tokio::test]
async fn a_token_still_valid_is_used_on_while_the_store_cannot_be_read() {
    // 4 s tokens: refreshed ahead of expiry once half their life (2 s) is left.
    let fixture = start(OAuthOptions {
        token_ttl_secs: 4,
        ..OAuthOptions::default()
    })
    .await;
    let switchable = TestStore::switchable();
    let store: Arc<dyn TokenStore> = switchable.clone();
    let clients = clients(&fixture, store.clone());
    let first = login(&clients[0]).await;
    let client = clients[1].clone();
    client.tokens().await.expect("loads");
    // Past the margin, before the expiry, on tokio's clock (the client's expiry clock), paused
    // only while it moves: no I/O waits on it.
    tokio::time::pause();
    tokio::time::advance(Duration::from_millis(2_300)).await;
    tokio::time::resume();
    switchable.set_down(true);
    let token = within("token", client.get_valid_token())
        .await
        .expect("the held token");
    assert_eq!(
        token, first.access_token,
        "used on: a rotation could not be shared"
    );
    assert_eq!(
        stats(&fixture).refresh_token,
        0,
        "no refresh while the store is down"
    );
    switchable.set_down(false);
    let token = within("token", client.get_valid_token())
        .await
        .expect("refreshed");
    assert_ne!(token, first.access_token);
    assert_eq!(stats(&fixture).refreshes_granted, 1);
}

/// A client holding no token (a server that may need none) does not read the store once per
/// request: at most once per `NONE_STORED_RECHECK` while it has nothing. A login another
/// client makes meanwhile reaches it at the next 401 at once, and without one once the
/// interval is over.
#[tokio::test]
async fn a_client_without_a_token_reads_the_store_rarely_and_takes_a_login_made_elsewhere() {
    use mcp_auth::client::NONE_STORED_RECHECK;
    use mcp_auth::provider::OAuthProvider;
    use mcp_wire::{AuthChallenge, AuthProvider, ChallengeOutcome};

    let fixture = start(OAuthOptions::default()).await;
    let store = TestStore::switchable();
    let new_client =
        || Arc::new(OAuthClient::new(config(&fixture, ACCOUNT), store.clone()).expect("client"));
    let (running, waiting, other) = (new_client(), new_client(), new_client());
    for client in [&running, &waiting] {
        for _ in 0..50 {
            let none = within("token", client.get_valid_token())
                .await
                .expect_err("nothing stored");
            assert!(matches!(none, mcp_auth::AuthError::NeedsLogin(_)), "{none}");
        }
    }
    // Each: the first read, and the one under the refresh lock that found nothing again.
    let loads = store.loads();
    assert!(loads <= 8, "{loads} reads of the store for 100 requests");

    let tokens = login(&other).await;
    // Within the interval, requests still go without a token; the first 401 reads the store
    // (once) and takes the login, and a second request refused meanwhile is sent again with it
    // — not a refresh of tokens it never carried.
    assert!(running.tokens().await.expect("readable").is_none());
    let provider = OAuthProvider::on_demand(running.clone(), None);
    let unauthorized = AuthChallenge {
        status: 401,
        www_authenticate: None,
        dpop_nonce: None,
        credentials_retry_left: true,
        credentials_sent: false,
    };
    let before = store.loads();
    for _ in 0..2 {
        let outcome = within("challenge", provider.on_challenge(&unauthorized))
            .await
            .expect("the login made elsewhere");
        assert_eq!(outcome, ChallengeOutcome::Retry);
    }
    assert_eq!(store.loads(), before + 1, "one read of the store for both");
    let token = within("token", running.get_valid_token())
        .await
        .expect("the login made elsewhere");
    assert_eq!(token, tokens.access_token);
    assert_eq!(stats(&fixture).refresh_token, 0, "no refresh was made");
    assert_eq!(
        stored(&*store, &fixture).await.tokens,
        Some(tokens.clone()),
        "the login stays stored"
    );

    // Once the interval is over (on tokio's clock, paused here), the next request reads the
    // store by itself.
    tokio::time::pause();
    tokio::time::advance(NONE_STORED_RECHECK).await;
    let token = within("token", waiting.get_valid_token())
        .await
        .expect("the login made elsewhere");
    assert_eq!(token, tokens.access_token);
}
