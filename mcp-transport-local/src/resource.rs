//! Resources: fixed ones ([`LocalResource`]) and URI templates ([`LocalResourceTemplate`],
//! RFC 6570 level 1: `{name}` stands for one path segment), read by async functions that get
//! the URI and its template variables ([`ReadRequest`]) and return anything
//! [`IntoReadResult`].

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use mcp_core::jsonrpc::Payload;
use mcp_core::types::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::{Map, Value};

use crate::context::RequestContext;
use crate::error::{BuildError, ToolError};
use crate::tool::Started;

/// What a resource handler is asked: the URI read and, for a template, its variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    uri: String,
    variables: BTreeMap<String, String>,
}

impl ReadRequest {
    /// The URI being read.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// A template variable's value (`id` of `items/{id}`), as it appears in the URI.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }
}

/// A resource handler with its types erased.
pub(crate) type ReadHandler = Arc<dyn Fn(ReadRequest, RequestContext) -> Started + Send + Sync>;

pub(crate) fn read_handler<O, Fut, F>(handler: F) -> ReadHandler
where
    O: IntoReadResult,
    Fut: Future<Output = O> + Send + 'static,
    F: Fn(RequestContext, ReadRequest) -> Fut + Send + Sync + 'static,
{
    Arc::new(move |request: ReadRequest, context: RequestContext| {
        let uri = request.uri.clone();
        let running = handler(context, request);
        Box::pin(async move { running.await.into_read_result(&uri).map(Payload::Value) })
    })
}

/// A resource at a fixed URI.
#[derive(Clone)]
pub struct LocalResource {
    pub(crate) resource: Resource,
    pub(crate) handler: ReadHandler,
}

impl LocalResource {
    /// The resource `uri`, called `name`, whose reads run `handler`. Text it returns is
    /// `text/plain` unless [`mime_type`](Self::mime_type) says otherwise.
    pub fn new<O, Fut, F>(uri: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        O: IntoReadResult,
        Fut: Future<Output = O> + Send + 'static,
        F: Fn(RequestContext, ReadRequest) -> Fut + Send + Sync + 'static,
    {
        LocalResource {
            resource: Resource {
                uri: uri.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                size: None,
                annotations: None,
                extra: Map::new(),
            },
            handler: read_handler(handler),
        }
    }

    /// A resource whose definition is given whole (as another server described it, for a
    /// gateway or a proxy); reads run `handler`.
    pub fn from_definition<O, Fut, F>(resource: Resource, handler: F) -> Self
    where
        O: IntoReadResult,
        Fut: Future<Output = O> + Send + 'static,
        F: Fn(RequestContext, ReadRequest) -> Fut + Send + Sync + 'static,
    {
        LocalResource {
            resource,
            handler: read_handler(handler),
        }
    }

    /// What the resource is.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.resource.description = Some(description.into());
        self
    }

    /// The MIME type of its contents (text the handler returns is labelled with it).
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.resource.mime_type = Some(mime_type.into());
        self
    }

    /// The resource's URI.
    pub fn uri(&self) -> &str {
        &self.resource.uri
    }
}

/// Sets `mimeType` on the text contents that have none.
pub(crate) fn label_contents(mut result: Value, mime: &str) -> Value {
    if let Some(Value::Array(contents)) = result.get_mut("contents") {
        for item in contents {
            if let Value::Object(map) = item {
                if !map.contains_key("text") {
                    continue;
                }
                map.entry("mimeType")
                    .or_insert_with(|| Value::String(mime.to_owned()));
            }
        }
    }
    result
}

/// A family of resources behind one URI template.
#[derive(Clone)]
pub struct LocalResourceTemplate {
    pub(crate) template: ResourceTemplate,
    pub(crate) pattern: Result<UriTemplate, BuildError>,
    pub(crate) handler: ReadHandler,
    /// Whether a template this server cannot match is refused (`new`) or only listed
    /// (`from_definition`: its reads go to the server's read fallback).
    pub(crate) strict: bool,
}

impl LocalResourceTemplate {
    /// Resources matching `uri_template` (`scheme://items/{id}`), called `name`; reads run
    /// `handler`, which finds the variables in its [`ReadRequest`].
    pub fn new<O, Fut, F>(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        handler: F,
    ) -> Self
    where
        O: IntoReadResult,
        Fut: Future<Output = O> + Send + 'static,
        F: Fn(RequestContext, ReadRequest) -> Fut + Send + Sync + 'static,
    {
        let uri_template = uri_template.into();
        LocalResourceTemplate {
            pattern: UriTemplate::parse(&uri_template),
            template: ResourceTemplate {
                uri_template,
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                extra: Map::new(),
            },
            handler: read_handler(handler),
            strict: true,
        }
    }

    /// A template whose definition is given whole (as another server described it, for a
    /// gateway or a proxy); reads of URIs it matches run `handler`. A template beyond RFC 6570
    /// level 1 (`{+path}`, `{?query}`) is listed but never matched here: reads of its URIs go
    /// to the server's [read fallback](crate::LocalServerBuilder::read_fallback).
    pub fn from_definition<O, Fut, F>(template: ResourceTemplate, handler: F) -> Self
    where
        O: IntoReadResult,
        Fut: Future<Output = O> + Send + 'static,
        F: Fn(RequestContext, ReadRequest) -> Fut + Send + Sync + 'static,
    {
        LocalResourceTemplate {
            pattern: UriTemplate::parse(&template.uri_template),
            template,
            handler: read_handler(handler),
            strict: false,
        }
    }

    /// What the resources are.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.template.description = Some(description.into());
        self
    }

    /// The MIME type of matching resources.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.template.mime_type = Some(mime_type.into());
        self
    }
}

/// A parsed RFC 6570 level-1 template: literals and `{name}` variables, each variable one
/// non-empty path segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    pub(crate) fn parse(template: &str) -> Result<UriTemplate, BuildError> {
        let invalid = |reason: &str| BuildError::InvalidUriTemplate {
            template: template.to_owned(),
            reason: reason.to_owned(),
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let close = rest
                        .find('}')
                        .ok_or_else(|| invalid("a `{` is never closed"))?;
                    let name = &rest[1..close];
                    if name.is_empty()
                        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        return Err(invalid(
                            "variables are `{name}` with letters, digits and `_` (operators such as `{+x}` are not supported)",
                        ));
                    }
                    if matches!(parts.last(), Some(Part::Variable(_))) {
                        return Err(invalid("two variables in a row cannot be told apart"));
                    }
                    parts.push(Part::Variable(name.to_owned()));
                    rest = &rest[close + 1..];
                }
                found => {
                    let end = found.unwrap_or(rest.len());
                    if rest[..end].contains('}') {
                        return Err(invalid("a `}` closes nothing"));
                    }
                    parts.push(Part::Literal(rest[..end].to_owned()));
                    rest = &rest[end..];
                }
            }
        }
        if !matches!(parts.first(), Some(Part::Literal(l)) if l.contains("://")) {
            return Err(invalid("it must start with a scheme (`scheme://…`)"));
        }
        Ok(UriTemplate { parts })
    }

    /// The variables of `uri` when it matches.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut variables = BTreeMap::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Variable(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    variables.insert(name.clone(), value.to_owned());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(variables)
    }
}

/// What a resource handler may return.
pub trait IntoReadResult: Send + 'static {
    /// The `resources/read` result for `uri`.
    fn into_read_result(self, uri: &str) -> Result<Value, ToolError>;
}

fn encode(result: ReadResourceResult) -> Result<Value, ToolError> {
    serde_json::to_value(result).map_err(|e| {
        ToolError::rpc(mcp_core::jsonrpc::ErrorObject::internal(format!(
            "the resource could not be encoded as JSON: {e}"
        )))
    })
}

fn contents_result(contents: Vec<ResourceContents>) -> ReadResourceResult {
    ReadResourceResult {
        contents,
        cache: Default::default(),
        extra: Map::new(),
    }
}

/// The resource's text (labelled with the resource's MIME type, `text/plain` by default).
impl IntoReadResult for String {
    fn into_read_result(self, uri: &str) -> Result<Value, ToolError> {
        encode(contents_result(vec![ResourceContents {
            uri: uri.to_owned(),
            mime_type: None,
            text: Some(self),
            blob: None,
            extra: Map::new(),
        }]))
    }
}

impl IntoReadResult for ResourceContents {
    fn into_read_result(self, _uri: &str) -> Result<Value, ToolError> {
        encode(contents_result(vec![self]))
    }
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_read_result(self, _uri: &str) -> Result<Value, ToolError> {
        encode(contents_result(self))
    }
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(self, _uri: &str) -> Result<Value, ToolError> {
        encode(self)
    }
}

impl<T: IntoReadResult, E: Into<ToolError> + Send + 'static> IntoReadResult for Result<T, E> {
    fn into_read_result(self, uri: &str) -> Result<Value, ToolError> {
        match self {
            Ok(value) => value.into_read_result(uri),
            Err(e) => Err(e.into()),
        }
    }
}

impl ReadRequest {
    pub(crate) fn new(uri: String, variables: BTreeMap<String, String>) -> ReadRequest {
        ReadRequest { uri, variables }
    }
}

impl fmt::Debug for LocalResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalResource")
            .field("uri", &self.resource.uri)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for LocalResourceTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalResourceTemplate")
            .field("uri_template", &self.template.uri_template)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_one_segment_per_variable() {
        let t = UriTemplate::parse("fixture://items/{id}").unwrap();
        let vars = t.matches("fixture://items/42").unwrap();
        assert_eq!(vars.get("id").map(String::as_str), Some("42"));
        assert_eq!(t.matches("fixture://items/"), None);
        assert_eq!(t.matches("fixture://items/a/b"), None);
        assert_eq!(t.matches("fixture://other/1"), None);

        let t = UriTemplate::parse("db://{table}/rows/{row}.json").unwrap();
        let vars = t.matches("db://users/rows/7.json").unwrap();
        assert_eq!(vars["table"], "users");
        assert_eq!(vars["row"], "7");
        assert_eq!(t.matches("db://users/rows/7.txt"), None);
    }

    #[test]
    fn malformed_templates_are_refused_with_the_reason() {
        for (template, reason) in [
            ("x://{a", "never closed"),
            ("x://{a}{b}", "in a row"),
            ("x://{+a}", "operators"),
            ("x://a}", "closes nothing"),
            ("items/{id}", "scheme"),
        ] {
            match UriTemplate::parse(template) {
                Err(BuildError::InvalidUriTemplate { reason: r, .. }) => {
                    assert!(r.contains(reason), "{template}: {r}")
                }
                other => panic!("{template}: {other:?}"),
            }
        }
    }
}
