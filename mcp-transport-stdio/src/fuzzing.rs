//! Entry points for the fuzz targets in the repository's `fuzz/` directory: the framing of a
//! server's stdout and the capture of its stderr, reached without a child process. Not an API
//! (hidden from the docs); it follows the private modules it wraps.

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, BufReader, ReadBuf};

use crate::framing::{Frame, LineReader};
use crate::stderr::{drain_stderr, StderrTail};

/// Frames `bytes` as the transport frames a server's stdout, lines capped at `max` bytes: the
/// bytes arrive `read_size` at a time (at least 1) through a read buffer of `buffer` bytes (at
/// least 1). One description per frame, in order: `message: <json>`, `bad: <error>` or
/// `garbage: <preview>`; a last `io error: …` if reading failed.
///
/// The same bytes must give the same descriptions whatever `read_size` and `buffer` are.
pub fn frames(bytes: &[u8], read_size: usize, buffer: usize, max: usize) -> Vec<String> {
    let source = Chunked {
        data: bytes,
        read_size: read_size.max(1),
    };
    let mut lines = LineReader::new(BufReader::with_capacity(buffer.max(1), source), max);
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    loop {
        // The source is always ready, so every read completes on its first poll.
        match pin!(lines.next_frame()).poll(&mut cx) {
            Poll::Ready(Ok(Some(frame))) => out.push(describe(&frame)),
            Poll::Ready(Ok(None)) => return out,
            Poll::Ready(Err(e)) => {
                out.push(format!("io error: {e}"));
                return out;
            }
            Poll::Pending => {
                out.push("io error: a read of in-memory bytes was pending".to_owned());
                return out;
            }
        }
    }
}

/// Drains `bytes` as a child's stderr, arriving `read_size` bytes at a time (at least 1), into
/// a tail of `budget` bytes, and returns the tail's text.
///
/// The same bytes must give the same text whatever `read_size` is.
pub fn stderr_tail(bytes: &[u8], read_size: usize, budget: usize) -> String {
    let tail = StderrTail::new(budget);
    let source = Chunked {
        data: bytes,
        read_size: read_size.max(1),
    };
    let mut cx = Context::from_waker(Waker::noop());
    // The source is always ready, so draining completes on its first poll.
    let drained = pin!(drain_stderr(source, &tail, "fuzz")).poll(&mut cx);
    match drained {
        Poll::Ready(()) => tail.text(),
        Poll::Pending => "io error: a read of in-memory bytes was pending".to_owned(),
    }
}

#[allow(unreachable_patterns)] // Frames added later are described by their Debug form.
fn describe(frame: &Frame) -> String {
    match frame {
        Frame::Message(message) => match message.to_json_string() {
            Ok(json) => format!("message: {json}"),
            Err(e) => format!("message that cannot be encoded: {e}"),
        },
        Frame::Bad(error) => format!("bad: {error} (request {:?})", error.request_id()),
        Frame::Garbage(preview) => format!("garbage: {preview}"),
        other => format!("{other:?}"),
    }
}

/// In-memory bytes handed out at most `read_size` at a time.
struct Chunked<'a> {
    data: &'a [u8],
    read_size: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.read_size.min(self.data.len()).min(buf.remaining());
        let (now, rest) = self.data.split_at(n);
        buf.put_slice(now);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}
