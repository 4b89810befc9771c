//! [`GrpcTransport`]: the two halves over one `Session` call. Connecting opens the HTTP/2
//! connection (TCP, TLS, handshake) within the connect timeout; the call itself starts with
//! the first message sent, so its metadata carries the protocol version the session knows by
//! then (see the crate docs).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::sync::lock;
use mcp_core::{
    Message, ProtocolVersion, Transport, TransportCapabilities, TransportError, TransportErrorKind,
    TransportReceiver, TransportSender,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::call::{run_call, CallSetup, CallShared, Inbound};
use crate::config::GrpcServerConfig;
use crate::outbound::{Outbound, Outgoing};

/// Messages from the server waiting for the session's reader.
const INBOUND_QUEUE: usize = 64;

/// An MCP connection over one gRPC `mcp.transport.v1.Mcp/Session` call.
pub struct GrpcTransport {
    sender: GrpcSender,
    receiver: GrpcReceiver,
}

impl GrpcTransport {
    /// Connects to the server of `config`: checks the configuration, then opens the HTTP/2
    /// connection (with TLS for `https`) within `connect_timeout`. Fails with
    /// [`TransportErrorKind::Connect`] naming the endpoint and the cause.
    ///
    /// Must be called within a tokio runtime.
    pub async fn connect(config: GrpcServerConfig) -> Result<GrpcTransport, TransportError> {
        let uri = config.uri()?;
        let metadata = config.metadata()?;
        let endpoint = config.endpoint(&uri)?;
        let shown = config.display_endpoint();
        let channel = match tokio::time::timeout(config.connect_timeout, endpoint.connect()).await {
            Ok(Ok(channel)) => channel,
            Ok(Err(e)) => {
                return Err(TransportError::fatal(
                    TransportErrorKind::Connect,
                    format!(
                        "could not connect to the gRPC server at {shown}: {}",
                        crate::status::error_chain(&e)
                    ),
                ))
            }
            Err(_) => {
                return Err(TransportError::fatal(
                    TransportErrorKind::Connect,
                    format!(
                        "could not connect to the gRPC server at {shown} within {} \
                         (connect_timeout)",
                        mcp_core::time::human_duration(config.connect_timeout)
                    ),
                ))
            }
        };
        tracing::debug!(endpoint = %shown, "connected to the gRPC server");
        let shared = Arc::new(CallShared::new(shown));
        let (inbound_tx, inbound) = mpsc::channel(INBOUND_QUEUE);
        let setup = CallSetup {
            channel,
            metadata,
            auth: config.auth.clone(),
            session_url: GrpcServerConfig::session_url(&uri),
            max_message_size: config.max_message_size,
            tonic_limit: config.tonic_limit(),
            inbound: inbound_tx,
            shared: shared.clone(),
        };
        Ok(GrpcTransport {
            sender: GrpcSender {
                state: Mutex::new(CallState::NotStarted(Box::new(setup))),
                task: Mutex::new(None),
                shared,
                max_message_size: config.max_message_size,
                outgoing_queue: config.outgoing_queue.max(1),
                close_timeout: config.close_timeout,
            },
            receiver: GrpcReceiver { inbound },
        })
    }
}

impl Transport for GrpcTransport {
    type Sender = GrpcSender;
    type Receiver = GrpcReceiver;

    fn split(self) -> (GrpcSender, GrpcReceiver) {
        (self.sender, self.receiver)
    }
}

enum CallState {
    /// Nothing sent yet: the call starts with the first message.
    NotStarted(Box<CallSetup>),
    /// The call runs; lines go to its queue.
    Started(mpsc::Sender<Outgoing>),
    /// `close` was called.
    Closed,
}

/// The sending half: encodes on the caller's task and queues the line for the call.
pub struct GrpcSender {
    state: Mutex<CallState>,
    /// The call task (owned here: aborted on drop, awaited by `close`).
    task: Mutex<Option<JoinHandle<()>>>,
    shared: Arc<CallShared>,
    max_message_size: usize,
    outgoing_queue: usize,
    close_timeout: Duration,
}

impl GrpcSender {
    /// The call's queue, starting the call first if this is the first message.
    fn queue(&self) -> Result<mpsc::Sender<Outgoing>, TransportError> {
        let mut state = lock(&self.state);
        let setup = match std::mem::replace(&mut *state, CallState::Closed) {
            CallState::NotStarted(setup) => setup,
            CallState::Started(queue) => {
                *state = CallState::Started(queue.clone());
                return Ok(queue);
            }
            CallState::Closed => return Err(self.shared.ended_error()),
        };
        let (queue, lines) = mpsc::channel(self.outgoing_queue);
        // A refused call is made again with everything it sent (when all of it is safe to send
        // again), up to one full message.
        let outbound = Outbound::new(lines, self.max_message_size);
        *lock(&self.task) = Some(tokio::spawn(run_call(*setup, outbound)));
        *state = CallState::Started(queue.clone());
        Ok(queue)
    }
}

#[async_trait]
impl TransportSender for GrpcSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let line = crate::line::encode(&message, self.max_message_size)
            .map_err(|why| crate::line::send_error(&message, why, self.max_message_size))?;
        let queue = self.queue()?;
        queue
            .send(Outgoing::new(&message, line))
            .await
            .map_err(|_| self.shared.ended_error())
    }

    /// Half-closes the call (the server then ends it), waits up to `close_timeout` for it to
    /// end, and cancels it otherwise. Idempotent.
    async fn close(&self) -> Result<(), TransportError> {
        self.shared.closing.store(true, Ordering::Release);
        // Dropping the queue (or the unstarted call) ends the request stream: the half-close.
        let previous = std::mem::replace(&mut *lock(&self.state), CallState::Closed);
        drop(previous);
        let task = lock(&self.task).take();
        if let Some(mut task) = task {
            if tokio::time::timeout(self.close_timeout, &mut task)
                .await
                .is_err()
            {
                tracing::debug!(endpoint = %self.shared.display, "the gRPC server did not end the call in time; cancelling it");
                task.abort();
            }
        }
        Ok(())
    }

    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("tcp")
    }

    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        let started = !matches!(&*lock(&self.state), CallState::NotStarted(_));
        if started {
            // Metadata went out when the call started; the server knows the version from
            // the messages themselves.
            tracing::trace!(endpoint = %self.shared.display, ?version, "protocol version set after the gRPC call started");
        }
        *lock(&self.shared.protocol_version) = version;
    }
}

impl Drop for GrpcSender {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.task).take() {
            task.abort();
        }
    }
}

/// The receiving half: the server's messages, in order.
pub struct GrpcReceiver {
    inbound: mpsc::Receiver<Inbound>,
}

#[async_trait]
impl TransportReceiver for GrpcReceiver {
    async fn receive(&mut self) -> Option<Result<Message, TransportError>> {
        self.inbound.recv().await
    }
}
