//! How a server's JSON-RPC error codes (and, where servers disagree on codes, message phrases)
//! map to the kinds of the error taxonomy: the session classifies every error response through
//! its [`ErrorCodeTable`] ([`SessionOptions::error_codes`](crate::SessionOptions::error_codes)).

use std::ops::RangeInclusive;

use mcp_core::jsonrpc::{codes, ErrorObject};
use mcp_core::{Error, ErrorKind};
use serde_json::Value;

/// Finds the argument an invalid-params error is about: `data.field`, `data.path`,
/// `data.param`, or a quoted name after the word "field"/"argument"/"parameter" in the message.
fn invalid_field(error: &ErrorObject) -> Option<String> {
    if let Some(data) = error.data.as_ref().and_then(Value::as_object) {
        for key in ["field", "path", "param", "argument"] {
            match data.get(key) {
                Some(Value::String(s)) if !s.is_empty() => return Some(s.clone()),
                Some(Value::Array(parts)) if !parts.is_empty() => {
                    let joined: Vec<String> = parts
                        .iter()
                        .map(|p| match p {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect();
                    return Some(joined.join("."));
                }
                _ => {}
            }
        }
    }
    let lower = error.message.to_ascii_lowercase();
    for word in ["field ", "argument ", "parameter "] {
        if let Some(pos) = lower.find(word) {
            let rest = &error.message[pos + word.len()..];
            let name: String = rest
                .trim_start_matches(['\'', '"', '`'])
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
                .collect();
            if !name.is_empty() {
                return Some(name);
            }
        }
    }
    None
}

/// Whether `text` contains the `*`-separated parts of `pattern`, in order.
fn contains_pattern(text: &str, pattern: &str) -> bool {
    let mut rest = text;
    for part in pattern.split('*').filter(|p| !p.is_empty()) {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// One rule of an [`ErrorCodeTable`]: codes in a range (and optionally a message containing a
/// phrase, compared case-insensitively) map to a kind.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorCodeRule {
    codes: RangeInclusive<i64>,
    message_contains: Option<String>,
    kind: ErrorKind,
}

impl ErrorCodeRule {
    /// Codes in `codes` map to `kind`.
    pub fn new(codes: RangeInclusive<i64>, kind: ErrorKind) -> Self {
        ErrorCodeRule {
            codes,
            message_contains: None,
            kind,
        }
    }

    /// Only when the message contains `phrase` (case-insensitive). A `*` in the phrase matches
    /// any text: `"tool * not found"` matches "Tool nope not found".
    pub fn when_message_contains(mut self, phrase: &str) -> Self {
        self.message_contains = Some(phrase.to_ascii_lowercase());
        self
    }

    fn matches(&self, code: i64, lowercase_message: &str) -> bool {
        self.codes.contains(&code)
            && self
                .message_contains
                .as_deref()
                .is_none_or(|p| contains_pattern(lowercase_message, p))
    }
}

/// Maps JSON-RPC error codes (and, where servers disagree on codes, message phrases) to kinds.
/// The first matching rule wins; rules added with [`ErrorCodeTable::with_rule`] come before the
/// defaults, so a harness can override any mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorCodeTable {
    rules: Vec<ErrorCodeRule>,
    fallback: ErrorKind,
}

impl Default for ErrorCodeTable {
    /// The mapping for the MCP specification and what the official SDKs send:
    ///
    /// | code | kind |
    /// |---|---|
    /// | -32602 with "unknown tool" / "tool \[*\] not found" / "no such tool" | ToolNotFound |
    /// | -32602 with "unknown resource" / "resource \[*\] not found" (2026-07-28's "resource not found") | Resource |
    /// | -32602 | InvalidParams |
    /// | -32700, -32600, -32601 | Protocol |
    /// | -32603 | Tool |
    /// | -32002 | Resource (resource not found) |
    /// | -32001 | Timeout (the TypeScript SDK's request timeout) |
    /// | -32000 | Network (the TypeScript SDK's connection closed) |
    /// | anything else | Tool |
    fn default() -> Self {
        use ErrorKind::*;
        ErrorCodeTable {
            rules: vec![
                ErrorCodeRule::new(codes::INVALID_PARAMS..=codes::INVALID_PARAMS, ToolNotFound)
                    .when_message_contains("unknown tool"),
                ErrorCodeRule::new(codes::INVALID_PARAMS..=codes::INVALID_PARAMS, ToolNotFound)
                    .when_message_contains("tool not found"),
                ErrorCodeRule::new(codes::INVALID_PARAMS..=codes::INVALID_PARAMS, ToolNotFound)
                    .when_message_contains("tool * not found"),
                ErrorCodeRule::new(codes::INVALID_PARAMS..=codes::INVALID_PARAMS, ToolNotFound)
                    .when_message_contains("no such tool"),
                ErrorCodeRule::new(codes::INVALID_PARAMS..=codes::INVALID_PARAMS, Resource)
                    .when_message_contains("unknown resource"),
                ErrorCodeRule::new(codes::INVALID_PARAMS..=codes::INVALID_PARAMS, Resource)
                    .when_message_contains("resource * not found"),
                ErrorCodeRule::new(codes::INVALID_PARAMS..=codes::INVALID_PARAMS, Resource)
                    .when_message_contains("resource not found"),
                ErrorCodeRule::new(codes::INVALID_PARAMS..=codes::INVALID_PARAMS, InvalidParams),
                ErrorCodeRule::new(codes::PARSE_ERROR..=codes::PARSE_ERROR, Protocol),
                ErrorCodeRule::new(codes::METHOD_NOT_FOUND..=codes::INVALID_REQUEST, Protocol),
                ErrorCodeRule::new(codes::INTERNAL_ERROR..=codes::INTERNAL_ERROR, Tool),
                ErrorCodeRule::new(
                    codes::RESOURCE_NOT_FOUND..=codes::RESOURCE_NOT_FOUND,
                    Resource,
                ),
                ErrorCodeRule::new(-32001..=-32001, Timeout),
                ErrorCodeRule::new(-32000..=-32000, Network),
            ],
            fallback: Tool,
        }
    }
}

impl ErrorCodeTable {
    /// A table with no rules: every code maps to `fallback`.
    pub fn empty(fallback: ErrorKind) -> Self {
        ErrorCodeTable {
            rules: Vec::new(),
            fallback,
        }
    }

    /// Adds a rule that takes precedence over every rule already in the table.
    pub fn with_rule(mut self, rule: ErrorCodeRule) -> Self {
        self.rules.insert(0, rule);
        self
    }

    /// Shorthand: `code` maps to `kind`, ahead of the existing rules.
    pub fn with_code(self, code: i64, kind: ErrorKind) -> Self {
        self.with_rule(ErrorCodeRule::new(code..=code, kind))
    }

    /// The error of a server's error response, classified: an invalid-params error also names
    /// the argument it is about when the server said ([`Error::field`]).
    pub fn error_of(&self, error: ErrorObject) -> Error {
        let kind = self.classify(error.code, &error.message);
        let field = match kind {
            ErrorKind::InvalidParams => invalid_field(&error),
            _ => None,
        };
        let answered = Error::answered(kind, error);
        match field {
            Some(field) => answered.with_field(field),
            None => answered,
        }
    }

    /// The kind for an error with this code and message.
    pub fn classify(&self, code: i64, message: &str) -> ErrorKind {
        let lower = message.to_ascii_lowercase();
        self.rules
            .iter()
            .find(|r| r.matches(code, &lower))
            .map_or(self.fallback, |r| r.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_table_maps_every_standard_code() {
        let t = ErrorCodeTable::default();
        let cases = [
            (-32700, "Parse error", ErrorKind::Protocol),
            (-32600, "Invalid Request", ErrorKind::Protocol),
            (-32601, "Method not found", ErrorKind::Protocol),
            (
                -32602,
                "Invalid params: missing a",
                ErrorKind::InvalidParams,
            ),
            (-32602, "Unknown tool: nope", ErrorKind::ToolNotFound),
            (
                -32602,
                "Resource not found: fixture://nope",
                ErrorKind::Resource,
            ),
            (-32602, "Tool not found: x", ErrorKind::ToolNotFound),
            (-32602, "no such tool", ErrorKind::ToolNotFound),
            (
                -32602,
                "MCP error -32602: Tool nope not found",
                ErrorKind::ToolNotFound,
            ),
            (
                -32602,
                "Unknown resource: data://missing",
                ErrorKind::Resource,
            ),
            (
                -32602,
                "Resource demo://nope not found",
                ErrorKind::Resource,
            ),
            (-32602, "argument x not found", ErrorKind::InvalidParams),
            (-32603, "Internal error", ErrorKind::Tool),
            (-32002, "Resource not found", ErrorKind::Resource),
            (-32001, "Request timed out", ErrorKind::Timeout),
            (-32000, "Connection closed", ErrorKind::Network),
            (42, "custom", ErrorKind::Tool),
            (-32099, "server defined", ErrorKind::Tool),
        ];
        for (code, msg, kind) in cases {
            assert_eq!(t.classify(code, msg), kind, "{code} {msg}");
        }
    }

    #[test]
    fn table_rules_can_be_overridden_and_extended() {
        let t = ErrorCodeTable::default()
            .with_code(-32603, ErrorKind::Network)
            .with_code(-31999, ErrorKind::PermissionDenied)
            .with_rule(
                ErrorCodeRule::new(-32099..=-32010, ErrorKind::Auth).when_message_contains("token"),
            );
        assert_eq!(t.classify(-32603, "x"), ErrorKind::Network);
        assert_eq!(t.classify(-31999, "x"), ErrorKind::PermissionDenied);
        assert_eq!(t.classify(-32050, "Token expired"), ErrorKind::Auth);
        assert_eq!(t.classify(-32050, "other"), ErrorKind::Tool);
        let empty = ErrorCodeTable::empty(ErrorKind::Protocol);
        assert_eq!(empty.classify(-32602, "Unknown tool"), ErrorKind::Protocol);
    }

    #[test]
    fn invalid_params_field_comes_from_data_or_message() {
        let t = ErrorCodeTable::default();
        let from_data = t.error_of(ErrorObject {
            code: -32602,
            message: "bad".into(),
            data: Some(json!({"field": "limit"})),
        });
        assert_eq!(from_data.field(), Some("limit"));
        let from_path = t.error_of(ErrorObject {
            code: -32602,
            message: "bad".into(),
            data: Some(json!({"path": ["filter", 0, "name"]})),
        });
        assert_eq!(from_path.field(), Some("filter.0.name"));
        let from_message = t.error_of(ErrorObject::invalid_params("missing field 'text'"));
        assert_eq!(from_message.field(), Some("text"));
        assert_eq!(from_message.code(), Some(-32602));
        let none = t.error_of(ErrorObject::invalid_params("nope"));
        assert_eq!(none.field(), None);
    }
}
