//! The `_meta` every request carries: the progress token, the caller's W3C trace context when
//! it gave one, and, in the modern era, the protocol version, client capabilities, client info
//! and log level — added in one place
//! ([`with_request_meta`]), spliced as text into raw parameters (or, for a transport that
//! answers in place, handed over as values: [`MetaAdditions::as_values`]).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::SessionShared;
use mcp_core::error::{Delivery, Error, ErrorKind};
use mcp_core::jsonrpc::Payload;
use mcp_core::service::TraceContext;
use mcp_core::types::{meta, LoggingLevel};
use mcp_core::version::ProtocolVersion;

/// The `_meta` members every modern request carries, built once per session.
pub(super) struct ModernMeta {
    /// Shared (in-process transports get them as values: `MetaAdditions::as_values`).
    members: Arc<Map<String, Value>>,
    /// The same members as JSON object members without braces, for splicing into raw text.
    text: String,
}

impl ModernMeta {
    pub(super) fn new(shared_capabilities: Value, client_info: Value) -> ModernMeta {
        let mut members = Map::with_capacity(3);
        members.insert(
            meta::PROTOCOL_VERSION.into(),
            Value::from(ProtocolVersion::V2026_07_28.as_str()),
        );
        members.insert(meta::CLIENT_CAPABILITIES.into(), shared_capabilities);
        members.insert(meta::CLIENT_INFO.into(), client_info);
        let object = Value::Object(members.clone()).to_string();
        let text = object[1..object.len() - 1].to_owned();
        ModernMeta {
            members: Arc::new(members),
            text,
        }
    }
}

/// What is added to one request's `_meta`.
pub(super) struct MetaAdditions<'a> {
    /// `progressToken`.
    pub(super) progress_token: Option<i64>,
    /// The modern protocol fields.
    pub(super) modern: Option<&'a ModernMeta>,
    /// `io.modelcontextprotocol/logLevel` (modern only).
    pub(super) log_level: Option<LoggingLevel>,
    /// `traceparent` and `tracestate` (both eras), from the request's options.
    pub(super) trace: Option<&'a TraceContext>,
}

impl MetaAdditions<'_> {
    /// The same additions as values, for a transport that answers in place.
    pub(super) fn as_values(&self) -> mcp_core::transport::RequestMeta<'_> {
        mcp_core::transport::RequestMeta {
            progress_token: self.progress_token,
            modern: self.modern.map(|m| &m.members),
            log_level: self.modern.and(self.log_level),
            trace_context: self.trace,
        }
    }

    fn is_empty(&self) -> bool {
        self.progress_token.is_none() && self.modern.is_none() && self.trace.is_none()
    }

    /// The members as object-member text (no braces).
    fn text(&self) -> String {
        use std::fmt::Write;
        let mut text = String::with_capacity(32 + self.modern.map_or(0, |m| m.text.len()));
        if let Some(id) = self.progress_token {
            let _ = write!(text, "\"progressToken\":{id}");
        }
        if let Some(modern) = self.modern {
            if !text.is_empty() {
                text.push(',');
            }
            text.push_str(&modern.text);
            if let Some(level) = self.log_level {
                let level = serde_json::to_string(&level).unwrap_or_else(|_| "\"info\"".into());
                let _ = write!(text, ",\"{}\":{level}", meta::LOG_LEVEL);
            }
        }
        if let Some(trace) = self.trace {
            for (key, value) in trace_members(trace) {
                if !text.is_empty() {
                    text.push(',');
                }
                // Escaped as a JSON string whatever the caller gave.
                let value = Value::from(value).to_string();
                let _ = write!(text, "\"{key}\":{value}");
            }
        }
        text
    }

    /// Adds the members to a `_meta` object; members the caller set are kept.
    fn insert_into(&self, target: &mut Map<String, Value>) {
        if let Some(id) = self.progress_token {
            target
                .entry("progressToken")
                .or_insert_with(|| Value::from(id));
        }
        if let Some(modern) = self.modern {
            // The session's protocol fields win: they must match the transport's headers and
            // what the session's handler can answer.
            for (key, value) in modern.members.iter() {
                target.insert(key.clone(), value.clone());
            }
            if let Some(level) = self.log_level {
                target
                    .entry(meta::LOG_LEVEL)
                    .or_insert_with(|| serde_json::to_value(level).unwrap_or(Value::Null));
            }
        }
        // A trace context the caller put there is kept whole: a `tracestate` belongs to its
        // own `traceparent`, never to ours.
        let callers_own =
            target.contains_key(meta::TRACEPARENT) || target.contains_key(meta::TRACESTATE);
        if let (Some(trace), false) = (self.trace, callers_own) {
            for (key, value) in trace_members(trace) {
                target.insert(key.to_owned(), Value::from(value));
            }
        }
    }
}

/// The `_meta` members of a trace context: `traceparent`, and `tracestate` when there is one.
fn trace_members(trace: &TraceContext) -> impl Iterator<Item = (&'static str, &str)> {
    std::iter::once((meta::TRACEPARENT, trace.traceparent.as_str())).chain(
        trace
            .tracestate
            .as_deref()
            .map(|state| (meta::TRACESTATE, state)),
    )
}

/// Adds `additions` to a request's `params._meta` (creating both if absent). Raw parameters get
/// the members spliced in as text, so pass-through arguments are never parsed into a tree.
pub(super) fn with_request_meta(
    params: Option<Payload>,
    additions: &MetaAdditions<'_>,
) -> Result<Option<Payload>, Error> {
    if additions.is_empty() {
        return Ok(params);
    }
    let not_an_object = || {
        Error::new(
            ErrorKind::InvalidParams,
            "request params must be a JSON object",
        )
        .with_delivery(Delivery::NotSent)
    };
    match params {
        None => Ok(Some(Payload::Shared(
            mcp_core::jsonrpc::SharedJson::from_valid_json(format!(
                "{{\"_meta\":{{{}}}}}",
                additions.text()
            )),
        ))),
        Some(Payload::Value(Value::Object(mut map))) => {
            match map.get_mut("_meta") {
                Some(Value::Object(existing)) => additions.insert_into(existing),
                _ => {
                    let mut fresh = Map::with_capacity(4);
                    additions.insert_into(&mut fresh);
                    map.insert("_meta".into(), Value::Object(fresh));
                }
            }
            Ok(Some(Payload::Value(Value::Object(map))))
        }
        Some(payload @ (Payload::Raw(_) | Payload::Shared(_))) => {
            let json = payload.to_json_string();
            let text = json.trim();
            let Some(body) = text.strip_prefix('{') else {
                return Err(not_an_object());
            };
            // Most parameters have no `_meta` at all: the text check (which also sees an
            // escaped key) is enough to know. With one, insert into it the way values do.
            if text.contains("meta\"") && has_top_level_meta(text) {
                drop(json);
                let value = payload.into_value().map_err(Error::unencodable)?;
                return with_request_meta(Some(Payload::Value(value)), additions);
            }
            let body = body.trim_start();
            let members = additions.text();
            // Built with `push_str`, not `format!`: this runs for every request, and
            // `format!` cost more than the rest of this function (it grows the string
            // several times).
            let mut spliced = String::with_capacity(members.len() + body.len() + 12);
            spliced.push_str("{\"_meta\":{");
            spliced.push_str(&members);
            spliced.push('}');
            if body.starts_with('}') {
                spliced.push('}');
            } else {
                spliced.push(',');
                spliced.push_str(body);
            }
            // A member added at the front of a valid object is a valid object: no second parse.
            Ok(Some(Payload::Shared(
                mcp_core::jsonrpc::SharedJson::from_valid_json(spliced),
            )))
        }
        Some(Payload::Value(_)) => Err(not_an_object()),
        // Results only; should parameters ever come typed, they are added to as values.
        Some(Payload::Typed(typed)) => {
            let value = typed.to_value().map_err(Error::unencodable)?;
            with_request_meta(Some(Payload::Value(value)), additions)
        }
    }
}

fn has_top_level_meta(object_text: &str) -> bool {
    // Owned keys, so that an escaped `"\u005fmeta"` is seen as `_meta` too.
    serde_json::from_str::<std::collections::HashMap<String, serde::de::IgnoredAny>>(object_text)
        .map(|m| m.contains_key("_meta"))
        .unwrap_or(false)
}

impl SessionShared {
    /// The `_meta` additions of one request.
    pub(super) fn meta_additions<'a>(
        &'a self,
        progress_token: Option<i64>,
        modern: bool,
        trace: Option<&'a TraceContext>,
    ) -> MetaAdditions<'a> {
        MetaAdditions {
            trace,
            progress_token,
            modern: modern.then_some(&self.modern_meta),
            log_level: if modern {
                *mcp_core::sync::lock(&self.log_level)
            } else {
                None
            },
        }
    }
}
