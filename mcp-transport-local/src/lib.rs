//! `mcp-transport-local`: MCP servers in the same process — tools, resources and prompts
//! written as async Rust functions, reached through the ordinary client session without a
//! process boundary, a socket or serialization. Requests are answered in the caller's task (see
//! `TransportSender::answer_in_place` in `mcp-core`): a call costs its handler's work and about
//! a microsecond more, a third of the same call through a channel and the session's reader
//! (`benches/local_call.rs`).
//!
//! - [`LocalServer`]: the server (its catalog, connections, counters), [`LocalServer::connect`]
//!   and [`LocalServer::connector`] (a new connection per connect, for the facade's
//!   `McpClientBuilder::local_server`, pools and supervisors); [`crash`](LocalServer::crash) and
//!   [`shutdown`](LocalServer::shutdown).
//! - [`LocalServerBuilder`]: identity, registrations, [`Eras`] (the session may open it with
//!   `server/discover` — 2026-07-28 — or `initialize`), limits.
//! - [`LocalTool`]: a tool from an async function of typed arguments (`serde::Deserialize`; the
//!   input schema generated with `schemars` 1.x), its description and annotations. What it
//!   returns: [`IntoToolResult`] — text, content, [`Json`] (`structuredContent`, with the
//!   output schema), a whole `CallToolResult`; failures: [`ToolError`].
//! - [`LocalResource`], [`LocalResourceTemplate`] (`scheme://items/{id}`), [`ReadRequest`],
//!   [`IntoReadResult`]; [`LocalPrompt`], [`IntoPromptResult`].
//! - [`RequestContext`]: what a handler can do — progress, logging, notifications, requests to
//!   the client (elicitation, sampling, roots; [`ClientRequestError`]), cancellation.
//! - [`LocalTransport`], [`LocalConnector`]: the connection, client side (`"inproc"`).
//! - [`NoArguments`]: the arguments of a tool that takes none.
//! - [`fixture`] (feature `fixture`): the fixture server's tools as a local server, for tests.
//!
//! Internals, one file each: `dispatch.rs` (what each request is answered with), `in_place.rs`
//! (answering in the caller's task), `call.rs`
//! (running a handler: panics, counts, modern input rounds), `connection.rs` (a connection's
//! task, queue, calls and end), `era.rs` (the eras, server side), `arguments.rs` (typed
//! arguments and the field a bad one names), `schema.rs`, `catalog.rs`.
//!
//! Handlers run in the task of whoever awaits the call: like any async code they must not
//! block (hand blocking work to `tokio::task::spawn_blocking`, and let it watch
//! [`RequestContext::is_cancelled`]). A panicking handler fails its call (a tool: an
//! `isError` result naming the panic), never the caller.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_core::{McpServiceExt, RequestOptions};
//! use mcp_session::{ClientSession, SessionOptions};
//! use mcp_transport_local::{Json, LocalServer, LocalTool, RequestContext, ToolError};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     a: f64,
//!     b: f64,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Sum {
//!     sum: f64,
//! }
//!
//! let server = LocalServer::builder("calculator", "1.0.0")
//!     .tool(
//!         LocalTool::new("add", |_ctx: RequestContext, args: AddArgs| async move {
//!             Ok::<_, ToolError>(Json(Sum { sum: args.a + args.b }))
//!         })
//!         .description("Adds two numbers")
//!         .read_only(),
//!     )
//!     .build()?;
//! let session = ClientSession::connect(server.connect()?, (), SessionOptions::default()).await?;
//! let result = session
//!     .call_tool("add", Some(serde_json::json!({"a": 2, "b": 3})), RequestOptions::new())
//!     .await?;
//! assert_eq!(result.structured_content, Some(serde_json::json!({"sum": 5.0})));
//! session.close().await;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]
// The table of contents links the `fixture` module, which exists only with its feature.
#![cfg_attr(not(feature = "fixture"), allow(rustdoc::broken_intra_doc_links))]

mod arguments;
mod builder;
mod call;
mod catalog;
mod connection;
mod connector;
mod context;
mod dispatch;
mod era;
mod error;
#[cfg(feature = "fixture")]
pub mod fixture;
mod in_place;
mod prompt;
mod resource;
mod result;
mod schema;
mod server;
mod tool;
mod transport;

pub use builder::LocalServerBuilder;
pub use connector::LocalConnector;
pub use context::RequestContext;
pub use era::Eras;
pub use error::{BuildError, ClientRequestError, ToolError};
pub use prompt::{IntoPromptResult, LocalPrompt};
pub use resource::{IntoReadResult, LocalResource, LocalResourceTemplate, ReadRequest};
pub use result::{IntoToolResult, Json};
pub use schema::NoArguments;
pub use server::LocalServer;
pub use tool::LocalTool;
pub use transport::{LocalReceiver, LocalSender, LocalTransport};

/// The `schemars` this crate generates schemas with (derive `JsonSchema` with it, or with
/// your own dependency on `schemars` 1.x).
pub use schemars;
