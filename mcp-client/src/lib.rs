//! `mcp-client`: the facade a harness talks to.
//!
//! - [`config`]: the configuration files users already have (Claude Desktop / Claude Code /
//!   Cursor `mcpServers`, VS Code `servers`, Codex `[mcp_servers.*]`), with `${VAR}` expansion.
//! - [`McpClient`] (`client/`): starts every configured server in parallel with partial
//!   availability, keeps one tool catalog under qualified names, routes calls, adds and removes
//!   servers at run time, and shuts everything down; [`McpClientBuilder`] sets it up.
//! - `supervisor/`: each server's life cycle — start, reconnect on a backoff schedule,
//!   unavailable and probed, needs credentials — with [`SupervisionPolicy`].
//! - `stack.rs`: each server's call stack (timeout → retry → rate limit → breaker → pool, or
//!   the task follower and the session), chosen by [`StackPolicy`]; [`tasks`] the Tasks
//!   extension.
//! - `router/` (`enterprise`): a server with several endpoints — the nearest healthy one
//!   serves ([`RoutingPolicy`]); sessions pinned to an endpoint, failover and failback
//!   reported as [`Failover`] events.
//! - `routing.rs`: which server offers a resource or prompt, from lists kept until they change.
//! - `resources.rs`: each server's resources — reads, resources resubscribed on every new
//!   session, and (feature `resources`) [`mcp_resources`]' state machine and cache.
//! - [`catalog`]: the tool and prompt catalogs and their diffs ([`CatalogChange`], and
//!   [`ListChange`] for a server's prompts and resources).
//! - [`llm`]: the tool list handed to a model ([`LlmToolList`]): stable order, stable bytes,
//!   after the harness's own tools.
//! - [`metrics`] ([`mcp_metrics`]): every call counted by the outermost layer of each stack,
//!   plus caches, reconnects, token refreshes and sessions; [`McpClient::metrics`] the
//!   snapshot, OpenTelemetry and Prometheus export behind features.
//! - [`naming`]: qualified `server__tool` names within the 64-character limit of model APIs.
//! - [`status`]: each server's visible state ([`ServerReport`]).
//! - `auth` (feature `oauth`): OAuth for remote servers — stored tokens on every request,
//!   `needs-auth` when a login is needed, tokens for stdio servers through the environment.
//! - [`fleet`] (feature `fleet`, `enterprise`): a fleet's shared store on Redis — OAuth tokens
//!   shared by every replica, fleet-wide rate limits.
//! - Re-exported for what a harness (or `mcph`) drives beyond the facade: `mcp_auth`
//!   (feature `oauth`: logins, OAuth clients), `mcp_fleet` (`fleet`), `mcp_resources`
//!   (`resources`), [`metrics`], and `GrpcBridge` (`grpc-bridge`, in no profile: serving a
//!   server over gRPC).
//! - [`transports`]: where a server is and which transport reaches it — [`TransportRegistry`]
//!   of [`TransportFactory`]s, the profile's built-ins and a harness's own; `connect.rs` each
//!   server's [`SessionConnector`](mcp_session::SessionConnector) on top.
//!
//! Profiles are cargo features: `minimal` (core + stdio), `professional`, `enterprise`; see
//! [`PROFILE`].

#![warn(missing_docs)]

#[cfg(feature = "oauth")]
pub mod auth;
mod builder;
pub mod catalog;
mod client;
pub mod config;
mod connect;
#[cfg(feature = "fleet")]
pub mod fleet;
mod handler;
pub mod llm;
pub mod naming;
mod resources;
mod router;
mod routing;
mod server;
mod stack;
pub mod status;
mod supervisor;
pub mod transports;

#[cfg(feature = "oauth")]
pub use auth::OAuthPolicy;
pub use builder::{McpClientBuilder, SessionOptionsHook, DEFAULT_MAX_CONCURRENT_STARTS};
pub use catalog::{Catalog, CatalogChange, CatalogPrompt, CatalogTool, ListChange, ListKind};
#[allow(deprecated)]
pub use client::Gathered;
pub use client::{
    CatalogResource, CatalogResourceTemplate, ClientOptions, FromAllServers, McpClient,
    REGION_VARIABLE,
};
pub use config::{ClientConfig, EndpointConfig, ServerConfig, TransportConfig};
pub use handler::ClientNotification;
pub use llm::{LlmToolFormat, LlmToolList};
pub use router::{EndpointRef, Failover, FailoverReason, RouteCandidate, RoutingPolicy};
pub use stack::{RetryStyle, StackPolicy};
pub use status::{
    BreakerStatus, EndpointReport, EndpointState, PoolReport, ServerReport, ServerStatus,
};
pub use supervisor::SupervisionPolicy;
pub use transports::{TransportFactory, TransportRegistry, TransportSpec};

/// The metrics crate: the snapshot types [`McpClient::metrics`] returns, the registry,
/// Prometheus (feature `prometheus`) and OpenTelemetry (feature `otel`) export.
pub use mcp_metrics as metrics;

/// The Tasks extension's crate: [`McpClient::call_tool_as_task`]'s
/// [`ToolCallOutcome`](tasks::ToolCallOutcome), [`Task`](tasks::Task), and
/// [`TasksExt`](tasks::TasksExt) to get, wait for or cancel a task through
/// [`McpClient::service`]. Every server's stack follows the tasks of a server that offers the
/// extension ([`FollowTasksLayer`](tasks::FollowTasksLayer)).
pub use mcp_tasks as tasks;

/// The resource manager's crate (feature `resources`): states, transitions, observers.
#[cfg(feature = "resources")]
pub use mcp_resources;

/// The OAuth crate (feature `oauth`), whose types [`OAuthPolicy`] takes: what a harness drives
/// itself — an interactive login (`login::LoopbackLogin`, an `Authorizer`), an `OAuthClient`
/// for `auth::oauth_config`'s settings, token stores.
#[cfg(feature = "oauth")]
pub use mcp_auth;

/// The fleet crate (feature `fleet`): the `Fleet` that [`fleet::open`] returns, and
/// `StoreKeyMaterial`, a new store key.
#[cfg(feature = "fleet")]
pub use mcp_fleet;

/// The gRPC bridge (feature `grpc-bridge`): serves one server over gRPC, a new connection of
/// any transport connector (say, from the [`TransportRegistry`]) per gRPC call.
#[cfg(feature = "grpc-bridge")]
pub use mcp_transport_grpc::{GrpcBridge, GrpcBridgeHandle};

/// The most capable profile compiled in: `enterprise`, `professional` or `minimal`.
pub const PROFILE: &str = if cfg!(feature = "enterprise") {
    "enterprise"
} else if cfg!(feature = "professional") {
    "professional"
} else if cfg!(feature = "minimal") {
    "minimal"
} else {
    "custom"
};
