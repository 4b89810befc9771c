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
use mcp_wire::outbound::{self, OutboundQueue, OutboundReceiver};
use mcp_wire::OwnedTask;
use tokio::sync::mpsc;

use crate::call::{run_call, CallSetup, CallShared, Inbound};
use crate::config::GrpcServerConfig;
use crate::request_stream::{Outgoing, RequestStream};

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
        let (queue, lines) = outbound::channel(config.outgoing_queue);
        Ok(GrpcTransport {
            sender: GrpcSender {
                queue,
                unstarted: Mutex::new(Some(Box::new((setup, lines)))),
                call: OwnedTask::default(),
                shared,
                max_message_size: config.max_message_size,
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

/// A call not started yet: what it needs, and the receiving side of its queue.
type Unstarted = Box<(CallSetup, OutboundReceiver<Outgoing>)>;

/// The sending half: encodes on the caller's task and queues the line for the call.
pub struct GrpcSender {
    queue: OutboundQueue<Outgoing>,
    /// The call until the first message starts it; `None` once started or closed.
    unstarted: Mutex<Option<Unstarted>>,
    /// The call task (owned here: aborted on drop, ended by `close`).
    call: OwnedTask,
    shared: Arc<CallShared>,
    max_message_size: usize,
    close_timeout: Duration,
}

impl GrpcSender {
    /// Starts the call if this is the first message (the queue's end tells a closed sender).
    fn start_call(&self) {
        let mut unstarted = lock(&self.unstarted);
        let Some(call) = unstarted.take() else {
            return;
        };
        let (setup, lines) = *call;
        // A refused call is made again with everything it sent (when all of it is safe to send
        // again), up to one full message. Handed over while `unstarted` is locked, so `close`
        // finds the task.
        let requests = RequestStream::new(lines, self.max_message_size);
        self.call.set(tokio::spawn(run_call(setup, requests)));
    }
}

#[async_trait]
impl TransportSender for GrpcSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let line = crate::line::encode(&message, self.max_message_size)
            .map_err(|why| crate::line::send_error(&message, why, self.max_message_size))?;
        self.start_call();
        self.queue
            .send(Outgoing::new(&message, line))
            .await
            .map_err(|_| self.shared.ended_error())
    }

    /// Half-closes the call (the server then ends it), waits up to `close_timeout` for it to
    /// end, and cancels it otherwise. Idempotent.
    async fn close(&self) -> Result<(), TransportError> {
        self.shared.closing.store(true, Ordering::Release);
        // Closing the queue ends the request stream after what is queued: the half-close. A
        // call never started is dropped.
        drop(lock(&self.unstarted).take());
        self.queue.close();
        if !self.call.finish(self.close_timeout).await {
            tracing::debug!(endpoint = %self.shared.display, "the gRPC server did not end the call in time; cancelled it");
        }
        Ok(())
    }

    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("tcp")
    }

    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        let started = lock(&self.unstarted).is_none();
        if started {
            // Metadata went out when the call started; the server knows the version from
            // the messages themselves.
            tracing::trace!(endpoint = %self.shared.display, ?version, "protocol version set after the gRPC call started");
        }
        *lock(&self.shared.protocol_version) = version;
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
