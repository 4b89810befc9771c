//! `mcp-fixture`: the fixture MCP (Model Context Protocol) **server** over stdio — the
//! server `mcph` runs itself as when no configuration is found (`mcph __fixture-server`), and
//! the core of mcp-testkit's `mcp-fixture-server`, which adds Streamable HTTP,
//! HTTP+SSE, WebSocket and a mock OAuth authorization server around it.
//!
//! It is deliberately independent of the other workspace crates: messages are plain
//! `serde_json` values, so the fixture is a second, independent reading of the specification
//! (revision 2025-11-25, and 2026-07-28 with `--era dual|modern`).
//!
//! The core ([`FixtureServer`]) is transport-agnostic: it takes one incoming JSON-RPC message
//! at a time ([`FixtureServer::handle_line`]) and emits every outgoing message (responses,
//! notifications, server→client requests) as an [`Outgoing`] on a channel. [`stdio::serve`]
//! wraps it into a newline-delimited JSON loop; [`run::run`] is the stdio server's `main`.
//!
//! # Where the seam with mcp-testkit is
//!
//! The options are the full server's: [`ServerOptions`] carries the HTTP, WebSocket and
//! OAuth knobs as plain data, and [`parse_args`] parses every flag with one `--help`. That is
//! the least code that keeps one type and one parser for both crates (so mcp-testkit's tests
//! keep writing `ServerOptions { http_json: true, ..Default::default() }`), and it costs this
//! crate no dependency: [`options::OAuthOptions`] is a struct of knobs, the HTTP, WebSocket,
//! OAuth, DPoP and JWS code that acts on them lives in mcp-testkit. The stdio runner
//! ([`run::run`]) refuses `--http` and `--ws` with an error naming the binary that serves them
//! (exit 2), and ignores the other HTTP and OAuth knobs, as the full server does on stdio.
//!
//! Modules:
//! - [`event_log`]: `--event-log`, the executions and cancellations a test counts.
//! - [`options`]: [`ServerOptions`] and the command-line parser (fault-injection flags).
//! - [`jsonrpc`]: envelope parsing, error codes and output line builders.
//! - [`server`]: [`FixtureServer`], the shared state and request dispatch.
//! - [`tools`]: the tool catalog and the tool implementations.
//! - [`resources`]: the resources, the resource template and subscriptions.
//! - [`prompts`]: the `greeting` prompt and argument completion.
//! - [`pagination`]: opaque cursors for the list methods.
//! - [`conformance`]: `--conformance-content`, what the official conformance suite's server
//!   scenarios call (`test_*` tools, `test://` resources, `test_*` prompts).
//! - [`modern`], [`tasks`]: the 2026-07-28 era and the Tasks extension (the `job` tool).
//! - [`stdio`]: the newline-delimited JSON serving loops.
//! - [`startup`]: start-up fault injection (exit on start, stderr noise, grandchild, SIGTERM).
//! - [`run`]: the stdio server's `main` (flags, start-up faults, the blocking stdio loop).

pub mod conformance;
pub mod event_log;
pub mod jsonrpc;
pub mod modern;
pub mod options;
pub mod pagination;
pub mod prompts;
pub mod resources;
pub mod run;
pub mod server;
pub mod startup;
pub mod stdio;
pub mod tasks;
pub mod tools;

pub use jsonrpc::RpcError;
pub use options::{parse_args, CliCommand, ServerOptions};
pub use server::{FixtureServer, LogLevel, Outgoing, OutgoingKind, OutgoingReceiver};
pub use stdio::{serve, serve_stdio, serve_stdio_blocking, MAX_LINE_BYTES};

/// `serverInfo.name` announced in the `initialize` result.
pub const SERVER_NAME: &str = "mcp-fixture-server";

/// `serverInfo.version` announced in the `initialize` result (the crate version).
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The protocol revision answered when the client asks for an unsupported one.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Protocol revisions the fixture accepts as-is during `initialize`.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
