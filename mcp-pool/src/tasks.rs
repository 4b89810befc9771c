//! The pool's tasks and who owns them.
//!
//! - Each pooled session's keepalive task: owned by the pooled connection ([`AbortOnDrop`]).
//! - The load-sizing task: owned by the started pool.
//! - Each connect runs in a task of its own, owned by the connect (aborted if the connect is
//!   dropped): a connector that panics is then an error, not a lost bb8 slot.
//! - Graceful closes of discarded sessions ([`Closer`]): owned by the pool; dropping the pool
//!   aborts those still running (their sessions are then released at once, as a dropped
//!   session is), [`SessionPool::close`](crate::SessionPool::close) waits for them.
//!
//! bb8 spawns tasks of its own, which the pool cannot abort: the reaper (it holds a weak
//! reference to the pool and ends at its first tick after the pool is gone, at most
//! `reaper_interval` later) and connection openers (each bounded by `connect_timeout`, and cut
//! short when the pool is closed or dropped).

use std::sync::Mutex;

use mcp_session::ClientSession;
use tokio::task::{JoinHandle, JoinSet};

/// Aborts its task when dropped.
#[derive(Debug)]
pub(crate) struct AbortOnDrop<T = ()>(pub(crate) JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Closes discarded sessions gracefully, in tasks the pool owns.
#[derive(Debug, Default)]
pub(crate) struct Closer {
    /// `None` once the pool is gone: sessions are then released at once.
    tasks: Mutex<Option<JoinSet<()>>>,
}

impl Closer {
    pub(crate) fn new() -> Self {
        Closer {
            tasks: Mutex::new(Some(JoinSet::new())),
        }
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, Option<JoinSet<()>>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closes `session` in the background (bounded by its own close timeouts). Without a
    /// runtime, or once the pool is gone, the session is just dropped, which releases it.
    pub(crate) fn close_later(&self, session: ClientSession) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut tasks = self.tasks();
        if let Some(tasks) = tasks.as_mut() {
            while tasks.try_join_next().is_some() {}
            tasks.spawn_on(async move { session.close().await }, &runtime);
        }
    }

    /// Waits (at most until `deadline`) for the closes started so far; aborts those still
    /// running then.
    pub(crate) async fn drain(&self, deadline: tokio::time::Instant) {
        let running = self.tasks().as_mut().map(std::mem::take);
        if let Some(mut running) = running {
            let all = async { while running.join_next().await.is_some() {} };
            if tokio::time::timeout_at(deadline, all).await.is_err() {
                tracing::warn!("pooled sessions did not close in time; releasing them at once");
            }
        }
    }

    /// The pool is gone: abort the closes still running, start no more.
    pub(crate) fn shut_down(&self) {
        let tasks = self.tasks().take();
        drop(tasks);
    }

    /// Closes still running (for tests).
    #[cfg(test)]
    pub(crate) fn running(&self) -> usize {
        self.tasks().as_ref().map_or(0, JoinSet::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn aborting_on_drop_ends_the_task() {
        let handle = tokio::spawn(std::future::pending::<()>());
        let abort = handle.abort_handle();
        drop(AbortOnDrop(handle));
        tokio::time::timeout(Duration::from_secs(5), async {
            while !abort.is_finished() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the task ends once its owner is dropped");
    }

    #[tokio::test]
    async fn a_shut_down_closer_starts_nothing() {
        let closer = Closer::new();
        closer.shut_down();
        assert_eq!(closer.running(), 0);
        closer
            .drain(tokio::time::Instant::now() + Duration::from_secs(1))
            .await;
    }
}
