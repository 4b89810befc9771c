//! [`WebSocketTransport`]: the two halves over one WebSocket, and the connection they own (a
//! reader task and a writer task, ended on `close` or when both halves are dropped).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use mcp_core::{
    Message, Transport, TransportCapabilities, TransportError, TransportErrorKind,
    TransportReceiver, TransportSender,
};
use mcp_wire::outbound::{self, OutboundQueue};
use mcp_wire::OwnedTask;
use tokio::sync::mpsc;
use tokio_rustls::rustls::ClientConfig;
use tokio_tungstenite::tungstenite::Utf8Bytes;

use crate::config::{Target, WebSocketServerConfig};
use crate::connect::{open_socket, Socket};
use crate::reader::{Inbound, Reader};
use crate::state::ConnectionState;
use crate::stream::client_config;
use crate::writer::Writer;

/// Messages read ahead of the session.
const INBOUND_QUEUE: usize = 32;
/// Requests from the reader to the writer (pings, one close frame). A channel of their own,
/// not the outbound queue: they must overtake the messages queued there (a ping behind a full
/// queue would come too late, a close frame must not wait for room), and the reader must
/// never wait on the session's sends.
const CONTROL_QUEUE: usize = 4;

/// An MCP server reached over one WebSocket (subprotocol `mcp`; one JSON-RPC message per text
/// frame).
///
/// ```no_run
/// # async fn run() -> Result<(), mcp_core::Error> {
/// use mcp_core::{McpServiceExt, RequestOptions};
/// use mcp_session::{ClientSession, SessionOptions};
/// use mcp_transport_ws::{WebSocketServerConfig, WebSocketTransport};
///
/// let config = WebSocketServerConfig::new("ws://127.0.0.1:8000/mcp");
/// let transport = WebSocketTransport::connect(config).await?;
/// let session = ClientSession::connect(transport, (), SessionOptions::default()).await?;
/// println!("{:?}", session.list_all_tools(RequestOptions::new()).await?);
/// session.close().await;
/// # Ok(()) }
/// ```
pub struct WebSocketTransport {
    sender: WebSocketSender,
    receiver: WebSocketReceiver,
}

impl WebSocketTransport {
    /// Connects and upgrades (bounded by the configuration's connect timeout per attempt).
    /// Fails with [`TransportErrorKind::Connect`] when the server cannot be reached or does
    /// not switch to the `mcp` subprotocol, and with [`TransportErrorKind::Unauthorized`] when
    /// it refuses the credentials (HTTP 401/403 after the provider had its one retry).
    pub async fn connect(
        config: WebSocketServerConfig,
    ) -> Result<WebSocketTransport, TransportError> {
        let target = config.target()?;
        let tls = target
            .tls
            .then(|| client_config(&config.root_certificates))
            .transpose()?;
        WebSocketTransport::connect_to(&config, &target, tls.as_ref()).await
    }

    /// [`connect`](Self::connect) with the URL already checked and the TLS configuration
    /// already built (a connector builds it once).
    pub(crate) async fn connect_to(
        config: &WebSocketServerConfig,
        target: &Target,
        tls: Option<&Arc<ClientConfig>>,
    ) -> Result<WebSocketTransport, TransportError> {
        let socket = open_socket(config, target, tls).await?;
        Ok(WebSocketTransport::start(
            socket,
            config,
            target.display.clone(),
        ))
    }

    /// Starts the reader and writer tasks on an upgraded socket.
    fn start(
        socket: Socket,
        config: &WebSocketServerConfig,
        display: String,
    ) -> WebSocketTransport {
        let state = Arc::new(ConnectionState::new(display));
        let (sink, stream) = socket.split();
        let (queue, outgoing) = outbound::channel(config.outgoing_queue);
        let (inbound_tx, inbound) = mpsc::channel(INBOUND_QUEUE);
        let (control_tx, control) = mpsc::channel(CONTROL_QUEUE);
        let writer = OwnedTask::spawn(
            Writer {
                sink,
                queue: outgoing,
                control,
                state: state.clone(),
                close_timeout: config.close_timeout,
            }
            .run(),
        );
        let reader = OwnedTask::spawn(
            Reader {
                stream,
                inbound: inbound_tx,
                control: control_tx,
                state: state.clone(),
                ping_interval: config.ping_interval,
                dead_peer_timeout: config.dead_peer_timeout,
                close_timeout: config.close_timeout,
            }
            .run(),
        );
        let connection = Arc::new(Connection {
            state,
            reader,
            writer,
            close_timeout: config.close_timeout,
        });
        WebSocketTransport {
            sender: WebSocketSender {
                queue,
                max_message_size: config.max_message_size,
                connection: connection.clone(),
                close_lock: tokio::sync::Mutex::new(()),
            },
            receiver: WebSocketReceiver {
                inbound,
                connection,
                ended: false,
            },
        }
    }
}

impl Transport for WebSocketTransport {
    type Sender = WebSocketSender;
    type Receiver = WebSocketReceiver;

    fn split(self) -> (WebSocketSender, WebSocketReceiver) {
        (self.sender, self.receiver)
    }
}

impl std::fmt::Debug for WebSocketTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocketTransport")
            .field("url", &self.sender.connection.state.display)
            .finish_non_exhaustive()
    }
}

/// What both halves own: the reader and writer tasks, aborted when the last half is dropped.
struct Connection {
    state: Arc<ConnectionState>,
    reader: OwnedTask,
    writer: OwnedTask,
    close_timeout: Duration,
}

/// The sending half: serializes on the caller's task and queues the text frame for the writer
/// task; `send` returns once it is queued.
pub struct WebSocketSender {
    queue: OutboundQueue<Utf8Bytes>,
    /// The configured cap, which the server enforces too: a larger message would make it
    /// close the connection (1009) and fail every call in flight.
    max_message_size: usize,
    connection: Arc<Connection>,
    /// Concurrent `close` calls wait for the first one.
    close_lock: tokio::sync::Mutex<()>,
}

impl WebSocketSender {
    fn not_accepting(&self) -> TransportError {
        let state = &self.connection.state;
        let message = match state.failure() {
            Some(failure) => failure.message().to_owned(),
            None if state.is_closing() => {
                format!("the WebSocket connection to {} is closed", state.display)
            }
            None => format!("the WebSocket connection to {} has ended", state.display),
        };
        TransportError::fatal(TransportErrorKind::Closed, message)
    }
}

#[async_trait]
impl TransportSender for WebSocketSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let mut json = Vec::with_capacity(128);
        message.write_json(&mut json).map_err(|e| {
            TransportError::recoverable(
                TransportErrorKind::InvalidMessage,
                format!("could not encode the message: {e}"),
            )
        })?;
        if json.len() > self.max_message_size {
            return Err(mcp_wire::unsent_oversized(
                &message,
                json.len(),
                self.max_message_size,
            ));
        }
        let text = Utf8Bytes::try_from(json).map_err(|e| {
            TransportError::recoverable(
                TransportErrorKind::InvalidMessage,
                format!("could not encode the message as text: {e}"),
            )
        })?;
        self.queue
            .send(text)
            .await
            .map_err(|_| self.not_accepting())
    }

    /// Stops accepting sends, lets the writer send what is queued and a close frame 1000
    /// (up to the close grace), waits for the server's close frame (up to the close grace
    /// again), then ends both tasks. Idempotent; concurrent calls wait for the first.
    async fn close(&self) -> Result<(), TransportError> {
        let _one_at_a_time = self.close_lock.lock().await;
        let connection = &self.connection;
        connection.state.mark_closing();
        self.queue.close();
        connection.writer.finish(connection.close_timeout).await;
        connection.reader.finish(connection.close_timeout).await;
        Ok(())
    }

    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("tcp")
    }
}

impl Drop for WebSocketSender {
    fn drop(&mut self) {
        // Nothing more will be sent: the writer closes the connection with 1000, and the
        // server's answer is a clean end for a receiver still listening.
        self.connection.state.mark_closing();
    }
}

/// The receiving half: the messages the reader task read, in order, then the reason the
/// connection ended (or nothing, when the client closed it).
pub struct WebSocketReceiver {
    inbound: mpsc::Receiver<Inbound>,
    connection: Arc<Connection>,
    ended: bool,
}

#[async_trait]
impl TransportReceiver for WebSocketReceiver {
    async fn receive(&mut self) -> Option<Result<Message, TransportError>> {
        if self.ended {
            return None;
        }
        match self.inbound.recv().await {
            Some(Ok(message)) => Some(Ok(message)),
            Some(Err(e)) => {
                self.ended = e.is_fatal();
                Some(Err(e))
            }
            None => {
                self.ended = true;
                let state = &self.connection.state;
                if state.is_closing() {
                    return None;
                }
                // The reader ended without a word (it cannot, short of a panic).
                Some(Err(state.failure().unwrap_or_else(|| {
                    TransportError::fatal(
                        TransportErrorKind::PeerGone,
                        format!("the WebSocket connection to {} ended", state.display),
                    )
                })))
            }
        }
    }
}
