"""Walk the MCP OAuth flow against a running server, standard library only.

    python3 interop/oauth/flow_check.py MCP_URL [options]

e.g.

    python3 interop/oauth/flow_check.py http://127.0.0.1:18701/mcp
    python3 interop/oauth/flow_check.py http://localhost:18711/mcp --auth-method client_secret_post

Steps (each prints one or more "[step] ..." lines; -v also prints bodies):

 1. unauthenticated POST initialize -> expect 401 + WWW-Authenticate
 2. protected resource metadata (RFC 9728): the challenge's resource_metadata,
    else /.well-known/oauth-protected-resource{path}, else the root one
 3. authorization server metadata (RFC 8414 / OIDC), in the order the MCP
    2025-11-25 spec gives, without following redirects
 4. dynamic client registration (RFC 7591)
 5. GET authorize with PKCE S256 + state + resource, redirects NOT followed:
    expects a 302 whose Location carries code/state (and maybe iss)
 6. authorization_code token request
 7. authenticated initialize, notifications/initialized, tools/list, tools/call
 8. refresh_token grant (rotation check, old refresh token replay, old access
    token after refresh)
 9. optional (--expiry): wait out expires_in, expect 401, refresh, retry
10. revocation (RFC 7009) when advertised, then the MCP endpoint again

Only loopback URLs are accepted. The redirect_uri is never listened on: the
code is read from the 302's Location header.

Exit status 0 when every essential step (1-7) succeeded.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import ipaddress
import json
import secrets
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

VERBOSE = False
NOTES: list[str] = []  # quirks worth knowing, printed as [summary] at the end
PROTOCOL_VERSION = "2025-11-25"


class Failure(Exception):
    pass


def log(step: str, msg: str) -> None:
    print(f"[{step}] {msg}", flush=True)


def note(msg: str) -> None:
    NOTES.append(msg)


def detail(msg: str) -> None:
    if VERBOSE:
        for line in msg.splitlines():
            print(f"        {line}", flush=True)


def check_loopback(url: str) -> None:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise Failure(f"refusing non-loopback URL {url}")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401
        return None


OPENER = urllib.request.build_opener(NoRedirect)


class Resp:
    def __init__(self, status: int, headers, body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.body)


def http(method: str, url: str, *, headers=None, data: bytes | None = None, timeout=10.0) -> Resp:
    check_loopback(url)
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with OPENER.open(req, timeout=timeout) as r:
            return Resp(r.status, r.headers, r.read())
    except urllib.error.HTTPError as e:
        return Resp(e.code, e.headers, e.read())


def form(url: str, fields: dict, headers=None) -> Resp:
    h = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    h.update(headers or {})
    return http("POST", url, headers=h, data=urllib.parse.urlencode(fields).encode())


def parse_challenge(value: str | None) -> dict:
    """Parse `Bearer k="v", k2="v2"` (quoted or token values)."""
    out: dict = {}
    if not value:
        return out
    scheme, _, rest = value.strip().partition(" ")
    out["_scheme"] = scheme
    i = 0
    while i < len(rest):
        while i < len(rest) and rest[i] in " ,":
            i += 1
        j = rest.find("=", i)
        if j < 0:
            break
        key = rest[i:j].strip()
        i = j + 1
        if i < len(rest) and rest[i] == '"':
            i += 1
            val = []
            while i < len(rest) and rest[i] != '"':
                if rest[i] == "\\" and i + 1 < len(rest):
                    i += 1
                val.append(rest[i])
                i += 1
            i += 1
            out[key] = "".join(val)
        else:
            j = rest.find(",", i)
            j = len(rest) if j < 0 else j
            out[key] = rest[i:j].strip()
            i = j
    return out


# ---------------------------------------------------------------- MCP calls


class Mcp:
    def __init__(self, url: str):
        self.url = url
        self.session: str | None = None
        self.next_id = 1

    def post(self, token: str | None, msg: dict) -> tuple[Resp, list]:
        h = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
        }
        if token:
            h["Authorization"] = f"Bearer {token}"
        if self.session:
            h["Mcp-Session-Id"] = self.session
        r = http("POST", self.url, headers=h, data=json.dumps(msg).encode())
        return r, self.messages(r)

    @staticmethod
    def messages(r: Resp) -> list:
        ctype = (r.header("Content-Type") or "").split(";")[0].strip()
        if not r.body:
            return []
        if ctype == "text/event-stream":
            out, data = [], []
            for line in r.text().splitlines() + [""]:
                if line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
                elif line == "" and data:
                    # The TS SDK (with an event store) first sends a priming
                    # event `id: ...` + `data: ` (empty): skip it.
                    if "".join(data).strip():
                        out.append(json.loads("\n".join(data)))
                    data = []
            return out
        if ctype == "application/json":
            try:
                v = r.json()
            except ValueError:
                return []
            return v if isinstance(v, list) else [v]
        return []

    def request(self, token: str | None, method: str, params: dict | None = None) -> tuple[Resp, dict | None]:
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.next_id += 1
        r, msgs = self.post(token, msg)
        result = next((m for m in msgs if m.get("id") == msg["id"]), None)
        return r, result

    def initialize(self, token: str | None) -> tuple[Resp, dict | None]:
        self.session = None
        r, result = self.request(
            token,
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "flow_check", "version": "0.0.1"},
            },
        )
        sid = r.header("Mcp-Session-Id")
        if sid:
            self.session = sid
        return r, result

    def notify_initialized(self, token: str) -> Resp:
        r, _ = self.post(token, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r


# ---------------------------------------------------------------- OAuth steps


def b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def well_known_prm_urls(mcp_url: str) -> list[str]:
    u = urllib.parse.urlsplit(mcp_url)
    path = u.path if u.path not in ("", "/") else ""
    root = f"{u.scheme}://{u.netloc}/.well-known/oauth-protected-resource"
    return [root + path, root] if path else [root]


def as_metadata_urls(issuer: str) -> list[str]:
    """MCP 2025-11-25 'Authorization Server Metadata Discovery' order."""
    u = urllib.parse.urlsplit(issuer)
    origin = f"{u.scheme}://{u.netloc}"
    path = u.path.rstrip("/")
    if path:
        return [
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server",
        f"{origin}/.well-known/openid-configuration",
    ]


def get_json(step: str, url: str) -> tuple[Resp, dict | None]:
    r = http("GET", url, headers={"Accept": "application/json", "MCP-Protocol-Version": PROTOCOL_VERSION})
    extra = f" Location={r.header('Location')}" if r.header("Location") else ""
    log(step, f"GET {url} -> {r.status}{extra}")
    if r.status == 200:
        try:
            body = r.json()
        except ValueError:
            return r, None
        detail(json.dumps(body, indent=2))
        return r, body
    return r, None


def client_auth(client: dict, fields: dict) -> dict:
    """Add client authentication to form `fields`; return extra headers."""
    method = client.get("token_endpoint_auth_method") or client.get("_auth_method_fallback")
    secret = client.get("client_secret")
    if method == "client_secret_basic" and secret:
        raw = f"{urllib.parse.quote(client['client_id'], safe='')}:{urllib.parse.quote(secret, safe='')}"
        # FastMCP (python mcp 2.3.0 ClientAuthenticator) also wants client_id in
        # the body even with Basic auth: without it -> 401 "Missing client_id".
        fields["client_id"] = client["client_id"]
        return {"Authorization": "Basic " + base64.b64encode(raw.encode()).decode()}
    fields["client_id"] = client["client_id"]
    if secret:
        fields["client_secret"] = secret
    return {}


def token_summary(tok: dict) -> str:
    keys = sorted(tok)
    return (
        f"keys={keys} token_type={tok.get('token_type')!r} expires_in={tok.get('expires_in')!r} "
        f"scope={tok.get('scope')!r} refresh_token={'yes' if tok.get('refresh_token') else 'NO'}"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mcp_round(step: str, mcp: Mcp, token: str, call: tuple[str, dict] | None) -> bool:
    r, res = mcp.initialize(token)
    ok = r.status == 200 and res is not None and "result" in res
    log(step, f"initialize -> {r.status} session={mcp.session!r} "
        f"protocolVersion={(res or {}).get('result', {}).get('protocolVersion')!r}")
    if not ok:
        log(step, f"  body: {r.text()[:300]!r} WWW-Authenticate={r.header('WWW-Authenticate')!r}")
        return False
    detail(json.dumps(res["result"].get("serverInfo")))
    r = mcp.notify_initialized(token)
    log(step, f"notifications/initialized -> {r.status}")
    r, res = mcp.request(token, "tools/list", {})
    tools = [t["name"] for t in (res or {}).get("result", {}).get("tools", [])]
    log(step, f"tools/list -> {r.status} tools={tools}")
    if r.status != 200 or not tools:
        return False
    if call is None:
        if "echo" in tools:
            call = ("echo", {"text": "hello"})
        elif "greet" in tools:
            call = ("greet", {"name": "flow_check"})
    if call:
        r, res = mcp.request(token, "tools/call", {"name": call[0], "arguments": call[1]})
        content = (res or {}).get("result", {}).get("content")
        log(step, f"tools/call {call[0]}({json.dumps(call[1])}) -> {r.status} content={json.dumps(content)}")
        if r.status != 200 or not content:
            return False
    return True


def main() -> int:
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mcp_url")
    ap.add_argument("--auth-method", default="none",
                    choices=["none", "client_secret_post", "client_secret_basic", "omit"],
                    help="token_endpoint_auth_method to register (omit = leave it out of the DCR request)")
    ap.add_argument("--redirect-uri", help="default http://127.0.0.1:<free port>/callback")
    ap.add_argument("--resource", help="resource indicator to send (default: the PRM `resource`); '' = send none")
    ap.add_argument("--scope", help="scope to request (default: challenge scope, else PRM scopes_supported)")
    ap.add_argument("--no-dcr-scope", action="store_true", help="leave `scope` out of the registration request")
    ap.add_argument("--expiry", action="store_true", help="wait out expires_in, expect 401, refresh, retry")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    VERBOSE = args.verbose
    mcp_url = args.mcp_url
    check_loopback(mcp_url)

    # 1 ------------------------------------------------------------ challenge
    mcp = Mcp(mcp_url)
    r, _ = mcp.initialize(None)
    www = r.header("WWW-Authenticate")
    log("1 challenge", f"POST initialize (no token) -> {r.status}")
    log("1 challenge", f"WWW-Authenticate: {www}")
    detail(r.text())
    if r.status != 401:
        raise Failure(f"expected 401, got {r.status}")
    ch = parse_challenge(www)
    if not ch.get("resource_metadata"):
        note("401 challenge has no resource_metadata")

    # 2 ------------------------------------------------------------ PRM
    prm = None
    candidates = ([ch["resource_metadata"]] if ch.get("resource_metadata") else []) + well_known_prm_urls(mcp_url)
    for url in dict.fromkeys(candidates):
        r, prm = get_json("2 PRM", url)
        if prm:
            break
    if not prm:
        raise Failure("no protected resource metadata")
    resource = prm.get("resource")
    same = resource == mcp_url
    norm = (resource or "").rstrip("/") == mcp_url.rstrip("/")
    log("2 PRM", f"resource={resource!r} authorization_servers={prm.get('authorization_servers')} "
        f"scopes_supported={prm.get('scopes_supported')!r}")
    log("2 PRM", f"resource == MCP URL exactly: {same}" + ("" if same else f" (ignoring trailing '/': {norm})"))
    if not same:
        note(f"PRM resource {resource!r} != MCP URL {mcp_url!r}")

    # 3 ------------------------------------------------------------ AS metadata
    issuer = prm["authorization_servers"][0]
    asm = None
    for url in as_metadata_urls(issuer):
        r, asm = get_json("3 AS", url)
        if asm:
            break
    if not asm:
        raise Failure("no authorization server metadata")
    for k in ("issuer", "authorization_endpoint", "token_endpoint", "registration_endpoint",
              "revocation_endpoint", "code_challenge_methods_supported",
              "token_endpoint_auth_methods_supported", "scopes_supported", "grant_types_supported",
              "authorization_response_iss_parameter_supported"):
        log("3 AS", f"{k} = {asm.get(k)!r}")
    log("3 AS", f"issuer == PRM authorization_servers[0] exactly: {asm.get('issuer') == issuer}")
    if asm.get("issuer") != issuer:
        note(f"AS issuer {asm.get('issuer')!r} != authorization_servers[0] {issuer!r}")
    if urllib.parse.urlsplit(asm.get("issuer", "")).path == "/":
        note(f"issuer has a trailing slash: {asm.get('issuer')!r}")
    if not asm.get("authorization_response_iss_parameter_supported"):
        note("no authorization_response_iss_parameter_supported (RFC 9207): no iss in the redirect")
    if "S256" not in (asm.get("code_challenge_methods_supported") or []):
        raise Failure("S256 not advertised")

    # scope selection (MCP 2025-11-25): challenge scope, else PRM scopes_supported
    if args.scope is not None:
        scope = args.scope
    elif ch.get("scope"):
        scope = ch["scope"]
    else:
        scope = " ".join(prm.get("scopes_supported") or [])

    # 4 ------------------------------------------------------------ DCR
    redirect_uri = args.redirect_uri or f"http://127.0.0.1:{free_port()}/callback"
    reg = {
        "client_name": "flow_check",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    }
    if scope and not args.no_dcr_scope:
        reg["scope"] = scope
    if args.auth_method != "omit":
        reg["token_endpoint_auth_method"] = args.auth_method
    r = http("POST", asm["registration_endpoint"],
             headers={"Content-Type": "application/json", "Accept": "application/json"},
             data=json.dumps(reg).encode())
    log("4 DCR", f"POST {asm['registration_endpoint']} {json.dumps(reg)} -> {r.status}")
    detail(r.text())
    if r.status not in (200, 201):
        raise Failure(f"registration failed: {r.text()[:300]}")
    client = r.json()
    if not client.get("token_endpoint_auth_method"):
        # RFC 7591 default is client_secret_basic, but only if the AS supports
        # it (RFC 8414: absent list = client_secret_basic); the TS SDK omits the
        # field when the request did and supports only client_secret_post.
        supported = asm.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if not client.get("client_secret"):
            fallback = "none"
        elif "client_secret_basic" in supported:
            fallback = "client_secret_basic"
        else:
            fallback = "client_secret_post"
        client["_auth_method_fallback"] = fallback
        log("4 DCR", f"response has no token_endpoint_auth_method; using {fallback} "
            f"(AS supports {supported})")
    log("4 DCR", f"client_id={client.get('client_id')!r} token_endpoint_auth_method="
        f"{client.get('token_endpoint_auth_method')!r} client_secret={'yes' if client.get('client_secret') else 'no'} "
        f"client_secret_expires_at={client.get('client_secret_expires_at')!r} scope={client.get('scope')!r} "
        f"grant_types={client.get('grant_types')!r}")

    # 5 ------------------------------------------------------------ authorize
    verifier = b64url(secrets.token_bytes(32))
    challenge = b64url(hashlib.sha256(verifier.encode()).digest())
    state = b64url(secrets.token_bytes(16))
    resource_param = resource if args.resource is None else args.resource
    q = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
    }
    if scope:
        q["scope"] = scope
    if resource_param:
        q["resource"] = resource_param
    auth_url = asm["authorization_endpoint"] + "?" + urllib.parse.urlencode(q)
    r = http("GET", auth_url)
    loc = r.header("Location")
    log("5 authorize", f"GET {auth_url}")
    log("5 authorize", f"-> {r.status} Location={loc} Set-Cookie={'yes' if r.header('Set-Cookie') else 'no'}")
    if r.status not in (302, 303, 307) or not loc:
        log("5 authorize", f"body: {r.text()[:500]!r}")
        raise Failure("authorize did not redirect")
    back = urllib.parse.urlsplit(loc)
    params = dict(urllib.parse.parse_qsl(back.query))
    log("5 authorize", f"redirect params: { {k: (v if k != 'code' else v[:12] + '...') for k, v in params.items()} }")
    if "error" in params:
        raise Failure(f"authorize error: {params}")
    if params.get("state") != state:
        raise Failure("state mismatch")
    if "iss" in params:
        log("5 authorize", f"iss == issuer: {params['iss'] == asm.get('issuer')}")
    code = params["code"]

    # 6 ------------------------------------------------------------ token
    fields = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
              "code_verifier": verifier}
    if resource_param:
        fields["resource"] = resource_param
    hdrs = client_auth(client, fields)
    r = form(asm["token_endpoint"], fields, hdrs)
    log("6 token", f"POST {asm['token_endpoint']} fields={sorted(fields)} "
        f"basic={'Authorization' in hdrs} -> {r.status} Cache-Control={r.header('Cache-Control')!r}")
    detail(r.text())
    if r.status != 200:
        raise Failure(f"token request failed: {r.text()[:300]}")
    tok = r.json()
    log("6 token", token_summary(tok))
    # the code is single-use
    again = {k: v for k, v in fields.items() if k not in ("client_id", "client_secret")}
    r2 = form(asm["token_endpoint"], again, client_auth(client, again))
    log("6 token", f"same code again -> {r2.status} {r2.text()[:160]}")
    if r2.status != 400:
        note(f"reused authorization code -> {r2.status} (RFC 6749: 400 invalid_grant)")
    if not tok.get("refresh_token"):
        note("token response has no refresh_token")

    # 7 ------------------------------------------------------------ MCP
    access = tok["access_token"]
    if not mcp_round("7 mcp", Mcp(mcp_url), access, None):
        raise Failure("authenticated MCP round failed")
    r, _ = Mcp(mcp_url).initialize("not-a-real-token")
    log("7 mcp", f"initialize with a bogus token -> {r.status} WWW-Authenticate={r.header('WWW-Authenticate')!r} "
        f"body={r.text()[:160]!r}")
    if r.status != 401:
        note(f"bogus bearer token on the MCP endpoint -> {r.status}, not 401")

    # 8 ------------------------------------------------------------ refresh
    refresh = tok.get("refresh_token")
    if not refresh:
        log("8 refresh", "no refresh_token issued; trying the grant with a made-up one")
        fields = {"grant_type": "refresh_token", "refresh_token": "made-up"}
        hdrs = client_auth(client, fields)
        r = form(asm["token_endpoint"], fields, hdrs)
        log("8 refresh", f"-> {r.status} {r.text()[:200]}")
        if r.status != 400:
            note(f"refresh_token grant with an unknown token -> {r.status}")
        new_tok = None
    else:
        fields = {"grant_type": "refresh_token", "refresh_token": refresh}
        if resource_param:
            fields["resource"] = resource_param
        hdrs = client_auth(client, fields)
        r = form(asm["token_endpoint"], fields, hdrs)
        log("8 refresh", f"POST refresh_token grant fields={sorted(fields)} -> {r.status}")
        detail(r.text())
        new_tok = r.json() if r.status == 200 else None
        if new_tok:
            log("8 refresh", token_summary(new_tok))
            rotated = new_tok.get("refresh_token") not in (None, refresh)
            log("8 refresh", f"refresh token rotated: {rotated}")
            if rotated:
                note("refresh token is rotated on every refresh")
            replay = {"grant_type": "refresh_token", "refresh_token": refresh}
            r = form(asm["token_endpoint"], replay, client_auth(client, replay))
            log("8 refresh", f"replay old refresh token -> {r.status} {r.text()[:160]}")
            r, _ = Mcp(mcp_url).initialize(access)
            log("8 refresh", f"old access token after refresh -> {r.status}")
            if r.status == 401:
                note("refreshing revokes the previous access token at once")
            mcp_round("8 refresh", Mcp(mcp_url), new_tok["access_token"], None)
        else:
            log("8 refresh", f"refresh failed: {r.text()[:200]}")
    current = new_tok or tok

    # 9 ------------------------------------------------------------ expiry
    if args.expiry and current.get("expires_in"):
        wait = float(current["expires_in"]) + 1.2
        log("9 expiry", f"sleeping {wait:.1f}s")
        time.sleep(wait)
        r, _ = Mcp(mcp_url).initialize(current["access_token"])
        log("9 expiry", f"expired access token -> {r.status} WWW-Authenticate={r.header('WWW-Authenticate')!r}")
        if current.get("refresh_token"):
            fields = {"grant_type": "refresh_token", "refresh_token": current["refresh_token"]}
            hdrs = client_auth(client, fields)
            r = form(asm["token_endpoint"], fields, hdrs)
            log("9 expiry", f"refresh after expiry -> {r.status}")
            if r.status != 200:
                note(f"refresh after presenting the expired access token -> {r.status} {r.text()[:100]}")
            if r.status == 200:
                current = r.json()
                mcp_round("9 expiry", Mcp(mcp_url), current["access_token"], None)

    # 10 ----------------------------------------------------------- revoke
    rev = asm.get("revocation_endpoint")
    if not rev:
        log("10 revoke", "no revocation_endpoint advertised")
        note("no revocation_endpoint")
    else:
        fields = {"token": current["access_token"], "token_type_hint": "access_token"}
        hdrs = client_auth(client, fields)
        r = form(rev, fields, hdrs)
        log("10 revoke", f"POST {rev} (access token) fields={sorted(fields)} basic={'Authorization' in hdrs} "
            f"-> {r.status} {r.text()[:120]!r}")
        if r.status == 400 and "client_secret" in r.text() and "client_secret" not in fields:
            # python mcp 2.3.0 RevocationRequest declares `client_secret: str | None`
            # with no default, i.e. the form field must be present (even empty).
            # An empty value is enough (public client: nothing checked; Basic
            # client: the secret is taken from the header).
            fields["client_secret"] = ""
            r = form(rev, fields, hdrs)
            log("10 revoke", f"retry with an empty client_secret= in the body -> {r.status} {r.text()[:120]!r}")
            note("revocation needs a client_secret form field (may be empty) besides client_id")
        r, _ = Mcp(mcp_url).initialize(current["access_token"])
        log("10 revoke", f"revoked access token on MCP endpoint -> {r.status}")
        if current.get("refresh_token"):
            fields = {"grant_type": "refresh_token", "refresh_token": current["refresh_token"]}
            hdrs = client_auth(client, fields)
            r = form(asm["token_endpoint"], fields, hdrs)
            log("10 revoke", f"refresh with the paired refresh token after revoking the access token -> "
                f"{r.status} {r.text()[:120]}")

    for n in NOTES:
        log("summary", n)
    log("done", "OK")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        for n in NOTES:
            log("summary", n)
        log("FAIL", str(e))
        sys.exit(1)
