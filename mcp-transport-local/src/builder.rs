//! [`LocalServerBuilder`]: a server's identity, its tools, resources and prompts, which eras
//! it speaks, and its limits.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_core::jsonrpc::Payload;
use mcp_core::types::{Implementation, ServerCapabilities};
use serde_json::Value;

use crate::catalog::Catalog;
use crate::context::RequestContext;
use crate::era::Eras;
use crate::error::BuildError;
use crate::error::ToolError;
use crate::prompt::LocalPrompt;
use crate::resource::{
    read_handler, IntoReadResult, LocalResource, LocalResourceTemplate, ReadRequest,
};
use crate::server::{Extensions, LocalServer, MethodHandler, Settings, Subscriptions};
use crate::tool::{LocalTool, Started};

/// Builds a [`LocalServer`] (see [`LocalServer::builder`]).
#[must_use = "a builder does nothing until `build` is called"]
pub struct LocalServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    eras: Eras,
    settings: Settings,
    tools: Vec<LocalTool>,
    resources: Vec<LocalResource>,
    templates: Vec<LocalResourceTemplate>,
    prompts: Vec<LocalPrompt>,
    extensions: Extensions,
}

impl LocalServerBuilder {
    pub(crate) fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        LocalServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            eras: Eras::default(),
            settings: Settings {
                answer_in_place: true,
                queue_capacity: 1024,
                client_request_timeout: Duration::from_secs(600),
                input_timeout: Duration::from_secs(600),
                served_on_a_wire: false,
            },
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            extensions: Extensions::default(),
        }
    }

    /// Guidance for the model, sent in `initialize` and `server/discover`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// A human-readable name of the server.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Registers a tool.
    pub fn tool(mut self, tool: LocalTool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Registers a resource.
    pub fn resource(mut self, resource: LocalResource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Registers a resource template.
    pub fn resource_template(mut self, template: LocalResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Registers a prompt.
    pub fn prompt(mut self, prompt: LocalPrompt) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Which eras the server speaks (default: both).
    pub fn eras(mut self, eras: Eras) -> Self {
        self.eras = eras;
        self
    }

    /// How long a server→client request (legacy era: elicitation, sampling, roots) waits for
    /// the client's answer (default: 10 min, a human may be answering).
    pub fn client_request_timeout(mut self, timeout: Duration) -> Self {
        self.settings.client_request_timeout = timeout;
        self
    }

    /// How long a modern call that asked the client for input waits for the request that
    /// brings the answer before it is dropped (default: 10 min).
    pub fn input_timeout(mut self, timeout: Duration) -> Self {
        self.settings.input_timeout = timeout;
        self
    }

    /// How many messages each direction of a connection holds before the sender waits
    /// (default: 1024).
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.settings.queue_capacity = capacity.max(1);
        self
    }

    /// Whether requests are answered in the caller's task (the default) or, like a server
    /// process would, on the connection's task, each call on a task of its own, its answer
    /// sent back through the session's reader. The second path exists for comparison (the
    /// benchmark's "before") and for tests of the ordinary transport contract; it costs a few
    /// task hand-offs per call.
    pub fn answer_in_place(mut self, in_place: bool) -> Self {
        self.settings.answer_in_place = in_place;
        self
    }

    /// Answers requests of `method`, a method the server does not answer itself (say
    /// `completion/complete`, `resources/subscribe`, or an extension's): `handler` gets the
    /// request's parameters and returns the result, or a [`ToolError`] (a JSON-RPC error;
    /// [`ToolError::rpc`] chooses its code). It runs like any handler — cancellable, with
    /// progress, logging and requests to the client. The built-in methods (the handshakes,
    /// lists, calls, reads, `logging/setLevel`, `ping`) are always answered by the server.
    pub fn method<Fut, F>(mut self, method: impl Into<String>, handler: F) -> Self
    where
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
        F: Fn(RequestContext, Option<Value>) -> Fut + Send + Sync + 'static,
    {
        let handler: MethodHandler = Arc::new(move |context, params| {
            let running = handler(context, params);
            let started: Started = Box::pin(async move { running.await.map(Payload::Value) });
            started
        });
        self.extensions.methods.insert(method.into(), handler);
        self
    }

    /// Reads of a URI that no resource or template of the server matches run `handler`
    /// (without it they fail with "resource not found"): a gateway routes them on.
    pub fn read_fallback<O, Fut, F>(mut self, handler: F) -> Self
    where
        O: IntoReadResult,
        Fut: Future<Output = O> + Send + 'static,
        F: Fn(RequestContext, ReadRequest) -> Fut + Send + Sync + 'static,
    {
        self.extensions.read_fallback = Some(read_handler(handler));
        self
    }

    /// Takes resource subscriptions: `resources/subscribe` and `resources/unsubscribe`
    /// (legacy) and the resource URIs of `subscriptions/listen` streams (modern) are kept per
    /// connection, `resources.subscribe` is announced, and
    /// [`LocalServer::notify_resource_updated`] reaches the subscribers. `on_change` hears when
    /// a URI gets its first subscriber (`true`) and loses its last (`false`), across every
    /// connection — a gateway subscribes upstream then. It must not block.
    pub fn resource_subscriptions(
        mut self,
        on_change: impl Fn(&str, bool) + Send + Sync + 'static,
    ) -> Self {
        self.extensions.subscriptions = Some(Subscriptions::new(Arc::new(on_change)));
        self
    }

    /// Changes the capabilities the server announces (in `initialize` and `server/discover`),
    /// after they are worked out from what it holds: say, announce prompts and resources
    /// (with `listChanged`) while there are none yet, or `completions` a
    /// [`method`](Self::method) answers.
    pub fn capabilities(
        mut self,
        amend: impl Fn(&mut ServerCapabilities) + Send + Sync + 'static,
    ) -> Self {
        self.extensions.amend_capabilities = Some(Arc::new(amend));
        self
    }

    /// Says that the server's connections are served on a wire (a gateway's stdio or
    /// Streamable HTTP), where its 2026-07-28 answers are read as JSON: they then get what the
    /// revision requires of them whoever produced them — `resultType`, cache hints on lists
    /// and reads, `-32602` for a resource not found. In process (the default) answers stay the
    /// typed values the handlers made, never serialized.
    pub fn served_on_a_wire(mut self, on_a_wire: bool) -> Self {
        self.settings.served_on_a_wire = on_a_wire;
        self
    }

    /// The server, or the first registration that cannot be served (a duplicate name, an
    /// arguments type that is not an object, a malformed URI template).
    pub fn build(self) -> Result<LocalServer, BuildError> {
        let mut catalog = Catalog::default();
        for tool in self.tools {
            catalog.add_tool(tool)?;
        }
        for resource in self.resources {
            catalog.add_resource(resource)?;
        }
        for template in self.templates {
            catalog.add_template(template)?;
        }
        for prompt in self.prompts {
            catalog.add_prompt(prompt)?;
        }
        Ok(LocalServer::from_parts(
            self.info,
            self.instructions,
            self.eras,
            self.settings,
            catalog,
            self.extensions,
        ))
    }
}

impl std::fmt::Debug for LocalServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalServerBuilder")
            .field("name", &self.info.name)
            .field("tools", &self.tools.len())
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .field("prompts", &self.prompts.len())
            .finish_non_exhaustive()
    }
}
