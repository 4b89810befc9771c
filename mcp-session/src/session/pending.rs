//! Requests waiting for their responses.
//!
//! A std mutex guards the table; it is held only for a map operation, never across an await.

use std::collections::HashMap;
use std::sync::Mutex;
use tokio::time::Instant;

use tokio::sync::oneshot;

use mcp_core::error::Error;
use mcp_core::jsonrpc::Payload;
use mcp_core::service::ProgressCallback;
use mcp_core::types::ProgressNotificationParams;

pub(crate) type Outcome = Result<Payload, Error>;

/// Progress bookkeeping of one request.
pub(crate) struct ProgressState {
    callback: Option<ProgressCallback>,
    last_update: Mutex<Option<Instant>>,
}

impl ProgressState {
    pub(crate) fn new(callback: Option<ProgressCallback>) -> Self {
        ProgressState {
            callback,
            last_update: Mutex::new(None),
        }
    }

    pub(crate) fn record(&self, params: &ProgressNotificationParams) {
        *lock(&self.last_update) = Some(Instant::now());
        if let Some(cb) = &self.callback {
            cb(params);
        }
    }

    pub(crate) fn last_update(&self) -> Option<Instant> {
        *lock(&self.last_update)
    }
}

pub(crate) struct PendingRequest {
    pub(crate) reply: oneshot::Sender<Outcome>,
    pub(crate) progress: Option<std::sync::Arc<ProgressState>>,
}

/// Hashes the session's own request ids (sequential integers) with one multiplication
/// (Fibonacci hashing) instead of SipHash: they come from this process, not from a peer, so
/// there is nothing to defend against, and this is on every request's path.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdMap<V> = HashMap<i64, V, std::hash::BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct Table {
    waiting: IdMap<PendingRequest>,
    closed: Option<Error>,
}

/// The pending-request table. Once closed, it refuses new entries with the close reason, so no
/// request can slip in after the failure that emptied it.
#[derive(Default)]
pub(crate) struct PendingTable {
    table: Mutex<Table>,
}

use mcp_core::sync::lock;

impl PendingTable {
    pub(crate) fn insert(&self, id: i64, request: PendingRequest) -> Result<(), Error> {
        let mut t = lock(&self.table);
        if let Some(reason) = &t.closed {
            return Err(reason.clone());
        }
        t.waiting.insert(id, request);
        Ok(())
    }

    /// Delivers an outcome; false when nobody waits for `id` (late, unknown or duplicate).
    pub(crate) fn complete(&self, id: i64, outcome: Outcome) -> bool {
        let entry = lock(&self.table).waiting.remove(&id);
        match entry {
            Some(p) => {
                let _ = p.reply.send(outcome);
                true
            }
            None => false,
        }
    }

    /// Forgets `id`; true when it was still waiting.
    pub(crate) fn remove(&self, id: i64) -> bool {
        lock(&self.table).waiting.remove(&id).is_some()
    }

    pub(crate) fn progress(&self, id: i64) -> Option<std::sync::Arc<ProgressState>> {
        lock(&self.table)
            .waiting
            .get(&id)
            .and_then(|p| p.progress.clone())
    }

    /// Whether `id` is still waiting.
    pub(crate) fn contains(&self, id: i64) -> bool {
        lock(&self.table).waiting.contains_key(&id)
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.table).waiting.len()
    }

    pub(crate) fn closed_reason(&self) -> Option<Error> {
        lock(&self.table).closed.clone()
    }

    /// Fails every waiting request with `reason` at once and refuses new ones.
    pub(crate) fn close(&self, reason: Error) {
        let drained: Vec<PendingRequest> = {
            let mut t = lock(&self.table);
            if t.closed.is_none() {
                t.closed = Some(reason.clone());
            }
            t.waiting.drain().map(|(_, p)| p).collect()
        };
        for p in drained {
            let _ = p.reply.send(Err(reason.clone()));
        }
    }
}
