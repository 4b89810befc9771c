//! `mcp-pool`: a pool of MCP sessions to one server, on [bb8](https://docs.rs/bb8), usable as
//! an [`McpService`](mcp_core::McpService) like a single session (requirement R-POOL).
//!
//! - [`config`]: [`PoolConfig`] — min 2 idle, max 10, idle sessions closed after 300 s, a
//!   `ping` every 60 s on idle ones, 10 s to connect; optionally load-sized.
//! - [`pool`]: [`SessionPool`] — the shared handle and its [`McpService`](mcp_core::McpService)
//!   implementation: each call checks one session out, bounded by the call's deadline, and
//!   returns it when the call ends.
//! - `manager`: bb8's `ManageConnection` over a [`SessionConnector`](mcp_session::SessionConnector); health
//!   checks without a round trip; graceful closing of discarded sessions.
//! - `keepalive`: the task each pooled session owns, which pings it when idle.
//! - `sizing`: load-sized mode, a target size in front of bb8.
//! - [`stats`]: [`PoolStats`], a snapshot built from bb8's `State`/`Statistics` and the pool's
//!   own counters.
//! - `tasks`: who owns which task.
//!
//! # Callers, and who may share a session
//!
//! **A session whose server keeps per-session state is never shared between unrelated
//! callers.** That rule decides what a pool is for:
//!
//! - A *caller* is one client of the harness: one [`SessionPool`] per client per server
//!   address, where one harness client serves one caller — typically one agent conversation.
//!   A pool is never global, and never shared across clients: two conversations get two
//!   pools, so whatever a server remembers about a session (subscriptions, logging level,
//!   roots, tool state) stays within one conversation.
//! - Within a pool, every call is bound to one session for its whole duration — no session
//!   carries two calls at once — and sessions are reused by later calls of the same client.
//!   Successive calls of one client may land on different sessions.
//! - A 2026-07-28 server keeps no session state at all: nothing to protect, so the facade
//!   does not pool it (every call shares one session; the HTTP transport pools connections).
//! - A server that needs session affinity *across* calls (state set by one call and read by the
//!   next) must not be pooled: use one session, or a pool with `max_size` 1.
//! - The pool is transport-agnostic: it opens sessions through a
//!   [`SessionConnector`](mcp_session::SessionConnector). The facade does not pool stdio servers by default —
//!   each pooled stdio session is a child process.
//!
//! # Lifecycle
//!
//! Nothing connects until the first call. Then bb8 opens `min_idle` sessions and keeps that
//! many idle from then on (in addition to those in use: bb8's `min_idle` counts idle sessions,
//! so after the first call a default pool holds 3 — the one the call used and 2 idle), opens
//! more on demand up to `max_size`, and closes idle ones after `idle_timeout`.
//!
//! bb8 0.9's reaper, read from its source: every `reaper_interval` (30 s) it closes **every**
//! idle session idle for `idle_timeout` or longer — not only those above `min_idle` — and then
//! opens new ones to get back to `min_idle` idle. So a pool left alone shrinks to `min_idle`
//! sessions, but those are fresh ones: the idle minimum is replaced once per `idle_timeout`
//! (keepalive pings do not count as use for bb8). bb8 measures idleness with
//! `std::time::Instant`, so tokio's paused clock does not advance it. Sessions are handed out
//! most-recently-used first (bb8's LIFO), so the sessions a light load does not need stay idle
//! and are closed.
//!
//! bb8 also tops the idle sessions up to `min_idle` after every checkout and at every reaper
//! tick, so while a server is down the pool tries to open `min_idle` sessions every
//! `reaper_interval` (each failure is logged and counted). bb8 opens sessions in its own tasks
//! and gives their errors only to its error sink; the pool therefore announces each failed
//! connect to waiting callers itself, and a caller that has nothing left to wait for (no
//! session open, none being opened) gets the connector's error at once instead of waiting out
//! its deadline. Each connect runs in a task of its own, so a connector that panics is an error
//! too, not a slot bb8 never gets back.
//!
//! A session is broken when it has ended (server gone, connection lost) or failed a keepalive
//! ping; bb8 discards it on its next checkout or return — no round trip on checkout — and opens
//! a replacement. [`SessionPool::close`] ends the pool gracefully; dropping the last handle ends
//! every session and every task of the pool at once (bb8's reaper, which only holds a weak
//! reference, ends at its next tick).
//!
//! # Errors
//!
//! - No session free before the call's deadline: [`ErrorKind::Timeout`](mcp_core::ErrorKind),
//!   never sent, naming how many sessions were in use.
//! - A session could not be opened: the connector's error (a connect that takes longer than
//!   `connect_timeout` is a timeout), never sent.
//! - The pool is closed: [`ErrorKind::ServerUnavailable`](mcp_core::ErrorKind), never sent.
//!
//! # Example
//!
//! ```no_run
//! # async fn run(connector: impl mcp_session::SessionConnector) -> Result<(), mcp_core::Error> {
//! use mcp_core::{McpServiceExt, RequestOptions};
//! use mcp_pool::{PoolConfig, SessionPool};
//!
//! let pool = SessionPool::new(connector, PoolConfig::default().with_max_size(4));
//! let arguments = Some(serde_json::json!({"text": "hi"}));
//! let result = pool.call_tool("echo", arguments, RequestOptions::new()).await?;
//! println!("{}", result.text());
//! println!("{} sessions, {} in use", pool.stats().connections, pool.stats().in_use);
//! pool.close().await;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod config;
mod keepalive;
mod manager;
pub mod pool;
mod sizing;
pub mod stats;
mod tasks;

pub use config::PoolConfig;
pub use pool::{SessionPool, CLOSE_WAIT};
pub use stats::PoolStats;
