#!/usr/bin/env python3
"""Captures real traffic of the fixture server (mcp-testkit's `mcp-fixture-server`) as seed
inputs for the fuzz targets: the JSON-RPC lines of a stdio session (requests and answers),
its stderr, the Streamable HTTP answers (SSE bodies), and the OAuth mode's challenges,
metadata documents and token answers.

    cargo build -p mcp-testkit --bin mcp-fixture-server
    python3 fuzz/capture_seeds.py target/debug/mcp-fixture-server fuzz/corpus

Writes fuzz/corpus/<target>/capture-*; run `cargo xtask fuzz` afterwards as usual. Standard
library only; loopback only.
"""
import base64
import hashlib
import json
import os
import secrets
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request


def write(corpus, target, name, data):
    folder = os.path.join(corpus, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, "capture-" + name), "wb") as f:
        f.write(data)


def stdio_session(server):
    """Requests and answer lines of one stdio session, and its stderr."""
    proc = subprocess.Popen(
        [server, "--stderr-noise", "3", "--era", "dual"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    lines = []
    next_id = [0]

    def send(method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            next_id[0] += 1
            msg["id"] = next_id[0]
        line = json.dumps(msg, separators=(",", ":"))
        lines.append(line)
        proc.stdin.write((line + "\n").encode())
        proc.stdin.flush()
        if notify:
            return None
        while True:
            answer = proc.stdout.readline().decode().rstrip("\n")
            if not answer:
                raise RuntimeError("the fixture server closed its stdout")
            lines.append(answer)
            parsed = json.loads(answer)
            if parsed.get("id") == msg["id"] and "method" not in parsed:
                return parsed

    init = send("initialize", {
        "protocolVersion": "2025-11-25",
        "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}},
        "clientInfo": {"name": "seed-capture", "version": "1"},
    })
    send("notifications/initialized", notify=True)
    send("ping")
    tools = send("tools/list")["result"]["tools"]
    calls = {
        "echo": {"text": "héllo \"world\"\n"},
        "add": {"a": 2, "b": 40},
        "fail": {"mode": "error"},
        "trigger_list_changed": {"list": "tools", "times": 1},
        "bump_resource": {},
        "large": {"bytes": 3000},
        "log": {"level": "warning", "message": "a log line"},
    }
    for tool in tools:
        if tool["name"] in calls:
            send("tools/call", {"name": tool["name"], "arguments": calls[tool["name"]]})
    resources = send("resources/list")["result"].get("resources", [])
    for resource in resources[:4]:
        send("resources/read", {"uri": resource["uri"]})
    send("resources/templates/list")
    prompts = send("prompts/list")["result"].get("prompts", [])
    for prompt in prompts[:3]:
        args = {a["name"]: "value" for a in prompt.get("arguments", [])}
        send("prompts/get", {"name": prompt["name"], "arguments": args})
    send("no/such/method")
    proc.stdin.close()
    stderr = proc.stderr.read()
    proc.wait(timeout=10)
    return init, lines, stderr


def http_fixture(server, *flags):
    proc = subprocess.Popen([server, "--http", "127.0.0.1:0", *flags],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    first = proc.stdout.readline().decode().strip()
    return proc, first.split("listening on ", 1)[1]


def request(url, body=None, headers=None, method=None):
    req = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def http_session(server, corpus):
    proc, base = http_fixture(server)
    try:
        accept = {"Accept": "application/json, text/event-stream",
                  "Content-Type": "application/json"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "seed-capture", "version": "1"}}}
        status, headers, body = request(base + "/mcp", json.dumps(init).encode(), accept)
        write(corpus, "sse", "initialize", b"\x40\x00\x05\x11\x03\x07" + body)
        session = {k: v for k, v in headers.items() if k.lower() == "mcp-session-id"}
        h = dict(accept, **session, **{"MCP-Protocol-Version": "2025-11-25"})
        request(base + "/mcp", json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), h)
        for i, (method, params) in enumerate([
            ("tools/list", {}),
            ("tools/call", {"name": "echo", "arguments": {"text": "hello\nworld"}}),
            ("resources/list", {}),
            ("prompts/list", {}),
        ]):
            msg = {"jsonrpc": "2.0", "id": 2 + i, "method": method, "params": params}
            status, _, body = request(base + "/mcp", json.dumps(msg).encode(), h)
            write(corpus, "sse", method.replace("/", "-"),
                  bytes([0xff, i & 1, 1 + i, 9, 33, 2]) + body)
    finally:
        proc.kill()
        proc.wait()


def oauth_session(server, corpus, *flags):
    proc, base = http_fixture(server, *flags)
    tag = "-".join(f.strip("-") for f in flags) or "oauth"
    try:
        accept = {"Accept": "application/json, text/event-stream",
                  "Content-Type": "application/json"}
        status, headers, _ = request(base + "/mcp", b"{}", accept)
        challenges = [v for k, v in headers.items() if k.lower() == "www-authenticate"]
        for i, c in enumerate(challenges):
            write(corpus, "auth_challenge", f"{tag}-{i}", c)
        prm_url = base + "/.well-known/oauth-protected-resource/mcp"
        for c in challenges:
            if 'resource_metadata="' in c:
                prm_url = c.split('resource_metadata="', 1)[1].split('"', 1)[0]
        _, _, prm = request(prm_url)
        write(corpus, "oauth_metadata", f"{tag}-resource", prm)
        issuer = json.loads(prm)["authorization_servers"][0].rstrip("/")
        parsed = urllib.parse.urlsplit(issuer)
        asm_url = f"{parsed.scheme}://{parsed.netloc}/.well-known/oauth-authorization-server{parsed.path}"
        _, _, asm = request(asm_url)
        write(corpus, "oauth_metadata", f"{tag}-server", asm)
        meta = json.loads(asm)
        redirect = "http://127.0.0.1:9/callback"
        _, _, reg = request(meta["registration_endpoint"], json.dumps({
            "client_name": "seed-capture", "redirect_uris": [redirect],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none"}).encode(),
            {"Content-Type": "application/json"})
        write(corpus, "oauth_metadata", f"{tag}-registration", reg)
        client_id = json.loads(reg)["client_id"]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(
            hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = urllib.parse.urlencode({
            "response_type": "code", "client_id": client_id, "redirect_uri": redirect,
            "code_challenge": challenge, "code_challenge_method": "S256", "state": "s",
            "resource": base + "/mcp"})
        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(meta["authorization_endpoint"] + "?" + query, timeout=10)
            return
        except urllib.error.HTTPError as e:
            location = e.headers.get("Location", "")
        code = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query).get("code")
        if not code:
            return
        form = urllib.parse.urlencode({
            "grant_type": "authorization_code", "code": code[0], "redirect_uri": redirect,
            "client_id": client_id, "code_verifier": verifier, "resource": base + "/mcp"})
        _, _, token = request(meta["token_endpoint"], form.encode(),
                              {"Content-Type": "application/x-www-form-urlencoded"})
        write(corpus, "oauth_metadata", f"{tag}-token", token)
        _, _, refused = request(meta["token_endpoint"], form.encode(),
                                {"Content-Type": "application/x-www-form-urlencoded"})
        write(corpus, "oauth_metadata", f"{tag}-token-refused", refused)
    finally:
        proc.kill()
        proc.wait()


def main():
    server, corpus = sys.argv[1], sys.argv[2]
    init, lines, stderr = stdio_session(server)
    for i, line in enumerate(lines):
        for target in ("jsonrpc_decode", "jsonrpc_roundtrip", "grpc_line"):
            write(corpus, target, f"stdio-{i:02}", line)
    transcript = "\n".join(lines) + "\n"
    write(corpus, "stdio_framing", "session", b"\x07\x10\xff" + transcript.encode())
    write(corpus, "stdio_framing", "session-small-cap", b"\x01\x03\x04" + transcript.encode())
    write(corpus, "stdio_stderr", "noise", b"\x07\x10" + stderr)
    http_session(server, corpus)
    oauth_session(server, corpus, "--oauth")
    oauth_session(server, corpus, "--oauth-dpop-nonce")
    oauth_session(server, corpus, "--oauth-required-scope", "admin")


if __name__ == "__main__":
    main()
