//! [`LocalTransport`]: one in-process connection, client side. Messages pass by move (a
//! [`Payload::Value`](mcp_core::Payload::Value) is never serialized), and requests are answered
//! in the caller's task ([`TransportSender::answer_in_place`]) unless the server was built to
//! answer them on its connection task.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::jsonrpc::{Message, Request, RequestId};
use mcp_core::sync::lock;
use mcp_core::transport::{InPlaceAnswer, RequestMeta};
use mcp_core::types::methods;
use mcp_core::{
    Transport, TransportCapabilities, TransportError, TransportReceiver, TransportSender,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::connection::{Connection, Ending, Outbound};
use crate::era::SessionMeta;

/// How long `close` waits for the connection's task to stop (it stops at once; past this it
/// is aborted).
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// A connection to a [`LocalServer`](crate::LocalServer), ready for a
/// `ClientSession` (`mcp-session`).
pub struct LocalTransport {
    sender: LocalSender,
    receiver: LocalReceiver,
}

/// The sending half of a [`LocalTransport`].
pub struct LocalSender {
    connection: Arc<Connection>,
    to_server: mpsc::Sender<Message>,
    in_place: bool,
    owner: Arc<ConnectionOwner>,
}

/// The receiving half of a [`LocalTransport`].
pub struct LocalReceiver {
    connection: Arc<Connection>,
    from_server: mpsc::Receiver<Outbound>,
    reported_end: bool,
    _owner: Arc<ConnectionOwner>,
}

/// Owns the connection's task: when both halves are gone (or on `close`), it ends.
struct ConnectionOwner {
    connection: Arc<Connection>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for ConnectionOwner {
    fn drop(&mut self) {
        self.connection.end(Ending::Closed);
        if let Some(task) = lock(&self.task).take() {
            task.abort();
        }
    }
}

impl LocalTransport {
    pub(crate) fn new(
        connection: Arc<Connection>,
        to_server: mpsc::Sender<Message>,
        from_server: mpsc::Receiver<Outbound>,
        task: JoinHandle<()>,
        in_place: bool,
    ) -> LocalTransport {
        let owner = Arc::new(ConnectionOwner {
            connection: connection.clone(),
            task: Mutex::new(Some(task)),
        });
        LocalTransport {
            sender: LocalSender {
                connection: connection.clone(),
                to_server,
                in_place,
                owner: owner.clone(),
            },
            receiver: LocalReceiver {
                connection,
                from_server,
                reported_end: false,
                _owner: owner,
            },
        }
    }
}

impl Transport for LocalTransport {
    type Sender = LocalSender;
    type Receiver = LocalReceiver;

    fn split(self) -> (LocalSender, LocalReceiver) {
        (self.sender, self.receiver)
    }
}

#[async_trait]
impl TransportSender for LocalSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        if self.connection.is_ended() {
            return Err(self.connection.failure(false));
        }
        tokio::select! {
            biased;
            _ = self.connection.ended() => Err(self.connection.failure(false)),
            sent = self.to_server.send(message) => sent.map_err(|_| self.connection.failure(false)),
        }
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.connection.end(Ending::Closed);
        let task = lock(&self.owner.task).take();
        if let Some(mut task) = task {
            if tokio::time::timeout(CLOSE_WAIT, &mut task).await.is_err() {
                task.abort();
            }
        }
        Ok(())
    }

    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("inproc").with_values_preferred(true)
    }

    /// Every request but the long-lived `subscriptions/listen` (whose notifications the
    /// session matches against its pending requests) is answered in the caller's task.
    fn answer_in_place(
        &self,
        request: Request,
        meta: RequestMeta<'_>,
    ) -> Result<InPlaceAnswer, Request> {
        if !self.in_place || request.method == methods::SUBSCRIPTIONS_LISTEN {
            return Err(request);
        }
        Ok(self
            .connection
            .answer_in_place(request, SessionMeta::of(meta)))
    }
}

#[async_trait]
impl TransportReceiver for LocalReceiver {
    async fn receive(&mut self) -> Option<Result<Message, TransportError>> {
        self.receive_related()
            .await
            .map(|item| item.map(|(message, _)| message))
    }
}

impl LocalReceiver {
    /// The next message and the request it belongs to, for a server transport that gives each
    /// request a stream of its own (Streamable HTTP): what a call sends while it runs
    /// (progress, logs, its requests to the client and their withdrawal) and its answer
    /// belong to its request; a modern `subscriptions/listen` stream's notifications to that
    /// request; the rest (a legacy connection's list changes) to none.
    pub async fn receive_related(
        &mut self,
    ) -> Option<Result<(Message, Option<RequestId>), TransportError>> {
        loop {
            let item = tokio::select! {
                biased;
                _ = self.connection.ended() => None,
                item = self.from_server.recv() => item,
            };
            match item {
                Some(Outbound::Message(message, related)) => return Some(Ok((message, related))),
                // Being asked for the next message means the previous ones were dispatched.
                Some(Outbound::Flush(done)) => {
                    let _ = done.send(());
                }
                None => return self.end_of_connection().map(|end| end.map(|m| (m, None))),
            }
        }
    }
}

impl LocalReceiver {
    /// A crash is reported once, as the fatal error it is; any other end is a clean one.
    fn end_of_connection(&mut self) -> Option<Result<Message, TransportError>> {
        if self.reported_end {
            return None;
        }
        self.reported_end = true;
        match self.connection.ending() {
            Some(Ending::Crashed) => Some(Err(self.connection.failure(true))),
            _ => None,
        }
    }
}

impl std::fmt::Debug for LocalTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTransport")
            .field("server", &self.sender.connection.server.info.name)
            .field("connection", &self.sender.connection.id)
            .finish_non_exhaustive()
    }
}
