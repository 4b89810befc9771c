//! How calls get a server's session: at once when it is ready, or waited for within their own
//! deadline while it starts, reconnects or is probed; and waiting for the state to change.

use std::time::Duration;

use mcp_core::{Delivery, Error, ErrorKind};
use mcp_session::ClientSession;
use tokio::time::Instant;

use super::Supervisor;
use crate::router::Placement;
use crate::status::ServerStatus;

impl Supervisor {
    /// Waits until the start-up attempt has finished (ready or not), up to `limit`.
    pub(crate) async fn started(&self, limit: Duration) {
        let mut rx = self.state.subscribe();
        let _ = tokio::time::timeout(
            limit,
            rx.wait_for(|s| !matches!(s.status, ServerStatus::Starting)),
        )
        .await;
    }

    /// The session to send a call on: at once when ready; waits (until `deadline`) while the
    /// server is starting, reconnecting or probing; fails at once when it is unavailable, needs
    /// credentials, or is stopped. Errors say the call was never sent.
    pub(crate) async fn ready_session(&self, deadline: Instant) -> Result<ClientSession, Error> {
        self.ready_session_at(deadline)
            .await
            .map(|(session, _)| session)
    }

    /// [`ready_session`](Self::ready_session), with where the session is.
    pub(crate) async fn ready_session_at(
        &self,
        deadline: Instant,
    ) -> Result<(ClientSession, Placement), Error> {
        if let Some(ready) = self.ready_now_at() {
            return Ok(ready);
        }
        let mut rx = self.state.subscribe();
        loop {
            let snapshot = rx.borrow_and_update().clone();
            let status = snapshot.status;
            let error = match (&status, snapshot.session) {
                (ServerStatus::Ready, Some(session)) if !session.is_closed() => {
                    return Ok((session, snapshot.placement))
                }
                (status, _) if status.is_connecting() || status.is_ready() => {
                    // Ready with a closed session: the supervisor is about to notice.
                    match tokio::time::timeout_at(deadline, rx.changed()).await {
                        Ok(Ok(())) => continue,
                        Ok(Err(_)) => Error::new(
                            ErrorKind::ServerUnavailable,
                            format!("server \"{}\" is stopped", self.name),
                        ),
                        Err(_) => Error::timeout(format!(
                            "server \"{}\" is {status}; it was not back within the call's deadline",
                            self.name
                        )),
                    }
                }
                (ServerStatus::NeedsCredentials { reason }, _) => Error::new(
                    ErrorKind::Auth,
                    format!("server \"{}\" needs credentials: {reason}", self.name),
                ),
                // A server that answered, but not as MCP, is a protocol failure, not one that
                // is down: the call says so (`mcph` exits 7, not 4).
                (ServerStatus::Unavailable { reason, kind }, _) => Error::new(
                    match kind {
                        ErrorKind::Protocol => ErrorKind::Protocol,
                        _ => ErrorKind::ServerUnavailable,
                    },
                    format!(
                        "server \"{}\" is unavailable: {reason}; it is tried again every {}s",
                        self.name,
                        self.probe_interval.as_secs().max(1)
                    ),
                ),
                (status, _) => Error::new(
                    ErrorKind::ServerUnavailable,
                    format!("server \"{}\" is {status}", self.name),
                ),
            };
            return Err(error.with_delivery(Delivery::NotSent));
        }
    }

    /// The session, when the server is ready right now (no waiting, no subscription).
    pub(crate) fn ready_now(&self) -> Option<ClientSession> {
        self.ready_now_at().map(|(session, _)| session)
    }

    /// [`ready_now`](Self::ready_now), with where the session is.
    pub(crate) fn ready_now_at(&self) -> Option<(ClientSession, Placement)> {
        let state = self.state.borrow();
        match (&state.status, &state.session) {
            (ServerStatus::Ready, Some(session)) if !session.is_closed() => {
                Some((session.clone(), state.placement))
            }
            _ => None,
        }
    }

    /// Waits until the state changes, or `until`.
    pub(crate) async fn changed_before(&self, until: Instant) {
        let mut rx = self.state.subscribe();
        rx.borrow_and_update();
        let _ = tokio::time::timeout_at(until, rx.changed()).await;
    }
}
