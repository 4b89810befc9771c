//! The typed MCP methods, on any [`McpService`]: a session, or a stack of layers around one.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::Future;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::pagination::{collect_pages, DEFAULT_MAX_PAGES};
use super::{McpService, Operation};
use crate::error::{Delivery, Error};
use crate::jsonrpc::{Payload, SharedJson};
use crate::service::RequestOptions;
use crate::types::*;

fn invalid_result(method: &str, e: serde_json::Error) -> Error {
    Error::protocol(format!("invalid {method} result: {e}")).with_delivery(Delivery::Answered)
}

/// Sends `operation` (if built); reads the answer as `R`, or fails with [`invalid_result`].
async fn call_typed<S, R>(
    service: &S,
    operation: Result<Operation, Error>,
    method: &'static str,
    subject: Option<&str>,
) -> Result<R, Error>
where
    S: McpService + ?Sized,
    R: DeserializeOwned + 'static,
{
    let answer = service.call(operation?).await?;
    answer.into_typed().map_err(|e| match subject {
        Some(subject) => invalid_result(method, e).with_subject(subject),
        None => invalid_result(method, e),
    })
}

impl Operation {
    /// A `tools/call` of `name` with JSON `arguments` (an object, or `None`). Not idempotent
    /// unless marked so with [`with_idempotent`](Operation::with_idempotent).
    pub fn call_tool(name: &str, arguments: Option<Value>) -> Operation {
        // Serialized once, from the borrowed parts into shared text: the transport writes it as is,
        // and a retry or another `input_required` round copies a pointer, not a value tree.
        #[derive(Serialize)]
        struct Params<'a> {
            name: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            arguments: Option<&'a Value>,
        }
        let text = serde_json::to_string(&Params {
            name,
            arguments: arguments.as_ref(),
        });
        let params = match text {
            Ok(text) => Payload::Shared(SharedJson::from_valid_json(text)),
            // Serializing a `Value` cannot fail; keep the value if it ever did.
            Err(_) => {
                let mut params = Map::with_capacity(2);
                params.insert("name".into(), Value::String(name.to_owned()));
                if let Some(arguments) = arguments {
                    params.insert("arguments".into(), arguments);
                }
                Payload::Value(Value::Object(params))
            }
        };
        Operation::new(methods::TOOLS_CALL, Some(params)).with_subject(name)
    }

    /// A `tools/call` of raw JSON arguments (a model's output, say), validated once, no value tree.
    pub fn call_tool_raw(
        name: &str,
        arguments: &serde_json::value::RawValue,
    ) -> Result<Operation, Error> {
        #[derive(Serialize)]
        struct Params<'a> {
            name: &'a str,
            arguments: &'a serde_json::value::RawValue,
        }
        let text =
            serde_json::to_string(&Params { name, arguments }).map_err(Error::unencodable)?;
        let params = Payload::Shared(SharedJson::from_valid_json(text));
        Ok(Operation::new(methods::TOOLS_CALL, Some(params)).with_subject(name))
    }

    /// An operation whose parameters are `params` serialized.
    pub fn with_params<P: Serialize + ?Sized>(
        method: impl Into<Cow<'static, str>>,
        params: &P,
    ) -> Result<Operation, Error> {
        let params = Payload::from_serialize(params).map_err(Error::unencodable)?;
        Ok(Operation::new(method, Some(params)))
    }
}

impl CallToolResult {
    /// Reads a `tools/call` answer (`tool` names it in errors), refusing a `resultType` other than
    /// `complete` (an unfollowed task handle, say) rather than reading it as an empty result.
    pub fn from_answer(answer: Payload, tool: &str) -> Result<CallToolResult, Error> {
        let result: CallToolResult = answer
            .into_typed()
            .map_err(|e| invalid_result(methods::TOOLS_CALL, e).with_subject(tool))?;
        match result.extra.get("resultType").and_then(Value::as_str) {
            Some(other) if other != "complete" => Err(Error::protocol(format!(
                "tools/call: the answer is a resultType {other:?}, not the tool's result (a \
                 \"task\" is followed by mcp-tasks' FollowTasksLayer)"
            ))
            .with_delivery(Delivery::Answered)
            .with_subject(tool)),
            _ => Ok(result),
        }
    }
}

/// One page of a paginated list.
async fn list_page<S, R>(
    service: &S,
    method: &'static str,
    cursor: Option<String>,
    options: RequestOptions,
) -> Result<R, Error>
where
    S: McpService + ?Sized,
    R: DeserializeOwned + 'static,
{
    let operation = Operation::with_params(method, &PaginatedRequestParams { cursor })
        .map(|o| o.with_options(options));
    call_typed(service, operation, method, None).await
}

/// Every page of a paginated list (up to [`RequestOptions::max_pages`]); `split` splits a page.
async fn list_all<S, R, T>(
    service: &S,
    method: &'static str,
    options: RequestOptions,
    split: impl Fn(R) -> (Vec<T>, Option<String>, CacheHints),
) -> Result<(Vec<T>, CacheHints), Error>
where
    S: McpService + ?Sized,
    R: DeserializeOwned + 'static,
{
    let max_pages = options.max_pages.unwrap_or(DEFAULT_MAX_PAGES);
    let (split, options) = (&split, &options);
    // The whole list is as fresh as its least fresh page.
    let hints = std::sync::Mutex::new(None::<CacheHints>);
    let hints_ref = &hints;
    let items = collect_pages(method, max_pages, |cursor| {
        let page = list_page::<S, R>(service, method, cursor, options.clone());
        async move {
            let (items, next, page_hints) = split(page.await?);
            let mut merged = crate::sync::lock(hints_ref);
            *merged = Some(match merged.take() {
                None => page_hints,
                Some(so_far) => so_far.merge(&page_hints),
            });
            Ok((items, next))
        }
    })
    .await?;
    let hints = crate::sync::lock(&hints).take().unwrap_or_default();
    Ok((items, hints))
}

/// The MCP methods, typed, on any [`McpService`]. Every method takes [`RequestOptions`]
/// (`RequestOptions::new()` for the defaults: the service's deadline, no progress callback); errors
/// name what they are about ([`Error::subject`]): the tool, URI or prompt.
pub trait McpServiceExt: McpService {
    /// Any request, raw: parameters as a [`Payload`], the result unparsed.
    fn request(
        &self,
        method: impl Into<Cow<'static, str>> + Send,
        params: Option<Payload>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Payload, Error>> + Send {
        self.call(Operation::new(method, params).with_options(options))
    }

    /// Any request with serializable parameters and a typed result.
    fn request_typed<P, R>(
        &self,
        method: &'static str,
        params: &P,
        options: RequestOptions,
    ) -> impl Future<Output = Result<R, Error>> + Send
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned + 'static,
    {
        let operation = Operation::with_params(method, params).map(|o| o.with_options(options));
        call_typed(self, operation, method, None)
    }

    /// `ping`: checks that the server answers.
    fn ping(&self, options: RequestOptions) -> impl Future<Output = Result<(), Error>> + Send {
        let operation = Operation::new(methods::PING, None).with_options(options);
        async move { self.call(operation).await.map(|_| ()) }
    }

    /// `tools/list`: one page.
    fn list_tools(
        &self,
        cursor: Option<String>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<ListToolsResult, Error>> + Send {
        list_page(self, methods::TOOLS_LIST, cursor, options)
    }

    /// Every tool, following cursors up to [`RequestOptions::max_pages`] pages (default 100).
    fn list_all_tools(
        &self,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Vec<Tool>, Error>> + Send {
        async move { Ok(self.list_all_tools_with_hints(options).await?.0) }
    }

    /// [`list_all_tools`](Self::list_all_tools) with the list's cache hints (2026-07-28
    /// `ttlMs` / `cacheScope`; merged over the pages: the shortest TTL, the narrowest scope).
    fn list_all_tools_with_hints(
        &self,
        options: RequestOptions,
    ) -> impl Future<Output = Result<(Vec<Tool>, CacheHints), Error>> + Send {
        let split = |page: ListToolsResult| (page.tools, page.next_cursor, page.cache);
        list_all(self, methods::TOOLS_LIST, options, split)
    }

    /// `tools/call` with JSON arguments (an object, or `None`). Never idempotent: a layer that
    /// retries sends it again only when it provably never reached the server. To call a tool
    /// known to be safe to repeat, build [`Operation::call_tool`] and mark it.
    fn call_tool(
        &self,
        name: &str,
        arguments: Option<Value>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<CallToolResult, Error>> + Send {
        let operation = Operation::call_tool(name, arguments).with_options(options);
        async move { CallToolResult::from_answer(self.call(operation).await?, name) }
    }

    /// `tools/call` with raw JSON text arguments (e.g. straight from a model's output), validated
    /// once, never turned into a value tree; the result comes back as it came, to pass through or
    /// parse: raw JSON from a byte transport, the typed value from an in-process server
    /// ([`Payload::Typed`]; [`Payload::to_json_string`] writes it).
    fn call_tool_raw(
        &self,
        name: &str,
        arguments: &serde_json::value::RawValue,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Payload, Error>> + Send {
        let operation = Operation::call_tool_raw(name, arguments).map(|o| o.with_options(options));
        async move { self.call(operation?).await }
    }

    /// `resources/list`: one page.
    fn list_resources(
        &self,
        cursor: Option<String>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<ListResourcesResult, Error>> + Send {
        list_page(self, methods::RESOURCES_LIST, cursor, options)
    }

    /// Every resource, following cursors.
    fn list_all_resources(
        &self,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Vec<Resource>, Error>> + Send {
        let split = |page: ListResourcesResult| (page.resources, page.next_cursor, page.cache);
        let all = list_all(self, methods::RESOURCES_LIST, options, split);
        async move { Ok(all.await?.0) }
    }

    /// `resources/templates/list`: one page.
    fn list_resource_templates(
        &self,
        cursor: Option<String>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, Error>> + Send {
        list_page(self, methods::RESOURCES_TEMPLATES_LIST, cursor, options)
    }

    /// Every resource template, following cursors.
    fn list_all_resource_templates(
        &self,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Vec<ResourceTemplate>, Error>> + Send {
        let split = |page: ListResourceTemplatesResult| {
            (page.resource_templates, page.next_cursor, page.cache)
        };
        let all = list_all(self, methods::RESOURCES_TEMPLATES_LIST, options, split);
        async move { Ok(all.await?.0) }
    }

    /// `resources/read`.
    fn read_resource(
        &self,
        uri: &str,
        options: RequestOptions,
    ) -> impl Future<Output = Result<ReadResourceResult, Error>> + Send {
        let params = ReadResourceRequestParams { uri: uri.into() };
        let operation = Operation::with_params(methods::RESOURCES_READ, &params)
            .map(|o| o.with_options(options).with_subject(uri));
        call_typed(self, operation, methods::RESOURCES_READ, Some(uri))
    }

    /// `resources/subscribe`: the server will send `notifications/resources/updated` for `uri`.
    fn subscribe_resource(
        &self,
        uri: &str,
        options: RequestOptions,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        subscription(self, methods::RESOURCES_SUBSCRIBE, uri, options)
    }

    /// `resources/unsubscribe`.
    fn unsubscribe_resource(
        &self,
        uri: &str,
        options: RequestOptions,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        subscription(self, methods::RESOURCES_UNSUBSCRIBE, uri, options)
    }

    /// `prompts/list`: one page.
    fn list_prompts(
        &self,
        cursor: Option<String>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<ListPromptsResult, Error>> + Send {
        list_page(self, methods::PROMPTS_LIST, cursor, options)
    }

    /// Every prompt, following cursors.
    fn list_all_prompts(
        &self,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Vec<Prompt>, Error>> + Send {
        let split = |page: ListPromptsResult| (page.prompts, page.next_cursor, page.cache);
        let all = list_all(self, methods::PROMPTS_LIST, options, split);
        async move { Ok(all.await?.0) }
    }

    /// `prompts/get` with string arguments.
    fn get_prompt(
        &self,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<GetPromptResult, Error>> + Send {
        let params = GetPromptRequestParams {
            name: name.to_owned(),
            arguments,
        };
        let operation = Operation::with_params(methods::PROMPTS_GET, &params)
            .map(|o| o.with_options(options).with_subject(name));
        call_typed(self, operation, methods::PROMPTS_GET, Some(name))
    }

    /// `completion/complete`.
    fn complete(
        &self,
        params: &CompleteRequestParams,
        options: RequestOptions,
    ) -> impl Future<Output = Result<CompleteResult, Error>> + Send {
        self.request_typed(methods::COMPLETION_COMPLETE, params, options)
    }

    /// `logging/setLevel`.
    fn set_logging_level(
        &self,
        level: LoggingLevel,
        options: RequestOptions,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let method = methods::LOGGING_SET_LEVEL;
        let operation = Operation::with_params(method, &SetLevelRequestParams { level });
        let operation = operation.map(|o| o.with_options(options));
        let set = call_typed::<_, EmptyResult>(self, operation, method, None);
        async move { set.await.map(|_| ()) }
    }
}

impl<S: McpService + ?Sized> McpServiceExt for S {}

async fn subscription<S: McpService + ?Sized>(
    service: &S,
    method: &'static str,
    uri: &str,
    options: RequestOptions,
) -> Result<(), Error> {
    let params = SubscribeRequestParams { uri: uri.into() };
    let operation = Operation::with_params(method, &params);
    let operation = operation.map(|o| o.with_options(options).with_subject(uri));
    call_typed::<_, EmptyResult>(service, operation, method, Some(uri))
        .await
        .map(|_| ())
}
