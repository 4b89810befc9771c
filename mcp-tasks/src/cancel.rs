//! The `tasks/cancel` of a task the follower abandons: nobody else knows the task's id (the
//! caller asked for a result, not a task), so when the deadline passes, an error ends the
//! following or the caller drops the call, the server is asked to stop it.
//!
//! The request cannot be awaited where the task is abandoned — a dropped future runs no more
//! code, and a caller past its deadline must not wait for a second request — so it is sent from
//! a task: one the follower owns (a `JoinSet` in [`AbandonedTasks`], aborted when the last
//! follower and layer that share it are dropped), through the service the follower wraps, bounded
//! by [`CANCEL_TIMEOUT`]; the answer is only logged. At most [`MAX_CANCELS_IN_FLIGHT`] are under
//! way at once, so a server that answers none cannot make the client hold ever more.
//! [`FollowTasksLayer::flush_cancels`](crate::FollowTasksLayer::flush_cancels) waits for those
//! under way, as a session's `close` flushes its outbox: the facade calls it before it closes a
//! server's sessions, so that a cancel is not lost to the shutdown that follows a failed call.
//!
//! Why not a hook in the session: the session could queue the request on its outbox from a
//! `Drop`, but only for a task it followed itself, and following is no longer its business. The
//! follower wraps any service (in the facade, the session a gate picked for the call), and the
//! cancel goes through that same service; what the outbox gave for free — an owner and a flush
//! on close — is the `JoinSet` and `flush_cancels`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;

use mcp_core::service::{McpService, RequestOptions};
use mcp_core::sync::lock;

use crate::ext::task_operation;
use crate::types::TASKS_CANCEL;

/// How long the `tasks/cancel` of an abandoned task may take (waiting for the service below,
/// sending, and the answer).
pub const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);
/// The most `tasks/cancel` requests of abandoned tasks under way at once, per layer; past it an
/// abandoned task is not cancelled (logged), and runs on until the server's TTL ends it.
pub(crate) const MAX_CANCELS_IN_FLIGHT: usize = 64;

/// The tasks sending abandoned tasks' `tasks/cancel`; dropping it aborts them.
#[derive(Default)]
pub(crate) struct AbandonedTasks {
    cancels: Mutex<JoinSet<()>>,
}

impl AbandonedTasks {
    /// Starts the `tasks/cancel` of `task_id` through `service`, unless too many are under way
    /// or there is no tokio runtime to run it on (then logs why not). Returns at once.
    pub(crate) fn cancel(&self, service: Arc<dyn McpService>, task_id: String) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                task_id,
                "not cancelling an abandoned task: there is no tokio runtime to send it on"
            );
            return;
        };
        let mut cancels = lock(&self.cancels);
        while cancels.try_join_next().is_some() {}
        if cancels.len() >= MAX_CANCELS_IN_FLIGHT {
            tracing::warn!(
                task_id,
                "not cancelling an abandoned task: {MAX_CANCELS_IN_FLIGHT} cancellations are \
                 under way already (the server is not answering them)"
            );
            return;
        }
        tracing::debug!(task_id, "cancelling an abandoned task");
        let operation = task_operation(TASKS_CANCEL, &task_id, None)
            .with_options(RequestOptions::new().with_timeout(CANCEL_TIMEOUT));
        cancels.spawn_on(
            async move {
                match tokio::time::timeout(CANCEL_TIMEOUT, service.call(operation)).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        tracing::debug!(task_id, error = %e, "could not cancel an abandoned task")
                    }
                    Err(_) => tracing::debug!(
                        task_id,
                        "the server did not answer the cancellation of an abandoned task in time"
                    ),
                }
            },
            &runtime,
        );
    }

    /// Waits for the cancellations under way, at most `within`; those still unanswered then
    /// are given up (aborted).
    pub(crate) async fn flush(&self, within: Duration) {
        let mut cancels = std::mem::take(&mut *lock(&self.cancels));
        let all = async { while cancels.join_next().await.is_some() {} };
        if tokio::time::timeout(within, all).await.is_err() {
            tracing::debug!(
                left = cancels.len(),
                "giving up cancellations of abandoned tasks that were not answered in time"
            );
        }
    }
}

/// Cancels its task when dropped, unless disarmed (the task ended, or nobody but the caller
/// knows it should be left running).
pub(crate) struct CancelGuard<'a> {
    abandoned: &'a AbandonedTasks,
    service: Option<Arc<dyn McpService>>,
    task_id: String,
}

impl<'a> CancelGuard<'a> {
    /// Armed: dropping it cancels `task_id` through `service`.
    pub(crate) fn new(
        abandoned: &'a AbandonedTasks,
        service: Arc<dyn McpService>,
        task_id: String,
    ) -> Self {
        CancelGuard {
            abandoned,
            service: Some(service),
            task_id,
        }
    }

    /// The task ended: nothing to cancel.
    pub(crate) fn disarm(&mut self) {
        self.service = None;
    }
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if let Some(service) = self.service.take() {
            self.abandoned
                .cancel(service, std::mem::take(&mut self.task_id));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;
    use mcp_core::{Operation, Payload};

    use super::*;

    /// A server that takes every `tasks/cancel` and never answers; counts those under way.
    #[derive(Default)]
    struct Unanswered {
        under_way: Arc<AtomicUsize>,
        started: AtomicUsize,
    }

    /// Counts a call as under way until its future is dropped (answered, aborted or given up).
    struct UnderWay(Arc<AtomicUsize>);

    impl Drop for UnderWay {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    #[async_trait]
    impl McpService for Unanswered {
        async fn call(&self, operation: Operation) -> Result<Payload, mcp_core::Error> {
            assert_eq!(operation.method, TASKS_CANCEL);
            self.started.fetch_add(1, Ordering::SeqCst);
            self.under_way.fetch_add(1, Ordering::SeqCst);
            let _under_way = UnderWay(self.under_way.clone());
            std::future::pending().await
        }
    }

    /// Lets the spawned cancellations run up to their first await.
    async fn settle_spawned() {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_64_cancels_are_under_way_and_a_flush_gives_up_the_rest_at_its_deadline() {
        let server = Arc::new(Unanswered::default());
        let abandoned = AbandonedTasks::default();
        for n in 0..=MAX_CANCELS_IN_FLIGHT {
            abandoned.cancel(server.clone(), format!("task-{n}"));
        }
        settle_spawned().await;
        assert_eq!(server.started.load(Ordering::SeqCst), MAX_CANCELS_IN_FLIGHT);
        assert_eq!(lock(&abandoned.cancels).len(), MAX_CANCELS_IN_FLIGHT);
        let started = tokio::time::Instant::now();
        abandoned.flush(Duration::from_secs(1)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        settle_spawned().await;
        assert_eq!(
            server.under_way.load(Ordering::SeqCst),
            0,
            "given up, not left running"
        );
        // Room again for the next abandoned task.
        abandoned.cancel(server.clone(), "task-next".to_owned());
        settle_spawned().await;
        assert_eq!(
            server.started.load(Ordering::SeqCst),
            MAX_CANCELS_IN_FLIGHT + 1
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_cancel_ends_at_its_timeout_and_dropping_the_tasks_aborts_the_rest() {
        let server = Arc::new(Unanswered::default());
        let abandoned = AbandonedTasks::default();
        abandoned.cancel(server.clone(), "task-1".to_owned());
        settle_spawned().await;
        assert_eq!(server.under_way.load(Ordering::SeqCst), 1);
        tokio::time::sleep(CANCEL_TIMEOUT).await;
        settle_spawned().await;
        assert_eq!(
            server.under_way.load(Ordering::SeqCst),
            0,
            "bounded by CANCEL_TIMEOUT"
        );
        abandoned.cancel(server.clone(), "task-2".to_owned());
        settle_spawned().await;
        assert_eq!(server.under_way.load(Ordering::SeqCst), 1);
        drop(abandoned);
        settle_spawned().await;
        assert_eq!(
            server.under_way.load(Ordering::SeqCst),
            0,
            "aborted with its owner"
        );
    }
}
