//! `mcp-testkit`: a fixture MCP (Model Context Protocol) **server** used by the
//! workspace's tests and benchmarks to exercise the MCP client.
//!
//! It is deliberately independent of the other workspace crates: messages are
//! plain `serde_json` values, so the fixture is a second, independent reading of
//! the specification (revision 2025-11-25).
//!
//! The core ([`FixtureServer`]) is transport-agnostic: it takes one incoming
//! JSON-RPC message at a time ([`FixtureServer::handle_line`]) and emits every
//! outgoing message (responses, notifications, server→client requests) as an
//! [`Outgoing`] on a channel. [`stdio::serve`] wraps it into a newline-delimited
//! JSON loop; the `mcp-fixture-server` binary runs that loop on stdin/stdout, serves HTTP
//! with `--http 127.0.0.1:0` ([`http::serve_http`]), or WebSocket with `--ws 127.0.0.1:0`
//! ([`ws::serve_ws`]).
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
//! - [`stdio`]: the newline-delimited JSON serving loop.
//! - [`http`]: Streamable HTTP (`/mcp`) and legacy HTTP+SSE (`/sse`) on loopback, with faults:
//!   [`serve_http`] returns an [`HttpFixture`].
//! - [`ws`]: the fixture over WebSocket (`/mcp`, subprotocol `mcp`, one session per
//!   connection; `crash` drops the connection): [`serve_ws`] returns a [`WsFixture`].
//! - [`oauth`]: the OAuth mode of the HTTP fixture (`--oauth`): a protected `/mcp` and its own
//!   mock authorization server ([`OAuthOptions`], [`OAuthStats`]).
//! - [`dpop`]: DPoP proofs (RFC 9449) as the OAuth mode verifies them (`--oauth-dpop`).
//! - `jws`: compact ES256 JWS (split, JSON parts, P-256 keys, signature), for DPoP proofs and
//!   `private_key_jwt` client assertions.
//! - [`locate`]: [`fixture_server_bin`], the binary's path for other crates' tests.
//! - [`peak_alloc`]: [`peak_alloc::PeakAlloc`], a counting global allocator: the memory bound
//!   of a hostile-peer test.
//! - [`redis`]: [`redis::RedisServer`], a real `redis-server` on a free loopback port for the
//!   fleet tests (kill, restart on the same port, freeze).
//! - [`run`]: the fixture server's `main` (flags, start-up faults, the blocking stdio loop).
//! - [`startup`]: start-up fault injection (exit on start, stderr noise, grandchild, SIGTERM).
//! - [`wait`]: waiting in a test for something that happens on its own, under a deadline.

pub mod dpop;
pub mod event_log;
pub mod http;
pub mod jsonrpc;
mod jws;
pub mod locate;
pub mod modern;
pub mod oauth;
pub mod options;
pub mod pagination;
pub mod peak_alloc;
pub mod prompts;
pub mod redis;
pub mod resources;
pub mod run;
pub mod secret_service;
pub mod server;
pub mod startup;
pub mod stdio;
pub mod tasks;
pub mod tools;
pub mod wait;
pub mod ws;

pub use http::{serve_http, HttpFixture};
pub use jsonrpc::RpcError;
pub use locate::{fixture_server_bin, pipe_pong_bin, FIXTURE_SERVER_BIN, PIPE_PONG_BIN};
pub use oauth::{OAuthOptions, OAuthStats};
pub use options::{parse_args, CliCommand, ServerOptions};
pub use server::{FixtureServer, LogLevel, Outgoing, OutgoingKind, OutgoingReceiver};
pub use stdio::{serve, serve_stdio, serve_stdio_blocking, MAX_LINE_BYTES};
pub use ws::{serve_ws, WsFixture};

/// `serverInfo.name` announced in the `initialize` result.
pub const SERVER_NAME: &str = "mcp-fixture-server";

/// `serverInfo.version` announced in the `initialize` result (the crate version).
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The protocol revision answered when the client asks for an unsupported one.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Protocol revisions the fixture accepts as-is during `initialize`.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
