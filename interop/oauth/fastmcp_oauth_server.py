"""A FastMCP (PyPI fastmcp==4.2.3) server behind FastMCP's own OAuth server.

Used by the Rust OAuth interop tests. Run it with the venv that
`cargo xtask interop-setup` installs:

    $MCP_INTEROP_DIR/fastmcp/bin/python interop/oauth/fastmcp_oauth_server.py PORT

(PORT may also come from the environment variable FASTMCP_PORT; default 8000.)
It listens on 127.0.0.1:PORT only. Everything is on that one port:

* MCP endpoint (Streamable HTTP):  http://127.0.0.1:PORT/mcp
* protected resource metadata:     http://127.0.0.1:PORT/.well-known/oauth-protected-resource/mcp
* authorization server metadata:   http://127.0.0.1:PORT/.well-known/oauth-authorization-server
                                   (also /.well-known/openid-configuration)
* /authorize, /token, /register (RFC 7591 DCR), /revoke (RFC 7009)

The authorization server is `fastmcp.server.auth.providers.in_memory.
InMemoryOAuthProvider`: it approves every authorization request at once
(GET /authorize answers 302 to redirect_uri?code=...&state=..., no consent
page), issues opaque access + refresh tokens, and rotates the refresh token on
every refresh. All state is in memory and lost when the process exits.

Environment knobs (all optional):

* FASTMCP_TOKEN_TTL=SECONDS     access-token lifetime (default 3600). The
                                token response's `expires_in` reports it and
                                the resource server rejects the token (401)
                                once `int(issue_time + TTL)` has passed, so a
                                TTL of 2 expires the token 1-2 s after issue.
* FASTMCP_REFRESH_TTL=SECONDS   refresh-token lifetime (default: never expires).
* FASTMCP_EXPIRY_KEEPS_REFRESH=1
                                Upstream InMemoryOAuthProvider, when it sees an
                                EXPIRED access token (on the MCP endpoint or at
                                /revoke), deletes that token AND the refresh
                                token issued with it, so a client that refreshes
                                only after getting the 401 gets
                                401 invalid_grant "refresh token does not
                                exist" and must log in again. (Refreshing before
                                presenting the expired token works.) With this
                                knob set to 1 an expired access token is just
                                dropped and its refresh token stays usable.
                                Default: upstream behaviour.
* FASTMCP_REQUIRED_SCOPES="a b" scopes every MCP request's token must carry
                                (default none). They are also the only scopes
                                DCR accepts (`valid_scopes`), are advertised as
                                `scopes_supported` in both metadata documents,
                                and appear as `scope="a b"` in the 401 challenge.
                                DCR without `scope` registers them as the
                                client's scope (default_scopes); DCR with other
                                scopes is refused (400 invalid_client_metadata).
                                A token lacking one gets 403 insufficient_scope
                                (e.g. authorize sent without `scope`).

Tools:

* echo(text: str)      -> the text unchanged
* add(a: int, b: int)  -> a + b (text "3", structuredContent {"result": 3})
* whoami()             -> {"client_id", "scopes", "expires_at"} of the access
                          token the request was authorized with
"""

from __future__ import annotations

import os
import sys
import time

# No banner, no update check, nothing reaching out to the network.
os.environ.setdefault("FASTMCP_SHOW_CLI_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

from fastmcp import FastMCP  # noqa: E402
from fastmcp.server.auth.auth import (  # noqa: E402
    ClientRegistrationOptions,
    RevocationOptions,
)
from fastmcp.server.auth.providers import in_memory  # noqa: E402
from fastmcp.server.dependencies import get_access_token  # noqa: E402

HOST = "127.0.0.1"


def _int_env(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value else None


def configure_token_lifetimes() -> None:
    """Apply FASTMCP_TOKEN_TTL / FASTMCP_REFRESH_TTL.

    InMemoryOAuthProvider (fastmcp 4.2.3) takes no lifetime argument: its
    exchange_authorization_code / exchange_refresh_token read the module
    globals DEFAULT_ACCESS_TOKEN_EXPIRY_SECONDS and
    DEFAULT_REFRESH_TOKEN_EXPIRY_SECONDS at call time (for both the stored
    expires_at and the `expires_in` it returns), so setting those globals is
    the whole knob; no method needs overriding.
    """
    access_ttl = _int_env("FASTMCP_TOKEN_TTL")
    if access_ttl is not None:
        in_memory.DEFAULT_ACCESS_TOKEN_EXPIRY_SECONDS = access_ttl
    refresh_ttl = _int_env("FASTMCP_REFRESH_TTL")
    if refresh_ttl is not None:
        in_memory.DEFAULT_REFRESH_TOKEN_EXPIRY_SECONDS = refresh_ttl


class InteropOAuthProvider(in_memory.InMemoryOAuthProvider):
    """InMemoryOAuthProvider, optionally keeping refresh tokens past expiry.

    Only `load_access_token` (which `verify_token` and the revocation handler
    call) is changed, and only when FASTMCP_EXPIRY_KEEPS_REFRESH=1.
    """

    keep_refresh_on_expiry = os.environ.get("FASTMCP_EXPIRY_KEEPS_REFRESH", "") == "1"

    async def load_access_token(self, token: str):  # type: ignore[override]
        if self.keep_refresh_on_expiry:
            token_obj = self.access_tokens.get(token)
            if token_obj and token_obj.expires_at is not None and token_obj.expires_at < time.time():
                # Drop the access token and the pairing, not the refresh token.
                del self.access_tokens[token]
                refresh = self._access_to_refresh_map.pop(token, None)
                if refresh is not None:
                    self._refresh_to_access_map.pop(refresh, None)
                return None
        return await super().load_access_token(token)


def build_server(port: int) -> FastMCP:
    scopes = os.environ.get("FASTMCP_REQUIRED_SCOPES", "").split() or None
    auth = InteropOAuthProvider(
        # Where the OAuth routes live and what the metadata advertises. FastMCP
        # turns the string into a pydantic AnyHttpUrl, which appends "/": the
        # advertised issuer (and PRM authorization_servers entry) is
        # "http://127.0.0.1:PORT/" WITH a trailing slash. The resource becomes
        # base_url + "/mcp" = "http://127.0.0.1:PORT/mcp".
        base_url=f"http://{HOST}:{port}",
        client_registration_options=ClientRegistrationOptions(
            enabled=True,
            valid_scopes=scopes,
            # A client registered without `scope` may later only ask for the
            # scopes it registered (python mcp 2.3.0 validate_scope: none
            # registered = none allowed -> authorize redirects with
            # error=invalid_scope). default_scopes gives such clients the
            # required scopes, so DCR without `scope` still works.
            default_scopes=scopes,
        ),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=scopes,
    )
    mcp = FastMCP("fastmcp-oauth-interop-server", auth=auth)

    @mcp.tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool
    def whoami() -> dict:
        """Describe the access token this request was authorized with."""
        token = get_access_token()
        if token is None:
            return {"client_id": None, "scopes": [], "expires_at": None}
        return {
            "client_id": token.client_id,
            "scopes": list(token.scopes),
            "expires_at": token.expires_at,
        }

    return mcp


def main() -> None:
    if len(sys.argv) > 2:
        sys.exit("usage: fastmcp_oauth_server.py [PORT]")
    port = int(sys.argv[1]) if len(sys.argv) == 2 else int(os.environ.get("FASTMCP_PORT", "8000"))
    configure_token_lifetimes()
    build_server(port).run(transport="http", host=HOST, port=port, show_banner=False)


if __name__ == "__main__":
    main()
