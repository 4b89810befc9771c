//! What is called: the fixture server's `echo` tool with a few bytes, or its `large` tool
//! returning 256 KiB.

use serde_json::{json, Value};

/// Bytes of the large tool result.
pub const LARGE_RESULT_BYTES: usize = 256 * 1024;

/// The two payload sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// `echo {"text":"hi"}` → a 2-byte text result.
    Small,
    /// `large {"bytes":262144}` → a 256 KiB text result.
    Large,
}

impl Payload {
    /// Parses `small` / `large`.
    pub fn parse(s: &str) -> Option<Payload> {
        match s {
            "small" => Some(Payload::Small),
            "large" => Some(Payload::Large),
            _ => None,
        }
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Payload::Small => "small",
            Payload::Large => "256KiB",
        }
    }

    /// The tool to call.
    pub fn tool(self) -> &'static str {
        match self {
            Payload::Small => "echo",
            Payload::Large => "large",
        }
    }

    /// Its arguments.
    pub fn arguments(self) -> Value {
        match self {
            Payload::Small => json!({"text": "hi"}),
            Payload::Large => json!({"bytes": LARGE_RESULT_BYTES}),
        }
    }

    /// Checks a result's text, so no client is measured doing less than the others.
    pub fn check_text(self, text: &str) -> bool {
        match self {
            Payload::Small => text == "hi",
            Payload::Large => text.len() == LARGE_RESULT_BYTES,
        }
    }

    /// Checks a `tools/call` result as our clients get it (the session or the facade).
    pub fn check_result(self, result: &mcp_core::types::CallToolResult) -> Result<(), String> {
        match result.content.first().and_then(|c| c.as_text()) {
            Some(text) if self.check_text(text) => Ok(()),
            _ => Err(format!(
                "unexpected result: {:?}",
                result.content.first().map(|c| c.type_name())
            )),
        }
    }
}
