//! Waiting, in a test, for something that happens on its own — a process to exit, a counter to
//! reach a value, a file to appear: one poll loop with a deadline, so that no test hand-rolls
//! its own and none can wait forever.
//!
//! A condition says `true` when it holds, or `Ok(())`; one that returns `Err(state)` when it
//! does not hold names what it saw instead, and the last such state is in the panic when time
//! runs out. The async forms run on tokio's clock, so they work on a paused clock too (time
//! moves on while the runtime is idle); [`until_blocking`] is for threads without a runtime.
//!
//! ```
//! # async fn run() {
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//! let calls = AtomicUsize::new(1);
//! mcp_testkit::wait::until("one call", Duration::from_secs(10), || {
//!     calls.load(Ordering::Relaxed) == 1
//! })
//! .await;
//! # }
//! ```

use std::future::Future;
use std::time::Duration;

/// How often a condition is looked at.
pub const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// What one look at a condition found: `true` or `Ok(())` when it holds; `false`, or
/// `Err(state)` naming what was seen instead.
pub trait Look {
    /// `Ok(())` when the condition holds, else what was seen (if the condition says).
    fn held(self) -> Result<(), Option<String>>;
}

impl Look for bool {
    fn held(self) -> Result<(), Option<String>> {
        if self {
            Ok(())
        } else {
            Err(None)
        }
    }
}

impl Look for Result<(), String> {
    fn held(self) -> Result<(), Option<String>> {
        self.map_err(Some)
    }
}

/// Waits until `condition` holds, looking every [`POLL_INTERVAL`]; panics naming `what` (and
/// the last state the condition reported) when it still does not hold after `limit`.
pub async fn until<L: Look>(what: &str, limit: Duration, mut condition: impl FnMut() -> L) {
    until_async(what, limit, || std::future::ready(condition())).await;
}

/// [`until`] for a condition that must be awaited (an HTTP request, a Redis read).
pub async fn until_async<F, Fut>(what: &str, limit: Duration, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: Look,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let seen = match condition().await.held() {
            Ok(()) => return,
            Err(seen) => seen,
        };
        if tokio::time::Instant::now() >= deadline {
            timed_out(what, limit, seen);
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// [`until`] on a thread without a runtime: the thread sleeps between looks.
#[track_caller]
pub fn until_blocking<L: Look>(what: &str, limit: Duration, mut condition: impl FnMut() -> L) {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let seen = match condition().held() {
            Ok(()) => return,
            Err(seen) => seen,
        };
        if std::time::Instant::now() >= deadline {
            timed_out(what, limit, seen);
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

#[track_caller]
fn timed_out(what: &str, limit: Duration, seen: Option<String>) -> ! {
    match seen {
        Some(seen) => panic!("timed out after {limit:?} waiting for {what}; last seen: {seen}"),
        None => panic!("timed out after {limit:?} waiting for {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(start_paused = true)]
    async fn returns_once_the_condition_holds() {
        let looks = AtomicUsize::new(0);
        until("the third look", Duration::from_secs(1), || {
            looks.fetch_add(1, Ordering::Relaxed) == 2
        })
        .await;
        assert_eq!(looks.load(Ordering::Relaxed), 3);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "timed out after 1s waiting for nothing")]
    async fn panics_naming_what_never_happened() {
        until("nothing", Duration::from_secs(1), || false).await;
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "waiting for an empty group; last seen: 2 members left")]
    async fn the_panic_names_the_last_state_seen() {
        let mut left = 5;
        until("an empty group", Duration::from_secs(1), || {
            left = (left - 1).max(2);
            if left == 0 {
                Ok(())
            } else {
                Err(format!("{left} members left"))
            }
        })
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn awaits_an_async_condition() {
        let looks = AtomicUsize::new(0);
        until_async("an awaited look", Duration::from_secs(1), || {
            let n = looks.fetch_add(1, Ordering::Relaxed);
            async move {
                tokio::task::yield_now().await;
                n == 1
            }
        })
        .await;
        assert_eq!(looks.load(Ordering::Relaxed), 2);
    }

    #[test]
    #[should_panic(expected = "timed out after 30ms waiting for a blocked thing")]
    fn blocking_form_panics_too() {
        until_blocking("a blocked thing", Duration::from_millis(30), || false);
    }
}
