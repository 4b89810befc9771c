//! An in-memory transport: messages pass by move through channels, never serialized.
//!
//! [`ChannelTransport::pair`] returns the client side (a [`Transport`]) and the [`ServerEnd`] a
//! server in the same process reads and writes. The in-process server crate builds on it, and
//! tests use it to play a server message by message.

use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};

use mcp_core::jsonrpc::Message;
use mcp_core::transport::{
    Transport, TransportCapabilities, TransportError, TransportErrorKind, TransportReceiver,
    TransportSender,
};

/// The client side of an in-memory connection.
pub struct ChannelTransport {
    sender: ChannelSender,
    receiver: ChannelReceiver,
}

/// The server side of an in-memory connection.
pub struct ServerEnd {
    /// Messages from the client; ends when the client closes or drops its side.
    pub incoming: mpsc::Receiver<Message>,
    /// Messages to the client; dropping it ends the connection (the client sees a clean close).
    pub outgoing: mpsc::Sender<Message>,
}

impl ChannelTransport {
    /// A connected pair; each direction buffers up to `capacity` messages (backpressure beyond).
    pub fn pair(capacity: usize) -> (ChannelTransport, ServerEnd) {
        let (to_server, incoming) = mpsc::channel(capacity.max(1));
        let (outgoing, from_server) = mpsc::channel(capacity.max(1));
        let (closed_tx, closed_rx) = watch::channel(false);
        let transport = ChannelTransport {
            sender: ChannelSender {
                to_server: Mutex::new(Some(to_server)),
                closed: closed_tx,
            },
            receiver: ChannelReceiver {
                from_server,
                closed: closed_rx,
            },
        };
        (transport, ServerEnd { incoming, outgoing })
    }
}

impl Transport for ChannelTransport {
    type Sender = ChannelSender;
    type Receiver = ChannelReceiver;

    fn split(self) -> (ChannelSender, ChannelReceiver) {
        (self.sender, self.receiver)
    }
}

/// Sending half of a [`ChannelTransport`].
pub struct ChannelSender {
    to_server: Mutex<Option<mpsc::Sender<Message>>>,
    closed: watch::Sender<bool>,
}

/// Receiving half of a [`ChannelTransport`].
pub struct ChannelReceiver {
    from_server: mpsc::Receiver<Message>,
    closed: watch::Receiver<bool>,
}

fn closed_error() -> TransportError {
    TransportError::fatal(
        TransportErrorKind::Closed,
        "the in-memory connection is closed",
    )
}

#[async_trait]
impl TransportSender for ChannelSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        // Clone the handle out of the lock: the lock is never held across the await.
        let tx = self
            .to_server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match tx {
            Some(tx) => tx.send(message).await.map_err(|_| closed_error()),
            None => Err(closed_error()),
        }
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.to_server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.closed.send_replace(true);
        Ok(())
    }

    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("inproc").with_values_preferred(true)
    }
}

#[async_trait]
impl TransportReceiver for ChannelReceiver {
    async fn receive(&mut self) -> Option<Result<Message, TransportError>> {
        if *self.closed.borrow() {
            return None;
        }
        tokio::select! {
            message = self.from_server.recv() => message.map(Ok),
            _ = self.closed.wait_for(|closed| *closed) => None,
        }
    }
}
