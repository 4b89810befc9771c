//! `mcp-transport-stdio`: reach an MCP server by running it as a child process.
//!
//! The server's stdin and stdout carry newline-delimited JSON-RPC; its stderr is kept in a bounded
//! ring buffer (and logged through `tracing`) so that when the server dies, every pending request
//! fails at once with the exit status and the last lines it wrote.
//!
//! - [`StdioServerConfig`]: command, arguments, environment, working directory, limits.
//! - [`StdioTransport`]: the [`mcp_core::Transport`] over a child process.
//! - [`StdioConnector`]: a new child per connection, for pools, supervisors and the facade's
//!   registry of transports (`type: "stdio"`).
//! - framing: newline-delimited JSON with a message-size cap; each line becomes a message, an
//!   error for the request it names (or a fatal one), or a skipped log line (below).
//! - process: the child's process group and its shutdown (stdin EOF → SIGTERM → SIGKILL).
//! - stderr: the ring buffer of the child's stderr, bounded while it is read.
//! - fuzzing (hidden): the framing reached without a child, for the targets in `fuzz/`.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_core::Error> {
//! use mcp_core::{McpServiceExt, RequestOptions};
//! use mcp_session::{ClientSession, SessionOptions};
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
//! - **stdout**: a line is read up to [`StdioServerConfig::max_message_size`] (`max`) and no
//!   further; what it becomes depends on its bytes only, never on how they arrived:
//!   - over the cap, with its first KiB naming the request it answers
//!     (`{"jsonrpc":"2.0","id":5,…`): that request fails with a protocol error as soon as the
//!     cap is passed (the line's end is not waited for), the rest of the line is discarded as it
//!     arrives, and the connection goes on if it ends within `max` plus the larger of `max`
//!     and 16 MiB (nothing waits on it any more; a large but finite answer costs only the
//!     reading); past that (an endless line) the error is fatal, as below;
//!   - over the cap, naming no request in its first KiB (`{"result":…`, the TypeScript SDK's
//!     order, with the id last): discarded as it arrives, keeping only its first and last KiB,
//!     with an allowance of another `max` bytes to end. If it ends within `2 × max` bytes, the
//!     request its ends name (the id as its last member) fails with a protocol error (none if
//!     they name none) and the connection goes on; once it passes `2 × max` bytes (an endless
//!     line), the error is fatal, naming the cap: an endless line ends the connection after
//!     `2 × max` bytes, not at a timeout;
//!   - not UTF-8: when it names a request (member by member, or as its last member), that
//!     request fails with a protocol error naming the line number and the byte offset of the
//!     first bad byte, and the connection goes on; the server's own request or notification (a
//!     `method` member before the bad byte) is reported for no request and the connection goes
//!     on; another JSON object naming none is fatal (an answer may be lost and nothing tells
//!     whose); anything else (a log line in Latin-1, binary output) is logged, as a redacted
//!     excerpt with its bad bytes replaced, and skipped;
//!   - JSON but not JSON-RPC, or JSON-RPC-shaped but broken: fails the request it names; other
//!     lines (a stray `console.log`) are logged and skipped.
//!
//!   A fatal error ends the transport: every request in flight fails at once with it
//!   ([`mcp_core::ErrorKind::Protocol`], naming the server), nothing more is read from the child,
//!   and closing or dropping the transport stops it as usual. The client holds at most one line
//!   of `max` bytes (plus 3 KiB of an over-cap line's ends) at a time.
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
mod connector;
mod framing;
#[doc(hidden)]
pub mod fuzzing;
mod process;
mod stderr;
mod transport;

pub use config::StdioServerConfig;
pub use connector::StdioConnector;
pub use transport::{StdioReceiver, StdioSender, StdioTransport};
