//! Newline-delimited JSON framing with a size cap.
//!
//! [`LineReader::next_frame`] is cancel-safe: all progress lives in the reader (bytes stay in the
//! `BufReader` until consumed), so it can sit in a `select!` next to the child's exit.

use std::sync::Arc;

use mcp_core::{Message, OversizedMessage, RequestId, TransportError, TransportErrorKind};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What one line turned into.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A JSON-RPC message.
    Message(Message),
    /// A line that cannot be used: reported (non-fatal) or skipped.
    Bad(TransportError),
    /// Not JSON at all (a stray `console.log`); logged and skipped.
    Garbage(String),
}

pub(crate) struct LineReader<R> {
    inner: R,
    line: Vec<u8>,
    max: usize,
    /// Discarding a line over the cap (its size and ends kept to name its request).
    oversized: Option<OversizedMessage>,
    /// The last line whose payloads share their bytes with it; reused when they are dropped.
    spare: Option<Arc<Vec<u8>>>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            line: Vec::new(),
            max,
            oversized: None,
            spare: None,
        }
    }

    /// The next non-empty line as a frame; `Ok(None)` at end of stream.
    pub(crate) async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                // End of stream: a final line without a newline still counts.
                if self.oversized.is_some() {
                    return Ok(Some(self.finish_oversized()));
                }
                if self.line.iter().all(u8::is_ascii_whitespace) {
                    self.line.clear();
                    return Ok(None);
                }
                let line = std::mem::take(&mut self.line);
                return Ok(Some(parse_line(&line)));
            }
            match memchr(buf) {
                Some(pos) => {
                    let frame = if let Some(over) = &mut self.oversized {
                        over.push(&buf[..pos]);
                        self.inner.consume(pos + 1);
                        Some(self.finish_oversized())
                    } else if self.line.is_empty() {
                        // Fast path: the whole line is in the buffer; parse it in place.
                        let frame = if pos > self.max {
                            let mut over = OversizedMessage::new();
                            over.push(&buf[..pos]);
                            Some(Frame::Bad(over.error(self.max)))
                        } else {
                            blank_or_parse(&buf[..pos])
                        };
                        self.inner.consume(pos + 1);
                        frame
                    } else {
                        let total = self.line.len() + pos;
                        if total > self.max {
                            let mut over = start_oversized(&mut self.line);
                            over.push(&buf[..pos]);
                            self.inner.consume(pos + 1);
                            self.oversized = Some(over);
                            Some(self.finish_oversized())
                        } else {
                            self.line.extend_from_slice(&buf[..pos]);
                            self.inner.consume(pos + 1);
                            // A line assembled from several reads is parsed in place: the
                            // message's payloads share the buffer instead of copying out of it,
                            // and the buffer is reused once they are dropped.
                            let line = Arc::new(std::mem::take(&mut self.line));
                            let frame = blank_or_parse_shared(&line);
                            self.spare = Some(line);
                            frame
                        }
                    };
                    if let Some(frame) = frame {
                        return Ok(Some(frame));
                    }
                }
                None => {
                    let n = buf.len();
                    if let Some(over) = &mut self.oversized {
                        over.push(buf);
                    } else if self.line.len() + n > self.max {
                        let mut over = start_oversized(&mut self.line);
                        over.push(buf);
                        self.oversized = Some(over);
                    } else {
                        if self.line.capacity() == 0 {
                            self.line = reclaim_spare(&mut self.spare);
                        }
                        self.line.extend_from_slice(buf);
                    }
                    self.inner.consume(n);
                }
            }
        }
    }

    fn finish_oversized(&mut self) -> Frame {
        let over = self.oversized.take().unwrap_or_default();
        Frame::Bad(over.error(self.max))
    }
}

/// The buffer of the last shared line if every payload sharing it is gone (cleared, with its
/// capacity), else a fresh buffer of the same capacity.
fn reclaim_spare(spare: &mut Option<Arc<Vec<u8>>>) -> Vec<u8> {
    match spare.take().map(Arc::try_unwrap) {
        Some(Ok(mut buffer)) => {
            buffer.clear();
            buffer
        }
        Some(Err(still_shared)) => Vec::with_capacity(still_shared.capacity()),
        None => Vec::new(),
    }
}

/// Switches to discarding: keeps the ends of what the line had so far, frees the rest.
fn start_oversized(line: &mut Vec<u8>) -> OversizedMessage {
    let mut over = OversizedMessage::new();
    over.push(line);
    *line = Vec::new();
    over
}

/// The first newline (SIMD search: results can be megabytes, so a byte loop shows up in
/// profiles).
fn memchr(buf: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', buf)
}

fn blank_or_parse(line: &[u8]) -> Option<Frame> {
    if line.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(parse_line(line))
    }
}

fn blank_or_parse_shared(line: &Arc<Vec<u8>>) -> Option<Frame> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(match Message::from_shared_line(line) {
        Ok(message) => Frame::Message(message),
        Err(e) => bad_line(line, e),
    })
}

fn parse_line(line: &[u8]) -> Frame {
    match Message::from_slice(line) {
        Ok(message) => Frame::Message(message),
        Err(e) => bad_line(line, e),
    }
}

/// A line that is not a JSON-RPC message: invalid JSON-RPC (reported, with its request id when
/// it has one) or not JSON at all (skipped).
fn bad_line(line: &[u8], e: mcp_core::jsonrpc::MessageError) -> Frame {
    // Only on the failure path: is it JSON at all, and does it name a request?
    match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(value) => {
            let id = value
                .get("id")
                .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
            Frame::Bad(
                TransportError::recoverable(
                    TransportErrorKind::InvalidMessage,
                    format!("the server sent {e}"),
                )
                .for_request(id),
            )
        }
        Err(_) => Frame::Garbage(preview(line)),
    }
}

fn preview(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(200)]);
    if line.len() > 200 {
        format!("{text}…")
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncRead, BufReader, ReadBuf};

    /// Delivers its data in fixed-size chunks, to exercise every buffer boundary.
    struct Chunked {
        data: Vec<u8>,
        pos: usize,
        chunk: usize,
    }

    impl AsyncRead for Chunked {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = self
                .chunk
                .min(self.data.len() - self.pos)
                .min(buf.remaining());
            let start = self.pos;
            buf.put_slice(&self.data[start..start + n]);
            self.pos += n;
            Poll::Ready(Ok(()))
        }
    }

    async fn frames(data: &[u8], chunk: usize, buffer: usize, max: usize) -> Vec<Frame> {
        let reader = BufReader::with_capacity(
            buffer,
            Chunked {
                data: data.to_vec(),
                pos: 0,
                chunk,
            },
        );
        let mut lines = LineReader::new(reader, max);
        let mut out = Vec::new();
        while let Some(f) = lines.next_frame().await.unwrap() {
            out.push(f);
        }
        out
    }

    fn describe(f: &Frame) -> String {
        match f {
            Frame::Message(m) => format!("msg:{}", m.to_json_string().unwrap()),
            Frame::Bad(e) => format!("bad:{:?}:{:?}", e.kind(), e.request_id()),
            Frame::Garbage(g) => format!("garbage:{g}"),
        }
    }

    #[tokio::test]
    async fn splits_lines_across_every_chunk_boundary() {
        let data = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\nnot json\r\n  \n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\r\n{\"x\":1,\"id\":7}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":[]}";
        let expected = vec![
            "msg:{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".to_owned(),
            "garbage:not json\r".to_owned(),
            "msg:{\"jsonrpc\":\"2.0\",\"method\":\"m\"}".to_owned(),
            "bad:InvalidMessage:Some(Number(7))".to_owned(),
            "msg:{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":[]}".to_owned(),
        ];
        for chunk in [1, 2, 3, 7, 16, 1000] {
            for buffer in [8, 13, 64, 8192] {
                let got: Vec<String> = frames(data, chunk, buffer, 1 << 20)
                    .await
                    .iter()
                    .map(describe)
                    .collect();
                assert_eq!(got, expected, "chunk {chunk} buffer {buffer}");
            }
        }
    }

    #[tokio::test]
    async fn oversized_lines_are_reported_with_their_id_and_skipped() {
        let big = "x".repeat(5000);
        let data = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{{\"t\":\"{big}\"}}}}\n{{\"result\":{{\"t\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":\"s\"}}\n{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{}}}}\n"
        );
        for chunk in [1, 100, 7000] {
            for buffer in [64, 8192] {
                let got: Vec<String> = frames(data.as_bytes(), chunk, buffer, 1000)
                    .await
                    .iter()
                    .map(describe)
                    .collect();
                assert_eq!(
                    got,
                    vec![
                        "bad:MessageTooLarge:Some(Number(9))".to_owned(),
                        "bad:MessageTooLarge:Some(String(\"s\"))".to_owned(),
                        "msg:{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}".to_owned(),
                    ],
                    "chunk {chunk} buffer {buffer}"
                );
            }
        }
    }

    #[tokio::test]
    async fn oversized_line_message_names_the_limit() {
        let data = format!("{}\n", "y".repeat(3000));
        let got = frames(data.as_bytes(), 512, 256, 1000).await;
        match &got[..] {
            [Frame::Bad(e)] => {
                assert!(e.message().contains("3000 bytes"), "{e}");
                assert!(e.message().contains("1000-byte limit"), "{e}");
                assert!(!e.is_fatal());
            }
            other => panic!("{other:?}"),
        }
    }
}
