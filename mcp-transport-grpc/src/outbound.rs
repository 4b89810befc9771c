//! [`Outbound`]: the client's side of the call — the queue `send` fills, read by tonic as the
//! request stream. Until the server accepts the call it keeps a copy of what it sent, so that
//! a call refused for its credentials can be made again with new ones and the same messages
//! (the server handled none of them). Ending the queue half-closes the call.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use mcp_core::sync::lock;
use tokio::sync::mpsc;
use tokio_stream::Stream;

use crate::proto::JsonRpcLine;

/// The queue of one connection's outgoing lines, across the attempts of its call.
#[derive(Clone)]
pub(crate) struct Outbound {
    state: Arc<Mutex<State>>,
}

struct State {
    queue: mpsc::Receiver<JsonRpcLine>,
    /// Which attempt of the call may read; streams of earlier attempts read nothing more.
    attempt: u32,
    /// Lines the current attempt sends before reading the queue again (a retried call's).
    replay: VecDeque<JsonRpcLine>,
    /// Copies of what the current attempt sent while the server had not accepted the call;
    /// `None` once it has, or once the copies would exceed the budget (no retry then).
    unaccepted: Option<Vec<JsonRpcLine>>,
    unaccepted_bytes: usize,
    budget: usize,
}

impl Outbound {
    /// Reads `queue`; keeps at most `budget` bytes of copies for a retry.
    pub(crate) fn new(queue: mpsc::Receiver<JsonRpcLine>, budget: usize) -> Outbound {
        Outbound {
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

    /// Whether a new attempt could send everything again.
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
        let line = match state.replay.pop_front() {
            Some(line) => line,
            None => match state.queue.poll_recv(cx) {
                Poll::Ready(Some(line)) => line,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            },
        };
        let size = line.line.len();
        let over_budget = state.unaccepted_bytes + size > state.budget;
        match &mut state.unaccepted {
            Some(_) if over_budget => state.unaccepted = None,
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

    fn line(text: &str) -> JsonRpcLine {
        JsonRpcLine {
            line: text.into(),
            ..JsonRpcLine::default()
        }
    }

    #[tokio::test]
    async fn a_retry_sends_again_what_the_refused_attempt_sent_then_the_rest() {
        let (tx, rx) = mpsc::channel(8);
        let outbound = Outbound::new(rx, 1024);
        let mut first = outbound.stream();
        tx.send(line("a")).await.unwrap();
        tx.send(line("b")).await.unwrap();
        assert_eq!(first.next().await.unwrap().line, "a");
        assert_eq!(first.next().await.unwrap().line, "b");
        assert!(outbound.can_retry());
        assert!(outbound.retry());
        let mut second = outbound.stream();
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
        outbound.accepted();
        assert!(!outbound.can_retry());
        assert!(!outbound.retry());
        drop(tx);
        assert!(second.next().await.is_none(), "the queue's end half-closes");
    }

    #[tokio::test]
    async fn copies_over_the_budget_give_up_the_retry() {
        let (tx, rx) = mpsc::channel(8);
        let outbound = Outbound::new(rx, 4);
        let mut stream = outbound.stream();
        tx.send(line("abc")).await.unwrap();
        tx.send(line("de")).await.unwrap();
        stream.next().await.unwrap();
        assert!(outbound.can_retry());
        stream.next().await.unwrap();
        assert!(!outbound.can_retry());
    }

    #[tokio::test]
    async fn a_closed_outbound_refuses_sends_but_delivers_what_was_queued() {
        let (tx, rx) = mpsc::channel(8);
        let outbound = Outbound::new(rx, 1024);
        let mut stream = outbound.stream();
        tx.send(line("queued")).await.unwrap();
        outbound.close();
        assert!(tx.send(line("late")).await.is_err());
        assert_eq!(stream.next().await.unwrap().line, "queued");
        assert!(stream.next().await.is_none());
    }
}
