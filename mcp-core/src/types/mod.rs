//! MCP message types (protocol revisions 2026-07-28 and 2025-11-25, readable back to 2024-11-05).
//!
//! Every struct that models data from a server keeps members it does not know in `extra`, so a
//! newer server's additions survive a round trip. Optional members are omitted when absent.

mod content;
mod initialize;
mod modern;
mod notifications;
mod prompts;
mod resources;
mod server_requests;
mod tools;
mod utilities;

pub use content::{Annotations, Content, EmbeddedResource, Role};
pub use initialize::{
    ClientCapabilities, Implementation, InitializeRequestParams, InitializeResult,
    ListChangedCapability, ResourcesCapability, RootsCapability, ServerCapabilities,
};
pub use modern::{
    error_codes, meta, CacheHints, CacheScope, DiscoverResult, InputRequest, InputRequiredResult,
    ListenRequestParams, NotificationFilter, ResultType, UnsupportedVersionData,
};
pub use notifications::{
    CancelledNotificationParams, LoggingLevel, LoggingMessageNotificationParams,
    ProgressNotificationParams, ResourceUpdatedNotificationParams,
};
pub use prompts::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage,
};
pub use resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, SubscribeRequestParams,
};
pub use server_requests::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestParams,
    ElicitResult, ListRootsResult, Root, SamplingMessage,
};
pub use tools::{CallToolRequestParams, CallToolResult, ListToolsResult, Tool, ToolAnnotations};
pub use utilities::{
    CompleteRequestParams, CompleteResult, Completion, EmptyResult, PaginatedRequestParams,
    SetLevelRequestParams,
};

/// Unknown members of an object, preserved.
pub type Extra = serde_json::Map<String, serde_json::Value>;

/// An object member name, borrowed when unescaped: no allocation for members a visitor knows.
#[derive(serde::Deserialize)]
#[serde(transparent)]
pub(crate) struct MemberKey<'a>(#[serde(borrow)] pub(crate) std::borrow::Cow<'a, str>);

/// Method names of the messages a client sends and receives.
pub mod methods {
    /// Client → server: the handshake.
    pub const INITIALIZE: &str = "initialize";
    /// Either way: liveness check.
    pub const PING: &str = "ping";
    /// Client → server.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Client → server.
    pub const TOOLS_CALL: &str = "tools/call";
    /// Client → server.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// Client → server.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Client → server.
    pub const RESOURCES_READ: &str = "resources/read";
    /// Client → server.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Client → server.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// Client → server.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Client → server.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// Client → server.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// Client → server (legacy era; modern requests carry the level in `_meta`).
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// Client → server (modern era): supported versions, capabilities, server info.
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// Client → server (modern era): a long-lived stream of change notifications.
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// Server → client.
    pub const ROOTS_LIST: &str = "roots/list";
    /// Server → client.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Server → client.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    // The Tasks extension's methods (its types and follower are `mcp-tasks`), named here for crates
    // below it: HTTP names the task in `Mcp-Name`; `tasks/get` and `tasks/cancel` are idempotent.
    /// Client → server (the Tasks extension): a task's current state.
    pub const TASKS_GET: &str = "tasks/get";
    /// Client → server (the Tasks extension): answers to a task's input requests.
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// Client → server (the Tasks extension): asks the server to stop a task (cooperative).
    pub const TASKS_CANCEL: &str = "tasks/cancel";

    /// Whether `method` is a Tasks extension request (about one task, named by its `taskId`).
    pub fn is_task_method(method: &str) -> bool {
        matches!(method, TASKS_GET | TASKS_UPDATE | TASKS_CANCEL)
    }

    /// Client → server, after the handshake.
    pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
    /// Either way.
    pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
    /// Either way.
    pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
    /// Server → client.
    pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
    /// Server → client.
    pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// Server → client.
    pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// Server → client.
    pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// Server → client.
    pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// Client → server.
    pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// Server → client (modern era): the first message of a `subscriptions/listen` stream.
    pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
        "notifications/subscriptions/acknowledged";
    /// Server → client (2025-11-25).
    pub const NOTIFICATION_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
}
