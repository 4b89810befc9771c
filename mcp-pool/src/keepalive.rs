//! Keepalive: every pooled session owns a task that pings it when it has been idle for a whole
//! `keepalive_interval`.
//!
//! "Idle" means not bound to a call: [`Activity`] records when the session's last call ended
//! (or its last ping was answered). The task sleeps until that moment plus the interval; if a
//! call came in between, it sleeps again from the new moment; if a call holds the session, it
//! looks again one interval later. So an idle session is pinged once per interval and a busy
//! one never.
//!
//! A ping the server answers — even with an error, which still proves it is alive — is a
//! success. A ping that fails without an answer (the connection is gone) or takes longer than
//! `ping_timeout` marks the session broken and closes it, unless a call has just checked it out
//! (that call then finds out for itself, and the session is discarded when it comes back); bb8
//! discards broken sessions on their next checkout or return and opens new ones.
//!
//! The task ends when the session ends, after a failed ping, or when the pooled connection that
//! owns it is dropped (its handle aborts it).
//!
//! A ping is not a call: a call that checks the session out while a ping is in flight runs
//! alongside it (a session multiplexes requests), and is never delayed by it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::{Delivery, McpServiceExt, RequestOptions};
use mcp_session::ClientSession;
use tokio::time::Instant;

use crate::manager::ManagerShared;
use crate::stats::Counters;

/// When a pooled session was last busy, whether it is busy now, and whether it is broken.
#[derive(Debug)]
pub(crate) struct Activity {
    state: Mutex<ActivityState>,
}

#[derive(Debug)]
struct ActivityState {
    in_use: bool,
    /// When the last call ended or the last ping was answered (or the session was opened).
    quiet_since: Instant,
    broken: bool,
}

impl Activity {
    pub(crate) fn new() -> Self {
        Activity {
            state: Mutex::new(ActivityState {
                in_use: false,
                quiet_since: Instant::now(),
                broken: false,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ActivityState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A call has checked the session out.
    pub(crate) fn begin_call(&self) {
        self.state().in_use = true;
    }

    /// The call is over.
    pub(crate) fn end_call(&self) {
        let mut state = self.state();
        state.in_use = false;
        state.quiet_since = Instant::now();
    }

    fn pinged(&self) {
        let mut state = self.state();
        if !state.in_use {
            state.quiet_since = Instant::now();
        }
    }

    /// Marks the session broken; says whether a call holds it.
    fn mark_broken(&self) -> bool {
        let mut state = self.state();
        state.broken = true;
        state.in_use
    }

    pub(crate) fn is_broken(&self) -> bool {
        self.state().broken
    }

    fn snapshot(&self) -> (bool, Instant) {
        let state = self.state();
        (state.in_use, state.quiet_since)
    }
}

/// The keepalive loop of one session (see the module documentation).
pub(crate) async fn run(
    session: ClientSession,
    activity: Arc<Activity>,
    shared: Arc<ManagerShared>,
    interval: Duration,
) {
    let ping_timeout = shared.config.ping_timeout;
    loop {
        let (in_use, quiet_since) = activity.snapshot();
        let now = Instant::now();
        let wake = if in_use {
            Some(mcp_core::time::deadline_after(now, interval))
        } else {
            let due = mcp_core::time::deadline_after(quiet_since, interval);
            (due > now).then_some(due)
        };
        if let Some(wake) = wake {
            tokio::select! {
                _ = tokio::time::sleep_until(wake) => continue,
                _ = session.closed() => return,
            }
        }
        let options = RequestOptions::new().with_timeout(ping_timeout);
        let outcome = tokio::time::timeout(ping_timeout, session.ping(options)).await;
        let failure = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(e)) if e.delivery() == Some(Delivery::Answered) => {
                tracing::debug!(error = %e, "keepalive ping answered with an error: alive");
                None
            }
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!("no answer within {ping_timeout:?}")),
        };
        match failure {
            None => {
                Counters::bump(&shared.counters.keepalive_pings);
                activity.pinged();
            }
            Some(reason) => {
                Counters::bump(&shared.counters.keepalive_failures);
                tracing::warn!(%reason, "keepalive ping failed; closing the pooled session");
                if !activity.mark_broken() {
                    session.close().await;
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn activity_tracks_calls_and_pings() {
        let activity = Activity::new();
        let opened = activity.snapshot().1;
        tokio::time::sleep(Duration::from_secs(5)).await;
        activity.begin_call();
        assert!(activity.snapshot().0);
        activity.pinged();
        assert_eq!(
            activity.snapshot().1,
            opened,
            "a ping during a call moves nothing"
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
        activity.end_call();
        let (in_use, quiet_since) = activity.snapshot();
        assert!(!in_use);
        assert_eq!(quiet_since, opened + Duration::from_secs(10));
        assert!(!activity.is_broken());
        assert!(!activity.mark_broken(), "no call holds it");
        assert!(activity.is_broken());
    }
}
