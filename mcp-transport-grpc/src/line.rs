//! One JSON-RPC message per [`JsonRpcLine`]: encoding under the size cap, and decoding that
//! accepts only a JSON object (never a batch) and names the request a bad line answered.
//! Both ends use it: the client transport and the bridge.

use std::sync::Arc;

use mcp_core::{Message, RequestId, TransportError, TransportErrorKind};

use crate::proto::JsonRpcLine;

/// Lines shorter than this are parsed by copying their payloads out; longer ones are parsed in
/// place, their payloads sharing the line's buffer (no copy of a large result).
const SHARE_FROM: usize = 64 * 1024;
/// How much of a line that is not a JSON object goes into the error, in characters.
const PREVIEW_CHARS: usize = 80;

/// Why a message cannot go out as a line.
#[derive(Debug)]
pub(crate) enum Unsendable {
    /// Its JSON is `size` bytes, over the cap.
    TooLarge { size: usize },
    /// It could not be serialized.
    Encoding(serde_json::Error),
}

/// The message as a line; the compatibility fields stay empty. Fails when the JSON is over
/// `max` bytes (each caller says what that means for it).
pub(crate) fn encode(message: &Message, max: usize) -> Result<JsonRpcLine, Unsendable> {
    let mut json = Vec::with_capacity(128);
    message
        .write_json(&mut json)
        .map_err(Unsendable::Encoding)?;
    if json.len() > max {
        return Err(Unsendable::TooLarge { size: json.len() });
    }
    // `write_json` writes only UTF-8 (serde_json output and text that was a `str`).
    let line = String::from_utf8(json)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(JsonRpcLine {
        line,
        ..JsonRpcLine::default()
    })
}

/// The client's error for a message it cannot send: recoverable, naming the request, and
/// never sent.
pub(crate) fn send_error(message: &Message, why: Unsendable, max: usize) -> TransportError {
    match why {
        Unsendable::TooLarge { size } => mcp_wire::unsent_oversized(message, size, max),
        Unsendable::Encoding(e) => TransportError::recoverable(
            TransportErrorKind::InvalidMessage,
            format!("could not encode the message: {e}"),
        )
        .for_request(message.request_id().cloned())
        .never_sent(),
    }
}

/// What one received line holds.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// A JSON-RPC message.
    Message(Message),
    /// An empty line (the npm package skips these too): nothing to deliver.
    Empty,
    /// Not a JSON-RPC message: a recoverable error naming the request when it has an id.
    Bad(TransportError),
}

/// Decodes one line from the server (the client's side); the compatibility fields are ignored.
/// A broken line names the client's request only when it is an answer
/// ([`mcp_wire::request_id_of`]).
pub(crate) fn decode(line: JsonRpcLine, peer: &str) -> Decoded {
    decode_with(line, peer, mcp_wire::request_id_of)
}

/// Decodes one line from a client (the bridge's side): a broken request names the id its error
/// answer goes to ([`mcp_wire::id_of_broken_request`]).
#[cfg(any(feature = "server", test))]
pub(crate) fn decode_request(line: JsonRpcLine) -> Decoded {
    decode_with(line, "the client", mcp_wire::id_of_broken_request)
}

/// How a broken line's id is found.
type IdFinder = fn(&[u8]) -> Option<RequestId>;

fn decode_with(line: JsonRpcLine, peer: &str, id_of: IdFinder) -> Decoded {
    let text = line.line;
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Decoded::Empty;
    }
    if !trimmed.starts_with('{') {
        let what = if trimmed.starts_with('[') {
            "a JSON array (JSON-RPC batches are not allowed on this transport)".to_owned()
        } else {
            format!("not a JSON object: {}", preview(trimmed))
        };
        return Decoded::Bad(TransportError::recoverable(
            TransportErrorKind::InvalidMessage,
            format!("{peer} sent a gRPC line that is {what}"),
        ));
    }
    if text.len() < SHARE_FROM {
        return match Message::from_slice(text.as_bytes()) {
            Ok(message) => Decoded::Message(message),
            Err(e) => Decoded::Bad(bad_message(peer, e, &text, id_of)),
        };
    }
    let shared = Arc::new(text.into_bytes());
    match Message::from_shared_line(&shared) {
        Ok(message) => Decoded::Message(message),
        Err(e) => Decoded::Bad(bad_message(
            peer,
            e,
            std::str::from_utf8(&shared).unwrap_or_default(),
            id_of,
        )),
    }
}

/// A line that is a JSON object but not a JSON-RPC message; only on this path is it parsed
/// again, to find the request it names.
fn bad_message(
    peer: &str,
    e: mcp_core::jsonrpc::MessageError,
    text: &str,
    id_of: IdFinder,
) -> TransportError {
    TransportError::recoverable(
        TransportErrorKind::InvalidMessage,
        format!("{peer} sent {}", mcp_wire::message_error_text(&e)),
    )
    .for_request(id_of(text.as_bytes()))
}

/// The start of a line for an error message: redacted, control characters out, cut, quoted.
fn preview(text: &str) -> String {
    format!(
        "{:?}",
        mcp_wire::redact::excerpt_of_start(text.as_bytes(), PREVIEW_CHARS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_core::{Payload, Request};

    fn line(text: &str) -> JsonRpcLine {
        JsonRpcLine {
            line: text.into(),
            ..JsonRpcLine::default()
        }
    }

    #[test]
    fn a_message_round_trips_through_a_line() {
        let request = Message::Request(Request::new(
            7,
            "tools/call",
            Some(Payload::from_json_str(r#"{"name":"echo","arguments":{"text":"é"}}"#).unwrap()),
        ));
        let encoded = encode(&request, 1024).unwrap();
        assert!(encoded.related_request_id.is_empty() && encoded.resumption_token.is_empty());
        match decode(encoded, "the server") {
            Decoded::Message(back) => assert_eq!(
                back.to_json_string().unwrap(),
                request.to_json_string().unwrap()
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_cap_is_on_the_json_bytes() {
        let request = Message::Request(Request::new(1, "ping", None));
        let size = request.to_json_string().unwrap().len();
        assert!(encode(&request, size).is_ok());
        match encode(&request, size - 1) {
            Err(Unsendable::TooLarge { size: found }) => assert_eq!(found, size),
            other => panic!("{other:?}"),
        }
        let error = send_error(&request, Unsendable::TooLarge { size }, size - 1);
        assert_eq!(error.kind(), TransportErrorKind::MessageTooLarge);
        assert!(!error.is_fatal());
        assert!(!error.may_have_been_delivered());
        assert_eq!(error.request_id(), Some(&RequestId::Number(1)));
        assert!(error.message().contains("max_message_size"), "{error}");
    }

    #[test]
    fn decoding_accepts_objects_only_and_names_the_request_when_it_can() {
        // (line, Some(expected request id) for a bad line, None for a good one)
        let cases: [(&str, Result<(), Option<RequestId>>); 9] = [
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Ok(())),
            (r#"  {"jsonrpc":"2.0","method":"notifications/x"}"#, Ok(())),
            (r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#, Err(None)),
            ("42", Err(None)),
            ("null", Err(None)),
            ("not json", Err(None)),
            (
                r#"{"jsonrpc":"2.0","id":9,"bogus":1}"#,
                Err(Some(RequestId::Number(9))),
            ),
            // Cut off: the id before the cut still names the request.
            (
                r#"{"jsonrpc":"2.0","id":"a","result""#,
                Err(Some(RequestId::String("a".into()))),
            ),
            (
                r#"{"jsonrpc":"1.0","id":"a","result":{}}"#,
                Err(Some(RequestId::String("a".into()))),
            ),
        ];
        for (text, expected) in cases {
            match (decode(line(text), "the server"), expected) {
                (Decoded::Message(_), Ok(())) => {}
                (Decoded::Bad(e), Err(id)) => {
                    assert_eq!(e.kind(), TransportErrorKind::InvalidMessage, "{text}");
                    assert!(!e.is_fatal(), "{text}");
                    assert!(e.message().starts_with("the server sent"), "{text}: {e}");
                    assert_eq!(e.request_id(), id.as_ref(), "{text}");
                }
                (other, expected) => panic!("{text}: {other:?}, expected {expected:?}"),
            }
        }
        assert!(matches!(decode(line(""), "x"), Decoded::Empty));
        assert!(matches!(decode(line(" \n"), "x"), Decoded::Empty));
    }

    #[test]
    fn the_peers_text_in_an_error_is_redacted_and_cut() {
        let secret = format!("Bearer SECRET-0123456789{}", "x".repeat(10_000));
        for text in [
            format!(r#"{{"jsonrpc":"2.0","id":1,"error":"{secret}"}}"#),
            format!("\u{1b}[2J {secret}"),
        ] {
            let Decoded::Bad(e) = decode(line(&text), "the server") else {
                panic!("{text:.80}")
            };
            assert!(!e.message().contains("SECRET"), "{e}");
            assert!(!e.message().contains('\u{1b}'), "{e}");
            assert!(e.message().chars().count() < 400, "{e}");
        }
    }

    #[test]
    fn large_lines_are_parsed_in_place() {
        let text = "y".repeat(SHARE_FROM * 2);
        let json = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"text":"{text}"}}}}"#);
        match decode(line(&json), "the server") {
            Decoded::Message(Message::Response(r)) => {
                let result = r.outcome.unwrap();
                assert!(matches!(result, Payload::Shared(_)), "{result:?}");
                assert!(result.to_json_string().contains(&text));
            }
            other => panic!("{other:?}"),
        }
        // Nested past the parser's depth limit, on either path: still an error for request 5.
        for depth in [1_000, SHARE_FROM * 2] {
            let deep = format!(r#"{{"jsonrpc":"2.0","id":5,"result":{}"#, "[".repeat(depth));
            match decode(line(&deep), "the server") {
                Decoded::Bad(e) => assert_eq!(e.request_id(), Some(&RequestId::Number(5))),
                other => panic!("{other:?}"),
            }
        }
        let broken = format!(r#"{{"jsonrpc":"2.0","id":4,"nothing":"{text}"}}"#);
        match decode(line(&broken), "the server") {
            Decoded::Bad(e) => assert_eq!(e.request_id(), Some(&RequestId::Number(4))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_broken_request_names_its_id_on_the_bridge_side_only() {
        let deep = "[".repeat(1_000);
        let request = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{deep}"#);
        // The bridge answers the client's request 3 with an error.
        match decode_request(line(&request)) {
            Decoded::Bad(e) => assert_eq!(e.request_id(), Some(&RequestId::Number(3))),
            other => panic!("{other:?}"),
        }
        // A client reading the same from a server: the server's request names none of its own.
        match decode(line(&request), "the server") {
            Decoded::Bad(e) => assert_eq!(e.request_id(), None),
            other => panic!("{other:?}"),
        }
    }
}
