//! End-to-end tests of the `mcph` binary: real configuration files, real fixture servers (this
//! very binary run as `mcph __fixture-server`), exit codes, stdout and stderr.

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A stdio server entry running this binary as the fixture, with extra fixture flags.
fn fixture(flags: &[&str]) -> Value {
    let mut args = vec!["__fixture-server".to_owned()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    json!({"command": MCPH, "args": args})
}

/// `.mcp.json` (Claude style) with fixture1, fixture2 and broken, in the env's cwd.
fn three_servers(env: &Env) {
    // Written by hand: the file order is the servers' order (serde_json would sort the keys).
    let config = format!(
        r#"{{"mcpServers": {{"fixture1": {}, "fixture2": {}, "broken": {{"command": "/nonexistent/server"}}}}}}"#,
        fixture(&[]),
        fixture(&[])
    );
    env.cwd.write(".mcp.json", &config);
}

#[test]
fn embedded_default_lists_the_fixture_tools() {
    let env = Env::new();
    let run = env.run(&["tools"]);
    run.assert_code(0);
    assert!(run.stdout.contains("fixture__echo"), "{}", run.stdout);
    assert!(run.stdout.contains("fixture__add"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("no config found; using the built-in fixture server"),
        "{}",
        run.stderr
    );
    // --json: no note, JSON on stdout.
    let run = env.run(&["tools", "--json"]);
    run.assert_code(0);
    assert!(!run.stderr.contains("no config found"), "{}", run.stderr);
    let tools = run.json();
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fixture__echo")
        .expect("fixture__echo listed");
    assert_eq!(echo["server"], "fixture");
    assert_eq!(echo["tool"]["name"], "echo");
    assert!(echo["tool"]["inputSchema"].is_object());
}

#[test]
fn claude_config_with_a_broken_server_is_partially_available() {
    let env = Env::new();
    three_servers(&env);

    let run = env.run(&["servers"]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{}", run.stdout);
    let row = |name: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{}", run.stdout))
    };
    assert!(row("fixture1").contains("ready"), "{}", run.stdout);
    assert!(row("fixture2").contains("ready"), "{}", run.stdout);
    assert!(
        row("fixture1").contains("mcp-fixture-server"),
        "{}",
        run.stdout
    );
    assert!(row("broken").contains("unavailable"), "{}", run.stdout);
    assert!(
        lines[0].contains("BREAKER") && lines[0].contains("RECONNECTS"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("reason: ") && run.stdout.contains("/nonexistent/server"),
        "{}",
        run.stdout
    );

    let run = env.run(&["servers", "--json"]);
    run.assert_code(0);
    let servers = run.json();
    let servers = servers.as_array().unwrap();
    assert_eq!(servers.len(), 3);
    assert_eq!(servers[0]["name"], "fixture1");
    assert_eq!(servers[0]["status"], "ready");
    assert_eq!(servers[0]["transport"], "stdio");
    assert!(servers[0]["tools"].as_u64().unwrap() > 0);
    assert_eq!(servers[0]["server"]["name"], "mcp-fixture-server");
    assert!(servers[0]["protocolVersion"].is_string());
    assert!(servers[0].get("reason").is_none());
    assert_eq!(servers[2]["name"], "broken");
    assert_eq!(servers[0]["breaker"]["state"], "closed");
    assert_eq!(servers[2]["status"], "unavailable");
    assert_eq!(servers[2]["reconnects"], 0);
    assert!(servers[2]["lastError"]
        .as_str()
        .unwrap()
        .contains("/nonexistent/server"));
    assert!(servers[2]["reason"]
        .as_str()
        .unwrap()
        .contains("/nonexistent/server"));
    assert!(servers[2].get("server").is_none());

    let run = env.run(&["tools"]);
    run.assert_code(0);
    assert!(run.stdout.contains("fixture1__echo"), "{}", run.stdout);
    assert!(run.stdout.contains("fixture2__echo"), "{}", run.stdout);
    assert!(!run.stdout.contains("broken__"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("warning: server \"broken\" is unavailable"),
        "{}",
        run.stderr
    );

    let run = env.run(&["tools", "fixture2", "--json"]);
    run.assert_code(0);
    let tools = run.json();
    assert!(tools
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["server"] == "fixture2"));

    let run = env.run(&["call", "fixture1__echo", r#"{"text":"hi"}"#]);
    run.assert_code(0);
    assert_eq!(run.stdout, "hi\n");

    let run = env.run(&["call", "fixture1__echo", r#"{"text":"hi"}"#, "--json"]);
    run.assert_code(0);
    let result = run.json();
    assert_eq!(result["content"][0]["type"], "text");
    assert_eq!(result["content"][0]["text"], "hi");
}

#[test]
fn codex_toml_config_works() {
    let env = Env::new();
    let dir = TempDir::new("codex");
    let config = format!(
        "[mcp_servers.codexfx]\ncommand = {}\nargs = [\"__fixture-server\"]\n",
        Value::String(MCPH.to_owned())
    );
    let path = dir.write("config.toml", &config);
    let run = env.run(&["--config", path.to_str().unwrap(), "tools"]);
    run.assert_code(0);
    assert!(run.stdout.contains("codexfx__echo"), "{}", run.stdout);
    assert!(!run.stderr.contains("no config found"), "{}", run.stderr);
}

#[test]
fn vscode_config_works() {
    let env = Env::new();
    let dir = TempDir::new("vscode");
    let mut server = fixture(&[]);
    server["type"] = json!("stdio");
    let config = json!({"servers": {"vsfx": server}});
    let path = dir.write("mcp.json", &config.to_string());
    let run = env.run(&["--config", path.to_str().unwrap(), "tools"]);
    run.assert_code(0);
    assert!(run.stdout.contains("vsfx__echo"), "{}", run.stdout);
}

#[test]
fn servers_that_crash_or_hang_at_start_fail_and_the_rest_work() {
    let env = Env::new();
    let config = json!({"mcpServers": {
        "good": fixture(&[]),
        "crashy": fixture(&["--exit-on-start", "3"]),
        "hangy": {
            "command": MCPH,
            "args": ["__fixture-server", "--hang-on-initialize"],
            "startup_timeout_sec": 1
        },
    }});
    env.cwd.write(".mcp.json", &config.to_string());

    // Bounded by the 1 s startup timeout (the test's own deadline catches a hang).
    let run = env.run(&["servers", "--json"]);
    run.assert_code(0);
    let servers = run.json();
    let by_name = |name: &str| {
        servers
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_name("good")["status"], "ready");
    let crashy = by_name("crashy");
    assert_eq!(crashy["status"], "unavailable");
    assert!(
        crashy["reason"]
            .as_str()
            .unwrap()
            .contains("exited with status 3"),
        "{crashy}"
    );
    let hangy = by_name("hangy");
    assert_eq!(hangy["status"], "unavailable");
    let reason = hangy["reason"].as_str().unwrap();
    assert!(
        reason.contains("within") || reason.contains("timed out") || reason.contains("timeout"),
        "{reason}"
    );

    let run = env.run(&["servers"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("exited with status 3"),
        "{}",
        run.stdout
    );

    // A tool of the unavailable server: unavailable (4), naming the server and why, and the
    // sentence an agent would be shown.
    let run = env.run(&["call", "crashy__echo", r#"{"text":"x"}"#]);
    run.assert_code(4);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains(
            "error: server \"crashy\" is unavailable: MCP server `crashy` exited with status 3"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("\nagent: tool crashy__echo is unavailable: server not responding\n"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("\nhint: "), "{}", run.stderr);

    let run = env.run(&["call", "good__echo", r#"{"text":"still fine"}"#]);
    run.assert_code(0);
    assert_eq!(run.stdout, "still fine\n");

    let run = env.run(&["tools", "hangy"]);
    run.assert_code(4);
}

#[test]
fn configuration_errors_exit_3_and_name_the_file() {
    let env = Env::new();
    let path = env.cwd.write(
        ".mcp.json",
        "{\"mcpServers\": {\n  \"a\": {\"command\": }\n}",
    );
    let run = env.run(&["servers"]);
    run.assert_code(3);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.starts_with("error: configuration: ")
            && run.stderr.contains(path.to_str().unwrap()),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("line 2"), "{}", run.stderr);
    assert!(run.stderr.contains("\nhint: "), "{}", run.stderr);

    let missing = env.cwd.path().join("does-not-exist.json");
    let run = env.run(&["--config", missing.to_str().unwrap(), "tools", "--json"]);
    run.assert_code(3);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("does-not-exist.json"), "{}", run.stderr);
}

/// `--config /dev/zero` (or any file over 4 MiB) is refused after the cap: exit 3, naming the
/// file and the limit, instead of reading until memory runs out.
#[test]
fn an_endless_configuration_is_refused_at_the_size_cap() {
    let env = Env::new();
    let run = env.run(&["--config", "/dev/zero", "servers"]);
    run.assert_code(3);
    assert!(
        run.stderr
            .starts_with("error: configuration: /dev/zero: the file is larger than 4 MiB"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("\nhint: a configuration file is at most 4 MiB"),
        "{}",
        run.stderr
    );
}

#[test]
fn call_errors_have_documented_exit_codes() {
    let env = Env::new();
    three_servers(&env);

    // Unknown tool: 5.
    let run = env.run(&["call", "fixture1__nope"]);
    run.assert_code(5);
    assert!(
        run.stderr.contains("no tool named \"fixture1__nope\""),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: run `mcph tools`"),
        "{}",
        run.stderr
    );

    // Unknown server: 5.
    let run = env.run(&["tools", "nosuchserver"]);
    run.assert_code(5);

    // Invalid JSON: usage error, 2, nothing started.
    let run = env.run(&["call", "fixture1__echo", "{not json"]);
    run.assert_code(2);
    assert!(run.stderr.contains("not valid JSON"), "{}", run.stderr);
    let run = env.run(&["call", "fixture1__echo", "--arg", "novalue"]);
    run.assert_code(2);
    assert!(run.stderr.contains("KEY=VALUE"), "{}", run.stderr);

    // isError: 1, the tool's text on stderr.
    let run = env.run(&["call", "fixture1__fail"]);
    run.assert_code(1);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("error: fixture1__fail reported an error: failure 1 of 2"),
        "{}",
        run.stderr
    );

    // An unavailable server's tool by prefix: 4.
    let run = env.run(&["call", "broken__anything"]);
    run.assert_code(4);
    assert!(
        run.stderr.contains("server \"broken\" is unavailable"),
        "{}",
        run.stderr
    );

    // --arg values parse as JSON numbers.
    let run = env.run(&["call", "fixture1__add", "--arg", "a=2", "--arg", "b=40"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "42");
    // JSON object plus an overriding --arg.
    let run = env.run(&["call", "fixture1__add", r#"{"a":1,"b":1}"#, "--arg", "b=41"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "42");
}

#[test]
fn resources_and_prompts() {
    let env = Env::new();
    let run = env.run(&["resources", "--json"]);
    run.assert_code(0);
    let resources = run.json();
    let uri = resources[0]["resource"]["uri"].as_str().unwrap().to_owned();
    assert_eq!(resources[0]["server"], "fixture");

    let run = env.run(&["read", &uri]);
    run.assert_code(0);
    assert!(!run.stdout.is_empty());
    let run = env.run(&["read", &uri, "--server", "fixture", "--json"]);
    run.assert_code(0);
    assert_eq!(run.json()["contents"][0]["uri"], uri.as_str());
    let run = env.run(&["read", "nope://nothing"]);
    run.assert_code(5);

    let run = env.run(&["prompts", "--json"]);
    run.assert_code(0);
    let prompts = run.json();
    let greeting = prompts
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "fixture__greeting")
        .expect("greeting prompt");
    assert_eq!(greeting["server"], "fixture");

    let run = env.run(&["prompt", "fixture__greeting", "--arg", "name=Ada"]);
    run.assert_code(0);
    assert!(run.stdout.contains("Ada"), "{}", run.stdout);
    let run = env.run(&["prompt", "fixture__nope"]);
    run.assert_code(5);
    assert!(run.stderr.contains("mcph prompts"), "{}", run.stderr);
}

#[test]
fn help_lists_the_exit_codes() {
    let env = Env::new();
    let run = env.run(&["--help"]);
    run.assert_code(0);
    assert!(run.stdout.contains("Exit codes:"), "{}", run.stdout);
    assert!(run.stdout.contains("130"), "{}", run.stdout);
    let run = env.run(&["frobnicate"]);
    run.assert_code(2);
}

/// `(pid, ppid, pgrp, state)` of every process, from /proc.
#[cfg(target_os = "linux")]
fn processes() -> Vec<(i32, i32, i32, char)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < 3 {
            continue;
        }
        let state = fields[0].chars().next().unwrap_or('?');
        let (Ok(ppid), Ok(pgrp)) = (fields[1].parse(), fields[2].parse()) else {
            continue;
        };
        out.push((pid, ppid, pgrp, state));
    }
    out
}

#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_cancels_the_call_and_leaves_no_server_behind() {
    let env = Env::new();
    let call = env.spawn(&[
        "call",
        "fixture__slow",
        r#"{"duration_ms":60000,"steps":2}"#,
    ]);
    let mcph = call.pid() as i32;

    // Wait for the fixture server (a child of mcph) to exist, then a little for the call.
    let end = Instant::now() + Duration::from_secs(30);
    let server = loop {
        if let Some(&(pid, ..)) = processes()
            .iter()
            .find(|&&(_, ppid, _, state)| ppid == mcph && state != 'Z')
        {
            break pid;
        }
        assert!(Instant::now() < end, "the fixture server never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(500));

    let run = call.interrupt_leader(Duration::from_secs(30));
    run.assert_code(130);
    assert!(run.stderr.contains("error: interrupted"), "{}", run.stderr);

    // The server ran in its own process group (pgid = its pid): nothing of it may be left.
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<_> = processes()
            .into_iter()
            .filter(|&(pid, _, pgrp, state)| (pgrp == server || pid == server) && state != 'Z')
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < end,
            "fixture processes left after Ctrl-C: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A server that needs an OAuth login: the `error:`, `agent:` and `hint:` lines of `mcph call`
/// all name `mcph auth login NAME` (none says to fix the configuration or reconnect).
#[test]
fn a_call_to_a_server_that_needs_a_login_points_every_line_at_the_login() {
    let env = Env::new();
    let http = HttpFixtureProcess::start(&["--oauth"]);
    let base = http.url.trim_end_matches('/');
    let config = json!({"mcpServers": {"fx": {"type": "http", "url": format!("{base}/mcp")}}});
    env.cwd.write(".mcp.json", &config.to_string());
    let run = env.run(&["call", "fx__echo", r#"{"text":"x"}"#]);
    run.assert_code(4);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let line = |prefix: &str| {
        run.stderr
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line:\n{}", run.stderr))
            .to_owned()
    };
    let error = line("error: ");
    assert!(
        error.starts_with("error: server \"fx\" needs auth: ")
            && error.contains("mcph auth login fx"),
        "{error}"
    );
    assert_eq!(
        line("agent: "),
        "agent: tool fx__echo authentication failed: the user must log in with \
         `mcph auth login fx`"
    );
    let hint = line("hint: ");
    assert!(
        hint.starts_with("hint: run `mcph auth login fx` to log in"),
        "{hint}"
    );
    assert!(
        !run.stderr.contains("reconnect") && !run.stderr.contains("entry of"),
        "{}",
        run.stderr
    );
}

#[test]
fn remote_servers_of_every_http_type_are_reached() {
    let env = Env::new();
    let http = HttpFixtureProcess::start(&[]);
    let base = http.url.trim_end_matches('/');
    let config = json!({"mcpServers": {
        "streamable": {"type": "http", "url": format!("{base}/mcp")},
        "legacy": {"type": "sse", "url": format!("{base}/sse")},
        "detected": {"url": format!("{base}/sse")}
    }});
    env.cwd.write(".mcp.json", &config.to_string());
    let run = env.run(&["servers", "--json"]);
    run.assert_code(0);
    for server in run.json().as_array().unwrap() {
        assert_eq!(server["status"], "ready", "{server}");
    }
    for name in ["streamable__echo", "legacy__echo", "detected__echo"] {
        let run = env.run(&["call", name, "--arg", &format!("text={name}")]);
        run.assert_code(0);
        assert_eq!(run.stdout.trim(), name);
    }
}

/// `mcph call --task` against the built-in fixture (2026-07-28, Tasks extension): the task's
/// id and status changes on stderr, its result on stdout; a failed task exits non-zero.
#[test]
fn call_with_task_shows_the_task_and_prints_its_result() {
    let env = Env::new();
    let run = env.run(&["call", "fixture__job", "--arg", "duration_ms=100", "--task"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "job done after 100 ms");
    assert!(
        run.stderr.contains("task task-1 on fixture: working"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("task task-1 on fixture: completed"),
        "{}",
        run.stderr
    );
    let run = env.run(&["call", "fixture__job", "--arg", "fail=true", "--task"]);
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("the job failed, as asked"),
        "{}",
        run.stderr
    );
    // Without --task the task is followed all the same; --timeout bounds it.
    let run = env.run(&[
        "call",
        "fixture__job",
        "--arg",
        "duration_ms=60000",
        "--timeout",
        "0.3",
    ]);
    run.assert_code(6);
    assert!(run.stderr.contains("asked to cancel"), "{}", run.stderr);
}

/// A task outlives the process that started it: `call --task --no-wait` against a remote
/// server prints its id, and later invocations get, wait for and cancel it by id.
#[test]
fn tasks_are_held_by_id_across_invocations() {
    let env = Env::new();
    let http = HttpFixtureProcess::start(&["--era", "dual"]);
    let base = http.url.trim_end_matches('/');
    let config = json!({"mcpServers": {"remote": {"type": "http", "url": format!("{base}/mcp")}}});
    env.cwd.write(".mcp.json", &config.to_string());
    let run = env.run(&[
        "call",
        "remote__job",
        "--arg",
        "duration_ms=300",
        "--task",
        "--no-wait",
        "--json",
    ]);
    run.assert_code(0);
    let task = run.json();
    assert_eq!(task["status"], "working", "{task}");
    let id = task["taskId"].as_str().unwrap().to_owned();
    let run = env.run(&["task", "get", "remote", &id]);
    run.assert_code(0);
    assert!(
        run.stdout.starts_with(&format!("task {id} on remote: ")),
        "{}",
        run.stdout
    );
    let run = env.run(&["task", "wait", "remote", &id, "--json"]);
    run.assert_code(0);
    assert_eq!(run.json()["content"][0]["text"], "job done after 300 ms");

    let run = env.run(&[
        "call",
        "remote__job",
        "--arg",
        "duration_ms=60000",
        "--task",
        "--no-wait",
        "--json",
    ]);
    let id = run.json()["taskId"].as_str().unwrap().to_owned();
    let run = env.run(&["task", "cancel", "remote", &id]);
    run.assert_code(0);
    assert!(run.stdout.contains("it is now cancelled"), "{}", run.stdout);
    let run = env.run(&["task", "get", "remote", "no-such-task"]);
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("Unknown task"), "{}", run.stderr);
}

/// A loopback HTTP server that answers every request with a web page: a server that answered,
/// but not as MCP. Stopped (and its thread joined) on drop.
struct WebPageServer {
    url: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WebPageServer {
    fn start() -> Self {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as much of the body as its Content-Length says (at most 64 KiB).
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0)
                            .min(65_536);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let body = "<html><body>Welcome to our portal</body></html>";
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        WebPageServer {
            url,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for WebPageServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop, which sees the flag and ends.
        let address = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let _ = std::net::TcpStream::connect(address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_server_that_answers_with_a_web_page_is_a_protocol_error_naming_what_came_back() {
    let env = Env::new();
    let page = WebPageServer::start();
    let config = json!({"mcpServers": {"portal": {"type": "http", "url": page.url}}});
    env.cwd.write(".mcp.json", &config.to_string());
    let run = env.run(&["call", "portal__anything"]);
    // It answered: a protocol error (7), not "unavailable" (4).
    run.assert_code(7);
    assert!(
        run.stderr.contains("text/html") && run.stderr.contains("server \"portal\""),
        "the error names the server and what came back: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: \"portal\" answered, but not as an MCP server"),
        "{}",
        run.stderr
    );
    drop(page);
}
