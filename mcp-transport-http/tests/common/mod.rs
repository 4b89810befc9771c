//! Shared helpers for the HTTP interop tests: start a third-party server (installed by
//! `cargo xtask interop-setup`) on a free loopback port, wait until it accepts connections,
//! and kill it when the test is done (also when the test panics).

#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mcp_session::{ClientHandler, ClientSession, SessionOptions};
use mcp_transport_http::{HttpServerConfig, HttpSseTransport, StreamableHttpTransport};

/// Generous deadline for anything a test waits on.
pub const DEADLINE: Duration = Duration::from_secs(20);
/// How long a server may take to accept connections (FastMCP is the slowest, ~1.5–5 s).
pub const STARTUP_DEADLINE: Duration = Duration::from_secs(30);
/// Attempts at starting a server (another process may grab the free port in between).
const START_ATTEMPTS: usize = 3;

/// Where `cargo xtask interop-setup` installed the third-party servers; `component` is the
/// sub-folder the test needs (`node`, `py`, `tssdk`, `fastmcp`).
pub fn interop_dir(component: &str) -> PathBuf {
    let dir = std::env::var_os("MCP_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".interop"));
    assert!(
        dir.join(component).join(".xtask-stamp").is_file(),
        "the interop component `{component}` is not installed in {}: run `cargo xtask interop-setup`",
        dir.display()
    );
    dir
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives in the workspace")
        .to_path_buf()
}

/// A port nobody listens on right now: bind 127.0.0.1:0, read the port, let it go.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds a loopback port");
    listener.local_addr().expect("has an address").port()
}

/// How to start one server: the command for a given port.
pub struct ServerSpec {
    pub name: &'static str,
    pub program: PathBuf,
    /// Arguments; every `{port}` is replaced by the chosen port.
    pub args: Vec<String>,
    /// Environment; every `{port}` in a value is replaced by the chosen port.
    pub env: Vec<(String, String)>,
    /// The URL path the MCP endpoint lives at (`/mcp`, `/sse`).
    pub path: &'static str,
}

impl ServerSpec {
    pub fn new(name: &'static str, program: impl Into<PathBuf>, path: &'static str) -> Self {
        ServerSpec {
            name,
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            path,
        }
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.push((key.to_owned(), value.into()));
        self
    }
}

/// A running server; killed (SIGKILL) and reaped on drop.
pub struct Server {
    pub name: &'static str,
    pub port: u16,
    pub url: String,
    pub log: PathBuf,
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `spec` on a free loopback port and waits (with a deadline) until it accepts
    /// TCP connections; retries on a fresh port when the process exits early.
    pub async fn start(spec: ServerSpec) -> Server {
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port();
            match Self::try_start(&spec, port).await {
                Ok(server) => return server,
                Err(e) => failures.push(e),
            }
        }
        panic!("{} did not start:\n{}", spec.name, failures.join("\n---\n"));
    }

    async fn try_start(spec: &ServerSpec, port: u16) -> Result<Server, String> {
        let fill = |s: &str| s.replace("{port}", &port.to_string());
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("interop-{}-{port}.log", spec.name));
        let out = File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&spec.program);
        cmd.args(spec.args.iter().map(|a| fill(a)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        for (k, v) in &spec.env {
            cmd.env(k, fill(v));
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", spec.program.display()))?;
        // From here on the server is killed on every path (drop).
        let mut server = Server {
            name: spec.name,
            port,
            url: format!("http://127.0.0.1:{port}{}", spec.path),
            log,
            child,
        };
        let deadline = tokio::time::Instant::now() + STARTUP_DEADLINE;
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "{} exited with {status} before accepting connections on port {port}; log:\n{}",
                    spec.name,
                    server.log_text()
                ));
            }
            let connect = tokio::time::timeout(
                Duration::from_millis(500),
                tokio::net::TcpStream::connect(("127.0.0.1", port)),
            )
            .await;
            if let Ok(Ok(_)) = connect {
                return Ok(server);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "{} did not accept connections on port {port} within {STARTUP_DEADLINE:?}; log:\n{}",
                    spec.name,
                    server.log_text()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The same host and port with another path (e.g. `/sse` next to `/mcp`).
    pub fn url_at(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// `node --require interop/loopback.cjs` options, forcing Node servers onto 127.0.0.1 and the
/// port in `PORT`.
pub fn node_loopback_options() -> String {
    format!(
        "--require {}",
        workspace_root().join("interop/loopback.cjs").display()
    )
}

/// `mcp-server-everything <mode>` (`streamableHttp` → `/mcp`, `sse` → `/sse`).
pub fn everything(mode: &str) -> ServerSpec {
    let path = if mode == "sse" { "/sse" } else { "/mcp" };
    ServerSpec::new(
        "server-everything",
        interop_dir("node").join("node/node_modules/.bin/mcp-server-everything"),
        path,
    )
    .arg(mode)
    .env("PORT", "{port}")
    .env("NODE_OPTIONS", node_loopback_options())
}

/// `interop/python_http_server.py <transport> <port>` on the official Python SDK.
pub fn python_server(transport: &str) -> ServerSpec {
    let path = if transport == "sse" { "/sse" } else { "/mcp" };
    ServerSpec::new(
        "python-sdk-server",
        interop_dir("py").join("py/bin/python"),
        path,
    )
    .arg(
        workspace_root()
            .join("interop/python_http_server.py")
            .display()
            .to_string(),
    )
    .arg(transport)
    .arg("{port}")
}

/// `interop/fastmcp_server.py <port>` on FastMCP (`http` transport).
pub fn fastmcp_server() -> ServerSpec {
    ServerSpec::new(
        "fastmcp-server",
        interop_dir("fastmcp").join("fastmcp/bin/python"),
        "/mcp",
    )
    .arg(
        workspace_root()
            .join("interop/fastmcp_server.py")
            .display()
            .to_string(),
    )
    .arg("{port}")
}

/// One of the TypeScript SDK's example servers (`dist/esm/examples/server/<name>.js`).
pub fn ts_example(name: &'static str) -> ServerSpec {
    let script = interop_dir("tssdk")
        .join("tssdk/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server")
        .join(format!("{name}.js"));
    ServerSpec::new(name, "node", "/mcp")
        .arg("--require")
        .arg(
            workspace_root()
                .join("interop/loopback.cjs")
                .display()
                .to_string(),
        )
        .arg(script.display().to_string())
        .env("PORT", "{port}")
}

pub async fn connect(server: &Server) -> ClientSession {
    connect_with(server, (), SessionOptions::default()).await
}

pub async fn connect_with(
    server: &Server,
    handler: impl ClientHandler,
    options: SessionOptions,
) -> ClientSession {
    let transport = StreamableHttpTransport::new(HttpServerConfig::new(server.url.clone()))
        .expect("valid config");
    tokio::time::timeout(
        DEADLINE,
        ClientSession::connect(transport, handler, options),
    )
    .await
    .unwrap_or_else(|_| {
        panic!(
            "{}: connect timed out; log:\n{}",
            server.name,
            server.log_text()
        )
    })
    .unwrap_or_else(|e| {
        panic!(
            "{}: connect failed: {e:?}; log:\n{}",
            server.name,
            server.log_text()
        )
    })
}

/// Connects with the 2024-11-05 HTTP+SSE transport to `server.url` (the SSE endpoint).
pub async fn connect_http_sse(server: &Server, handler: impl ClientHandler) -> ClientSession {
    connect_http_sse_with(server, &server.url, handler).await
}

/// Connects with the 2024-11-05 HTTP+SSE transport to another path of `server`.
pub async fn connect_http_sse_url(server: &Server, url: &str) -> ClientSession {
    connect_http_sse_with(server, url, ()).await
}

async fn connect_http_sse_with(
    server: &Server,
    url: &str,
    handler: impl ClientHandler,
) -> ClientSession {
    let session = tokio::time::timeout(DEADLINE, async {
        let transport = HttpSseTransport::connect(HttpServerConfig::new(url))
            .await
            .unwrap_or_else(|e| panic!("{}: SSE endpoint: {e:?}", server.name));
        ClientSession::connect(transport, handler, SessionOptions::default()).await
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "{}: connect timed out; log:\n{}",
            server.name,
            server.log_text()
        )
    });
    session.unwrap_or_else(|e| {
        panic!(
            "{}: connect failed: {e:?}; log:\n{}",
            server.name,
            server.log_text()
        )
    })
}

/// Waits (with [`DEADLINE`]) for the first notification `pick` accepts.
pub async fn wait_for<T>(
    notes: &mut mcp_session::NotificationStream,
    what: &str,
    mut pick: impl FnMut(&mcp_session::ServerNotification) -> Option<T>,
) -> T {
    tokio::time::timeout(DEADLINE, async {
        loop {
            match notes.next().await {
                Some(n) => {
                    if let Some(t) = pick(&n) {
                        return t;
                    }
                }
                None => panic!("the session ended while waiting for {what}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} did not arrive within {DEADLINE:?}"))
}

/// `interop/ts_v2_server.mjs` on the TypeScript SDK v2 server package (`.interop/tsv2`).
/// Node resolves the script's imports from its own folder, so the script is copied (atomically)
/// next to that `node_modules` first.
pub fn ts_v2_server() -> ServerSpec {
    let dir = interop_dir("tsv2").join("tsv2");
    let script = dir.join("ts_v2_server.mjs");
    static STAGED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = STAGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let staged = dir.join(format!("ts_v2_server.{}-{n}.tmp", std::process::id()));
    std::fs::copy(workspace_root().join("interop/ts_v2_server.mjs"), &staged)
        .and_then(|_| std::fs::rename(&staged, &script))
        .expect("stages interop/ts_v2_server.mjs in .interop/tsv2");
    ServerSpec::new("ts-v2-server", "node", "/mcp")
        .arg(script.display().to_string())
        .arg("{port}")
}
