//! Faults on `tools/call` POSTs (`--http-stall-first`, `--http-trickle-first`,
//! `--http-endless-error-first`): a server that accepted the connection and then hangs, one that
//! sends headers and trickles a body that never ends, one that answers an error with an endless
//! body. Counted server-wide over `tools/call` POSTs, in that order; the faulty requests are never
//! handled (nothing executes), and once the counts are used up the server behaves.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::{Body, Frame};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use super::HttpResponse;
use crate::options::ServerOptions;

/// How often a trickling body sends its next byte.
const TRICKLE_EVERY: Duration = Duration::from_millis(100);
/// One chunk of an endless error body.
const ENDLESS_CHUNK: usize = 16 * 1024;

/// Which fault a `tools/call` POST gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallFault {
    Stall,
    Trickle,
    EndlessError,
}

impl CallFault {
    /// The name logged in the `--event-log`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CallFault::Stall => "stall",
            CallFault::Trickle => "trickle",
            CallFault::EndlessError => "endless_error",
        }
    }
}

/// Counts `tools/call` POSTs and hands out the configured faults.
#[derive(Debug, Default)]
pub(crate) struct CallFaults {
    calls: AtomicU64,
}

impl CallFaults {
    /// The fault for the next `tools/call` POST, if any.
    pub(crate) fn next(&self, options: &ServerOptions) -> Option<CallFault> {
        let stall = options.http_stall_first;
        let trickle = stall + options.http_trickle_first;
        let endless = trickle + options.http_endless_error_first;
        if endless == 0 {
            return None;
        }
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        if n < stall {
            Some(CallFault::Stall)
        } else if n < trickle {
            Some(CallFault::Trickle)
        } else if n < endless {
            Some(CallFault::EndlessError)
        } else {
            None
        }
    }
}

/// The response of a faulty POST. A stall never returns (the connection stays open until the
/// client drops it or the server stops).
pub(crate) async fn respond(fault: CallFault, json_answers: bool) -> HttpResponse {
    match fault {
        CallFault::Stall => std::future::pending().await,
        CallFault::Trickle => {
            let (content_type, byte): (&'static str, &'static [u8]) = if json_answers {
                ("application/json", b" ")
            } else {
                ("text/event-stream", b":\n")
            };
            let mut interval = tokio::time::interval(TRICKLE_EVERY);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            with_body(
                StatusCode::OK,
                content_type,
                UnsyncBoxBody::new(Trickle { interval, byte }),
            )
        }
        CallFault::EndlessError => with_body(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain",
            UnsyncBoxBody::new(Endless {
                chunk: Bytes::from(vec![b'x'; ENDLESS_CHUNK]),
            }),
        ),
    }
}

fn with_body(
    status: StatusCode,
    content_type: &'static str,
    body: UnsyncBoxBody<Bytes, Infallible>,
) -> HttpResponse {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// One byte every [`TRICKLE_EVERY`], forever.
struct Trickle {
    interval: tokio::time::Interval,
    byte: &'static [u8],
}

impl Body for Trickle {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let byte = self.byte;
        self.interval
            .poll_tick(cx)
            .map(|_| Some(Ok(Frame::data(Bytes::from_static(byte)))))
    }
}

/// The same chunk, as fast as the client reads, forever.
struct Endless {
    chunk: Bytes,
}

impl Body for Endless {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(Some(Ok(Frame::data(self.chunk.clone()))))
    }
}
