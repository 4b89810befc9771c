//! Incremental Server-Sent Events parser (WHATWG HTML, "event stream interpretation").
//!
//! [`SseParser`] takes the body of a `text/event-stream` response in chunks of any size, split
//! anywhere (inside a line, inside a CRLF pair, inside a UTF-8 sequence or the leading BOM), and
//! yields the same [`SseEvent`]s whatever the chunking:
//!
//! - lines end at CRLF, LF or a lone CR; a UTF-8 BOM at the very start of the stream is skipped;
//! - lines starting with `:` are comments; `field: value` loses one space after the colon; a line
//!   without a colon is a field with an empty value; unknown fields are ignored;
//! - `data` lines are joined with `\n`; an empty line dispatches the event, unless no `data` line
//!   was seen (MCP's "priming" event, an `id` with empty data, dispatches nothing but still
//!   updates [`SseParser::last_event_id`]);
//! - an `id` containing U+0000 is ignored; `retry` takes integer milliseconds only;
//! - invalid UTF-8 is decoded lossily (U+FFFD), line by line; nothing panics.
//!
//! Size cap: the joined data of one event may be at most `max_event_bytes` bytes, and one line at
//! most `max_event_bytes + 64` bytes (room for the field name); otherwise [`SseParser::feed`]
//! returns [`SseError::EventTooLarge`]. The parser has then already recovered: the offending
//! event is discarded up to and including its terminating empty line, without updating
//! [`SseParser::last_event_id`], and every other event of the chunk is queued as usual, so the
//! caller may keep feeding (or give up on the stream). A parser made with
//! [`SseParser::keeping_discarded`] also keeps the size and both ends of each discarded event's
//! data ([`SseParser::next_discarded`]), from which a stream that answers many requests (HTTP+SSE)
//! learns which request's answer was lost.
//!
//! All of this is the same whatever the chunking: a line counts against the line cap with all
//! its bytes as they came (a `data` line's field name too, however the chunks cut it), and what
//! is kept of a discarded event is its data as it would have been delivered (the `data` lines'
//! values joined with `\n`). The end of the stream ([`SseParser::finish`]) drops an unterminated
//! last line with its event, as the spec does, and reports nothing about it — except that a line
//! whose bytes went over the line cap has already failed a `feed` and started discarding its
//! event, which `finish` then reports as discarded: whether a line is over the cap does not
//! depend on whether its end came. A line within the line cap whose data would make the event
//! too large is only judged at its end, so one cut off by the end of the stream is just dropped.
//!
//! ```
//! use mcp_transport_http::sse::SseParser;
//!
//! let mut parser = SseParser::new(8 << 20);
//! parser.feed(b"id: 7\r\nevent: message\r\ndata: {\"a\"").unwrap();
//! assert!(parser.next_event().is_none());
//! parser.feed(b":1}\r\n\r\n").unwrap();
//! let event = parser.next_event().unwrap();
//! assert_eq!(event.data, "{\"a\":1}");
//! assert_eq!(event.id.as_deref(), Some("7"));
//! assert_eq!(parser.last_event_id(), Some("7"));
//! ```

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use mcp_wire::OversizedMessage;
use memchr::{memchr, memchr2};

/// Bytes a line may have beyond `max_event_bytes`: the field name, colon and space.
const LINE_OVERHEAD: usize = 64;

/// Discarded events kept for [`SseParser::next_discarded`] at most (about 2 KiB each).
const MAX_KEPT_DISCARDED: usize = 64;

/// A line buffer that grew beyond this is dropped instead of kept for reuse.
const KEEP_LINE_CAPACITY: usize = 64 * 1024;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// One dispatched Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event` field; `None` when absent or empty, which means `"message"`.
    pub event: Option<String>,
    /// The `data` lines joined with `\n` (no trailing newline).
    pub data: String,
    /// The event's own `id` field, if it had a valid one (`Some("")` resets the last event ID).
    pub id: Option<String>,
}

impl SseEvent {
    /// The event type: the `event` field, or `"message"` by default.
    pub fn event_type(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

/// Why [`SseParser::feed`] rejected part of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SseError {
    /// An event's data (or a single line) exceeded the limit; that event was discarded.
    EventTooLarge {
        /// The `max_event_bytes` the parser was created with.
        limit: usize,
    },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::EventTooLarge { limit } => write!(
                f,
                "server-sent event exceeds the limit of {limit} bytes; event discarded"
            ),
        }
    }
}

impl std::error::Error for SseError {}

/// Incremental parser for a `text/event-stream` body. See the [module docs](self).
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    /// Bytes of the current, unterminated line carried over from earlier chunks.
    line: Vec<u8>,
    /// When the current line is a `data` line whose field name, colon and optional space were
    /// left out of `line` as it arrived (a long value is not moved when the line ends): how
    /// many bytes were left out, which still count against the line cap. 0 otherwise.
    data_prefix_skipped: usize,
    /// How many bytes of a leading BOM have been matched; `None` once past the stream's start.
    bom_matched: Option<usize>,
    /// The previous chunk ended with CR: a LF starting the next chunk belongs to it.
    pending_cr: bool,
    /// Discarding the rest of an oversized event, up to its empty line.
    discard_event: bool,
    /// Keep the size and ends of discarded events ([`SseParser::keeping_discarded`]).
    keep_discarded: bool,
    /// While discarding (when kept): what was seen of the event's data so far.
    discarding: Option<DiscardedData>,
    /// While discarding (when kept): what the current line is.
    discard_line: DiscardLine,
    /// Discarded events whose end was seen, oldest first.
    discarded: VecDeque<OversizedMessage>,
    /// While discarding: the current line has bytes (so it is not the terminating empty line).
    discard_line_nonempty: bool,
    /// The data buffer, without the spec's trailing `\n`.
    data: String,
    /// A `data` line was seen in the current event (the spec's "data buffer is not empty").
    data_started: bool,
    /// The event type buffer.
    event_type: String,
    /// The current event's `id` field, committed to `last_event_id` at its empty line.
    event_id: Option<String>,
    /// The last event ID as of the last empty line; empty means none.
    last_event_id: String,
    retry: Option<Duration>,
    queue: VecDeque<SseEvent>,
}

impl SseParser {
    /// A parser for a new stream; one event's data may be at most `max_event_bytes` bytes.
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            line: Vec::new(),
            data_prefix_skipped: 0,
            bom_matched: Some(0),
            pending_cr: false,
            discard_event: false,
            keep_discarded: false,
            discarding: None,
            discard_line: DiscardLine::Start(Vec::new()),
            discarded: VecDeque::new(),
            discard_line_nonempty: false,
            data: String::new(),
            data_started: false,
            event_type: String::new(),
            event_id: None,
            last_event_id: String::new(),
            retry: None,
            queue: VecDeque::new(),
        }
    }

    /// Also keeps what is needed to name the request a discarded event answered: its size and
    /// the first and last KiB of its data, for [`next_discarded`](SseParser::next_discarded).
    pub fn keeping_discarded(mut self) -> Self {
        self.keep_discarded = true;
        self
    }

    /// The next event discarded as too large whose end has been seen (its empty line, or the
    /// end of the stream at [`finish`](SseParser::finish)), oldest first. Only on a parser made
    /// [`keeping_discarded`](SseParser::keeping_discarded); drain it after each
    /// [`feed`](SseParser::feed) (only the last 64 are kept).
    pub fn next_discarded(&mut self) -> Option<OversizedMessage> {
        self.discarded.pop_front()
    }

    /// The `max_event_bytes` this parser was created with.
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// Parses the next chunk of the stream; completed events are queued for [`next_event`].
    ///
    /// On [`SseError::EventTooLarge`] the whole chunk has still been consumed: the oversized
    /// event is being (or has been) discarded up to its empty line, every other event is queued,
    /// and feeding may continue. The error is reported once per chunk, however many events of
    /// the chunk were too large.
    ///
    /// [`next_event`]: SseParser::next_event
    pub fn feed(&mut self, mut chunk: &[u8]) -> Result<(), SseError> {
        let mut too_large = false;
        if let Some(matched) = self.bom_matched {
            chunk = self.skip_bom(matched, chunk);
        }
        if self.pending_cr && !chunk.is_empty() {
            self.pending_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        while !chunk.is_empty() {
            let Some(end) = memchr2(b'\r', b'\n', chunk) else {
                self.partial_line(chunk, &mut too_large);
                break;
            };
            let mut next = end + 1;
            if chunk[end] == b'\r' {
                match chunk.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
            self.end_line(&chunk[..end], &mut too_large);
            chunk = &chunk[next..];
        }
        if too_large {
            Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            })
        } else {
            Ok(())
        }
    }

    /// The next completed event, oldest first.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.queue.pop_front()
    }

    /// How many completed events are waiting in [`next_event`](SseParser::next_event).
    pub fn queued_events(&self) -> usize {
        self.queue.len()
    }

    /// End of stream: an unterminated line and an event without its empty line are discarded
    /// (an event already being discarded as too large — its line went over the line cap — is
    /// then reported by [`next_discarded`](SseParser::next_discarded)).
    ///
    /// Queued events, [`last_event_id`](SseParser::last_event_id) and
    /// [`retry`](SseParser::retry) are kept, and the parser is ready for a new stream (a
    /// reconnection), which may again start with a BOM.
    pub fn finish(&mut self) {
        self.line.clear();
        self.data_prefix_skipped = 0;
        self.drop_big_line_buffer();
        self.bom_matched = Some(0);
        self.pending_cr = false;
        self.discard_event = false;
        self.end_discarded();
        self.discard_line_nonempty = false;
        self.reset_event();
    }

    /// The last event ID: set by an `id` field when its event ends with an empty line, whether
    /// or not the event had data (so a priming event counts), and kept across events. `None` if
    /// never set or reset by an empty `id`. An event cut off by the end of the stream or
    /// discarded as too large does not change it; send it as `Last-Event-ID` when resuming.
    pub fn last_event_id(&self) -> Option<&str> {
        (!self.last_event_id.is_empty()).then_some(self.last_event_id.as_str())
    }

    /// The reconnection time from the last valid `retry` field (ASCII digits only, in
    /// milliseconds, saturating); invalid values are ignored.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Skips the stream's leading BOM, which may be split across chunks.
    fn skip_bom<'c>(&mut self, mut matched: usize, mut chunk: &'c [u8]) -> &'c [u8] {
        while let Some((&byte, rest)) = chunk.split_first() {
            if byte != BOM[matched] {
                // Not a BOM: the bytes matched so far are content of the first line.
                self.line.extend_from_slice(&BOM[..matched]);
                self.bom_matched = None;
                return chunk;
            }
            chunk = rest;
            matched += 1;
            if matched == BOM.len() {
                self.bom_matched = None;
                return chunk;
            }
        }
        self.bom_matched = Some(matched);
        chunk
    }

    fn line_limit(&self) -> usize {
        self.max_event_bytes.saturating_add(LINE_OVERHEAD)
    }

    /// The bytes of the current line so far, as they came (with a `data` line's field name,
    /// left out of `line`), so that how a chunking cut the line does not change what fits.
    fn line_len(&self) -> usize {
        self.line.len() + self.data_prefix_skipped
    }

    /// Bytes of a line whose end is not in this chunk.
    fn partial_line(&mut self, bytes: &[u8], too_large: &mut bool) {
        if self.discard_event {
            self.discard_line_nonempty = true;
            self.keep_discarded_bytes(bytes);
        } else if self.line_len() + bytes.len() > self.line_limit() {
            let line = std::mem::take(&mut self.line);
            let skipped = std::mem::take(&mut self.data_prefix_skipped);
            let value = data_line_value(&line, skipped, bytes, false);
            let was_data = value.is_some();
            self.start_discard(too_large, value);
            // The rest of this line is more of the same.
            self.discard_line = if was_data {
                DiscardLine::Data
            } else {
                DiscardLine::Other
            };
            self.recycle(Line::Owned(line));
            self.discard_line_nonempty = true;
        } else if self.line.is_empty() && self.data_prefix_skipped == 0 {
            // The start of a line: a data line keeps only its value.
            match line_kind(bytes, false) {
                LineKind::Data { value_at } => {
                    self.data_prefix_skipped = value_at;
                    self.line.extend_from_slice(&bytes[value_at..]);
                }
                LineKind::Other | LineKind::Undecided => self.line.extend_from_slice(bytes),
            }
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    /// The end of a line: `tail` is its part in this chunk, before the line ending.
    fn end_line(&mut self, tail: &[u8], too_large: &mut bool) {
        if self.discard_event {
            let nonempty = std::mem::take(&mut self.discard_line_nonempty) || !tail.is_empty();
            self.keep_discarded_bytes(tail);
            self.end_discarded_line();
            if !nonempty {
                // The empty line ending the discarded event.
                self.discard_event = false;
                self.end_discarded();
                self.reset_event();
            }
            return;
        }
        if self.line_len() + tail.len() > self.line_limit() {
            let line = std::mem::take(&mut self.line);
            let skipped = std::mem::take(&mut self.data_prefix_skipped);
            let value = data_line_value(&line, skipped, tail, true);
            self.start_discard(too_large, value);
            self.recycle(Line::Owned(line));
            return;
        }
        if std::mem::take(&mut self.data_prefix_skipped) > 0 {
            let mut value = std::mem::take(&mut self.line);
            value.extend_from_slice(tail);
            self.push_data(Line::Owned(value), 0, too_large);
        } else if self.line.is_empty() {
            self.process_line(Line::Borrowed(tail), too_large);
        } else {
            let mut line = std::mem::take(&mut self.line);
            line.extend_from_slice(tail);
            self.process_line(Line::Owned(line), too_large);
        }
    }

    /// Interprets one complete line (a `data` line that makes the event too large starts
    /// discarding it).
    fn process_line(&mut self, line: Line<'_>, too_large: &mut bool) {
        let bytes = line.bytes();
        if bytes.is_empty() {
            self.dispatch();
            return;
        }
        if bytes[0] == b':' {
            self.recycle(line);
            return;
        }
        let (name_end, value_start) = match memchr(b':', bytes) {
            Some(colon) if bytes.get(colon + 1) == Some(&b' ') => (colon, colon + 2),
            Some(colon) => (colon, colon + 1),
            None => (bytes.len(), bytes.len()),
        };
        let value = &bytes[value_start..];
        match &bytes[..name_end] {
            b"data" => return self.push_data(line, value_start, too_large),
            b"event" => {
                self.event_type.clear();
                self.event_type.push_str(&text(value));
            }
            b"id" if memchr(0, value).is_none() => {
                self.event_id = Some(text(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // All digits, so parsing fails only on overflow.
                let millis = std::str::from_utf8(value)
                    .ok()
                    .and_then(|digits| digits.parse().ok())
                    .unwrap_or(u64::MAX);
                self.retry = Some(Duration::from_millis(millis));
            }
            _ => {}
        }
        self.recycle(line);
    }

    /// Appends a `data` line's value, or starts discarding the event if its data would exceed
    /// the limit.
    fn push_data(&mut self, line: Line<'_>, value_start: usize, too_large: &mut bool) {
        let value_len = decoded_len(&line.bytes()[value_start..]);
        if value_len > self.max_event_bytes
            || (self.data_started && self.data.len() + 1 + value_len > self.max_event_bytes)
        {
            self.start_discard(too_large, Some([&line.bytes()[value_start..], &[]]));
            self.recycle(line);
            return;
        }
        if !self.data_started {
            // First data line: take the line's own buffer when there is one, no copy.
            self.data = match line {
                Line::Owned(mut buf) => {
                    buf.drain(..value_start);
                    String::from_utf8(buf)
                        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
                }
                Line::Borrowed(bytes) => text(&bytes[value_start..]).into_owned(),
            };
            self.data_started = true;
            return;
        }
        let value = text(&line.bytes()[value_start..]);
        self.data.reserve(1 + value.len());
        self.data.push('\n');
        self.data.push_str(&value);
        drop(value);
        self.recycle(line);
    }

    /// The empty line: commits the id and dispatches the event if it has data.
    fn dispatch(&mut self) {
        if let Some(id) = &self.event_id {
            self.last_event_id.clone_from(id);
        }
        let id = self.event_id.take();
        if !self.data_started {
            self.event_type.clear();
            return;
        }
        self.data_started = false;
        let data = std::mem::take(&mut self.data);
        let event = (!self.event_type.is_empty()).then(|| std::mem::take(&mut self.event_type));
        self.queue.push_back(SseEvent { event, data, id });
    }

    /// Starts discarding the current event; `data_line_so_far` is what was read of the value
    /// of the line that made it too large, when that is a `data` line (kept, after the data so
    /// far, when discarded events are kept).
    fn start_discard(&mut self, too_large: &mut bool, data_line_so_far: Option<[&[u8]; 2]>) {
        *too_large = true;
        self.discard_event = true;
        self.discard_line_nonempty = false;
        self.discard_line = DiscardLine::Start(Vec::new());
        if self.keep_discarded {
            let mut discarding = DiscardedData::default();
            if self.data_started {
                discarding.data_line(self.data.as_bytes());
            }
            if let Some([start, rest]) = data_line_so_far {
                discarding.data_line(start);
                discarding.message.push(rest);
            }
            self.discarding = Some(discarding);
        }
        self.reset_event();
    }

    /// Bytes of a line of an event being discarded: what a `data` line holds is kept (its
    /// value, joined to the previous one with `\n`), other fields are not, so the data's last
    /// bytes are the message's last bytes.
    fn keep_discarded_bytes(&mut self, mut bytes: &[u8]) {
        let Some(discarding) = &mut self.discarding else {
            return;
        };
        if let DiscardLine::Start(start) = &mut self.discard_line {
            // Enough of the line to tell a `data` line: `data:` and the optional space.
            let take = (DATA_PREFIX - start.len()).min(bytes.len());
            start.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if start.len() < DATA_PREFIX {
                return;
            }
            self.discard_line = decide_discarded_line(start, false, discarding);
        }
        if matches!(self.discard_line, DiscardLine::Data) {
            discarding.message.push(bytes);
        }
    }

    /// The end of a line of an event being discarded: a short line is decided now.
    fn end_discarded_line(&mut self) {
        if let (Some(discarding), DiscardLine::Start(start)) =
            (&mut self.discarding, &mut self.discard_line)
        {
            if !start.is_empty() {
                decide_discarded_line(start, true, discarding);
            }
        }
        self.discard_line = DiscardLine::Start(Vec::new());
    }

    /// The discarded event ended (its empty line, or the end of the stream).
    fn end_discarded(&mut self) {
        self.discard_line = DiscardLine::Start(Vec::new());
        if let Some(discarded) = self.discarding.take() {
            // Bounded for a caller that never drains it: the oldest go first.
            if self.discarded.len() == MAX_KEPT_DISCARDED {
                self.discarded.pop_front();
            }
            self.discarded.push_back(discarded.message);
        }
    }

    fn reset_event(&mut self) {
        self.data = String::new();
        self.data_started = false;
        self.event_type.clear();
        self.event_id = None;
    }

    /// Gives an owned line buffer back for the next line.
    fn recycle(&mut self, line: Line<'_>) {
        if let Line::Owned(mut buf) = line {
            if buf.capacity() <= KEEP_LINE_CAPACITY {
                buf.clear();
                self.line = buf;
            }
        }
    }

    fn drop_big_line_buffer(&mut self) {
        if self.line.capacity() > KEEP_LINE_CAPACITY {
            self.line = Vec::new();
        }
    }
}

/// The value so far of a line over the limit, if it is a `data` line: `line` as buffered (only
/// its value when `skipped`, the length of its left-out field name, is not 0), then `more`
/// (which reaches the line's end when `ended`). The field name may be cut anywhere between
/// the two.
fn data_line_value<'a>(
    line: &'a [u8],
    skipped: usize,
    more: &'a [u8],
    ended: bool,
) -> Option<[&'a [u8]; 2]> {
    if skipped > 0 {
        return Some([line, more]);
    }
    let mut start = [0u8; DATA_PREFIX];
    let from_line = line.len().min(DATA_PREFIX);
    let from_more = (DATA_PREFIX - from_line).min(more.len());
    start[..from_line].copy_from_slice(&line[..from_line]);
    start[from_line..from_line + from_more].copy_from_slice(&more[..from_more]);
    match line_kind(&start[..from_line + from_more], ended) {
        LineKind::Data { value_at } if value_at <= line.len() => Some([&line[value_at..], more]),
        LineKind::Data { value_at } => Some([&[], &more[value_at - line.len()..]]),
        LineKind::Other | LineKind::Undecided => None,
    }
}

/// `data: `: the most of a line needed to tell whether it is a `data` line.
const DATA_PREFIX: usize = 6;

/// What a line is, as far as its first bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// A `data` line whose value starts at this byte.
    Data { value_at: usize },
    /// Another field, or a comment.
    Other,
    /// The line goes on and its first bytes could still start `data:` or `data: `.
    Undecided,
}

/// What a line starting with `start` is: its first [`DATA_PREFIX`] bytes always tell, fewer
/// only when the line `ended` there. The one place that tells a `data` line, whether the line
/// is buffered, over the cap, or part of a discarded event.
fn line_kind(start: &[u8], ended: bool) -> LineKind {
    match start.strip_prefix(b"data:") {
        Some([b' ', ..]) => LineKind::Data { value_at: 6 },
        Some([_, ..]) => LineKind::Data { value_at: 5 },
        Some([]) if ended => LineKind::Data { value_at: 5 },
        Some([]) => LineKind::Undecided,
        // `data` alone is the field with an empty value.
        None if ended && start == b"data" => LineKind::Data { value_at: 4 },
        None if !ended && b"data:".starts_with(start) => LineKind::Undecided,
        None => LineKind::Other,
    }
}

/// A line of an event being discarded.
#[derive(Debug)]
enum DiscardLine {
    /// Its first bytes (fewer than [`DATA_PREFIX`]), not yet telling what it is.
    Start(Vec<u8>),
    /// A `data` line: kept.
    Data,
    /// Another field or a comment: skipped.
    Other,
}

/// What is kept of a discarded event: its data as it would have been delivered.
#[derive(Debug, Default)]
struct DiscardedData {
    message: OversizedMessage,
    /// A `data` line was kept: the next one is joined to it with `\n`.
    has_data: bool,
}

impl DiscardedData {
    /// The start of a `data` line's value.
    fn data_line(&mut self, value: &[u8]) {
        if std::mem::replace(&mut self.has_data, true) {
            self.message.push(b"\n");
        }
        self.message.push(value);
    }
}

/// Decides what a discarded line is from its `start` (all of it when the line `ended`); a
/// `data` line's value so far is kept.
fn decide_discarded_line(start: &[u8], ended: bool, discarding: &mut DiscardedData) -> DiscardLine {
    match line_kind(start, ended) {
        LineKind::Data { value_at } => {
            discarding.data_line(&start[value_at..]);
            DiscardLine::Data
        }
        // Only when `start` is shorter than `DATA_PREFIX` and the line goes on, which the
        // caller does not ask.
        LineKind::Undecided | LineKind::Other => DiscardLine::Other,
    }
}

/// Bytes as text: borrowed when they are valid UTF-8 (the usual case, checked at memory
/// speed), otherwise decoded lossily (U+FFFD).
fn text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The length of `bytes` as text: invalid UTF-8 grows when decoded (each bad byte can become a
/// 3-byte U+FFFD), and the size cap holds for the data as delivered.
fn decoded_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(_) => String::from_utf8_lossy(bytes).len(),
    }
}

/// A complete line, either inside the chunk or assembled across chunks.
enum Line<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl Line<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Line::Borrowed(bytes) => bytes,
            Line::Owned(buf) => buf,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_core::RequestId;

    /// Events, last event ID, retry, whether any `feed` failed, and the size and request of
    /// each discarded event.
    type Outcome = (
        Vec<SseEvent>,
        Option<String>,
        Option<Duration>,
        bool,
        Vec<(usize, Option<RequestId>)>,
    );

    fn run<'a>(max: usize, chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
        let mut parser = SseParser::new(max).keeping_discarded();
        let mut events = Vec::new();
        let mut failed = false;
        let mut discarded = Vec::new();
        let mut drain = |parser: &mut SseParser, events: &mut Vec<SseEvent>| {
            events.extend(std::iter::from_fn(|| parser.next_event()));
            discarded.extend(
                std::iter::from_fn(|| parser.next_discarded())
                    .map(|over| (over.size(), over.request_id())),
            );
        };
        for chunk in chunks {
            if let Err(err) = parser.feed(chunk) {
                assert_eq!(err, SseError::EventTooLarge { limit: max });
                failed = true;
            }
            drain(&mut parser, &mut events);
        }
        parser.finish();
        drain(&mut parser, &mut events);
        let last_id = parser.last_event_id().map(str::to_owned);
        (events, last_id, parser.retry(), failed, discarded)
    }

    /// Runs `input` whole, split at every point into two chunks, and byte by byte; all must agree.
    fn run_all_chunkings(max: usize, input: &[u8]) -> Outcome {
        let whole = run(max, [input]);
        for split in 0..=input.len() {
            let (a, b) = input.split_at(split);
            assert_eq!(run(max, [a, b]), whole, "split at {split} of {input:?}");
        }
        assert_eq!(run(max, input.chunks(1)), whole, "byte by byte: {input:?}");
        whole
    }

    fn ev(event: Option<&str>, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            id: id.map(str::to_owned),
        }
    }

    fn msg(data: &str) -> SseEvent {
        ev(None, data, None)
    }

    struct Case {
        name: &'static str,
        input: &'static [u8],
        events: Vec<SseEvent>,
        last_id: Option<&'static str>,
        retry: Option<u64>,
    }

    fn case(name: &'static str, input: &'static [u8], events: Vec<SseEvent>) -> Case {
        Case {
            name,
            input,
            events,
            last_id: None,
            retry: None,
        }
    }

    fn cases() -> Vec<Case> {
        vec![
            case("simple", b"data: hello\n\n", vec![msg("hello")]),
            case(
                "multi-line data",
                b"data: a\ndata: b\ndata:c\n\n",
                vec![msg("a\nb\nc")],
            ),
            case(
                "comments",
                b": ping\n:\ndata: x\n: mid\n\n:bye\n\n",
                vec![msg("x")],
            ),
            case("crlf", b"data: a\r\ndata: b\r\n\r\n", vec![msg("a\nb")]),
            case("lone cr", b"data: a\rdata: b\r\r", vec![msg("a\nb")]),
            case(
                "mixed line endings",
                b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\n\n",
                vec![msg("a\nb\nc"), msg("d")],
            ),
            case(
                "cr then crlf",
                b"data: a\r\r\ndata: b\n\n",
                vec![msg("a"), msg("b")],
            ),
            case("lone cr ends stream", b"data: a\n\r", vec![msg("a")]),
            case("bom", "\u{FEFF}data: a\n\n".as_bytes(), vec![msg("a")]),
            case(
                "only the first bom is skipped",
                "\u{FEFF}\u{FEFF}data: a\n\ndata: b\n\n".as_bytes(),
                vec![msg("b")],
            ),
            case(
                "bom later in the stream is content",
                "data: a\n\n\u{FEFF}data: b\n\n".as_bytes(),
                vec![msg("a")],
            ),
            case(
                "partial bom is content",
                b"\xEF\xBB:x\ndata: b\n\n",
                vec![msg("b")],
            ),
            case("partial bom then data", b"\xEF\xBBdata: b\n\n", vec![]),
            Case {
                last_id: Some("p1"),
                ..case("priming event: id without data", b"id: p1\n\n", vec![])
            },
            Case {
                last_id: Some("p1"),
                ..case(
                    "id with an empty data line is dispatched",
                    b"id: p1\ndata:\n\n",
                    vec![ev(None, "", Some("p1"))],
                )
            },
            Case {
                last_id: Some("5"),
                ..case(
                    "id persists across events",
                    b"id: 5\ndata: a\n\ndata: b\n\n",
                    vec![ev(None, "a", Some("5")), msg("b")],
                )
            },
            case("empty id resets", b"id: 5\n\nid\n\n", vec![]),
            Case {
                last_id: Some("5"),
                ..case(
                    "id with nul ignored",
                    b"id: 5\n\nid: a\0b\ndata: x\n\n",
                    vec![msg("x")],
                )
            },
            Case {
                retry: Some(1500),
                ..case("retry", b"retry: 1500\n\n", vec![])
            },
            Case {
                retry: Some(100),
                ..case(
                    "invalid retry ignored",
                    b"retry: 100\nretry: 15x\nretry: -1\nretry:\nretry: 1.5\nretry:  7\nretry\n\n",
                    vec![],
                )
            },
            Case {
                retry: Some(u64::MAX),
                ..case(
                    "retry saturates",
                    b"retry: 99999999999999999999999\n",
                    vec![],
                )
            },
            Case {
                retry: Some(20),
                ..case(
                    "retry applies without dispatch",
                    b"retry: 20\ndata: cut",
                    vec![],
                )
            },
            case(
                "event names",
                b"event: ping\ndata: x\n\nevent:\ndata: y\n\nevent: a\n\ndata: z\n\n",
                vec![ev(Some("ping"), "x", None), msg("y"), msg("z")],
            ),
            case(
                "field without colon",
                b"data\ndata\ndata: x\n\ndata\n\n",
                vec![msg("\n\nx"), msg("")],
            ),
            case(
                "one space stripped",
                b"data:  two\ndata:none\ndata: a:b\n\n",
                vec![msg(" two\nnone\na:b")],
            ),
            case(
                "unknown fields",
                b"foo: bar\nDATA: x\ndata : y\nevent : e\n\n\ndata: z\n\n",
                vec![msg("z")],
            ),
            case(
                "empty data lines",
                b"data:\ndata:\n\ndata:\n\n",
                vec![msg("\n"), msg("")],
            ),
            case(
                "unterminated event discarded",
                b"data: a\n\ndata: b\n",
                vec![msg("a")],
            ),
            Case {
                last_id: Some("1"),
                ..case(
                    "unterminated event does not set the id",
                    b"id: 1\ndata: a\n\nid: 2\ndata: b",
                    vec![ev(None, "a", Some("1"))],
                )
            },
            case(
                "utf-8",
                "event: é\ndata: ünï€😀\n\n".as_bytes(),
                vec![ev(Some("é"), "ünï€😀", None)],
            ),
            case(
                "invalid utf-8",
                b"data: \xFF\xFEok\xF0\x9F\n\n",
                vec![msg("\u{FFFD}\u{FFFD}ok\u{FFFD}")],
            ),
        ]
    }

    #[test]
    fn table_every_chunking() {
        for case in cases() {
            let (events, last_id, retry, failed, _) = run_all_chunkings(1 << 20, case.input);
            assert_eq!(events, case.events, "{}", case.name);
            assert_eq!(last_id.as_deref(), case.last_id, "{}", case.name);
            assert_eq!(
                retry,
                case.retry.map(Duration::from_millis),
                "{}",
                case.name
            );
            assert!(!failed, "{}", case.name);
            assert_eq!(
                reference(case.input),
                (events, last_id, retry),
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn event_type_defaults_to_message() {
        assert_eq!(msg("x").event_type(), "message");
        assert_eq!(ev(Some("ping"), "x", None).event_type(), "ping");
    }

    #[test]
    fn data_at_the_limit_is_accepted() {
        let (events, ..) =
            run_all_chunkings(10, b"data: 01234\ndata: 5678\n\ndata: 0123456789\n\n");
        assert_eq!(events, vec![msg("01234\n5678"), msg("0123456789")]);
    }

    #[test]
    fn too_large_event_is_reported_then_skipped() {
        let mut parser = SseParser::new(10);
        let err = parser
            .feed(b"id: 1\ndata: a\n\nid: 2\ndata: 0123456789A\nid: 3\ndata: more\n\ndata: ok\n\n")
            .unwrap_err();
        assert_eq!(err, SseError::EventTooLarge { limit: 10 });
        assert!(err.to_string().contains("limit of 10 bytes"), "{err}");
        assert_eq!(parser.next_event(), Some(ev(None, "a", Some("1"))));
        assert_eq!(parser.next_event(), Some(msg("ok")));
        assert_eq!(parser.next_event(), None);
        assert_eq!(parser.last_event_id(), Some("1"));
        parser.feed(b"data: next\n\n").unwrap();
        assert_eq!(parser.next_event(), Some(msg("next")));
    }

    #[test]
    fn too_large_joined_data_every_chunking() {
        let input = b"data: 01234\ndata: 56789\nid: x\n\nevent: e\ndata: ok\n\n";
        let (events, last_id, _, failed, _) = run_all_chunkings(10, input);
        assert!(failed);
        assert_eq!(events, vec![ev(Some("e"), "ok", None)]);
        assert_eq!(last_id, None);
    }

    #[test]
    fn too_long_line_every_chunking() {
        let mut input = b"data: a\n\n: ".to_vec();
        input.extend([b'c'; 100]);
        input.extend(b"\r\ndata: dropped\r\n\r\ndata: ok\r\n\r\n");
        let (events, _, _, failed, _) = run_all_chunkings(10, &input);
        assert!(failed);
        assert_eq!(events, vec![msg("a"), msg("ok")]);
    }

    #[test]
    fn too_long_line_reported_before_its_end() {
        let mut parser = SseParser::new(10);
        parser.feed(b"data: ").unwrap();
        assert!(parser.feed(&[b'x'; 100]).is_err());
        // The rest of the line and event are skipped without being buffered.
        for _ in 0..100 {
            parser.feed(&[b'x'; 1000]).unwrap();
        }
        assert!(parser.line.capacity() < 1000);
        parser.feed(b"\n\ndata: ok\n\n").unwrap();
        assert_eq!(parser.next_event(), Some(msg("ok")));
    }

    #[test]
    fn discarded_events_keep_their_size_and_the_request_they_answered() {
        let big = "x".repeat(300);
        // Id first (most servers), id last (the TypeScript SDK), and cut off by the stream's end.
        let head = format!("data: {{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":\"{big}\"}}\n\n");
        // Other fields after the data, and data split over two lines.
        let tail = format!(
            "data: {{\"result\":\"{big}\",\"jsonrpc\":\"2.0\",\"id\":\"t\"}}\r\nid: 9\r\n: c\r\n\r\n"
        );
        let split = format!(
            "event: message\ndata: {{\"result\":\"{big}\",\ndata: \"id\":8}}\nretry: 5\n\n"
        );
        let cut = format!("data: {{\"result\":\"{big}");
        for chunk in [1, 2, 3, 5, 7, 64, 4096] {
            let mut parser = SseParser::new(100).keeping_discarded();
            let stream = format!("{head}data: ok\n\n{tail}{split}{cut}");
            for piece in stream.as_bytes().chunks(chunk) {
                let _ = parser.feed(piece);
            }
            let first = parser.next_discarded().expect("first");
            assert_eq!(
                first.request_id(),
                Some(RequestId::Number(4)),
                "chunk {chunk}"
            );
            assert_eq!(
                first.size(),
                head.len() - "data: \n\n".len(),
                "chunk {chunk}"
            );
            let second = parser.next_discarded().expect("second");
            assert_eq!(
                second.request_id(),
                Some(RequestId::from("t")),
                "chunk {chunk}"
            );
            let third = parser.next_discarded().expect("split");
            assert_eq!(
                third.request_id(),
                Some(RequestId::Number(8)),
                "chunk {chunk}"
            );
            // Both values joined with the newline, as the data would have been.
            assert_eq!(third.size(), big.len() + 21, "chunk {chunk}");
            assert!(parser.next_discarded().is_none(), "chunk {chunk}");
            parser.finish();
            let cut_off = parser.next_discarded().expect("cut off");
            assert_eq!(cut_off.request_id(), None);
            assert_eq!(parser.next_event(), Some(msg("ok")));
            assert_eq!(parser.next_event(), None);
        }
        // Not kept unless asked for.
        let mut parser = SseParser::new(100);
        assert!(parser.feed(head.as_bytes()).is_err());
        assert!(parser.next_discarded().is_none());
    }

    #[test]
    fn discarded_events_are_the_same_in_every_chunking() {
        let answer = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{}\"}}",
            "x".repeat(60)
        );
        // Over the line cap (74 bytes) with the field name only: however a chunk cuts `data: `.
        let over_line_cap = format!("data: {answer}\n\ndata: ok\n\n");
        let (events, _, _, failed, discarded) = run_all_chunkings(10, over_line_cap.as_bytes());
        assert!(failed);
        assert_eq!(events, vec![msg("ok")]);
        assert_eq!(discarded, vec![(answer.len(), Some(RequestId::Number(7)))]);

        // Cut off by the end of the stream: over the line cap, so discarded in every chunking.
        let cut_off = format!("data: {answer}");
        let (_, _, _, failed, discarded) = run_all_chunkings(10, cut_off.as_bytes());
        assert!(failed);
        assert_eq!(discarded, vec![(answer.len(), Some(RequestId::Number(7)))]);
        // Within the line cap but over the event cap: dropped with its event, as the spec says.
        let (events, _, _, failed, discarded) = run_all_chunkings(10, b"data: 0123456789AB");
        assert!(!failed && events.is_empty() && discarded.is_empty());

        // A line over the cap that is not data (nothing of it kept), and a `data` line with no
        // colon (an empty value): the data kept is the data as it would have been delivered.
        let stream = format!(
            "data: a\nevent: {}\ndata\ndata: {answer}\n\n",
            "e".repeat(80)
        );
        let (_, _, _, failed, discarded) = run_all_chunkings(10, stream.as_bytes());
        assert!(failed);
        assert_eq!(discarded, vec![("a\n\n".len() + answer.len(), None)]);
    }

    #[test]
    fn finish_resets_the_stream_but_keeps_id_and_retry() {
        let mut parser = SseParser::new(100);
        parser
            .feed(b"retry: 5\nid: 1\n\nevent: e\nid: 2\ndata: cut\r")
            .unwrap();
        parser.finish();
        assert_eq!(parser.next_event(), None);
        assert_eq!(parser.last_event_id(), Some("1"));
        assert_eq!(parser.retry(), Some(Duration::from_millis(5)));
        // A new stream: BOM allowed again, no leftover CR, event type, or data.
        parser.feed("\u{FEFF}\ndata: x\n\n".as_bytes()).unwrap();
        assert_eq!(parser.next_event(), Some(msg("x")));
        // And after an error, finish also ends the discarding.
        assert!(parser.feed(&[b'x'; 500]).is_err());
        parser.finish();
        parser.feed(b"data: y\n\n").unwrap();
        assert_eq!(parser.next_event(), Some(msg("y")));
        assert_eq!(parser.queued_events(), 0);
    }

    #[test]
    fn eight_mib_event_in_64_kib_chunks() {
        const SIZE: usize = 8 << 20;
        let data: String = (0..SIZE).map(|i| (b'a' + (i % 26) as u8) as char).collect();
        for ending in ["\n", "\r\n", "\r"] {
            let stream =
                format!("id: big{ending}data: {data}{ending}{ending}data: after{ending}{ending}");
            let mut parser = SseParser::new(SIZE);
            let mut events = Vec::new();
            for chunk in stream.as_bytes().chunks(64 * 1024) {
                parser.feed(chunk).unwrap();
                events.extend(std::iter::from_fn(|| parser.next_event()));
            }
            assert_eq!(events.len(), 2);
            assert!(events[0].data == data, "8 MiB data differs");
            assert_eq!(events[0].id.as_deref(), Some("big"));
            assert_eq!(events[1], msg("after"));

            // One byte more is too much.
            let mut parser = SseParser::new(SIZE - 1);
            let results: Vec<_> = stream
                .as_bytes()
                .chunks(64 * 1024)
                .map(|chunk| parser.feed(chunk))
                .collect();
            assert_eq!(results.iter().filter(|r| r.is_err()).count(), 1);
            assert_eq!(parser.next_event(), Some(msg("after")));
            assert_eq!(parser.last_event_id(), None);
        }
    }

    /// Deterministic pseudo-random numbers (64-bit LCG, high bits).
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n.max(1)
        }

        fn chunks<'a>(&mut self, input: &'a [u8]) -> Vec<&'a [u8]> {
            let mut chunks = Vec::new();
            let mut rest = input;
            while !rest.is_empty() {
                let (a, b) = rest.split_at(self.below(rest.len().min(12) + 1));
                chunks.push(a);
                rest = b;
            }
            chunks.push(rest);
            chunks
        }
    }

    #[test]
    fn invalid_utf8_never_panics() {
        let mut rng = Lcg(7);
        for _ in 0..300 {
            let len = rng.below(200);
            let input: Vec<u8> = (0..len)
                .map(|_| match rng.below(4) {
                    0 => b"\r\n:"[rng.below(3)],
                    _ => rng.below(256) as u8,
                })
                .collect();
            let max = 1 + rng.below(64);
            let whole = run(max, [&input[..]]);
            assert_eq!(run(max, rng.chunks(&input)), whole);
        }
    }

    #[test]
    fn random_streams_random_chunkings() {
        const TOKENS: &[&[u8]] = &[
            b"data",
            b"data:",
            b"data: ",
            b"id",
            b"id: ",
            b"id:",
            b"event:",
            b"event: ",
            b"retry:",
            b"retry: ",
            b":",
            b" ",
            b"x",
            b"yz",
            b"12",
            b"\0",
            "é".as_bytes(),
            b"\xFF",
            b"\xEF\xBB\xBF",
            b"\xEF\xBB",
            b"\r",
            b"\n",
            b"\r\n",
            b"\n\n",
            b"\r\n\r\n",
            // Long enough to take a line over the line cap (65 to 76 bytes here).
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":\"",
        ];
        let mut rng = Lcg(42);
        for round in 0..2000 {
            let mut input = Vec::new();
            for _ in 0..rng.below(40) {
                input.extend_from_slice(TOKENS[rng.below(TOKENS.len())]);
            }
            let max = if round % 3 == 0 {
                1 + rng.below(12)
            } else {
                1 << 20
            };
            let whole = run(max, [&input[..]]);
            if !whole.3 {
                let (events, last_id, retry, ..) = whole.clone();
                assert_eq!(reference(&input), (events, last_id, retry), "{input:?}");
            }
            for _ in 0..4 {
                assert_eq!(run(max, rng.chunks(&input)), whole, "{input:?}");
            }
            assert_eq!(run(max, input.chunks(1)), whole, "{input:?}");
        }
    }

    /// A direct transcription of the spec: decode everything, split lines, interpret.
    fn reference(input: &[u8]) -> (Vec<SseEvent>, Option<String>, Option<Duration>) {
        let text = String::from_utf8_lossy(input);
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
        let mut lines = Vec::new();
        let mut line = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => {
                    chars.next_if_eq(&'\n');
                    lines.push(std::mem::take(&mut line));
                }
                '\n' => lines.push(std::mem::take(&mut line)),
                c => line.push(c),
            }
        }
        // `line` is unterminated at end of stream: discarded.
        let (mut events, mut data, mut event_type) = (Vec::new(), String::new(), String::new());
        let (mut id_buffer, mut last_id, mut event_id, mut retry) =
            (String::new(), String::new(), None, None);
        for line in lines {
            if line.is_empty() {
                last_id.clone_from(&id_buffer);
                if data.is_empty() {
                    event_type.clear();
                    event_id = None;
                    continue;
                }
                data.pop();
                events.push(SseEvent {
                    event: (!event_type.is_empty()).then(|| std::mem::take(&mut event_type)),
                    data: std::mem::take(&mut data),
                    id: event_id.take(),
                });
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line.as_str(), ""),
            };
            match field {
                "data" => {
                    data.push_str(value);
                    data.push('\n');
                }
                "event" => event_type = value.to_owned(),
                "id" if !value.contains('\0') => {
                    id_buffer = value.to_owned();
                    event_id = Some(value.to_owned());
                }
                "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                    retry = Some(Duration::from_millis(value.parse().unwrap_or(u64::MAX)));
                }
                _ => {}
            }
        }
        ((events), (!last_id.is_empty()).then_some(last_id), retry)
    }
}
