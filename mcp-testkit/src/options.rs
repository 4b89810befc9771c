//! Server options and the hand-rolled command-line parser.
//!
//! Every flag accepts `--flag VALUE` and `--flag=VALUE`.

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
    /// Serve HTTP (Streamable HTTP at `/mcp`, legacy HTTP+SSE at `/sse`) on this loopback
    /// address instead of stdio (`--http ADDR`).
    pub http: Option<std::net::SocketAddr>,
    /// Serve WebSocket (`/mcp`, subprotocol `mcp`, one session per connection) on this
    /// loopback address instead of stdio (`--ws ADDR`); see [`crate::ws`].
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
    /// HTTP: OAuth mode — `/mcp` (and the legacy endpoints) need an access token issued by the
    /// fixture's own mock authorization server, served on the same origin (`--oauth`,
    /// `--oauth-token-ttl SECS`, `--oauth-required-scope S`, `--oauth-dpop`,
    /// `--oauth-dpop-nonce`, `--oauth-dpop-optional`, `--oauth-dpop-split-challenges`,
    /// `--oauth-dpop-refuse-proofs`); see [`crate::oauth`].
    pub oauth: Option<crate::oauth::OAuthOptions>,
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

/// The `--help` text.
pub const HELP: &str = "\
mcp-fixture-server: a fixture MCP server speaking newline-delimited JSON-RPC on stdin/stdout,
Streamable HTTP and legacy HTTP+SSE with --http, or WebSocket with --ws.

USAGE:
    mcp-fixture-server [FLAGS]

FLAGS:
    --delay-ms N            Delay every response by N milliseconds (default 0).
    --garbage-lines         Write the non-JSON line \"this is not json\" to stdout before every response.
    --ignore-stdin-eof      On stdin EOF keep running (sleep forever) instead of exiting 0.
    --ignore-sigterm        Ignore SIGTERM, so that only SIGKILL ends the process.
    --stderr-noise N        Write N lines \"stderr noise line K\" to stderr at start-up.
    --hang-on-initialize    Never answer the initialize request.
    --exit-on-start CODE    Write \"fixture server refusing to start\" to stderr and exit with CODE.
    --refuse-start-while PATH
                            While PATH exists, behave like --exit-on-start 3.
    --spawn-grandchild      Spawn `sleep 600` (same process group) at start-up and write
                            \"grandchild pid <PID>\" to stderr.
    --fail-first N          The first N calls of the `fail` tool fail (server-wide, default 2).
    --page-size N           Paginate tools/list, resources/list and prompts/list with N items
                            per page (default 0 = no pagination).
    --protocol-version V    Answer initialize with protocol version V whatever the client asked.
    --era E                 legacy (default: initialize only; server/discover is unknown), dual
                            (also 2026-07-28: server/discover, per-request _meta, resultType and
                            cache hints on results) or modern (2026-07-28 only) — stdio.
    --client-timeout-ms N   How long ask_* tools wait for the client's answer (default 30000).
    --churn-every-ms N      Once initialized, every N ms toggle dynamic_tool (tools/list_changed)
                            and bump fixture://counter (resources/updated to subscribers).
    --event-log PATH        Append one JSON line per request ({\"event\":\"request\",\"method\",\"id\"}),
                            per executed tools/call ({\"event\":\"call\",\"id\",\"tool\",\"call_id\"}),
                            per notifications/cancelled received ({\"event\":\"cancelled\",\"id\"})
                            and per HTTP fault ({\"event\":\"fault\",\"fault\",\"id\"}) to PATH.
    --instance LABEL        List one more tool, `instance` (read-only, idempotent, no arguments),
                            answering one text block with exactly LABEL (non-empty): which of
                            several servers answered.
    --extra-tool NAME       List one more tool NAME (after the others; repeatable, in order),
                            echo-like ({text}), answering one text block \"NAME: <text>\".
                            NAME: 1 to 64 of A-Z a-z 0-9 _ -, not a built-in tool's name, once.

HTTP (instead of stdio):
    --http ADDR             Serve HTTP on ADDR (loopback only, e.g. 127.0.0.1:0) instead of stdio:
                            Streamable HTTP at /mcp, legacy HTTP+SSE at /sse (+ /message).
                            Prints \"listening on http://IP:PORT\" as the first line of stdout.
    --http-json             Answer requests with application/json instead of an SSE stream.
    --http-no-get           Answer GET /mcp with 405 (no standalone stream, no resumption).
    --http-stateless        No Mcp-Session-Id: one implicit session for every request.
    --http-drop-sse-after N Close each POST's SSE stream after N events (priming not counted),
                            before its response (once per stream; `retry: 100` is advertised),
                            so that the client must resume with GET + Last-Event-ID.
    --http-expire-session-after N
                            A session expires after N JSON-RPC requests (initialize included):
                            every later request with its id gets 404.
    --http-fail-first N     Answer the first N POSTs (server-wide) with 503.
    --http-delay-ms N       Delay every HTTP response by N milliseconds.
    --http-control          Serve POST /control/fail-next/N (the next N POSTs get 503),
                            POST /control/expire-sessions (every session id becomes unknown) and
                            GET /control/posts (the POSTs taken so far, every session counted).
    --http-bearer TOKEN     Require `Authorization: Bearer TOKEN` on every HTTP request, and on the
                            WebSocket upgrade under --ws (401 otherwise).
    --oauth                 OAuth mode: /mcp, /sse and /message need an access token from the
                            fixture's own mock authorization server on the same origin
                            (metadata, /register, /authorize, /token, /revoke; control at
                            /control/oauth/{expire-tokens,revoke-all,rotate-dpop-nonce,stats}).
    --oauth-device          OAuth mode with the device authorization grant (RFC 8628): a
                            verification page at /device that approves at once.
    --oauth-token-ttl SECS  Access token lifetime in OAuth mode (default 3600; implies --oauth).
    --oauth-required-scope S
                            /mcp needs a token with scope S (403 insufficient_scope otherwise);
                            repeatable; implies --oauth.
    --oauth-dpop            OAuth mode with DPoP (RFC 9449, ES256): /token binds tokens to the
                            key of a valid DPoP proof (token_type DPoP), and /mcp takes only
                            bound tokens, each request with a fresh proof (WWW-Authenticate:
                            DPoP challenges); implies --oauth.
    --oauth-dpop-nonce      --oauth-dpop where every proof must also carry the server's nonce
                            (use_dpop_nonce and DPoP-Nonce; POST /control/oauth/rotate-dpop-nonce
                            changes it); implies --oauth-dpop.
    --oauth-dpop-optional   --oauth-dpop at the authorization server only: /mcp neither lists
                            nor requires DPoP, challenges with Bearer, and takes bearer tokens
                            as well as bound ones (with a valid proof); implies --oauth-dpop.
    --oauth-dpop-split-challenges
                            Fault: a DPoP refusal at /mcp sends a Bearer challenge and then the
                            DPoP challenge as two WWW-Authenticate headers; implies --oauth-dpop.
    --oauth-dpop-refuse-proofs
                            Fault: /mcp refuses every DPoP proof (invalid_dpop_proof);
                            implies --oauth-dpop.
    --http-stall-first N    The first N tools/call POSTs never get response headers (not handled).
    --http-trickle-first N  The first N tools/call POSTs get 200 and headers, then a body that
                            trickles one byte every 100 ms and never ends (not handled).
    --http-endless-error-first N
                            The first N tools/call POSTs get HTTP 500 with an endless body
                            (not handled).

WebSocket (instead of stdio):
    --ws ADDR               Serve WebSocket on ADDR (loopback only, e.g. 127.0.0.1:0) instead of
                            stdio: ws://IP:PORT/mcp, subprotocol `mcp` required, one JSON-RPC
                            message per text frame, one session per connection; the crash tool
                            drops the connection without a close frame instead of exiting.
                            Prints \"listening on ws://IP:PORT/mcp\" as the first line of stdout.
    -h, --help              Print this help and exit.
    -V, --version           Print the version and exit.

Without --protocol-version the server answers the client's protocolVersion if it is one of
2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, and 2025-11-25 otherwise.
On stdin EOF the server flushes its pending output and exits 0.
";

/// Parses the command-line arguments (without the program name).
///
/// Returns a message suitable for stderr on an unknown flag or a bad value.
pub fn parse_args<I, S>(args: I) -> Result<CliCommand, String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut options = ServerOptions::default();
    let mut args = args.into_iter().map(Into::into);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args
                    .next()
                    .ok_or_else(|| format!("flag {name} needs a value")),
            }
        };
        let no_value = |name: &str| -> Result<(), String> {
            match inline {
                Some(_) => Err(format!("flag {name} takes no value")),
                None => Ok(()),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(CliCommand::Help),
            "-V" | "--version" => return Ok(CliCommand::Version),
            "--delay-ms" => options.delay_ms = number(&flag, &value(&flag)?)?,
            "--garbage-lines" => {
                no_value(&flag)?;
                options.garbage_lines = true;
            }
            "--ignore-stdin-eof" => {
                no_value(&flag)?;
                options.ignore_stdin_eof = true;
            }
            "--ignore-sigterm" => {
                no_value(&flag)?;
                options.ignore_sigterm = true;
            }
            "--stderr-noise" => options.stderr_noise = number(&flag, &value(&flag)?)?,
            "--hang-on-initialize" => {
                no_value(&flag)?;
                options.hang_on_initialize = true;
            }
            "--exit-on-start" => options.exit_on_start = Some(number(&flag, &value(&flag)?)?),
            "--refuse-start-while" => options.refuse_start_while = Some(value(&flag)?.into()),
            "--spawn-grandchild" => {
                no_value(&flag)?;
                options.spawn_grandchild = true;
            }
            "--fail-first" => options.fail_first = number(&flag, &value(&flag)?)?,
            "--page-size" => options.page_size = number(&flag, &value(&flag)?)?,
            "--protocol-version" => options.protocol_version = Some(value(&flag)?),
            "--era" => {
                let name = value(&flag)?;
                options.era = crate::modern::EraMode::parse(&name)
                    .ok_or_else(|| format!("--era must be legacy, dual or modern, not {name:?}"))?;
            }
            "--client-timeout-ms" => options.client_timeout_ms = number(&flag, &value(&flag)?)?,
            "--http" => options.http = Some(number(&flag, &value(&flag)?)?),
            "--ws" => options.ws = Some(number(&flag, &value(&flag)?)?),
            "--http-json" => {
                no_value(&flag)?;
                options.http_json = true;
            }
            "--http-no-get" => {
                no_value(&flag)?;
                options.http_no_get = true;
            }
            "--http-stateless" => {
                no_value(&flag)?;
                options.http_stateless = true;
            }
            "--http-drop-sse-after" => {
                options.http_drop_sse_after = Some(number(&flag, &value(&flag)?)?);
            }
            "--http-expire-session-after" => {
                options.http_expire_session_after = Some(number(&flag, &value(&flag)?)?);
            }
            "--http-fail-first" => options.http_fail_first = number(&flag, &value(&flag)?)?,
            "--http-delay-ms" => options.http_delay_ms = number(&flag, &value(&flag)?)?,
            "--http-stall-first" => options.http_stall_first = number(&flag, &value(&flag)?)?,
            "--http-trickle-first" => {
                options.http_trickle_first = number(&flag, &value(&flag)?)?;
            }
            "--http-endless-error-first" => {
                options.http_endless_error_first = number(&flag, &value(&flag)?)?;
            }
            "--event-log" => options.event_log = Some(value(&flag)?.into()),
            "--http-bearer" => options.http_bearer = Some(value(&flag)?),
            "--oauth" => {
                no_value(&flag)?;
                options.oauth.get_or_insert_with(Default::default);
            }
            "--oauth-device" => {
                no_value(&flag)?;
                options
                    .oauth
                    .get_or_insert_with(Default::default)
                    .device_authorization = true;
            }
            "--oauth-dpop" => {
                no_value(&flag)?;
                options.oauth.get_or_insert_with(Default::default).dpop = true;
            }
            "--oauth-dpop-nonce" => {
                no_value(&flag)?;
                let oauth = options.oauth.get_or_insert_with(Default::default);
                oauth.dpop = true;
                oauth.dpop_nonce = true;
            }
            "--oauth-dpop-optional" => {
                no_value(&flag)?;
                let oauth = options.oauth.get_or_insert_with(Default::default);
                oauth.dpop = true;
                oauth.dpop_optional = true;
            }
            "--oauth-dpop-split-challenges" => {
                no_value(&flag)?;
                let oauth = options.oauth.get_or_insert_with(Default::default);
                oauth.dpop = true;
                oauth.dpop_split_challenges = true;
            }
            "--oauth-dpop-refuse-proofs" => {
                no_value(&flag)?;
                let oauth = options.oauth.get_or_insert_with(Default::default);
                oauth.dpop = true;
                oauth.dpop_refuse_proofs = true;
            }
            "--oauth-token-ttl" => {
                let ttl = number(&flag, &value(&flag)?)?;
                options
                    .oauth
                    .get_or_insert_with(Default::default)
                    .token_ttl_secs = ttl;
            }
            "--oauth-required-scope" => {
                let scope = value(&flag)?;
                options
                    .oauth
                    .get_or_insert_with(Default::default)
                    .required_scopes
                    .push(scope);
            }
            "--churn-every-ms" => {
                options.churn_every_ms = Some(number::<u64>(&flag, &value(&flag)?)?.max(1))
            }
            "--http-control" => {
                no_value(&flag)?;
                options.http_control = true;
            }
            "--instance" => {
                let label = value(&flag)?;
                if label.is_empty() {
                    return Err(format!(
                        "flag {flag}: invalid value {label:?} (the label must not be empty)"
                    ));
                }
                options.instance = Some(label);
            }
            "--extra-tool" => {
                let name = value(&flag)?;
                check_extra_tool_name(&name)
                    .map_err(|why| format!("flag {flag}: invalid value {name:?} ({why})"))?;
                if options.extra_tools.contains(&name) {
                    return Err(format!("flag {flag}: invalid value {name:?} (given twice)"));
                }
                options.extra_tools.push(name);
            }
            other => return Err(format!("unknown argument: {other} (see --help)")),
        }
    }
    Ok(CliCommand::Run(options))
}

/// Longest name of an `--extra-tool`.
pub const MAX_EXTRA_TOOL_NAME_LEN: usize = 64;

/// Whether `name` can be an `--extra-tool`: 1 to [`MAX_EXTRA_TOOL_NAME_LEN`] characters of
/// `[A-Za-z0-9_-]`, and not the name of a built-in tool ([`crate::tools::TOOL_NAMES`],
/// [`crate::tools::DYNAMIC_TOOL`], [`crate::tools::INSTANCE_TOOL`]). The error says why not.
pub fn check_extra_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a tool name must not be empty".to_owned());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("a tool name is made of A-Z, a-z, 0-9, _ and -".to_owned());
    }
    if name.len() > MAX_EXTRA_TOOL_NAME_LEN {
        return Err(format!(
            "a tool name has at most {MAX_EXTRA_TOOL_NAME_LEN} characters"
        ));
    }
    if crate::tools::is_built_in(name) {
        return Err("a built-in tool has this name".to_owned());
    }
    Ok(())
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("flag {flag}: invalid value {value:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> ServerOptions {
        match parse_args(args.iter().copied()) {
            Ok(CliCommand::Run(options)) => options,
            other => panic!("unexpected parse result {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        let options = run(&[]);
        assert_eq!(options, ServerOptions::default());
        assert_eq!(options.fail_first, 2);
        assert_eq!(options.page_size, 0);
    }

    #[test]
    fn all_flags() {
        let options = run(&[
            "--delay-ms",
            "5",
            "--garbage-lines",
            "--ignore-stdin-eof",
            "--ignore-sigterm",
            "--stderr-noise=3",
            "--hang-on-initialize",
            "--exit-on-start",
            "7",
            "--spawn-grandchild",
            "--fail-first",
            "4",
            "--page-size=2",
            "--protocol-version",
            "1999-01-01",
            "--client-timeout-ms",
            "100",
            "--http",
            "127.0.0.1:0",
            "--http-json",
            "--http-no-get",
            "--http-stateless",
            "--http-drop-sse-after=1",
            "--http-expire-session-after",
            "3",
            "--http-fail-first",
            "2",
            "--http-delay-ms=9",
            "--ws=127.0.0.1:0",
        ]);
        assert_eq!(options.delay_ms, 5);
        assert!(options.garbage_lines);
        assert!(options.ignore_stdin_eof);
        assert!(options.ignore_sigterm);
        assert_eq!(options.stderr_noise, 3);
        assert!(options.hang_on_initialize);
        assert_eq!(options.exit_on_start, Some(7));
        assert!(options.spawn_grandchild);
        assert_eq!(options.fail_first, 4);
        assert_eq!(options.page_size, 2);
        assert_eq!(options.protocol_version.as_deref(), Some("1999-01-01"));
        assert_eq!(options.client_timeout_ms, 100);
        assert_eq!(options.http, Some("127.0.0.1:0".parse().expect("addr")));
        assert!(options.http_json && options.http_no_get && options.http_stateless);
        assert_eq!(options.http_drop_sse_after, Some(1));
        assert_eq!(options.http_expire_session_after, Some(3));
        assert_eq!(options.http_fail_first, 2);
        assert_eq!(options.http_delay_ms, 9);
        assert_eq!(options.ws, Some("127.0.0.1:0".parse().expect("addr")));
        assert_eq!(options.instance, None);
        assert!(options.extra_tools.is_empty());
    }

    #[test]
    fn instance_and_extra_tools() {
        let longest = "z".repeat(MAX_EXTRA_TOOL_NAME_LEN);
        let options = run(&[
            "--instance",
            "eu west (1)",
            "--extra-tool",
            "beta",
            "--extra-tool=Alpha_2-x",
            "--extra-tool",
            longest.as_str(),
        ]);
        assert_eq!(options.instance.as_deref(), Some("eu west (1)"));
        assert_eq!(options.extra_tools, ["beta", "Alpha_2-x", longest.as_str()]);
        assert_eq!(run(&["--instance=a=b"]).instance.as_deref(), Some("a=b"));

        let refused = |args: &[&str], flag: &str, value: &str| {
            let message = parse_args(args.iter().copied()).expect_err("refused");
            assert!(message.contains(flag), "{message}");
            assert!(message.contains(&format!("{value:?}")), "{message}");
        };
        refused(&["--instance", ""], "--instance", "");
        refused(&["--instance="], "--instance", "");
        assert!(parse_args(["--instance"]).is_err());
        let long = "x".repeat(MAX_EXTRA_TOOL_NAME_LEN + 1);
        for bad in [
            "",
            "a b",
            "dots.no",
            "slash/no",
            "é",
            long.as_str(),
            "echo",
            "slow_stats",
        ] {
            refused(&["--extra-tool", bad], "--extra-tool", bad);
        }
        refused(
            &["--extra-tool=dynamic_tool"],
            "--extra-tool",
            "dynamic_tool",
        );
        refused(&["--extra-tool", "instance"], "--extra-tool", "instance");
        refused(
            &["--extra-tool", "twice", "--extra-tool", "twice"],
            "--extra-tool",
            "twice",
        );
        assert!(parse_args(["--extra-tool"]).is_err());
    }

    #[test]
    fn oauth_flags() {
        assert_eq!(
            run(&["--oauth"]).oauth,
            Some(crate::oauth::OAuthOptions::default())
        );
        let options = run(&[
            "--oauth-token-ttl=30",
            "--oauth-required-scope",
            "read",
            "--oauth-required-scope=admin",
        ]);
        let oauth = options.oauth.expect("implied by the --oauth-* flags");
        assert_eq!(oauth.token_ttl_secs, 30);
        assert_eq!(oauth.required_scopes, ["read", "admin"]);
        assert!(run(&["--oauth-device"])
            .oauth
            .is_some_and(|o| o.device_authorization));
        let dpop = run(&["--oauth-dpop"]).oauth.expect("implied");
        assert!(dpop.dpop && !dpop.dpop_nonce);
        let nonce = run(&["--oauth-dpop-nonce"]).oauth.expect("implied");
        assert!(nonce.dpop && nonce.dpop_nonce);
        let optional = run(&["--oauth-dpop-optional"]).oauth.expect("implied");
        assert!(optional.dpop && optional.dpop_optional && !optional.resource_requires_dpop());
        let faults = run(&[
            "--oauth-dpop-split-challenges",
            "--oauth-dpop-refuse-proofs",
            "--oauth-dpop-nonce",
        ])
        .oauth
        .expect("implied");
        assert!(faults.dpop_split_challenges && faults.dpop_refuse_proofs && faults.dpop_nonce);
        assert!(faults.resource_requires_dpop());
        assert!(parse_args(["--oauth-dpop-optional=yes"]).is_err());
        assert!(parse_args(["--oauth-dpop=1"]).is_err());
        assert!(parse_args(["--oauth=1"]).is_err());
        assert!(parse_args(["--oauth-token-ttl", "soon"]).is_err());
    }

    #[test]
    fn errors_and_help() {
        assert!(parse_args(["--bogus"]).is_err());
        assert!(parse_args(["--delay-ms"]).is_err());
        assert!(parse_args(["--delay-ms", "abc"]).is_err());
        assert!(parse_args(["--garbage-lines=1"]).is_err());
        assert!(parse_args(["--http", "localhost"]).is_err());
        assert!(parse_args(["--ws", "localhost"]).is_err());
        assert_eq!(parse_args(["--help"]), Ok(CliCommand::Help));
        assert_eq!(parse_args(["-V"]), Ok(CliCommand::Version));
        for flag in [
            "--delay-ms",
            "--garbage-lines",
            "--ignore-stdin-eof",
            "--ignore-sigterm",
            "--stderr-noise",
            "--hang-on-initialize",
            "--exit-on-start",
            "--spawn-grandchild",
            "--fail-first",
            "--page-size",
            "--protocol-version",
            "--client-timeout-ms",
            "--http",
            "--ws",
            "--http-json",
            "--http-no-get",
            "--http-stateless",
            "--http-drop-sse-after",
            "--http-expire-session-after",
            "--http-fail-first",
            "--http-delay-ms",
            "--http-stall-first",
            "--http-trickle-first",
            "--http-endless-error-first",
            "--event-log",
            "--http-bearer",
            "--refuse-start-while",
            "--http-control",
            "--oauth",
            "--oauth-device",
            "--oauth-dpop",
            "--oauth-dpop-nonce",
            "--oauth-dpop-optional",
            "--oauth-dpop-split-challenges",
            "--oauth-dpop-refuse-proofs",
            "--oauth-token-ttl",
            "--oauth-required-scope",
            "--instance",
            "--extra-tool",
        ] {
            assert!(HELP.contains(flag), "help lacks {flag}");
        }
    }
}
