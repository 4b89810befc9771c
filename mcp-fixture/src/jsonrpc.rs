//! JSON-RPC 2.0 plumbing: the incoming envelope, error codes, parameter
//! helpers that name the offending field, and builders for outgoing lines.
//!
//! Outgoing lines are built by hand around `serde_json` serialisation so that
//! the request id is echoed byte-for-byte (it is kept as a [`RawValue`]) and
//! the hot path (`echo`) needs a single allocation.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP: the requested resource does not exist.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// Error code (see the constants in this module).
    pub code: i64,
    /// Human-readable message.
    pub message: String,
    /// Optional structured detail.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// A `-32602 Invalid params` error.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    /// `-32602` for a required field that is absent.
    pub fn missing_field(field: &str) -> Self {
        Self::invalid_params(format!("Invalid params: missing required field `{field}`"))
    }

    /// `-32602` for a field of the wrong type or out of range.
    pub fn bad_field(field: &str, expected: &str) -> Self {
        Self::invalid_params(format!(
            "Invalid params: field `{field}` must be {expected}"
        ))
    }

    /// Attaches structured `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The error object as JSON.
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), Value::from(self.code));
        obj.insert("message".into(), Value::from(self.message.as_str()));
        if let Some(data) = &self.data {
            obj.insert("data".into(), data.clone());
        }
        Value::Object(obj)
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// One incoming message, borrowed from the input line. Which fields are
/// present decides whether it is a request, a notification or a response.
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(default, borrow)]
    pub jsonrpc: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub error: Option<&'a RawValue>,
}

/// Deserialises a field that is *present* (even if `null`) as `Some(raw)`,
/// so that `"id": null` can be told apart from a missing id.
pub(crate) fn present<'de, D>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: Deserializer<'de>,
{
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

/// True if `id` is a JSON string or number (MCP forbids `null` ids).
pub(crate) fn is_valid_id(id: &RawValue) -> bool {
    matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
}

/// A canonical text form of an id, for map keys (`"a"` and `"\u0061"` agree).
pub fn id_key_raw(id: &RawValue) -> String {
    match serde_json::from_str::<Value>(id.get()) {
        Ok(value) => id_key(&value),
        Err(_) => id.get().to_owned(),
    }
}

/// A canonical text form of an id value, for map keys.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Parses `params` as a JSON object; absent or `null` params give an empty map.
pub(crate) fn params_object(params: Option<&RawValue>) -> Result<Map<String, Value>, RpcError> {
    let Some(raw) = params else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(_) => Err(RpcError::invalid_params(
            "Invalid params: `params` must be an object",
        )),
        Err(e) => Err(RpcError::invalid_params(format!("Invalid params: {e}"))),
    }
}

/// Required string field.
pub(crate) fn req_str<'a>(map: &'a Map<String, Value>, field: &str) -> Result<&'a str, RpcError> {
    match map.get(field) {
        None | Some(Value::Null) => Err(RpcError::missing_field(field)),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(RpcError::bad_field(field, "a string")),
    }
}

/// Optional string field.
pub(crate) fn opt_str<'a>(
    map: &'a Map<String, Value>,
    field: &str,
) -> Result<Option<&'a str>, RpcError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RpcError::bad_field(field, "a string")),
    }
}

/// Required number field.
pub(crate) fn req_number<'a>(
    map: &'a Map<String, Value>,
    field: &str,
) -> Result<&'a serde_json::Number, RpcError> {
    match map.get(field) {
        None | Some(Value::Null) => Err(RpcError::missing_field(field)),
        Some(Value::Number(n)) => Ok(n),
        Some(_) => Err(RpcError::bad_field(field, "a number")),
    }
}

/// Optional non-negative integer field with a default and an inclusive maximum.
pub(crate) fn opt_u64(
    map: &Map<String, Value>,
    field: &str,
    default: u64,
    max: u64,
) -> Result<u64, RpcError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if v <= max => Ok(v),
            _ => Err(RpcError::bad_field(
                field,
                &format!("an integer between 0 and {max}"),
            )),
        },
        Some(_) => Err(RpcError::bad_field(field, "an integer")),
    }
}

/// Required non-negative integer field with an inclusive maximum.
pub(crate) fn req_u64(map: &Map<String, Value>, field: &str, max: u64) -> Result<u64, RpcError> {
    match map.get(field) {
        None | Some(Value::Null) => Err(RpcError::missing_field(field)),
        Some(_) => opt_u64(map, field, 0, max),
    }
}

const RESULT_PREFIX: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

/// Serialises `value` onto `buf`. Serialising a `Value` or a `&str` into a
/// `Vec` cannot fail; should it ever, `null` is written instead.
fn write_json<T: Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) {
    let mark = buf.len();
    if serde_json::to_writer(&mut *buf, value).is_err() {
        buf.truncate(mark);
        buf.extend_from_slice(b"null");
    }
}

/// Converts a buffer of serialised JSON into a `String`.
fn into_line(buf: Vec<u8>) -> String {
    match String::from_utf8(buf) {
        Ok(s) => s,
        // serde_json only writes UTF-8; keep the invariant without panicking.
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// `{"jsonrpc":"2.0","id":ID,"result":RESULT}`.
pub fn result_line(id: &RawValue, result: &Value) -> String {
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(RESULT_PREFIX);
    buf.extend_from_slice(id.get().as_bytes());
    buf.extend_from_slice(br#","result":"#);
    write_json(&mut buf, result);
    buf.push(b'}');
    into_line(buf)
}

/// `{"jsonrpc":"2.0","id":ID|null,"error":{...}}`.
pub fn error_line(id: Option<&RawValue>, error: &RpcError) -> String {
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(RESULT_PREFIX);
    match id {
        Some(id) => buf.extend_from_slice(id.get().as_bytes()),
        None => buf.extend_from_slice(b"null"),
    }
    buf.extend_from_slice(br#","error":"#);
    write_json(&mut buf, &error.to_value());
    buf.push(b'}');
    into_line(buf)
}

/// A tool result with a single text content item, as a full response line:
/// `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":TEXT}]}}`.
/// This is the `echo` hot path: one allocation, the text escaped in place.
pub fn text_result_line(id: &RawValue, text: &str) -> String {
    let mut buf = Vec::with_capacity(text.len() + id.get().len() + 80);
    buf.extend_from_slice(RESULT_PREFIX);
    buf.extend_from_slice(id.get().as_bytes());
    buf.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    write_json(&mut buf, text);
    buf.extend_from_slice(b"}]}}");
    into_line(buf)
}

/// Like [`text_result_line`] with a text of `count` ASCII `x` characters,
/// written straight into the output buffer (used by the `large` tool).
pub fn repeated_x_result_line(id: &RawValue, count: usize) -> String {
    let mut buf = Vec::with_capacity(count + id.get().len() + 80);
    buf.extend_from_slice(RESULT_PREFIX);
    buf.extend_from_slice(id.get().as_bytes());
    buf.extend_from_slice(br#","result":{"content":[{"type":"text","text":""#);
    buf.resize(buf.len() + count, b'x');
    buf.extend_from_slice(br#""}]}}"#);
    into_line(buf)
}

/// `{"jsonrpc":"2.0","method":METHOD,"params":PARAMS}`.
pub fn notification_line(method: &str, params: &Value) -> String {
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    write_json(&mut buf, method);
    buf.extend_from_slice(br#","params":"#);
    write_json(&mut buf, params);
    buf.push(b'}');
    into_line(buf)
}

/// `{"jsonrpc":"2.0","id":"ID","method":METHOD,"params":PARAMS}` (string id).
pub fn request_line(id: &str, method: &str, params: &Value) -> String {
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(RESULT_PREFIX);
    write_json(&mut buf, id);
    buf.extend_from_slice(br#","method":"#);
    write_json(&mut buf, method);
    buf.extend_from_slice(br#","params":"#);
    write_json(&mut buf, params);
    buf.push(b'}');
    into_line(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).expect("valid raw json")
    }

    #[test]
    fn result_line_keeps_id_verbatim() {
        let line = result_line(&raw("\"abc\""), &json!({"x": 1}));
        let v: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": "abc", "result": {"x": 1}})
        );
    }

    #[test]
    fn text_line_escapes_text() {
        let line = text_result_line(&raw("7"), "a\"b\nc");
        assert!(!line.contains('\n'));
        let v: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(v["result"]["content"][0]["text"], "a\"b\nc");
        assert_eq!(v["id"], 7);
    }

    #[test]
    fn repeated_x_has_exact_length() {
        let line = repeated_x_result_line(&raw("1"), 1000);
        let v: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(
            v["result"]["content"][0]["text"].as_str().map(str::len),
            Some(1000)
        );
    }

    #[test]
    fn error_line_with_null_id() {
        let line = error_line(None, &RpcError::new(PARSE_ERROR, "Parse error"));
        let v: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(v["id"], Value::Null);
        assert_eq!(v["error"]["code"], PARSE_ERROR);
    }

    #[test]
    fn envelope_distinguishes_null_id_from_missing() {
        let env: Envelope =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).expect("envelope");
        assert_eq!(env.id.map(RawValue::get), Some("null"));
        assert!(!is_valid_id(env.id.expect("id")));
        let env: Envelope =
            serde_json::from_str(r#"{"jsonrpc":"2.0","method":"x"}"#).expect("envelope");
        assert!(env.id.is_none());
    }

    #[test]
    fn field_helpers_name_the_field() {
        let map = json!({"a": 5, "s": 1})
            .as_object()
            .cloned()
            .expect("object");
        let err = req_str(&map, "text").expect_err("missing");
        assert!(err.message.contains("`text`"));
        let err = req_str(&map, "s").expect_err("wrong type");
        assert!(err.message.contains("`s`"));
        assert_eq!(opt_u64(&map, "a", 1, 10), Ok(5));
        assert!(opt_u64(&map, "a", 1, 4).is_err());
        assert_eq!(opt_u64(&map, "zz", 3, 4), Ok(3));
    }
}
