//! What a downstream request becomes upstream: a tool call through the server's whole stack
//! (with progress relayed back, and cancelled when the downstream call is), a prompt, a
//! resource read, a completion — each routed by the names the downstream client sees.

use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;

use mcp_client::McpClient;
use mcp_core::jsonrpc::{codes, ErrorObject};
use mcp_core::types::{
    methods, CallToolResult, GetPromptResult, LoggingMessageNotificationParams, ReadResourceResult,
};
use mcp_core::{Error, ErrorKind, McpServiceExt, Payload, RequestOptions};
use mcp_transport_local::{ReadRequest, RequestContext, ToolError};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::relay::Relay;

/// How many progress reports of one call may wait to be relayed; past that the oldest news is
/// dropped (a later report supersedes it).
const PROGRESS_QUEUE: usize = 32;

/// Where each name the downstream client sees leads.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// Prompt name served → where it leads.
    pub(crate) prompts: HashMap<String, PromptRoute>,
    /// Resource URI → server.
    pub(crate) resources: HashMap<String, String>,
    /// Resource template (`uriTemplate`) → server.
    pub(crate) templates: HashMap<String, String>,
}

/// Where a prompt leads.
#[derive(Debug, Clone)]
pub(crate) struct PromptRoute {
    /// The configured server.
    pub(crate) server: String,
    /// The facade's qualified name.
    pub(crate) qualified: String,
    /// The name on the server.
    pub(crate) original: String,
}

/// The facade and the routes, shared by every handler the gateway registers.
pub(crate) struct Upstream {
    pub(crate) client: McpClient,
    pub(crate) routes: RwLock<Routes>,
    pub(crate) relay: Relay,
}

impl Upstream {
    pub(crate) fn new(client: McpClient, relay: Relay) -> Upstream {
        Upstream {
            client,
            routes: RwLock::new(Routes::default()),
            relay,
        }
    }

    fn routes(&self) -> std::sync::RwLockReadGuard<'_, Routes> {
        self.routes.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Calls the tool the facade knows as `qualified`, relaying its progress to the downstream
    /// caller when it asked for progress. A failure is the tool's error result, in the words
    /// agents are shown (`tool X is unavailable: server not responding`), so only that
    /// server's tools fail while it is down.
    pub(crate) async fn call_tool(
        &self,
        context: RequestContext,
        server: &str,
        qualified: &str,
        arguments: Map<String, Value>,
    ) -> CallToolResult {
        let mut options = RequestOptions::new();
        let mut progress = None;
        if context.progress_token().is_some() {
            let (reports, receiver) = mpsc::channel(PROGRESS_QUEUE);
            options = options.on_progress(move |p| {
                let _ = reports.try_send((p.progress, p.total, p.message.clone()));
            });
            progress = Some(receiver);
        }
        // The server's requests and logs meanwhile are this call's.
        let (tracked, mut logs) = self.relay.track(server, context.clone());
        let call = tracked.scope(self.client.call_tool_with(
            qualified,
            Some(Value::Object(arguments)),
            options,
        ));
        tokio::pin!(call);
        let outcome = loop {
            let report = async {
                match progress.as_mut() {
                    Some(reports) => reports.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                outcome = &mut call => break outcome,
                Some(log) = logs.recv() => relay_log(&context, log).await,
                Some((done, total, message)) = report => {
                    context.progress(done, total, message.as_deref()).await;
                }
            }
        };
        // What came with the answer goes before it.
        while let Ok(log) = logs.try_recv() {
            relay_log(&context, log).await;
        }
        if let Some(reports) = progress.as_mut() {
            while let Ok((done, total, message)) = reports.try_recv() {
                context.progress(done, total, message.as_deref()).await;
            }
        }
        outcome.unwrap_or_else(|e| failed_call(&e))
    }

    /// Gets the prompt served as `name`.
    pub(crate) async fn get_prompt(
        &self,
        context: RequestContext,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, ToolError> {
        let route = self.routes().prompts.get(name).cloned().ok_or_else(|| {
            ToolError::rpc(ErrorObject::invalid_params(format!(
                "Unknown prompt: {name}"
            )))
        })?;
        let qualified = route.qualified;
        // The server's requests meanwhile are this call's (a prompt's logs are not relayed).
        let (tracked, _logs) = self.relay.track(&route.server, context);
        let arguments: BTreeMap<String, String> = arguments
            .into_iter()
            .map(|(key, value)| match value {
                Value::String(text) => (key, text),
                other => (key, other.to_string()),
            })
            .collect();
        let arguments = (!arguments.is_empty()).then_some(arguments);
        tracked
            .scope(self.client.get_prompt(&qualified, arguments))
            .await
            .map_err(|e| rpc_error(&e))
    }

    /// Reads a resource: from the server that listed it (or its template), else from the one
    /// server whose list or templates match the URI.
    pub(crate) async fn read_resource(
        &self,
        server: Option<&str>,
        request: ReadRequest,
    ) -> Result<ReadResourceResult, ToolError> {
        let uri = request.uri();
        let listed = match server {
            Some(_) => None,
            None => self.routes().resources.get(uri).cloned(),
        };
        let server = server.or(listed.as_deref());
        self.client
            .read_resource(server, uri)
            .await
            .map(|read| ReadResourceResult::clone(&read))
            .map_err(|e| read_error(&e, uri))
    }

    /// Subscribes to `uri` upstream (or ends the subscription): at the server that listed it,
    /// else the one the facade finds. A failure is logged: the downstream subscriber was
    /// already told yes, and gets no updates.
    pub(crate) async fn subscription(&self, uri: &str, subscribe: bool) {
        let server = self.routes().resources.get(uri).cloned();
        let done = match subscribe {
            true => self.client.subscribe_resource(server.as_deref(), uri).await,
            false => {
                self.client
                    .unsubscribe_resource(server.as_deref(), uri)
                    .await
            }
        };
        if let Err(e) = done {
            tracing::warn!(uri, subscribe, error = %e, "the gateway could not change an upstream subscription");
        }
    }

    /// `completion/complete`: to the server of the prompt or resource template it refers to,
    /// with the prompt's own name.
    pub(crate) async fn complete(&self, params: Option<Value>) -> Result<Value, ToolError> {
        let mut params = params.unwrap_or_default();
        // The downstream request's own metadata (its progress token, its era's fields) is not
        // the upstream request's: the session adds what that one needs.
        if let Some(object) = params.as_object_mut() {
            object.remove("_meta");
        }
        let reference = params.get("ref").cloned().unwrap_or_default();
        let server = {
            let routes = self.routes();
            match reference.get("type").and_then(Value::as_str) {
                Some("ref/prompt") => {
                    let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
                    let route = routes.prompts.get(name).ok_or_else(|| {
                        ToolError::rpc(ErrorObject::invalid_params(format!(
                            "Unknown prompt: {name}"
                        )))
                    })?;
                    if let Some(slot) = params.get_mut("ref") {
                        slot["name"] = Value::String(route.original.clone());
                    }
                    route.server.clone()
                }
                Some("ref/resource") => {
                    let uri = reference.get("uri").and_then(Value::as_str).unwrap_or("");
                    routes
                        .templates
                        .get(uri)
                        .or_else(|| routes.resources.get(uri))
                        .cloned()
                        .ok_or_else(|| {
                            ToolError::rpc(ErrorObject::invalid_params(format!(
                                "no server offers the resource or template {uri:?}"
                            )))
                        })?
                }
                _ => {
                    return Err(ToolError::rpc(ErrorObject::invalid_params(
                        "completion/complete: `ref` must be a ref/prompt or a ref/resource",
                    )))
                }
            }
        };
        let service = self.client.service(&server).ok_or_else(|| {
            ToolError::rpc(ErrorObject::internal(format!(
                "the server {server:?} is gone"
            )))
        })?;
        let params = Payload::from_serialize(&params)
            .map_err(|e| ToolError::rpc(ErrorObject::internal(e.to_string())))?;
        let answer = service
            .request(
                methods::COMPLETION_COMPLETE,
                Some(params),
                RequestOptions::new(),
            )
            .await
            .map_err(|e| rpc_error(&e))?;
        answer
            .deserialize::<Value>()
            .map_err(|e| ToolError::rpc(ErrorObject::internal(e.to_string())))
    }
}

/// An upstream server's log, to the downstream client of the call it came during.
async fn relay_log(context: &RequestContext, log: LoggingMessageNotificationParams) {
    context
        .log(log.level, log.logger.as_deref(), log.data)
        .await;
}

/// A tool call that failed on its way (the server down, the breaker open, a timeout): an error
/// result in the words agents are shown.
fn failed_call(error: &Error) -> CallToolResult {
    let result = serde_json::json!({
        "content": [{ "type": "text", "text": error.agent_message() }],
        "isError": true,
    });
    serde_json::from_value(result).unwrap_or_else(|_| CallToolResult {
        content: Vec::new(),
        structured_content: None,
        is_error: Some(true),
        extra: Default::default(),
    })
}

/// A read that failed: "resource not found" (with the URI, as servers give it) when the
/// server said so or no server offers the URI; else as [`rpc_error`].
fn read_error(error: &Error, uri: &str) -> ToolError {
    let not_found = error.code() == Some(codes::RESOURCE_NOT_FOUND)
        || (error.code().is_none() && error.kind() == ErrorKind::Resource);
    if !not_found {
        return rpc_error(error);
    }
    let mut object = ErrorObject::new(
        codes::RESOURCE_NOT_FOUND,
        format!("Resource not found: {uri}"),
    );
    object.data = Some(serde_json::json!({ "uri": uri }));
    ToolError::rpc(object)
}

/// A request that failed upstream, as the JSON-RPC error the downstream client gets: the
/// server's own code and words when it answered with an error, else the sentence agents are
/// shown (nothing of the gateway's transports or addresses).
fn rpc_error(error: &Error) -> ToolError {
    match error.code() {
        Some(code) => ToolError::rpc(ErrorObject::new(code, error.message().to_owned())),
        None => ToolError::rpc(ErrorObject::internal(error.agent_message())),
    }
}
