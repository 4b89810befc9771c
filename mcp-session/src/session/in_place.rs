//! Requests a transport answers in the caller's task
//! ([`TransportSender::answer_in_place`](mcp_core::TransportSender::answer_in_place)): an
//! in-process server with no send at all, Streamable HTTP off the request's own POST; either
//! way no reader task or oneshot between the caller and the answer.
//!
//! What a request has on the ordinary path (`request.rs`) holds here too:
//! - one deadline from the moment it was issued, restarted by progress when asked for;
//! - progress callbacks: a request that wants progress is in the pending table while it runs,
//!   so the reader task finds it when the server's progress notifications arrive;
//! - cancellation: dropping the answer future ends the request; a byte transport's server is
//!   also sent `notifications/cancelled` (on a timeout, on the caller's drop, after a failure
//!   that may have reached it), as on the ordinary path; an in-process server sees the drop;
//! - a session that has ended refuses new requests, and the transport fails the ones in flight
//!   when the connection ends;
//! - a session the server forgot (HTTP 404) is made again and the request sent the ordinary way,
//!   within its deadline (`InPlaceOutcome::SessionExpired`).

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::pending::{PendingRequest, ProgressState};
use super::request::{human_duration, PendingGuard};
use super::{ClientSession, SessionShared};
use mcp_core::error::{Delivery, Error};
use mcp_core::jsonrpc::Payload;
use mcp_core::time::deadline_after;
use mcp_core::transport::{InPlaceAnswer, TransportErrorKind};

/// The deadlines of one request, as `round_trip_adding` computed them.
pub(super) struct Deadlines {
    /// When the request was issued.
    pub(super) started: Instant,
    /// How long it may take (between progress notifications, when they restart it).
    pub(super) timeout: std::time::Duration,
    /// Whether progress restarts the deadline.
    pub(super) reset_on_progress: bool,
    /// What nothing extends.
    pub(super) hard: Instant,
    /// The first deadline.
    pub(super) first: Instant,
}

/// How an answer awaited in place ended.
pub(super) enum InPlaceOutcome {
    /// The answer, or why there is none.
    Done(Result<Payload, Error>),
    /// The server forgot the session before it read the request (HTTP 404): after a new
    /// handshake the request may be sent again (the error, should that not be possible).
    SessionExpired(Error),
}

/// Keeps a request that wants progress in the pending table while its answer is awaited.
struct ProgressRegistration<'a> {
    shared: &'a SessionShared,
    id: i64,
}

impl Drop for ProgressRegistration<'_> {
    fn drop(&mut self) {
        self.shared.pending.remove(self.id);
    }
}

impl ClientSession {
    /// Awaits an answer given in place, within the request's deadlines.
    pub(super) async fn await_in_place(
        &self,
        method: &str,
        id: i64,
        answer: InPlaceAnswer,
        progress: Option<Arc<ProgressState>>,
        deadlines: Deadlines,
        cancellable: bool,
    ) -> InPlaceOutcome {
        let shared = &self.shared;
        // Only a request that wants progress needs the table: the reader looks its progress up
        // there. The table also refuses requests once the session has ended; without an entry,
        // ask it directly.
        let _registration = match &progress {
            Some(state) => {
                // The reply side stays unused: the answer comes from the future, which the
                // transport fails when the connection ends.
                let (reply, _unused) = oneshot::channel();
                let entry = PendingRequest {
                    reply,
                    progress: Some(state.clone()),
                };
                if let Err(e) = shared.pending.insert(id, entry) {
                    return InPlaceOutcome::Done(Err(e.with_delivery(Delivery::NotSent)));
                }
                Some(ProgressRegistration { shared, id })
            }
            None => {
                if let Some(reason) = shared.pending.closed_reason() {
                    return InPlaceOutcome::Done(Err(reason.with_delivery(Delivery::NotSent)));
                }
                None
            }
        };
        // Given up on (a timeout, the caller's drop, a failure after it may have reached the
        // server), the request is cancelled as on the ordinary path, when `cancellable`.
        // Declared after `_registration`, so dropped before it: a cancellation on drop still
        // finds the request's entry.
        let mut guard = PendingGuard {
            shared,
            id,
            sent: cancellable,
            cancellable,
            has_entry: progress.is_some(),
        };
        let mut answer = answer;
        let mut deadline = deadlines.first;
        let outcome = loop {
            match tokio::time::timeout_at(deadline, &mut answer).await {
                Ok(outcome) => break outcome,
                Err(_elapsed) => {
                    if deadlines.reset_on_progress {
                        let extended = progress
                            .as_ref()
                            .and_then(|p| p.last_update())
                            .map(|last| deadline_after(last, deadlines.timeout));
                        if let Some(next) = extended {
                            let next = next.min(deadlines.hard);
                            if next > deadline {
                                deadline = next;
                                continue;
                            }
                        }
                    }
                    // Returning drops the answer future: for an in-process server that is the
                    // cancellation; a byte transport's server is told.
                    guard.cancel("timeout");
                    return InPlaceOutcome::Done(Err(Error::timeout(format!(
                        "{method} got no response within {}",
                        human_duration(Instant::now() - deadlines.started)
                    ))
                    .with_delivery(Delivery::Sent)));
                }
            }
        };
        // Answered: nothing to cancel; failed: only if it may have reached the server.
        guard.sent = matches!(&outcome, Err(failed) if failed.may_have_been_delivered());
        InPlaceOutcome::Done(match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(shared.options.error_codes.error_of(error)),
            Err(failed) if failed.kind() == TransportErrorKind::SessionExpired => {
                return InPlaceOutcome::SessionExpired(Error::from(failed));
            }
            // The transport says whether the request reached the server.
            Err(failed) => Err(Error::from(failed)),
        })
    }
}
