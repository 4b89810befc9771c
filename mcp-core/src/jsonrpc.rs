//! JSON-RPC 2.0 messages as they cross a [`Transport`](crate::Transport).
//!
//! A [`Message`] is one of request, notification or response (a response carries either a result
//! or an [`ErrorObject`]). Parameters and results are [`Payload`]s: raw JSON text when the message
//! came off the wire (so the engine routes it without building a value tree, and the caller parses
//! it exactly once), or an in-memory [`serde_json::Value`] when it was built in process (so the
//! in-process transport never serializes anything).
//!
//! Parsing never panics: anything that is not a JSON-RPC 2.0 message becomes a [`MessageError`].
//! Members this crate does not know are kept in `extra` and written back out unchanged.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

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
    /// The id as one of this client's request ids (which are numbers), read as the session
    /// reads an answer's id: a server that wrote it back as a numeric string still answers.
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

/// String ids longer than this are cut when shown: a hostile server's megabyte id must not
/// come back whole in every log line and error message that names it.
const SHOWN_ID_CHARS: usize = 64;

/// For people (logs, error messages), never for the wire: a string id is quoted, and cut to
/// its first 64 characters with its length when longer.
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

/// Parameters or a result: raw JSON text or an in-memory value, whichever is cheaper where the
/// message was made — or, for a result an in-process server built, the typed value itself.
#[derive(Debug, Clone)]
pub enum Payload {
    /// JSON text exactly as received; parsed only when (and as) the consumer asks.
    Raw(Box<RawValue>),
    /// A value built in process; serialized only if a byte-level transport needs it.
    Value(Value),
    /// JSON text inside a received line that the payload shares instead of copying (large
    /// messages: the line's buffer goes back to the transport for reuse once it is dropped).
    Shared(SharedJson),
    /// A complete result an in-process server built as a typed value (a
    /// [`CallToolResult`](crate::types::CallToolResult), say): [`Payload::into_typed`] hands it
    /// over as it is when asked for its own type, and it becomes JSON only if something needs
    /// JSON. Never a result that asks for more (`input_required`, a task): those are JSON.
    Typed(TypedPayload),
}

/// A complete result built in process, kept as the value it is ([`Payload::Typed`]).
pub struct TypedPayload(Box<dyn TypedValue>);

/// The results a [`TypedPayload`] can keep: complete results, JSON objects whose JSON cannot
/// fail to be written. Sealed: implemented for [`CallToolResult`](crate::types::CallToolResult).
pub trait KeptTyped:
    Serialize + Clone + fmt::Debug + Send + Sync + 'static + sealed::Sealed
{
}

impl KeptTyped for crate::types::CallToolResult {}

mod sealed {
    /// Keeps [`KeptTyped`](super::KeptTyped) to the types of this crate.
    pub trait Sealed {}
    impl Sealed for crate::types::CallToolResult {}
}

/// What a typed payload's value can do without its type being known.
trait TypedValue: Any + Send + Sync {
    fn to_value(&self) -> Result<Value, serde_json::Error>;
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;
    fn as_any(&self) -> &dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    fn clone_box(&self) -> Box<dyn TypedValue>;
    fn debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl<T: KeptTyped> TypedValue for T {
    fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(out, self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn clone_box(&self) -> Box<dyn TypedValue> {
        Box::new(self.clone())
    }
    fn debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl TypedPayload {
    /// Keeps `result` as it is. It must be what reading its own JSON would give (nothing in
    /// its unknown members that a known one holds, say): a caller asking for its type gets
    /// it as it is, without that reading.
    pub fn new<T: KeptTyped>(result: T) -> Self {
        TypedPayload(Box::new(result))
    }

    /// The value as JSON.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        self.0.to_value()
    }

    /// The value itself, borrowed, when it is a `T` (a look at a result without taking or
    /// serializing it: whether a kept `CallToolResult` is a tool error, say).
    pub fn get<T: KeptTyped>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref::<T>()
    }

    /// The value itself when it is a `T`; otherwise `T` read from its JSON.
    fn take_as<T: DeserializeOwned + 'static>(self) -> Result<T, serde_json::Error> {
        if self.0.as_any().is::<T>() {
            if let Ok(value) = self.0.into_any().downcast::<T>() {
                return Ok(*value);
            }
            return Err(de::Error::custom("a typed payload changed its type"));
        }
        serde_json::from_value(self.0.to_value()?)
    }
}

impl Clone for TypedPayload {
    fn clone(&self) -> Self {
        TypedPayload(self.0.clone_box())
    }
}

impl fmt::Debug for TypedPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.debug(f)
    }
}

/// A validated JSON value that lives inside a shared message buffer.
#[derive(Clone)]
pub struct SharedJson {
    buffer: Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl SharedJson {
    /// Locates `raw`, which must borrow from `buffer`'s bytes.
    fn within(buffer: &Arc<Vec<u8>>, raw: &RawValue) -> Option<SharedJson> {
        let base = buffer.as_ptr() as usize;
        let start = (raw.get().as_ptr() as usize).checked_sub(base)?;
        let end = start + raw.get().len();
        (end <= buffer.len()).then(|| SharedJson {
            buffer: buffer.clone(),
            start,
            end,
        })
    }

    /// Wraps JSON text this crate made itself (a splice of validated JSON): the caller vouches
    /// that `json` is one valid JSON value. A `String` is UTF-8, which [`as_str`] relies on.
    ///
    /// [`as_str`]: SharedJson::as_str
    pub(crate) fn from_valid_json(json: String) -> SharedJson {
        let buffer = json.into_bytes();
        let end = buffer.len();
        SharedJson {
            buffer: Arc::new(buffer),
            start: 0,
            end,
        }
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        // SAFETY: a SharedJson is only built in `within`, from a `&RawValue` — a `str`, so valid
        // UTF-8 — that borrows exactly these bytes, or in `from_valid_json`, from a whole
        // `String`; the buffer is immutable while shared behind the `Arc`.
        unsafe { std::str::from_utf8_unchecked(&self.buffer[self.start..self.end]) }
    }
}

impl fmt::Debug for SharedJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedJson").field(&self.as_str()).finish()
    }
}

impl Payload {
    /// Wraps any serializable value (as an in-memory [`Value`]).
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_value(value).map(Payload::Value)
    }

    /// Parses raw JSON text into a payload, validating it.
    pub fn from_json_str(json: &str) -> Result<Self, serde_json::Error> {
        RawValue::from_string(json.to_owned()).map(Payload::Raw)
    }

    /// Deserializes the payload into `T` (a single parse for raw payloads).
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match self {
            Payload::Raw(raw) => serde_json::from_str(raw.get()),
            Payload::Value(value) => T::deserialize(value),
            Payload::Shared(shared) => serde_json::from_str(shared.as_str()),
            Payload::Typed(typed) => T::deserialize(typed.to_value()?),
        }
    }

    /// Converts into `T`, moving strings out of in-memory values instead of copying them (and a
    /// typed payload of type `T` out as it is).
    pub fn into_typed<T: DeserializeOwned + 'static>(self) -> Result<T, serde_json::Error> {
        match self {
            Payload::Raw(raw) => serde_json::from_str(raw.get()),
            Payload::Value(value) => serde_json::from_value(value),
            Payload::Shared(shared) => serde_json::from_str(shared.as_str()),
            Payload::Typed(typed) => typed.take_as(),
        }
    }

    /// Converts into a [`Value`] (parses raw text; a value is returned as it is).
    pub fn into_value(self) -> Result<Value, serde_json::Error> {
        match self {
            Payload::Value(value) => Ok(value),
            Payload::Typed(typed) => typed.to_value(),
            other => other.into_typed(),
        }
    }

    /// The payload as JSON text (borrowed when already raw).
    pub fn to_json_string(&self) -> Cow<'_, str> {
        match self {
            Payload::Raw(raw) => Cow::Borrowed(raw.get()),
            Payload::Value(value) => Cow::Owned(value.to_string()),
            Payload::Shared(shared) => Cow::Borrowed(shared.as_str()),
            Payload::Typed(typed) => {
                let mut out = Vec::new();
                match typed
                    .0
                    .write_json(&mut out)
                    .map(|()| String::from_utf8(out))
                {
                    Ok(Ok(text)) => Cow::Owned(text),
                    // Writing a kept type cannot fail (`KeptTyped`).
                    _ => Cow::Borrowed("null"),
                }
            }
        }
    }

    /// True when the payload is a JSON object.
    pub fn is_object(&self) -> bool {
        match self {
            Payload::Raw(raw) => raw.get().trim_start().starts_with('{'),
            Payload::Value(value) => value.is_object(),
            Payload::Shared(shared) => shared.as_str().trim_start().starts_with('{'),
            // Every kept type is an object (`KeptTyped`).
            Payload::Typed(_) => true,
        }
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::Value(value)
    }
}

impl From<Box<RawValue>> for Payload {
    fn from(raw: Box<RawValue>) -> Self {
        Payload::Raw(raw)
    }
}

impl PartialEq for Payload {
    /// Semantic JSON equality (key order and whitespace do not matter).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Payload::Raw(_) | Payload::Shared(_), Payload::Raw(_) | Payload::Shared(_))
                if self.to_json_string() == other.to_json_string() =>
            {
                true
            }
            _ => {
                let a: Result<Value, _> = self.deserialize();
                let b: Result<Value, _> = other.deserialize();
                matches!((a, b), (Ok(a), Ok(b)) if a == b)
            }
        }
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Payload::Raw(raw) => raw.serialize(serializer),
            Payload::Value(value) => value.serialize(serializer),
            Payload::Shared(shared) => {
                // Re-serializing received JSON is rare (pass-through): borrow it as a raw value.
                let raw: &RawValue =
                    serde_json::from_str(shared.as_str()).map_err(serde::ser::Error::custom)?;
                raw.serialize(serializer)
            }
            Payload::Typed(typed) => {
                // As `write_json` writes it (members in the type's order), borrowed as raw.
                let mut json = Vec::new();
                typed
                    .0
                    .write_json(&mut json)
                    .map_err(serde::ser::Error::custom)?;
                let raw: &RawValue =
                    serde_json::from_slice(&json).map_err(serde::ser::Error::custom)?;
                raw.serialize(serializer)
            }
        }
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
        ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
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

/// Why bytes could not be read as a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON-RPC message: {reason}")]
pub struct MessageError {
    reason: String,
}

/// The characters of a parse error's text kept in a [`MessageError`]: serde quotes the
/// offending value (a whole string, megabytes of a peer's text, a token it echoed).
const REASON_CHARS: usize = 200;

impl MessageError {
    /// The parser's error, the peer's text it quotes passed through
    /// [`excerpt_of_start`](crate::redact::excerpt_of_start) (redacted, control characters out,
    /// cut), its position kept.
    fn from_parser(e: &serde_json::Error) -> Self {
        let full = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        let (what, at) = match full.strip_suffix(&position) {
            Some(what) => (what, position.as_str()),
            None => (full.as_str(), ""),
        };
        MessageError {
            reason: format!(
                "{}{at}",
                crate::redact::excerpt_of_start(what.as_bytes(), REASON_CHARS)
            ),
        }
    }

    /// What was wrong with the message.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

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
    match crate::transport::oversized::answered_request(head, bytes) {
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
    /// The id of a request or a response (a notification has none, nor has an error answer
    /// to a request whose id could not be read).
    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            Message::Request(request) => Some(&request.id),
            Message::Response(response) => response.id.as_ref(),
            Message::Notification(_) => None,
        }
    }

    /// Parses one message from JSON bytes. Never panics; a batch (array) is rejected because no
    /// protocol version this crate speaks allows one from a server.
    pub fn from_slice(bytes: &[u8]) -> Result<Message, MessageError> {
        serde_json::from_slice(bytes).map_err(|e| MessageError::from_parser(&e))
    }

    /// Parses one message from JSON text.
    pub fn from_json_str(text: &str) -> Result<Message, MessageError> {
        Message::from_slice(text.as_bytes())
    }

    /// Parses one message from a line buffer that parameters and results keep sharing instead
    /// of copying out of it (see [`Payload::Shared`]); for large messages.
    pub fn from_shared_line(line: &Arc<Vec<u8>>) -> Result<Message, MessageError> {
        let mut de = serde_json::Deserializer::from_slice(line.as_slice());
        let message = de
            .deserialize_map(MessageVisitor(SharedCapture { line }))
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| MessageError::from_parser(&e))?;
        Ok(message)
    }

    /// Appends the message as compact JSON to `out` (no trailing newline): the same bytes as
    /// its `Serialize` output, but raw and shared payloads are copied as the text they already
    /// are, never parsed again.
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
                Payload::Raw(raw) => out.extend_from_slice(raw.get().as_bytes()),
                Payload::Shared(shared) => out.extend_from_slice(shared.as_str().as_bytes()),
                Payload::Value(value) => serde_json::to_writer(&mut *out, value)?,
                Payload::Typed(typed) => typed.0.write_json(out)?,
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

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Message::Request(r)
    }
}

impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Message::Notification(n)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Message::Response(r)
    }
}

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

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor(OwnedCapture))
    }
}

/// How the message visitor keeps `params` and `result`.
trait RawCapture<'de> {
    type Raw: Deserialize<'de>;
    fn payload(&self, raw: Self::Raw) -> Payload;
}

/// Owned copies (`Payload::Raw`).
struct OwnedCapture;

impl<'de> RawCapture<'de> for OwnedCapture {
    type Raw = Box<RawValue>;
    fn payload(&self, raw: Box<RawValue>) -> Payload {
        Payload::Raw(raw)
    }
}

/// Ranges of the shared line (`Payload::Shared`).
struct SharedCapture<'l> {
    line: &'l Arc<Vec<u8>>,
}

impl<'de> RawCapture<'de> for SharedCapture<'_> {
    type Raw = &'de RawValue;
    fn payload(&self, raw: &'de RawValue) -> Payload {
        match SharedJson::within(self.line, raw) {
            Some(shared) => Payload::Shared(shared),
            // Not inside the line (cannot happen for a slice deserializer): copy it.
            None => Payload::Raw(raw.to_owned()),
        }
    }
}

struct MessageVisitor<C>(C);

/// A message member name; known names are matched without allocating.
enum Field {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other(String),
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
                Ok(match v {
                    "jsonrpc" => Field::Jsonrpc,
                    "id" => Field::Id,
                    "method" => Field::Method,
                    "params" => Field::Params,
                    "result" => Field::Result,
                    "error" => Field::Error,
                    other => Field::Other(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

/// Whether the `jsonrpc` member is exactly "2.0", checked without allocating.
struct VersionCheck(bool);

impl<'de> Deserialize<'de> for VersionCheck {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct VersionVisitor;
        impl Visitor<'_> for VersionVisitor {
            type Value = VersionCheck;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the string \"2.0\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<VersionCheck, E> {
                Ok(VersionCheck(v == JSONRPC_VERSION))
            }
        }
        deserializer.deserialize_str(VersionVisitor)
    }
}

impl<'de, C: RawCapture<'de>> Visitor<'de> for MessageVisitor<C> {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC 2.0 message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut version_ok = None;
        // `id` distinguishes absent from explicit null.
        let mut id: Option<Option<RequestId>> = None;
        let mut method: Option<String> = None;
        let mut params: Option<C::Raw> = None;
        let mut result: Option<C::Raw> = None;
        let mut error: Option<ErrorObject> = None;
        let mut extra = Map::new();
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Jsonrpc => version_ok = Some(map.next_value::<VersionCheck>()?.0),
                Field::Id => id = Some(map.next_value()?),
                Field::Method => method = Some(map.next_value()?),
                Field::Params => params = Some(map.next_value()?),
                Field::Result => result = Some(map.next_value()?),
                Field::Error => error = Some(map.next_value()?),
                Field::Other(name) => {
                    let value: Value = map.next_value()?;
                    extra.insert(name, value);
                }
            }
        }
        match version_ok {
            Some(true) => {}
            Some(false) => return Err(de::Error::custom("\"jsonrpc\" must be \"2.0\"")),
            None => return Err(de::Error::custom("missing \"jsonrpc\": \"2.0\"")),
        }
        let params = params.map(|p| self.0.payload(p));
        match (method, id) {
            (Some(method), Some(Some(id))) => Ok(Message::Request(Request {
                id,
                method,
                params,
                extra,
            })),
            (Some(_), Some(None)) => Err(de::Error::custom("a request id must not be null")),
            (Some(method), None) => Ok(Message::Notification(Notification {
                method,
                params,
                extra,
            })),
            (None, id) => {
                let id = id.flatten();
                match (result, error) {
                    (Some(_), Some(_)) => Err(de::Error::custom(
                        "a response must not carry both \"result\" and \"error\"",
                    )),
                    (Some(result), None) => match id {
                        Some(id) => Ok(Message::Response(Response {
                            id: Some(id),
                            outcome: Ok(self.0.payload(result)),
                            extra,
                        })),
                        None => Err(de::Error::custom("a successful response needs an id")),
                    },
                    (None, Some(error)) => Ok(Message::Response(Response {
                        id,
                        outcome: Err(error),
                        extra,
                    })),
                    (None, None) => Err(de::Error::custom(
                        "neither a request (no \"method\") nor a response (no \"result\" or \"error\")",
                    )),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<Message, MessageError> {
        Message::from_json_str(text)
    }

    #[test]
    fn parses_request_with_number_and_string_ids() {
        let m = parse(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert_eq!(m, Message::Request(Request::new(7, "ping", None)));
        let m =
            parse(r#"{"jsonrpc":"2.0","id":"srv-1","method":"roots/list","params":{}}"#).unwrap();
        match m {
            Message::Request(r) => {
                assert_eq!(r.id, RequestId::from("srv-1"));
                assert_eq!(r.params.unwrap().to_json_string(), "{}");
            }
            other => panic!("expected request, got {other:?}"),
        }
    }

    #[test]
    fn parses_notification_response_and_error() {
        let m = parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(m, Message::Notification(n) if n.method == "notifications/initialized"));
        let m = parse(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#).unwrap();
        match m {
            Message::Response(r) => {
                assert_eq!(r.id, Some(RequestId::Number(1)));
                assert_eq!(r.outcome.unwrap().to_json_string(), r#"{"tools":[]}"#);
            }
            other => panic!("expected response, got {other:?}"),
        }
        let m = parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse"}}"#)
            .unwrap();
        match m {
            Message::Response(r) => {
                assert_eq!(r.id, None);
                assert_eq!(r.outcome.unwrap_err().code, codes::PARSE_ERROR);
            }
            other => panic!("expected response, got {other:?}"),
        }
    }

    #[test]
    fn malformed_messages_are_errors_not_panics() {
        for bad in [
            "",
            "not json",
            "[]",
            "[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]",
            "42",
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
        ] {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
        assert!(Message::from_slice(&[0xff, 0xfe, b'{']).is_err());
    }

    #[test]
    fn unknown_members_survive_a_round_trip() {
        let text =
            r#"{"jsonrpc":"2.0","id":3,"result":{"x":1,"future":[1,2]},"trace":{"span":"abc"}}"#;
        let m = parse(text).unwrap();
        let out = m.to_json_string().unwrap();
        let a: Value = serde_json::from_str(text).unwrap();
        let b: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn serializes_built_messages() {
        let m: Message = Request::new(
            5,
            "tools/call",
            Some(Payload::Value(
                json!({"name":"echo","arguments":{"text":"hi"}}),
            )),
        )
        .into();
        let v: Value = serde_json::from_str(&m.to_json_string().unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})
        );
        let m: Message = Response::error(None, ErrorObject::method_not_found("x")).into();
        let v: Value = serde_json::from_str(&m.to_json_string().unwrap()).unwrap();
        assert_eq!(v["id"], Value::Null);
        assert_eq!(v["error"]["code"], json!(-32601));
    }

    #[test]
    fn payload_parses_once_into_types_and_compares_semantically() {
        let raw = Payload::from_json_str(r#"{ "a" : 1 , "b" : [true] }"#).unwrap();
        let val = Payload::Value(json!({"b":[true],"a":1}));
        assert_eq!(raw, val);
        #[derive(Deserialize)]
        struct T {
            a: i64,
        }
        assert_eq!(raw.deserialize::<T>().unwrap().a, 1);
        assert_eq!(val.into_typed::<T>().unwrap().a, 1);
        assert!(raw.is_object());
    }

    #[test]
    fn shared_lines_parse_like_owned_ones_without_copying() {
        let text =
            r#"{"result":{"content":[{"type":"text","text":"big"}]},"jsonrpc":"2.0","id":9}"#;
        let line = Arc::new(text.as_bytes().to_vec());
        let shared = Message::from_shared_line(&line).unwrap();
        assert_eq!(shared, parse(text).unwrap());
        match &shared {
            Message::Response(r) => match r.outcome.as_ref().unwrap() {
                Payload::Shared(s) => {
                    assert_eq!(s.as_str(), r#"{"content":[{"type":"text","text":"big"}]}"#)
                }
                other => panic!("expected a shared payload, got {other:?}"),
            },
            other => panic!("{other:?}"),
        }
        assert_eq!(Arc::strong_count(&line), 2, "the payload shares the line");
        drop(shared);
        assert_eq!(Arc::strong_count(&line), 1, "and gives it back");
        let out = Message::from_shared_line(&line)
            .unwrap()
            .to_json_string()
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        for bad in ["", "{", r#"{"jsonrpc":"2.0","id":1,"result":{}} x"#, "[1]"] {
            assert!(
                Message::from_shared_line(&Arc::new(bad.as_bytes().to_vec())).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_typed_payload_is_handed_over_as_it_is_and_is_json_everywhere_else() {
        use crate::types::{CallToolResult, Content};
        let result = CallToolResult {
            content: vec![Content::text("quote \" é")],
            structured_content: Some(json!({"n": 1})),
            is_error: None,
            extra: Default::default(),
        };
        let json = serde_json::to_value(&result).unwrap();
        let text_at = |r: &CallToolResult| match &r.content[0] {
            Content::Text { text, .. } => text.as_ptr(),
            other => panic!("not text: {other:?}"),
        };
        // Its own type: the value itself, not a copy; any other: read from its JSON.
        let kept = result.clone();
        let at = text_at(&kept);
        let taken = Payload::Typed(TypedPayload::new(kept))
            .into_typed::<CallToolResult>()
            .unwrap();
        assert_eq!(text_at(&taken), at, "moved, not copied");
        let typed = Payload::Typed(TypedPayload::new(result.clone()));
        // Borrowed as it is, without a copy or JSON.
        match &typed {
            Payload::Typed(kept) => assert_eq!(kept.get::<CallToolResult>(), Some(&result)),
            other => panic!("not typed: {other:?}"),
        }
        assert_eq!(
            typed.clone().into_typed::<CallToolResult>().unwrap(),
            result
        );
        assert_eq!(typed.clone().into_typed::<Value>().unwrap(), json);
        assert_eq!(typed.clone().into_value().unwrap(), json);
        assert_eq!(typed.deserialize::<Value>().unwrap(), json);
        assert!(typed
            .clone()
            .into_typed::<Vec<String>>()
            .unwrap_err()
            .is_data());
        assert_eq!(
            typed.to_json_string(),
            serde_json::to_string(&result).unwrap()
        );
        assert!(typed.is_object());
        assert_eq!(typed, Payload::Value(json.clone()));
        assert!(format!("{typed:?}").contains("quote"));
        // On the wire it is the same JSON, written either way.
        let message: Message = Response::success(RequestId::from(9), typed).into();
        let mut written = Vec::new();
        message.write_json(&mut written).unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            serde_json::to_string(&message).unwrap()
        );
        let read = Message::from_slice(&serde_json::to_vec(&message).unwrap()).unwrap();
        let Message::Response(Response {
            outcome: Ok(back), ..
        }) = read
        else {
            panic!("not a result: {read:?}");
        };
        assert_eq!(back.into_typed::<CallToolResult>().unwrap(), result);
    }

    #[test]
    fn write_json_writes_exactly_what_serialize_does() {
        let line = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]},"x-extra":[1,{"a":"\u00e9"}]}"#;
        let shared = Message::from_shared_line(&Arc::new(line.to_vec())).unwrap();
        let raw = Message::from_slice(line).unwrap();
        let mut extra = Map::new();
        extra.insert("weird \"key\"".into(), json!({"n": null}));
        let messages = [
            shared,
            raw,
            Request::new(
                1,
                "tools/call",
                Some(Payload::Value(
                    json!({"name": "é", "arguments": {"q": "a\"b"}}),
                )),
            )
            .into(),
            Request::new("s-1", "ping", None).into(),
            Message::Request(Request {
                extra: extra.clone(),
                ..Request::new(
                    2,
                    "x",
                    Some(Payload::from_json_str(r#"{ "spaced" : 1 }"#).unwrap()),
                )
            }),
            Notification::new(
                "notifications/cancelled",
                Some(Payload::Value(json!({"requestId": 3}))),
            )
            .into(),
            Notification::new("notifications/initialized", None).into(),
            Response::error(None, ErrorObject::invalid_params("bad")).into(),
            Response::error(Some(RequestId::from(4)), ErrorObject::internal("x")).into(),
        ];
        for message in messages {
            let mut written = Vec::new();
            message.write_json(&mut written).unwrap();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                serde_json::to_string(&message).unwrap(),
                "{message:?}"
            );
            assert_eq!(
                message.to_json_string().unwrap(),
                serde_json::to_string(&message).unwrap()
            );
        }
    }

    #[test]
    fn integral_float_ids_are_accepted() {
        let m = parse(r#"{"jsonrpc":"2.0","id":4.0,"result":{}}"#).unwrap();
        assert!(matches!(m, Message::Response(r) if r.id == Some(RequestId::Number(4))));
    }

    #[test]
    fn the_id_of_a_broken_message_is_found_before_the_fault_or_as_its_last_member() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{}"#,
            "[".repeat(100_000)
        );
        assert!(Message::from_slice(deep.as_bytes()).is_err());
        assert_eq!(request_id_of(deep.as_bytes()), Some(RequestId::Number(7)));
        for (text, id) in [
            (
                r#"{"jsonrpc":"2.0","id":"a","result":1,"error":{}}"#,
                Some("a".into()),
            ),
            (r#"{"id":3,"result":"cut"#, Some(RequestId::Number(3))),
            (
                r#"{"result":{"id":4},"id":5,"bogus""#,
                Some(RequestId::Number(5)),
            ),
            (r#"{"jsonrpc":"2.0","result":[[[["#, None),
            ("[1,2]", None),
            ("not json", None),
        ] {
            assert_eq!(request_id_of(text.as_bytes()), id, "{text}");
        }
        // After the fault, the id is trusted as the object's last member only (the TypeScript
        // SDK's order), and only where the whole message is at hand.
        let deep_first = format!(r#"{{"result":{},"id":8}}"#, "[".repeat(100_000));
        assert_eq!(
            request_id_of(deep_first.as_bytes()),
            Some(RequestId::Number(8))
        );
        assert_eq!(request_id_in_prefix(deep_first.as_bytes()), None);
        let nested_last = format!(r#"{{"result":{}{{"id":9}},"x":1}}"#, "[".repeat(100_000));
        assert_eq!(request_id_of(nested_last.as_bytes()), None);
    }

    #[test]
    fn a_broken_request_names_its_id_for_the_side_that_answers_it() {
        let deep = "[".repeat(100_000);
        let request = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{deep}"#);
        assert_eq!(
            id_of_broken_request(request.as_bytes()),
            Some(RequestId::Number(3))
        );
        assert_eq!(request_id_of(request.as_bytes()), None);
        let method_first = format!(r#"{{"method":"ping","id":"a","params":{deep}"#);
        assert_eq!(
            id_of_broken_request(method_first.as_bytes()),
            Some("a".into())
        );
        assert_eq!(id_of_broken_request(br#"{"params":[[[}"#), None);
    }

    #[test]
    fn a_whole_message_broken_after_its_id_names_it_unless_a_method_could_follow() {
        let mut broken = br#"{"jsonrpc":"2.0","id":5,"#.to_vec();
        broken.extend_from_slice(b"\xff\"result\":{}}");
        assert_eq!(request_id_of(&broken), Some(RequestId::Number(5)));
        assert_eq!(request_id_in_prefix(&broken), None);
        let mut request = br#"{"jsonrpc":"2.0","id":5,"#.to_vec();
        request.extend_from_slice(b"\xff\"method\":\"ping\"}");
        assert_eq!(request_id_of(&request), None);
    }

    #[test]
    fn a_broken_server_request_names_no_request_of_the_client() {
        let deep = "[".repeat(100_000);
        for text in [
            // id first, method next (the common order of a request).
            format!(
                r#"{{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{deep}"#
            ),
            // method first.
            format!(r#"{{"jsonrpc":"2.0","method":"roots/list","id":5,"params":{deep}"#),
            // whole, but not a valid message.
            r#"{"jsonrpc":"2.0","id":5,"method":7}"#.to_owned(),
            // broken, the TypeScript SDK's order (method first, id last).
            format!(r#"{{"method":"ping","params":{{"a":{deep}}},"jsonrpc":"2.0","id":5}}"#),
            // a broken notification whose params carry an id.
            format!(r#"{{"method":"notifications/progress","params":{{"id":5,"x":{deep}"#),
        ] {
            assert_eq!(request_id_of(text.as_bytes()), None, "{:.80}", text);
            assert_eq!(request_id_in_prefix(text.as_bytes()), None, "{:.80}", text);
        }
        // Cut short after the id: no member follows, so no method; the id is the answer's.
        let torn = br#"{"jsonrpc":"2.0","id":1,"res"#;
        assert_eq!(request_id_of(torn), Some(RequestId::Number(1)));
        assert_eq!(request_id_in_prefix(torn), None, "a prefix may go on");
        // Cut where a `method` member may have begun: perhaps the server's request.
        for cut in [
            &br#"{"jsonrpc":"2.0","id":1,"meth"#[..],
            br#"{"jsonrpc":"2.0","id":1,"m"#,
            br#"{"jsonrpc":"2.0","id":1,""#,
            br#"{"jsonrpc":"2.0","id":1, "#,
            br#"{"jsonrpc":"2.0","id":1"#,
            br#"{"id":1,"jsonrpc":"2.0""#,
            br#"{"jsonrpc":"2.0","id":1,"met"#,
        ] {
            let shown = String::from_utf8_lossy(cut);
            assert_eq!(request_id_of(cut), None, "{shown}");
            assert_eq!(
                classify_broken_message(cut),
                BrokenMessage::Unknown,
                "{shown}"
            );
        }
        // Inside a key that is not `method`'s: no method follows.
        assert_eq!(
            request_id_of(br#"{"jsonrpc":"2.0","id":1,"methods"#),
            Some(RequestId::Number(1))
        );
        // Broken before the end with nothing that tells: a method may follow the fault.
        assert_eq!(request_id_of(br#"{"id":5,"x":[},"method":"m"}"#), None);
        // A numeric-string id is found as written (the session reads it as this client's 5).
        assert_eq!(
            request_id_of(format!(r#"{{"id":"5","result":{deep}"#).as_bytes()),
            Some(RequestId::from("5"))
        );
    }

    #[test]
    fn a_broken_message_is_an_answer_a_server_message_or_unknown() {
        for (bytes, expected) in [
            (
                &b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":\"caf\xe9\"}"[..],
                BrokenMessage::AnswerTo(RequestId::Number(4)),
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"caf\xe9\"}}",
                BrokenMessage::ServerRequestOrNotification,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":\"\xe9\"}",
                BrokenMessage::ServerRequestOrNotification,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"result\":\"\xe9\"}",
                BrokenMessage::Unknown,
            ),
            (b"[1,\xe9]", BrokenMessage::Unknown),
        ] {
            let shown = String::from_utf8_lossy(bytes);
            assert_eq!(classify_broken_message(bytes), expected, "{shown}");
        }
    }

    #[test]
    fn a_parse_error_quotes_the_peers_text_redacted_and_cut() {
        let secret = format!("Bearer SECRET{}", "x".repeat(100_000));
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"error":"{secret}\u001b[2J"}}"#);
        let e = Message::from_slice(line.as_bytes()).unwrap_err();
        let reason = e.reason();
        assert!(!reason.contains("SECRET"), "{reason}");
        assert!(reason.chars().count() < 300, "{reason}");
        assert!(!reason.chars().any(char::is_control), "{reason:?}");
        assert!(reason.starts_with("invalid type: string"), "{reason}");
        // The position stays, after the cut.
        assert!(
            reason.ends_with(&format!("column {}", line.len() - 1)),
            "{reason}"
        );
        let shared = Arc::new(line.into_bytes());
        let e = Message::from_shared_line(&shared).unwrap_err();
        assert!(!e.reason().contains("SECRET"), "{e}");
        assert!(e.reason().chars().count() < 300, "{e}");
    }

    #[test]
    fn an_id_in_a_prefix_is_trusted_only_once_the_prefix_says_it_is_an_answer() {
        for (prefix, id) in [
            // An answer member after the id: an answer, cut in its result.
            (r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"#, Some(5)),
            (r#"{"jsonrpc":"2.0","id":5,"error":{"code":"#, Some(5)),
            // The answer member first, the id next.
            (r#"{"result":{},"id":6,"jsonrpc""#, Some(6)),
            // The object's end with no method: an answer (if no valid one).
            (r#"{"jsonrpc":"2.0","id":7}"#, Some(7)),
            // A method after the id, inside the prefix: a request.
            (r#"{"jsonrpc":"2.0","id":5,"method":"x","params":{"#, None),
            // The prefix ends after the id, before anything that tells: it may be a request
            // whose method comes later, so no id.
            (r#"{"jsonrpc":"2.0","id":5,"_meta":{"x":"#, None),
            (r#"{"jsonrpc":"2.0","id":5"#, None),
            (r#"{"jsonrpc":"2.0","id":5,"#, None),
            // An answer member but no id before the cut.
            (r#"{"result":{"id":4,"x":"#, None),
        ] {
            assert_eq!(
                request_id_in_prefix(prefix.as_bytes()),
                id.map(RequestId::Number),
                "{prefix}"
            );
        }
    }
}
