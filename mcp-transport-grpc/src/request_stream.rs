//! [`RequestStream`]: the client's side of the call — the outbound queue `send` fills, read by
//! tonic as the request stream. Until the server accepts the call it keeps a copy of what it
//! sent, so that a call refused for its credentials can be made again with new ones and the
//! same messages.
//! No response headers do not prove the server handled none of them (grpc-js and grpc-go send
//! headers with their first message; a handler may read a `tools/call`, then refuse it for its
//! scope), so a call is made again only when every message it sent is safe to send twice
//! ([`safe_to_resend`]). Ending the queue half-closes the call.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use mcp_core::sync::lock;
use mcp_core::types::methods;
use mcp_core::Message;
use mcp_wire::OutboundReceiver;
use tokio_stream::Stream;

use crate::proto::JsonRpcLine;

/// One line for the call, and whether the server may see it twice.
pub(crate) struct Outgoing {
    pub(crate) line: JsonRpcLine,
    pub(crate) replayable: bool,
}

impl Outgoing {
    /// `line` is `message` encoded.
    pub(crate) fn new(message: &Message, line: JsonRpcLine) -> Outgoing {
        Outgoing {
            line,
            replayable: safe_to_resend(message),
        }
    }
}

/// Whether a server handling `message` twice does no harm: notifications, and requests that
/// only read (the handshake, discovery, `ping`, lists, reads, prompts, completions). Anything
/// else — a `tools/call`, a subscription, a response — is never sent again.
pub(crate) fn safe_to_resend(message: &Message) -> bool {
    match message {
        Message::Notification(_) => true,
        Message::Request(request) => {
            let method = request.method.as_str();
            method.ends_with("/list")
                || [
                    methods::INITIALIZE,
                    methods::SERVER_DISCOVER,
                    methods::PING,
                    methods::RESOURCES_READ,
                    methods::RESOURCES_TEMPLATES_LIST,
                    methods::PROMPTS_GET,
                    methods::COMPLETION_COMPLETE,
                ]
                .contains(&method)
        }
        Message::Response(_) => false,
    }
}

/// The queue of one connection's outgoing lines, across the attempts of its call.
#[derive(Clone)]
pub(crate) struct RequestStream {
    state: Arc<Mutex<State>>,
}

struct State {
    queue: OutboundReceiver<Outgoing>,
    /// Which attempt of the call may read; streams of earlier attempts read nothing more.
    attempt: u32,
    /// Lines the current attempt sends before reading the queue again (a retried call's).
    replay: VecDeque<JsonRpcLine>,
    /// Copies of what the current attempt sent while the server had not accepted the call;
    /// `None` once it has, once the copies would exceed the budget, or once a line that is not
    /// safe to resend went out (no retry then).
    unaccepted: Option<Vec<JsonRpcLine>>,
    unaccepted_bytes: usize,
    budget: usize,
}

impl RequestStream {
    /// Reads `queue`; keeps at most `budget` bytes of copies for a retry.
    pub(crate) fn new(queue: OutboundReceiver<Outgoing>, budget: usize) -> RequestStream {
        RequestStream {
            state: Arc::new(Mutex::new(State {
                queue,
                attempt: 0,
                replay: VecDeque::new(),
                unaccepted: Some(Vec::new()),
                unaccepted_bytes: 0,
                budget,
            })),
        }
    }

    /// The request stream of the current attempt.
    pub(crate) fn stream(&self) -> AttemptStream {
        AttemptStream {
            attempt: lock(&self.state).attempt,
            state: self.state.clone(),
        }
    }

    /// The server accepted the call: nothing is kept any more.
    pub(crate) fn accepted(&self) {
        let mut state = lock(&self.state);
        state.unaccepted = None;
        state.unaccepted_bytes = 0;
    }

    /// Whether a new attempt could send everything again: all of it was kept, and all of it is
    /// safe to resend.
    pub(crate) fn can_retry(&self) -> bool {
        lock(&self.state).unaccepted.is_some()
    }

    /// Starts a new attempt that first sends again what the refused one sent. False when that
    /// is no longer possible.
    pub(crate) fn retry(&self) -> bool {
        let mut state = lock(&self.state);
        let Some(sent) = state.unaccepted.take() else {
            return false;
        };
        state.attempt += 1;
        let pending = std::mem::take(&mut state.replay);
        state.replay = sent.into_iter().chain(pending).collect();
        state.unaccepted = Some(Vec::new());
        state.unaccepted_bytes = 0;
        true
    }

    /// No more sends are taken (they fail at once); what is queued may still be read.
    pub(crate) fn close(&self) {
        lock(&self.state).queue.close();
    }
}

/// The request stream tonic reads for one attempt of the call.
pub(crate) struct AttemptStream {
    attempt: u32,
    state: Arc<Mutex<State>>,
}

impl Stream for AttemptStream {
    type Item = JsonRpcLine;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<JsonRpcLine>> {
        let mut state = lock(&self.state);
        if state.attempt != self.attempt {
            // A refused attempt's stream may still be polled while hyper winds it down.
            return Poll::Ready(None);
        }
        // Replayed lines were all safe to resend, or there would have been no retry.
        let (line, replayable) = match state.replay.pop_front() {
            Some(line) => (line, true),
            None => match state.queue.poll_recv(cx) {
                Poll::Ready(Some(Outgoing { line, replayable })) => (line, replayable),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            },
        };
        let size = line.line.len();
        let over_budget = state.unaccepted_bytes + size > state.budget;
        match &mut state.unaccepted {
            Some(_) if over_budget || !replayable => state.unaccepted = None,
            Some(copies) => {
                copies.push(line.clone());
                state.unaccepted_bytes += size;
            }
            None => {}
        }
        Poll::Ready(Some(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_stream::StreamExt;

    fn line(text: &str) -> Outgoing {
        Outgoing {
            line: JsonRpcLine {
                line: text.into(),
                ..JsonRpcLine::default()
            },
            replayable: true,
        }
    }

    fn request(method: &str) -> Message {
        Message::Request(mcp_core::Request::new(1, method, None))
    }

    #[test]
    fn only_reads_and_notifications_are_safe_to_resend() {
        for method in [
            "initialize",
            "server/discover",
            "ping",
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "prompts/get",
            "completion/complete",
        ] {
            assert!(safe_to_resend(&request(method)), "{method}");
        }
        for method in [
            "tools/call",
            "resources/subscribe",
            "subscriptions/listen",
            "logging/setLevel",
            "tasks/cancel",
        ] {
            assert!(!safe_to_resend(&request(method)), "{method}");
        }
        assert!(safe_to_resend(&Message::Notification(
            mcp_core::Notification::new("notifications/cancelled", None)
        )));
        assert!(!safe_to_resend(&Message::Response(
            mcp_core::Response::success(
                mcp_core::RequestId::Number(1),
                mcp_core::Payload::from_json_str("{}").unwrap()
            )
        )));
    }

    #[tokio::test]
    async fn a_line_not_safe_to_resend_gives_up_the_retry() {
        let (tx, rx) = mcp_wire::outbound::channel(8);
        let requests = RequestStream::new(rx, 1024);
        let mut stream = requests.stream();
        tx.send(line("read")).await.unwrap();
        tx.send(Outgoing {
            replayable: false,
            ..line("write")
        })
        .await
        .unwrap();
        stream.next().await.unwrap();
        assert!(requests.can_retry());
        stream.next().await.unwrap();
        assert!(!requests.can_retry());
        assert!(!requests.retry());
    }

    #[tokio::test]
    async fn a_retry_sends_again_what_the_refused_attempt_sent_then_the_rest() {
        let (tx, rx) = mcp_wire::outbound::channel(8);
        let requests = RequestStream::new(rx, 1024);
        let mut first = requests.stream();
        tx.send(line("a")).await.unwrap();
        tx.send(line("b")).await.unwrap();
        assert_eq!(first.next().await.unwrap().line, "a");
        assert_eq!(first.next().await.unwrap().line, "b");
        assert!(requests.can_retry());
        assert!(requests.retry());
        let mut second = requests.stream();
        // The refused attempt's stream reads nothing more.
        assert!(first.next().await.is_none());
        tx.send(line("c")).await.unwrap();
        let seen: Vec<String> = [
            second.next().await.unwrap(),
            second.next().await.unwrap(),
            second.next().await.unwrap(),
        ]
        .into_iter()
        .map(|l| l.line)
        .collect();
        assert_eq!(seen, ["a", "b", "c"]);
        requests.accepted();
        assert!(!requests.can_retry());
        assert!(!requests.retry());
        drop(tx);
        assert!(second.next().await.is_none(), "the queue's end half-closes");
    }

    #[tokio::test]
    async fn copies_over_the_budget_give_up_the_retry() {
        let (tx, rx) = mcp_wire::outbound::channel(8);
        let requests = RequestStream::new(rx, 4);
        let mut stream = requests.stream();
        tx.send(line("abc")).await.unwrap();
        tx.send(line("de")).await.unwrap();
        stream.next().await.unwrap();
        assert!(requests.can_retry());
        stream.next().await.unwrap();
        assert!(!requests.can_retry());
    }

    #[tokio::test]
    async fn a_closed_request_stream_refuses_sends_but_delivers_what_was_queued() {
        let (tx, rx) = mcp_wire::outbound::channel(8);
        let requests = RequestStream::new(rx, 1024);
        let mut stream = requests.stream();
        tx.send(line("queued")).await.unwrap();
        requests.close();
        assert!(tx.send(line("late")).await.is_err());
        assert_eq!(stream.next().await.unwrap().line, "queued");
        assert!(stream.next().await.is_none());
    }
}
