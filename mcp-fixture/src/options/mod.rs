//! Server options and the hand-rolled command-line parser.
//!
//! [`ServerOptions`] holds every flag of the full fixture server — the HTTP, WebSocket and
//! OAuth ones too, as plain data — so that one type, one parser ([`parse_args`], `parse.rs`)
//! and one `--help` ([`HELP`], `help.rs`) serve this crate's stdio runner and mcp-testkit's
//! `mcp-fixture-server` alike. Only mcp-testkit acts on the HTTP and OAuth knobs; see the
//! crate documentation for what the stdio runner does with them.
//!
//! Every flag accepts `--flag VALUE` and `--flag=VALUE`.

mod help;
mod oauth;
mod parse;
#[cfg(test)]
mod tests;

pub use help::HELP;
pub use oauth::OAuthOptions;
pub use parse::{check_extra_tool_name, parse_args, MAX_EXTRA_TOOL_NAME_LEN};

/// Behaviour switches of the fixture server, mostly fault injection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOptions {
    /// Delay every response by this many milliseconds (`--delay-ms`).
    pub delay_ms: u64,
    /// Write a non-JSON line to stdout before every response (`--garbage-lines`).
    pub garbage_lines: bool,
    /// On stdin EOF keep running instead of exiting (`--ignore-stdin-eof`).
    pub ignore_stdin_eof: bool,
    /// Ignore SIGTERM (`--ignore-sigterm`).
    pub ignore_sigterm: bool,
    /// Lines of noise written to stderr at start-up (`--stderr-noise`).
    pub stderr_noise: u64,
    /// Never answer `initialize` (`--hang-on-initialize`).
    pub hang_on_initialize: bool,
    /// Exit with this code immediately at start-up (`--exit-on-start`).
    pub exit_on_start: Option<i32>,
    /// Exit with code 3 at start-up while this file exists (`--refuse-start-while PATH`): a
    /// server that can be made to fail its restarts, and to come back.
    pub refuse_start_while: Option<std::path::PathBuf>,
    /// Spawn a `sleep 600` child at start-up (`--spawn-grandchild`).
    pub spawn_grandchild: bool,
    /// Number of initial `fail` calls that fail, server-wide (`--fail-first`).
    pub fail_first: u64,
    /// Page size of the list methods; 0 disables pagination (`--page-size`).
    pub page_size: usize,
    /// Force the protocol version answered to `initialize` (`--protocol-version`).
    pub protocol_version: Option<String>,
    /// Which protocol eras are served (`--era legacy|dual|modern`, default legacy); see
    /// [`crate::modern`].
    pub era: crate::modern::EraMode,
    /// How long tools wait for the client's answer to a server→client request
    /// (`--client-timeout-ms`, default 30000).
    pub client_timeout_ms: u64,
    /// Serve HTTP (Streamable HTTP at `/mcp`, HTTP+SSE at `/sse`) on this loopback
    /// address instead of stdio (`--http ADDR`).
    pub http: Option<std::net::SocketAddr>,
    /// Serve WebSocket (`/mcp`, subprotocol `mcp`, one session per connection) on this
    /// loopback address instead of stdio (`--ws ADDR`); served by mcp-testkit's `ws` module.
    pub ws: Option<std::net::SocketAddr>,
    /// HTTP: answer requests with a single `application/json` response instead of an SSE
    /// stream (`--http-json`).
    pub http_json: bool,
    /// HTTP: answer GET on `/mcp` with 405 (no standalone stream, no resumption) (`--http-no-get`).
    pub http_no_get: bool,
    /// HTTP: no session ids at all; one implicit session (`--http-stateless`).
    pub http_stateless: bool,
    /// HTTP: close every POST's SSE stream after N events (not counting the priming event),
    /// before its response, once per stream (`--http-drop-sse-after`).
    pub http_drop_sse_after: Option<u64>,
    /// HTTP: a session expires after N JSON-RPC requests (initialize included); every later
    /// HTTP request carrying its id gets 404 (`--http-expire-session-after`).
    pub http_expire_session_after: Option<u64>,
    /// HTTP: answer the first N POSTs (server-wide, both transports) with 503 (`--http-fail-first`).
    pub http_fail_first: u64,
    /// HTTP: delay every HTTP response by N milliseconds (`--http-delay-ms`).
    pub http_delay_ms: u64,
    /// HTTP: the first N `tools/call` POSTs (server-wide) never get response headers
    /// (`--http-stall-first`); the request is not handled.
    pub http_stall_first: u64,
    /// HTTP: the first N `tools/call` POSTs get 200 and headers, then a body that trickles one
    /// meaningless byte every 100 ms and never ends (`--http-trickle-first`); not handled.
    pub http_trickle_first: u64,
    /// HTTP: the first N `tools/call` POSTs get 500 with an endless body
    /// (`--http-endless-error-first`); not handled.
    pub http_endless_error_first: u64,
    /// HTTP: serve `POST /control/fail-next/N` (the next N POSTs get 503) and
    /// `POST /control/expire-sessions` (every session is forgotten: its next request gets 404),
    /// for tests that inject faults at chosen moments (`--http-control`).
    pub http_control: bool,
    /// HTTP: every request must carry `Authorization: Bearer <token>`; anything else gets 401
    /// with `WWW-Authenticate: Bearer realm="fixture"` (`--http-bearer TOKEN`). Under `--ws`
    /// the WebSocket upgrade request must carry it.
    pub http_bearer: Option<String>,
    /// HTTP: OAuth mode — `/mcp` (and the HTTP+SSE endpoints) need an access token issued by the
    /// fixture's own mock authorization server, served on the same origin (`--oauth`,
    /// `--oauth-token-ttl SECS`, `--oauth-required-scope S`, `--oauth-dpop`,
    /// `--oauth-dpop-nonce`, `--oauth-dpop-optional`, `--oauth-dpop-split-challenges`,
    /// `--oauth-dpop-refuse-proofs`); served by mcp-testkit's `oauth` module.
    pub oauth: Option<OAuthOptions>,
    /// Append one JSON line per request, executed `tools/call`, `notifications/cancelled` and
    /// HTTP fault to this file (`--event-log PATH`); see [`crate::event_log`].
    pub event_log: Option<std::path::PathBuf>,
    /// Once the client is initialized, every N milliseconds: toggle `dynamic_tool` (sending
    /// `notifications/tools/list_changed`) and bump `fixture://counter` (sending
    /// `notifications/resources/updated` when it is subscribed) (`--churn-every-ms N`) — a
    /// server that changes on its own, for watchers.
    pub churn_every_ms: Option<u64>,
    /// List one more tool, `instance` (read-only, idempotent, no arguments), answering one text
    /// block with exactly this label (`--instance LABEL`, non-empty; default none: no such
    /// tool) — which of several fixture servers answered, for routing tests.
    pub instance: Option<String>,
    /// List one more echo-like tool per name, after the others and in this order
    /// (`--extra-tool NAME`, repeatable; default none): input schema
    /// `{"type":"object","properties":{"text":{"type":"string"}}}`, answering one text block
    /// `NAME: <text>` — a server whose tool list differs from its siblings'. `parse_args` takes
    /// only names that pass [`check_extra_tool_name`], each once; set in process, the names
    /// are the caller's to check.
    pub extra_tools: Vec<String>,
    /// Also serve the tools, resources and prompts the official conformance suite's server
    /// scenarios name (`--conformance-content`); see [`crate::conformance`].
    pub conformance_content: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            delay_ms: 0,
            garbage_lines: false,
            ignore_stdin_eof: false,
            ignore_sigterm: false,
            stderr_noise: 0,
            hang_on_initialize: false,
            exit_on_start: None,
            refuse_start_while: None,
            spawn_grandchild: false,
            fail_first: 2,
            page_size: 0,
            protocol_version: None,
            era: crate::modern::EraMode::Legacy,
            client_timeout_ms: 30_000,
            http: None,
            ws: None,
            http_json: false,
            http_no_get: false,
            http_stateless: false,
            http_drop_sse_after: None,
            http_expire_session_after: None,
            http_fail_first: 0,
            http_delay_ms: 0,
            http_stall_first: 0,
            http_trickle_first: 0,
            http_endless_error_first: 0,
            event_log: None,
            churn_every_ms: None,
            http_bearer: None,
            oauth: None,
            http_control: false,
            instance: None,
            extra_tools: Vec::new(),
            conformance_content: false,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // built once per process; boxing would only add noise
pub enum CliCommand {
    /// Serve with these options.
    Run(ServerOptions),
    /// Print [`HELP`] and exit.
    Help,
    /// Print the version and exit.
    Version,
}
