//! How handlers fail ([`ToolError`]), how the server's own requests to the client fail
//! ([`ClientRequestError`]), and what a server cannot be built from ([`BuildError`]).

use std::fmt;

use mcp_core::jsonrpc::{codes, ErrorObject};
use serde_json::{json, Map, Value};

/// Why a handler failed. A tool's failure becomes an `isError: true` result the model reads
/// ([`ToolError::failed`]); wrong arguments and protocol errors become JSON-RPC errors.
///
/// Any `std::error::Error` converts into a failure, so `?` works in handlers:
///
/// ```
/// # use mcp_transport_local::ToolError;
/// fn read_config(path: &str) -> Result<String, ToolError> {
///     Ok(std::fs::read_to_string(path)?)
/// }
/// ```
#[derive(Debug)]
pub struct ToolError {
    kind: ToolErrorKind,
}

#[derive(Debug)]
enum ToolErrorKind {
    Failed(String),
    InvalidParams {
        field: Option<String>,
        message: String,
    },
    Rpc(ErrorObject),
}

impl ToolError {
    /// The tool ran and failed: the caller gets a result with `isError: true` and `message` as
    /// its text (a resource or prompt handler's failure is a JSON-RPC internal error).
    pub fn failed(message: impl Into<String>) -> ToolError {
        ToolError {
            kind: ToolErrorKind::Failed(message.into()),
        }
    }

    /// The arguments are wrong: a JSON-RPC invalid-params error (`-32602`) naming `field` in
    /// its message and in `data.field`.
    pub fn invalid_params(field: impl Into<String>, message: impl Into<String>) -> ToolError {
        ToolError {
            kind: ToolErrorKind::InvalidParams {
                field: Some(field.into()),
                message: message.into(),
            },
        }
    }

    /// Any JSON-RPC error, as it is.
    pub fn rpc(error: ErrorObject) -> ToolError {
        ToolError {
            kind: ToolErrorKind::Rpc(error),
        }
    }

    /// An invalid-params error about the arguments as a whole.
    pub(crate) fn invalid_arguments(field: Option<String>, message: String) -> ToolError {
        ToolError {
            kind: ToolErrorKind::InvalidParams { field, message },
        }
    }

    /// The answer of a `tools/call` that failed this way: a failure is a result.
    pub(crate) fn into_tool_outcome(self) -> Result<Value, ErrorObject> {
        match self.kind {
            ToolErrorKind::Failed(message) => Ok(tool_error_result(message)),
            other => Err(ToolError { kind: other }.into_error_object()),
        }
    }

    /// The JSON-RPC error (a failure is an internal error).
    pub(crate) fn into_error_object(self) -> ErrorObject {
        match self.kind {
            ToolErrorKind::Failed(message) => ErrorObject::internal(message),
            ToolErrorKind::InvalidParams { field, message } => {
                let mut error = ErrorObject::invalid_params(message);
                if let Some(field) = field {
                    error.data = Some(json!({ "field": field }));
                }
                error
            }
            ToolErrorKind::Rpc(error) => error,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ToolErrorKind::Failed(message) => f.write_str(message),
            ToolErrorKind::InvalidParams { message, .. } => f.write_str(message),
            ToolErrorKind::Rpc(error) => write!(f, "{error}"),
        }
    }
}

/// Lets `?` turn any error into a tool failure. (`ToolError` is deliberately not a
/// `std::error::Error` itself, which is what makes this blanket conversion possible.)
impl<E: std::error::Error + Send + Sync + 'static> From<E> for ToolError {
    fn from(error: E) -> ToolError {
        ToolError::failed(error.to_string())
    }
}

/// `{"content":[{"type":"text","text":…}],"isError":true}`.
pub(crate) fn tool_error_result(message: String) -> Value {
    let mut result = crate::result::text_result(message);
    if let Value::Object(map) = &mut result {
        map.insert("isError".into(), Value::Bool(true));
    }
    result
}

/// Why a request the server sent the client (elicitation, sampling, roots) got no result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientRequestError {
    /// The client did not declare the capability the request needs.
    NotSupported {
        /// The request's method (`elicitation/create`, …).
        method: String,
    },
    /// The client answered with a JSON-RPC error.
    Refused(ErrorObject),
    /// The client did not answer within the server's limit.
    TimedOut {
        /// The request's method.
        method: String,
        /// How long the server waited.
        after: std::time::Duration,
    },
    /// The connection ended (closed, or the server was shut down or crashed) before an answer.
    ConnectionEnded,
    /// The client's answer is not what the method returns.
    InvalidAnswer {
        /// The request's method.
        method: String,
        /// What was wrong.
        reason: String,
    },
}

impl fmt::Display for ClientRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientRequestError::NotSupported { method } => write!(
                f,
                "the client cannot answer {method}: it did not declare the capability"
            ),
            ClientRequestError::Refused(error) => write!(f, "the client refused: {error}"),
            ClientRequestError::TimedOut { method, after } => write!(
                f,
                "the client did not answer {method} within {}",
                mcp_core::time::human_duration(*after)
            ),
            ClientRequestError::ConnectionEnded => {
                f.write_str("the connection ended before the client answered")
            }
            ClientRequestError::InvalidAnswer { method, reason } => {
                write!(f, "the client's answer to {method} is invalid: {reason}")
            }
        }
    }
}

impl std::error::Error for ClientRequestError {}

/// What a server cannot be built from: a programming error in the registrations, reported by
/// [`LocalServerBuilder::build`](crate::LocalServerBuilder::build) and
/// [`LocalServer::add_tool`](crate::LocalServer::add_tool).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools, resources, templates or prompts share a name (or URI).
    Duplicate {
        /// `tool`, `resource`, `resource template` or `prompt`.
        what: &'static str,
        /// The shared name.
        name: String,
    },
    /// A tool's or prompt's arguments do not describe a JSON object (MCP arguments are
    /// objects).
    ArgumentsNotAnObject {
        /// `tool` or `prompt`.
        what: &'static str,
        /// Its name.
        name: String,
        /// The generated schema's `type`.
        schema_type: String,
    },
    /// A tool's structured result does not describe a JSON object (`structuredContent` is one).
    OutputNotAnObject {
        /// The tool.
        tool: String,
        /// The generated schema's `type`.
        schema_type: String,
    },
    /// A URI template that is not of the form `scheme://path/{name}…`.
    InvalidUriTemplate {
        /// The template.
        template: String,
        /// What is wrong.
        reason: String,
    },
    /// A name that is empty.
    EmptyName {
        /// `tool`, `resource`, `resource template` or `prompt`.
        what: &'static str,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Duplicate { what, name } => {
                write!(f, "two {what}s are named {name:?}; names must be unique")
            }
            BuildError::ArgumentsNotAnObject {
                what,
                name,
                schema_type,
            } => write!(
                f,
                "{what} {name:?}: its arguments type has a schema of type {schema_type:?}, but MCP arguments are a JSON object; use a struct (or `NoArguments`)"
            ),
            BuildError::OutputNotAnObject { tool, schema_type } => write!(
                f,
                "tool {tool:?}: its `Json` result type has a schema of type {schema_type:?}, but `structuredContent` is a JSON object; wrap the value in a struct"
            ),
            BuildError::InvalidUriTemplate { template, reason } => {
                write!(f, "resource template {template:?}: {reason}")
            }
            BuildError::EmptyName { what } => write!(f, "a {what} has an empty name"),
        }
    }
}

impl std::error::Error for BuildError {}

/// An invalid-params error for request parameters the server could not read.
pub(crate) fn invalid_request_params(method: &str, reason: impl fmt::Display) -> ErrorObject {
    ErrorObject::invalid_params(format!("invalid {method} params: {reason}"))
}

/// `-32601` for a method this server does not serve.
pub(crate) fn method_not_found(method: &str, why: &str) -> ErrorObject {
    let mut error = ErrorObject::method_not_found(method);
    if !why.is_empty() {
        error.message = format!("{} ({why})", error.message);
    }
    error
}

/// `-32002` for a URI nothing serves.
pub(crate) fn resource_not_found(uri: &str) -> ErrorObject {
    let mut error = ErrorObject::new(
        codes::RESOURCE_NOT_FOUND,
        format!("Resource not found: {uri}"),
    );
    let mut data = Map::new();
    data.insert("uri".into(), Value::String(uri.to_owned()));
    error.data = Some(Value::Object(data));
    error
}
