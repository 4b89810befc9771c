//! The writer task: the one owner of the socket's sending half. It writes the messages of the
//! outbound queue (whatever is queued goes out as one flush), pings when the reader asks, and
//! ends the connection with a close frame: 1000 when the client closes (the queue ends, after
//! everything queued before was written), or the reader's frame (1003, 1009, …) when the
//! connection failed. The reader's requests come on a channel of their own, read first and
//! also while a batch is being written.

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::SplitSink;
use futures_util::SinkExt;
use mcp_wire::{OutboundReceiver, Queued};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Bytes, Error as WsError, Message as WsMessage, Utf8Bytes};

use crate::close;
use crate::connect::Socket;
use crate::state::{ConnectionState, Control};

/// Bytes of queued messages written before one flush.
const MAX_BATCH: usize = 1 << 20;

/// The writer task's parts.
pub(crate) struct Writer {
    pub(crate) sink: SplitSink<Socket, WsMessage>,
    pub(crate) queue: OutboundReceiver<Utf8Bytes>,
    pub(crate) control: mpsc::Receiver<Control>,
    pub(crate) state: Arc<ConnectionState>,
    /// How long the close frame may take to go out.
    pub(crate) close_timeout: Duration,
}

/// What stopped a write before it finished: the reader ended the connection (with a close
/// frame to send, or none).
struct Interrupted(Option<CloseFrame>);

impl Writer {
    pub(crate) async fn run(mut self) {
        loop {
            // The reader's requests first: a dead connection should not wait behind a queue.
            let result = tokio::select! {
                biased;
                control = self.control.recv() => match control {
                    Some(Control::Ping) => self.interruptible_ping().await,
                    Some(Control::Close(frame)) => return self.send_close(frame).await,
                    None => return,
                },
                message = self.queue.recv() => match message {
                    Some(text) => self.interruptible_batch(text).await,
                    // `close`: everything queued before it went out.
                    None => return self.send_close(close::normal()).await,
                },
            };
            match result {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    let e = mcp_core::TransportError::fatal(
                        mcp_core::TransportErrorKind::Io,
                        format!("writing to {} failed: {e}", self.state.display),
                    );
                    tracing::debug!(error = %e, "WebSocket writer stopped");
                    self.state.record_failure(&e);
                    return;
                }
                Err(Interrupted(Some(frame))) => return self.send_close(frame).await,
                Err(Interrupted(None)) => return,
            }
        }
    }

    /// Writes `first` and whatever else is queued, then flushes — unless the reader ends the
    /// connection meanwhile (a dead server that stopped reading must not hold the writer). A
    /// ping asked for meanwhile is sent after the batch.
    async fn interruptible_batch(
        &mut self,
        first: Utf8Bytes,
    ) -> Result<Result<(), WsError>, Interrupted> {
        let mut ping_wanted = false;
        let written = {
            let queued = self.queue.queued_behind(&first, MAX_BATCH);
            let write = write_batch(&mut self.sink, first, queued);
            interruptible(write, &mut self.control, &mut ping_wanted).await
        };
        match written {
            Ok(Ok(())) if ping_wanted => self.interruptible_ping().await,
            other => other,
        }
    }

    async fn interruptible_ping(&mut self) -> Result<Result<(), WsError>, Interrupted> {
        let mut ping_wanted = false;
        let ping = self.sink.send(WsMessage::Ping(Bytes::new()));
        interruptible(ping, &mut self.control, &mut ping_wanted).await
    }

    /// Sends `frame` (after anything tungstenite still holds), bounded by the close grace.
    async fn send_close(mut self, frame: CloseFrame) {
        let code = u16::from(frame.code);
        match tokio::time::timeout(
            self.close_timeout,
            self.sink.send(WsMessage::Close(Some(frame))),
        )
        .await
        {
            Ok(Ok(())) => {
                tracing::debug!(url = %self.state.display, code, "sent the WebSocket close frame")
            }
            Ok(Err(e)) => {
                tracing::debug!(url = %self.state.display, code, error = %e, "could not send the WebSocket close frame")
            }
            Err(_) => {
                tracing::debug!(url = %self.state.display, code, "the WebSocket close frame did not go out in time")
            }
        }
    }
}

/// Runs `write` to its end unless the reader ends the connection first; pings asked for
/// meanwhile are noted in `ping_wanted`.
async fn interruptible<F>(
    write: F,
    control: &mut mpsc::Receiver<Control>,
    ping_wanted: &mut bool,
) -> Result<Result<(), WsError>, Interrupted>
where
    F: std::future::Future<Output = Result<(), WsError>>,
{
    tokio::pin!(write);
    loop {
        tokio::select! {
            biased;
            done = &mut write => return Ok(done),
            control = control.recv() => match control {
                Some(Control::Ping) => *ping_wanted = true,
                Some(Control::Close(frame)) => return Err(Interrupted(Some(frame))),
                None => return Err(Interrupted(None)),
            },
        }
    }
}

/// One text frame per message of the batch, then one flush.
async fn write_batch(
    sink: &mut SplitSink<Socket, WsMessage>,
    first: Utf8Bytes,
    queued: Queued<'_, Utf8Bytes>,
) -> Result<(), WsError> {
    sink.feed(WsMessage::Text(first)).await?;
    for text in queued {
        sink.feed(WsMessage::Text(text)).await?;
    }
    sink.flush().await
}
