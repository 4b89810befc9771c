//! `mcph` OAuth end to end against two real OAuth servers nobody here wrote, with the tokens in
//! a real (private) Secret Service:
//!
//! * FastMCP 4.2.3 with its `InMemoryOAuthProvider` (`interop/oauth/fastmcp_oauth_server.py`):
//!   dynamic client registration, rotating refresh tokens, revocation (RFC 7009);
//! * the TypeScript SDK's `simpleStreamableHttp` example with `--oauth` (no refresh tokens, no
//!   revocation) and with `--oauth --oauth-strict` (the RFC 8707 `resource` is checked).
//!
//! Every test starts its own servers and its own
//! [`SecretService`](mcp_testkit::secret_service::SecretService), runs the built `mcph` as
//! separate processes (login, status, call, logout: each finds what an earlier one stored) and
//! stops everything on drop. Both authorization servers approve at once, so the test plays the
//! browser: it fetches the URL `mcph auth login --no-browser` prints and follows the redirect to
//! mcph's loopback listener. What the servers do is in `interop/oauth/NOTES.md`.
//!
//! No access token, refresh token, client secret or authorization code may appear in anything
//! mcph prints (also with `-v`), nor in any file under the Secret Service's HOME (which is
//! mcph's HOME too) or mcph's working directory. The tests read the tokens back from the Secret
//! Service entry (mcp-auth's `KeyringStore` on the private bus) to know what to look for.
//!
//! Needs what `cargo xtask interop-setup` installs (the FastMCP venv, the TS SDK, node,
//! dbus-daemon, gnome-keyring); without it the tests fail saying so.

#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Run, RunningProcess, Stream, TempDir, DEADLINE, MCPH};
use mcp_client::mcp_auth::store::{KeyringStore, TokenStore};
use mcp_client::mcp_auth::{StoredCredentials, TokenEndpointAuth};
use mcp_testkit::process::{
    find_program, free_port, interop_component, workspace_root, ChildProcess,
};
use mcp_testkit::secret_service::{files_containing, SecretService};
use serde_json::{json, Value};

/// How long a server may take to answer its first request (FastMCP: a few seconds of imports).
const STARTUP_DEADLINE: Duration = Duration::from_secs(60);
/// How long the whole `mcph auth login` may take, URL to exit.
const LOGIN_DEADLINE: Duration = Duration::from_secs(90);
/// How long a single HTTP request of the test may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(15);
/// Attempts at starting a server (another process may take the free port in between).
const START_ATTEMPTS: usize = 3;
/// How often a condition is polled.
const POLL: Duration = Duration::from_millis(100);

/// The prefixes of what FastMCP's `InMemoryOAuthProvider` issues (`test_access_token_<hex>`…,
/// see `fastmcp/server/auth/providers/in_memory.py`): none may appear in mcph's output.
const FASTMCP_SECRET_PREFIXES: &[&str] = &[
    "test_access_token_",
    "test_refresh_token_",
    "test_auth_code_",
];

// ---------------------------------------------------------------------------------------------
// The Secret Service.
// ---------------------------------------------------------------------------------------------

/// A private Secret Service, or a failure saying what is missing.
fn secret_service() -> SecretService {
    SecretService::start().unwrap_or_else(|err| panic!("{err}"))
}

// ---------------------------------------------------------------------------------------------
// Processes: each a `ChildProcess`, its process group killed and reaped on drop.
// ---------------------------------------------------------------------------------------------

/// Starts a third-party server with its output in the log file `log` (under
/// `CARGO_TARGET_TMPDIR`, not in mcph's working directory) and polls until every URL answers
/// 200; `Err` with the log when the process exits or the deadline passes.
fn start_server(
    name: &str,
    command: &mut Command,
    log: &Path,
    http: &Http,
    urls: &[String],
) -> Result<ChildProcess, String> {
    let mut server = ChildProcess::spawn_logged(name, command, log)?;
    server.wait_ready(
        &format!("answering {urls:?} with 200"),
        STARTUP_DEADLINE,
        || match urls
            .iter()
            .map(|url| (url, http.status(url)))
            .find(|(_, status)| *status != Ok(200))
        {
            None => Ok(()),
            Some((url, status)) => Err(format!("{url}: {status:?}")),
        },
    )?;
    Ok(server)
}

fn log_path(name: &str, port: u16) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "oauth-interop-{name}-{port}-{}.log",
        std::process::id()
    ))
}

/// FastMCP behind its `InMemoryOAuthProvider`, upstream behaviour (no knobs but the TTL).
struct FastMcp {
    server: ChildProcess,
    port: u16,
}

impl FastMcp {
    fn start(http: &Http, token_ttl_secs: u64) -> FastMcp {
        let python = interop_component("fastmcp").join("bin/python");
        let script = workspace_root().join("interop/oauth/fastmcp_oauth_server.py");
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port();
            let mut command = Command::new(&python);
            command
                .arg(&script)
                .arg(port.to_string())
                .env("FASTMCP_TOKEN_TTL", token_ttl_secs.to_string())
                .env_remove("FASTMCP_REFRESH_TTL")
                .env_remove("FASTMCP_EXPIRY_KEEPS_REFRESH")
                .env_remove("FASTMCP_REQUIRED_SCOPES")
                .env_remove("FASTMCP_PORT");
            let prm = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
            match start_server(
                "fastmcp",
                &mut command,
                &log_path("fastmcp", port),
                http,
                &[prm],
            ) {
                Ok(server) => return FastMcp { server, port },
                Err(e) => failures.push(e),
            }
        }
        panic!("FastMCP did not start:\n{}", failures.join("\n---\n"));
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// The TS SDK's `simpleStreamableHttp.js --oauth [--oauth-strict]`: the MCP server on one
/// port, its demo authorization server on another.
struct TsServer {
    _server: ChildProcess,
    mcp_port: u16,
    auth_port: u16,
}

impl TsServer {
    fn start(http: &Http, strict: bool) -> TsServer {
        let node = find_program("node", "nodejs").unwrap_or_else(|e| {
            panic!("the OAuth interop tests need `node`: {e}");
        });
        let example = interop_component("tssdk").join(
            "node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
        );
        assert!(
            example.is_file(),
            "{} is missing: run `cargo xtask interop-setup`",
            example.display()
        );
        let preload = workspace_root().join("interop/loopback.cjs");
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            let (mcp_port, auth_port) = (free_port(), free_port());
            if mcp_port == auth_port {
                continue;
            }
            let mut command = Command::new(&node);
            command
                .arg("--require")
                .arg(&preload)
                .arg(&example)
                .arg("--oauth");
            if strict {
                command.arg("--oauth-strict");
            }
            // Not PORT: loopback.cjs would give it to the first listen, the auth server's.
            command
                .env("MCP_PORT", mcp_port.to_string())
                .env("MCP_AUTH_PORT", auth_port.to_string())
                .env_remove("PORT")
                .env_remove("NODE_OPTIONS");
            let name = if strict { "ts-strict" } else { "ts-oauth" };
            let ready = [
                format!("http://127.0.0.1:{mcp_port}/.well-known/oauth-protected-resource/mcp"),
                format!("http://127.0.0.1:{auth_port}/.well-known/oauth-authorization-server"),
            ];
            match start_server(name, &mut command, &log_path(name, mcp_port), http, &ready) {
                Ok(server) => {
                    return TsServer {
                        _server: server,
                        mcp_port,
                        auth_port,
                    }
                }
                Err(e) => failures.push(e),
            }
        }
        panic!(
            "the TS SDK example did not start:\n{}",
            failures.join("\n---\n")
        );
    }

    /// The MCP URL: `localhost`, as the server names itself (NOTES.md, "quirks").
    fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.mcp_port)
    }

    fn authorize_endpoint(&self) -> String {
        format!("http://localhost:{}/authorize", self.auth_port)
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP (the test's own client: the "browser", readiness, checks at the servers).
// ---------------------------------------------------------------------------------------------

struct Http {
    runtime: tokio::runtime::Runtime,
    /// No redirects followed, no proxy.
    client: reqwest::Client,
}

/// What a request got.
struct Answer {
    status: u16,
    body: String,
}

impl Http {
    fn new() -> Http {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(HTTP_TIMEOUT)
            .build()
            .expect("an HTTP client");
        Http { runtime, client }
    }

    fn send(&self, request: reqwest::RequestBuilder) -> Result<Answer, String> {
        self.runtime.block_on(async {
            let response = request.send().await.map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let body = response.text().await.map_err(|e| e.to_string())?;
            Ok(Answer { status, body })
        })
    }

    fn status(&self, url: &str) -> Result<u16, String> {
        self.send(self.client.get(url)).map(|a| a.status)
    }

    /// GETs `url` following redirects, like a browser; also returns every URL redirected to.
    fn browse(&self, url: &str) -> (Answer, Vec<String>) {
        let chain = Arc::new(Mutex::new(Vec::new()));
        let seen = chain.clone();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(HTTP_TIMEOUT)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                seen.lock().unwrap().push(attempt.url().to_string());
                if attempt.previous().len() > 5 {
                    attempt.error("too many redirects")
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .expect("an HTTP client");
        let answer = self
            .send(client.get(url))
            .unwrap_or_else(|e| panic!("fetching the authorization URL failed: {e}"));
        let chain = chain.lock().unwrap().clone();
        (answer, chain)
    }

    /// An MCP `initialize` POST with `Authorization: Bearer <token>`.
    fn initialize_with(&self, url: &str, token: &str) -> Answer {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "oauth-interop-test", "version": "0"}}
        });
        self.send(
            self.client
                .post(url)
                .bearer_auth(token)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.to_string()),
        )
        .unwrap_or_else(|e| panic!("POST initialize to {url}: {e}"))
    }

    /// A `refresh_token` grant at `token_endpoint`, authenticated as `creds`' client.
    fn refresh_grant(
        &self,
        token_endpoint: &str,
        creds: &StoredCredentials,
        refresh: &str,
    ) -> Answer {
        let client = creds.client.as_ref().expect("a registered client");
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "refresh_token")
            .append_pair("refresh_token", refresh);
        let mut request = self.client.post(token_endpoint);
        let secret = client
            .client_secret
            .as_ref()
            .map(|s| s.expose())
            .unwrap_or("");
        match client.auth_method {
            TokenEndpointAuth::ClientSecretBasic => {
                request = request.basic_auth(&client.client_id, Some(secret));
            }
            TokenEndpointAuth::ClientSecretPost => {
                form.append_pair("client_id", &client.client_id)
                    .append_pair("client_secret", secret);
            }
            _ => {
                form.append_pair("client_id", &client.client_id);
            }
        }
        self.send(
            request
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form.finish()),
        )
        .unwrap_or_else(|e| panic!("POST {token_endpoint}: {e}"))
    }
}

// ---------------------------------------------------------------------------------------------
// mcph, with its own Secret Service, working directory and transcript.
// ---------------------------------------------------------------------------------------------

/// The test process points `DBUS_SESSION_BUS_ADDRESS` (read when a `KeyringStore` connects)
/// at one test's bus only while holding this. Nothing else here depends on the variable: mcph
/// children get theirs explicitly, and std holds its environment lock while it spawns processes
/// and resolves host names, so those never race the change.
static BUS_ENV: Mutex<()> = Mutex::new(());

/// Sets `DBUS_SESSION_BUS_ADDRESS` and puts the old value back on drop (under [`BUS_ENV`]).
struct BusAddress {
    old: Option<std::ffi::OsString>,
    _lock: std::sync::MutexGuard<'static, ()>,
}

impl BusAddress {
    fn set(address: &str) -> BusAddress {
        let lock = BUS_ENV.lock().unwrap_or_else(|p| p.into_inner());
        let old = std::env::var_os("DBUS_SESSION_BUS_ADDRESS");
        std::env::set_var("DBUS_SESSION_BUS_ADDRESS", address);
        BusAddress { old, _lock: lock }
    }
}

impl Drop for BusAddress {
    fn drop(&mut self) {
        match self.old.take() {
            Some(old) => std::env::set_var("DBUS_SESSION_BUS_ADDRESS", old),
            None => std::env::remove_var("DBUS_SESSION_BUS_ADDRESS"),
        }
    }
}

struct Mcph {
    secret_service: SecretService,
    cwd: TempDir,
    config: PathBuf,
    /// Every command run, with its stdout and stderr.
    transcript: Vec<String>,
    /// Every secret seen so far (tokens, client secret, authorization codes), to look for.
    secrets: Vec<String>,
}

/// How a login went.
struct Login {
    run: Run,
    /// The URL printed on stderr.
    url: String,
    /// Where the authorization server redirected the "browser" (mcph's loopback callback).
    redirects: Vec<String>,
    /// The loopback listener's answer.
    page: Answer,
}

impl Mcph {
    fn new(config: &Value) -> Mcph {
        let secret_service = secret_service();
        let cwd = TempDir::new("oauth-cwd");
        let config = cwd.write("mcph.json", &config.to_string());
        Mcph {
            secret_service,
            cwd,
            config,
            transcript: Vec::new(),
            secrets: Vec::new(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(MCPH);
        command
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .current_dir(self.cwd.path())
            .envs(self.secret_service.envs())
            .env_remove("RUST_LOG")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("BROWSER")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn record(&mut self, args: &[&str], run: &Run) {
        self.transcript.push(format!(
            "$ mcph {}\n--- stdout\n{}\n--- stderr\n{}",
            args.join(" "),
            run.stdout,
            run.stderr
        ));
    }

    fn run(&mut self, args: &[&str]) -> Run {
        let run = RunningProcess::spawn("mcph", &mut self.command(args)).finish(DEADLINE);
        self.record(args, &run);
        run
    }

    /// `mcph auth status --json`: the row of `server` (and checks the store is the Secret
    /// Service).
    fn status_of(&mut self, server: &str) -> Value {
        let run = self.run(&["auth", "status", "--json"]);
        run.assert_code(0);
        let status = run.json();
        assert_eq!(status["store"], "Secret Service", "{status:#}");
        status["servers"]
            .as_array()
            .and_then(|rows| rows.iter().find(|row| row["server"] == server))
            .unwrap_or_else(|| panic!("{server} missing in {status:#}"))
            .clone()
    }

    /// `mcph servers --json`: the entry of `name`.
    fn server_entry(&mut self, name: &str) -> Value {
        let run = self.run(&["servers", "--json"]);
        run.assert_code(0);
        run.json()
            .as_array()
            .and_then(|list| list.iter().find(|s| s["name"] == name))
            .unwrap_or_else(|| panic!("{name} missing in {}", run.stdout))
            .clone()
    }

    /// `mcph [flags] auth login SERVER --no-browser`: reads the URL from stderr, fetches it
    /// following redirects (the authorization servers approve at once and redirect to mcph's
    /// loopback listener) and waits for the exit.
    fn login(&mut self, http: &Http, flags: &[&str], server: &str, authorize: &str) -> Login {
        let mut args: Vec<&str> = flags.to_vec();
        args.extend(["auth", "login", server, "--no-browser", "--timeout", "60"]);
        let mut login = RunningProcess::spawn("mcph auth login", &mut self.command(&args));
        let deadline = Instant::now() + LOGIN_DEADLINE;
        let url = login.wait_for_line(Stream::Stderr, LOGIN_DEADLINE, |line| {
            (line.starts_with("  ") && line.trim_start().starts_with(authorize))
                .then(|| line.trim().to_owned())
        });
        let (page, redirects) = http.browse(&url);
        let run = login.finish(deadline.saturating_duration_since(Instant::now()));
        self.record(&args, &run);
        // The authorization code reached mcph in the redirect: a secret too.
        for redirect in &redirects {
            if let Ok(parsed) = url::Url::parse(redirect) {
                for (key, value) in parsed.query_pairs() {
                    if key == "code" {
                        self.secrets.push(value.into_owned());
                    }
                }
            }
        }
        Login {
            run,
            url,
            redirects,
            page,
        }
    }

    /// The Secret Service entry mcph keeps for the server at `url` (read through mcp-auth's
    /// `KeyringStore` on this test's private bus); its secrets are remembered.
    fn stored(&mut self, url: &str) -> Option<StoredCredentials> {
        let creds = {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            // The store connects to the bus when it is opened.
            let store = {
                let _bus = BusAddress::set(self.secret_service.bus_address());
                KeyringStore::secret_service(mcp_client::auth::STORE_SERVICE)
            }
            .unwrap_or_else(|e| panic!("opening the Secret Service: {e}"));
            runtime
                .block_on(store.load(&mcp_client::auth::store_key(url)))
                .unwrap_or_else(|e| panic!("reading the Secret Service entry: {e}"))
        };
        if let Some(creds) = &creds {
            if let Some(tokens) = &creds.tokens {
                self.secrets.push(tokens.access_token.expose().to_owned());
                if let Some(refresh) = &tokens.refresh_token {
                    self.secrets.push(refresh.expose().to_owned());
                }
            }
            if let Some(secret) = creds.client.as_ref().and_then(|c| c.client_secret.as_ref()) {
                self.secrets.push(secret.expose().to_owned());
            }
        }
        creds
    }

    /// Nothing secret in anything mcph printed, and nothing in plaintext on disk.
    fn assert_no_secret_leaked(&self, fastmcp: bool) {
        assert!(!self.secrets.is_empty(), "no secret was collected to check");
        for (i, secret) in self.secrets.iter().enumerate() {
            assert!(secret.len() >= 8, "secret #{i} is too short to look for");
            for entry in &self.transcript {
                let command = entry.lines().next().unwrap_or("");
                // Only which secret and where: never the secret itself.
                assert!(
                    !entry.contains(secret.as_str()),
                    "secret #{i} (of {}) appears in the output of `{command}`",
                    self.secrets.len()
                );
            }
            for dir in [self.secret_service.root(), self.cwd.path()] {
                let found = files_containing(dir, secret.as_bytes());
                assert!(
                    found.is_empty(),
                    "secret #{i} is readable in plaintext in {found:?}"
                );
            }
        }
        if fastmcp {
            for entry in &self.transcript {
                let command = entry.lines().next().unwrap_or("");
                for prefix in FASTMCP_SECRET_PREFIXES {
                    assert!(
                        !entry.contains(prefix),
                        "something like a FastMCP token ({prefix}…) appears in the output of \
                         `{command}`"
                    );
                }
            }
        }
        // The Secret Service was used everywhere (no in-memory fallback).
        for entry in &self.transcript {
            assert!(
                !entry.contains("no OS credential store"),
                "mcph fell back to memory:\n{entry}"
            );
        }
    }
}

/// `config` with the built-in fixture next to the protected server(s).
fn config_with_fixture(servers: Value) -> Value {
    let mut servers = servers;
    servers["fixture"] = json!({
        "command": mcp_testkit::fixture_server_bin().to_string_lossy()
    });
    json!({ "mcpServers": servers })
}

/// Polls `mcph auth status --json` until `server`'s token is expired by mcph's own account.
fn wait_until_expired(mcph: &mut Mcph, server: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let row = mcph.status_of(server);
        assert_eq!(row["logged_in"], true, "{row:#}");
        if row["expired"] == true {
            return row;
        }
        assert!(
            Instant::now() < deadline,
            "the token of {server} is still not expired after {within:?}: {row:#}"
        );
        std::thread::sleep(POLL * 2);
    }
}

fn assert_login_succeeded(login: &Login, server: &str, callback_prefix: &str) {
    login.run.assert_code(0);
    assert!(
        login
            .run
            .stdout
            .starts_with(&format!("Logged in to {server}")),
        "{}",
        login.run.stdout
    );
    assert!(
        login.run.stdout.contains("tokens kept in Secret Service."),
        "{}",
        login.run.stdout
    );
    assert!(
        login
            .redirects
            .iter()
            .any(|r| r.starts_with(callback_prefix)
                && r.contains("/callback?")
                && r.contains("code=")),
        "the authorization server did not redirect to mcph's loopback listener: {:?}",
        login
            .redirects
            .iter()
            .map(|r| r.split('?').next().unwrap_or(""))
            .collect::<Vec<_>>()
    );
    assert_eq!(login.page.status, 200, "{}", login.page.body);
}

// ---------------------------------------------------------------------------------------------
// FastMCP.
// ---------------------------------------------------------------------------------------------

/// needs-auth before login (the fixture is ready meanwhile), login, status (JSON and human)
/// from another process, a call from a third, logout with revocation checked at the server,
/// needs-auth again; nothing secret printed or on disk.
#[test]
fn fastmcp_login_status_call_logout() {
    let started = Instant::now();
    let http = Http::new();
    let fast = FastMcp::start(&http, 3600);
    let url = fast.url();
    let mut mcph = Mcph::new(&config_with_fixture(json!({
        "fast": {"type": "http", "url": url}
    })));

    // Before login: needs-auth with the login hint; the fixture is ready at the same time.
    let run = mcph.run(&["servers"]);
    run.assert_code(0);
    eprintln!(
        "--- mcph servers (before the FastMCP login):\n{}",
        run.stdout
    );
    let fast_line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("fast "))
        .unwrap_or_else(|| panic!("no row for fast:\n{}", run.stdout));
    assert!(fast_line.contains("needs-auth"), "{}", run.stdout);
    assert!(
        run.stdout.contains("mcph auth login fast"),
        "{}",
        run.stdout
    );
    let fixture_line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("fixture "))
        .unwrap_or_else(|| panic!("no row for fixture:\n{}", run.stdout));
    assert!(fixture_line.contains("ready"), "{}", run.stdout);
    let entry = mcph.server_entry("fast");
    assert_eq!(entry["status"], "needs-auth", "{entry:#}");
    assert!(
        entry["reason"]
            .as_str()
            .is_some_and(|r| r.contains("mcph auth login fast")),
        "{entry:#}"
    );
    assert_eq!(mcph.server_entry("fixture")["status"], "ready");
    let row = mcph.status_of("fast");
    assert_eq!(row["logged_in"], false, "{row:#}");
    assert!(mcph.stored(&url).is_none(), "an entry before login");

    // Login (verbose, so its debug logs are checked for secrets too).
    let login = mcph.login(
        &http,
        &["-v"],
        "fast",
        &format!("{}/authorize?", fast.origin()),
    );
    assert_login_succeeded(&login, "fast", "http://127.0.0.1:");
    assert!(
        login.url.contains("code_challenge_method=S256") && login.url.contains("resource="),
        "{}",
        login.url
    );
    let creds = mcph.stored(&url).expect("the login stored an entry");
    let tokens = creds.tokens.clone().expect("tokens stored");
    assert!(tokens
        .access_token
        .expose()
        .starts_with("test_access_token_"));
    assert!(tokens
        .refresh_token
        .as_ref()
        .is_some_and(|r| r.expose().starts_with("test_refresh_token_")));
    let client = creds
        .client
        .clone()
        .expect("the registered client is stored");
    assert!(!client.client_id.is_empty());

    // A second process sees the login; never the token.
    let row = mcph.status_of("fast");
    assert_eq!(row["logged_in"], true, "{row:#}");
    assert_eq!(row["refreshable"], true, "{row:#}");
    assert_eq!(row["expired"], false, "{row:#}");
    let expires_in = row["expires_in_sec"].as_u64().expect("an expiry");
    assert!(expires_in > 3000 && expires_in <= 3600, "{row:#}");
    let human = mcph.run(&["auth", "status"]);
    human.assert_code(0);
    eprintln!(
        "--- mcph auth status (after the FastMCP login):\n{}",
        human.stdout
    );
    let header = human.stdout.lines().next().unwrap_or("");
    for column in ["SERVER", "LOGIN", "EXPIRES", "SCOPES", "REFRESH"] {
        assert!(header.contains(column), "{}", human.stdout);
    }
    let fast_row = human
        .stdout
        .lines()
        .find(|l| l.starts_with("fast "))
        .unwrap_or_else(|| panic!("no row for fast:\n{}", human.stdout));
    let cells: Vec<&str> = fast_row.split_whitespace().collect();
    assert_eq!(cells[1], "yes", "{fast_row}");
    assert_eq!(cells[2], "in", "{fast_row}");
    assert_eq!(cells.last(), Some(&"yes"), "{fast_row}");
    assert!(
        human.stdout.contains("Tokens are kept in Secret Service."),
        "{}",
        human.stdout
    );
    assert!(!human.stdout.contains("fixture"), "{}", human.stdout);

    // A third process calls tools with the stored token.
    let run = mcph.run(&["call", "fast__echo", "--arg", "text=hello from mcph"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "hello from mcph");
    let run = mcph.run(&["-v", "call", "fast__whoami", "--json"]);
    run.assert_code(0);
    let who = run.json()["structuredContent"].clone();
    assert_eq!(who["client_id"], client.client_id.as_str(), "{who:#}");
    assert!(
        !run.stderr.contains("access token refreshed"),
        "a token valid for an hour was refreshed:\n{}",
        run.stderr
    );
    let run = mcph.run(&[
        "call",
        "fast__add",
        "--arg",
        "a=20",
        "--arg",
        "b=22",
        "--json",
    ]);
    run.assert_code(0);
    assert_eq!(run.json()["structuredContent"], json!({"result": 42}));
    let run = mcph.run(&["tools"]);
    run.assert_code(0);
    for name in ["fast__echo", "fast__add", "fast__whoami", "fixture__echo"] {
        assert!(run.stdout.contains(name), "{name} missing:\n{}", run.stdout);
    }
    assert_eq!(mcph.server_entry("fast")["status"], "ready");
    // The same login, as stored, is what the server accepts (control for the revocation).
    let answer = http.initialize_with(&url, tokens.access_token.expose());
    assert_eq!(
        answer.status, 200,
        "the stored token is refused: {}",
        answer.body
    );
    // Still the login's tokens (nothing refreshed).
    let now = mcph.stored(&url).expect("still stored");
    assert_eq!(now.tokens.as_ref(), Some(&tokens));
    mcph.assert_no_secret_leaked(true);

    // Logout revokes at FastMCP's /revoke and deletes the entry.
    let run = mcph.run(&["auth", "logout", "fast"]);
    run.assert_code(0);
    eprintln!("--- mcph auth logout fast:\n{}", run.stdout);
    assert!(
        run.stdout.starts_with("Logged out of fast")
            && run
                .stdout
                .contains(&format!("revoked at {}/revoke", fast.origin())),
        "logout did not revoke:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    let left = mcph.stored(&url);
    assert!(
        left.as_ref()
            .is_none_or(|e| e.tokens.is_none() && e.client.is_none()),
        "tokens or the registration are still stored"
    );
    let answer = http.initialize_with(&url, tokens.access_token.expose());
    assert_eq!(
        answer.status, 401,
        "the revoked access token still works: {}",
        answer.body
    );
    let refresh = tokens.refresh_token.as_ref().expect("a refresh token");
    let answer = http.refresh_grant(
        &format!("{}/token", fast.origin()),
        &creds,
        refresh.expose(),
    );
    assert_ne!(answer.status, 200, "the revoked refresh token still works");
    assert!(answer.body.contains("invalid_grant"), "{}", answer.body);
    let row = mcph.status_of("fast");
    assert_eq!(row["logged_in"], false, "{row:#}");
    let entry = mcph.server_entry("fast");
    assert_eq!(entry["status"], "needs-auth", "{entry:#}");
    assert_eq!(mcph.server_entry("fixture")["status"], "ready");
    let run = mcph.run(&["auth", "logout", "fast"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("No tokens were stored for fast"),
        "{}",
        run.stdout
    );

    mcph.assert_no_secret_leaked(true);
    eprintln!(
        "fastmcp_login_status_call_logout: {} mcph runs, {} secrets checked, {:?}",
        mcph.transcript.len(),
        mcph.secrets.len(),
        started.elapsed()
    );
}

/// A short-lived access token (FASTMCP_TOKEN_TTL=5) is refreshed before it is used: once mcph
/// says it has expired, a later call logs "access token refreshed" and succeeds. Upstream
/// FastMCP deletes the refresh token when it sees the expired access token (NOTES.md, quirk
/// F6), so the call succeeding proves the refresh came first. A second expiry and call from
/// another process prove the rotated refresh token was stored.
#[test]
fn fastmcp_refreshes_an_expired_token_before_using_it() {
    let started = Instant::now();
    let http = Http::new();
    let fast = FastMcp::start(&http, 5);
    let url = fast.url();
    let mut mcph = Mcph::new(&config_with_fixture(json!({
        "fast": {"type": "http", "url": url}
    })));

    let login = mcph.login(&http, &[], "fast", &format!("{}/authorize?", fast.origin()));
    assert_login_succeeded(&login, "fast", "http://127.0.0.1:");
    let first = mcph.stored(&url).expect("stored");
    let first_tokens = first.tokens.clone().expect("tokens");
    let first_expiry = first_tokens.expires_at.expect("an expiry");
    let client_id = first.client.as_ref().expect("client").client_id.clone();
    assert!(first_tokens.refresh_token.is_some());

    // Wait until mcph itself considers the token expired (then FastMCP does too).
    let row = wait_until_expired(&mut mcph, "fast", Duration::from_secs(30));
    assert_eq!(row["refreshable"], true, "{row:#}");
    let human = mcph.run(&["auth", "status"]);
    human.assert_code(0);
    assert!(human.stdout.contains("expired"), "{}", human.stdout);
    let mcp_401s = |server: &FastMcp| {
        server
            .server
            .log_text()
            .lines()
            .filter(|l| l.contains("POST /mcp") && l.contains(" 401"))
            .count()
    };
    let refused_before = mcp_401s(&fast);

    let run = mcph.run(&["-v", "call", "fast__whoami", "--json"]);
    run.assert_code(0);
    assert!(
        run.stderr.contains("access token refreshed"),
        "no refresh logged:\n{}",
        run.stderr
    );
    let who = run.json()["structuredContent"].clone();
    assert_eq!(who["client_id"], client_id.as_str(), "{who:#}");
    let used_expiry = who["expires_at"]
        .as_f64()
        .expect("whoami reports expires_at");
    assert!(
        used_expiry > first_expiry as f64,
        "the call used the expired token (expires_at {used_expiry} vs {first_expiry})"
    );
    assert_eq!(
        mcp_401s(&fast),
        refused_before,
        "the expired token was presented to FastMCP before the refresh"
    );
    let second = mcph.stored(&url).expect("still stored");
    let second_tokens = second.tokens.clone().expect("tokens");
    assert_ne!(second_tokens.access_token, first_tokens.access_token);
    assert_ne!(
        second_tokens.refresh_token, first_tokens.refresh_token,
        "the rotated refresh token was not stored"
    );
    assert!(second_tokens.expires_at.expect("an expiry") > first_expiry);
    let row = mcph.status_of("fast");
    assert_eq!(row["logged_in"], true, "{row:#}");
    assert_eq!(row["refreshable"], true, "{row:#}");

    // Again, from another process: only the rotated (stored) refresh token can work now.
    wait_until_expired(&mut mcph, "fast", Duration::from_secs(30));
    let run = mcph.run(&[
        "-v",
        "call",
        "fast__echo",
        "--arg",
        "text=after the second refresh",
    ]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "after the second refresh");
    assert!(
        run.stderr.contains("access token refreshed"),
        "{}",
        run.stderr
    );
    let third = mcph.stored(&url).expect("still stored");
    let third_tokens = third.tokens.clone().expect("tokens");
    assert_ne!(third_tokens.refresh_token, second_tokens.refresh_token);
    let row = mcph.status_of("fast");
    assert_eq!(row["logged_in"], true, "{row:#}");

    mcph.assert_no_secret_leaked(true);
    eprintln!(
        "fastmcp_refreshes_an_expired_token_before_using_it: {} mcph runs, {} secrets checked, {:?}",
        mcph.transcript.len(),
        mcph.secrets.len(),
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// The TypeScript SDK example.
// ---------------------------------------------------------------------------------------------

/// Logs in to the TS example server and checks what every later process sees.
fn ts_login(strict: bool) -> (TsServer, Mcph) {
    let http = Http::new();
    let ts = TsServer::start(&http, strict);
    let url = ts.url();
    let mut mcph = Mcph::new(&config_with_fixture(json!({
        "ts": {"type": "http", "url": url}
    })));
    let entry = mcph.server_entry("ts");
    assert_eq!(entry["status"], "needs-auth", "{entry:#}");

    let login = mcph.login(&http, &[], "ts", &format!("{}?", ts.authorize_endpoint()));
    assert_login_succeeded(&login, "ts", "http://127.0.0.1:");
    let authorize = url::Url::parse(&login.url).expect("the printed URL parses");
    let resources: Vec<String> = authorize
        .query_pairs()
        .filter(|(k, _)| k == "resource")
        .map(|(_, v)| v.into_owned())
        .collect();
    assert_eq!(resources, std::slice::from_ref(&url), "{}", login.url);
    let creds = mcph.stored(&url).expect("the login stored an entry");
    let tokens = creds.tokens.expect("tokens");
    assert!(tokens.refresh_token.is_none(), "the TS example issues none");

    let row = mcph.status_of("ts");
    assert_eq!(row["logged_in"], true, "{row:#}");
    assert_eq!(row["refreshable"], false, "{row:#}");
    assert_eq!(row["expired"], false, "{row:#}");
    assert_eq!(mcph.server_entry("ts")["status"], "ready");
    (ts, mcph)
}

/// `simpleStreamableHttp --oauth`: login, then the tools from another process; no refresh
/// token.
#[test]
fn ts_sdk_oauth_login_then_tools() {
    let started = Instant::now();
    let (_ts, mut mcph) = ts_login(false);
    let run = mcph.run(&["tools"]);
    run.assert_code(0);
    for name in [
        "ts__greet",
        "ts__multi-greet",
        "ts__collect-user-info",
        "fixture__echo",
    ] {
        assert!(run.stdout.contains(name), "{name} missing:\n{}", run.stdout);
    }
    let run = mcph.run(&["-v", "call", "ts__greet", "--arg", "name=Ferris"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "Hello, Ferris!");
    mcph.assert_no_secret_leaked(false);
    eprintln!(
        "ts_sdk_oauth_login_then_tools: {} mcph runs, {} secrets checked, {:?}",
        mcph.transcript.len(),
        mcph.secrets.len(),
        started.elapsed()
    );
}

/// `--oauth --oauth-strict`: the token endpoint refuses a wrong or missing RFC 8707
/// `resource`, so the login and a call succeeding prove mcph sends the one the server wants.
#[test]
fn ts_sdk_strict_oauth_login_and_call() {
    let started = Instant::now();
    let (_ts, mut mcph) = ts_login(true);
    let run = mcph.run(&["call", "ts__greet", "--arg", "name=strict"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "Hello, strict!");
    mcph.assert_no_secret_leaked(false);
    eprintln!(
        "ts_sdk_strict_oauth_login_and_call: {} mcph runs, {} secrets checked, {:?}",
        mcph.transcript.len(),
        mcph.secrets.len(),
        started.elapsed()
    );
}
