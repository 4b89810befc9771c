//! [`OwnedTask`]: a transport's spawned task (a writer, a reader, a call) and the one owner
//! that ends it — within a bound on `close`, at once when dropped.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use mcp_core::sync::lock;
use tokio::task::JoinHandle;

/// The owner of one spawned task: [`finish`](Self::finish) gives it a grace period to end on
/// its own, then aborts it; dropping the owner aborts it. The default owns no task yet (one
/// started later is handed over with [`set`](Self::set)).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
///
/// let task = mcp_wire::OwnedTask::spawn(std::future::pending::<()>());
/// // Never ends on its own: aborted once the grace is over.
/// assert!(!task.finish(Duration::from_millis(10)).await);
/// # }
/// ```
#[derive(Debug, Default)]
pub struct OwnedTask {
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl OwnedTask {
    /// Spawns `task` on the current tokio runtime and owns it.
    pub fn spawn(task: impl Future<Output = ()> + Send + 'static) -> OwnedTask {
        OwnedTask {
            handle: Mutex::new(Some(tokio::spawn(task))),
        }
    }

    /// Owns `handle` from now on (a task owned before is aborted).
    pub fn set(&self, handle: JoinHandle<()>) {
        if let Some(previous) = lock(&self.handle).replace(handle) {
            previous.abort();
        }
    }

    /// Waits up to `grace` for the task to end, then aborts it (also when this wait is itself
    /// cancelled). True when it ended on its own, or there was none. Later calls find no task.
    pub async fn finish(&self, grace: Duration) -> bool {
        let Some(handle) = lock(&self.handle).take() else {
            return true;
        };
        let mut task = AbortOnDrop(handle);
        tokio::time::timeout(grace, &mut task.0).await.is_ok()
    }

    fn abort(&self) {
        if let Some(handle) = lock(&self.handle).take() {
            handle.abort();
        }
    }
}

impl Drop for OwnedTask {
    fn drop(&mut self) {
        self.abort();
    }
}

/// A task aborted when its handle is dropped (aborting one that ended does nothing).
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot;
    use tokio::time::Instant;

    /// A task that never ends on its own; `gone` resolves once it was aborted (its future
    /// dropped).
    fn endless() -> (
        impl Future<Output = ()> + Send + 'static,
        oneshot::Receiver<()>,
    ) {
        let (alive, gone) = oneshot::channel::<()>();
        (
            async move {
                let _alive = alive;
                std::future::pending::<()>().await
            },
            gone,
        )
    }

    /// Waits (on the paused clock: no real time) until the task's future was dropped.
    async fn aborted(gone: oneshot::Receiver<()>) {
        tokio::time::timeout(Duration::from_secs(1), gone)
            .await
            .expect("the task was aborted")
            .expect_err("the task never sends");
    }

    #[tokio::test(start_paused = true)]
    async fn finish_waits_for_a_task_that_ends_within_the_grace() {
        let task = OwnedTask::spawn(tokio::time::sleep(Duration::from_secs(1)));
        let start = Instant::now();
        assert!(task.finish(Duration::from_secs(5)).await);
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn finish_aborts_a_task_that_outlives_the_grace_exactly_at_the_grace() {
        let (future, gone) = endless();
        let task = OwnedTask::spawn(future);
        let start = Instant::now();
        assert!(!task.finish(Duration::from_secs(2)).await);
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        aborted(gone).await;
        assert!(
            task.finish(Duration::from_secs(2)).await,
            "then there is none"
        );
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(2),
            "the second finish does not wait"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_finish_aborts_the_task() {
        let (future, gone) = endless();
        let task = OwnedTask::spawn(future);
        let finish = tokio::time::timeout(Duration::from_secs(1), task.finish(Duration::MAX));
        assert!(finish.await.is_err(), "the wait was cancelled");
        aborted(gone).await;
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_owner_aborts_the_task_and_a_replaced_one() {
        let (first, first_gone) = endless();
        let (second, second_gone) = endless();
        let task = OwnedTask::default();
        task.set(tokio::spawn(first));
        task.set(tokio::spawn(second));
        aborted(first_gone).await;
        drop(task);
        aborted(second_gone).await;
    }
}
