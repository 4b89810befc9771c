//! `mcp-client`: the facade a harness talks to.
//!
//! - [`config`]: the configuration files users already have (Claude Desktop / Claude Code /
//!   Cursor `mcpServers`, VS Code `servers`, Codex `[mcp_servers.*]`), with `${VAR}` expansion.
//! - [`McpClient`]: starts every configured server in parallel with partial availability, keeps
//!   one tool catalog under qualified names, routes calls, and shuts everything down.
//! - [`naming`]: qualified `server__tool` names within the 64-character limit of model APIs.
//! - [`catalog`]: the tool and prompt catalogs.
//! - [`status`]: each server's visible state.
//!
//! Profiles are cargo features: `minimal` (core + stdio), `professional`, `enterprise`; see
//! [`PROFILE`].

#![warn(missing_docs)]

pub mod catalog;
mod client;
pub mod config;
mod connect;
pub mod naming;
pub mod status;

pub use catalog::{Catalog, CatalogPrompt, CatalogTool};
pub use client::{CatalogResource, ClientOptions, Gathered, McpClient};
pub use config::{ClientConfig, ServerConfig, TransportConfig};
pub use status::{ServerReport, ServerStatus};

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
