//! `mcp-testkit`: a fixture MCP (Model Context Protocol) **server** used by the
//! workspace's tests and benchmarks to exercise the MCP client.
//!
//! It is deliberately independent of the other workspace crates but one, `mcp-fixture` (as
//! independent): messages are plain `serde_json` values, so the fixture is a second,
//! independent reading of the specification (revision 2025-11-25).
//!
//! The core ([`FixtureServer`]) is mcp-fixture's, and so is the stdio server: this crate
//! re-exports its modules under their old paths. It takes one incoming JSON-RPC message at a
//! time ([`FixtureServer::handle_line`]) and emits every outgoing message (responses,
//! notifications, server→client requests) as an [`Outgoing`] on a channel. [`stdio::serve`]
//! wraps it into a newline-delimited JSON loop; the `mcp-fixture-server` binary runs that loop
//! on stdin/stdout, serves HTTP with `--http 127.0.0.1:0` ([`http::serve_http`]), or WebSocket
//! with `--ws 127.0.0.1:0` ([`ws::serve_ws`]).
//!
//! Modules of mcp-fixture, re-exported: [`event_log`], [`options`] ([`ServerOptions`], the
//! command-line parser), [`jsonrpc`], [`server`], [`tools`], [`resources`], [`prompts`],
//! [`pagination`], [`modern`], [`tasks`], [`stdio`], [`startup`] (see mcp-fixture's
//! documentation). This crate's own:
//! - [`http`]: Streamable HTTP (`/mcp`) and HTTP+SSE (`/sse`) on loopback, with faults:
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
//! - [`process`]: the processes a test starts, through one harness: [`process::ChildProcess`]
//!   (its own process group, output to a log or read until a ready line, readiness and exit
//!   under deadlines, the group killed on drop), [`process::free_port`], and where the
//!   third-party servers of `cargo xtask interop-setup` are ([`process::interop_component`]).
//! - [`redis`]: [`redis::RedisServer`], a real `redis-server` on a free loopback port for the
//!   fleet tests (kill, restart on the same port, freeze); a [`process::ChildProcess`].
//! - [`secret_service`]: a private D-Bus daemon with gnome-keyring, for the keyring tests; both
//!   [`process::ChildProcess`]es.
//! - [`run`]: the full fixture server's `main` (mcp-fixture's flags and start-up faults, then
//!   HTTP, WebSocket or the blocking stdio loop).
//! - [`wait`]: waiting in a test for something that happens on its own, under a deadline.

pub mod dpop;
pub mod http;
mod jws;
pub mod locate;
pub mod oauth;
pub mod peak_alloc;
pub mod process;
pub mod redis;
pub mod run;
pub mod secret_service;
pub mod wait;
pub mod ws;

/// The stdio fixture's modules, mcp-fixture's: one fixture core, reached by its old paths
/// (`mcp_testkit::tools::TOOL_NAMES`, `mcp_testkit::options::parse_args`, …) too.
pub use mcp_fixture::{
    event_log, jsonrpc, modern, options, pagination, prompts, resources, server, startup, stdio,
    tasks, tools,
};
pub use mcp_fixture::{
    LATEST_PROTOCOL_VERSION, SERVER_NAME, SERVER_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};

pub use http::{serve_http, HttpFixture};
pub use jsonrpc::RpcError;
pub use locate::{fixture_server_bin, pipe_pong_bin, FIXTURE_SERVER_BIN, PIPE_PONG_BIN};
pub use oauth::{OAuthOptions, OAuthStats};
pub use options::{parse_args, CliCommand, ServerOptions};
pub use server::{FixtureServer, LogLevel, Outgoing, OutgoingKind, OutgoingReceiver};
pub use stdio::{serve, serve_stdio, serve_stdio_blocking, MAX_LINE_BYTES};
pub use ws::{serve_ws, WsFixture};
