//! [`LocalServerBuilder`]: a server's identity, its tools, resources and prompts, which eras
//! it speaks, and its limits.

use std::time::Duration;

use mcp_core::types::Implementation;

use crate::catalog::Catalog;
use crate::era::Eras;
use crate::error::BuildError;
use crate::prompt::LocalPrompt;
use crate::resource::{LocalResource, LocalResourceTemplate};
use crate::server::{LocalServer, Settings};
use crate::tool::LocalTool;

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
            },
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
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
