//! What a server offers: its tools (which may change while it runs), resources, resource
//! templates and prompts, each found by name or URI, and listed in the order registered.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_core::jsonrpc::ErrorObject;
use mcp_core::types::{
    ListChangedCapability, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ResourcesCapability, ServerCapabilities,
};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::BuildError;
use crate::prompt::LocalPrompt;
use crate::resource::{LocalResource, LocalResourceTemplate, ReadHandler, ReadRequest};
use crate::tool::LocalTool;

/// A registered tool, shared with the calls running it.
pub(crate) struct ToolEntry {
    /// Its name, shared with every call's context (no copy per call).
    pub(crate) name: Arc<str>,
    pub(crate) tool: LocalTool,
}

/// A registered prompt.
pub(crate) struct PromptEntry {
    pub(crate) name: Arc<str>,
    pub(crate) prompt: LocalPrompt,
}

/// What a `resources/read` of one URI runs.
pub(crate) struct ResourceMatch {
    pub(crate) handler: ReadHandler,
    pub(crate) request: ReadRequest,
    pub(crate) mime_type: String,
}

/// Hashes names with FNV-1a instead of SipHash: every call looks its tool up, and the keys
/// are the server's own registrations (a lookup cannot be made slow by the names a client
/// asks for, only by colliding keys, which a client cannot insert).
#[derive(Default, Clone, Copy)]
struct NameHasher(u64);

impl std::hash::Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = hash;
    }
}

type NameMap<V> = HashMap<String, V, std::hash::BuildHasherDefault<NameHasher>>;

/// The server's catalog.
#[derive(Default)]
pub(crate) struct Catalog {
    tools: NameMap<Arc<ToolEntry>>,
    tool_order: Vec<String>,
    resources: Vec<LocalResource>,
    templates: Vec<LocalResourceTemplate>,
    prompts: NameMap<Arc<PromptEntry>>,
    prompt_order: Vec<String>,
}

impl Catalog {
    /// Adds a tool; its name must be new.
    pub(crate) fn add_tool(&mut self, tool: LocalTool) -> Result<(), BuildError> {
        if let Some(problem) = &tool.problem {
            return Err(problem.clone());
        }
        let name = tool.definition.name.clone();
        if self.tools.contains_key(&name) {
            return Err(BuildError::Duplicate { what: "tool", name });
        }
        let entry = ToolEntry {
            name: Arc::from(name.as_str()),
            tool,
        };
        self.tool_order.push(name.clone());
        self.tools.insert(name, Arc::new(entry));
        Ok(())
    }

    /// Removes a tool; false when there is none of that name.
    pub(crate) fn remove_tool(&mut self, name: &str) -> bool {
        let removed = self.tools.remove(name).is_some();
        if removed {
            self.tool_order.retain(|n| n != name);
        }
        removed
    }

    pub(crate) fn add_resource(&mut self, resource: LocalResource) -> Result<(), BuildError> {
        if resource.resource.uri.is_empty() {
            return Err(BuildError::EmptyName { what: "resource" });
        }
        if self
            .resources
            .iter()
            .any(|r| r.resource.uri == resource.resource.uri)
        {
            return Err(BuildError::Duplicate {
                what: "resource",
                name: resource.resource.uri.clone(),
            });
        }
        self.resources.push(resource);
        Ok(())
    }

    pub(crate) fn add_template(
        &mut self,
        template: LocalResourceTemplate,
    ) -> Result<(), BuildError> {
        if let (Err(problem), true) = (&template.pattern, template.strict) {
            return Err(problem.clone());
        }
        let uri_template = &template.template.uri_template;
        if self
            .templates
            .iter()
            .any(|t| &t.template.uri_template == uri_template)
        {
            return Err(BuildError::Duplicate {
                what: "resource template",
                name: uri_template.clone(),
            });
        }
        self.templates.push(template);
        Ok(())
    }

    pub(crate) fn add_prompt(&mut self, prompt: LocalPrompt) -> Result<(), BuildError> {
        if let Some(problem) = &prompt.problem {
            return Err(problem.clone());
        }
        let name = prompt.prompt.name.clone();
        if self.prompts.contains_key(&name) {
            return Err(BuildError::Duplicate {
                what: "prompt",
                name,
            });
        }
        let entry = PromptEntry {
            name: Arc::from(name.as_str()),
            prompt,
        };
        self.prompt_order.push(name.clone());
        self.prompts.insert(name, Arc::new(entry));
        Ok(())
    }

    /// Replaces every tool (all of them checked first: on an error nothing changes); true when
    /// the list clients see changed.
    pub(crate) fn set_tools(&mut self, tools: Vec<LocalTool>) -> Result<bool, BuildError> {
        let mut next = Catalog::default();
        for tool in tools {
            next.add_tool(tool)?;
        }
        let changed = !same_items(
            self.tool_order.iter().filter_map(|n| self.tools.get(n)),
            next.tool_order.iter().filter_map(|n| next.tools.get(n)),
            |entry| &entry.tool.definition,
        );
        self.tools = next.tools;
        self.tool_order = next.tool_order;
        Ok(changed)
    }

    /// Replaces every prompt, as [`set_tools`](Self::set_tools) does tools.
    pub(crate) fn set_prompts(&mut self, prompts: Vec<LocalPrompt>) -> Result<bool, BuildError> {
        let mut next = Catalog::default();
        for prompt in prompts {
            next.add_prompt(prompt)?;
        }
        let changed = !same_items(
            self.prompt_order.iter().filter_map(|n| self.prompts.get(n)),
            next.prompt_order.iter().filter_map(|n| next.prompts.get(n)),
            |entry| &entry.prompt.prompt,
        );
        self.prompts = next.prompts;
        self.prompt_order = next.prompt_order;
        Ok(changed)
    }

    /// Replaces every resource and resource template, as [`set_tools`](Self::set_tools) does
    /// tools.
    pub(crate) fn set_resources(
        &mut self,
        resources: Vec<LocalResource>,
        templates: Vec<LocalResourceTemplate>,
    ) -> Result<bool, BuildError> {
        let mut next = Catalog::default();
        for resource in resources {
            next.add_resource(resource)?;
        }
        for template in templates {
            next.add_template(template)?;
        }
        let changed = !same_items(self.resources.iter(), next.resources.iter(), |r| {
            &r.resource
        }) || !same_items(self.templates.iter(), next.templates.iter(), |t| {
            &t.template
        });
        self.resources = next.resources;
        self.templates = next.templates;
        Ok(changed)
    }

    pub(crate) fn tool(&self, name: &str) -> Option<Arc<ToolEntry>> {
        self.tools.get(name).cloned()
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<Arc<PromptEntry>> {
        self.prompts.get(name).cloned()
    }

    pub(crate) fn has_tool(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The resource at `uri`, or the first template it matches.
    pub(crate) fn resource(&self, uri: &str) -> Option<ResourceMatch> {
        if let Some(fixed) = self.resources.iter().find(|r| r.resource.uri == uri) {
            return Some(ResourceMatch {
                handler: fixed.handler.clone(),
                request: ReadRequest::new(uri.to_owned(), Default::default()),
                mime_type: mime_or_text(fixed.resource.mime_type.as_deref()),
            });
        }
        self.templates.iter().find_map(|t| {
            let variables = t.pattern.as_ref().ok()?.matches(uri)?;
            Some(ResourceMatch {
                handler: t.handler.clone(),
                request: ReadRequest::new(uri.to_owned(), variables),
                mime_type: mime_or_text(t.template.mime_type.as_deref()),
            })
        })
    }

    /// What the server announces: tools always (their list may change), the rest when some
    /// are registered, and logging.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: Some(ListChangedCapability {
                list_changed: Some(true),
                extra: Map::new(),
            }),
            resources: (!self.resources.is_empty() || !self.templates.is_empty()).then(|| {
                ResourcesCapability {
                    subscribe: None,
                    list_changed: None,
                    extra: Map::new(),
                }
            }),
            prompts: (!self.prompts.is_empty()).then(ListChangedCapability::default),
            logging: Some(Value::Object(Map::new())),
            ..ServerCapabilities::default()
        }
    }

    pub(crate) fn list_tools(&self) -> Result<Value, ErrorObject> {
        let tools = self
            .tool_order
            .iter()
            .filter_map(|name| self.tools.get(name))
            .map(|entry| entry.tool.definition.clone())
            .collect();
        encode(ListToolsResult {
            tools,
            next_cursor: None,
            cache: Default::default(),
            extra: Map::new(),
        })
    }

    pub(crate) fn list_resources(&self) -> Result<Value, ErrorObject> {
        encode(ListResourcesResult {
            resources: self.resources.iter().map(|r| r.resource.clone()).collect(),
            next_cursor: None,
            cache: Default::default(),
            extra: Map::new(),
        })
    }

    pub(crate) fn list_templates(&self) -> Result<Value, ErrorObject> {
        encode(ListResourceTemplatesResult {
            resource_templates: self.templates.iter().map(|t| t.template.clone()).collect(),
            next_cursor: None,
            cache: Default::default(),
            extra: Map::new(),
        })
    }

    pub(crate) fn list_prompts(&self) -> Result<Value, ErrorObject> {
        let prompts = self
            .prompt_order
            .iter()
            .filter_map(|name| self.prompts.get(name))
            .map(|entry| entry.prompt.prompt.clone())
            .collect();
        encode(ListPromptsResult {
            prompts,
            next_cursor: None,
            cache: Default::default(),
            extra: Map::new(),
        })
    }
}

/// Whether two lists show clients the same definitions, in the same order.
fn same_items<'a, T: 'a, D: PartialEq + 'a>(
    old: impl Iterator<Item = &'a T>,
    new: impl Iterator<Item = &'a T>,
    definition: impl Fn(&'a T) -> &'a D,
) -> bool {
    old.map(&definition).eq(new.map(&definition))
}

fn mime_or_text(mime: Option<&str>) -> String {
    mime.unwrap_or("text/plain").to_owned()
}

fn encode(value: impl Serialize) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::internal(e.to_string()))
}
