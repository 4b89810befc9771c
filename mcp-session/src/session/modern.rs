//! Requests in the modern era (2026-07-28): the methods the era removed mapped to what
//! replaces them, `input_required` results answered through the session's handler and the
//! request re-issued (multi round-trip requests), and version refusals retried once. A
//! `tools/call` the server runs as a task (the Tasks extension) is answered with the task's
//! handle: following it is the `mcp-tasks` layer's business, not the engine's.

use serde_json::{json, Map, Value};

use super::options::TASKS_EXTENSION;
use super::{ClientSession, RequestOptions};
use mcp_core::error::{Delivery, Error, ErrorKind};
use mcp_core::jsonrpc::Payload;
use mcp_core::types::{methods, InputRequiredResult, ResultType};

/// The `resultType` of the Tasks extension's task handle (`CreateTaskResult`): a `tools/call`
/// may be answered with one when the session declared the extension
/// ([`SessionOptions::tasks`](super::SessionOptions::tasks)), and a `tasks/get` answer may carry
/// it. The session hands it back as the answer; `mcp-tasks` follows it.
pub const RESULT_TYPE_TASK: &str = "task";

impl ClientSession {
    /// A request in the modern era: methods the era removed are mapped, and an
    /// `input_required` result is answered and the request re-issued, until a final result or
    /// [`SessionOptions::max_input_rounds`](super::SessionOptions).
    pub(super) async fn modern_call(
        &self,
        method: &str,
        params: Option<Payload>,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        match method {
            methods::PING => {
                self.round_trip(methods::SERVER_DISCOVER, None, options)
                    .await?;
                return Ok(Payload::Value(json!({})));
            }
            methods::LOGGING_SET_LEVEL => {
                let level = params
                    .as_ref()
                    .and_then(|p| {
                        p.deserialize::<mcp_core::types::SetLevelRequestParams>()
                            .ok()
                    })
                    .ok_or_else(|| {
                        Error::new(ErrorKind::InvalidParams, "logging/setLevel needs a level")
                            .with_delivery(Delivery::NotSent)
                    })?;
                *mcp_core::sync::lock(&self.shared.log_level) = Some(level.level);
                return Ok(Payload::Value(json!({})));
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                let uri = params
                    .as_ref()
                    .and_then(|p| {
                        p.deserialize::<mcp_core::types::SubscribeRequestParams>()
                            .ok()
                    })
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
        let options = options.with_deadline(mcp_core::time::deadline_after(
            tokio::time::Instant::now(),
            timeout,
        ));
        if !multi_round {
            let answer = self.modern_round_trip(method, params, options).await?;
            // `tasks/get` answers may carry the handle's own type; nothing else may.
            return match result_type(&answer) {
                ResultType::Complete => Ok(answer),
                ResultType::Other(t) if t == RESULT_TYPE_TASK && method == methods::TASKS_GET => {
                    Ok(answer)
                }
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
                .modern_round_trip(method, retry_params, options.clone())
                .await?;
            match result_type(&answer) {
                ResultType::Complete => return Ok(answer),
                ResultType::InputRequired => {}
                // Only a `tools/call` may become a task, and only where both sides declared the
                // extension; its handle is the call's answer.
                ResultType::Other(t)
                    if t == RESULT_TYPE_TASK
                        && method == methods::TOOLS_CALL
                        && self.shared.options.tasks =>
                {
                    if !self.server_offers_extension(TASKS_EXTENSION) {
                        return Err(Error::protocol(format!(
                            "{method}: the server answered with resultType \"task\" but does not \
                             offer the {TASKS_EXTENSION} extension in server/discover; its task is \
                             not followed"
                        ))
                        .with_delivery(Delivery::Sent));
                    }
                    return Ok(answer);
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
                // Boxed: a rare branch, and the common call's future stays small (it is moved
                // into a box per call).
                Some(requests) => {
                    Box::pin(super::input::answer_input_requests(
                        &*self.shared.handler,
                        method,
                        requests,
                        self.shared.options.server_request_timeout,
                        deadline,
                    ))
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
        // Typed payloads are complete results by contract (`Payload::Typed`).
        Payload::Typed(_) => ResultType::Complete,
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
        Some(payload) => match payload.into_value().map_err(Error::unencodable)? {
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
        Payload::Raw(raw) => Payload::Shared(mcp_core::jsonrpc::SharedJson::from_valid_json(
            raw.get().to_owned(),
        )),
        Payload::Value(value) => Payload::Shared(mcp_core::jsonrpc::SharedJson::from_valid_json(
            value.to_string(),
        )),
        typed @ Payload::Typed(_) => Payload::Shared(
            mcp_core::jsonrpc::SharedJson::from_valid_json(typed.to_json_string().into_owned()),
        ),
    }
}
