//! The channel from the transport's streams to the session's reader ([`incoming_channel`]),
//! and how far the reader has got: an answer handed to its caller in place must not overtake
//! what its stream carried before it (progress, logs), so it waits until the reader has
//! dispatched those ([`Incoming::dispatched`]).
//!
//! Every item sent gets a ticket, its position in the channel: a slot is reserved first, then
//! the ticket taken and the item put in the slot under one lock, so tickets follow the
//! channel's order whatever the threads do. The reader asking for its next item means it has
//! dispatched every item it took before: once it has asked more times than a ticket, that item
//! is dispatched.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_core::{Message, TransportError, TransportReceiver};
use tokio::sync::{mpsc, Notify};

/// One item for the session's reader.
pub(crate) type Item = Result<Message, TransportError>;

/// The reader's progress through the channel.
#[derive(Default)]
struct Progress {
    /// Items sent; held while an item goes into its slot, so tickets follow the channel's order.
    tickets: Mutex<u64>,
    /// Times the reader asked for an item.
    asked: AtomicU64,
    /// Woken whenever the reader asks.
    asking: Notify,
}

/// The sending side (cloned by every stream of the transport).
#[derive(Clone)]
pub(crate) struct Incoming {
    sender: mpsc::Sender<Item>,
    progress: Arc<Progress>,
}

/// A channel of `capacity` items to the session's reader.
pub(crate) fn incoming_channel(capacity: usize) -> (Incoming, HttpReceiver) {
    let (sender, receiver) = mpsc::channel(capacity);
    let progress = Arc::new(Progress::default());
    (
        Incoming {
            sender,
            progress: progress.clone(),
        },
        HttpReceiver { receiver, progress },
    )
}

impl Incoming {
    /// Queues `item` for the reader, waiting while the channel is full; the item's ticket, or
    /// the item back when the reader is gone.
    pub(crate) async fn send(&self, item: Item) -> Result<u64, mpsc::error::SendError<Item>> {
        let Ok(slot) = self.sender.reserve().await else {
            return Err(mpsc::error::SendError(item));
        };
        let mut tickets = self
            .progress
            .tickets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *tickets += 1;
        slot.send(item);
        Ok(*tickets)
    }

    /// Whether the reader is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// Waits until the reader has dispatched the item with `ticket` (and all before it), or is
    /// gone.
    pub(crate) async fn dispatched(&self, ticket: u64) {
        let progress = &self.progress;
        loop {
            let asking = progress.asking.notified();
            let mut asking = std::pin::pin!(asking);
            asking.as_mut().enable();
            if progress.asked.load(Ordering::Acquire) > ticket {
                return;
            }
            tokio::select! {
                _ = asking => {}
                _ = self.sender.closed() => return,
            }
        }
    }
}

/// The receiving half of the HTTP transports: what their streams forward, in order.
pub struct HttpReceiver {
    receiver: mpsc::Receiver<Item>,
    progress: Arc<Progress>,
}

#[async_trait]
impl TransportReceiver for HttpReceiver {
    async fn receive(&mut self) -> Option<Item> {
        // Asked again: what it took before has been dispatched.
        self.progress.asked.fetch_add(1, Ordering::AcqRel);
        self.progress.asking.notify_waiters();
        self.receiver.recv().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcp_core::jsonrpc::Notification;

    use super::*;

    fn note() -> Item {
        Ok(Notification::new("notifications/message", None).into())
    }

    #[tokio::test]
    async fn an_item_is_dispatched_once_the_reader_asks_for_the_next() {
        let (incoming, mut receiver) = incoming_channel(8);
        let first = incoming.send(note()).await.unwrap();
        let second = incoming.send(note()).await.unwrap();
        assert_eq!((first, second), (1, 2));
        let waiting = tokio::spawn({
            let incoming = incoming.clone();
            async move { incoming.dispatched(second).await }
        });
        // Taking both items is not yet dispatching the second.
        assert!(receiver.receive().await.is_some());
        assert!(receiver.receive().await.is_some());
        // (A current-thread runtime: the waiter runs while this task yields.)
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        // Asking for a third is.
        let third = tokio::spawn(async move {
            let item = receiver.receive().await;
            (receiver, item)
        });
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("released once the reader asked again")
            .unwrap();
        incoming.send(note()).await.unwrap();
        assert!(third.await.unwrap().1.is_some());
    }

    /// Many streams sending at once on several threads: each ticket is its item's position.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn tickets_follow_the_channel_order() {
        let (incoming, mut receiver) = incoming_channel(4);
        let issued = Arc::new(Mutex::new(Vec::new()));
        let senders: Vec<_> = (0..8u64)
            .map(|stream| {
                let incoming = incoming.clone();
                let issued = issued.clone();
                tokio::spawn(async move {
                    for n in 0..200u64 {
                        let note = Notification::new(
                            "notifications/message",
                            Some(mcp_core::Payload::Value(
                                serde_json::json!({ "stream": stream, "n": n }),
                            )),
                        );
                        let ticket = incoming.send(Ok(note.into())).await.unwrap();
                        issued.lock().unwrap().push(((stream, n), ticket));
                    }
                })
            })
            .collect();
        drop(incoming);
        let mut position = std::collections::HashMap::new();
        while let Some(item) = receiver.receive().await {
            let Ok(Message::Notification(note)) = item else {
                panic!("not a notification");
            };
            let params = note.params.unwrap().into_value().unwrap();
            let key = (
                params["stream"].as_u64().unwrap(),
                params["n"].as_u64().unwrap(),
            );
            position.insert(key, position.len() as u64 + 1);
        }
        for sender in senders {
            sender.await.unwrap();
        }
        let issued = issued.lock().unwrap();
        assert_eq!(issued.len(), 8 * 200);
        for (key, ticket) in issued.iter() {
            assert_eq!(position[key], *ticket, "{key:?}");
        }
    }

    #[tokio::test]
    async fn a_reader_that_is_gone_releases_the_wait() {
        let (incoming, receiver) = incoming_channel(8);
        let ticket = incoming.send(note()).await.unwrap();
        drop(receiver);
        tokio::time::timeout(Duration::from_secs(5), incoming.dispatched(ticket))
            .await
            .expect("released");
        assert!(incoming.send(note()).await.is_err());
    }
}
