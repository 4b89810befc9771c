//! Newline-delimited JSON framing with a size cap.
//!
//! [`LineReader::next_frame`] is cancel-safe: all progress lives in the reader (bytes stay in the
//! `BufReader` until consumed), so it can sit in a `select!` next to the child's exit.
//!
//! What a line turns into depends on its bytes only, never on how they were split into reads:
//! - a JSON-RPC message: [`Frame::Message`];
//! - longer than the cap (`max` bytes), it is discarded as it arrives, never buffered:
//!   - when its first KiB names the request it answers (`{"jsonrpc":"2.0","id":5,…`), that
//!     request fails as soon as the cap is passed, without waiting for the line's end (a
//!     hostile server may never send one); the rest is skipped, and the connection goes on
//!     when the line ends within [`skipped_allowance`] (`max` plus at least 16 MiB: a large
//!     but finite answer costs only the reading); a line still going past it is fatal (an
//!     endless line must end somewhere, or no other message is ever read);
//!   - otherwise only its first and last KiB are kept ([`OversizedMessage`]), and the line
//!     gets an allowance of another `max` bytes to end: if it does, the request its end names
//!     (`…,"jsonrpc":"2.0","id":5}`, the TypeScript SDK's order) fails, or none if it names
//!     none; either way the connection goes on. A line still going at `2 × max` bytes is fatal
//!     (nothing tells which request to fail, and an endless line must end somewhere);
//! - not UTF-8: fails the request it names (read member by member, or as its last member);
//!   reported for no request when a `method` member makes it the server's own request or
//!   notification (no answer is lost); fatal when it is another JSON object naming none (an
//!   answer may be lost and nothing tells whose); otherwise a stray log line in another
//!   encoding: [`Frame::Garbage`];
//! - JSON but not JSON-RPC, or JSON-RPC-shaped but broken (`{"jsonrpc":"2.0","id":3,"result":`
//!   cut short): reported for the request it names, if any;
//! - anything else (a stray `console.log`): [`Frame::Garbage`], logged and skipped.
//!
//! What a line shows of the server's text (a preview, a parse error quoting it) goes through
//! [`excerpt_of_start`]: redacted, control characters out, cut.

use std::sync::Arc;

use mcp_core::{Message, TransportError, TransportErrorKind};
use mcp_wire::redact::excerpt_of_start;
use mcp_wire::OversizedMessage;
use mcp_wire::{
    classify_broken_message, message_error_text, request_id_in_prefix, request_id_of, BrokenMessage,
};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The first bytes of an over-long line searched for the request it names.
const HEAD_BYTES: usize = 1024;
/// The characters of a line shown in a [`Frame::Garbage`] preview.
const PREVIEW_CHARS: usize = 200;

/// What one line turned into.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A JSON-RPC message.
    Message(Message),
    /// A line that cannot be used: reported for its request (non-fatal), or fatal.
    Bad(TransportError),
    /// Not JSON at all (a stray `console.log`), as an excerpt (redacted, cut); logged and
    /// skipped.
    Garbage(String),
}

/// Where the reader is in a line longer than the cap.
#[derive(Debug)]
enum OverCap {
    /// Not in one.
    No,
    /// Past the cap, its first KiB naming no request: discarded while its ends are kept,
    /// until it ends (reported for the request its end names) or passes `2 × max` (fatal).
    Discarding(OversizedMessage),
    /// Reported at the cap for the request its first KiB names, `read` bytes of it read:
    /// the rest is discarded, unseen, until it ends or passes `2 × max` (fatal).
    Reported { read: usize },
    /// Already fatal: the rest of it is discarded, unseen.
    Skipping,
}

pub(crate) struct LineReader<R> {
    inner: R,
    line: Vec<u8>,
    max: usize,
    /// Lines ended so far (the current line's number is one more), for error messages.
    lines_ended: u64,
    over_cap: OverCap,
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
            over_cap: OverCap::No,
            spare: None,
        }
    }

    /// The next non-empty line as a frame; `Ok(None)` at end of stream.
    pub(crate) async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let number = self.lines_ended + 1;
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                // End of stream: a final line without a newline still counts.
                let frame = match std::mem::replace(&mut self.over_cap, OverCap::No) {
                    OverCap::Skipping | OverCap::Reported { .. } => None,
                    OverCap::Discarding(discarded) => {
                        Some(too_large_at_its_end(&discarded, self.max, number))
                    }
                    OverCap::No if self.line.iter().all(u8::is_ascii_whitespace) => None,
                    OverCap::No => Some(parse_line(&self.line, number)),
                };
                self.line = Vec::new();
                return Ok(frame);
            }
            let (mut bytes, mut ends) = match memchr(buf) {
                Some(pos) => (&buf[..pos], true),
                None => (buf, false),
            };
            let mut used = bytes.len() + usize::from(ends);
            let frame = if !matches!(self.over_cap, OverCap::No) {
                discard(&mut self.over_cap, bytes, ends, self.max, number)
            } else if self.line.len() + bytes.len() > self.max {
                // Over the cap, with or without an end in sight: decided now, from the
                // line's first KiB; the rest is discarded as it arrives.
                let start = std::mem::take(&mut self.line);
                match request_id_in_prefix(&head_of(self.max, &start, bytes)) {
                    Some(id) => {
                        // Read only up to the cap: the rest (its end, or its passing
                        // `2 × max`) is counted by `discard`, whatever the reads' sizes.
                        let to_the_cap = (self.max + 1).saturating_sub(start.len());
                        (bytes, ends) = (&bytes[..to_the_cap.min(bytes.len())], false);
                        used = bytes.len();
                        self.over_cap = OverCap::Reported {
                            read: start.len() + bytes.len(),
                        };
                        Some(too_large_at_the_cap(id, self.max, number))
                    }
                    None => {
                        let mut discarded = OversizedMessage::new();
                        discarded.push(&start);
                        self.over_cap = OverCap::Discarding(discarded);
                        discard(&mut self.over_cap, bytes, ends, self.max, number)
                    }
                }
            } else if !ends {
                if self.line.capacity() == 0 {
                    self.line = reclaim_spare(&mut self.spare);
                }
                self.line.extend_from_slice(bytes);
                None
            } else if self.line.is_empty() {
                // Fast path: the whole line is in the buffer; parse it in place.
                blank_or_parse(bytes, number)
            } else {
                self.line.extend_from_slice(bytes);
                // A line assembled from several reads is parsed in place: the message's
                // payloads share the buffer instead of copying out of it, and the buffer is
                // reused once they are dropped.
                let line = Arc::new(std::mem::take(&mut self.line));
                let frame = blank_or_parse_shared(&line, number);
                self.spare = Some(line);
                frame
            };
            self.inner.consume(used);
            if ends {
                self.lines_ended += 1;
            }
            if let Some(frame) = frame {
                return Ok(Some(frame));
            }
        }
    }
}

/// The next `bytes` of a line over the cap (its last ones if `ends`), in state `over_cap`
/// (not [`OverCap::No`]); the frame, once its outcome is known. Depends on the line's bytes
/// only: the allowance is counted in bytes, not reads.
fn discard(
    over_cap: &mut OverCap,
    bytes: &[u8],
    ends: bool,
    max: usize,
    number: u64,
) -> Option<Frame> {
    let allowed = max.saturating_mul(2);
    let frame = match over_cap {
        OverCap::No | OverCap::Skipping => None,
        OverCap::Reported { read } => {
            *read = read.saturating_add(bytes.len());
            if *read > skipped_allowance(max) {
                *over_cap = OverCap::Skipping;
                Some(too_large_past_the_allowance(max, number, Named::AtTheCap))
            } else {
                None
            }
        }
        OverCap::Discarding(discarded) => {
            if discarded.size().saturating_add(bytes.len()) > allowed {
                let frame = too_large_past_the_allowance(max, number, Named::Nothing);
                *over_cap = OverCap::Skipping;
                Some(frame)
            } else {
                discarded.push(bytes);
                ends.then(|| too_large_at_its_end(discarded, max, number))
            }
        }
    };
    if ends {
        *over_cap = OverCap::No;
    }
    frame
}

/// The first [`HEAD_BYTES`] of a line longer than `max` whose first bytes are `start` then
/// `more`, never past its byte `max + 1`: what was known when the cap was passed, so the
/// outcome does not depend on how the line was split into reads.
fn head_of(max: usize, start: &[u8], more: &[u8]) -> Vec<u8> {
    let mut head = start[..start.len().min(HEAD_BYTES)].to_vec();
    let wanted = max
        .saturating_add(1)
        .saturating_sub(start.len())
        .min(more.len());
    let room = HEAD_BYTES.saturating_sub(head.len()).min(wanted);
    head.extend_from_slice(&more[..room]);
    head
}

/// Line `number`, over the `max`-byte cap, named request `id` in its first KiB.
fn too_large_at_the_cap(id: mcp_core::RequestId, max: usize, number: u64) -> Frame {
    Frame::Bad(
        TransportError::recoverable(
            TransportErrorKind::MessageTooLarge,
            format!(
                "sent a message longer than the {max}-byte limit (max_message_size) on line \
                 {number} of its output; it is discarded"
            ),
        )
        .for_request(Some(id)),
    )
}

/// Line `number`, over the `max`-byte cap, ended within the allowance: for the request its
/// ends name, if any.
fn too_large_at_its_end(discarded: &OversizedMessage, max: usize, number: u64) -> Frame {
    let id = discarded.request_id();
    let named = if id.is_some() {
        ""
    } else {
        " that names no request"
    };
    Frame::Bad(
        TransportError::recoverable(
            TransportErrorKind::MessageTooLarge,
            format!(
                "sent a message of {} bytes{named} on line {number} of its output, over the \
                 {max}-byte limit (max_message_size); it was discarded",
                discarded.size()
            ),
        )
        .for_request(id),
    )
}

/// What the first KiB of a line over the cap named.
enum Named {
    /// No request.
    Nothing,
    /// A request, failed when the cap was passed.
    AtTheCap,
}

/// How far a line over the `max`-byte cap whose request already failed at the cap is read
/// before it counts as endless: `max` plus the larger of `max` and 16 MiB. Nothing waits on
/// such a line any more, so a well-behaved answer somewhat over the cap leaves the connection
/// be; only a line that goes on and on ends it.
pub(crate) fn skipped_allowance(max: usize) -> usize {
    max.saturating_add(max.max(16 * 1024 * 1024))
}

/// Line `number` passed its allowance (twice the `max`-byte cap when it named no request,
/// [`skipped_allowance`] when it did) without ending.
fn too_large_past_the_allowance(max: usize, number: u64, named: Named) -> Frame {
    let allowed = match named {
        Named::Nothing => max.saturating_mul(2),
        Named::AtTheCap => skipped_allowance(max),
    };
    let what = match named {
        Named::Nothing => "that names no request in its first KiB",
        Named::AtTheCap => "whose request already failed when the limit was passed",
    };
    Frame::Bad(TransportError::fatal(
        TransportErrorKind::MessageTooLarge,
        format!(
            "sent a line longer than {allowed} bytes on line {number} of its output, over the \
             {max}-byte limit (max_message_size), {what}; the connection is closed, failing \
             every request in flight"
        ),
    ))
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

/// A line (number `number` of the output) that is not a JSON-RPC message: reported for the
/// request it names; if it names none, fatal when it is a JSON object that is not UTF-8,
/// reported without a request when it is JSON, else skipped.
///
/// Only on the failure path, and without building a `serde_json::Value` of the line: a line of
/// megabytes of `[0,0,…]` would take sixteen times its size as a `Value`.
fn bad_line(line: &[u8], number: u64, e: mcp_core::jsonrpc::MessageError) -> Frame {
    if let Err(utf8) = std::str::from_utf8(line) {
        return not_utf8(line, number, utf8.valid_up_to());
    }
    if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() {
        return Frame::Bad(
            TransportError::recoverable(
                TransportErrorKind::InvalidMessage,
                format!("sent {}", message_error_text(&e)),
            )
            .for_request(request_id_of(line)),
        );
    }
    match request_id_of(line) {
        Some(id) => Frame::Bad(
            TransportError::recoverable(
                TransportErrorKind::InvalidMessage,
                format!(
                    "sent a line that is not valid JSON for request {id}: {}",
                    message_error_text(&e)
                ),
            )
            .for_request(Some(id)),
        ),
        None => Frame::Garbage(excerpt_of_start(line, PREVIEW_CHARS)),
    }
}

/// Line `number`, whose first byte that is not UTF-8 is at offset `at`: fails the request it
/// names; the server's own request or notification is reported for no request (no answer is
/// lost); another JSON object naming none is fatal (an answer may be lost, and nothing tells
/// whose); anything else is a log line in another encoding, skipped.
fn not_utf8(line: &[u8], number: u64, at: usize) -> Frame {
    let where_ = format!(
        "bytes that are not UTF-8 on line {number} of its output, at byte offset {at} of that \
         line (byte 0x{:02x})",
        line.get(at).copied().unwrap_or_default()
    );
    match classify_broken_message(line) {
        BrokenMessage::AnswerTo(id) => {
            return Frame::Bad(
                TransportError::recoverable(
                    TransportErrorKind::InvalidMessage,
                    format!(
                        "sent {where_} in a message naming request {id}; JSON-RPC messages are \
                         UTF-8 text, so it is discarded"
                    ),
                )
                .for_request(Some(id)),
            );
        }
        BrokenMessage::ServerRequestOrNotification => {
            return Frame::Bad(TransportError::recoverable(
                TransportErrorKind::InvalidMessage,
                format!(
                    "sent {where_} in a request or notification of its own (it answers no \
                     request); JSON-RPC messages are UTF-8 text, so it is discarded"
                ),
            ));
        }
        BrokenMessage::Unknown => {}
    }
    if line.trim_ascii_start().first() == Some(&b'{') {
        return Frame::Bad(TransportError::fatal(
            TransportErrorKind::InvalidMessage,
            format!(
                "sent {where_} in a message that names no request; JSON-RPC messages are UTF-8 \
                 text, so the connection is closed, failing every request in flight"
            ),
        ));
    }
    Frame::Garbage(excerpt_of_start(line, PREVIEW_CHARS))
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
            "garbage:not json".to_owned(),
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

    /// Over-cap lines (`max` 1000): the id first (reported at the cap, then skipped to its end:
    /// it ends well within [`skipped_allowance`]), the id last within the allowance (reported at the line's end), no id within the allowance,
    /// the id last past the allowance (fatal at 2 × `max`), then a good line.
    fn over_cap_lines() -> String {
        let big = "x".repeat(1500);
        let huge = "x".repeat(2500);
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{{\"t\":\"{huge}\"}}}}\n\
             {{\"result\":{{\"t\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":\"s\"}}\n\
             {big}\n\
             {{\"result\":{{\"t\":\"{huge}\"}},\"jsonrpc\":\"2.0\",\"id\":5}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{}}}}\n"
        )
    }

    #[tokio::test]
    async fn oversized_lines_fail_the_request_they_name_at_either_end() {
        let data = over_cap_lines();
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
                        // Its request fails at the cap; the line ends within its allowance.
                        "bad:MessageTooLarge:Some(Number(9))".to_owned(),
                        // The TypeScript SDK's order: the id comes last, within the allowance.
                        "bad:MessageTooLarge:Some(String(\"s\"))".to_owned(),
                        "bad:MessageTooLarge:None".to_owned(),
                        // The id would come last, but past twice the cap: nothing is waited for.
                        "fatal:MessageTooLarge".to_owned(),
                        "msg:{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}".to_owned(),
                    ],
                    "chunk {chunk} buffer {buffer}"
                );
            }
        }
    }

    #[test]
    fn over_cap_outcomes_do_not_depend_on_how_the_bytes_were_read() {
        let mut data = over_cap_lines().into_bytes();
        data.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"a\xffb\"}\ncaf\xe9\n{\xff}\n",
        );
        data.extend_from_slice(&[b'x'; 2100]);
        let whole = crate::fuzzing::frames(&data, data.len(), data.len() + 1, 1000);
        assert_eq!(whole.len(), 9, "{whole:#?}");
        for read_size in 1..=300 {
            for buffer in [1, 7, 64, 1000, 1001, 4096] {
                assert_eq!(
                    crate::fuzzing::frames(&data, read_size, buffer, 1000),
                    whole,
                    "reads of {read_size} through a {buffer}-byte buffer"
                );
            }
        }
    }

    #[tokio::test]
    async fn over_cap_messages_name_the_limit_and_what_happens() {
        let data = over_cap_lines();
        let got = frames(data.as_bytes(), 512, 256, 1000).await;
        let messages: Vec<String> = got
            .iter()
            .filter_map(|f| match f {
                Frame::Bad(e) => Some(e.message().to_owned()),
                _ => None,
            })
            .collect();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        for message in &messages {
            assert!(message.contains("1000-byte limit"), "{message}");
            assert!(message.contains("max_message_size"), "{message}");
        }
        assert!(messages[0].contains("line 1"), "{}", messages[0]);
        assert!(messages[1].contains("line 2"), "{}", messages[1]);
        assert!(messages[1].contains("1544 bytes"), "{}", messages[1]);
        assert!(messages[3].contains("2000 bytes"), "{}", messages[3]);
        assert!(messages[3].contains("names no request"), "{}", messages[3]);
        assert!(messages[3].contains("closed"), "{}", messages[3]);
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
    async fn an_endless_line_is_reported_after_a_bounded_amount_of_input() {
        // (its first bytes, the outcomes, how far it is read before each)
        for (head, expected) in [
            (&b""[..], &[("fatal:MessageTooLarge", 200_000)][..]),
            (
                &b"{\"result\":\""[..],
                &[("fatal:MessageTooLarge", 200_000)],
            ),
            (
                &b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":\""[..],
                // Its request fails at the cap; the line still ends the connection past its
                // allowance, or no other message would ever be read.
                &[
                    ("bad:MessageTooLarge:Some(Number(4))", 100_000),
                    ("fatal:MessageTooLarge", skipped_allowance(100_000)),
                ],
            ),
        ] {
            let source = Endless {
                head: head.to_vec(),
                sent: 0,
            };
            let mut lines = LineReader::new(BufReader::with_capacity(1000, source), 100_000);
            for &(outcome, read_at_most) in expected {
                let frame = lines.next_frame().await.unwrap().unwrap();
                assert_eq!(describe(&frame), outcome);
                // Discarded as it arrived: nothing of it was kept but its ends.
                assert_eq!(lines.line.capacity(), 0);
                // Read no further than the point where the outcome is known (plus one read).
                let sent = lines.inner.get_ref().sent;
                assert!(sent <= read_at_most + 1000, "{sent} bytes read");
                match frame {
                    Frame::Bad(e) => assert!(e.message().contains("100000-byte limit"), "{e}"),
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_fails_the_request_it_names() {
        // The id before the bad byte, and the id last (the TypeScript SDK's order).
        let data = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"ab\xffc\"}\n{\"result\":\"\xff\",\"jsonrpc\":\"2.0\",\"id\":2}\n";
        for chunk in [1, 5, 1000] {
            for buffer in [8, 8192] {
                let got = frames(data, chunk, buffer, 1 << 20).await;
                assert_eq!(
                    got.iter().map(describe).collect::<Vec<_>>(),
                    [
                        "msg:{\"jsonrpc\":\"2.0\",\"method\":\"m\"}",
                        "bad:InvalidMessage:Some(Number(1))",
                        "bad:InvalidMessage:Some(Number(2))",
                    ],
                    "chunk {chunk} buffer {buffer}"
                );
                let Frame::Bad(e) = &got[1] else {
                    panic!("{:?}", got[1])
                };
                assert!(e.message().contains("not UTF-8"), "{e}");
                assert!(e.message().contains("line 2 of its output"), "{e}");
                assert!(e.message().contains("byte offset 36"), "{e}");
                assert!(e.message().contains("0xff"), "{e}");
            }
        }
    }

    #[tokio::test]
    async fn a_json_object_that_is_not_utf8_and_names_no_request_is_fatal() {
        let data = b"{\"jsonrpc\":\"2.0\",\"result\":\"ab\xffc\"}\n";
        for chunk in [1, 1000] {
            let got = frames(data, chunk, 8, 1 << 20).await;
            let [Frame::Bad(e)] = &got[..] else {
                panic!("{got:?}")
            };
            assert!(e.is_fatal(), "{e}");
            assert_eq!(e.kind(), TransportErrorKind::InvalidMessage);
            assert!(e.message().contains("line 1 of its output"), "{e}");
            assert!(e.message().contains("byte offset 29"), "{e}");
        }
    }

    #[tokio::test]
    async fn other_lines_that_are_not_utf8_are_skipped_with_a_lossy_preview() {
        let data = b"caf\xe9 ready on port 8080\n\xfe\xfe\xfe\n  [\xff]\n";
        for chunk in [1, 4, 1000] {
            let got: Vec<String> = frames(data, chunk, 8, 1 << 20)
                .await
                .iter()
                .map(describe)
                .collect();
            assert_eq!(
                got,
                [
                    "garbage:caf\u{fffd} ready on port 8080",
                    "garbage:\u{fffd}\u{fffd}\u{fffd}",
                    "garbage:[\u{fffd}]",
                ],
                "chunk {chunk}"
            );
        }
    }

    #[tokio::test]
    async fn a_server_notification_that_is_not_utf8_is_skipped_and_the_session_goes_on() {
        let data = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"caf\xe9\"}}\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"x\":\"\xe9\"}}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
        for chunk in [1, 1000] {
            let got = frames(data, chunk, 8, 1 << 20).await;
            assert_eq!(
                got.iter().map(describe).collect::<Vec<_>>(),
                [
                    "bad:InvalidMessage:None",
                    "bad:InvalidMessage:None",
                    "msg:{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
                ],
                "chunk {chunk}"
            );
            let Frame::Bad(e) = &got[0] else {
                panic!("{:?}", got[0])
            };
            assert!(e.message().contains("notification of its own"), "{e}");
            assert!(e.message().contains("byte offset 71"), "{e}");
        }
    }

    #[test]
    fn a_preview_is_redacted_cut_and_free_of_control_characters() {
        let line = format!(
            "\x1b[31mAuthorization: Bearer SECRET-0123456789 {}",
            "é".repeat(100_000)
        );
        let Frame::Garbage(shown) = parse_line(line.as_bytes(), 1) else {
            panic!()
        };
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(!shown.contains('\x1b'), "{shown:?}");
        assert_eq!(shown.chars().count(), PREVIEW_CHARS + 1, "{shown}");
        assert!(shown.ends_with('…'), "{shown}");
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
