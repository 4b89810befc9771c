//! The seam every policy composes around: one request value ([`Operation`]), one service trait
//! with one async [`call`](McpService::call) ([`McpService`]), and [`Layer`]s that wrap a service
//! and are services themselves — the shape of `tower`, for MCP requests.
//!
//! The session (`mcp-session`'s `ClientSession`) is the innermost service: it sends the operation
//! on its connection. Timeouts, retries, circuit breakers, rate limits and pools (in their own
//! crates) are layers around it, and the typed methods of [`McpServiceExt`] (`list_tools`,
//! `call_tool`, `read_resource`, …) work on any of them (example: the [crate docs](crate)). A layer
//! may rely on [`Operation::idempotent`] and [`Error::delivery`](crate::Error::delivery), which
//! together say whether a retry is safe, on [`RequestOptions::deadline`] (absolute, for all
//! attempts) and on [`RequestOptions::attachments`] (every layer passes them on).

mod attachments;
mod ext;
mod options;
pub mod pagination;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

pub use attachments::Attachments;
pub use ext::McpServiceExt;
pub use options::{ProgressCallback, RequestOptions, TraceContext};

use crate::error::Error;
use crate::jsonrpc::Payload;
use crate::types::methods;

/// One MCP request through the layers: method, parameters, the caller's options, idempotence.
#[derive(Clone)]
pub struct Operation {
    /// The JSON-RPC method (`tools/call`, `resources/read`, …).
    pub method: Cow<'static, str>,
    /// The parameters (without `_meta.progressToken`: the session adds it).
    pub params: Option<Payload>,
    /// Deadline, progress callback, page cap.
    pub options: RequestOptions,
    /// Safe to send twice: sending it again cannot do anything the first one did not. Defaults
    /// to [`is_idempotent_method`]; a `tools/call` is idempotent only when the caller says so
    /// (the facade does for tools annotated read-only or idempotent).
    pub idempotent: bool,
    /// What the request is about — the tool name of a `tools/call`, the URI of a `resources/read`,
    /// the prompt name of a `prompts/get` — for errors, per-tool breakers and metrics.
    pub subject: Option<String>,
}

impl Operation {
    /// An operation with default options, idempotent as [`is_idempotent_method`] says.
    pub fn new(method: impl Into<Cow<'static, str>>, params: Option<Payload>) -> Self {
        let method = method.into();
        Operation {
            idempotent: is_idempotent_method(&method),
            method,
            params,
            options: RequestOptions::default(),
            subject: None,
        }
    }

    /// Sets the caller's options.
    pub fn with_options(mut self, options: RequestOptions) -> Self {
        self.options = options;
        self
    }

    /// Says whether the operation is safe to send twice (overrides the method's default).
    pub fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Names what the operation is about (a tool, a URI, a prompt).
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// The tool name, when this is a `tools/call`.
    pub fn tool_name(&self) -> Option<&str> {
        (self.method == methods::TOOLS_CALL)
            .then_some(self.subject.as_deref())
            .flatten()
    }

    /// The operation made ready to send again later (a retry): in-memory parameters serialized
    /// once to raw JSON, which is cheaper to keep and to copy than a value tree; other
    /// parameters kept as they are (raw or shared JSON is copied cheaply already).
    pub fn into_replayable(mut self) -> Operation {
        if let Some(Payload::Value(value)) = &self.params {
            // Serializing a `Value` cannot fail; keep the value if it ever did.
            if let Ok(raw) = serde_json::value::to_raw_value(value) {
                self.params = Some(Payload::Raw(raw));
            }
        }
        self
    }

    /// Names the error after this operation's subject, unless it already names one.
    pub fn attach_subject(&self, error: Error) -> Error {
        match (&self.subject, error.subject()) {
            (Some(subject), None) => error.with_subject(subject.clone()),
            _ => error,
        }
    }
}

impl fmt::Debug for Operation {
    /// Parameters are not printed: tool arguments may carry anything, secrets included.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Operation")
            .field("method", &self.method)
            .field("subject", &self.subject)
            .field("idempotent", &self.idempotent)
            .field("params", &self.params.as_ref().map(|_| "<elided>"))
            .field("options", &self.options)
            .finish()
    }
}

/// Whether requests of `method` are safe to send twice: every method that only reads, plus
/// subscriptions and `logging/setLevel` (setting the same state again changes nothing). Not
/// `tools/call` (a tool may have side effects) nor any method this crate does not know.
pub fn is_idempotent_method(method: &str) -> bool {
    matches!(
        method,
        methods::PING
            | methods::TOOLS_LIST
            | methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ
            | methods::RESOURCES_SUBSCRIBE
            | methods::RESOURCES_UNSUBSCRIBE
            | methods::PROMPTS_LIST
            | methods::PROMPTS_GET
            | methods::COMPLETION_COMPLETE
            | methods::LOGGING_SET_LEVEL
            | methods::TASKS_GET
            | methods::TASKS_CANCEL
    )
}

/// Answers MCP operations: a session, or a layer around one. `call` takes `&self`: services are
/// shared by all callers (a session multiplexes requests); a layer synchronizes its own state.
#[async_trait]
pub trait McpService: Send + Sync {
    /// Sends the operation, awaits its raw result (see [`Payload::into_typed`], [`McpServiceExt`]).
    async fn call(&self, operation: Operation) -> Result<Payload, Error>;
}

/// A shared, type-erased service: what a stack of layers built at run time is held as.
pub type BoxService = Arc<dyn McpService>;

/// The future of [`McpService::call`], as `async_trait` boxes it.
pub type CallFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Payload, Error>> + Send + 'a>>;

// Handles delegate to the service's own (already boxed) future: no second box per layer.
macro_rules! delegate_service {
    ($($handle:ty),*) => {$(
        impl<S: McpService + ?Sized> McpService for $handle {
            fn call<'life0, 'async_trait>(&'life0 self, operation: Operation) -> CallFuture<'async_trait>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                (**self).call(operation)
            }
        }
    )*};
}

delegate_service!(Arc<S>, Box<S>, &S);

/// Wraps a service in a policy, giving a new service (tower's `Layer`).
pub trait Layer<S> {
    /// The wrapped service.
    type Service;

    /// Wraps `inner`.
    fn layer(&self, inner: S) -> Self::Service;
}

/// The layer that changes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Identity;

impl<S> Layer<S> for Identity {
    type Service = S;

    fn layer(&self, inner: S) -> S {
        inner
    }
}

/// Two layers in a row: `inner` wraps the service first, `outer` wraps the result.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stack<Inner, Outer> {
    inner: Inner,
    outer: Outer,
}

impl<Inner, Outer> Stack<Inner, Outer> {
    /// `outer(inner(service))`.
    pub fn new(inner: Inner, outer: Outer) -> Self {
        Stack { inner, outer }
    }
}

impl<S, Inner, Outer> Layer<S> for Stack<Inner, Outer>
where
    Inner: Layer<S>,
    Outer: Layer<Inner::Service>,
{
    type Service = Outer::Service;

    fn layer(&self, service: S) -> Self::Service {
        self.outer.layer(self.inner.layer(service))
    }
}

/// A layer that erases the service's type: `BoxLayer(layer)` turns `layer`'s service into a
/// [`BoxService`], so layers chosen at run time (from a configuration) can be stacked.
#[derive(Debug, Clone)]
pub struct BoxLayer<L>(pub L);

impl<L> Layer<BoxService> for BoxLayer<L>
where
    L: Layer<BoxService>,
    L::Service: McpService + 'static,
{
    type Service = BoxService;

    fn layer(&self, inner: BoxService) -> BoxService {
        Arc::new(self.0.layer(inner))
    }
}
