//! What the server answers to each request: the handshakes of both eras, the lists, and the
//! calls (`tools/call`, `resources/read`, `prompts/get`) that run a handler. `tools/call` is
//! read straight from the request's JSON text, borrowing the name and arguments, since it is
//! every call's path.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use mcp_core::jsonrpc::{ErrorObject, Payload, Request, RequestId};
use mcp_core::types::{
    methods, ClientCapabilities, ListenRequestParams, NotificationFilter, SetLevelRequestParams,
};
use mcp_core::Era;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::arguments::Arguments;
use crate::call::{Handled, Run};
use crate::catalog::ResourceMatch;
use crate::connection::Connection;
use crate::context::{CallState, RequestContext};
use crate::era::{self, ClientAbilities, MetaFields, RequestFacts, SessionMeta};
use crate::error::{invalid_request_params, method_not_found, resource_not_found, ToolError};
use crate::resource::{label_contents, ReadRequest};
use crate::server::MethodHandler;
use crate::tool::Started;

/// How the server answers one request.
pub(crate) enum Answer {
    /// At once.
    Now(Result<Payload, ErrorObject>),
    /// When the handler's run ends.
    Later(Run),
    /// Never, while the stream stays open (`subscriptions/listen`).
    Listen(NotificationFilter),
}

/// A call that continues after the client's input (modern era): the `requestState` it got
/// and the client's answers.
struct Resumption {
    request_state: String,
    responses: Map<String, Value>,
}

impl Resumption {
    fn of(request_state: Option<String>, responses: Option<Map<String, Value>>) -> Option<Self> {
        request_state.map(|request_state| Resumption {
            request_state,
            responses: responses.unwrap_or_default(),
        })
    }
}

/// Routes one request; `session` is what the session added to its `_meta` when it came in
/// place (on the ordinary path it is in the parameters).
pub(crate) fn answer(
    connection: &Arc<Connection>,
    request: Request,
    session: Option<&SessionMeta>,
) -> Answer {
    let Request {
        id, method, params, ..
    } = request;
    if method == methods::TOOLS_CALL {
        return tools_call(connection, id, params, session);
    }
    let meta = match read_params::<MetaOnly>(&method, params.as_ref()) {
        Ok(only) => RequestFacts::new(only.meta, session),
        Err(e) => return Answer::Now(Err(e)),
    };
    let server = &connection.server;
    if let Err(e) = meta.check_version(server.eras) {
        return Answer::Now(Err(e));
    }
    // A modern answer of a server served on a wire gets what the revision requires of it: one
    // given now here, one given later when it is sent on (`Connection::spawn_call`).
    if meta.is_modern() && server.settings.served_on_a_wire {
        return match route(connection, id, &method, params, meta) {
            Answer::Now(outcome) => Answer::Now(era::complete_modern(&method, outcome)),
            later => later,
        };
    }
    route(connection, id, &method, params, meta)
}

/// The answer to a request of `method`, its facts read.
fn route(
    connection: &Arc<Connection>,
    id: RequestId,
    method: &str,
    params: Option<Payload>,
    meta: RequestFacts,
) -> Answer {
    let server = &connection.server;
    let now = |answer: Result<Value, ErrorObject>| Answer::Now(answer.map(Payload::Value));
    match method {
        methods::PING => now(Ok(Value::Object(Map::new()))),
        methods::INITIALIZE => now(initialize(connection, params.as_ref())),
        methods::SERVER_DISCOVER => now(discover(connection)),
        methods::TOOLS_LIST => now(server.catalog().list_tools()),
        methods::RESOURCES_LIST => now(server.catalog().list_resources()),
        methods::RESOURCES_TEMPLATES_LIST => now(server.catalog().list_templates()),
        methods::PROMPTS_LIST => now(server.catalog().list_prompts()),
        methods::RESOURCES_READ => read_resource(connection, id, params.as_ref(), meta),
        methods::PROMPTS_GET => get_prompt(connection, id, params.as_ref(), meta),
        methods::LOGGING_SET_LEVEL => {
            now(
                read_params::<SetLevelRequestParams>(method, params.as_ref()).map(|p| {
                    connection.set_log_level(p.level);
                    Value::Object(Map::new())
                }),
            )
        }
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE
            if server.extensions.subscriptions.is_some() =>
        {
            #[derive(Deserialize)]
            struct SubscribeParams {
                uri: String,
            }
            now(
                read_params::<SubscribeParams>(method, params.as_ref()).map(|p| {
                    connection.subscription(&p.uri, method == methods::RESOURCES_SUBSCRIBE);
                    Value::Object(Map::new())
                }),
            )
        }
        methods::SUBSCRIPTIONS_LISTEN if server.eras.modern() => {
            match read_params::<ListenRequestParams>(method, params.as_ref()) {
                Ok(p) => Answer::Listen(p.notifications),
                Err(e) => now(Err(e)),
            }
        }
        other => match server.extensions.methods.get(other) {
            Some(handler) => extension_method(connection, id, other, params, meta, handler),
            None => now(Err(method_not_found(other, ""))),
        },
    }
}

/// A method the server's builder added ([`LocalServerBuilder::method`](crate::LocalServerBuilder::method)).
fn extension_method(
    connection: &Arc<Connection>,
    id: RequestId,
    method: &str,
    params: Option<Payload>,
    facts: RequestFacts,
    handler: &MethodHandler,
) -> Answer {
    let params = match params.map(|p| p.deserialize::<Value>()).transpose() {
        Ok(params) => params,
        Err(e) => return Answer::Now(Err(invalid_request_params(method, e))),
    };
    let call = CallState::new(connection.clone(), id, facts, Handled::method(method));
    start(call, |context| Ok(handler(context, params)))
}

#[derive(Deserialize)]
struct MetaOnly {
    #[serde(rename = "_meta")]
    meta: Option<MetaFields>,
}

/// Reads a request's parameters (absent ones as an empty object).
fn read_params<P: DeserializeOwned>(
    method: &str,
    params: Option<&Payload>,
) -> Result<P, ErrorObject> {
    let read = match params {
        Some(params) => params.deserialize(),
        None => serde_json::from_str("{}"),
    };
    read.map_err(|e| invalid_request_params(method, e))
}

fn initialize(connection: &Connection, params: Option<&Payload>) -> Result<Value, ErrorObject> {
    let server = &connection.server;
    if !server.eras.legacy() {
        return Err(method_not_found(
            methods::INITIALIZE,
            "this server speaks 2026-07-28 only",
        ));
    }
    #[derive(Deserialize)]
    struct InitializeParams {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
        #[serde(default)]
        capabilities: ClientCapabilities,
    }
    let params: InitializeParams = read_params(methods::INITIALIZE, params)?;
    let capabilities = server.capabilities();
    let (version, result) = era::initialize(
        &params.protocol_version,
        &server.info,
        capabilities,
        server.instructions.as_deref(),
    )?;
    tracing::debug!(connection = connection.id, %version, "in-process session initialized");
    connection.opened(Era::Legacy, Some(ClientAbilities::of(&params.capabilities)));
    Ok(result)
}

fn discover(connection: &Connection) -> Result<Value, ErrorObject> {
    let server = &connection.server;
    if !server.eras.modern() {
        return Err(method_not_found(
            methods::SERVER_DISCOVER,
            "this server speaks the legacy protocol only",
        ));
    }
    connection.opened(Era::Modern, None);
    let capabilities = server.capabilities();
    era::discover(
        server.eras,
        &server.info,
        capabilities,
        server.instructions.as_deref(),
    )
}

/// `tools/call` parameters, borrowed from the request's JSON text.
#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta")]
    meta: Option<MetaFields>,
    #[serde(rename = "inputResponses")]
    input_responses: Option<Map<String, Value>>,
    #[serde(rename = "requestState")]
    request_state: Option<String>,
}

fn tools_call(
    connection: &Arc<Connection>,
    id: RequestId,
    params: Option<Payload>,
    session: Option<&SessionMeta>,
) -> Answer {
    let text = match &params {
        Some(Payload::Raw(raw)) => raw.get(),
        Some(Payload::Shared(shared)) => shared.as_str(),
        Some(Payload::Value(_) | Payload::Typed(_)) => {
            return tools_call_from_value(connection, id, params, session)
        }
        None => {
            return Answer::Now(Err(invalid_request_params(
                methods::TOOLS_CALL,
                "the parameters are missing",
            )))
        }
    };
    let call: CallParams<'_> = match serde_json::from_str(text) {
        Ok(call) => call,
        Err(e) => return Answer::Now(Err(invalid_request_params(methods::TOOLS_CALL, e))),
    };
    let arguments = match call.arguments {
        Some(raw) => Arguments::Text(raw),
        None => Arguments::Absent,
    };
    let resume = Resumption::of(call.request_state, call.input_responses);
    let facts = RequestFacts::new(call.meta, session);
    start_tool(connection, id, &call.name, arguments, facts, resume)
}

/// `tools/call` with parameters built in memory: taken apart without copying the arguments.
fn tools_call_from_value(
    connection: &Arc<Connection>,
    id: RequestId,
    params: Option<Payload>,
    session: Option<&SessionMeta>,
) -> Answer {
    let invalid =
        |reason: &str| Answer::Now(Err(invalid_request_params(methods::TOOLS_CALL, reason)));
    let Some(Ok(Value::Object(mut params))) = params.map(Payload::into_value) else {
        return invalid("the parameters must be a JSON object");
    };
    let Some(Value::String(name)) = params.remove("name") else {
        return invalid("`name` must be a string");
    };
    let own = match params.get("_meta").map(MetaFields::deserialize) {
        None => None,
        Some(Ok(meta)) => Some(meta),
        Some(Err(e)) => return invalid(&format!("`_meta`: {e}")),
    };
    let facts = RequestFacts::new(own, session);
    let request_state = match params.remove("requestState") {
        None => None,
        Some(Value::String(state)) => Some(state),
        Some(_) => return invalid("`requestState` must be a string"),
    };
    let responses = match params.remove("inputResponses") {
        None => None,
        Some(Value::Object(responses)) => Some(responses),
        Some(_) => return invalid("`inputResponses` must be an object"),
    };
    let arguments = match params.remove("arguments") {
        None => Arguments::Absent,
        Some(value) => Arguments::Value(value),
    };
    start_tool(
        connection,
        id,
        &name,
        arguments,
        facts,
        Resumption::of(request_state, responses),
    )
}

fn start_tool(
    connection: &Arc<Connection>,
    id: RequestId,
    name: &str,
    arguments: Arguments<'_>,
    facts: RequestFacts,
    resume: Option<Resumption>,
) -> Answer {
    if let Err(e) = facts.check_version(connection.server.eras) {
        return Answer::Now(Err(e));
    }
    if let Some(resume) = resume {
        return resume_call(connection, id, name, resume, facts);
    }
    let Some(entry) = connection.server.catalog().tool(name) else {
        return Answer::Now(Err(ErrorObject::invalid_params(format!(
            "Unknown tool: {name}"
        ))));
    };
    let call = CallState::new(
        connection.clone(),
        id,
        facts,
        Handled::tool(entry.name.clone()),
    );
    let handled = call.handled.clone();
    start(call, |context| {
        (entry.tool.handler)(arguments, context, &handled)
    })
}

/// Starts a handler: its synchronous part (reading the arguments, the handler's code before its
/// `async` block) runs here, with panics caught as they are while the handler runs.
fn start(
    call: Arc<CallState>,
    start: impl FnOnce(RequestContext) -> Result<Started, ToolError>,
) -> Answer {
    let context = RequestContext { call: call.clone() };
    match std::panic::catch_unwind(AssertUnwindSafe(|| start(context))) {
        Ok(Ok(outcome)) => Answer::Later(Run::new(call, outcome)),
        Ok(Err(error)) => Answer::Now(call.handled.answer(Ok(Err(error)))),
        Err(panic) => Answer::Now(call.handled.answer(Err(panic))),
    }
}

/// A modern call the client re-issued with the answers to its questions.
fn resume_call(
    connection: &Connection,
    id: RequestId,
    name: &str,
    resume: Resumption,
    facts: RequestFacts,
) -> Answer {
    let Some(parked) = connection.unpark(&resume.request_state) else {
        return Answer::Now(Err(ErrorObject::invalid_params(format!(
            "requestState {:?} is unknown or expired",
            resume.request_state
        ))));
    };
    match parked.resume(name, resume.responses, id, facts.progress_token) {
        Ok(run) => Answer::Later(run),
        Err(error) => Answer::Now(Err(error)),
    }
}

fn read_resource(
    connection: &Arc<Connection>,
    id: RequestId,
    params: Option<&Payload>,
    facts: RequestFacts,
) -> Answer {
    #[derive(Deserialize)]
    struct ReadParams {
        uri: String,
        #[serde(rename = "inputResponses")]
        input_responses: Option<Map<String, Value>>,
        #[serde(rename = "requestState")]
        request_state: Option<String>,
    }
    let params: ReadParams = match read_params(methods::RESOURCES_READ, params) {
        Ok(params) => params,
        Err(e) => return Answer::Now(Err(e)),
    };
    if let Some(resume) = Resumption::of(params.request_state, params.input_responses) {
        return resume_call(connection, id, &params.uri, resume, facts);
    }
    let found = connection.server.catalog().resource(&params.uri);
    let Some(found) = found.or_else(|| {
        let fallback = connection.server.extensions.read_fallback.clone()?;
        Some(ResourceMatch {
            handler: fallback,
            request: ReadRequest::new(params.uri.clone(), Default::default()),
            mime_type: "text/plain".to_owned(),
        })
    }) else {
        return Answer::Now(Err(resource_not_found(&params.uri)));
    };
    let call = CallState::new(
        connection.clone(),
        id,
        facts,
        Handled::resource(&params.uri),
    );
    start(call, |context| {
        let reading = (found.handler)(found.request, context);
        let mime_type = found.mime_type;
        let labelled: Started = Box::pin(async move {
            // Read results are JSON (`resource.rs`); only those get labelled.
            reading.await.map(|read| match read {
                Payload::Value(read) => Payload::Value(label_contents(read, &mime_type)),
                other => other,
            })
        });
        Ok(labelled)
    })
}

fn get_prompt(
    connection: &Arc<Connection>,
    id: RequestId,
    params: Option<&Payload>,
    facts: RequestFacts,
) -> Answer {
    #[derive(Deserialize)]
    struct GetParams {
        name: String,
        arguments: Option<Map<String, Value>>,
        #[serde(rename = "inputResponses")]
        input_responses: Option<Map<String, Value>>,
        #[serde(rename = "requestState")]
        request_state: Option<String>,
    }
    let params: GetParams = match read_params(methods::PROMPTS_GET, params) {
        Ok(params) => params,
        Err(e) => return Answer::Now(Err(e)),
    };
    if let Some(resume) = Resumption::of(params.request_state, params.input_responses) {
        return resume_call(connection, id, &params.name, resume, facts);
    }
    let Some(entry) = connection.server.catalog().prompt(&params.name) else {
        return Answer::Now(Err(ErrorObject::invalid_params(format!(
            "Unknown prompt: {}",
            params.name
        ))));
    };
    let call = CallState::new(
        connection.clone(),
        id,
        facts,
        Handled::prompt(entry.name.clone()),
    );
    let arguments = match params.arguments {
        Some(map) => Arguments::Value(Value::Object(map)),
        None => Arguments::Absent,
    };
    let handled = call.handled.clone();
    start(call, |context| {
        (entry.prompt.handler)(arguments, context, &handled)
    })
}
