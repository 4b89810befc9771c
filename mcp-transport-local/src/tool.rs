//! [`LocalTool`]: one tool — its definition (name, description, annotations, the input schema
//! generated from the arguments type, the output schema from the result type) and its handler,
//! an async Rust function of typed arguments.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_core::jsonrpc::Payload;
use mcp_core::types::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::arguments::Arguments;
use crate::context::RequestContext;
use crate::error::{BuildError, ToolError};
use crate::result::IntoToolResult;
use crate::schema::{input_schema_of, non_object_type};

/// A started handler: its result, or why it failed.
pub(crate) type Started =
    Pin<Box<dyn Future<Output = Result<Payload, ToolError>> + Send + 'static>>;

/// A handler with its types erased: reads the arguments (`what` names the tool or prompt in
/// errors) and starts the work.
pub(crate) type Handler = Arc<
    dyn Fn(Arguments<'_>, RequestContext, &dyn fmt::Display) -> Result<Started, ToolError>
        + Send
        + Sync,
>;

/// A tool of a [`LocalServer`](crate::LocalServer): a name, what the model reads about it, and
/// an async function of typed arguments.
///
/// The arguments type's JSON Schema (from `schemars`) is the tool's `inputSchema`; arguments
/// are read with its `Deserialize` (a bad one is an invalid-params error naming the field). The
/// handler returns anything [`IntoToolResult`]: text, content, [`Json`](crate::Json) (whose
/// schema becomes the `outputSchema`), a whole `CallToolResult`, or a `Result` of those.
///
/// ```
/// use mcp_transport_local::{Json, LocalTool, RequestContext, ToolError};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// First addend.
///     a: f64,
///     /// Second addend.
///     b: f64,
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Sum {
///     sum: f64,
/// }
///
/// let add = LocalTool::new("add", |_ctx: RequestContext, args: AddArgs| async move {
///     Ok::<_, ToolError>(Json(Sum { sum: args.a + args.b }))
/// })
/// .description("Adds two numbers")
/// .read_only();
/// assert_eq!(add.definition().input_schema["required"], serde_json::json!(["a", "b"]));
/// assert!(add.definition().output_schema.is_some());
/// ```
#[derive(Clone)]
pub struct LocalTool {
    pub(crate) definition: Tool,
    pub(crate) handler: Handler,
    pub(crate) problem: Option<BuildError>,
}

impl LocalTool {
    /// A tool named `name` whose calls run `handler`.
    pub fn new<A, O, Fut, F>(name: impl Into<String>, handler: F) -> LocalTool
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: IntoToolResult,
        Fut: Future<Output = O> + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
    {
        let name = name.into();
        let input_schema = input_schema_of::<A>();
        let output_schema = O::output_schema();
        let problem = if name.is_empty() {
            Some(BuildError::EmptyName { what: "tool" })
        } else if let Some(schema_type) = non_object_type(&input_schema) {
            Some(BuildError::ArgumentsNotAnObject {
                what: "tool",
                name: name.clone(),
                schema_type,
            })
        } else {
            output_schema
                .as_ref()
                .and_then(non_object_type)
                .map(|schema_type| BuildError::OutputNotAnObject {
                    tool: name.clone(),
                    schema_type,
                })
        };
        let handler: Handler = Arc::new(
            move |arguments: Arguments<'_>, context: RequestContext, what: &dyn fmt::Display| {
                let arguments: A = arguments.parse(what)?;
                let running = handler(context, arguments);
                let outcome: Started = Box::pin(async move { running.await.into_tool_payload() });
                Ok(outcome)
            },
        );
        LocalTool {
            definition: Tool {
                name,
                title: None,
                description: None,
                input_schema,
                output_schema,
                annotations: None,
                extra: Default::default(),
            },
            handler,
            problem,
        }
    }

    /// A tool whose definition is given whole — as another server described it, for a
    /// gateway or a proxy — and whose handler gets the arguments as a JSON object. The
    /// definition's schemas are served as they are; the arguments are not checked against
    /// them (the handler, or the server it forwards to, does that).
    pub fn from_definition<O, Fut, F>(definition: Tool, handler: F) -> LocalTool
    where
        O: IntoToolResult,
        Fut: Future<Output = O> + Send + 'static,
        F: Fn(RequestContext, Map<String, Value>) -> Fut + Send + Sync + 'static,
    {
        let problem = definition
            .name
            .is_empty()
            .then_some(BuildError::EmptyName { what: "tool" });
        let handler: Handler = Arc::new(
            move |arguments: Arguments<'_>, context: RequestContext, what: &dyn fmt::Display| {
                let arguments: Map<String, Value> = arguments.parse(what)?;
                let running = handler(context, arguments);
                let outcome: Started = Box::pin(async move { running.await.into_tool_payload() });
                Ok(outcome)
            },
        );
        LocalTool {
            definition,
            handler,
            problem,
        }
    }

    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> LocalTool {
        self.definition.description = Some(description.into());
        self
    }

    /// A human-readable name.
    pub fn title(mut self, title: impl Into<String>) -> LocalTool {
        self.definition.title = Some(title.into());
        self
    }

    /// Behaviour hints (read-only, destructive, idempotent, open world).
    pub fn annotations(mut self, annotations: ToolAnnotations) -> LocalTool {
        self.definition.annotations = Some(annotations);
        self
    }

    /// Marks the tool read-only and idempotent (so a retry layer may call it again).
    pub fn read_only(mut self) -> LocalTool {
        let annotations = self
            .definition
            .annotations
            .get_or_insert_with(Default::default);
        annotations.read_only_hint = Some(true);
        annotations.idempotent_hint = Some(true);
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The definition `tools/list` shows.
    pub fn definition(&self) -> &Tool {
        &self.definition
    }
}

impl fmt::Debug for LocalTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalTool")
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}
