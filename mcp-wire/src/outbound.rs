//! The outbound queue of a stream transport (stdio, WebSocket, gRPC): the bounded queue of
//! encoded messages that `TransportSender::send` fills and the transport's writer drains.
//!
//! - **Backpressure**: [`OutboundQueue::send`] waits while the queue is full, so the deadline
//!   the session puts on a request covers the time it waits here.
//! - **Order**: messages leave in the order they were queued.
//! - **Close**: [`OutboundQueue::close`] is synchronous and idempotent. A send after it fails
//!   at once; what was queued before it is still delivered, then the receiver sees the end (the
//!   writer finishes its stream: EOF on stdin, a close frame, a gRPC half-close). A send still
//!   waiting for room when `close` is called may get in while the writer drains, or fail; every
//!   send that succeeded is delivered unless the writer stops early. How long the writer may
//!   take is its owner's bound ([`OwnedTask::finish`](crate::OwnedTask::finish)).
//! - **The end**: dropping the queue ends the receiver the same way; dropping the receiver (or
//!   [`OutboundReceiver::close`]) makes every later send fail.
//! - **Batches**: [`OutboundReceiver::queued_behind`] takes what is already queued behind the
//!   message just received, for a writer that can write several at once (one syscall, one
//!   flush).
//!
//! The errors a transport returns are its own: it maps [`OutboundClosed`] to the reason its
//! connection stopped taking messages.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (queue, mut receiver) = mcp_wire::outbound::channel::<Vec<u8>>(8);
//! queue.send(b"{}\n".to_vec()).await.expect("the queue is open");
//! queue.close();
//! assert!(queue.send(b"{}\n".to_vec()).await.is_err());
//! assert_eq!(receiver.recv().await, Some(b"{}\n".to_vec()));
//! assert_eq!(receiver.recv().await, None);
//! # }
//! ```

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use mcp_core::sync::lock;
use tokio::sync::mpsc::{self, error::TryRecvError, OwnedPermit};

/// A queue of at most `capacity` messages (at least one): the sending side for the transport's
/// sender, the receiving side for its writer.
pub fn channel<T>(capacity: usize) -> (OutboundQueue<T>, OutboundReceiver<T>) {
    // One slot more than asked for, kept for the close marker: closing never waits for room.
    let (sender, receiver) = mpsc::channel(capacity.max(1) + 1);
    let close_permit = sender
        .clone()
        .try_reserve_owned()
        .expect("a new channel has room for the close marker");
    let close_permit = Arc::new(Mutex::new(Some(close_permit)));
    let receiver = OutboundReceiver {
        receiver,
        close_permit: Arc::downgrade(&close_permit),
    };
    let queue = OutboundQueue {
        sender,
        close_permit,
        closed: AtomicBool::new(false),
    };
    (queue, receiver)
}

/// What travels through the channel: a message, or the mark `close` leaves behind the last
/// message queued before it.
enum Slot<T> {
    Message(T),
    Close,
}

/// The queue no longer takes messages: it was closed, or its receiver is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboundClosed;

impl std::fmt::Display for OutboundClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the outbound queue is closed")
    }
}

impl std::error::Error for OutboundClosed {}

/// The sending side: shared by the transport's sender (`send` takes `&self`).
pub struct OutboundQueue<T> {
    sender: mpsc::Sender<Slot<T>>,
    /// The slot kept for the close marker; taken by the first `close` of either side.
    close_permit: ClosePermit<T>,
    closed: AtomicBool,
}

impl<T> OutboundQueue<T> {
    /// Queues `message`, waiting while the queue is full. Fails once the queue is closed or its
    /// receiver is gone (also while waiting for room).
    pub async fn send(&self, message: T) -> Result<(), OutboundClosed> {
        if self.closed.load(Ordering::Acquire) {
            return Err(OutboundClosed);
        }
        self.sender
            .send(Slot::Message(message))
            .await
            .map_err(|_| OutboundClosed)
    }

    /// Stops taking messages; the receiver gets what was queued, then the end. Idempotent;
    /// never waits.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Some(permit) = lock(&self.close_permit).take() {
            permit.send(Slot::Close);
        }
    }

    /// Whether sends fail now: the queue was closed, or its receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.sender.is_closed()
    }
}

impl<T> std::fmt::Debug for OutboundQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundQueue")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// The receiving side, owned by the transport's writer.
pub struct OutboundReceiver<T> {
    receiver: mpsc::Receiver<Slot<T>>,
    /// The queue's close slot, given back by `close`: the channel ends only once every slot
    /// is free. Weak, as the slot holds a sender: the queue's drop must still end the channel.
    close_permit: Weak<Mutex<Option<OwnedPermit<Slot<T>>>>>,
}

/// The slot kept for the close marker; whichever side closes first takes it.
type ClosePermit<T> = Arc<Mutex<Option<OwnedPermit<Slot<T>>>>>;

impl<T> OutboundReceiver<T> {
    /// The next message, in order; `None` once the queue was closed (or dropped) and
    /// everything queued before has been taken. Cancel-safe.
    pub fn recv(&mut self) -> impl Future<Output = Option<T>> + '_ {
        std::future::poll_fn(|cx| self.poll_recv(cx))
    }

    /// [`recv`](Self::recv) for a writer that is itself polled (a request stream).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        loop {
            match self.receiver.poll_recv(cx) {
                Poll::Ready(Some(Slot::Message(message))) => return Poll::Ready(Some(message)),
                Poll::Ready(Some(Slot::Close)) => self.reached_close(),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// The next message if one is queued now.
    #[inline] // On every message of a writer's loop.
    pub fn try_recv(&mut self) -> Option<T> {
        loop {
            match self.receiver.try_recv() {
                Ok(Slot::Message(message)) => return Some(message),
                Ok(Slot::Close) => self.reached_close(),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return None,
            }
        }
    }

    /// The messages queued behind `first` (just received) that join it in one batch: while
    /// the batch holds fewer than `max_bytes` bytes (the last one may take it over).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let (queue, mut receiver) = mcp_wire::outbound::channel::<Vec<u8>>(8);
    /// for line in ["a\n", "b\n"] {
    ///     queue.send(line.into()).await.expect("the queue is open");
    /// }
    /// let first = receiver.recv().await.expect("a message");
    /// let mut write = first.clone();
    /// for more in receiver.queued_behind(&first, 1 << 20) {
    ///     write.extend_from_slice(&more);
    /// }
    /// assert_eq!(write, b"a\nb\n"); // one write for both
    /// # }
    /// ```
    pub fn queued_behind(&mut self, first: &T, max_bytes: usize) -> Queued<'_, T>
    where
        T: AsRef<[u8]>,
    {
        Queued {
            bytes: first.as_ref().len(),
            receiver: self,
            max_bytes,
        }
    }

    /// Refuses every later send (they fail, waiting ones too); what is queued can still be
    /// taken. For a writer that stops early (its connection ended).
    pub fn close(&mut self) {
        self.receiver.close();
        if let Some(permit) = self.close_permit.upgrade() {
            drop(lock(&permit).take());
        }
    }

    /// The close marker was read: sends that got in before it are still delivered (a send
    /// racing `close`), waiting ones now fail.
    fn reached_close(&mut self) {
        self.receiver.close();
    }
}

/// The messages queued behind the first of a batch (see [`OutboundReceiver::queued_behind`]).
/// Lazy: a message is taken from the queue when the writer asks for it, so one that arrives
/// while the batch is being written joins it, and what a writer that stops early never asked
/// for stays queued.
pub struct Queued<'a, T> {
    receiver: &'a mut OutboundReceiver<T>,
    bytes: usize,
    max_bytes: usize,
}

impl<T: AsRef<[u8]>> Iterator for Queued<'_, T> {
    type Item = T;

    #[inline] // On every message of a writer's loop.
    fn next(&mut self) -> Option<T> {
        if self.bytes >= self.max_bytes {
            return None;
        }
        let message = self.receiver.try_recv()?;
        self.bytes += message.as_ref().len();
        Some(message)
    }
}

impl<T> std::fmt::Debug for Queued<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queued")
            .field("bytes", &self.bytes)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl<T> std::fmt::Debug for OutboundReceiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundReceiver").finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "outbound_tests.rs"]
mod tests;
