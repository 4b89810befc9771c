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
pub(crate) enum Outcome {
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

impl Outcome {
    /// The outcome of a call's result; `tools_call` says whether to look for a tool error.
    pub(crate) fn of(result: &Result<Payload, Error>, tools_call: bool) -> Outcome {
        match result {
            Err(error) => Outcome::Failed(error.kind()),
            Ok(payload) if tools_call && is_tool_error(payload) => Outcome::Failed(ErrorKind::Tool),
            Ok(_) => Outcome::Success,
        }
    }

    /// The OpenTelemetry `error.type`: the error kind's name, `cancelled`, or none.
    #[cfg(any(test, feature = "opentelemetry"))]
    pub(crate) fn error_type(self) -> Option<&'static str> {
        match self {
            Outcome::Success => None,
            Outcome::Failed(kind) => Some(kind.as_str()),
            Outcome::Cancelled => Some(CANCELLED),
        }
    }
}

/// Whether a `tools/call` result says the tool failed (see the layer's docs for the cost).
pub(crate) fn is_tool_error(payload: &Payload) -> bool {
    match payload {
        Payload::Typed(typed) => typed
            .get::<CallToolResult>()
            .is_some_and(|result| result.is_error == Some(true)),
        Payload::Value(value) => {
            value.get("isError").and_then(serde_json::Value::as_bool) == Some(true)
        }
        Payload::Raw(raw) => raw_is_tool_error(raw.get()),
        Payload::Shared(shared) => raw_is_tool_error(shared.as_str()),
    }
}

fn raw_is_tool_error(text: &str) -> bool {
    // Built once: a finder's setup costs more than searching a short result. Forward, because
    // only forward searches get the SIMD prefilter.
    static KEY: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\"isError\""));
    if KEY.find(text.as_bytes()).is_none() {
        return false;
    }
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
    fn outcomes_name_their_error_type() {
        let error = Error::timeout("slow");
        assert_eq!(
            Outcome::of(&Err(error), true),
            Outcome::Failed(ErrorKind::Timeout)
        );
        let failed = raw(r#"{"content":[],"isError":true}"#);
        let outcome = Outcome::of(&Ok(failed.clone()), true);
        assert_eq!(outcome.error_type(), Some("tool_error"));
        // Only a tools/call result is looked at.
        assert_eq!(Outcome::of(&Ok(failed), false), Outcome::Success);
        assert_eq!(Outcome::Success.error_type(), None);
        assert_eq!(Outcome::Cancelled.error_type(), Some("cancelled"));
    }
}
