//! The held tokens and the store: the first load, keeping and storing new tokens by
//! generation, re-reading what other processes stored, and forgetting refused tokens.

use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::{HeldTokens, OAuthClient, NONE_STORED_RECHECK};
use crate::credentials::{ClientIdentity, StoredCredentials, TokenSet};
use crate::dpop::DpopKey;
use crate::error::AuthError;
use crate::secret::Secret;
use crate::store::{EntryLock, ENTRY_LOCK_TTL};

/// Which stored entry a re-read of the store takes over the held tokens.
#[derive(Clone, Copy)]
enum Reread {
    /// One written after the held tokens (a higher generation).
    Newer,
    /// Any at least as new as the last one seen, when no tokens are held.
    WhenNoneHeld,
}

impl OAuthClient {
    /// Loads from the store on first use.
    pub(super) async fn current(&self) -> Option<HeldTokens> {
        if !lock(&self.state).loaded {
            // Concurrent first callers share one read of the store.
            let _loading = self.load_lock.lock().await;
            if !lock(&self.state).loaded {
                match self.store.load(&self.config.store_key).await {
                    Ok(stored) => {
                        let mut state = lock(&self.state);
                        state.loaded = true;
                        state.unreadable = None;
                        if let Some(stored) = stored {
                            state.generation = stored.generation;
                            state.held = stored.tokens.map(HeldTokens::loaded);
                            if state.client.is_none() {
                                state.client = stored.client;
                            }
                            if state.dpop_key.is_none() {
                                // A key that cannot be read leaves its tokens unusable: the
                                // server refuses them, and a new authorization follows.
                                state.dpop_key = stored.dpop_key.and_then(|k| {
                                    DpopKey::from_secret(&k)
                                        .map_err(|e| warn!(store = %self.store.describe(), "{e}"))
                                        .ok()
                                });
                            }
                        }
                    }
                    // An unreadable entry (a failing store, a corrupt entry) counts as none
                    // for now; the next call reads again.
                    Err(e) => {
                        warn!(store = %self.store.describe(), "cannot read the stored tokens: {e}");
                        lock(&self.state).unreadable = Some(e.0);
                    }
                }
            }
        }
        lock(&self.state).held.clone()
    }

    /// The store's lock on this client's entry, waiting at most [`ENTRY_LOCK_TTL`]; none (with
    /// a warning) when it cannot be had — the refresh then goes on uncoordinated, and the
    /// generations still keep the newest tokens.
    pub(super) async fn lock_entry(&self) -> EntryLock {
        match self
            .store
            .lock_entry(&self.config.store_key, ENTRY_LOCK_TTL)
            .await
        {
            Ok(lock) => lock,
            Err(e) => {
                warn!(
                    server = %redact_url(self.config.server_url.as_str()),
                    store = %self.store.describe(),
                    "refreshing without the store's lock: {e}"
                );
                EntryLock::none()
            }
        }
    }

    /// Holds new tokens (and the client identity they belong to) and stores them
    /// ([`store_held`](Self::store_held)). They are held either way; `Err` says why they could
    /// not be stored (they are stored at the next chance, [`store_pending`](Self::store_pending)).
    pub(super) async fn keep(
        &self,
        tokens: TokenSet,
        client: Option<ClientIdentity>,
    ) -> Result<(), String> {
        {
            let mut state = lock(&self.state);
            state.held = Some(HeldTokens::obtained(tokens));
            state.loaded = true;
            state.unsaved = true;
            if client.is_some() {
                state.client = client;
            }
        }
        self.tokens_changed.notify_waiters();
        self.store_held().await
    }

    /// [`keep`](Self::keep) for tokens a refresh or a machine grant obtained: a store that fails
    /// costs a warning, not the request (the tokens are held, and stored later).
    pub(super) async fn keep_refreshed(&self, tokens: TokenSet, client: Option<ClientIdentity>) {
        if let Err(e) = self.keep(tokens, client).await {
            warn!(store = %self.store.describe(), "could not store the new tokens (kept in this process, stored when the store answers): {e}");
        }
    }

    /// [`keep`](Self::keep) for a login, under the store's entry lock (its generation must be
    /// read and written by one process at a time); a login that cannot be stored is an error
    /// (the tokens are held by this process only).
    pub(super) async fn keep_under_entry_lock(
        &self,
        tokens: TokenSet,
        client: Option<ClientIdentity>,
    ) -> Result<(), AuthError> {
        let entry = self.lock_entry().await;
        let kept = self.keep(tokens, client).await;
        entry.release().await;
        kept.map_err(|e| {
            AuthError::Store(format!(
                "authorized, but the tokens could not be stored ({e}); only this process holds them"
            ))
        })
    }

    /// Writes the held tokens one generation above the held and the stored entry. Nothing is
    /// written when the store cannot be read (never blind: a wrong fleet key must not replace
    /// the fleet's entry). When another process wrote in between (it went without the lock): an
    /// entry with tokens is kept (both logins are good); one without — the forget of a refresh
    /// token older than these — is written over.
    async fn store_held(&self) -> Result<(), String> {
        for _ in 0..3 {
            let stored = match self.store.load(&self.config.store_key).await {
                Ok(stored) => {
                    lock(&self.state).unreadable = None;
                    stored
                }
                Err(e) => return Err(e.0),
            };
            let stored_generation = stored.as_ref().map_or(0, |s| s.generation);
            let (tokens, client, generation) = {
                let state = lock(&self.state);
                let Some(held) = &state.held else {
                    drop(state);
                    lock(&self.state).unsaved = false;
                    return Ok(());
                };
                (
                    held.tokens.clone(),
                    state.client.clone(),
                    state.generation.max(stored_generation) + 1,
                )
            };
            let entry = self.entry(Some(tokens), client, generation);
            match self
                .store
                .save_if_newer(&self.config.store_key, &entry)
                .await
            {
                Ok(true) => {
                    let mut state = lock(&self.state);
                    state.generation = state.generation.max(generation);
                    state.unsaved = false;
                    return Ok(());
                }
                Ok(false) => {
                    let newer = self
                        .store
                        .load(&self.config.store_key)
                        .await
                        .map_err(|e| e.0)?;
                    if let Some(newer) = newer.filter(|n| n.tokens.is_some()) {
                        debug!(store = %self.store.describe(), "another process stored tokens at the same time; both are kept");
                        let mut state = lock(&self.state);
                        state.generation = state.generation.max(newer.generation);
                        state.unsaved = false;
                        return Ok(());
                    }
                }
                Err(e) => return Err(e.0),
            }
        }
        Err("the entry kept changing under concurrent writes".into())
    }

    /// Whether the held tokens still wait to be stored (the store was unreachable when they
    /// came).
    pub fn has_unsaved_tokens(&self) -> bool {
        lock(&self.state).unsaved
    }

    /// Stores held tokens that could not be stored when they came (the store was unreachable),
    /// one process at a time: `Ok(true)` when stored now, `Ok(false)` when there was nothing
    /// to store. Once the store is back, the newest tokens win by generation.
    pub async fn store_pending(&self) -> Result<bool, AuthError> {
        if !self.has_unsaved_tokens() {
            return Ok(false);
        }
        let _guard = self.refresh_lock.lock().await;
        let entry = self.lock_entry().await;
        // Another process may have refreshed since: its tokens are newer than ours.
        self.adopt_newer_stored().await;
        let stored = if self.has_unsaved_tokens() {
            self.store_held().await.map(|()| true)
        } else {
            Ok(false)
        };
        entry.release().await;
        stored.map_err(AuthError::Store)
    }

    /// Reads the store again and, when its entry is newer than the held tokens (another
    /// process refreshed or logged in), holds its tokens instead and returns them. A store that
    /// cannot be read, or holds nothing newer, changes nothing.
    pub(super) async fn adopt_newer_stored(&self) -> Option<HeldTokens> {
        self.reread(Reread::Newer).await
    }

    /// With no tokens held, takes the stored ones when the entry is at least as new as what
    /// this client last saw (a login elsewhere, or the winner of a refresh this client lost
    /// while the store was unreachable).
    pub(super) async fn adopt_stored_when_none_held(&self) -> Option<HeldTokens> {
        self.reread(Reread::WhenNoneHeld).await
    }

    /// Whether a user grant's store was read a moment ago ([`NONE_STORED_RECHECK`]), readable,
    /// with no token in it, and none is held since: the request goes without one, the store
    /// not asked again yet.
    pub(crate) fn none_stored_recently(&self) -> bool {
        if self.is_machine() {
            return false;
        }
        let state = lock(&self.state);
        state.held.is_none()
            && state.unreadable.is_none()
            && state
                .none_stored_at
                .is_some_and(|at| at.elapsed() < NONE_STORED_RECHECK)
    }

    /// After a 401 to a request that went without a token (a user grant): whether usable
    /// tokens are held now — obtained or adopted meanwhile, or taken here from a login another
    /// process stored since the store was last read — so the request is sent again with them.
    /// `Ok(false)`: none; an unreadable store says why.
    pub(crate) async fn tokens_since_bare_request(&self) -> Result<bool, AuthError> {
        if self.is_machine() {
            return Ok(false);
        }
        let _guard = self.refresh_lock.lock().await;
        let held = match self.current().await {
            Some(held) => Some(held),
            None => self.adopt_stored_or_note_none().await?,
        };
        // Expired without a refresh token, they would go unused: the caller says "log in".
        Ok(held.is_some_and(|held| {
            held.fresh_for(std::time::Duration::ZERO) || held.tokens.refresh_token.is_some()
        }))
    }

    /// With the refresh lock held and no tokens (a user grant): the tokens a login in another
    /// process stored, or none — noted, so that the store is not read again for
    /// [`NONE_STORED_RECHECK`]; an unreadable store is an error, not a logout.
    pub(super) async fn adopt_stored_or_note_none(&self) -> Result<Option<HeldTokens>, AuthError> {
        if let Some(held) = self.adopt_stored_when_none_held().await {
            return Ok(Some(held));
        }
        if let Some(unreadable) = self.unreadable() {
            return Err(unreadable);
        }
        lock(&self.state).none_stored_at = Some(Instant::now());
        Ok(None)
    }

    async fn reread(&self, which: Reread) -> Option<HeldTokens> {
        let stored = match self.store.load(&self.config.store_key).await {
            Ok(stored) => {
                lock(&self.state).unreadable = None;
                stored?
            }
            Err(e) => {
                // The store (or its lock) says so once per outage; this may run per call.
                debug!(store = %self.store.describe(), "cannot read the stored tokens again: {e}");
                lock(&self.state).unreadable = Some(e.0);
                return None;
            }
        };
        let mut state = lock(&self.state);
        let takes = match which {
            Reread::Newer => stored.generation > state.generation,
            Reread::WhenNoneHeld => state.held.is_none() && stored.generation >= state.generation,
        };
        if !takes {
            return None;
        }
        let Some(tokens) = stored.tokens else {
            state.generation = stored.generation;
            state.loaded = true;
            if !stored.logged_out && state.unsaved {
                // Another process forgot a refresh token older than the held ones, which the
                // store has not seen yet: they stay, to be stored above the forget.
                return None;
            }
            // Logged out elsewhere (refreshing would undo it), or the held tokens were the
            // refused ones.
            if state.held.take().is_some() {
                debug!(server = %redact_url(self.config.server_url.as_str()), "the stored login was removed by another process");
            }
            state.unsaved = false;
            drop(state);
            self.tokens_changed.notify_waiters();
            return None;
        };
        let refused_before = state.refused_refresh.is_some_and(|refused| {
            tokens
                .refresh_token
                .as_ref()
                .is_some_and(|r| fingerprint(r) == refused)
        });
        if refused_before {
            // The entry still holds a refresh token the server refused: not taken back.
            return None;
        }
        state.refused_refresh = None;
        // Stored by a process that had just obtained them: their lifetime is known from
        // `expires_in` (or unknown, and then the full margin applies).
        let held = HeldTokens::loaded(tokens);
        state.held = Some(held.clone());
        state.generation = stored.generation;
        state.loaded = true;
        state.unsaved = false;
        if let Some(client) = stored.client {
            state.client = Some(client);
        }
        if let Some(key) = stored.dpop_key {
            match DpopKey::from_secret(&key) {
                Ok(key) => state.dpop_key = Some(key),
                Err(e) => warn!(store = %self.store.describe(), "{e}"),
            }
        }
        drop(state);
        self.tokens_changed.notify_waiters();
        Some(held)
    }

    /// Forgets tokens the authorization server refused — in the store only while the entry is
    /// still generation `refused` (compare-and-delete): a process that lost a refresh race
    /// never deletes the tokens the winner stored, and takes them instead when they are there.
    /// Nothing to forget when no tokens are held (they were forgotten already).
    pub(super) async fn forget_refused(&self, refused: u64) -> Result<(), AuthError> {
        let (client, refused_refresh) = {
            let state = lock(&self.state);
            if state.generation != refused || state.held.is_none() {
                // Newer tokens arrived meanwhile (they were not refused), or nothing is held.
                return Ok(());
            }
            let refused_refresh = state
                .held
                .as_ref()
                .and_then(|h| h.tokens.refresh_token.as_ref())
                .map(fingerprint);
            (state.client.clone(), refused_refresh)
        };
        {
            let mut state = lock(&self.state);
            state.held = None;
            state.loaded = true;
            state.unsaved = false;
            // Another process may hold newer tokens: the next request reads the store.
            state.none_stored_at = None;
        }
        self.tokens_changed.notify_waiters();
        let stored = self.entry(None, client, refused + 1);
        match self
            .store
            .save_if_newer(&self.config.store_key, &stored)
            .await
        {
            Ok(true) => {
                let mut state = lock(&self.state);
                state.generation = state.generation.max(refused + 1);
            }
            Ok(false) => {
                debug!(server = %redact_url(self.config.server_url.as_str()), "the stored tokens are newer than the refused ones: kept");
                self.adopt_newer_stored().await;
            }
            // Nothing is deleted then; the next process to read the entry finds out itself,
            // and this one does not take the refused token back from it.
            Err(e) => {
                lock(&self.state).refused_refresh = refused_refresh;
                debug!(store = %self.store.describe(), "could not forget the refused tokens in the store: {e}")
            }
        }
        Ok(())
    }

    /// Drops the held tokens (keeps the client identity), e.g. after the server refused them —
    /// in the store only while its entry is still the one these tokens came from (another
    /// process's newer tokens stay).
    pub async fn forget_tokens(&self) -> Result<(), AuthError> {
        let _guard = self.refresh_lock.lock().await;
        let entry = self.lock_entry().await;
        let generation = lock(&self.state).generation;
        let forgotten = self.forget_refused(generation).await;
        entry.release().await;
        forgotten
    }

    /// The store entry for `tokens` and `client` at `generation`.
    pub(super) fn entry(
        &self,
        tokens: Option<TokenSet>,
        client: Option<ClientIdentity>,
        generation: u64,
    ) -> StoredCredentials {
        // Only identities the server issued are stored: configured ones come from the config.
        let client = client.filter(|c| self.config.client_id.as_deref() != Some(&c.client_id));
        let dpop_key = lock(&self.state).dpop_key.as_ref().map(DpopKey::to_secret);
        StoredCredentials {
            tokens,
            client,
            dpop_key,
            generation,
            logged_out: false,
        }
    }
}

/// The SHA-256 of a secret, to recognise it later without keeping it.
fn fingerprint(secret: &Secret) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(secret.expose().as_bytes()).into()
}
