//! `cargo xtask interop-setup`: install pinned third-party MCP servers into
//! the git-ignored `<workspace>/.interop/` folder for the interop tests.
//!
//! Layout after a successful run:
//!
//! ```text
//! .interop/
//!   node/                       npm prefix
//!     node_modules/.bin/mcp-server-everything
//!     .xtask-stamp              records the installed pin
//!   memory/                     npm prefix: node_modules/.bin/mcp-server-memory
//!   py/                         python venv (python3 -m venv)
//!     bin/python                has `mcp` installed
//!     .xtask-stamp
//!   tssdk/                      npm prefix: the TypeScript SDK, for its example servers
//!     node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/*.js
//!   tsv2/                       npm prefix: the TypeScript SDK v2 server package + zod
//!   fastmcp/                    python venv with `fastmcp` (kept apart from `py/` so
//!     bin/python                its `mcp` requirement never constrains the SDK pin)
//!   py-ws/                      python venv with the Python SDK 1.x (`mcp==1.30.0`; 2.0
//!     bin/python                removed its WebSocket server) + `websockets` and `uvicorn`
//!   inspector/                  npm prefix: the MCP Inspector + the Node 22 it needs
//!     node_modules/.bin/mcp-inspector, node_modules/.bin/node
//! ```
//!
//! Each component is skipped when its stamp matches the pin below and its
//! entry point exists; when the pin changes the component folder is wiped
//! and reinstalled from scratch.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::shell;

/// What a component installs.
#[derive(Clone, Copy)]
pub enum Kind {
    /// `npm install --prefix <dir> <package>@<version>`.
    Npm,
    /// `python3 -m venv <dir>` then `pip install <package>==<version>`.
    PythonVenv,
}

/// One pinned third-party package.
pub struct Pin {
    /// Sub-folder of `.interop/`.
    pub dir: &'static str,
    pub kind: Kind,
    pub package: &'static str,
    pub version: &'static str,
    /// Entry point relative to the component folder; must exist after install.
    pub entry: &'static str,
    /// Other packages installed beside it, pinned too: `name@version` for npm,
    /// `name==version` for a Python venv.
    pub with: &'static [&'static str],
}

/// THE place where interop versions are pinned. Bump a version here and the
/// next `cargo xtask interop-setup` (and so `cargo xtask ci`) reinstalls it.
///
/// * `@modelcontextprotocol/server-everything` — the reference "everything"
///   server (TypeScript SDK); run as `mcp-server-everything stdio`.
/// * `@modelcontextprotocol/server-memory` — the reference knowledge-graph server; its
///   `memory://knowledge-graph` resource is subscribable and its write tools
///   (`create_entities`, …) send `notifications/resources/updated`. Run with
///   `MEMORY_FILE_PATH` set to a temporary file.
/// * `mcp` — the official Python SDK; `interop/python_server.py` (stdio) and
///   `interop/python_http_server.py` (streamable-http / sse) run on it via
///   `.interop/py/bin/python`.
/// * `@modelcontextprotocol/sdk` — the TypeScript SDK; the HTTP interop tests
///   run its example servers (`dist/esm/examples/server/*.js`) with `node`.
/// * `@modelcontextprotocol/server` — the TypeScript SDK v2 server package (2026-07-28 and
///   stateless legacy); `interop/ts_v2_server.mjs` runs on it with `node`.
/// * `fastmcp` — FastMCP; `interop/fastmcp_server.py` runs on it via
///   `.interop/fastmcp/bin/python`. Its own venv: fastmcp requires its own
///   `mcp` range (4.2.3 happens to resolve to mcp 2.3.0 as well), and the
///   SDK pin above must stay exactly what it is.
/// * `mcp` 1.x — the Python SDK's WebSocket server transport (removed in 2.0);
///   `interop/py_ws_server.py` runs on it under uvicorn via `.interop/py-ws/bin/python`.
///   Its own venv, so the 2.x pin in `py/` stays as it is; `websockets` is the SDK's
///   `ws` extra, and uvicorn is pinned with it because its WebSocket implementations
///   follow the websockets API.
/// * `mcp-grpc-transport` — the published JSON-RPC-over-gRPC package (`mcp.transport.v1`,
///   on the TypeScript SDK); mcp-transport-grpc's wire-compatibility test runs its
///   `Session` server with `node`.
/// * `@modelcontextprotocol/inspector` — the MCP Inspector; mcp-cli's `tests/serve_inspector.rs`
///   runs its CLI mode (`mcp-inspector --cli … --method tools/list`) against `mcph serve`. It
///   needs Node >= 22.19, so the npm package `node` is pinned beside it and runs it
///   (`node_modules/.bin/node`); the machine's Node stays what it is.
pub const PINS: &[Pin] = &[
    Pin {
        dir: "node",
        kind: Kind::Npm,
        package: "@modelcontextprotocol/server-everything",
        version: "2026.8.31",
        entry: "node_modules/.bin/mcp-server-everything",
        with: &[],
    },
    Pin {
        dir: "memory",
        kind: Kind::Npm,
        package: "@modelcontextprotocol/server-memory",
        version: "2026.8.31",
        entry: "node_modules/.bin/mcp-server-memory",
        with: &[],
    },
    Pin {
        dir: "py",
        kind: Kind::PythonVenv,
        package: "mcp",
        version: "2.3.0",
        entry: "bin/python",
        with: &[],
    },
    Pin {
        dir: "tssdk",
        kind: Kind::Npm,
        package: "@modelcontextprotocol/sdk",
        version: "1.32.2",
        entry: "node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
        with: &[],
    },
    Pin {
        dir: "tsv2",
        kind: Kind::Npm,
        package: "@modelcontextprotocol/server",
        version: "2.4.0",
        entry: "node_modules/@modelcontextprotocol/server/package.json",
        with: &["zod@4.6.7"],
    },
    Pin {
        dir: "fastmcp",
        kind: Kind::PythonVenv,
        package: "fastmcp",
        version: "4.2.3",
        entry: "bin/python",
        with: &[],
    },
    Pin {
        dir: "py-ws",
        kind: Kind::PythonVenv,
        package: "mcp",
        version: "1.30.0",
        entry: "bin/python",
        with: &["websockets==17.4", "uvicorn==0.55.0"],
    },
    Pin {
        dir: "grpc",
        kind: Kind::Npm,
        package: "mcp-grpc-transport",
        version: "0.2.0",
        entry: "node_modules/mcp-grpc-transport/package.json",
        with: &["@modelcontextprotocol/sdk@1.32.2", "zod@3.25.76"],
    },
    Pin {
        dir: "inspector",
        kind: Kind::Npm,
        package: "@modelcontextprotocol/inspector",
        version: "2.12.0",
        entry: "node_modules/.bin/mcp-inspector",
        with: &["node@22.23.3"],
    },
];

const STAMP: &str = ".xtask-stamp";

/// The `.interop` folder of the workspace.
pub fn interop_dir(root: &Path) -> PathBuf {
    root.join(".interop")
}

pub fn setup(root: &Path) -> Result<(), String> {
    let base = interop_dir(root);
    fs::create_dir_all(&base).map_err(|e| format!("creating {}: {e}", base.display()))?;
    let mut errors = Vec::new();
    for pin in PINS {
        match ensure(&base, pin) {
            Ok(msg) => println!(
                "interop-setup: {:<7} {}@{}: {msg}",
                pin.dir, pin.package, pin.version
            ),
            Err(e) => {
                println!(
                    "interop-setup: {:<7} {}@{}: FAILED",
                    pin.dir, pin.package, pin.version
                );
                errors.push(format!("{}: {e}", pin.dir));
            }
        }
    }
    // The Secret Service the OAuth token-store tests run (gnome-keyring on a private bus).
    match crate::secret_service::ensure_packages() {
        Ok(msg) => println!(
            "interop-setup: {:<7} gnome-keyring + dbus-daemon: {msg}",
            "debian"
        ),
        Err(e) => {
            println!(
                "interop-setup: {:<7} gnome-keyring + dbus-daemon: FAILED",
                "debian"
            );
            errors.push(format!("debian packages: {e}"));
        }
    }
    // The real Redis the fleet tests start on ports of their own (mcp-fleet/tests).
    match crate::redis_server::ensure_package() {
        Ok(msg) => println!("interop-setup: {:<7} redis-server: {msg}", "debian"),
        Err(e) => {
            println!("interop-setup: {:<7} redis-server: FAILED", "debian");
            errors.push(format!("redis-server: {e}"));
        }
    }
    // The headless browser the operations panel's test renders the page in
    // (mcp-gateway/tests/admin_browser.rs).
    match crate::chromium::ensure_package() {
        Ok(msg) => println!("interop-setup: {:<7} chromium: {msg}", "debian"),
        Err(e) => {
            println!("interop-setup: {:<7} chromium: FAILED", "debian");
            errors.push(format!("chromium: {e}"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

fn stamp_text(pin: &Pin) -> String {
    let mut text = format!("{}@{}\n", pin.package, pin.version);
    for extra in pin.with {
        text.push_str(extra);
        text.push('\n');
    }
    text
}

/// Install `pin` unless it is up to date; returns the status word.
fn ensure(base: &Path, pin: &Pin) -> Result<&'static str, String> {
    let dir = base.join(pin.dir);
    let stamp = dir.join(STAMP);
    let entry = dir.join(pin.entry);
    let current = fs::read_to_string(&stamp).ok();
    if current.as_deref() == Some(stamp_text(pin).as_str()) && entry_works(pin, &entry) {
        return Ok("up to date");
    }
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("removing stale {}: {e}", dir.display()))?;
    }
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    match pin.kind {
        Kind::Npm => install_npm(&dir, pin)?,
        Kind::PythonVenv => install_venv(&dir, pin)?,
    }
    if !entry.exists() {
        return Err(format!(
            "install finished but {} is missing",
            entry.display()
        ));
    }
    write_atomic(&stamp, &stamp_text(pin))
        .map_err(|e| format!("writing {}: {e}", stamp.display()))?;
    Ok("installed")
}

fn entry_works(pin: &Pin, entry: &Path) -> bool {
    match pin.kind {
        Kind::Npm => entry.exists(),
        // The venv's python is a symlink to the base interpreter: make sure
        // it still starts (the base python may have moved).
        Kind::PythonVenv => shell::command(entry, &["-c", &import_check(pin)], Path::new("."))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false),
    }
}

/// `import <module>` for the package a venv pin installs (`fastmcp`, `mcp`, `a-b` → `a_b`).
fn import_check(pin: &Pin) -> String {
    format!("import {}", pin.package.replace('-', "_"))
}

fn tool_missing(tool: &str, e: &io::Error, hint: &str) -> String {
    if e.kind() == io::ErrorKind::NotFound {
        format!("`{tool}` not found on PATH; {hint}")
    } else {
        format!("could not start `{tool}`: {e}")
    }
}

fn install_npm(dir: &Path, pin: &Pin) -> Result<(), String> {
    let spec = format!("{}@{}", pin.package, pin.version);
    let prefix = dir.to_string_lossy().into_owned();
    let mut cmd = shell::command(
        "npm",
        &[
            "install",
            "--prefix",
            &prefix,
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--loglevel=error",
            &spec,
        ]
        .into_iter()
        .chain(pin.with.iter().copied())
        .collect::<Vec<_>>(),
        dir,
    );
    let status = shell::run(&mut cmd).map_err(|e| {
        tool_missing(
            "npm",
            &e,
            "install Node.js (>= 18) with npm to run the interop tests",
        )
    })?;
    if !status.success() {
        return Err(format!("`npm install {spec}` failed ({status})"));
    }
    Ok(())
}

fn install_venv(dir: &Path, pin: &Pin) -> Result<(), String> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let target = dir.to_string_lossy().into_owned();
    let mut cmd = shell::command(&python, &["-m", "venv", &target], dir);
    let status = shell::run(&mut cmd).map_err(|e| {
        tool_missing(
            &python,
            &e,
            "install Python 3.10+ with the venv module (Debian: python3-venv)",
        )
    })?;
    if !status.success() {
        return Err(format!(
            "`{python} -m venv` failed ({status}); on Debian install python3-venv"
        ));
    }
    let spec = format!("{}=={}", pin.package, pin.version);
    let venv_python = dir.join("bin/python");
    let mut cmd = shell::command(
        &venv_python,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            &spec,
        ]
        .into_iter()
        .chain(pin.with.iter().copied())
        .collect::<Vec<_>>(),
        dir,
    );
    let status = shell::run(&mut cmd)
        .map_err(|e| format!("could not start {}: {e}", venv_python.display()))?;
    if !status.success() {
        return Err(format!(
            "`pip install {spec} {}` failed ({status})",
            pin.with.join(" ")
        ));
    }
    Ok(())
}

fn write_atomic(path: &Path, text: &str) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, text)?;
    fs::rename(tmp, path)
}
