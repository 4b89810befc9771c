//! What the reader task, the writer task and the two halves share about one connection:
//! whether the client is closing it and, once it failed, why.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use mcp_core::sync::lock;
use mcp_core::TransportError;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

/// The state of one connection.
pub(crate) struct ConnectionState {
    /// The URL as shown in errors and logs.
    pub(crate) display: String,
    closing: AtomicBool,
    failure: Mutex<Option<TransportError>>,
}

impl ConnectionState {
    pub(crate) fn new(display: String) -> ConnectionState {
        ConnectionState {
            display,
            closing: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    /// The client is closing (or dropped its sending half): the end of the connection from
    /// here on is a clean one.
    pub(crate) fn mark_closing(&self) {
        self.closing.store(true, Ordering::Release);
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Records why the connection failed; the first reason wins (it caused the others).
    pub(crate) fn record_failure(&self, error: &TransportError) {
        lock(&self.failure).get_or_insert_with(|| error.clone());
    }

    /// Why the connection failed, if it did.
    pub(crate) fn failure(&self) -> Option<TransportError> {
        lock(&self.failure).clone()
    }
}

/// What the reader task asks of the writer task.
#[derive(Debug)]
pub(crate) enum Control {
    /// The server has been silent for the ping interval: ping it.
    Ping,
    /// The connection failed: send this close frame (1003, 1007, 1009, …) and stop.
    Close(CloseFrame),
}
