//! Newline-delimited JSON framing with a size cap.
//!
//! [`LineReader::next_frame`] is cancel-safe: all progress lives in the reader (bytes stay in the
//! `BufReader` until consumed), so it can sit in a `select!` next to the child's exit.
//!
//! What a line turns into depends on its bytes only, never on how they were split into reads:
//! - a JSON-RPC message: [`Frame::Message`];
//! - longer than the cap: reported as soon as the cap is passed, without waiting for its end
//!   (a hostile server may never send one), and the rest of it is discarded as it arrives.
//!   When its first bytes name the request it answers, that request fails and the connection
//!   goes on; otherwise the error is fatal, since nothing tells which request to fail;
//! - not UTF-8: fatal (JSON text is UTF-8; a server writing other bytes to its stdout is not
//!   speaking the protocol, and no request can be named);
//! - JSON but not JSON-RPC, or JSON-RPC-shaped but broken (`{"jsonrpc":"2.0","id":3,"result":`
//!   cut short): reported for the request it names, if any;
//! - anything else (a stray `console.log`): [`Frame::Garbage`], logged and skipped.

use std::sync::Arc;

use mcp_core::jsonrpc::{request_id_in_prefix, request_id_of};
use mcp_core::{Message, TransportError, TransportErrorKind};

/// The first bytes of an over-long line searched for the request it names.
const HEAD_BYTES: usize = 1024;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What one line turned into.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A JSON-RPC message.
    Message(Message),
    /// A line that cannot be used: reported for its request (non-fatal), or fatal.
    Bad(TransportError),
    /// Not JSON at all (a stray `console.log`); logged and skipped.
    Garbage(String),
}

pub(crate) struct LineReader<R> {
    inner: R,
    line: Vec<u8>,
    max: usize,
    /// Lines ended so far (the current line's number is one more), for error messages.
    lines_ended: u64,
    /// Discarding the rest of a line already reported for being over the cap.
    skipping: bool,
    /// The last line whose payloads share their bytes with it; reused when they are dropped.
    spare: Option<Arc<Vec<u8>>>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            line: Vec::new(),
            max,
            lines_ended: 0,
            skipping: false,
            spare: None,
        }
    }

    /// The next non-empty line as a frame; `Ok(None)` at end of stream.
    pub(crate) async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                // End of stream: a final line without a newline still counts.
                if self.skipping || self.line.iter().all(u8::is_ascii_whitespace) {
                    self.skipping = false;
                    self.line.clear();
                    return Ok(None);
                }
                let line = std::mem::take(&mut self.line);
                return Ok(Some(parse_line(&line, self.lines_ended + 1)));
            }
            let number = self.lines_ended + 1;
            match memchr(buf) {
                Some(pos) => {
                    let frame = if self.skipping {
                        self.skipping = false;
                        None
                    } else if self.line.len() + pos > self.max {
                        let frame = over_the_cap(self.max, &self.line, &buf[..pos]);
                        self.line = Vec::new();
                        Some(frame)
                    } else if self.line.is_empty() {
                        // Fast path: the whole line is in the buffer; parse it in place.
                        blank_or_parse(&buf[..pos], number)
                    } else {
                        self.line.extend_from_slice(&buf[..pos]);
                        // A line assembled from several reads is parsed in place: the
                        // message's payloads share the buffer instead of copying out of it,
                        // and the buffer is reused once they are dropped.
                        let line = Arc::new(std::mem::take(&mut self.line));
                        let frame = blank_or_parse_shared(&line, number);
                        self.spare = Some(line);
                        frame
                    };
                    self.inner.consume(pos + 1);
                    self.lines_ended += 1;
                    if let Some(frame) = frame {
                        return Ok(Some(frame));
                    }
                }
                None => {
                    let n = buf.len();
                    if self.skipping {
                        self.inner.consume(n);
                    } else if self.line.len() + n > self.max {
                        // Over the cap with no end in sight: report it now, discard the rest.
                        let frame = over_the_cap(self.max, &self.line, buf);
                        self.line = Vec::new();
                        self.skipping = true;
                        self.inner.consume(n);
                        return Ok(Some(frame));
                    } else {
                        if self.line.capacity() == 0 {
                            self.line = reclaim_spare(&mut self.spare);
                        }
                        self.line.extend_from_slice(buf);
                        self.inner.consume(n);
                    }
                }
            }
        }
    }
}

/// The error for a line longer than `max` whose first bytes are `start` then `more`: for the
/// request its first bytes name (the connection goes on), else fatal. Only the first `max + 1`
/// bytes are looked at, so the outcome does not depend on how the line was split into reads.
fn over_the_cap(max: usize, start: &[u8], more: &[u8]) -> Frame {
    // The id comes in the first KiB or not at all (a line's end is where it can come too, and
    // this line's end is not waited for).
    let mut head = start[..start.len().min(HEAD_BYTES)].to_vec();
    let wanted = (max + 1).saturating_sub(start.len()).min(more.len());
    let room = HEAD_BYTES.saturating_sub(head.len()).min(wanted);
    head.extend_from_slice(&more[..room]);
    Frame::Bad(match request_id_in_prefix(&head) {
        Some(id) => TransportError::recoverable(
            TransportErrorKind::MessageTooLarge,
            format!(
                "sent a message longer than the {max}-byte limit (max_message_size); it is \
                 discarded"
            ),
        )
        .for_request(Some(id)),
        None => TransportError::fatal(
            TransportErrorKind::MessageTooLarge,
            format!(
                "sent a line longer than the {max}-byte limit (max_message_size) that does not \
                 name its request at its start; the connection is closed, failing every request \
                 in flight"
            ),
        ),
    })
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

/// The first newline (SIMD search: results can be megabytes, so a byte loop shows up in
/// profiles).
fn memchr(buf: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', buf)
}

fn blank_or_parse(line: &[u8], number: u64) -> Option<Frame> {
    if line.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(parse_line(line, number))
    }
}

fn blank_or_parse_shared(line: &Arc<Vec<u8>>, number: u64) -> Option<Frame> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(match Message::from_shared_line(line) {
        Ok(message) => Frame::Message(message),
        Err(e) => bad_line(line, number, e),
    })
}

fn parse_line(line: &[u8], number: u64) -> Frame {
    match Message::from_slice(line) {
        Ok(message) => Frame::Message(message),
        Err(e) => bad_line(line, number, e),
    }
}

/// A line (number `number` of the output) that is not a JSON-RPC message: not UTF-8 (fatal),
/// JSON or JSON-RPC-shaped (reported, with the request it names), or neither (skipped).
///
/// Only on the failure path, and without building a `serde_json::Value` of the line: a line of
/// megabytes of `[0,0,…]` would take sixteen times its size as a `Value`.
fn bad_line(line: &[u8], number: u64, e: mcp_core::jsonrpc::MessageError) -> Frame {
    if let Err(utf8) = std::str::from_utf8(line) {
        let at = utf8.valid_up_to();
        return Frame::Bad(TransportError::fatal(
            TransportErrorKind::InvalidMessage,
            format!(
                "sent bytes that are not UTF-8 on line {number} of its output, at byte offset \
                 {at} of that line (byte 0x{:02x}); JSON-RPC messages are UTF-8 text, so the \
                 connection is closed, failing every request in flight",
                line[at]
            ),
        ));
    }
    if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() {
        return Frame::Bad(
            TransportError::recoverable(TransportErrorKind::InvalidMessage, format!("sent {e}"))
                .for_request(request_id_of(line)),
        );
    }
    match request_id_of(line) {
        Some(id) => Frame::Bad(
            TransportError::recoverable(
                TransportErrorKind::InvalidMessage,
                format!("sent a line that is not valid JSON for request {id}: {e}"),
            )
            .for_request(Some(id)),
        ),
        None => Frame::Garbage(preview(line)),
    }
}

fn preview(line: &[u8]) -> String {
    let head = &line[..line.len().min(200)];
    // Never split a character (the line is UTF-8 here; only the cut can end mid-character).
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
    };
    if line.len() > text.len() {
        format!("{text}…")
    } else {
        text.to_owned()
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
            Frame::Bad(e) if e.is_fatal() => format!("fatal:{:?}", e.kind()),
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
    async fn oversized_lines_are_reported_for_the_id_at_their_start_and_skipped() {
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
                        // The id comes last: nothing names the request when the cap is passed.
                        "fatal:MessageTooLarge".to_owned(),
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
                assert!(e.message().contains("1000-byte limit"), "{e}");
                assert_eq!(e.kind(), TransportErrorKind::MessageTooLarge);
                assert!(e.is_fatal(), "no request is named: {e}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// Never ends and never sends a newline: `x` forever.
    struct Endless {
        head: Vec<u8>,
        sent: usize,
    }

    impl AsyncRead for Endless {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = buf.remaining().min(4096);
            for _ in 0..n {
                let byte = self.head.get(self.sent).copied().unwrap_or(b'x');
                buf.put_slice(&[byte]);
                self.sent += 1;
            }
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn an_endless_line_is_reported_once_it_passes_the_cap() {
        for (head, expected) in [
            (&b""[..], "fatal:MessageTooLarge"),
            (
                &b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":\""[..],
                "bad:MessageTooLarge:Some(Number(4))",
            ),
        ] {
            let source = Endless {
                head: head.to_vec(),
                sent: 0,
            };
            let mut lines = LineReader::new(BufReader::with_capacity(1000, source), 100_000);
            let frame = lines.next_frame().await.unwrap().unwrap();
            assert_eq!(describe(&frame), expected);
            // Discarded as it arrived: nothing of it was kept.
            assert_eq!(lines.line.capacity(), 0);
            match frame {
                Frame::Bad(e) => assert!(e.message().contains("100000-byte limit"), "{e}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn invalid_utf8_is_fatal_and_names_the_line_and_byte() {
        let data = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"ab\xffc\"}\n";
        for chunk in [1, 5, 1000] {
            for buffer in [8, 8192] {
                let got = frames(data, chunk, buffer, 1 << 20).await;
                assert_eq!(got.len(), 2, "chunk {chunk} buffer {buffer}");
                let Frame::Bad(e) = &got[1] else {
                    panic!("{:?}", got[1])
                };
                assert!(e.is_fatal());
                assert_eq!(e.kind(), TransportErrorKind::InvalidMessage);
                assert!(e.message().contains("line 2 of its output"), "{e}");
                assert!(e.message().contains("byte offset 36"), "{e}");
                assert!(e.message().contains("0xff"), "{e}");
            }
        }
        let got = frames(b"\xfe\xfe\n", 7, 64, 100).await;
        assert_eq!(
            got.iter().map(describe).collect::<Vec<_>>(),
            ["fatal:InvalidMessage"]
        );
    }

    #[tokio::test]
    async fn a_broken_line_that_names_its_request_fails_that_request() {
        let data = b"{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{\"a\":\n[0,0,0]\n{ not: json }\n";
        for chunk in [1, 3, 100] {
            let got: Vec<String> = frames(data, chunk, 16, 1 << 20)
                .await
                .iter()
                .map(describe)
                .collect();
            assert_eq!(
                got,
                [
                    "bad:InvalidMessage:Some(Number(6))",
                    "bad:InvalidMessage:None",
                    "garbage:{ not: json }",
                ],
                "chunk {chunk}"
            );
        }
    }
}
