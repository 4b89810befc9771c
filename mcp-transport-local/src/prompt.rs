//! [`LocalPrompt`]: a prompt template whose arguments are a typed struct (the prompt's argument
//! list is read from its schema: names, descriptions, which are required) and whose messages
//! come from an async function ([`IntoPromptResult`]).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use mcp_core::jsonrpc::Payload;
use mcp_core::types::{Content, GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::arguments::Arguments;
use crate::context::RequestContext;
use crate::error::{BuildError, ToolError};
use crate::schema::{input_schema_of, non_object_type};
use crate::tool::{Handler, Started};

/// A prompt of a [`LocalServer`](crate::LocalServer).
///
/// Prompt arguments are strings on the wire; the arguments type reads them with its
/// `Deserialize` (so its fields are `String` or `Option<String>`), and its doc comments become
/// the arguments' descriptions.
#[derive(Clone)]
pub struct LocalPrompt {
    pub(crate) prompt: Prompt,
    pub(crate) handler: Handler,
    pub(crate) problem: Option<BuildError>,
}

impl LocalPrompt {
    /// A prompt named `name` rendered by `handler`.
    pub fn new<A, O, Fut, F>(name: impl Into<String>, handler: F) -> LocalPrompt
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: IntoPromptResult,
        Fut: Future<Output = O> + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
    {
        let name = name.into();
        let schema = input_schema_of::<A>();
        let problem = if name.is_empty() {
            Some(BuildError::EmptyName { what: "prompt" })
        } else {
            non_object_type(&schema).map(|schema_type| BuildError::ArgumentsNotAnObject {
                what: "prompt",
                name: name.clone(),
                schema_type,
            })
        };
        let handler: Handler = Arc::new(
            move |arguments: Arguments<'_>, context: RequestContext, what: &dyn fmt::Display| {
                let arguments: A = arguments.parse(what)?;
                let running = handler(context, arguments);
                let outcome: Started =
                    Box::pin(async move { running.await.into_prompt_result().map(Payload::Value) });
                Ok(outcome)
            },
        );
        LocalPrompt {
            prompt: Prompt {
                name,
                title: None,
                description: None,
                arguments: arguments_of(&schema),
                extra: Map::new(),
            },
            handler,
            problem,
        }
    }

    /// A prompt whose definition is given whole — as another server described it, for a
    /// gateway or a proxy — and whose handler gets the arguments as a JSON object (not
    /// checked against the definition's argument list).
    pub fn from_definition<O, Fut, F>(prompt: Prompt, handler: F) -> LocalPrompt
    where
        O: IntoPromptResult,
        Fut: Future<Output = O> + Send + 'static,
        F: Fn(RequestContext, Map<String, Value>) -> Fut + Send + Sync + 'static,
    {
        let problem = prompt
            .name
            .is_empty()
            .then_some(BuildError::EmptyName { what: "prompt" });
        let handler: Handler = Arc::new(
            move |arguments: Arguments<'_>, context: RequestContext, what: &dyn fmt::Display| {
                let arguments: Map<String, Value> = arguments.parse(what)?;
                let running = handler(context, arguments);
                let outcome: Started =
                    Box::pin(async move { running.await.into_prompt_result().map(Payload::Value) });
                Ok(outcome)
            },
        );
        LocalPrompt {
            prompt,
            handler,
            problem,
        }
    }

    /// What the prompt is for.
    pub fn description(mut self, description: impl Into<String>) -> LocalPrompt {
        self.prompt.description = Some(description.into());
        self
    }

    /// The definition `prompts/list` shows.
    pub fn definition(&self) -> &Prompt {
        &self.prompt
    }
}

/// The argument list of a prompt, from its arguments' object schema.
fn arguments_of(schema: &Value) -> Option<Vec<PromptArgument>> {
    let properties = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let arguments: Vec<PromptArgument> = properties
        .iter()
        .map(|(name, property)| PromptArgument {
            name: name.clone(),
            title: property
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned),
            description: property
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            required: Some(required.contains(&name.as_str())),
            extra: Map::new(),
        })
        .collect();
    (!arguments.is_empty()).then_some(arguments)
}

/// What a prompt handler may return.
pub trait IntoPromptResult: Send + 'static {
    /// The `prompts/get` result, as JSON.
    fn into_prompt_result(self) -> Result<Value, ToolError>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<Value, ToolError> {
        serde_json::to_value(self).map_err(|e| {
            ToolError::rpc(mcp_core::jsonrpc::ErrorObject::internal(format!(
                "the prompt could not be encoded as JSON: {e}"
            )))
        })
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<Value, ToolError> {
        GetPromptResult {
            description: None,
            messages: self,
            extra: Map::new(),
        }
        .into_prompt_result()
    }
}

/// One message from the user with this text.
impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<Value, ToolError> {
        vec![PromptMessage {
            role: Role::User,
            content: Content::text(self),
        }]
        .into_prompt_result()
    }
}

impl<T: IntoPromptResult, E: Into<ToolError> + Send + 'static> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<Value, ToolError> {
        match self {
            Ok(value) => value.into_prompt_result(),
            Err(e) => Err(e.into()),
        }
    }
}

impl fmt::Debug for LocalPrompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalPrompt")
            .field("name", &self.prompt.name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct GreetingArgs {
        /// Who to greet.
        name: String,
        /// How.
        style: Option<String>,
    }

    #[test]
    fn prompt_arguments_come_from_the_schema() {
        let prompt = LocalPrompt::new(
            "greeting",
            |_ctx: RequestContext, a: GreetingArgs| async move { format!("Hello, {}!", a.name) },
        );
        let arguments = prompt.definition().arguments.clone().unwrap();
        let name = arguments.iter().find(|a| a.name == "name").unwrap();
        assert_eq!(name.required, Some(true));
        assert_eq!(name.description.as_deref(), Some("Who to greet."));
        let style = arguments.iter().find(|a| a.name == "style").unwrap();
        assert_eq!(style.required, Some(false));
        assert!(prompt.problem.is_none());
    }
}
