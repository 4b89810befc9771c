//! What a transport keeps of a message too large to accept, so that the request it answered
//! fails at once instead of waiting for its deadline.
//!
//! A transport that caps message size discards an oversized message as it arrives, without
//! buffering it. [`OversizedMessage`] keeps only its size and its first and last KiB, and finds
//! the request id there as [`request_id_of`](crate::request_id_of) does for a message
//! that did not parse: the first KiB's top-level members are read up to where it is cut, and
//! name the request when an id and a `result` / `error` member come there
//! (`{"jsonrpc":"2.0","id":5,"result":…`, as most servers write it); after a `result` / `error`
//! member with no id yet, the id is trusted as the object's last member
//! (`…,"jsonrpc":"2.0","id":5}`, as the TypeScript SDK does). A `method` member makes it the
//! server's request, which answers nothing; an `"id"` anywhere else could belong to the payload
//! and is not trusted.

use mcp_core::{Message, RequestId, TransportError, TransportErrorKind};

use crate::broken::{read_answer_head, AnswerHead, Extent};

/// Bytes kept from each end of an oversized message.
const KEEP: usize = 1024;

/// The size and both ends of a message discarded for its size. Feed it every discarded byte
/// with [`push`](OversizedMessage::push), then turn it into the error with
/// [`error`](OversizedMessage::error).
#[derive(Debug, Clone, Default)]
pub struct OversizedMessage {
    size: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl OversizedMessage {
    /// Nothing seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next bytes of the message, in order (none of them is kept beyond the first and last
    /// KiB).
    pub fn push(&mut self, bytes: &[u8]) {
        self.size = self.size.saturating_add(bytes.len());
        if self.head.len() < KEEP {
            let take = (KEEP - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
        }
        if bytes.len() >= KEEP {
            self.tail.clear();
            self.tail.extend_from_slice(&bytes[bytes.len() - KEEP..]);
        } else {
            self.tail.extend_from_slice(bytes);
            // Trimmed only when twice as long: pushed a byte at a time, the cost stays
            // proportional to the bytes pushed.
            if self.tail.len() > 2 * KEEP {
                self.tail.drain(..self.tail.len() - KEEP);
            }
        }
    }

    /// The bytes pushed so far.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The request the message answered, if its first or last bytes say so.
    pub fn request_id(&self) -> Option<RequestId> {
        answered_request(read_answer_head(&self.head, Extent::Prefix), &self.tail)
    }

    /// The non-fatal [`TransportErrorKind::MessageTooLarge`] error for this message, naming its
    /// size and the `max`-byte limit, for the request it answered (if known).
    pub fn error(&self, max: usize) -> TransportError {
        TransportError::recoverable(
            TransportErrorKind::MessageTooLarge,
            format!(
                "the server sent a message of {} bytes, over the {max}-byte limit \
                 (max_message_size); it was discarded",
                self.size
            ),
        )
        .for_request(self.request_id())
    }
}

/// The error for `message`, encoded as `size` bytes, which a transport refuses to send
/// because it is over its `max`-byte limit (the peer enforces the same cap): recoverable,
/// naming the request, and never sent.
pub fn unsent_oversized(message: &Message, size: usize, max: usize) -> TransportError {
    TransportError::recoverable(
        TransportErrorKind::MessageTooLarge,
        format!(
            "the message of {size} bytes is over the {max}-byte limit (max_message_size); it was \
             not sent"
        ),
    )
    .for_request(message.request_id().cloned())
    .never_sent()
}

/// The request a message answered, from what its first bytes say (`head`) and, when they show
/// an answer whose id has not come yet, the last KiB of `tail` (the message's end; all of it,
/// for a whole message that did not parse, see [`request_id_of`](crate::request_id_of)).
pub(crate) fn answered_request(head: AnswerHead, tail: &[u8]) -> Option<RequestId> {
    match head {
        AnswerHead::Answers(id) => Some(id),
        AnswerHead::AnswerWithoutId => id_in_tail(&tail[tail.len().saturating_sub(KEEP)..]),
        AnswerHead::NotAnAnswer | AnswerHead::Unknown => None,
    }
}

/// `…},"jsonrpc":"2.0","id":5}`: the id as the object's last member.
fn id_in_tail(tail: &[u8]) -> Option<RequestId> {
    let text = String::from_utf8_lossy(tail);
    let id_at = text.rfind("\"id\"")?;
    let rest = &text[id_at + 4..];
    let id = parse_id_after(rest)?;
    // Only trust it when nothing but the closing brace follows.
    let after_value = rest.trim_start().trim_start_matches(':').trim_start();
    let end = match after_value.chars().next()? {
        '"' => after_value[1..].find('"')? + 2,
        _ => after_value
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(after_value.len()),
    };
    (after_value[end..].trim() == "}").then_some(id)
}

fn parse_id_after(rest: &str) -> Option<RequestId> {
    let value = rest.trim_start().strip_prefix(':')?.trim_start();
    if let Some(s) = value.strip_prefix('"') {
        let end = s.find('"')?;
        return Some(RequestId::from(&s[..end]));
    }
    let digits: String = value
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse::<i64>().ok().map(RequestId::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: &[&[u8]]) -> OversizedMessage {
        let mut m = OversizedMessage::new();
        for p in parts {
            m.push(p);
        }
        m
    }

    #[test]
    fn ids_are_found_only_at_the_top_level_positions() {
        let head_only = |head: &[u8]| message(&[head]).request_id();
        assert_eq!(
            head_only(br#"{"jsonrpc":"2.0","id":12,"result":{"#),
            Some(RequestId::Number(12))
        );
        assert_eq!(head_only(br#"{"jsonrpc":"2.0","result":{"id":4"#), None);
        assert_eq!(
            id_in_tail(br#"xx"}]},"jsonrpc":"2.0","id":5}"#),
            Some(RequestId::Number(5))
        );
        assert_eq!(id_in_tail(br#"{"id":5,"more":1}]}}"#), None);
        assert_eq!(
            id_in_tail(b"\"},\"jsonrpc\":\"2.0\",\"id\":\"a-1\"}\n"),
            Some(RequestId::from("a-1"))
        );
    }

    #[test]
    fn a_large_message_keeps_its_size_and_both_ends() {
        let filler = vec![b'x'; 5000];
        let m = message(&[
            br#"{"result":{"text":""#,
            &filler,
            &filler[..10],
            br#""},"jsonrpc":"2.0","id":77}"#,
        ]);
        assert_eq!(m.size(), 19 + 5010 + 27);
        assert_eq!(m.request_id(), Some(RequestId::Number(77)));
        let e = m.error(4096);
        assert_eq!(e.kind(), TransportErrorKind::MessageTooLarge);
        assert_eq!(e.request_id(), Some(&RequestId::Number(77)));
        assert!(e.message().contains("5056 bytes"), "{e}");
        assert!(e.message().contains("4096-byte limit"), "{e}");
        assert!(!e.is_fatal());
    }

    #[test]
    fn pushed_a_byte_at_a_time_the_ends_are_the_same() {
        let mut text = br#"{"result":{"text":""#.to_vec();
        text.extend(std::iter::repeat_n(b'z', 5000));
        text.extend(br#""},"jsonrpc":"2.0","id":"last"}"#);
        let mut m = OversizedMessage::new();
        for byte in &text {
            m.push(std::slice::from_ref(byte));
        }
        assert_eq!(m.size(), text.len());
        assert!(m.tail.len() <= 2 * KEEP);
        assert_eq!(m.request_id(), Some(RequestId::from("last")));
    }

    #[test]
    fn the_head_wins_and_an_id_inside_the_payload_is_not_trusted() {
        let filler = vec![b'y'; 3000];
        let head_id = message(&[br#"{"jsonrpc":"2.0","id":"h","result":{"t":""#, &filler]);
        assert_eq!(head_id.request_id(), Some(RequestId::from("h")));
        let none = message(&[
            br#"{"jsonrpc":"2.0","result":{"id":3,"t":""#,
            &filler,
            b"\"}}",
        ]);
        assert_eq!(none.request_id(), None);
        assert_eq!(none.error(10).request_id(), None);
    }

    #[test]
    fn an_oversized_server_request_names_no_request_of_the_client() {
        let filler = vec![b'w'; 3000];
        for head in [
            // The id first, then the method: a server request, not an answer.
            &br#"{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"t":""#[..],
            br#"{"jsonrpc":"2.0","method":"sampling/createMessage","id":5,"params":{"t":""#,
            // The method first and the id last (the TypeScript SDK's order).
            br#"{"method":"sampling/createMessage","params":{"t":""#,
        ] {
            let request = message(&[head, &filler, br#""},"jsonrpc":"2.0","id":5}"#]);
            assert_eq!(
                request.request_id(),
                None,
                "{}",
                String::from_utf8_lossy(head)
            );
            assert_eq!(request.error(10).request_id(), None);
        }
        // An id before the cut with nothing after it that tells: maybe a request; no id.
        let unknown = message(&[br#"{"jsonrpc":"2.0","id":5,"_meta":{"t":""#, &filler]);
        assert_eq!(unknown.request_id(), None);
    }
}
