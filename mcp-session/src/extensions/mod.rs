//! Protocol extensions (2026-07-28 extension negotiation): each is declared by the client in
//! `clientCapabilities.extensions` of every modern request and offered by the server in the
//! `extensions` of its capabilities ([`ServerCapabilities::extension`](mcp_core::types::ServerCapabilities::extension)).
//!
//! - [`tasks`]: `io.modelcontextprotocol/tasks` — a `tools/call` the server runs as a durable
//!   task; followed to its end by the session, or handled by the caller with
//!   [`TasksExt`](tasks::TasksExt).

pub mod tasks;
