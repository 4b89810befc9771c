//! The reader task: frames from the server become messages on the inbound queue, the
//! keepalive pings a silent server and declares it dead, and every way the connection can end
//! becomes one final error (or a clean end while the client closes).
//!
//! tungstenite answers the server's pings (and close frame) by itself whenever the socket is
//! read, which this task does all the time.

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::SplitStream;
use futures_util::StreamExt;
use mcp_core::jsonrpc::MessageError;
use mcp_core::{Message, TransportError, TransportErrorKind};
use mcp_wire::request_id_of;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Bytes, Error as WsError, Message as WsMessage, Utf8Bytes};

use crate::close;
use crate::connect::Socket;
use crate::state::{ConnectionState, Control};

/// One item of the inbound queue.
pub(crate) type Inbound = Result<Message, TransportError>;

/// Messages larger than this are parsed in place: their parameters and results share the
/// frame's buffer instead of being copied out of it.
const SHARE_ABOVE: usize = 64 * 1024;
/// How much of a frame that is not JSON goes into the error, in characters.
const PREVIEW_CHARS: usize = 200;

/// The reader task's parts.
pub(crate) struct Reader {
    pub(crate) stream: SplitStream<Socket>,
    pub(crate) inbound: mpsc::Sender<Inbound>,
    pub(crate) control: mpsc::Sender<Control>,
    pub(crate) state: Arc<ConnectionState>,
    /// Silence after which the server is pinged (`ZERO`: never).
    pub(crate) ping_interval: Duration,
    /// How long a ping may go unanswered.
    pub(crate) dead_peer_timeout: Duration,
    /// How long the server's close handshake is waited for.
    pub(crate) close_timeout: Duration,
}

/// How the loop ended.
enum End {
    /// Cleanly: nothing more to report.
    Clean,
    /// The server closed the connection (its close frame was read): report, then let
    /// tungstenite send the reply.
    PeerClosed(TransportError),
    /// Failed: report, and send the close frame if there is one.
    Failed(TransportError, Option<CloseFrame>),
    /// The receiving half is gone: nobody is listening.
    Unheard,
}

impl Reader {
    /// Runs until the connection ends; the last thing on the inbound queue is the reason (or
    /// nothing, for a clean end).
    pub(crate) async fn run(mut self) {
        match self.read_until_end().await {
            End::Clean | End::Unheard => {}
            End::PeerClosed(error) => {
                self.report(error).await;
                // Reading on lets tungstenite send its reply to the close frame and see the
                // server drop the connection (RFC 6455 §7.1.1: the server closes TCP first).
                let _ = tokio::time::timeout(self.close_timeout, async {
                    while self.stream.next().await.is_some() {}
                })
                .await;
            }
            End::Failed(error, frame) => {
                if let Some(frame) = frame {
                    // The writer sends it, then stops; a full control queue only means a ping
                    // is still waiting, and the connection ends without the frame.
                    let _ = self.control.try_send(Control::Close(frame));
                }
                self.report(error).await;
            }
        }
    }

    /// Records the failure first (so sends fail with it), then queues it for the receiver.
    async fn report(&self, error: TransportError) {
        tracing::debug!(url = %self.state.display, error = %error, "WebSocket connection ended");
        self.state.record_failure(&error);
        let _ = self.inbound.send(Err(error)).await;
    }

    async fn read_until_end(&mut self) -> End {
        let mut last_heard = Instant::now();
        let mut ping_sent: Option<Instant> = None;
        loop {
            let wake = match ping_sent {
                Some(sent) => Some(sent + self.dead_peer_timeout),
                None if self.ping_interval.is_zero() => None,
                None => Some(last_heard + self.ping_interval),
            };
            let frame = tokio::select! {
                frame = self.stream.next() => frame,
                () = sleep_until(wake) => {
                    if ping_sent.is_some() {
                        return End::Failed(self.dead_peer(), None);
                    }
                    let _ = self.control.try_send(Control::Ping);
                    ping_sent = Some(Instant::now());
                    continue;
                }
            };
            // Anything at all from the server shows it is alive.
            last_heard = Instant::now();
            ping_sent = None;
            let item = match frame {
                Some(Ok(WsMessage::Text(text))) => parse_text(text),
                Some(Ok(WsMessage::Binary(bytes))) => return self.binary(&bytes),
                Some(Ok(WsMessage::Close(frame))) => {
                    if self.state.is_closing() {
                        return End::Clean;
                    }
                    return End::PeerClosed(close::peer_closed(
                        &self.state.display,
                        frame.as_ref(),
                    ));
                }
                Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_) | WsMessage::Frame(_))) => continue,
                Some(Err(e)) => return self.read_error(e),
                None if self.state.is_closing() => return End::Clean,
                None => return End::Failed(self.dropped(None), None),
            };
            if self.inbound.send(item).await.is_err() {
                return End::Unheard;
            }
        }
    }

    fn dead_peer(&self) -> TransportError {
        TransportError::fatal(
            TransportErrorKind::PeerGone,
            format!(
                "{} sent nothing for {:?} after a ping (dead_peer_timeout); the connection is considered dead",
                self.state.display, self.dead_peer_timeout
            ),
        )
    }

    fn dropped(&self, cause: Option<&dyn std::fmt::Display>) -> TransportError {
        TransportError::fatal(
            TransportErrorKind::PeerGone,
            format!(
                "the connection to {} dropped without a WebSocket close frame{}",
                self.state.display,
                cause.map(|c| format!(" ({c})")).unwrap_or_default()
            ),
        )
    }

    fn binary(&self, bytes: &Bytes) -> End {
        End::Failed(
            TransportError::fatal(
                TransportErrorKind::InvalidMessage,
                format!(
                    "{} sent a binary frame ({} bytes); MCP over WebSocket uses text frames only, so the connection was closed (1003)",
                    self.state.display,
                    bytes.len()
                ),
            ),
            Some(close::frame(
                CloseCode::Unsupported,
                "MCP messages are text frames",
            )),
        )
    }

    fn read_error(&self, e: WsError) -> End {
        let display = &self.state.display;
        let failed = |kind, message: String, code, reason| {
            End::Failed(
                TransportError::fatal(kind, message),
                Some(close::frame(code, reason)),
            )
        };
        match e {
            WsError::Capacity(CapacityError::MessageTooLong { size, max_size }) => failed(
                TransportErrorKind::MessageTooLarge,
                format!(
                    "{display} sent a message of {size} bytes, over the limit of {max_size} bytes (max_message_size); the connection was closed (1009)"
                ),
                CloseCode::Size,
                "message too large",
            ),
            WsError::Utf8(_) => failed(
                TransportErrorKind::InvalidMessage,
                // tungstenite checks close reasons too: the frame is not always a text frame.
                format!("{display} sent text that is not UTF-8 (a text frame or a close frame's reason); the connection was closed (1007)"),
                CloseCode::Invalid,
                "text frames must be UTF-8",
            ),
            // The client is closing and the server hung up without its close frame: done.
            WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) | WsError::Io(_)
                if self.state.is_closing() =>
            {
                End::Clean
            }
            WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => {
                End::Failed(self.dropped(None), None)
            }
            WsError::Io(e) => End::Failed(self.dropped(Some(&e)), None),
            WsError::Protocol(e) => failed(
                TransportErrorKind::InvalidMessage,
                format!("{display} broke the WebSocket protocol ({e}); the connection was closed (1002)"),
                CloseCode::Protocol,
                "protocol error",
            ),
            other => End::Failed(
                TransportError::fatal(
                    TransportErrorKind::Io,
                    format!("reading from {display} failed: {other}"),
                ),
                None,
            ),
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// One text frame as a message, or a recoverable error naming the request it answered when
/// that can be told.
fn parse_text(text: Utf8Bytes) -> Inbound {
    let bytes = Bytes::from(text);
    if bytes.len() <= SHARE_ABOVE {
        return Message::from_slice(&bytes).map_err(|e| bad_message(&bytes, e));
    }
    // Without a copy when the frame's buffer is not shared (the usual case).
    let line = Arc::new(Vec::from(bytes));
    Message::from_shared_line(&line).map_err(|e| bad_message(&line, e))
}

/// A text frame that is not a JSON-RPC message: the connection goes on.
fn bad_message(bytes: &[u8], e: MessageError) -> TransportError {
    // Only on the failure path: does it name a request (even when nested past the parser's
    // depth limit after its id), and is it JSON at all (checked without building a tree)?
    let id = request_id_of(bytes);
    if id.is_some() || serde_json::from_slice::<&serde_json::value::RawValue>(bytes).is_ok() {
        TransportError::recoverable(
            TransportErrorKind::InvalidMessage,
            format!("the server sent {}", mcp_wire::message_error_text(&e)),
        )
        .for_request(id)
    } else {
        // Redacted, control characters out, cut: the frame is the server's text.
        let shown = mcp_wire::redact::excerpt_of_start(bytes, PREVIEW_CHARS);
        TransportError::recoverable(
            TransportErrorKind::InvalidMessage,
            format!("the server sent a text frame that is not JSON: {shown:?}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_core::RequestId;

    #[test]
    fn text_frames_become_messages_or_recoverable_errors() {
        let small = parse_text(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into()).unwrap();
        assert!(matches!(small, Message::Response(_)));

        let big = format!(
            r#"{{"jsonrpc":"2.0","id":2,"result":{{"text":"{}"}}}}"#,
            "x".repeat(SHARE_ABOVE)
        );
        match parse_text(big.into()).unwrap() {
            Message::Response(r) => {
                let text = r.outcome.unwrap().to_json_string().into_owned();
                assert_eq!(text.len(), SHARE_ABOVE + 11);
            }
            other => panic!("{other:?}"),
        }

        let e = parse_text("not json".into()).unwrap_err();
        assert!(!e.is_fatal());
        assert_eq!(e.kind(), TransportErrorKind::InvalidMessage);
        assert!(e.message().contains("not JSON: \"not json\""), "{e}");
        assert_eq!(e.request_id(), None);

        let e = parse_text(r#"{"jsonrpc":"2.0","id":7,"result":1,"error":{}}"#.into()).unwrap_err();
        assert!(!e.is_fatal());
        assert_eq!(e.request_id(), Some(&RequestId::Number(7)));

        let e = parse_text(format!("[{}", "1,".repeat(PREVIEW_CHARS)).into()).unwrap_err();
        assert!(e.message().ends_with("…\""), "{e}");

        // The server's text in an error: redacted, without control characters, cut.
        let secret = format!("Bearer SECRET-0123456789{}", "x".repeat(100_000));
        for text in [
            format!(r#"{{"jsonrpc":"2.0","id":1,"error":"{secret}\u001b[2J"}}"#),
            format!("\u{1b}[2J {secret}"),
        ] {
            let e = parse_text(text.into()).unwrap_err();
            assert!(!e.message().contains("SECRET"), "{e}");
            assert!(!e.message().contains('\u{1b}'), "{e}");
            assert!(e.message().chars().count() < 400, "{e}");
        }

        // Nested past the parser's depth limit: an error for the request it names, at once.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":8,"result":{}"#,
            "[".repeat(100_000)
        );
        let e = parse_text(deep.into()).unwrap_err();
        assert!(!e.is_fatal());
        assert_eq!(e.request_id(), Some(&RequestId::Number(8)));
        assert!(e.message().contains("invalid JSON-RPC message"), "{e}");
    }
}
