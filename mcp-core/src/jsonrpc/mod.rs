//! JSON-RPC 2.0 messages as they cross a [`Transport`](crate::Transport).
//!
//! A [`Message`] is a request, a notification or a response (a result or an [`ErrorObject`]).
//! Parameters and results are [`Payload`]s: raw JSON text off the wire (the engine routes it
//! without a value tree, the caller parses it once), or a [`serde_json::Value`] built in process
//! (the in-process transport never serializes it). Parsing never panics: what is not a JSON-RPC 2.0
//! message is a [`MessageError`]. Unknown members are kept in `extra` and written back as is. This
//! file is the message model (ids, requests, notifications, responses, error objects, writing
//! JSON); `payload.rs` the forms of parameters and results; `decode.rs` the one-pass visitor and
//! [`MessageError`]. What can still be read from bytes that are not a message (the request a broken
//! or oversized answer names) is the transports' business: `mcp-wire`.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

mod decode;
mod payload;

pub use decode::MessageError;
use decode::{MessageVisitor, SharedCapture};
use payload::push_one_line;
pub use payload::{Payload, SharedJson, TypedPayload, TypedResult};

/// The JSON-RPC version string every message carries.
pub const JSONRPC_VERSION: &str = "2.0";

/// Standard and MCP-defined JSON-RPC error codes.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP: the requested resource does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// MCP 2025-11-25: the request needs a URL-mode elicitation first.
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
}

/// A request id: JSON-RPC allows numbers and strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// A numeric id (this client only ever sends these).
    Number(i64),
    /// A string id (servers often use these for their own requests).
    String(Arc<str>),
}

impl RequestId {
    /// This client's numeric request id, read as the session reads answers (numeric strings too).
    pub fn as_client_id(&self) -> Option<i64> {
        match self {
            RequestId::Number(n) => Some(*n),
            RequestId::String(s) => s.parse().ok(),
        }
    }

    /// Whether an answer carrying this id answers request `request` of this client.
    pub fn answers(&self, request: &RequestId) -> bool {
        self == request
            || self
                .as_client_id()
                .is_some_and(|id| request.as_client_id() == Some(id))
    }
}

/// String ids longer than this are cut when shown: a hostile megabyte id must not fill logs.
const SHOWN_ID_CHARS: usize = 64;

/// For people, not the wire: a string id quoted, cut to 64 characters plus its length when longer.
impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => match s.char_indices().nth(SHOWN_ID_CHARS) {
                Some((cut, _)) => write!(f, "{:?}… ({} bytes)", &s[..cut], s.len()),
                None => write!(f, "{s:?}"),
            },
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(Arc::from(s))
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a request id (integer or string)")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom(format!("request id {v} is out of range")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RequestId, E> {
                // Some peers write integral ids as floats (1.0); anything else is not an id.
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    Ok(RequestId::Number(v as i64))
                } else {
                    Err(E::custom(format!("request id {v} is not an integer")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(Arc::from(v)))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// The error member of a failed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code (see [`codes`]).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// Builds an error object without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32601 Method not found`.
    pub fn method_not_found(method: &str) -> Self {
        let message = format!("Method not found: {method}");
        ErrorObject::new(codes::METHOD_NOT_FOUND, message)
    }

    /// `-32602 Invalid params`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        ErrorObject::new(codes::INVALID_PARAMS, message)
    }

    /// `-32603 Internal error`.
    pub fn internal(message: impl Into<String>) -> Self {
        ErrorObject::new(codes::INTERNAL_ERROR, message)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// A request: expects exactly one response with the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Correlates the response.
    pub id: RequestId,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Payload>,
    /// Members this crate does not know, kept as received.
    pub extra: Map<String, Value>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Payload>,
    /// Members this crate does not know, kept as received.
    pub extra: Map<String, Value>,
}

/// A response: the result or the error of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered; `None` only for errors about unparseable requests.
    pub id: Option<RequestId>,
    /// The result, or the error.
    pub outcome: Result<Payload, ErrorObject>,
    /// Members this crate does not know, kept as received.
    pub extra: Map<String, Value>,
}

/// Any JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response (success or error).
    Response(Response),
}

impl Request {
    /// A request with parameters and no extra members.
    pub fn new(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: Option<Payload>,
    ) -> Self {
        Request {
            id: id.into(),
            method: method.into(),
            params,
            extra: Map::new(),
        }
    }
}

impl Notification {
    /// A notification with parameters and no extra members.
    pub fn new(method: impl Into<String>, params: Option<Payload>) -> Self {
        Notification {
            method: method.into(),
            params,
            extra: Map::new(),
        }
    }
}

impl Response {
    /// A successful response.
    pub fn success(id: RequestId, result: Payload) -> Self {
        Response {
            id: Some(id),
            outcome: Ok(result),
            extra: Map::new(),
        }
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Err(error),
            extra: Map::new(),
        }
    }
}

impl Message {
    /// The id of a request or response: none for a notification or an error about an unreadable id.
    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            Message::Request(request) => Some(&request.id),
            Message::Response(response) => response.id.as_ref(),
            Message::Notification(_) => None,
        }
    }

    /// Parses one message from JSON bytes; never panics; refuses a batch (no server may send one).
    pub fn from_slice(bytes: &[u8]) -> Result<Message, MessageError> {
        serde_json::from_slice(bytes).map_err(|e| MessageError::from_parser(&e))
    }

    /// Parses one message from JSON text.
    pub fn from_json_str(text: &str) -> Result<Message, MessageError> {
        Message::from_slice(text.as_bytes())
    }

    /// Parses one large message from a line its payloads share, not copy ([`Payload::Shared`]).
    pub fn from_shared_line(line: &Arc<Vec<u8>>) -> Result<Message, MessageError> {
        let mut de = serde_json::Deserializer::from_slice(line.as_slice());
        de.deserialize_map(MessageVisitor(SharedCapture { line }))
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| MessageError::from_parser(&e))
    }

    /// Appends the message as compact JSON to `out` (no trailing newline): the same bytes as
    /// its `Serialize` output, but raw and shared payloads are copied as the text they already
    /// are, never parsed again — on one line always (a line break a peer put between tokens
    /// becomes a space), so a line-delimited transport can frame it as it is.
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        fn member<T: Serialize + ?Sized>(
            out: &mut Vec<u8>,
            key: &[u8],
            value: &T,
        ) -> Result<(), serde_json::Error> {
            out.extend_from_slice(key);
            serde_json::to_writer(&mut *out, value)
        }
        fn payload(out: &mut Vec<u8>, key: &[u8], p: &Payload) -> Result<(), serde_json::Error> {
            out.extend_from_slice(key);
            match p {
                Payload::Raw(raw) => push_one_line(out, raw.get()),
                Payload::Shared(shared) => push_one_line(out, shared.as_str()),
                Payload::Value(value) => serde_json::to_writer(&mut *out, value)?,
                Payload::Typed(typed) => typed.write_json(out)?,
            }
            Ok(())
        }
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
        let extra = match self {
            Message::Request(r) => {
                member(out, b",\"id\":", &r.id)?;
                member(out, b",\"method\":", &r.method)?;
                if let Some(p) = &r.params {
                    payload(out, b",\"params\":", p)?;
                }
                &r.extra
            }
            Message::Notification(n) => {
                member(out, b",\"method\":", &n.method)?;
                if let Some(p) = &n.params {
                    payload(out, b",\"params\":", p)?;
                }
                &n.extra
            }
            Message::Response(r) => {
                member(out, b",\"id\":", &r.id)?;
                match &r.outcome {
                    Ok(result) => payload(out, b",\"result\":", result)?,
                    Err(error) => member(out, b",\"error\":", error)?,
                }
                &r.extra
            }
        };
        for (key, value) in extra {
            out.push(b',');
            serde_json::to_writer(&mut *out, key)?;
            out.push(b':');
            serde_json::to_writer(&mut *out, value)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// The message as compact JSON text (see [`write_json`](Message::write_json)).
    pub fn to_json_string(&self) -> Result<String, serde_json::Error> {
        let mut out = Vec::with_capacity(128);
        self.write_json(&mut out)?;
        // Every piece written is UTF-8: serde_json's output, and text that was a `str`.
        Ok(String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// The method for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }
}

macro_rules! message_from {
    ($($kind:ident),*) => {$(
        impl From<$kind> for Message {
            fn from(m: $kind) -> Self {
                Message::$kind(m)
            }
        }
    )*};
}

message_from!(Request, Notification, Response);

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        let extra = match self {
            Message::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
                &r.extra
            }
            Message::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
                &n.extra
            }
            Message::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                match &r.outcome {
                    Ok(result) => map.serialize_entry("result", result)?,
                    Err(error) => map.serialize_entry("error", error)?,
                }
                &r.extra
            }
        };
        for (k, v) in extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
