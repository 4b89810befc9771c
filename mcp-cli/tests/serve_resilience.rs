//! `mcph serve` seen from downstream while an upstream dies and comes back: one session of the
//! official Python SDK client (`interop/gateway_session.py`, driven line by line) stays open
//! with the gateway throughout. While an upstream is down its tools answer with an error result
//! (`tool NAME is unavailable: …`) and the other upstream's tools keep working; once it is back
//! its tools work again in the same session, and the tools it added reach the client as
//! `notifications/tools/list_changed`.
//!
//! Two upstreams die: a stdio server (SIGKILL, then kept down by `--refuse-start-while` while
//! mcph restarts it), with the client on stdio; and a Streamable HTTP server (stopped, then
//! started again on the same port), with the client on Streamable HTTP.
//!
//! The session surviving is checked, not assumed: every command goes through the one client
//! the script opened, and a request that fails as a whole (the SDK's "Session terminated" for
//! a gateway session lost, a closed stdio pipe) fails the test, as does a transport error.
//! While an upstream is down the gateway still lists its tools, under the same names.
//!
//! Every wait is on a condition with a deadline; nothing is timed. (The first call after a kill
//! takes a while: mcph reconnects on its schedule, 0 + 1 + 2 + 4 + 8 s, before it calls the
//! server unavailable; the upstream's `probe_interval_sec` is 1 s so that its return is seen
//! soon after.)
//!
//! Needs what `cargo xtask interop-setup` installs (the Python SDK's venv).

#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Env, RunningProcess, Stream, DEADLINE, MCPH};
use mcp_testkit::process::{interop_component, workspace_root, ChildProcess};
use mcp_testkit::wait::until_blocking;
use serde_json::{json, Value};

/// How long an upstream may take to be seen down, or back, by the gateway.
const RECOVERY_DEADLINE: Duration = Duration::from_secs(60);
/// How often mcph tries an unavailable upstream again (`probe_interval_sec`; 30 s by default):
/// short, so that the test does not wait half a minute for the return it provoked.
const PROBE_INTERVAL_SEC: u64 = 1;

// ---------------------------------------------------------------------------------------------
// The downstream session.
// ---------------------------------------------------------------------------------------------

/// `interop/gateway_session.py`: one session of the Python SDK client with the gateway,
/// commanded a line at a time; its process group killed on drop.
struct DownstreamSession {
    process: ChildProcess,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Everything it printed on stdout, for failure messages.
    transcript: String,
    /// Everything it (and an `mcph serve` it started) printed on stderr.
    stderr: Arc<Mutex<String>>,
    /// The notifications received so far (their methods), in order.
    notifications: Vec<String>,
    /// The protocol version of the session.
    protocol_version: String,
}

impl DownstreamSession {
    /// Starts the client on `plan` and waits until it is connected.
    fn start(plan: &Path) -> DownstreamSession {
        let python = interop_component("py").join("bin/python");
        let script = workspace_root().join("interop/gateway_session.py");
        let mut process = ChildProcess::spawn(
            "the Python SDK session",
            Command::new(python)
                .arg(script)
                .arg(plan)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let stdin = process.take_stdin();
        let stdout = process.take_stdout().expect("stdout is piped");
        let stderr_pipe = process.take_stderr().expect("stderr is piped");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_text = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines() {
                let Ok(line) = line else { break };
                let mut text = stderr_text.lock().unwrap_or_else(|p| p.into_inner());
                text.push_str(&line);
                text.push('\n');
            }
        });
        let mut session = DownstreamSession {
            process,
            stdin,
            lines,
            transcript: String::new(),
            stderr,
            notifications: Vec::new(),
            protocol_version: String::new(),
        };
        let ready = session.next_message(DEADLINE, |m| m.get("ready").cloned());
        session.protocol_version = ready.as_str().unwrap_or_default().to_owned();
        session
    }

    /// Reads lines until `pick` takes one, for at most `within`; notifications are recorded
    /// on the way, a transport error fails the test.
    #[track_caller]
    fn next_message<T>(
        &mut self,
        within: Duration,
        mut pick: impl FnMut(&Value) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(e) => panic!(
                    "the Python SDK session printed nothing the test waits for ({e:?}); \
                     stdout:\n{}\nstderr:\n{}",
                    self.transcript,
                    self.stderr_text()
                ),
            };
            self.transcript.push_str(&line);
            self.transcript.push('\n');
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            if let Some(method) = message["notification"].as_str() {
                self.notifications.push(method.to_owned());
            }
            assert!(
                message.get("transportError").is_none(),
                "the session's transport failed: {line}\nstderr:\n{}",
                self.stderr_text()
            );
            if let Some(picked) = pick(&message) {
                return picked;
            }
        }
    }

    fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sends one command and waits for its answer.
    #[track_caller]
    fn request(&mut self, command: Value) -> Value {
        let stdin = self.stdin.as_mut().expect("the session's input is open");
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("writing to the Python SDK session: {e}"));
        self.next_message(DEADLINE, |m| m.get("reply").is_some().then(|| m.clone()))
    }

    /// `tools/call NAME {"text": TEXT}`: (isError, text). A failed request fails the test: the
    /// gateway must answer every call with a result.
    #[track_caller]
    fn echo(&mut self, name: &str, text: &str) -> (bool, String) {
        let answer = self.request(json!({
            "op": "call", "name": name, "arguments": { "text": text }
        }));
        assert!(
            answer.get("error").is_none(),
            "{name}: the request failed instead of answering with a result: {answer}"
        );
        (
            answer["isError"] == true,
            answer["text"].as_str().unwrap_or_default().to_owned(),
        )
    }

    /// Every tool name the gateway lists now.
    #[track_caller]
    fn tools(&mut self) -> Vec<String> {
        let answer = self.request(json!({ "op": "list" }));
        answer["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("a tool list: {answer}"))
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect()
    }

    /// Waits until a `method` notification beyond the first `seen` has come.
    #[track_caller]
    fn wait_for_notification(&mut self, method: &str, seen: usize, within: Duration) {
        let count = |n: &[String]| n.iter().filter(|m| *m == method).count();
        if count(&self.notifications) > seen {
            return;
        }
        self.next_message(within, |m| (m["notification"] == method).then_some(()));
    }

    /// How many `method` notifications came so far.
    fn notification_count(&self, method: &str) -> usize {
        self.notifications.iter().filter(|m| *m == method).count()
    }

    /// Closes the session (end of input) and waits for the client to exit: its exit code.
    #[track_caller]
    fn close(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let status = self.process.wait_within(DEADLINE).unwrap_or_else(|| {
            panic!(
                "the Python SDK session did not end after its input closed; stderr:\n{}",
                self.stderr_text()
            )
        });
        status.code()
    }
}

/// Calls `name` until it answers `expected` (not an error), for at most [`RECOVERY_DEADLINE`].
#[track_caller]
fn until_answers(session: &mut DownstreamSession, name: &str, text: &str, expected: &str) {
    until_blocking(
        &format!("{name} to answer {expected:?} again"),
        RECOVERY_DEADLINE,
        || match session.echo(name, text) {
            (false, answer) if answer == expected => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
}

/// Calls `name` until it answers with an error result, for at most [`RECOVERY_DEADLINE`]: that
/// error's text.
#[track_caller]
fn until_fails(session: &mut DownstreamSession, name: &str) -> String {
    let mut failure = String::new();
    until_blocking(
        &format!("{name} to fail with an error result"),
        RECOVERY_DEADLINE,
        || match session.echo(name, "while down") {
            (true, text) => {
                failure = text;
                Ok(())
            }
            other => Err(format!("{other:?}")),
        },
    );
    failure
}

#[track_caller]
fn assert_unavailable(failure: &str, tool: &str) {
    assert!(
        failure.starts_with(&format!("tool {tool} is unavailable: ")),
        "{failure}"
    );
    assert!(failure.contains("not responding"), "{failure}");
}

// ---------------------------------------------------------------------------------------------
// Upstreams.
// ---------------------------------------------------------------------------------------------

/// A stdio fixture started through a shell script, so that the test can kill it (the script
/// writes its pid, then `exec`s the fixture), keep it down (`--refuse-start-while`) and change
/// the tools it lists from one start to the next (the flags file).
struct StdioUpstream {
    script: PathBuf,
    pid_file: PathBuf,
    refuse: PathBuf,
    flags: PathBuf,
}

impl StdioUpstream {
    fn new(env: &Env) -> StdioUpstream {
        let dir = env.cwd.path();
        let upstream = StdioUpstream {
            script: dir.join("upstream.sh"),
            pid_file: dir.join("upstream.pid"),
            refuse: dir.join("upstream.refuse"),
            flags: dir.join("upstream.flags"),
        };
        std::fs::write(&upstream.flags, "").expect("the flags file");
        let quote = |p: &Path| format!("'{}'", p.display());
        let script = format!(
            "#!/bin/sh\necho $$ > {pid}\nexec {fixture} --refuse-start-while {refuse} $(cat {flags})\n",
            pid = quote(&upstream.pid_file),
            fixture = quote(&mcp_testkit::fixture_server_bin()),
            refuse = quote(&upstream.refuse),
            flags = quote(&upstream.flags),
        );
        std::fs::write(&upstream.script, script).expect("the start script");
        upstream
    }

    fn config(&self) -> Value {
        json!({
            "command": "/bin/sh",
            "args": [self.script],
            "probe_interval_sec": PROBE_INTERVAL_SEC
        })
    }

    /// SIGKILL to the running fixture (a grandchild: mcph started it).
    fn kill(&self) {
        let pid: libc::pid_t = std::fs::read_to_string(&self.pid_file)
            .expect("the upstream wrote its pid")
            .trim()
            .parse()
            .expect("a pid");
        // SAFETY: kill(2) only sends a signal; the pid is the fixture's, which is running (the
        // gateway just answered through it).
        let sent = unsafe { libc::kill(pid, libc::SIGKILL) };
        assert_eq!(sent, 0, "SIGKILL to the upstream fixture ({pid})");
    }
}

/// The fixture over Streamable HTTP on a port of its own, which it keeps across restarts.
struct HttpUpstream {
    process: Option<ChildProcess>,
    /// `IP:PORT`.
    address: String,
}

impl HttpUpstream {
    /// Starts it on a free port.
    fn start(flags: &[&str]) -> HttpUpstream {
        let (process, address) = Self::spawn("127.0.0.1:0", flags)
            .unwrap_or_else(|e| panic!("the HTTP fixture announces its address: {e}"));
        HttpUpstream {
            process: Some(process),
            address,
        }
    }

    fn spawn(address: &str, flags: &[&str]) -> Result<(ChildProcess, String), String> {
        ChildProcess::spawn_until_line(
            "the HTTP upstream",
            Command::new(mcp_testkit::fixture_server_bin())
                .args(["--http", address])
                .args(flags),
            None,
            DEADLINE,
            |line| line.strip_prefix("listening on http://").map(str::to_owned),
        )
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Kills it (its process group) and waits until it is gone.
    fn stop(&mut self) {
        let mut process = self.process.take().expect("it runs");
        process
            .kill()
            .unwrap_or_else(|e| panic!("stopping the HTTP upstream: {e}"));
    }

    /// Starts it again on its port with `flags` (retrying while the port is not yet free).
    fn restart(&mut self, flags: &[&str]) {
        let mut last = String::new();
        until_blocking(
            "the HTTP upstream to listen on its port again",
            RECOVERY_DEADLINE,
            || match Self::spawn(&self.address, flags) {
                Ok((process, _)) => {
                    self.process = Some(process);
                    Ok(())
                }
                Err(e) => {
                    last = e;
                    Err(last.clone())
                }
            },
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------------------------

/// `mcph serve --http 127.0.0.1:0` on `config` (a JSON configuration) in `env`: the process
/// and the URL it announced.
fn serve_http(env: &Env, config: &Value) -> (RunningProcess, String) {
    let config = env.cwd.write("gateway.json", &config.to_string());
    let mut gateway = env.spawn(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--config",
        &config.to_string_lossy(),
    ]);
    let url = gateway.wait_for_line(Stream::Stdout, DEADLINE, |line| {
        line.trim().strip_prefix("listening on ").map(str::to_owned)
    });
    (gateway, url)
}

/// A downstream client of `mcph serve --http` connected with the SDK's `mode` gets
/// `protocol_version` and hears of an upstream's tool list change (the fixture's
/// `trigger_list_changed`): on a 2025-11-25 session through its standalone GET stream, on
/// 2026-07-28 through the `subscriptions/listen` stream it opened. The precondition of the
/// restart tests below, on its own.
fn list_changes_reach_a_listening_http_client(mode: &str, protocol_version: &str) {
    let env = Env::new();
    let config = json!({ "mcpServers": {
        "files": { "command": mcp_testkit::fixture_server_bin(), "args": [] }
    }});
    let (gateway, url) = serve_http(&env, &config);
    let plan = env.cwd.write(
        "plan.json",
        &json!({ "url": url, "mode": mode }).to_string(),
    );
    let mut session = DownstreamSession::start(&plan);
    assert_eq!(session.protocol_version, protocol_version);
    let before = session.tools();
    let changes = session.notification_count("notifications/tools/list_changed");
    let answer = session.request(json!({ "op": "call", "name": "trigger_list_changed" }));
    assert_eq!(answer["isError"], false, "{answer}");
    session.wait_for_notification("notifications/tools/list_changed", changes, DEADLINE);
    assert_ne!(session.tools(), before, "the changed list is served");
    assert_eq!(session.close(), Some(0));
    drop(gateway);
}

#[test]
fn tool_list_changes_reach_a_downstream_session_over_http_on_2025_11_25() {
    list_changes_reach_a_listening_http_client("legacy", "2025-11-25");
}

/// Reproduces a gateway bug: `mcph serve --http` never acknowledges a stateless
/// `subscriptions/listen` (no response headers at all), so no 2026-07-28 client over HTTP
/// hears of a list change. (Over stdio the same request is acknowledged at once.)
#[test]
fn tool_list_changes_reach_a_downstream_listening_over_http_on_2026_07_28() {
    list_changes_reach_a_listening_http_client("2026-07-28", "2026-07-28");
}

/// The plan of a client that starts `mcph serve --config CONFIG` itself, in `env`.
fn stdio_plan(env: &Env, config: &Path) -> Value {
    json!({
        "command": MCPH,
        "args": ["serve", "--config", config],
        "env": {
            "HOME": env.home.path(),
            "XDG_CONFIG_HOME": env.home.path(),
        },
    })
}

#[test]
fn a_killed_stdio_upstream_fails_only_its_own_tools_and_comes_back_in_the_same_downstream_session()
{
    killed_stdio_upstream("legacy", "2025-11-25");
}

/// The same on 2026-07-28, the change coming through the client's `subscriptions/listen`.
#[test]
fn a_killed_stdio_upstream_comes_back_for_a_downstream_listening_on_2026_07_28() {
    killed_stdio_upstream("2026-07-28", "2026-07-28");
}

/// The client starts `mcph serve` over stdio and connects with the SDK's `mode`, getting
/// `protocol_version`; then the upstream `files` is killed, kept down, and let start again with
/// one more tool.
fn killed_stdio_upstream(mode: &str, protocol_version: &str) {
    let env = Env::new();
    let files = StdioUpstream::new(&env);
    let web = HttpUpstream::start(&[]);
    let config = json!({ "mcpServers": {
        "files": files.config(),
        "web": { "type": "http", "url": web.url() }
    }});
    let config = env.cwd.write("gateway.json", &config.to_string());
    let mut plan = stdio_plan(&env, &config);
    plan["mode"] = mode.into();
    let plan = env.cwd.write("plan.json", &plan.to_string());
    let mut session = DownstreamSession::start(&plan);
    assert_eq!(session.protocol_version, protocol_version);

    let tools = session.tools();
    for name in ["files__echo", "web__echo"] {
        assert!(tools.iter().any(|t| t == name), "{name} in {tools:?}");
    }
    assert_eq!(
        session.echo("files__echo", "before"),
        (false, "before".into())
    );

    // Down, and kept down while mcph tries to start it again.
    std::fs::write(&files.refuse, "").expect("the refuse file");
    files.kill();
    let failure = until_fails(&mut session, "files__echo");
    assert_unavailable(&failure, "files__echo");
    assert_eq!(
        session.echo("web__echo", "still here"),
        (false, "still here".into()),
        "the other upstream's tools keep working"
    );
    assert_eq!(
        session.tools(),
        tools,
        "while it is down the list, and so every name, stays as it was"
    );
    // Still failing as a result, never as a broken request.
    let (is_error, text) = session.echo("files__echo", "again");
    assert!(is_error, "{text}");

    // Back, with one more tool.
    let changes_before = session.notification_count("notifications/tools/list_changed");
    std::fs::write(&files.flags, "--extra-tool late").expect("the flags file");
    std::fs::remove_file(&files.refuse).expect("the refuse file goes");
    until_answers(&mut session, "files__echo", "after", "after");
    session.wait_for_notification(
        "notifications/tools/list_changed",
        changes_before,
        RECOVERY_DEADLINE,
    );
    let tools = session.tools();
    assert!(
        tools.iter().any(|t| t == "files__late"),
        "the restarted upstream's new tool is served: {tools:?}"
    );
    assert_eq!(
        session.echo("files__late", "new"),
        (false, "late: new".into())
    );
    assert_eq!(
        session.echo("web__echo", "throughout"),
        (false, "throughout".into())
    );
    assert_eq!(session.close(), Some(0));
}

#[test]
fn a_restarted_http_upstream_comes_back_in_the_same_downstream_http_session() {
    restarted_http_upstream("legacy", "2025-11-25");
}

/// The 2026-07-28 revision: no session at the transport (each request stands alone), and the
/// tool list change reaches only a client that listens (`subscriptions/listen`), which it keeps
/// open with the gateway while the upstream is down.
#[test]
fn a_restarted_http_upstream_comes_back_for_a_downstream_listening_on_2026_07_28() {
    restarted_http_upstream("2026-07-28", "2026-07-28");
}

/// The client connects to `mcph serve --http` with the SDK's `mode` and must get
/// `protocol_version`; then the upstream `web` stops and starts again with one more tool.
fn restarted_http_upstream(mode: &str, protocol_version: &str) {
    let env = Env::new();
    let mut web = HttpUpstream::start(&[]);
    let config = json!({ "mcpServers": {
        "files": { "command": mcp_testkit::fixture_server_bin(), "args": [] },
        "web": {
            "type": "http",
            "url": web.url(),
            "probe_interval_sec": PROBE_INTERVAL_SEC
        }
    }});
    let (gateway, url) = serve_http(&env, &config);
    let plan = env.cwd.write(
        "plan.json",
        &json!({ "url": url, "mode": mode }).to_string(),
    );
    let mut session = DownstreamSession::start(&plan);
    assert_eq!(session.protocol_version, protocol_version);

    let tools = session.tools();
    for name in ["files__echo", "web__echo"] {
        assert!(tools.iter().any(|t| t == name), "{name} in {tools:?}");
    }
    assert_eq!(
        session.echo("web__echo", "before"),
        (false, "before".into())
    );

    web.stop();
    let failure = until_fails(&mut session, "web__echo");
    assert_unavailable(&failure, "web__echo");
    assert_eq!(
        session.echo("files__echo", "still here"),
        (false, "still here".into()),
        "the other upstream's tools keep working"
    );
    assert_eq!(
        session.tools(),
        tools,
        "while it is down the list, and so every name, stays as it was"
    );

    let changes_before = session.notification_count("notifications/tools/list_changed");
    web.restart(&["--extra-tool", "late"]);
    until_answers(&mut session, "web__echo", "after", "after");
    session.wait_for_notification(
        "notifications/tools/list_changed",
        changes_before,
        RECOVERY_DEADLINE,
    );
    let tools = session.tools();
    assert!(
        tools.iter().any(|t| t == "web__late"),
        "the restarted upstream's new tool is served: {tools:?}"
    );
    assert_eq!(
        session.echo("web__late", "new"),
        (false, "late: new".into())
    );
    assert_eq!(session.close(), Some(0));
    drop(gateway);
}
