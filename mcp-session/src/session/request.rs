//! The request path: one deadline from the moment a request is issued, the send (with replays
//! after session expiry), the wait for the response, and cancellation on timeout or drop.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::in_place::{Deadlines, InPlaceOutcome};
use super::meta::with_request_meta;
use super::pending::{PendingRequest, ProgressState};
use super::reader::OutboxItem;
use super::{ClientSession, RequestOptions, SessionShared};
use mcp_core::error::{Delivery, Error};
use mcp_core::jsonrpc::{Notification, Payload, Request, RequestId};
use mcp_core::time::deadline_after;
use mcp_core::transport::RequestMeta;
use mcp_core::types::{methods, CancelledNotificationParams};

/// What the session adds to a request's `_meta`.
#[derive(Clone, Copy)]
pub(super) struct MetaToAdd {
    /// `progressToken` (every request but `initialize`).
    pub(super) progress_token: bool,
    /// The modern protocol fields.
    pub(super) modern: bool,
}

impl MetaToAdd {
    /// The legacy handshake: nothing added.
    pub(super) const HANDSHAKE: MetaToAdd = MetaToAdd {
        progress_token: false,
        modern: false,
    };
}

impl ClientSession {
    /// Issues request `method` in the session's era and waits for its result.
    pub(super) async fn round_trip(
        &self,
        method: &str,
        params: Option<Payload>,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        let shape = MetaToAdd {
            progress_token: true,
            modern: self.is_modern(),
        };
        self.round_trip_adding(method, params, options, shape).await
    }

    /// Issues request `method` and waits for its result. Its deadline starts now: waiting for
    /// the transport to accept it counts, as does every re-initialization it waits for.
    pub(super) async fn round_trip_adding(
        &self,
        method: &str,
        params: Option<Payload>,
        options: RequestOptions,
        shape: MetaToAdd,
    ) -> Result<Payload, Error> {
        let shared = &self.shared;
        let started = Instant::now();
        let timeout = options.timeout.unwrap_or(shared.options.request_timeout);
        let reset = options
            .reset_timeout_on_progress
            .unwrap_or(shared.options.reset_timeout_on_progress);
        let mut hard_deadline = if reset {
            let max_total = options
                .max_total_time
                .unwrap_or(shared.options.max_request_time);
            deadline_after(started, max_total)
        } else {
            deadline_after(started, timeout)
        };
        if let Some(deadline) = options.deadline {
            hard_deadline = hard_deadline.min(deadline);
        }
        let mut deadline = deadline_after(started, timeout).min(hard_deadline);

        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let additions = shared.meta_additions(
            shape.progress_token.then_some(id),
            shape.modern,
            options.trace_context.as_ref(),
        );
        let progress = (reset || options.on_progress.is_some())
            .then(|| Arc::new(ProgressState::new(options.on_progress.clone())));
        // A transport may answer in the caller's task instead (in_place.rs): an in-process one
        // given the `_meta` additions as values, a byte transport given them spliced in as
        // text; otherwise they are spliced in and the request sent.
        let capabilities = shared.sender.capabilities();
        let values = capabilities.prefers_values;
        let (params, meta) = if values {
            (params, additions.as_values())
        } else {
            (
                with_request_meta(params, &additions)?,
                RequestMeta::default(),
            )
        };
        let request = Request::new(id, method, params);
        // Where the server can forget the session (HTTP), a copy for sending again after a new
        // handshake, as the ordinary path keeps one (`send_replaying`).
        let generation = shared.session_generation.load(Ordering::Acquire);
        let replay = (!values && capabilities.sessions_can_expire && method != methods::INITIALIZE)
            .then(|| request.params.clone());
        let mut expired = None;
        let params = match shared.sender.answer_in_place(request, meta) {
            Ok(answer) => {
                let deadlines = Deadlines {
                    started,
                    timeout,
                    reset_on_progress: reset,
                    hard: hard_deadline,
                    first: deadline,
                };
                // A byte transport's server hears of a request the caller gave up on, as on
                // the ordinary path; an in-process one sees the future dropped.
                let cancellable = !values && is_cancellable(method);
                let answered = self.await_in_place(
                    method,
                    id,
                    answer,
                    progress.clone(),
                    deadlines,
                    cancellable,
                );
                match (answered.await, replay) {
                    (InPlaceOutcome::Done(outcome), _) => return outcome,
                    // A new handshake, then the ordinary way, which counts this as its first
                    // replay — all within the request's deadline.
                    (InPlaceOutcome::SessionExpired(_), Some(params)) => {
                        expired = Some(generation);
                        params
                    }
                    (InPlaceOutcome::SessionExpired(error), None) => return Err(error),
                }
            }
            Err(request) if values => with_request_meta(request.params, &additions)?,
            Err(request) => request.params,
        };
        let (reply, response) = oneshot::channel();
        shared
            .pending
            .insert(
                id,
                PendingRequest {
                    reply,
                    progress: progress.clone(),
                },
            )
            .map_err(|e| e.with_delivery(Delivery::NotSent))?;
        let mut guard = PendingGuard {
            shared,
            id,
            sent: false,
            cancellable: is_cancellable(method),
            has_entry: true,
        };
        let request = Request::new(id, method, params);

        // Refused in place because the server forgot the session: a new handshake first, under
        // the same deadline, the request still unsent (nothing to cancel, and a timeout here
        // means it never left); it counts as the first replay.
        let mut replays = 0;
        if let Some(generation) = expired {
            replays = 1;
            tracing::info!(
                method,
                "the server forgot the session; initializing a new one"
            );
            let handshake = Box::pin(self.reinitialize(generation));
            match tokio::time::timeout_at(deadline, handshake).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e.with_delivery(Delivery::NotSent)),
                Err(_elapsed) => {
                    return Err(Error::timeout(format!(
                        "{method} got no response within {}: the server forgot the session, and a new one was not made in time",
                        human_duration(Instant::now() - started)
                    ))
                    .with_delivery(Delivery::NotSent));
                }
            }
        }

        // Marked sent before the await: a caller that gives up mid-send still cancels.
        guard.sent = true;
        let sending = self.send_replaying(method, request, replays);
        match tokio::time::timeout_at(deadline, sending).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                guard.sent = e.delivery() != Some(Delivery::NotSent);
                return Err(e);
            }
            Err(_elapsed) => {
                guard.cancel("timeout");
                return Err(Error::timeout(format!(
                    "{method} got no response within {}: the request could not even be sent (the server is not reading its input or not answering the connection)",
                    human_duration(Instant::now() - started)
                ))
                .with_delivery(Delivery::Sent));
            }
        }

        tokio::pin!(response);
        loop {
            match tokio::time::timeout_at(deadline, &mut response).await {
                Ok(outcome) => {
                    guard.sent = false;
                    let outcome = match outcome {
                        Ok(outcome) => outcome,
                        Err(_) => Err(shared.end_reason()),
                    };
                    // The request was sent: a failure without a stage of its own (the
                    // connection ended) may have followed the server acting on it.
                    return outcome.map_err(|e| match e.delivery() {
                        None => e.with_delivery(Delivery::Sent),
                        Some(_) => e,
                    });
                }
                Err(_elapsed) => {
                    if reset {
                        let extended = progress
                            .as_ref()
                            .and_then(|p| p.last_update())
                            .map(|last| deadline_after(last, timeout));
                        if let Some(next) = extended {
                            let next = next.min(hard_deadline);
                            if next > deadline {
                                deadline = next;
                                continue;
                            }
                        }
                    }
                    guard.cancel("timeout");
                    return Err(Error::timeout(format!(
                        "{method} got no response within {}",
                        human_duration(Instant::now() - started)
                    ))
                    .with_delivery(Delivery::Sent));
                }
            }
        }
    }
}

/// Whether the server hears `notifications/cancelled` for a request of `method` given up on:
/// not for the handshake, nor the probe (a legacy server that stays silent on it should not
/// hear about a request it never knew).
fn is_cancellable(method: &str) -> bool {
    method != methods::INITIALIZE && method != methods::SERVER_DISCOVER
}

/// Removes a request from the pending table if its future ends early, and tells the server.
pub(super) struct PendingGuard<'a> {
    pub(super) shared: &'a SessionShared,
    pub(super) id: i64,
    /// The request may have reached the server (cancel it when given up on).
    pub(super) sent: bool,
    pub(super) cancellable: bool,
    /// The request is in the pending table (an answer awaited in place without progress is
    /// not): only then is it cancelled, since an answer that came meanwhile took it out.
    pub(super) has_entry: bool,
}

impl PendingGuard<'_> {
    pub(super) fn cancel(&mut self, reason: &str) {
        let was_pending = if self.has_entry {
            self.shared.pending.remove(self.id)
        } else {
            self.shared.pending.closed_reason().is_none()
        };
        if was_pending && self.sent && self.cancellable {
            let params = CancelledNotificationParams {
                request_id: RequestId::Number(self.id),
                reason: Some(reason.to_owned()),
            };
            if let Ok(params) = Payload::from_serialize(&params) {
                let note = Notification::new(methods::NOTIFICATION_CANCELLED, Some(params));
                self.shared.queue(OutboxItem::Send(note.into()));
            }
        }
        self.sent = false;
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.sent {
            self.cancel("the client no longer waits for this request");
        } else {
            self.shared.pending.remove(self.id);
        }
    }
}

pub(crate) use mcp_core::time::human_duration;
