//! Parameters and results: [`Payload`] and its forms (raw, shared, value, typed).

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeOwned};
use serde::ser::Serializer;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

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
    /// A complete result an in-process server built (a `CallToolResult`, say), kept typed:
    /// [`Payload::into_typed`] hands it over as is when asked for its type; it becomes JSON only if
    /// something needs JSON. A result asking for more (`input_required`, a task) stays JSON.
    Typed(TypedPayload),
}

/// A complete result built in process, kept as the value it is ([`Payload::Typed`]).
pub struct TypedPayload(Box<dyn TypedValue>);

/// The results a [`TypedPayload`] can keep: complete results, JSON objects whose JSON cannot
/// fail to be written. Sealed: implemented for [`CallToolResult`](crate::types::CallToolResult).
pub trait TypedResult:
    Serialize + Clone + fmt::Debug + Send + Sync + 'static + sealed::Sealed
{
}

impl TypedResult for crate::types::CallToolResult {}

mod sealed {
    /// Keeps [`TypedResult`](super::TypedResult) to the types of this crate.
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

impl<T: TypedResult> TypedValue for T {
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
    /// Appends the value as compact JSON (for [`Message::write_json`]).
    pub(super) fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        self.0.write_json(out)
    }

    /// Keeps `result` as it is, which must be what reading its own JSON would give (no known member
    /// among its unknown ones, say): a caller asking for its type gets it without that reading.
    pub fn new<T: TypedResult>(result: T) -> Self {
        TypedPayload(Box::new(result))
    }

    /// The value as JSON.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        self.0.to_value()
    }

    /// The value itself, borrowed, when it is a `T` (a look at a result without taking or
    /// serializing it: whether a kept `CallToolResult` is a tool error, say).
    pub fn get<T: TypedResult>(&self) -> Option<&T> {
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
    pub(super) fn within(buffer: &Arc<Vec<u8>>, raw: &RawValue) -> Option<SharedJson> {
        let base = buffer.as_ptr() as usize;
        let start = (raw.get().as_ptr() as usize).checked_sub(base)?;
        let end = start + raw.get().len();
        (end <= buffer.len()).then(|| SharedJson {
            buffer: buffer.clone(),
            start,
            end,
        })
    }

    /// Wraps JSON text the session engine made itself (a splice of validated JSON: the request's
    /// `_meta`), which the caller vouches is one valid JSON value (only debug builds check): a byte
    /// transport writes it as it is. Public for `mcp-session` only (hidden from the docs);
    /// everything else builds payloads from values or parsed text. A `String` is UTF-8, which
    /// [`as_str`](SharedJson::as_str) relies on.
    #[doc(hidden)]
    pub fn from_valid_json(json: String) -> SharedJson {
        debug_assert!(
            serde_json::from_str::<&RawValue>(&json).is_ok(),
            "not one JSON value: {json:?}"
        );
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

    /// Converts into `T`, moving (not copying) strings out of values, and a typed `T` out as is.
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

    /// The payload as JSON text: borrowed when already text, with any line breaks a peer put
    /// between its tokens ([`Message::write_json`](super::Message::write_json) writes one line).
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
                    // Writing a kept type cannot fail (`TypedResult`).
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
            // Every kept type is an object (`TypedResult`).
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
            // As written: on one line (a line break between tokens is a space there), so a
            // received payload equals its own re-encoding even where its value cannot be read
            // as a `Value` (a number beyond f64).
            (Payload::Raw(_) | Payload::Shared(_), Payload::Raw(_) | Payload::Shared(_))
                if one_line(&self.to_json_string()) == one_line(&other.to_json_string()) =>
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

/// `json` (valid JSON text) on one line: a raw line break in valid JSON can only be whitespace
/// between tokens (a string escapes its own), so each becomes a space and the value stays the
/// same. A line-delimited transport (stdio) must never see one inside a message: text a peer
/// sent over another transport (an HTTP body, a gRPC line) may hold them, and copied as it is
/// it would end the line early and let what follows be read as a message of its own.
pub(super) fn one_line(json: &str) -> Cow<'_, str> {
    if memchr::memchr2(b'\n', b'\r', json.as_bytes()).is_none() {
        return Cow::Borrowed(json);
    }
    Cow::Owned(json.replace(['\n', '\r'], " "))
}

/// Appends `json` (valid JSON) to `out` on one line, as [`one_line`] does, without a second copy.
pub(super) fn push_one_line(out: &mut Vec<u8>, json: &str) {
    let start = out.len();
    out.extend_from_slice(json.as_bytes());
    let written = &mut out[start..];
    if memchr::memchr2(b'\n', b'\r', written).is_some() {
        for byte in written.iter_mut().filter(|b| matches!(**b, b'\n' | b'\r')) {
            *byte = b' ';
        }
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Payload::Raw(raw) => match one_line(raw.get()) {
                Cow::Borrowed(_) => raw.serialize(serializer),
                Cow::Owned(text) => {
                    let raw: &RawValue =
                        serde_json::from_str(&text).map_err(serde::ser::Error::custom)?;
                    raw.serialize(serializer)
                }
            },
            Payload::Value(value) => value.serialize(serializer),
            Payload::Shared(shared) => {
                // Re-serializing received JSON is rare (pass-through): borrow it as a raw value.
                let text = one_line(shared.as_str());
                let raw: &RawValue =
                    serde_json::from_str(&text).map_err(serde::ser::Error::custom)?;
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
