//! `mcp-transport-stdio`: reach an MCP server by running it as a child process.
//!
//! The server's stdin and stdout carry newline-delimited JSON-RPC; its stderr is kept in a bounded
//! ring buffer (and logged through `tracing`) so that when the server dies, every pending request
//! fails at once with the exit status and the last lines it wrote.
//!
//! - [`StdioServerConfig`]: command, arguments, environment, working directory, limits.
//! - [`StdioTransport`]: the [`mcp_core::Transport`] over a child process.
//! - [`StdioConnector`], [`StdioFactory`]: a new child per connection, for pools, supervisors
//!   and registries of transports (`type: "stdio"`).
//! - framing: newline-delimited JSON with a message-size cap; non-JSON lines are skipped.
//! - process: the child's process group and its shutdown (stdin EOF → SIGTERM → SIGKILL).
//! - stderr: the ring buffer of the child's stderr.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_core::Error> {
//! use mcp_core::{ClientSession, McpServiceExt, RequestOptions, SessionOptions};
//! use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
//!
//! let config = StdioServerConfig::new("mcp-server-everything").arg("stdio");
//! let transport = StdioTransport::spawn(config)?;
//! let session = ClientSession::connect(transport, (), SessionOptions::default()).await?;
//! println!("{:?}", session.list_all_tools(RequestOptions::new()).await?);
//! session.close().await;
//! # Ok(()) }
//! ```
//!
//! Unix only: process groups and signals are POSIX.

#![warn(missing_docs)]

mod config;
mod factory;
mod framing;
mod process;
mod stderr;
mod transport;

pub use config::StdioServerConfig;
pub use factory::{StdioConnector, StdioFactory};
pub use transport::{StdioReceiver, StdioSender, StdioTransport};
