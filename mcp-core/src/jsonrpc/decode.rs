//! The message visitor (one pass; parameters and results kept as raw or shared JSON text, unknown
//! members in `extra`) and [`MessageError`], why bytes are not a message.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{ErrorObject, Message, Notification, Payload, Request, Response, SharedJson};
use super::{RequestId, JSONRPC_VERSION};

/// Why bytes could not be read as a JSON-RPC message: what kind of fault, and where. Its `Display`
/// and `Debug` never show the peer's text; the parser's own words may quote it (a value, a key, a
/// token a server echoed back), so they are kept apart ([`parser_words`](Self::parser_words)) for a
/// transport to show redacted, as `mcp-wire`'s `broken::message_error_text` does.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON-RPC message ({}){}", self.fault, self.at())]
pub struct MessageError {
    fault: &'static str,
    /// Where the parser stopped: line and column.
    position: Option<(usize, usize)>,
    /// The parser's words without the position, at most [`PARSER_WORDS_BYTES`] of them.
    words: String,
}

/// Bytes of the parser's words kept: it quotes the offending value whole (megabytes, maybe).
const PARSER_WORDS_BYTES: usize = 4096;

impl MessageError {
    pub(super) fn from_parser(e: &serde_json::Error) -> Self {
        let full = e.to_string();
        let position = (e.line() > 0).then(|| (e.line(), e.column()));
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let words = full.strip_suffix(&suffix).unwrap_or(&full);
        let mut end = words.len().min(PARSER_WORDS_BYTES);
        while !words.is_char_boundary(end) {
            end -= 1;
        }
        MessageError {
            fault: match e.classify() {
                serde_json::error::Category::Syntax => "not JSON",
                serde_json::error::Category::Eof => "cut short",
                serde_json::error::Category::Data | serde_json::error::Category::Io => {
                    "not a JSON-RPC 2.0 message"
                }
            },
            position: position.filter(|_| words.len() < full.len()),
            words: words[..end].to_owned(),
        }
    }

    /// What kind of fault, and where: `not JSON at line 1 column 7` (never the peer's text).
    pub fn reason(&self) -> String {
        format!("{}{}", self.fault, self.at())
    }

    /// The parser's words (`invalid type: string "…"`), maybe quoting the peer: show redacted, cut.
    pub fn parser_words(&self) -> &str {
        &self.words
    }

    /// ` at line L column C`, or nothing when the parser gave no position.
    pub fn at(&self) -> String {
        self.position
            .map(|(line, column)| format!(" at line {line} column {column}"))
            .unwrap_or_default()
    }
}

impl fmt::Debug for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageError")
            .field("fault", &self.fault)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor(OwnedCapture))
    }
}

/// How the message visitor keeps `params` and `result`.
pub(super) trait RawCapture<'de> {
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
pub(super) struct SharedCapture<'l> {
    pub(super) line: &'l Arc<Vec<u8>>,
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

pub(super) struct MessageVisitor<C>(pub(super) C);

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
