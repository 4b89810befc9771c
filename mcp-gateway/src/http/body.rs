//! Response bodies: a request's events as server-sent events, ending with its answer (or a
//! resumed stream's, or the standalone stream's, which end with the session).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tokio::sync::mpsc;

use super::hub::{Delivery, RequestGuard};

/// A stream of events as an HTTP body.
pub(crate) struct EventBody {
    first: Option<Bytes>,
    events: mpsc::Receiver<Delivery>,
    guard: Option<RequestGuard>,
    done: bool,
}

impl EventBody {
    /// `first` goes out before the events (the priming event, the first message).
    pub(crate) fn new(
        first: Bytes,
        events: mpsc::Receiver<Delivery>,
        guard: Option<RequestGuard>,
    ) -> EventBody {
        EventBody {
            first: (!first.is_empty()).then_some(first),
            events,
            guard,
            done: false,
        }
    }
}

impl Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        match self.events.poll_recv(cx) {
            Poll::Ready(Some(delivery)) => {
                if delivery.last {
                    self.done = true;
                    if let Some(guard) = self.guard.take() {
                        guard.answered();
                    }
                }
                Poll::Ready(Some(Ok(Frame::data(delivery.event))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
