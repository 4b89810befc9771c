//! What can still be read from bytes that did not parse as a message: the request a broken
//! answer names, whether the bytes were the server's own message, the id a broken request owes
//! an error answer to.

use std::borrow::Cow;
use std::fmt;

use mcp_core::jsonrpc::MessageError;
use mcp_core::RequestId;
use serde::de::{self, MapAccess, Visitor};
use serde::Deserializer;

/// The `id` of bytes that did not parse as a message, so that the request they answered fails
/// at once instead of waiting for its deadline: the one place every transport finds it.
///
/// Only an answer names one of this client's requests: an object with a top-level `method`
/// member is a request or notification of the server's, and its id (a `sampling/createMessage`
/// numbered 5, say) says nothing of the client's request 5, so it gives `None`.
///
/// Read member by member: an id that comes before the fault (a bad member, nesting past the
/// parser's depth limit, a cut-off end) is trusted once a `result` or `error` member has been
/// read too (before or after it), or when no `method` member can follow: the read reached the
/// object's end, or the end of the bytes inside a key that is not `method`'s (a message cut
/// short, `{"jsonrpc":"2.0","id":1,"res`); bytes that end between members or inside a key that
/// may be `method` (`…,"id":1,"meth`) could be a request cut short, so they name none.
/// When it stops at a fault before the end with neither seen (`{"id":5,"x":[}`), the id is
/// trusted only when the bytes hold no `"method"` at all, so no `method` member can follow.
/// An id after the fault is trusted only as the object's last member
/// (`…,"id":5}`, the TypeScript SDK's order, which writes `result` first), and only when a
/// `result` or `error` member was read before the fault; it is read from the last KiB as for an
/// [`OversizedMessage`](crate::OversizedMessage). `None` when the bytes are not a JSON object or
/// do not name a request this way. Nothing is built but the id.
pub fn request_id_of(bytes: &[u8]) -> Option<RequestId> {
    match classify_broken_message(bytes) {
        BrokenMessage::AnswerTo(id) => Some(id),
        BrokenMessage::ServerRequestOrNotification | BrokenMessage::Unknown => None,
    }
}

/// A [`MessageError`] as people see it: the parser's words, the peer's text they quote
/// [redacted and cut](crate::redact::excerpt_of_start) to 200 characters, and the position:
/// `invalid JSON-RPC message: invalid type: string "[redacted]", expected … at line 1 column 9`.
pub fn message_error_text(e: &MessageError) -> String {
    let words = crate::redact::excerpt_of_start(e.parser_words().as_bytes(), PARSER_WORDS_SHOWN);
    format!("invalid JSON-RPC message: {words}{}", e.at())
}

/// The characters of the parser's words [`message_error_text`] shows.
const PARSER_WORDS_SHOWN: usize = 200;

/// What bytes that did not parse as a message are, for a client reading answers
/// ([`classify_broken_message`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokenMessage {
    /// An answer to this request of the client's, found as [`request_id_of`] finds it.
    AnswerTo(RequestId),
    /// A JSON object with a top-level `method` member, read before the fault: the server's own
    /// request or notification. It answers none of the client's requests, so losing it loses no
    /// answer.
    ServerRequestOrNotification,
    /// Nothing tells: not a JSON object, or one that names no request and no `method` before
    /// its fault (an answer may have been lost, and nothing tells whose).
    Unknown,
}

/// What bytes that did not parse as a message are: an answer to one of the client's requests
/// (the id [`request_id_of`] gives), the server's own request or notification, or unknown. A
/// transport fails the request an answer names; it can skip a broken server notification and
/// go on; only an unknown message may have been an answer it can no longer place.
pub fn classify_broken_message(bytes: &[u8]) -> BrokenMessage {
    // A struct would also read from an array (positionally): only objects name a request.
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return BrokenMessage::Unknown;
    }
    let head = read_answer_head(bytes, Extent::WholeMessage);
    if head == AnswerHead::NotAnAnswer {
        return BrokenMessage::ServerRequestOrNotification;
    }
    match crate::oversized::answered_request(head, bytes) {
        Some(id) => BrokenMessage::AnswerTo(id),
        None => BrokenMessage::Unknown,
    }
}

/// The `id` named by the first bytes of a message whose end has not come (and, from a hostile
/// peer, may never come): the member-by-member read of [`request_id_of`] only, since the bytes
/// end where a message's last member cannot be told from a nested one.
///
/// An id is trusted when the read also meets a `result` or `error` member before the bytes end
/// or break (`{"jsonrpc":"2.0","id":5,"result":…`, as most servers write an answer), or reaches
/// the object's end with no `method` (unlike [`request_id_of`], the end of the bytes is not
/// the end of the message). A `method` member, before or after the id, means `None`:
/// the bytes are the server's request, not an answer. When the bytes end after the id but before
/// any of these members (`{"jsonrpc":"2.0","id":5,"_meta":…` cut there), they could still be a
/// request whose `method` comes later, so the answer is `None` too: a request of this client
/// that such an answer was for waits for its deadline rather than a server request failing an
/// unrelated call. The price: a server request too large to read whose id comes before its
/// `method` is not recognised as one, so it cannot be refused by id either (it never could be
/// answered, being unread; the server sees its own timeout).
pub fn request_id_in_prefix(bytes: &[u8]) -> Option<RequestId> {
    match read_answer_head(bytes, Extent::Prefix) {
        AnswerHead::Answers(id) => Some(id),
        _ => None,
    }
}

/// The `id` of a request that did not parse, for the side that answers requests (a bridge
/// serving clients) and owes it an error answer: the first top-level `id` read before the
/// fault, whatever else the object holds. Not for a client reading answers, where
/// [`request_id_of`] keeps a server's broken request from naming one of the client's own.
pub fn id_of_broken_request(bytes: &[u8]) -> Option<RequestId> {
    struct FirstId<'a>(&'a mut Option<RequestId>);
    impl<'de> Visitor<'de> for FirstId<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                if key == "id" {
                    *self.0 = map.next_value()?;
                    return Ok(());
                }
                map.next_value::<de::IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut id = None;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    // The fault is the caller's to report; only the id read before it matters here.
    let _ = de.deserialize_map(FirstId(&mut id));
    id
}

/// Whether bytes read for an id are a whole message or the first bytes of one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Extent {
    /// Everything there is: where they end, the message ends (cut short, maybe).
    WholeMessage,
    /// The message goes on past them.
    Prefix,
}

/// What the top-level members read before a message's fault or end say of the request it
/// answers.
#[derive(Debug, PartialEq)]
pub(crate) enum AnswerHead {
    /// An answer to this request: its id, and a `result` / `error` member or the message's end.
    Answers(RequestId),
    /// A `result` or `error` member, no id yet: the id may still come after the fault.
    AnswerWithoutId,
    /// A `method` member: the server's request or notification.
    NotAnAnswer,
    /// Nothing that tells.
    Unknown,
}

/// Reads the top-level members of `bytes` up to its fault or end, building nothing but an id.
pub(crate) fn read_answer_head(bytes: &[u8], what: Extent) -> AnswerHead {
    #[derive(Default)]
    struct Seen {
        id: Option<RequestId>,
        answer: bool,
        method: bool,
        ended: bool,
        /// Reading a member's key (or the `,` / `}` before it) when the read stopped.
        in_key: bool,
        /// The bytes ended where a `method` member may have been cut off.
        method_may_be_cut: bool,
    }
    struct Members<'a>(&'a mut Seen);
    impl<'de> Visitor<'de> for Members<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let seen = self.0;
            loop {
                seen.in_key = true;
                let Some(key) = map.next_key::<Cow<'de, str>>()? else {
                    break;
                };
                seen.in_key = false;
                match key.as_ref() {
                    "method" => {
                        seen.method = true;
                        return Ok(());
                    }
                    "id" if seen.id.is_none() => seen.id = map.next_value()?,
                    "result" | "error" => {
                        seen.answer = true;
                        // Not needed once the id is known (and it may be what is broken).
                        if seen.id.is_none() {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                    _ => {
                        map.next_value::<de::IgnoredAny>()?;
                    }
                }
                // An answer to this id (a `method` after both would make it no valid message).
                if seen.answer && seen.id.is_some() {
                    return Ok(());
                }
            }
            seen.ended = true;
            Ok(())
        }
    }
    let mut seen = Seen::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    // The error is the caller's to report; only what was read before it matters here, and
    // whether it was the end of a whole message: then no member follows.
    if let Err(e) = de.deserialize_map(Members(&mut seen)) {
        if e.is_eof() && what == Extent::WholeMessage {
            if seen.in_key && a_method_key_may_be_cut(bytes) {
                seen.method_may_be_cut = true;
            } else {
                seen.ended = true;
            }
        }
    }
    match seen {
        Seen { method: true, .. } => AnswerHead::NotAnAnswer,
        // `{"jsonrpc":"2.0","id":1,"meth` cut there: perhaps the server's request.
        Seen {
            method_may_be_cut: true,
            answer: false,
            ..
        } => AnswerHead::Unknown,
        Seen {
            id: Some(id),
            answer,
            ended,
            ..
        } if answer || ended => AnswerHead::Answers(id),
        // A whole message broken after its id and before any member that tells (a byte that
        // is not UTF-8, a bad key): an answer unless a `method` could be in what is left. The
        // search is of the raw bytes, so a `"method"` anywhere (in a tool's text, say) also
        // means `None`: the request then waits for its deadline, never fails for another's.
        Seen { id: Some(id), .. }
            if what == Extent::WholeMessage
                && memchr::memmem::find(bytes, b"\"method\"").is_none() =>
        {
            AnswerHead::Answers(id)
        }
        Seen { answer: true, .. } => AnswerHead::AnswerWithoutId,
        _ => AnswerHead::Unknown,
    }
}

/// Whether `bytes`, which end while an object member's key is read, could have gone on with a
/// `method` member: they end between members (after a value or its `,`), or inside a key whose
/// characters so far are the first ones of `method` (or hold an escape, which could spell them).
fn a_method_key_may_be_cut(bytes: &[u8]) -> bool {
    let Some(quote) = memchr::memrchr(b'"', bytes) else {
        return true;
    };
    let opens_a_key = matches!(bytes[..quote].trim_ascii_end().last(), Some(b',' | b'{'));
    let begun = &bytes[quote + 1..];
    let between_members = begun.trim_ascii().is_empty() || begun.trim_ascii_end().ends_with(b",");
    !opens_a_key || between_members || begun.contains(&b'\\') || b"method".starts_with(begun)
}

#[cfg(test)]
#[path = "broken_tests.rs"]
mod tests;
