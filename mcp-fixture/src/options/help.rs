//! The `--help` text of the fixture server (every flag, the HTTP and WebSocket ones included).

/// The `--help` text.
pub const HELP: &str = "\
mcp-fixture-server: a fixture MCP server speaking newline-delimited JSON-RPC on stdin/stdout,
Streamable HTTP and HTTP+SSE with --http, or WebSocket with --ws.

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
    --conformance-content   Also serve what the official conformance suite's server scenarios
                            call: the test_* tools (content types, logging, progress, errors,
                            sampling, elicitation, reconnection, input_required results),
                            json_schema_2020_12_tool, the test:// resources and template, and
                            the test_* prompts (with completion of arg1).

HTTP (instead of stdio):
    --http ADDR             Serve HTTP on ADDR (loopback only, e.g. 127.0.0.1:0) instead of stdio:
                            Streamable HTTP at /mcp, HTTP+SSE at /sse (+ /message).
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
