//! The 2026-07-28 input-required results (SEP-2322, "multi round-trip requests"): instead of
//! sending the client a request, a `tools/call` or `prompts/get` answers
//! `resultType: "input_required"` with the `inputRequests` it needs (keyed by names it
//! chooses) and, where it keeps state across rounds, a `requestState`; the client retries the
//! same request with `inputResponses` (the results, under the same keys) and the state echoed.
//!
//! Every round is answered from the request alone (the era has no sessions). A `requestState`
//! is `<tool>.<round>.<tag>`, where the tag is a keyed hash of the rest with a key drawn once
//! per process: a state the server did not issue (or one altered by the client) is refused
//! with `-32602`. SipHash with a random key stands in for an HMAC here — the fixture defends
//! against a conformance check flipping characters, not against an attacker, and needs no
//! crypto dependency for it.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::jsonrpc::{params_object, RpcError};
use crate::server::Dispatch;
use crate::tools::text_result;

const ELICITATION: &str = "test_input_required_result_elicitation";
const SAMPLING: &str = "test_input_required_result_sampling";
const LIST_ROOTS: &str = "test_input_required_result_list_roots";
const REQUEST_STATE: &str = "test_input_required_result_request_state";
const MULTIPLE_INPUTS: &str = "test_input_required_result_multiple_inputs";
const MULTI_ROUND: &str = "test_input_required_result_multi_round";
const TAMPERED_STATE: &str = "test_input_required_result_tampered_state";
const CAPABILITIES: &str = "test_input_required_result_capabilities";
/// The prompt that asks for input (`prompts/get`).
pub(super) const PROMPT: &str = "test_input_required_result_prompt";

/// The tool definitions.
pub(super) fn tools() -> Vec<Value> {
    let tool = |name: &str, description: &str| {
        json!({
            "name": name,
            "description": description,
            "inputSchema": { "type": "object", "properties": {} }
        })
    };
    vec![
        tool(ELICITATION, "Asks for the user's name (elicitation input request), then greets them."),
        tool(SAMPLING, "Asks the client's model a question (sampling input request), then answers with its text."),
        tool(LIST_ROOTS, "Asks for the client's roots (roots/list input request), then lists them."),
        tool(REQUEST_STATE, "Asks for a confirmation with a requestState, then answers state-ok once the state checks out."),
        tool(MULTIPLE_INPUTS, "Asks for an elicitation, a sampling and the roots at once (with a requestState)."),
        tool(MULTI_ROUND, "Asks in two rounds (name, then colour), the requestState evolving between them."),
        tool(TAMPERED_STATE, "Asks with an integrity-protected requestState and refuses an altered one with -32602."),
        tool(CAPABILITIES, "Asks only for what the request's client capabilities declare (elicitation, sampling, roots)."),
    ]
}

/// The prompt definition.
pub(super) fn prompt() -> Value {
    json!({
        "name": PROMPT,
        "description": "A prompt that asks for context (elicitation input request) before it is built.",
        "arguments": []
    })
}

fn elicitation(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { field: { "type": kind } },
                "required": [field]
            }
        }
    })
}

fn sampling(text: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
            "maxTokens": max_tokens
        }
    })
}

fn list_roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

/// An `InputRequiredResult` asking for `requests` (with `state`, if any).
fn input_required(requests: Vec<(&str, Value)>, state: Option<String>) -> Value {
    let requests: Map<String, Value> = requests
        .into_iter()
        .map(|(key, request)| (key.to_owned(), request))
        .collect();
    let mut result = json!({ "resultType": "input_required", "inputRequests": requests });
    if let (Some(state), Value::Object(map)) = (state, &mut result) {
        map.insert("requestState".into(), Value::String(state));
    }
    result
}

/// What a retried request carries: its `inputResponses` (an object, or absent) and
/// `requestState`.
struct Round {
    responses: Option<Map<String, Value>>,
    state: Option<String>,
    /// `_meta["io.modelcontextprotocol/clientCapabilities"]`: what the client can answer.
    capabilities: Map<String, Value>,
}

impl Round {
    fn of(params: Option<&RawValue>) -> Result<Round, RpcError> {
        let params = params_object(params)?;
        let responses = match params.get("inputResponses") {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => Some(map.clone()),
            Some(_) => return Err(RpcError::bad_field("inputResponses", "an object")),
        };
        let state = match params.get("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(state)) => Some(state.clone()),
            Some(_) => return Err(RpcError::bad_field("requestState", "a string")),
        };
        let capabilities = params
            .get("_meta")
            .and_then(|meta| meta.get("io.modelcontextprotocol/clientCapabilities"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        Ok(Round {
            responses,
            state,
            capabilities,
        })
    }

    fn declares(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(|c| !c.is_null())
    }

    /// The response under `key`, checked to be an object (`None`: not given).
    fn response(&self, key: &str) -> Result<Option<&Map<String, Value>>, RpcError> {
        match self.responses.as_ref().and_then(|r| r.get(key)) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(_) => Err(RpcError::bad_field(
                &format!("inputResponses.{key}"),
                "an object (the result of the input request)",
            )),
        }
    }

    /// The accepted content of an elicitation response under `key` (`None`: not given).
    fn elicited(&self, key: &str) -> Result<Option<Map<String, Value>>, RpcError> {
        let Some(response) = self.response(key)? else {
            return Ok(None);
        };
        match response.get("action").and_then(Value::as_str) {
            Some("accept") => match response.get("content") {
                Some(Value::Object(content)) => Ok(Some(content.clone())),
                None | Some(Value::Null) => Ok(Some(Map::new())),
                Some(_) => Err(RpcError::bad_field(
                    &format!("inputResponses.{key}.content"),
                    "an object",
                )),
            },
            Some("decline" | "cancel") => Ok(Some(Map::new())),
            _ => Err(RpcError::bad_field(
                &format!("inputResponses.{key}.action"),
                "\"accept\", \"decline\" or \"cancel\"",
            )),
        }
    }

    /// The text of a sampling response under `key` (`None`: not given).
    fn sampled(&self, key: &str) -> Result<Option<String>, RpcError> {
        let Some(response) = self.response(key)? else {
            return Ok(None);
        };
        match response.get("content") {
            Some(Value::Object(content)) => Ok(Some(
                content
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            )),
            _ => Err(RpcError::bad_field(
                &format!("inputResponses.{key}.content"),
                "a content object",
            )),
        }
    }

    /// The root URIs of a `roots/list` response under `key` (`None`: not given).
    fn roots(&self, key: &str) -> Result<Option<Vec<String>>, RpcError> {
        let Some(response) = self.response(key)? else {
            return Ok(None);
        };
        match response.get("roots") {
            Some(Value::Array(roots)) => Ok(Some(
                roots
                    .iter()
                    .filter_map(|root| root.get("uri").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect(),
            )),
            _ => Err(RpcError::bad_field(
                &format!("inputResponses.{key}.roots"),
                "an array",
            )),
        }
    }

    /// The round the echoed state says this is (0: no state), refusing a state the server did
    /// not issue for `tool`.
    fn checked_round(&self, tool: &str) -> Result<u32, RpcError> {
        match &self.state {
            None => Ok(0),
            Some(state) => verify_state(tool, state).ok_or_else(|| {
                RpcError::invalid_params(
                    "Invalid params: requestState failed its integrity check (altered, or not issued by this server)",
                )
                .with_data(json!({ "requestState": state }))
            }),
        }
    }
}

/// The per-process key of the `requestState` tags.
fn state_key() -> &'static RandomState {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    KEY.get_or_init(RandomState::new)
}

fn tag(payload: &str) -> String {
    let mut hasher = state_key().build_hasher();
    hasher.write(payload.as_bytes());
    format!("{:016x}", hasher.finish())
}

/// A `requestState` for round `round` of `tool`.
fn issue_state(tool: &str, round: u32) -> String {
    let payload = format!("{tool}.{round}");
    let tag = tag(&payload);
    format!("{payload}.{tag}")
}

/// The round of a `requestState` issued for `tool`, if it is intact.
fn verify_state(tool: &str, state: &str) -> Option<u32> {
    let (payload, tag_text) = state.rsplit_once('.')?;
    if tag(payload) != tag_text {
        return None;
    }
    let (issued_for, round) = payload.rsplit_once('.')?;
    if issued_for != tool {
        return None;
    }
    round.parse().ok()
}

/// Calls the input-required tool `name` (any other name: unknown tool).
pub(super) fn call(name: &str, params: Option<&RawValue>) -> Result<Dispatch, RpcError> {
    let round = Round::of(params)?;
    let result = match name {
        ELICITATION => match round.elicited("user_name")? {
            Some(content) => {
                let name = content
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("stranger");
                text_result(format!("Hello, {name}!"))
            }
            None => input_required(
                vec![(
                    "user_name",
                    elicitation("What is your name?", "name", "string"),
                )],
                None,
            ),
        },
        SAMPLING => match round.sampled("capital_question")? {
            Some(text) => text_result(format!("The model answered: {text}")),
            None => input_required(
                vec![(
                    "capital_question",
                    sampling("What is the capital of France?", 100),
                )],
                None,
            ),
        },
        LIST_ROOTS => match round.roots("client_roots")? {
            Some(roots) => text_result(format!("Client roots: {}", roots.join(", "))),
            None => input_required(vec![("client_roots", list_roots())], None),
        },
        REQUEST_STATE | TAMPERED_STATE => {
            let state_round = round.checked_round(name)?;
            match round.elicited("confirm")? {
                Some(content) if state_round == 1 => {
                    let ok = content.get("ok").cloned().unwrap_or(Value::Null);
                    text_result(format!("state-ok: the requestState checked out; ok={ok}"))
                }
                _ => input_required(
                    vec![("confirm", elicitation("Please confirm", "ok", "boolean"))],
                    Some(issue_state(name, 1)),
                ),
            }
        }
        MULTIPLE_INPUTS => {
            let state_round = round.checked_round(name)?;
            let user = round.elicited("user_name")?;
            let greeting = round.sampled("greeting")?;
            let roots = round.roots("client_roots")?;
            match (state_round, user, greeting, roots) {
                (1, Some(user), Some(greeting), Some(roots)) => {
                    let name = user
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("stranger");
                    text_result(format!(
                        "state-ok: name={name}, greeting={greeting}, roots={}",
                        roots.join(", ")
                    ))
                }
                _ => input_required(
                    vec![
                        (
                            "user_name",
                            elicitation("What is your name?", "name", "string"),
                        ),
                        ("greeting", sampling("Generate a greeting", 50)),
                        ("client_roots", list_roots()),
                    ],
                    Some(issue_state(name, 1)),
                ),
            }
        }
        MULTI_ROUND => {
            let step1 = || {
                input_required(
                    vec![(
                        "step1",
                        elicitation("Step 1: What is your name?", "name", "string"),
                    )],
                    Some(issue_state(MULTI_ROUND, 1)),
                )
            };
            match round.checked_round(name)? {
                1 => match round.elicited("step1")? {
                    Some(_) => input_required(
                        vec![(
                            "step2",
                            elicitation("Step 2: What is your favorite color?", "color", "string"),
                        )],
                        Some(issue_state(MULTI_ROUND, 2)),
                    ),
                    None => step1(),
                },
                2 => match round.elicited("step2")? {
                    Some(content) => {
                        let color = content
                            .get("color")
                            .and_then(Value::as_str)
                            .unwrap_or("none");
                        text_result(format!("Both rounds done; favorite color: {color}"))
                    }
                    None => step1(),
                },
                _ => step1(),
            }
        }
        CAPABILITIES => {
            let mut requests = Vec::new();
            if round.declares("elicitation") && round.elicited("user_name")?.is_none() {
                requests.push((
                    "user_name",
                    elicitation("What is your name?", "name", "string"),
                ));
            }
            if round.declares("sampling") && round.sampled("greeting")?.is_none() {
                requests.push(("greeting", sampling("Generate a greeting", 50)));
            }
            if round.declares("roots") && round.roots("client_roots")?.is_none() {
                requests.push(("client_roots", list_roots()));
            }
            if requests.is_empty() {
                text_result("Done: every input the client can give was given (or it can give none)")
            } else {
                input_required(requests, None)
            }
        }
        other => return Err(RpcError::invalid_params(format!("Unknown tool: {other}"))),
    };
    Ok(Dispatch::result(result))
}

/// `prompts/get` of [`PROMPT`]: asks for context, then builds the prompt with it.
pub(super) fn get_prompt(params: Option<&RawValue>) -> Result<Value, RpcError> {
    let round = Round::of(params)?;
    Ok(match round.elicited("user_context")? {
        Some(content) => {
            let context = content
                .get("context")
                .and_then(Value::as_str)
                .unwrap_or_default();
            json!({
                "description": "A prompt built with the context the user gave",
                "messages": [{
                    "role": "user",
                    "content": { "type": "text", "text": format!("Context: {context}") }
                }]
            })
        }
        None => input_required(
            vec![(
                "user_context",
                elicitation("What context should the prompt use?", "context", "string"),
            )],
            None,
        ),
    })
}
