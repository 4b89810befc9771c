//! One downstream client over a byte stream — stdio (`mcph serve` in a harness's config) or any
//! reader and writer: newline-delimited JSON-RPC in, the server's messages out, one
//! connection to the gateway's in-process server for the stream's life.

use std::io;

use futures_util::StreamExt;
use mcp_core::jsonrpc::{ErrorObject, Message, Response};
use mcp_core::{Transport, TransportReceiver, TransportSender};
use mcp_transport_local::LocalServer;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use crate::Gateway;

/// The longest line a downstream client may send (a message with large arguments fits; a
/// client that never ends its line cannot make the gateway hold unbounded memory).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC's "parse error".
const PARSE_ERROR: i64 = -32700;
/// After the client's end of the stream closes, how long answers still owed are waited for.
const DRAIN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Serves one downstream client on this process's stdin and stdout until stdin ends (the
/// client closed it or exited). Nothing else may write to stdout meanwhile: logs go to stderr.
///
/// When stdin and stdout are pipes (a harness that starts `mcph serve`), they are read and
/// written without blocking, through the runtime's reactor; otherwise (a terminal, a file)
/// through tokio's blocking-thread stdin and stdout, one thread hand-off per read and write.
pub async fn serve_stdio(gateway: &Gateway) -> io::Result<()> {
    #[cfg(unix)]
    if let Some((reader, writer)) = stdio_pipes() {
        return serve_stream(gateway.server(), reader, writer).await;
    }
    serve_stream(gateway.server(), tokio::io::stdin(), tokio::io::stdout()).await
}

/// Stdin and stdout as non-blocking pipe ends (copies of fds 0 and 1), when both are pipes.
#[cfg(unix)]
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    let reader = tokio::net::unix::pipe::Receiver::from_file(std::fs::File::from(stdin)).ok()?;
    let writer = tokio::net::unix::pipe::Sender::from_file(std::fs::File::from(stdout)).ok()?;
    Some((reader, writer))
}

/// Serves one client that writes newline-delimited JSON-RPC messages to `reader` and reads the
/// server's from `writer`, until `reader` ends or the server closes the connection. A line that
/// is not a JSON-RPC message is answered with a parse error (`id: null`) and skipped; so is a
/// line over [`MAX_LINE_BYTES`]. When `reader` ends, the answers still owed are written as
/// they come, for at most five seconds.
pub async fn serve_stream<R, W>(server: &LocalServer, reader: R, mut writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let transport = server
        .connect()
        .map_err(|e| io::Error::other(e.to_string()))?;
    let (sender, mut receiver) = transport.split();
    let mut lines = FramedRead::new(reader, LinesCodec::new_with_max_length(MAX_LINE_BYTES));
    let mut out = Vec::with_capacity(4096);
    // Requests sent on whose answers are still owed.
    let mut owed: usize = 0;
    let outcome = loop {
        tokio::select! {
            line = lines.next() => match line {
                None => break Ok(()),
                Some(Ok(line)) if line.trim().is_empty() => {}
                Some(Ok(line)) => match Message::from_json_str(&line) {
                    Ok(message) => {
                        let request = matches!(message, Message::Request(_));
                        if sender.send(message).await.is_err() {
                            break Ok(());
                        }
                        owed += usize::from(request);
                    }
                    Err(e) => {
                        let answer = Response::error(
                            None,
                            ErrorObject::new(PARSE_ERROR, format!("not a JSON-RPC message: {}", e.reason())),
                        );
                        write_message(&mut writer, &mut out, &answer.into()).await?;
                    }
                },
                Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                    let answer = Response::error(
                        None,
                        ErrorObject::new(
                            PARSE_ERROR,
                            format!("message over {MAX_LINE_BYTES} bytes, skipped"),
                        ),
                    );
                    write_message(&mut writer, &mut out, &answer.into()).await?;
                }
                Some(Err(LinesCodecError::Io(e))) => break Err(e),
            },
            message = receiver.receive() => match message {
                Some(Ok(message)) => {
                    owed = owed.saturating_sub(usize::from(answers_a_request(&message)));
                    write_message(&mut writer, &mut out, &message).await?;
                }
                // The server ended the connection (shut down).
                Some(Err(_)) | None => {
                    owed = 0;
                    break Ok(());
                }
            },
        }
    };
    // The client stopped sending: what it is still owed goes out, within the grace.
    if outcome.is_ok() && owed > 0 {
        let drained = tokio::time::timeout(DRAIN_GRACE, async {
            while owed > 0 {
                match receiver.receive().await {
                    Some(Ok(message)) => {
                        owed = owed.saturating_sub(usize::from(answers_a_request(&message)));
                        write_message(&mut writer, &mut out, &message).await?;
                    }
                    Some(Err(_)) | None => break,
                }
            }
            Ok::<(), io::Error>(())
        })
        .await;
        if let Ok(Err(e)) = drained {
            let _ = sender.close().await;
            return Err(e);
        }
    }
    let _ = sender.close().await;
    outcome
}

/// Whether `message` answers one of the client's requests.
fn answers_a_request(message: &Message) -> bool {
    matches!(message, Message::Response(response) if response.id.is_some())
}

/// Writes one message and its newline, then flushes.
async fn write_message<W: AsyncWrite + Unpin>(
    writer: &mut W,
    out: &mut Vec<u8>,
    message: &Message,
) -> io::Result<()> {
    out.clear();
    message
        .write_json(out)
        .map_err(|e| io::Error::other(format!("cannot encode a message: {e}")))?;
    out.push(b'\n');
    writer.write_all(out).await?;
    writer.flush().await
}
