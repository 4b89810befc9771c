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
//! - stderr: the ring buffer of the child's stderr, bounded while it is read.
//! - fuzzing (hidden): the framing reached without a child, for the targets in `fuzz/`.
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
//! # A server that misbehaves
//!
//! What the client holds stays bounded, and a call ends as soon as its cause is known:
//! - **stdout**: a line is read up to [`StdioServerConfig::max_message_size`] and no further.
//!   One that passes the cap is reported at that moment, not at its end (an endless line has
//!   none): when its first bytes name the request it answers (`{"jsonrpc":"2.0","id":5,…`), that
//!   request fails with a protocol error and the connection goes on; otherwise (`{"result":…`
//!   with the id last, or no id at all) the error is fatal, since nothing tells which request to
//!   fail. A line that is not UTF-8 is fatal too, naming its line and the byte offset of the bad
//!   byte. A fatal error ends the transport: every request in flight fails at once with it
//!   ([`mcp_core::ErrorKind::Protocol`], naming the server), nothing more is read from the child,
//!   and closing or dropping the transport stops it as usual. A line that is JSON but not
//!   JSON-RPC, or JSON-RPC-shaped but broken, fails the request it names; other lines (a stray
//!   `console.log`) are logged and skipped.
//! - **stderr**: read as it comes, whatever the child writes (the child never blocks on a full
//!   pipe); a line keeps at most 4 KiB, text after a carriage return starts the line over (a
//!   progress bar keeps its latest state), and the tail keeps
//!   [`StdioServerConfig::stderr_buffer`] bytes.
//! - **the process**: a grandchild that keeps the pipes open does not keep a call waiting after
//!   the child exits, nor outlive close or drop (the whole process group is killed).
//!
//! Unix only: process groups and signals are POSIX.

#![warn(missing_docs)]

mod config;
mod factory;
mod framing;
#[doc(hidden)]
pub mod fuzzing;
mod process;
mod stderr;
mod transport;

pub use config::StdioServerConfig;
pub use factory::{StdioConnector, StdioFactory};
pub use transport::{StdioReceiver, StdioSender, StdioTransport};
