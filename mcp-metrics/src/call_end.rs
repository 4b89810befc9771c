//! How a call ended: a success, an error of some kind, or abandoned by its caller — and the
//! one look at a successful `tools/call` result that tells a tool error (`isError: true`; its
//! cost is in the [layer's docs](crate::layer#what-looking-for-a-tool-error-costs)).

use std::sync::LazyLock;

use mcp_core::types::CallToolResult;
use mcp_core::{Error, ErrorKind, Payload};
use memchr::memmem;
use serde::Deserialize;

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallEnd {
    /// A result (not a tool error).
    Success,
    /// An error, or a `tools/call` result with `isError: true` ([`ErrorKind::Tool`]).
    Failed(ErrorKind),
    /// The caller dropped the call before it ended.
    Cancelled,
}

/// The `error.type` of an abandoned call.
#[cfg(any(test, feature = "opentelemetry"))]
pub(crate) const CANCELLED: &str = "cancelled";

impl CallEnd {
    /// The outcome of a call's result; `tools_call` says whether to look for a tool error.
    pub(crate) fn of(result: &Result<Payload, Error>, tools_call: bool) -> CallEnd {
        match result {
            Err(error) => CallEnd::Failed(error.kind()),
            Ok(payload) if tools_call && is_tool_error(payload) => CallEnd::Failed(ErrorKind::Tool),
            Ok(_) => CallEnd::Success,
        }
    }

    /// The OpenTelemetry `error.type`: the error kind's name, `cancelled`, or none.
    #[cfg(any(test, feature = "opentelemetry"))]
    pub(crate) fn error_type(self) -> Option<&'static str> {
        match self {
            CallEnd::Success => None,
            CallEnd::Failed(kind) => Some(kind.as_str()),
            CallEnd::Cancelled => Some(CANCELLED),
        }
    }
}

/// Whether a `tools/call` result says the tool failed (see the layer's docs for the cost).
pub(crate) fn is_tool_error(payload: &Payload) -> bool {
    match payload {
        Payload::Typed(typed) => typed
            .get::<CallToolResult>()
            .is_some_and(|result| result.is_error == Some(true)),
        Payload::Value(serde_json::Value::Object(members)) => {
            // A result has a handful of members: looking at each costs less than a search
            // that compares through `memcmp`.
            let member = if members.len() <= 8 {
                members
                    .iter()
                    .find_map(|(key, value)| (key == "isError").then_some(value))
            } else {
                members.get("isError")
            };
            member.and_then(serde_json::Value::as_bool) == Some(true)
        }
        Payload::Value(_) => false,
        Payload::Raw(raw) => raw_is_tool_error(raw.get()),
        Payload::Shared(shared) => raw_is_tool_error(shared.as_str()),
    }
}

/// The key looked for, with its quotes.
const KEY: &[u8] = b"\"isError\"";
/// Where the key's rarest byte (`E`) is in it: the search runs on that one byte.
const PIVOT: usize = 3;
/// Candidates (an `E` that is not in the key) tolerated before the search goes on with a
/// substring search instead: text with many capitals (base64, say) would stop the one-byte
/// search too often.
const MISSES: u32 = 8;

fn raw_is_tool_error(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut from = 0;
    let mut misses = 0;
    while let Some(at) = find_key(bytes, from, &mut misses) {
        let after = at + KEY.len();
        // Only a key followed by `true` can make a tool error: a key whose value is anything
        // else (the `"isError": false` many servers always write), or the same text as a
        // string, is passed over without parsing anything. The parse decides whether this
        // `true` is the result's own member, not a nested object's.
        if is_true_member(bytes.get(after..).unwrap_or_default()) {
            return parse_is_error(text);
        }
        // On from the next byte: the key's closing quote could open another.
        from = at + 1;
    }
    false
}

/// Where the next `"isError"` starts, at or after `from`.
#[inline]
fn find_key(bytes: &[u8], from: usize, misses: &mut u32) -> Option<usize> {
    // Built once: a finder's setup costs more than searching a short result. Forward, because
    // only forward searches get the SIMD prefilter.
    static FINDER: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(KEY));
    let mut at = from + PIVOT;
    while *misses < MISSES {
        // One byte: `memchr` searches it several times faster than a substring search the
        // key's length, and in JSON an `E` is rare.
        let pivot = at + memchr::memchr(b'E', bytes.get(at..)?)?;
        let start = pivot - PIVOT;
        if bytes.get(start..start + KEY.len()) == Some(KEY) {
            return Some(start);
        }
        *misses += 1;
        at = pivot + 1;
    }
    let rest = at - PIVOT;
    FINDER.find(bytes.get(rest..)?).map(|found| rest + found)
}

/// Whether `rest`, the text after a `"isError"`, makes it a member whose value is `true`.
fn is_true_member(rest: &[u8]) -> bool {
    let rest = rest.trim_ascii_start();
    match rest.split_first() {
        Some((b':', value)) => value.trim_ascii_start().starts_with(b"true"),
        _ => false,
    }
}

/// Parses the result's `isError`: borrows the text and skips every other member without
/// building it.
#[cold]
fn parse_is_error(text: &str) -> bool {
    /// The one member looked at; every other is skipped without being built.
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_str::<Probe>(text)
        .ok()
        .and_then(|probe| probe.is_error)
        == Some(true)
}

#[cfg(test)]
mod tests {
    use mcp_core::types::Content;
    use mcp_core::TypedPayload;
    use serde_json::json;

    use super::*;

    fn raw(text: &str) -> Payload {
        Payload::from_json_str(text).unwrap()
    }

    #[test]
    fn a_tool_error_is_seen_in_every_payload_shape() {
        let failed = CallToolResult {
            content: vec![Content::text("boom")],
            structured_content: None,
            is_error: Some(true),
            extra: Default::default(),
        };
        let fine = CallToolResult {
            is_error: None,
            ..failed.clone()
        };
        assert!(is_tool_error(&Payload::Typed(TypedPayload::new(
            failed.clone()
        ))));
        assert!(!is_tool_error(&Payload::Typed(TypedPayload::new(fine))));
        assert!(is_tool_error(&Payload::from_serialize(&failed).unwrap()));
        assert!(is_tool_error(&raw(
            r#"{"content":[{"type":"text","text":"boom"}],"isError":true}"#
        )));
        assert!(is_tool_error(&raw(r#" { "isError" : true } "#)));
        for fine in [
            r#"{"content":[]}"#,
            r#"{"content":[],"isError":false}"#,
            // Only the top level counts: not a structured result's member, not text.
            r#"{"content":[],"structuredContent":{"isError":true}}"#,
            r#"{"content":[{"type":"text","text":"\"isError\":true"}]}"#,
            // Not a boolean: not a tool error (and no panic).
            r#"{"content":[],"isError":"yes"}"#,
        ] {
            assert!(!is_tool_error(&raw(fine)), "{fine}");
        }
        assert!(!is_tool_error(&Payload::Value(json!({"isError": "true"}))));
        assert!(!is_tool_error(&Payload::Value(json!([1]))));
    }

    #[test]
    fn the_key_is_found_past_false_values_nested_keys_and_many_capitals() {
        let capitals = "EXAMPLE ENTRY E".repeat(20);
        for (text, failed) in [
            // `false` and a string passed over; the result's own `true` found after them.
            (
                r#"{"structuredContent":{"isError":false},"content":[{"type":"text","text":"isError"}],"isError":true}"#.to_owned(),
                true,
            ),
            // A nested `true` is parsed and found not to be the result's own.
            (
                r#"{"structuredContent":{"isError":true},"isError":false}"#.to_owned(),
                false,
            ),
            (r#"{"isError" :	true}"#.to_owned(), true),
            (r#"{"isError":false}"#.to_owned(), false),
            // More capitals than the one-byte search tolerates: the substring search goes on.
            (
                format!(r#"{{"content":[{{"type":"text","text":"{capitals}"}}],"isError":true}}"#),
                true,
            ),
            (
                format!(r#"{{"content":[{{"type":"text","text":"{capitals}"}}],"isError":false}}"#),
                false,
            ),
            (
                format!(r#"{{"content":[{{"type":"text","text":"{capitals}"}}]}}"#),
                false,
            ),
        ] {
            assert_eq!(is_tool_error(&raw(&text)), failed, "{text}");
            assert_eq!(
                is_tool_error(&Payload::Value(serde_json::from_str(&text).unwrap())),
                failed,
                "{text}"
            );
        }
        // A value with more members than are looked at one by one.
        let mut many: serde_json::Map<String, serde_json::Value> =
            (0..20).map(|i| (format!("m{i}"), json!(i))).collect();
        assert!(!is_tool_error(&Payload::Value(many.clone().into())));
        many.insert("isError".into(), json!(true));
        assert!(is_tool_error(&Payload::Value(many.into())));
    }

    #[test]
    fn call_ends_name_their_error_type() {
        let error = Error::timeout("slow");
        assert_eq!(
            CallEnd::of(&Err(error), true),
            CallEnd::Failed(ErrorKind::Timeout)
        );
        let failed = raw(r#"{"content":[],"isError":true}"#);
        let end = CallEnd::of(&Ok(failed.clone()), true);
        assert_eq!(end.error_type(), Some("tool_error"));
        // Only a tools/call result is looked at.
        assert_eq!(CallEnd::of(&Ok(failed), false), CallEnd::Success);
        assert_eq!(CallEnd::Success.error_type(), None);
        assert_eq!(CallEnd::Cancelled.error_type(), Some("cancelled"));
    }
}
