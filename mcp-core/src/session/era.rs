//! The two eras of the protocol behind one session (see [`Era`]).
//!
//! One engine serves both: the era decides only how a session opens and how each request is
//! shaped, never what callers or policy layers see.
//!
//! - Opening: a pinned or remembered legacy era goes straight to `initialize`. Otherwise the
//!   session probes with `server/discover`: a `DiscoverResult` (or a modern error such as
//!   `UnsupportedProtocolVersion` naming a version both sides speak) makes it modern; any other
//!   error, or silence past [`SessionOptions::discover_timeout`](super::SessionOptions), means a
//!   legacy server, and the session falls back to `initialize`.
//! - Every modern request carries the `_meta` protocol fields (added in one place, with the
//!   progress token: [`with_request_meta`]).
//! - A modern result with `resultType: "input_required"` is answered through the session's
//!   [`ClientHandler`](super::ClientHandler) and the request re-issued with the answers and the
//!   server's `requestState` ([`ClientSession::call_modern`]); the caller sees one call.
//! - Methods the modern era removed keep working for callers: `ping` becomes
//!   `server/discover`, `logging/setLevel` sets the level every later request carries, and
//!   `resources/subscribe` / `unsubscribe` change what the session's `subscriptions/listen`
//!   stream asks for.
//! - A `tools/call` the server runs as a task (`resultType: "task"`, Tasks extension) is
//!   followed to its end (`tasks.rs`) unless the caller asked for the handle.

use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use super::tasks::OnAbandon;
use super::{ClientSession, RequestOptions, SessionShared};
use crate::error::{Delivery, Error, ErrorKind};
use crate::extensions::tasks::{parse_task, RESULT_TYPE_TASK, TASKS_GET};
use crate::jsonrpc::{ErrorObject, Payload, Request, RequestId};
use crate::service::encode_error;
use crate::types::{
    error_codes, meta, methods, DiscoverResult, InitializeResult, InputRequiredResult,
    LoggingLevel, ResultType, UnsupportedVersionData,
};
use crate::version::{Era, ProtocolVersion};

/// Remembers the era a server was found to speak; share one per server across connections
/// (like the HTTP flavor memo), so reconnecting to a legacy server skips the probe.
#[derive(Debug, Clone, Default)]
pub struct EraMemo(Arc<Mutex<Option<Era>>>);

impl EraMemo {
    /// What was detected, if anything yet.
    pub fn get(&self) -> Option<Era> {
        *crate::sync::lock(&self.0)
    }

    /// Records what a connection found.
    pub fn set(&self, era: Era) {
        *crate::sync::lock(&self.0) = Some(era);
    }
}

/// The `_meta` members every modern request carries, built once per session.
pub(super) struct ModernMeta {
    members: Map<String, Value>,
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
        ModernMeta { members, text }
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
}

impl MetaAdditions<'_> {
    fn is_empty(&self) -> bool {
        self.progress_token.is_none() && self.modern.is_none()
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
            for (key, value) in &modern.members {
                target.insert(key.clone(), value.clone());
            }
            if let Some(level) = self.log_level {
                target
                    .entry(meta::LOG_LEVEL)
                    .or_insert_with(|| serde_json::to_value(level).unwrap_or(Value::Null));
            }
        }
    }
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
            crate::jsonrpc::SharedJson::from_valid_json(format!(
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
                let value = payload.into_value().map_err(encode_error)?;
                return with_request_meta(Some(Payload::Value(value)), additions);
            }
            let body = body.trim_start();
            let members = additions.text();
            let spliced = if body.starts_with('}') {
                format!("{{\"_meta\":{{{members}}}}}")
            } else {
                format!("{{\"_meta\":{{{members}}},{body}")
            };
            // A member added at the front of a valid object is a valid object: no second parse.
            Ok(Some(Payload::Shared(
                crate::jsonrpc::SharedJson::from_valid_json(spliced),
            )))
        }
        Some(Payload::Value(_)) => Err(not_an_object()),
    }
}

fn has_top_level_meta(object_text: &str) -> bool {
    // Owned keys, so that an escaped `"\u005fmeta"` is seen as `_meta` too.
    serde_json::from_str::<std::collections::HashMap<String, serde::de::IgnoredAny>>(object_text)
        .map(|m| m.contains_key("_meta"))
        .unwrap_or(false)
}

/// How the `server/discover` probe ended.
pub(super) enum Probe {
    /// A modern server: the session is open.
    Modern,
    /// Not a modern server (why, for the log): fall back to `initialize`.
    Legacy(String),
}

/// The versions this client speaks, for error messages.
fn our_versions() -> String {
    ProtocolVersion::SUPPORTED
        .iter()
        .map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first modern version both sides speak.
fn mutual_modern(supported: &[String]) -> Option<ProtocolVersion> {
    ProtocolVersion::SUPPORTED
        .into_iter()
        .filter(|v| v.is_modern())
        .find(|v| supported.iter().any(|s| s == v.as_str()))
}

/// Whether any legacy version in `supported` is one this client speaks.
fn speaks_a_legacy_one(supported: &[String]) -> bool {
    supported
        .iter()
        .filter_map(|s| s.parse::<ProtocolVersion>().ok())
        .any(|v| !v.is_modern())
}

/// A clear error for "the server speaks other versions".
pub(super) fn no_mutual_version(supported: &[String], requested: &str) -> Error {
    Error::protocol(format!(
        "the server does not speak protocol version {requested}; it speaks {}, and this client speaks {}",
        if supported.is_empty() {
            "no version it named".to_owned()
        } else {
            supported.join(", ")
        },
        our_versions()
    ))
}

/// An `UnsupportedProtocolVersion` error whose `supported` list names the modern version this
/// client asked for: worth one retry.
pub(super) fn names_our_version(error: &Error) -> bool {
    error.code() == Some(error_codes::UNSUPPORTED_PROTOCOL_VERSION)
        && mutual_modern(&unsupported_data(error).supported).is_some()
}

/// The `supported` list of an `UnsupportedProtocolVersion` error.
fn unsupported_data(error: &Error) -> UnsupportedVersionData {
    error
        .data()
        .and_then(|d| serde_json::from_value(d.clone()).ok())
        .unwrap_or_default()
}

impl ClientSession {
    /// Opens the session in the era the options pin, the memo remembers, or the probe finds.
    pub(super) async fn open(&self) -> Result<(), Error> {
        let options = &self.shared.options;
        let remembered = options.era_memo.as_ref().and_then(EraMemo::get);
        let legacy_transport = !self.shared.sender.speaks_modern_era();
        let era = match (options.era, remembered) {
            (Some(Era::Legacy), _) => self.initialize().await.map(|()| Era::Legacy)?,
            _ if legacy_transport && options.era.is_none() => {
                self.initialize().await.map(|()| Era::Legacy)?
            }
            (Some(Era::Modern), _) => match self.discover().await? {
                Probe::Modern => Era::Modern,
                Probe::Legacy(why) => {
                    return Err(Error::protocol(format!(
                        "the server does not speak the modern protocol (2026-07-28), which the configuration requires: {why}"
                    )))
                }
            },
            // Remembered as legacy: straight to initialize. Should the server have moved on
            // (it refuses initialize with a JSON-RPC error), the memo was wrong: probe.
            (None, Some(Era::Legacy)) => match self.initialize().await {
                Ok(()) => Era::Legacy,
                Err(e) if e.code().is_some() && !self.is_closed() => {
                    tracing::debug!(error = %e, "initialize refused where a legacy server was remembered; probing again");
                    self.probe_then_initialize().await?
                }
                Err(e) => return Err(e),
            },
            // Remembered as modern, or unknown: probe (a remembered era is only a hint).
            (None, _) => self.probe_then_initialize().await?,
        };
        if let Some(memo) = &options.era_memo {
            memo.set(era);
        }
        Ok(())
    }

    /// Probes; falls back to `initialize` for a legacy server.
    async fn probe_then_initialize(&self) -> Result<Era, Error> {
        match self.discover().await? {
            Probe::Modern => Ok(Era::Modern),
            Probe::Legacy(why) => {
                tracing::debug!(why, "not a modern server; initializing a legacy session");
                self.shared.sender.set_protocol_version(None);
                self.initialize().await?;
                Ok(Era::Legacy)
            }
        }
    }

    /// The `server/discover` probe.
    async fn discover(&self) -> Result<Probe, Error> {
        let shared = &self.shared;
        shared
            .sender
            .set_protocol_version(Some(ProtocolVersion::V2026_07_28));
        let limit = shared.options.discover_timeout;
        let mut retried = false;
        let answer = loop {
            let request = self.issue_shaped(
                methods::SERVER_DISCOVER,
                None,
                RequestOptions::new().with_timeout(limit),
                super::request::Shape {
                    progress_token: true,
                    modern: true,
                },
            );
            match request.await {
                Ok(answer) => break answer,
                // Refused although it lists the version asked for: once more.
                Err(e) if !retried && names_our_version(&e) => {
                    tracing::debug!(error = %e, "server/discover refused a version it lists; retrying");
                    retried = true;
                }
                Err(e) => return self.classify_probe_error(e),
            }
        };
        // Anything but a discover result (a legacy server answering `{}`) means legacy.
        let result: DiscoverResult = match answer.into_typed() {
            Ok(result) => result,
            Err(e) => {
                return Ok(Probe::Legacy(format!(
                    "server/discover answered with something else than a discover result ({e})"
                )))
            }
        };
        let Some(version) = mutual_modern(&result.supported_versions) else {
            if speaks_a_legacy_one(&result.supported_versions) {
                return Ok(Probe::Legacy(format!(
                    "server/discover lists only legacy versions ({})",
                    result.supported_versions.join(", ")
                )));
            }
            return Err(no_mutual_version(
                &result.supported_versions,
                ProtocolVersion::V2026_07_28.as_str(),
            ));
        };
        let info = result
            .server_info()
            .unwrap_or_else(|| crate::types::Implementation::new("unknown", "unknown"));
        tracing::debug!(server = %info.name, version = %version, "modern MCP server discovered");
        let summary = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: result.capabilities.clone(),
            server_info: info,
            instructions: result.instructions.clone(),
            extra: Map::new(),
        };
        let _ = shared.initialize_result.set(summary);
        let _ = shared.protocol_version.set(version);
        let _ = shared.discover_result.set(result);
        Ok(Probe::Modern)
    }

    fn classify_probe_error(&self, e: Error) -> Result<Probe, Error> {
        if self.is_closed() || e.kind() == ErrorKind::Auth {
            return Err(e);
        }
        match e.code() {
            Some(error_codes::UNSUPPORTED_PROTOCOL_VERSION) => {
                let data = unsupported_data(&e);
                if speaks_a_legacy_one(&data.supported) {
                    Ok(Probe::Legacy(format!(
                        "the server speaks {} but not 2026-07-28",
                        data.supported.join(", ")
                    )))
                } else {
                    Err(no_mutual_version(
                        &data.supported,
                        ProtocolVersion::V2026_07_28.as_str(),
                    ))
                }
            }
            Some(code) if error_codes::is_modern(code) => Err(e),
            Some(code) => Ok(Probe::Legacy(format!(
                "server/discover was refused with error {code}: {}",
                e.message()
            ))),
            None if e.kind() == ErrorKind::Timeout => Ok(Probe::Legacy(format!(
                "no answer to server/discover within {}",
                super::human_duration(self.shared.options.discover_timeout)
            ))),
            // It never reached a server (refused, unreachable): not evidence of an era.
            None if e.delivery() == Some(Delivery::NotSent) => Err(e),
            None => Ok(Probe::Legacy(format!(
                "server/discover failed: {}",
                e.message()
            ))),
        }
    }

    /// Whether this session speaks the modern era.
    pub fn is_modern(&self) -> bool {
        self.shared
            .protocol_version
            .get()
            .is_some_and(|v| v.is_modern())
    }

    /// The server's `server/discover` result (modern sessions only).
    pub fn discover_result(&self) -> Option<&DiscoverResult> {
        self.shared.discover_result.get()
    }

    /// A request in the modern era: methods the era removed are mapped, and an
    /// `input_required` result is answered and the request re-issued, until a final result or
    /// [`SessionOptions::max_input_rounds`](super::SessionOptions).
    pub(super) async fn call_modern(
        &self,
        method: &str,
        params: Option<Payload>,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        match method {
            methods::PING => {
                self.issue(methods::SERVER_DISCOVER, None, options).await?;
                return Ok(Payload::Value(json!({})));
            }
            methods::LOGGING_SET_LEVEL => {
                let level = params
                    .as_ref()
                    .and_then(|p| p.deserialize::<crate::types::SetLevelRequestParams>().ok())
                    .ok_or_else(|| {
                        Error::new(ErrorKind::InvalidParams, "logging/setLevel needs a level")
                            .with_delivery(Delivery::NotSent)
                    })?;
                *crate::sync::lock(&self.shared.log_level) = Some(level.level);
                return Ok(Payload::Value(json!({})));
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                let uri = params
                    .as_ref()
                    .and_then(|p| p.deserialize::<crate::types::SubscribeRequestParams>().ok())
                    .ok_or_else(|| {
                        Error::new(ErrorKind::InvalidParams, format!("{method} needs a uri"))
                            .with_delivery(Delivery::NotSent)
                    })?
                    .uri;
                let offered = self
                    .server_info()
                    .capabilities
                    .resources
                    .as_ref()
                    .is_some_and(|r| r.subscribe == Some(true));
                if method == methods::RESOURCES_SUBSCRIBE && !offered {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        format!("cannot subscribe to {uri}: the server does not offer resource subscriptions"),
                    )
                    .with_delivery(Delivery::NotSent));
                }
                self.change_resource_subscription(uri, method == methods::RESOURCES_SUBSCRIBE);
                return Ok(Payload::Value(json!({})));
            }
            _ => {}
        }
        let multi_round = matches!(
            method,
            methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
        );
        // One deadline for the whole call: every round, retry and answer to the server.
        let timeout = options
            .timeout
            .unwrap_or(self.shared.options.request_timeout);
        let options = options.with_deadline(crate::time::deadline_after(
            tokio::time::Instant::now(),
            timeout,
        ));
        if !multi_round {
            let wait = method == TASKS_GET && options.wait_for_task;
            let answer = self.issue_modern(method, params, options.clone()).await?;
            return match result_type(&answer) {
                ResultType::Complete if wait => {
                    let task = parse_task(answer, method)?;
                    let ended = self
                        .follow_task(method, task, &options, OnAbandon::Keep)
                        .await?;
                    serde_json::to_value(ended)
                        .map(Payload::Value)
                        .map_err(encode_error)
                }
                ResultType::Complete => Ok(answer),
                // `tasks/get` answers may carry the handle's own type; nothing else may.
                ResultType::Other(t) if t == RESULT_TYPE_TASK && method == TASKS_GET => Ok(answer),
                other => Err(unexpected_result_type(method, &other)),
            };
        }
        // Kept for re-issuing: shared text, so each round's copy is cheap.
        let original = params.map(shareable);
        let mut retry_params = original.clone();
        let max_rounds = self.shared.options.max_input_rounds;
        let mut round = 0;
        loop {
            let answer = self
                .issue_modern(method, retry_params, options.clone())
                .await?;
            match result_type(&answer) {
                ResultType::Complete => return Ok(answer),
                ResultType::InputRequired => {}
                // Only a `tools/call` may become a task (and only because the session declared
                // the extension).
                ResultType::Other(t) if t == RESULT_TYPE_TASK && method == methods::TOOLS_CALL => {
                    if options.return_task {
                        return Ok(answer);
                    }
                    let task = parse_task(answer, method)?;
                    let ended = self
                        .follow_task(method, task, &options, OnAbandon::Cancel)
                        .await?;
                    return ended
                        .into_outcome(&self.shared.options.error_codes)
                        .map(Payload::Value);
                }
                other => return Err(unexpected_result_type(method, &other)),
            }
            round += 1;
            if round > max_rounds {
                return Err(Error::protocol(format!(
                    "{method}: the server still asked for input after {max_rounds} rounds"
                ))
                .with_delivery(Delivery::Sent));
            }
            let asked: InputRequiredResult = answer.into_typed().map_err(|e| {
                Error::protocol(format!("{method}: invalid input_required result: {e}"))
            })?;
            if asked.input_requests.is_none() && asked.request_state.is_none() {
                return Err(Error::protocol(format!(
                    "{method}: the server asked for input without saying what (no inputRequests and no requestState)"
                ))
                .with_delivery(Delivery::Sent));
            }
            let deadline = options.deadline;
            let responses = match &asked.input_requests {
                Some(requests) => {
                    self.answer_input_requests(method, requests, deadline)
                        .await?
                }
                None => Map::new(),
            };
            retry_params = Some(with_input_responses(
                original.clone(),
                responses,
                asked.request_state,
            )?);
        }
    }

    /// One modern request; an `UnsupportedProtocolVersion` refusal is retried once when the
    /// server lists the version asked for, and otherwise reported naming both sides' versions.
    /// A `tools/call` refused with `HeaderMismatch` (the transport did not know the tool's
    /// `x-mcp-header` annotations, or they changed) re-lists the tools, which teaches the
    /// transport, and is sent once more.
    pub(super) async fn issue_modern(
        &self,
        method: &str,
        params: Option<Payload>,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        let retry = params.clone();
        match self.issue(method, params, options.clone()).await {
            Err(e) if names_our_version(&e) => self.issue(method, retry, options).await,
            Err(e)
                if e.code() == Some(error_codes::HEADER_MISMATCH)
                    && method == methods::TOOLS_CALL =>
            {
                tracing::debug!(error = %e, "tools/call refused for its headers; listing the tools again");
                let mut cursor: Option<String> = None;
                for _ in 0..crate::service::pagination::DEFAULT_MAX_PAGES {
                    let page = Payload::Value(match &cursor {
                        Some(c) => json!({ "cursor": c }),
                        None => json!({}),
                    });
                    let listed = self
                        .issue(methods::TOOLS_LIST, Some(page), options.clone())
                        .await?;
                    cursor = listed
                        .deserialize::<crate::types::ListToolsResult>()
                        .ok()
                        .and_then(|l| l.next_cursor);
                    if cursor.is_none() {
                        break;
                    }
                }
                self.issue(method, retry, options).await
            }
            Err(e) if e.code() == Some(error_codes::UNSUPPORTED_PROTOCOL_VERSION) => {
                let data = unsupported_data(&e);
                Err(no_mutual_version(
                    &data.supported,
                    data.requested
                        .as_deref()
                        .unwrap_or(ProtocolVersion::V2026_07_28.as_str()),
                )
                .with_delivery(Delivery::NotSent))
            }
            other => other,
        }
    }

    /// Answers every input request through the handler, the way server→client requests are
    /// answered in the legacy era.
    pub(super) async fn answer_input_requests(
        &self,
        method: &str,
        requests: &Map<String, Value>,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Map<String, Value>, Error> {
        let mut responses = Map::new();
        for (key, request) in requests {
            let input: crate::types::InputRequest = serde_json::from_value(request.clone())
                .map_err(|e| {
                    Error::protocol(format!(
                        "{method}: input request {key:?} is not a request: {e}"
                    ))
                })?;
            let as_request = Request::new(
                RequestId::String(key.as_str().into()),
                input.method.clone(),
                input.params.map(Payload::Value),
            );
            // Within the call's deadline, and never longer than a server request may take.
            let limit = self.shared.options.server_request_timeout;
            let mut until = crate::time::deadline_after(tokio::time::Instant::now(), limit);
            if let Some(deadline) = deadline {
                until = until.min(deadline);
            }
            let answered = tokio::time::timeout_at(
                until,
                super::server_requests::answer_server_request(&self.shared, as_request),
            )
            .await
            .map_err(|_| {
                Error::timeout(format!(
                    "{method}: the client did not answer input request {key:?} ({}) before the call's deadline",
                    input.method,
                ))
                .with_delivery(Delivery::Sent)
            })?;
            let value = answered
                .map_err(|e: ErrorObject| {
                    Error::new(
                        ErrorKind::Protocol,
                        format!(
                            "{method}: the client could not answer input request {key:?} ({}): {}",
                            input.method, e.message
                        ),
                    )
                    .with_delivery(Delivery::Sent)
                })?
                .into_value()
                .map_err(encode_error)?;
            responses.insert(key.clone(), value);
        }
        Ok(responses)
    }
}

impl SessionShared {
    /// The `_meta` additions of one request.
    pub(super) fn meta_additions(
        &self,
        progress_token: Option<i64>,
        modern: bool,
    ) -> MetaAdditions<'_> {
        MetaAdditions {
            progress_token,
            modern: modern.then_some(&self.modern_meta),
            log_level: if modern {
                *crate::sync::lock(&self.log_level)
            } else {
                None
            },
        }
    }
}

/// A result type `method` may not have: `input_required` outside `tools/call`, `prompts/get`
/// and `resources/read`, or one this client does not know.
fn unexpected_result_type(method: &str, found: &ResultType) -> Error {
    Error::protocol(format!(
        "{method}: the server answered with resultType {:?}, which {method} cannot have",
        found.as_str()
    ))
    .with_delivery(Delivery::Sent)
}

/// The `resultType` of a result (absent means complete). Only results that mention the member
/// are parsed.
pub fn result_type(answer: &Payload) -> ResultType {
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(rename = "resultType")]
        result_type: Option<String>,
    }
    match answer {
        Payload::Value(value) => value
            .get("resultType")
            .and_then(Value::as_str)
            .map_or(ResultType::Complete, ResultType::parse),
        other => {
            let text = other.to_json_string();
            if !text.contains("resultType") {
                return ResultType::Complete;
            }
            serde_json::from_str::<Typed>(&text)
                .ok()
                .and_then(|t| t.result_type)
                .map_or(ResultType::Complete, |t| ResultType::parse(&t))
        }
    }
}

/// The original parameters plus `inputResponses` and (exactly as received) `requestState`.
fn with_input_responses(
    original: Option<Payload>,
    responses: Map<String, Value>,
    request_state: Option<String>,
) -> Result<Payload, Error> {
    let mut params = match original {
        None => Map::new(),
        Some(payload) => match payload.into_value().map_err(encode_error)? {
            Value::Object(map) => map,
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidParams,
                    "request params must be a JSON object",
                ))
            }
        },
    };
    params.insert("inputResponses".into(), Value::Object(responses));
    match request_state {
        Some(state) => {
            params.insert("requestState".into(), Value::String(state));
        }
        None => {
            params.remove("requestState");
        }
    }
    Ok(Payload::Value(Value::Object(params)))
}

/// The same parameters as shared JSON text (cheap to clone).
fn shareable(params: Payload) -> Payload {
    match params {
        Payload::Shared(_) => params,
        Payload::Raw(raw) => Payload::Shared(crate::jsonrpc::SharedJson::from_valid_json(
            raw.get().to_owned(),
        )),
        Payload::Value(value) => Payload::Shared(crate::jsonrpc::SharedJson::from_valid_json(
            value.to_string(),
        )),
    }
}
