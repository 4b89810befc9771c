//! The newline-delimited JSON serving loops (stdio transport).
//!
//! - [`serve_stdio_blocking`] (what the binary runs): the main thread reads stdin with blocking
//!   reads, hands every line to [`FixtureServer::handle_line`] inline and writes what that
//!   produced at once — one read and one write per request, like a raw pipe peer, so client
//!   benchmarks measure the client. Tools that wait (slow, ask_*, delays) run as tasks on a
//!   runtime thread whose writer task writes their output.
//! - [`serve`] / [`serve_stdio`]: the same over any async byte streams (tests, embedding), with
//!   a single writer task that batches everything queued into one write and flush.

use std::cell::RefCell;
use std::io::{self, BufRead, Write};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

use crate::options::ServerOptions;
use crate::server::{FixtureServer, Outgoing, OutgoingKind, OutgoingReceiver};

thread_local! {
    /// Set while the blocking loop handles a line: output emitted on this thread is collected
    /// here instead of going through the channel.
    static INLINE: RefCell<Option<Vec<Outgoing>>> = const { RefCell::new(None) };
}

/// Keeps `outgoing` for the blocking loop when it is emitted while that loop handles a line
/// on this thread; otherwise gives it back for the channel.
pub(crate) fn capture_inline(outgoing: Outgoing) -> Option<Outgoing> {
    INLINE.with(|cell| match cell.borrow_mut().as_mut() {
        Some(collected) => {
            collected.push(outgoing);
            None
        }
        None => Some(outgoing),
    })
}

/// Handles one message and returns what it emitted synchronously, on this thread, before
/// `handle_line` returned (responses of cheap requests, notifications they caused); output of
/// spawned tasks still goes through the channel. Used by mcp-testkit's HTTP transport to tie
/// output to the POST that caused it.
pub fn handle_line_captured(server: &FixtureServer, line: &[u8]) -> Vec<Outgoing> {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            INLINE.with(|cell| cell.borrow_mut().take());
        }
    }
    INLINE.with(|cell| *cell.borrow_mut() = Some(Vec::new()));
    let reset = Reset;
    server.handle_line(line);
    let collected = INLINE.with(|cell| cell.borrow_mut().take());
    drop(reset);
    collected.unwrap_or_default()
}

/// Serves the fixture on the process's stdin and stdout with blocking I/O on this thread (see
/// the module docs) until stdin EOF, or forever under `--ignore-stdin-eof`. Output queued by
/// tasks before EOF is flushed before returning.
pub fn serve_stdio_blocking(options: ServerOptions) -> io::Result<()> {
    let garbage = options.garbage_lines;
    let ignore_eof = options.ignore_stdin_eof;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let handle = runtime.handle().clone();
    // Tasks spawned while handling lines on this thread run on the runtime thread.
    let _context = handle.enter();
    let (server, outgoing) = FixtureServer::new(options);
    let (shutdown_tx, shutdown_rx) = oneshot::channel();
    let writer = std::thread::Builder::new()
        .name("fixture-writer".into())
        .spawn(move || runtime.block_on(write_task_output(outgoing, garbage, shutdown_rx)))?;

    let stdin = io::stdin();
    let mut reader = io::BufReader::with_capacity(READ_BUFFER_BYTES, stdin.lock());
    let mut line = Vec::with_capacity(4096);
    let mut collected = Vec::new();
    let mut out = Vec::with_capacity(WRITE_BUFFER_BYTES);
    loop {
        let read = read_line_limited_blocking(&mut reader, &mut line, MAX_LINE_BYTES)?;
        if read == LineRead::Eof {
            break;
        }
        INLINE.with(|cell| *cell.borrow_mut() = Some(std::mem::take(&mut collected)));
        match read {
            LineRead::Line => server.handle_line(&line),
            _ => server.reject_oversized_message(MAX_LINE_BYTES),
        }
        collected = INLINE
            .with(|cell| cell.borrow_mut().take())
            .unwrap_or_default();
        if !collected.is_empty() {
            out.clear();
            for message in collected.drain(..) {
                push_message(&mut out, message.kind, &message.json, garbage);
            }
            let mut stdout = io::stdout().lock();
            stdout.write_all(&out)?;
            stdout.flush()?;
            if out.capacity() > KEEP_BUFFER_BYTES {
                out = Vec::with_capacity(WRITE_BUFFER_BYTES);
            }
        }
        line.clear();
        if line.capacity() > KEEP_BUFFER_BYTES {
            line = Vec::with_capacity(4096);
        }
    }
    if ignore_eof {
        tracing::debug!("input EOF ignored (--ignore-stdin-eof)");
        loop {
            std::thread::park();
        }
    }
    let _ = shutdown_tx.send(());
    drop(server);
    writer
        .join()
        .map_err(|_| io::Error::other("the writer thread panicked"))?
}

/// The runtime thread's writer: output of spawned tasks, written as it comes; on shutdown,
/// whatever is queued is written and the task ends.
async fn write_task_output(
    mut outgoing: OutgoingReceiver,
    garbage: bool,
    mut shutdown: oneshot::Receiver<()>,
) -> io::Result<()> {
    let mut buf = Vec::new();
    loop {
        let first = tokio::select! {
            biased;
            message = outgoing.recv() => message,
            _ = &mut shutdown => {
                outgoing.close();
                buf.clear();
                while let Ok(message) = outgoing.try_recv() {
                    push_message(&mut buf, message.kind, &message.json, garbage);
                }
                let mut stdout = io::stdout().lock();
                stdout.write_all(&buf)?;
                return stdout.flush();
            }
        };
        let Some(first) = first else {
            return Ok(());
        };
        buf.clear();
        push_message(&mut buf, first.kind, &first.json, garbage);
        while let Ok(message) = outgoing.try_recv() {
            push_message(&mut buf, message.kind, &message.json, garbage);
        }
        let mut stdout = io::stdout().lock();
        stdout.write_all(&buf)?;
        stdout.flush()?;
    }
}

/// Moves the part of `available` up to the next newline into `line` (unless the line is over
/// `limit`, then it is dropped and `too_long` set). Returns the bytes consumed and whether the
/// line is complete. Shared by the async and the blocking reader.
fn take_line_chunk(
    available: &[u8],
    line: &mut Vec<u8>,
    limit: usize,
    too_long: &mut bool,
) -> (usize, bool) {
    let (chunk, consumed, done) = match available.iter().position(|&b| b == b'\n') {
        Some(i) => (&available[..i], i + 1, true),
        None => (available, available.len(), false),
    };
    if !*too_long {
        if line.len() + chunk.len() > limit {
            *too_long = true;
            line.clear();
        } else {
            line.extend_from_slice(chunk);
        }
    }
    (consumed, done)
}

/// What end of input means for the line read so far.
fn at_end_of_input(line: &[u8], too_long: bool) -> LineRead {
    if too_long {
        LineRead::TooLong
    } else if line.is_empty() {
        LineRead::Eof
    } else {
        LineRead::Line
    }
}

/// The blocking twin of `read_line_limited`.
fn read_line_limited_blocking(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    limit: usize,
) -> io::Result<LineRead> {
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(at_end_of_input(line, too_long));
        }
        let (consumed, done) = take_line_chunk(available, line, limit, &mut too_long);
        reader.consume(consumed);
        if done {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

/// Largest accepted input line (64 MiB); longer lines are discarded and
/// answered with a `-32600` error.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The line written before every response under `--garbage-lines`.
pub const GARBAGE_LINE: &str = "this is not json";

const READ_BUFFER_BYTES: usize = 256 * 1024;
const WRITE_BUFFER_BYTES: usize = 64 * 1024;
/// Buffers grown past this by a huge message are released afterwards.
const KEEP_BUFFER_BYTES: usize = 4 * 1024 * 1024;
/// How long to wait for the writer to flush after stdin EOF.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the fixture on the process's stdin and stdout until stdin EOF
/// (or forever under `--ignore-stdin-eof`).
pub async fn serve_stdio(options: ServerOptions) -> io::Result<()> {
    // When stdin and stdout are pipes (as under any MCP client), drive them from the event loop
    // directly: tokio's `stdin()`/`stdout()` hand every read and write to the blocking thread
    // pool, which costs several thread wake-ups per message and dominated benchmark latency.
    match (pipe_receiver(0), pipe_sender(1)) {
        (Some(input), Some(output)) => serve(options, input, output).await,
        _ => serve(options, tokio::io::stdin(), tokio::io::stdout()).await,
    }
}

/// A non-blocking pipe reader over a duplicate of `fd`, if `fd` is a pipe.
fn pipe_receiver(fd: i32) -> Option<tokio::net::unix::pipe::Receiver> {
    tokio::net::unix::pipe::Receiver::from_owned_fd(duplicate(fd)?).ok()
}

/// A non-blocking pipe writer over a duplicate of `fd`, if `fd` is a pipe.
fn pipe_sender(fd: i32) -> Option<tokio::net::unix::pipe::Sender> {
    tokio::net::unix::pipe::Sender::from_owned_fd(duplicate(fd)?).ok()
}

fn duplicate(fd: i32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::{AsFd, BorrowedFd};
    // SAFETY: fds 0 and 1 are open for the life of the process.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    borrowed.as_fd().try_clone_to_owned().ok()
}

/// Serves the fixture over any byte stream pair until `input` reaches EOF;
/// output produced before EOF is flushed before returning. Under
/// `--ignore-stdin-eof` it never returns.
pub async fn serve<R, W>(options: ServerOptions, input: R, output: W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let garbage = options.garbage_lines;
    let ignore_eof = options.ignore_stdin_eof;
    let (server, outgoing) = FixtureServer::new(options);
    let (shutdown_tx, shutdown_rx) = oneshot::channel();
    let writer = tokio::spawn(write_loop(outgoing, output, garbage, shutdown_rx));

    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, input);
    let mut line = Vec::with_capacity(4096);
    loop {
        match read_line_limited(&mut reader, &mut line, MAX_LINE_BYTES).await {
            Ok(LineRead::Line) => server.handle_line(&line),
            Ok(LineRead::TooLong) => server.reject_oversized_message(MAX_LINE_BYTES),
            Ok(LineRead::Eof) => break,
            Err(e) => {
                tracing::debug!(error = %e, "input read failed; treating as EOF");
                break;
            }
        }
        line.clear();
        if line.capacity() > KEEP_BUFFER_BYTES {
            line = Vec::with_capacity(4096);
        }
    }

    if ignore_eof {
        tracing::debug!("input EOF ignored (--ignore-stdin-eof)");
        std::future::pending::<()>().await;
    }
    // Ignoring the error: the writer may already have stopped on a write error.
    let _ = shutdown_tx.send(());
    drop(server);
    match tokio::time::timeout(FLUSH_TIMEOUT, writer).await {
        Ok(Ok(result)) => result,
        Ok(Err(join_error)) => Err(io::Error::other(join_error)),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "timed out flushing output after input EOF",
        )),
    }
}

/// Outcome of reading one line.
#[derive(Debug, PartialEq, Eq)]
enum LineRead {
    /// A line (without its `\n`) is in the buffer; also a final unterminated line.
    Line,
    /// The line exceeded the limit and was discarded up to its `\n`.
    TooLong,
    /// End of input with nothing buffered.
    Eof,
}

async fn read_line_limited<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    limit: usize,
) -> io::Result<LineRead> {
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(at_end_of_input(line, too_long));
        }
        let (consumed, done) = take_line_chunk(available, line, limit, &mut too_long);
        reader.consume(consumed);
        if done {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

fn push_message(buf: &mut Vec<u8>, kind: OutgoingKind, json: &str, garbage: bool) {
    if garbage && kind == OutgoingKind::Response {
        buf.extend_from_slice(GARBAGE_LINE.as_bytes());
        buf.push(b'\n');
    }
    buf.extend_from_slice(json.as_bytes());
    buf.push(b'\n');
}

/// The single writer: batches everything queued into one write and flush.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut outgoing: OutgoingReceiver,
    mut output: W,
    garbage: bool,
    mut shutdown: oneshot::Receiver<()>,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(WRITE_BUFFER_BYTES);
    loop {
        let first = tokio::select! {
            biased;
            message = outgoing.recv() => message,
            _ = &mut shutdown => {
                // Flush what was queued before EOF, then stop.
                outgoing.close();
                while let Some(message) = outgoing.recv().await {
                    push_message(&mut buf, message.kind, &message.json, garbage);
                }
                output.write_all(&buf).await?;
                output.flush().await?;
                return Ok(());
            }
        };
        let Some(first) = first else {
            output.flush().await?;
            return Ok(());
        };
        push_message(&mut buf, first.kind, &first.json, garbage);
        drop(first);
        while buf.len() < KEEP_BUFFER_BYTES {
            match outgoing.try_recv() {
                Ok(message) => push_message(&mut buf, message.kind, &message.json, garbage),
                Err(_) => break,
            }
        }
        output.write_all(&buf).await?;
        output.flush().await?;
        buf.clear();
        if buf.capacity() > KEEP_BUFFER_BYTES {
            buf = Vec::with_capacity(WRITE_BUFFER_BYTES);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn reads_lines_with_limit() {
        let data: &[u8] = b"short\nthis line is far too long\nok\nlast";
        let mut reader = BufReader::with_capacity(4, data);
        let mut line = Vec::new();
        let mut seen = Vec::new();
        loop {
            let r = read_line_limited(&mut reader, &mut line, 10)
                .await
                .expect("read");
            match r {
                LineRead::Eof => break,
                LineRead::TooLong => seen.push("<too long>".to_owned()),
                LineRead::Line => seen.push(String::from_utf8_lossy(&line).into_owned()),
            }
            line.clear();
        }
        assert_eq!(seen, ["short", "<too long>", "ok", "last"]);
    }

    #[tokio::test]
    async fn serves_in_memory_and_flushes_on_eof() {
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nnot json\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}\n";
        let (client_side, server_side) = tokio::io::duplex(1 << 16);
        serve(ServerOptions::default(), input, server_side)
            .await
            .expect("serve");
        let mut out = String::new();
        let mut client_side = client_side;
        client_side
            .read_to_string(&mut out)
            .await
            .expect("read output");
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0]["id"], 1);
        assert_eq!(lines[1]["error"]["code"], -32700);
        assert_eq!(lines[2]["result"]["content"][0]["text"], "hi");
    }
}
