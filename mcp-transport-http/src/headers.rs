//! The request metadata headers of the modern era (2026-07-28) on Streamable HTTP.
//!
//! Every POST carries `Mcp-Method`; `tools/call`, `resources/read` and `prompts/get` also
//! `Mcp-Name` (the tool or prompt name, or the resource URI), and the Tasks extension's
//! `tasks/get`, `tasks/update` and `tasks/cancel` the task id. A tool's `inputSchema` may mark
//! primitive parameters with `x-mcp-header: Name`; their values travel as `Mcp-Param-Name`
//! headers too. Values that are not plain visible ASCII (or look like the sentinel) are sent as
//! `=?base64?…?=`.
//!
//! The annotations are learned from the `tools/list` answers this transport carries, into a
//! [`ToolHeaders`] table shared by every connection made from one [`HttpServerConfig`](crate::HttpServerConfig)
//! (`crate::HttpServerConfig`) — a pooled connection that never listed tools still sends the
//! headers. As the binding requires, a tool whose annotations break the rules (empty, not a
//! header token, on a non-primitive or `number` parameter, reachable only through arrays,
//! composition or `$ref`, duplicated case-insensitively) is removed from the `tools/list`
//! answer, with a warning naming the tool and why.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_core::types::methods;
use serde_json::Value;

/// `Mcp-Method`.
pub const METHOD_HEADER: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME_HEADER: &str = "mcp-name";
/// The prefix of the headers mirrored from tool parameters.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// The largest integer a header may carry (JavaScript's safe range).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One annotated parameter: where it is in the arguments and the header name part.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ParamHeader {
    path: Vec<String>,
    name: String,
}

/// The `x-mcp-header` annotations of the tools of one server, by tool name.
#[derive(Debug, Default)]
pub struct ToolHeaders {
    tools: Mutex<HashMap<String, Arc<[ParamHeader]>>>,
}

impl ToolHeaders {
    /// Learns from one `tools/list` result and removes the tools whose annotations are
    /// invalid. Returns whether the result was changed.
    pub(crate) fn learn(&self, result: &mut Value) -> bool {
        let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
            return false;
        };
        let before = tools.len();
        let mut learned = Vec::new();
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            match annotations(schema) {
                Ok(params) => {
                    learned.push((name.to_owned(), params));
                    true
                }
                Err(why) => {
                    tracing::warn!(
                        tool = name,
                        why,
                        "ignoring a tool with an invalid x-mcp-header annotation"
                    );
                    false
                }
            }
        });
        let mut table = mcp_core::sync::lock(&self.tools);
        for (name, params) in learned {
            if params.is_empty() {
                table.remove(&name);
            } else {
                table.insert(name, params.into());
            }
        }
        tools.len() != before
    }

    fn params_of(&self, tool: &str) -> Option<Arc<[ParamHeader]>> {
        mcp_core::sync::lock(&self.tools).get(tool).cloned()
    }
}

/// The `x-mcp-header` annotations of one input schema, or why they are invalid.
fn annotations(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    collect(schema, &mut Vec::new(), true, &mut found)?;
    let mut seen: Vec<String> = Vec::new();
    for param in &found {
        let lower = param.name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(format!(
                "x-mcp-header {:?} is used by more than one parameter",
                param.name
            ));
        }
        seen.push(lower);
    }
    Ok(found)
}

/// Walks a schema. `reachable`: the path from the root consists of `properties` keys only.
fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Some(object) = schema.as_object() else {
        return Ok(());
    };
    if let Some(header) = object.get("x-mcp-header") {
        let at = if path.is_empty() {
            "the schema root".to_owned()
        } else {
            format!("parameter {:?}", path.join("."))
        };
        let name = header
            .as_str()
            .ok_or_else(|| format!("x-mcp-header on {at} is not a string"))?;
        if !reachable || path.is_empty() {
            return Err(format!(
                "x-mcp-header {name:?} on {at} is not reachable through properties alone"
            ));
        }
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(format!(
                "x-mcp-header {name:?} on {at} is not a valid header name"
            ));
        }
        match object.get("type").and_then(Value::as_str) {
            Some("string" | "integer" | "boolean") => {}
            other => {
                return Err(format!(
                    "x-mcp-header {name:?} on {at} needs a string, integer or boolean parameter, not {}",
                    other.unwrap_or("an untyped one")
                ))
            }
        }
        found.push(ParamHeader {
            path: path.clone(),
            name: name.to_owned(),
        });
    }
    for (key, value) in object {
        match key.as_str() {
            "properties" => {
                if let Some(properties) = value.as_object() {
                    for (property, sub) in properties {
                        path.push(property.clone());
                        let outcome = collect(sub, path, reachable, found);
                        path.pop();
                        outcome?;
                    }
                }
            }
            "x-mcp-header" | "enum" | "const" | "default" | "examples" => {}
            // Anything else may hold subschemas; annotations inside are unreachable.
            _ => collect_unreachable(value, path, found)?,
        }
    }
    Ok(())
}

fn collect_unreachable(
    value: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match value {
        Value::Object(_) => collect(value, path, false, found),
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| collect_unreachable(item, path, found)),
        _ => Ok(()),
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A header value: the text as-is when it is plain visible ASCII (spaces inside allowed),
/// otherwise the Base64 sentinel form.
pub fn encode_header_value(text: &str) -> String {
    let looks_encoded = text.starts_with("=?base64?") && text.ends_with("?=");
    let plain = text.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && !looks_encoded;
    // The empty string is plain (an empty header value).
    if plain {
        text.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
        )
    }
}

/// The `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers of one request, or why the request
/// cannot be sent (a parameter value a header cannot carry).
pub(crate) fn request_headers(
    method: &str,
    params: Option<&mcp_core::Payload>,
    tools: &ToolHeaders,
) -> Result<HeaderMap, String> {
    /// The members the headers come from; the arguments stay raw until an annotated tool needs
    /// them (most calls parse nothing but the name).
    #[derive(serde::Deserialize)]
    struct Named {
        name: Option<String>,
        uri: Option<String>,
        #[serde(rename = "taskId")]
        task_id: Option<String>,
        arguments: Option<Box<serde_json::value::RawValue>>,
    }
    let mut headers = HeaderMap::new();
    // Encoded values are visible ASCII, so this cannot fail; the message never shows the value.
    let value = |text: &str| {
        HeaderValue::from_str(&encode_header_value(text))
            .map_err(|e| format!("cannot send a value as a header: {e}"))
    };
    headers.insert(HeaderName::from_static(METHOD_HEADER), value(method)?);
    let name_member = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        m if methods::is_task_method(m) => Some("taskId"),
        _ => None,
    };
    let Some(member) = name_member else {
        return Ok(headers);
    };
    let Some(named) = params.and_then(|p| p.deserialize::<Named>().ok()) else {
        return Ok(headers);
    };
    let Some(name) = (match member {
        "uri" => named.uri,
        "taskId" => named.task_id,
        _ => named.name,
    }) else {
        return Ok(headers);
    };
    let name = name.as_str();
    headers.insert(HeaderName::from_static(NAME_HEADER), value(name)?);
    if method != "tools/call" {
        return Ok(headers);
    }
    let Some(annotated) = tools.params_of(name) else {
        return Ok(headers);
    };
    let arguments: Option<Value> = named
        .arguments
        .and_then(|raw| serde_json::from_str(raw.get()).ok());
    let arguments = arguments.as_ref();
    for param in annotated.iter() {
        let mut at = arguments;
        for step in &param.path {
            at = at.and_then(|a| a.get(step));
        }
        let text = match at {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) => i.to_string(),
                // The value may be a secret: the message names the parameter only.
                _ => {
                    return Err(format!(
                        "tool {name:?}: parameter {:?} (header {}) must be an integer within ±2^53",
                        param.path.join("."),
                        param.name
                    ))
                }
            },
            Some(other) => {
                let kind = match other {
                    Value::Array(_) => "an array",
                    Value::Object(_) => "an object",
                    _ => "another JSON type",
                };
                return Err(format!(
                    "tool {name:?}: parameter {:?} (header {}) must be a string, integer or boolean, not {kind}",
                    param.path.join("."),
                    param.name
                ));
            }
        };
        let header = HeaderName::from_bytes(
            format!("{PARAM_HEADER_PREFIX}{}", param.name.to_ascii_lowercase()).as_bytes(),
        )
        .map_err(|e| format!("invalid header name {}: {e}", param.name))?;
        headers.insert(header, value(&text)?);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(value: Value) -> mcp_core::Payload {
        mcp_core::Payload::Value(value)
    }

    #[test]
    fn values_that_are_not_plain_ascii_are_base64() {
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(encode_header_value("a b"), "a b");
        assert_eq!(
            encode_header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(
            encode_header_value("line1\nline2"),
            "=?base64?bGluZTEKbGluZTI=?="
        );
        assert_eq!(encode_header_value("\tx"), "=?base64?CXg=?=");
        assert_eq!(
            encode_header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn invalid_annotations_remove_the_tool_and_valid_ones_are_learned() {
        let tools = ToolHeaders::default();
        let mut result = json!({"tools": [
            {"name": "ok", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "nested": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}}
            }}},
            {"name": "empty", "inputSchema": {"properties": {"v": {"type": "string", "x-mcp-header": ""}}}},
            {"name": "number", "inputSchema": {"properties": {"v": {"type": "number", "x-mcp-header": "V"}}}},
            {"name": "object", "inputSchema": {"properties": {"v": {"type": "object", "x-mcp-header": "V"}}}},
            {"name": "dup", "inputSchema": {"properties": {
                "a": {"type": "string", "x-mcp-header": "MyField"},
                "b": {"type": "string", "x-mcp-header": "myfield"}}}},
            {"name": "space", "inputSchema": {"properties": {"v": {"type": "string", "x-mcp-header": "My Region"}}}},
            {"name": "items", "inputSchema": {"properties": {"v": {"type": "array",
                "items": {"type": "string", "x-mcp-header": "V"}}}}},
            {"name": "anyof", "inputSchema": {"anyOf": [{"properties": {"v": {"type": "string", "x-mcp-header": "V"}}}]}},
            {"name": "plain", "inputSchema": {"type": "object"}}
        ]});
        assert!(tools.learn(&mut result));
        let names: Vec<&str> = result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ok", "plain"]);
        let headers = request_headers(
            "tools/call",
            Some(&payload(
                json!({"name": "ok", "arguments": {"region": "eu", "nested": {"n": 42}}}),
            )),
            &tools,
        )
        .unwrap();
        assert_eq!(headers["mcp-method"], "tools/call");
        assert_eq!(headers["mcp-name"], "ok");
        assert_eq!(headers["mcp-param-region"], "eu");
        assert_eq!(headers["mcp-param-n"], "42");
        // Absent and null values send no header.
        let headers = request_headers(
            "tools/call",
            Some(&payload(
                json!({"name": "ok", "arguments": {"region": null}}),
            )),
            &tools,
        )
        .unwrap();
        assert!(!headers.contains_key("mcp-param-region"));
        // A value no header can carry is refused before sending.
        let err = request_headers(
            "tools/call",
            Some(&payload(
                json!({"name": "ok", "arguments": {"nested": {"n": 1.5}}}),
            )),
            &tools,
        )
        .unwrap_err();
        assert!(err.contains("integer"), "{err}");
    }

    #[test]
    fn names_come_from_name_or_uri() {
        let tools = ToolHeaders::default();
        let h = request_headers(
            "resources/read",
            Some(&payload(json!({"uri": "file:///é"}))),
            &tools,
        )
        .unwrap();
        assert!(h["mcp-name"].to_str().unwrap().starts_with("=?base64?"));
        let h = request_headers("tools/list", None, &tools).unwrap();
        assert_eq!(h["mcp-method"], "tools/list");
        assert!(!h.contains_key("mcp-name"));
        // The Tasks extension's requests name their task.
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let h = request_headers(
                method,
                Some(&payload(json!({"taskId": "t-1", "inputResponses": {}}))),
                &tools,
            )
            .unwrap();
            assert_eq!(h["mcp-method"], method);
            assert_eq!(h["mcp-name"], "t-1");
        }
    }
}
