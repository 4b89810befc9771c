//! The methods the server answers itself: `initialize` (version negotiation, capabilities,
//! `--hang-on-initialize`), `server/discover` and the Tasks extension's `tasks/*`.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{Dispatch, FixtureServer, Reply};
use crate::jsonrpc::{params_object, req_str, RpcError};
use crate::{LATEST_PROTOCOL_VERSION, SERVER_NAME, SERVER_VERSION, SUPPORTED_PROTOCOL_VERSIONS};

/// What the fixture tells the model about itself.
const INSTRUCTIONS: &str =
    "Fixture MCP server for client tests. Tools: echo, add, slow, fail, crash, \
    trigger_list_changed, bump_resource, large, ask_roots, ask_sampling, ask_elicitation, log, record, job (a task for 2026-07-28 clients), slow_stats. \
    Resources: fixture://counter, fixture://static/hello, fixture://items/{id}. Prompt: greeting.";

impl FixtureServer {
    /// `tasks/get`, `tasks/update` or `tasks/cancel` (the request must declare the extension).
    pub(super) fn task_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
        era: Option<&crate::modern::RequestEra>,
    ) -> Result<Value, RpcError> {
        if !era.is_some_and(|e| e.tasks) {
            return Err(RpcError::new(
                crate::tasks::MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability",
            )
            .with_data(json!({"requiredCapabilities": {"extensions": {crate::tasks::TASKS_EXTENSION: {}}}})));
        }
        let params = crate::jsonrpc::params_object(params)?;
        match method {
            "tasks/get" => self.inner.tasks.get(&params),
            "tasks/update" => self.inner.tasks.update(&params),
            _ => self.inner.tasks.cancel(&params),
        }
    }

    /// The capabilities `initialize` and `server/discover` announce.
    fn capabilities() -> Value {
        json!({
            "tools": { "listChanged": true },
            "resources": { "subscribe": true, "listChanged": true },
            "prompts": { "listChanged": true },
            "logging": {},
            "completions": {}
        })
    }

    fn server_info() -> Value {
        json!({
            "name": SERVER_NAME,
            "title": "MCP fixture server",
            "version": SERVER_VERSION
        })
    }

    pub(super) fn discover(&self) -> Value {
        crate::modern::discover(Self::capabilities(), Self::server_info(), INSTRUCTIONS)
    }

    pub(super) fn initialize(&self, params: Option<&RawValue>) -> Dispatch {
        if self.inner.options.hang_on_initialize {
            tracing::debug!("--hang-on-initialize: not answering initialize");
            return Dispatch::Now(Reply::Silent);
        }
        let params = match params_object(params) {
            Ok(params) => params,
            Err(e) => return Dispatch::error(e),
        };
        let requested = match req_str(&params, "protocolVersion") {
            Ok(v) => v,
            Err(e) => return Dispatch::error(e),
        };
        let version = match &self.inner.options.protocol_version {
            Some(forced) => forced.clone(),
            None if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested) => requested.to_owned(),
            None => LATEST_PROTOCOL_VERSION.to_owned(),
        };
        {
            let mut state = self.state();
            state.negotiated_version = Some(version.clone());
            state.client_capabilities = params.get("capabilities").cloned();
        }
        Dispatch::result(json!({
            "protocolVersion": version,
            "capabilities": Self::capabilities(),
            "serverInfo": Self::server_info(),
            "instructions": INSTRUCTIONS
        }))
    }
}
