//! What an answer's headers and body say: its content type, the session id it hands out, the
//! messages of a JSON body.

use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use mcp_core::{Message, TransportError, TransportErrorKind};

use super::MAX_SESSION_ID_LEN;

/// Whether an answer is an SSE stream (`text/event-stream`, any case, any parameters).
pub(super) fn is_event_stream(headers: &HeaderMap) -> bool {
    const EVENT_STREAM: &[u8] = b"text/event-stream";
    headers.get(CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes()
            .get(..EVENT_STREAM.len())
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case(EVENT_STREAM))
    })
}

/// Whether a `Content-Type` says JSON (`application/json`, or `application/…+json`, any case,
/// any parameters), or is missing (the body is then read as JSON, and fails as such).
pub(super) fn is_json_or_untyped(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return true;
    };
    let bytes = value.as_bytes();
    let essence = bytes
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii()
        .to_ascii_lowercase();
    essence == b"application/json"
        || (essence.starts_with(b"application/") && essence.ends_with(b"+json"))
}

/// Checks a session id the server hands out: the spec allows visible ASCII only
/// (0x21–0x7E), and this client at most [`MAX_SESSION_ID_LEN`] bytes of it (it goes back on
/// every request). The reason names the problem, never the id.
pub(super) fn check_session_id(id: &HeaderValue) -> Result<(), String> {
    let bytes = id.as_bytes();
    if bytes.is_empty() {
        return Err("it is empty".to_owned());
    }
    if bytes.len() > MAX_SESSION_ID_LEN {
        return Err(format!(
            "it is {} bytes long, more than the {MAX_SESSION_ID_LEN} accepted",
            bytes.len()
        ));
    }
    if let Some(at) = bytes.iter().position(|b| !(0x21..=0x7e).contains(b)) {
        return Err(format!(
            "byte {at} is 0x{:02x}; only visible ASCII (0x21-0x7E) is allowed",
            bytes[at]
        ));
    }
    Ok(())
}

/// One message, or a batch (2025-03-26 servers). A body that is not even one message is an
/// error (why, for the caller to turn into the failure of the request it answered); one bad
/// item of a batch is skipped.
pub(super) fn parse_json_body(
    bytes: &[u8],
    display_url: &str,
) -> Result<Vec<Result<Message, TransportError>>, String> {
    let trimmed = bytes.trim_ascii_start();
    if trimmed.first() == Some(&b'[') {
        let items = serde_json::from_slice::<Vec<Box<serde_json::value::RawValue>>>(trimmed)
            .map_err(|e| format!("an invalid JSON batch: {e}"))?;
        Ok(items
            .iter()
            .map(|raw| {
                Message::from_json_str(raw.get()).map_err(|e| {
                    TransportError::recoverable(
                        TransportErrorKind::InvalidMessage,
                        format!("{display_url} sent {}", mcp_wire::message_error_text(&e)),
                    )
                })
            })
            .collect())
    } else {
        Ok(vec![Ok(
            Message::from_slice(bytes).map_err(|e| mcp_wire::message_error_text(&e))?
        )])
    }
}
