//! Answering in the caller's task (`TransportSender::answer_in_place`): the request is read
//! and its handler started at once; the future the session awaits runs the handler, ends with
//! the connection, and resolves only once what the client was sent meanwhile has been
//! dispatched.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use mcp_core::jsonrpc::{ErrorObject, Payload, Request};
use mcp_core::transport::InPlaceAnswer;
use mcp_core::TransportError;

use crate::call::{drive, Run};
use crate::connection::Connection;
use crate::dispatch::{self, Answer};
use crate::era::SessionMeta;

impl Connection {
    /// Answers a request in the caller's task (the in-place path): the request is read and
    /// its handler started at once; the returned future runs the handler, ends with the
    /// connection, and resolves only once what the handler sent has been dispatched.
    pub(crate) fn answer_in_place(
        self: &Arc<Self>,
        request: Request,
        session: SessionMeta,
    ) -> InPlaceAnswer {
        if self.is_ended() {
            return Box::pin(std::future::ready(Err(self.failure(false))));
        }
        let answer = match dispatch::answer(self, request, Some(&session)) {
            Answer::Now(outcome) => outcome,
            Answer::Later(run) => return Box::pin(self.clone().finish_in_place(run)),
            Answer::Listen(_) => Err(ErrorObject::internal(
                "subscriptions/listen is served on the ordinary path",
            )),
        };
        Box::pin(std::future::ready(Ok(answer)))
    }

    async fn finish_in_place(
        self: Arc<Self>,
        run: Run,
    ) -> Result<Result<Payload, ErrorObject>, TransportError> {
        let mut driving = std::pin::pin!(drive(run));
        // Most handlers finish on their first poll: only a pending one needs to watch for the
        // connection's end.
        let first = std::future::poll_fn(|cx| Poll::Ready(driving.as_mut().poll(cx))).await;
        let driven = match first {
            Poll::Ready(driven) => driven,
            Poll::Pending => tokio::select! {
                biased;
                driven = &mut driving => driven,
                _ = self.ended() => return Err(self.failure(true)),
            },
        };
        if driven.queued_meanwhile {
            // Rare, and kept out of this future's size.
            Box::pin(self.flush()).await;
        }
        Ok(driven.answer)
    }
}
