//! The server side of `cargo xtask conformance`: the suites' server scenarios
//! (`conformance server --url …`) against every [`ServerTarget`].
//!
//! A target is a process serving MCP over Streamable HTTP on a loopback port the xtask picks:
//! the fixture (`mcp-fixture-server --conformance-content --era dual`), which serves the
//! 2025-11-25 session handshake and the 2026-07-28 stateless requests on the same URL, so every
//! scenario runs at its own era against one server; and the gateway (`mcph serve --http`)
//! fronting that fixture over stdio. Each run of each suite gets a freshly
//! started target (no state carried between runs); its stdout and stderr go to
//! `target/conformance/server-<target>-<version>-<run>.log`. The target runs in a process
//! group of its own, and the group is ended (SIGTERM, then SIGKILL after a grace period) when
//! the run is over, whether it passed, failed or the xtask returned early — so a target that
//! starts children of its own (a gateway and the servers it fronts) leaves nothing behind.
//!
//! Adding a target: one more [`ServerTarget`] in [`SERVER_TARGETS`] — a name, the `cargo`
//! arguments that build what it runs, and a function making the command line that serves on
//! the given port (writing any file it needs, such as a configuration, under
//! [`TargetCtx::scratch`]). Results are expected to be the same for every target, so they
//! share each suite's server baseline; a target may fail more only where its own baseline
//! entries say why ([`ServerTarget::extra_baseline`]).

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{
    assert_loopback_only, collect_results, conformance_dir, ensure_installed, node_command,
    print_summary, read_baseline, Report, Suite, NODE_SPEC, SUITE_PACKAGE,
};
use crate::shell;

/// How long a started target may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one run of a suite may take before it is stopped (the suites time out single
/// scenarios themselves; this bounds a hung run).
const RUN_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long a target gets to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What a target's start function gets.
pub struct TargetCtx<'a> {
    /// The workspace root.
    pub root: &'a Path,
    /// Cargo's target directory (the binaries are under `debug/`).
    pub target_dir: PathBuf,
    /// An empty directory for this run's files (a configuration the target reads, …).
    pub scratch: PathBuf,
}

/// A server the conformance suites' server scenarios run against.
pub struct ServerTarget {
    /// Short name, used in result folders and summaries (`fixture`, `gateway`).
    pub name: &'static str,
    /// `cargo` arguments that build what [`start`](Self::start) runs (run once, before any
    /// suite).
    pub build: &'static [&'static str],
    /// The command serving MCP over Streamable HTTP on `127.0.0.1:<port>`. It must keep
    /// running until it is stopped; stdin is closed and stdout/stderr go to a log file.
    pub start: fn(&TargetCtx<'_>, u16) -> Result<Command, String>,
    /// The path of the MCP endpoint on that port (`/mcp`).
    pub path: &'static str,
    /// What this target may fail beyond the suite's shared baseline, by suite version: a file
    /// whose `server:` list (with a reason per entry) is added to the suite's for its runs.
    pub extra_baseline: fn(&str) -> Option<&'static str>,
}

/// No failures beyond the shared baseline.
fn no_extra_baseline(_version: &str) -> Option<&'static str> {
    None
}

/// What the gateway may fail beyond the fixture: 2026-07-28 input rounds it cannot pass on
/// as they are (see the file).
fn gateway_extra_baseline(version: &str) -> Option<&'static str> {
    (version == "0.2.0-alpha.12").then_some("conformance/expected-failures-server-gateway-0.2.yml")
}

/// The targets, in run order.
pub const SERVER_TARGETS: &[ServerTarget] = &[
    ServerTarget {
        name: "fixture",
        build: &["build", "-p", "mcp-testkit", "--bin", "mcp-fixture-server"],
        start: fixture_command,
        path: "/mcp",
        extra_baseline: no_extra_baseline,
    },
    ServerTarget {
        name: "gateway",
        build: &[
            "build",
            "-p",
            "mcp-testkit",
            "--bin",
            "mcp-fixture-server",
            "-p",
            "mcp-cli",
            "--bin",
            "mcph",
        ],
        start: gateway_command,
        path: "/mcp",
        extra_baseline: gateway_extra_baseline,
    },
];

/// `mcph serve --http 127.0.0.1:<port>` fronting the same fixture over stdio (one server, so
/// its names pass through unchanged): the suites must see what they see without the gateway.
fn gateway_command(ctx: &TargetCtx<'_>, port: u16) -> Result<Command, String> {
    let fixture = ctx.target_dir.join("debug/mcp-fixture-server");
    let fixture = fixture
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", fixture.display()))?;
    // TOML (Codex's format): xtask writes it without a JSON crate, and a basic string needs
    // only its quotes and backslashes escaped.
    let quoted = fixture.replace('\\', "\\\\").replace('"', "\\\"");
    let config = format!(
        "[mcp_servers.fixture]\ncommand = \"{quoted}\"\nargs = [\"--conformance-content\", \"--era\", \"dual\"]\n"
    );
    let file = ctx.scratch.join("gateway.toml");
    fs::write(&file, config).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    let file = file
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", file.display()))?;
    let addr = format!("127.0.0.1:{port}");
    Ok(shell::command(
        ctx.target_dir.join("debug/mcph"),
        &["serve", "--http", &addr, "--config", file],
        ctx.root,
    ))
}

/// `mcp-fixture-server --http 127.0.0.1:<port> --conformance-content --era dual`, logging
/// every request it takes to `events.jsonl` in the scratch directory (what to read when a
/// scenario fails).
fn fixture_command(ctx: &TargetCtx<'_>, port: u16) -> Result<Command, String> {
    let server = ctx.target_dir.join("debug/mcp-fixture-server");
    let addr = format!("127.0.0.1:{port}");
    let events = ctx.scratch.join("events.jsonl");
    let events = events
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", events.display()))?;
    Ok(shell::command(
        server,
        &[
            "--http",
            &addr,
            "--conformance-content",
            "--era",
            "dual",
            "--event-log",
            events,
        ],
        ctx.root,
    ))
}

/// The targets named by `--target` (all when `None`).
pub fn select_targets(name: Option<&str>) -> Result<Vec<&'static ServerTarget>, String> {
    match name {
        None => Ok(SERVER_TARGETS.iter().collect()),
        Some(name) => SERVER_TARGETS
            .iter()
            .find(|t| t.name == name)
            .map(|t| vec![t])
            .ok_or_else(|| {
                let known: Vec<&str> = SERVER_TARGETS.iter().map(|t| t.name).collect();
                format!("unknown target {name:?}; known: {}", known.join(", "))
            }),
    }
}

/// Builds what the targets run (each distinct `cargo` command once).
pub fn build_targets(root: &Path, targets: &[&ServerTarget]) -> Result<(), String> {
    let mut done: Vec<&[&str]> = Vec::new();
    for target in targets {
        if done.contains(&target.build) {
            continue;
        }
        let mut build = shell::command(shell::cargo(), target.build, root);
        let status = shell::run(&mut build).map_err(|e| format!("could not start cargo: {e}"))?;
        if !status.success() {
            return Err(format!(
                "building the {} target failed ({status})",
                target.name
            ));
        }
        done.push(target.build);
    }
    Ok(())
}

/// One run of a suite's server scenarios against `target`: `run_args` besides `--url`, the
/// baseline and `-o`.
pub fn run_one(
    root: &Path,
    suite: &Suite,
    target: &ServerTarget,
    label: &str,
    run_args: &[&str],
) -> Result<Report, String> {
    let start = Instant::now();
    let dir = conformance_dir(root, suite);
    let msg = ensure_installed(&dir, suite)?;
    println!(
        "conformance: {NODE_SPEC} + {SUITE_PACKAGE}@{}: {msg}; server run {label} against {}: {}",
        suite.version,
        target.name,
        run_args.join(" ")
    );
    let results = shell::target_dir(root).join("conformance");
    let name = format!("server-{}-{}-{label}", target.name, suite.version);
    let out = results.join(&name);
    let scratch = results.join(format!("{name}.scratch"));
    for stale in [&out, &scratch] {
        if stale.exists() {
            fs::remove_dir_all(stale).map_err(|e| format!("clearing {}: {e}", stale.display()))?;
        }
    }
    fs::create_dir_all(&scratch).map_err(|e| format!("creating {}: {e}", scratch.display()))?;
    let log = results.join(format!("{name}.log"));
    let ctx = TargetCtx {
        root,
        target_dir: shell::target_dir(root),
        scratch,
    };

    let port = free_port()?;
    let server = RunningTarget::start(target, &ctx, port, &log)?;
    server.wait_ready(port)?;
    let url = format!("http://127.0.0.1:{port}{}", target.path);

    let out_arg = out.to_string_lossy().into_owned();
    let baseline_path = baseline_for(root, suite, target, &ctx.scratch)?;
    let baseline = baseline_path.to_string_lossy().into_owned();
    let mut args = vec!["server", "--url", &url];
    args.extend(run_args);
    args.extend(["--expected-failures", &baseline, "-o", &out_arg]);
    let mut cmd = node_command(&dir, dir.join("node_modules/.bin/conformance"), &args, root)?;
    assert_loopback_only(&dir, root)?;
    eprintln!("$ {}", shell::display(&cmd));
    let mut suite_process = cmd
        .spawn()
        .map_err(|e| format!("could not start the conformance suite: {e}"))?;
    let code = wait_with_deadline(&mut suite_process, RUN_TIMEOUT)
        .map_err(|e| format!("waiting for the conformance suite: {e}"))?;
    drop(server);

    let expected = read_baseline(&baseline_path, "server");
    let results = collect_results(&out, Some("server-"));
    let summary = print_summary(&results, &expected, &[]);
    println!(
        "conformance: suite exit code {} in {:.1}s (target log: {})",
        code.map_or_else(|| "none (signal or timeout)".to_owned(), |c| c.to_string()),
        start.elapsed().as_secs_f64(),
        log.display()
    );
    Ok(Report { code, summary })
}

/// The baseline of `target`'s runs of `suite`: the suite's, plus the target's own entries
/// (written to the scratch directory) when it has some.
fn baseline_for(
    root: &Path,
    suite: &Suite,
    target: &ServerTarget,
    scratch: &Path,
) -> Result<PathBuf, String> {
    let shared = root.join(suite.server_baseline);
    let Some(extra) = (target.extra_baseline)(suite.version) else {
        return Ok(shared);
    };
    let read = |path: &Path| {
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    // An empty shared list (`server: []`) becomes a list the target's entries join.
    let mut merged = read(&shared)?.replace("server: []", "server:");
    let extra_text = read(&root.join(extra))?;
    // The target's entries: the lines of its `server:` list, added to the shared list.
    let entries = extra_text
        .lines()
        .skip_while(|line| line.trim_end() != "server:")
        .skip(1);
    if !merged.ends_with('\n') {
        merged.push('\n');
    }
    for line in entries {
        merged.push_str(line);
        merged.push('\n');
    }
    let path = scratch.join("baseline.yml");
    fs::write(&path, merged).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// A loopback port nobody listens on now (the kernel's pick for port 0, released).
fn free_port() -> Result<u16, String> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("could not pick a free loopback port: {e}"))
}

/// Waits for `child` until `timeout`; then kills it. `Ok(None)`: killed by a signal or by
/// the timeout.
fn wait_with_deadline(child: &mut Child, timeout: Duration) -> std::io::Result<Option<i32>> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.code());
        }
        if Instant::now() >= deadline {
            eprintln!(
                "conformance: the suite ran longer than {}s; stopping it",
                timeout.as_secs()
            );
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// A started target; dropping it stops its whole process group.
struct RunningTarget {
    name: &'static str,
    child: Child,
}

impl RunningTarget {
    fn start(
        target: &ServerTarget,
        ctx: &TargetCtx<'_>,
        port: u16,
        log: &Path,
    ) -> Result<Self, String> {
        let mut cmd = (target.start)(ctx, port)?;
        let log_file =
            fs::File::create(log).map_err(|e| format!("creating {}: {e}", log.display()))?;
        let log_err = log_file
            .try_clone()
            .map_err(|e| format!("opening {}: {e}", log.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(log_file))
            .stderr(Stdio::from(log_err));
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own group, so that stopping it stops whatever it started.
            cmd.process_group(0);
        }
        eprintln!("$ {}", shell::display(&cmd));
        let child = cmd
            .spawn()
            .map_err(|e| format!("could not start the {} target: {e}", target.name))?;
        Ok(Self {
            name: target.name,
            child,
        })
    }

    /// Waits until the port accepts connections; fails if the target exits first or takes
    /// longer than [`READY_TIMEOUT`].
    fn wait_ready(&self, port: u16) -> Result<(), String> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the {} target did not accept connections on {addr} within {}s",
                    self.name,
                    READY_TIMEOUT.as_secs()
                ));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for RunningTarget {
    fn drop(&mut self) {
        // Even a target that exited by itself may have left children in its group.
        let pid = self.child.id();
        #[cfg(unix)]
        {
            // The group's id is the target's pid (`process_group(0)`).
            signal_group("TERM", pid);
            let deadline = Instant::now() + STOP_GRACE;
            while Instant::now() < deadline && !self.has_exited() {
                thread::sleep(Duration::from_millis(50));
            }
            // Whatever is left of the group (the target, if it ignored SIGTERM; children of
            // its own that outlived it).
            signal_group("KILL", pid);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("conformance: stopped the {} target (pid {pid})", self.name);
    }
}

/// `kill -SIGNAL -- -<group>`: xtask has no libc binding, and `kill(1)` is everywhere.
#[cfg(unix)]
fn signal_group(signal: &str, group: u32) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), "--", &format!("-{group}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_have_distinct_names_and_an_endpoint_path() {
        let mut names: Vec<&str> = SERVER_TARGETS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SERVER_TARGETS.len());
        for target in SERVER_TARGETS {
            assert!(target.path.starts_with('/'), "{}", target.name);
            assert_eq!(target.build.first(), Some(&"build"), "{}", target.name);
        }
        assert!(select_targets(Some("fixture")).is_ok());
        assert!(select_targets(Some("nope")).is_err());
    }

    #[test]
    fn the_fixture_serves_conformance_content_in_both_eras_on_the_given_port() {
        let root = Path::new("/w");
        let ctx = TargetCtx {
            root,
            target_dir: root.join("target"),
            scratch: root.join("scratch"),
        };
        let cmd = fixture_command(&ctx, 4242).expect("a command");
        assert!(cmd
            .get_program()
            .to_string_lossy()
            .ends_with("debug/mcp-fixture-server"));
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--http",
                "127.0.0.1:4242",
                "--conformance-content",
                "--era",
                "dual",
                "--event-log",
                "/w/scratch/events.jsonl"
            ]
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_started_target_and_its_children_are_stopped_when_dropped() {
        let dir = std::env::temp_dir().join(format!("xtask-target-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        fn sleeper(ctx: &TargetCtx<'_>, _: u16) -> Result<Command, String> {
            let pid_file = ctx.scratch.join("grandchild.pid");
            let mut cmd = Command::new("sh");
            cmd.args([
                "-c",
                &format!("sleep 600 & echo $! > {}; wait", pid_file.display()),
            ]);
            Ok(cmd)
        }
        let target = ServerTarget {
            name: "sleeper",
            build: &["build"],
            start: sleeper,
            path: "/mcp",
            extra_baseline: no_extra_baseline,
        };
        let ctx = TargetCtx {
            root: &dir,
            target_dir: dir.clone(),
            scratch: dir.clone(),
        };
        let mut running =
            RunningTarget::start(&target, &ctx, 1, &dir.join("log")).expect("started");
        let pid_file = dir.join("grandchild.pid");
        let deadline = Instant::now() + Duration::from_secs(10);
        let grandchild = loop {
            let pid = fs::read_to_string(&pid_file).unwrap_or_default();
            if let Ok(pid) = pid.trim().parse::<u32>() {
                break pid;
            }
            assert!(Instant::now() < deadline, "the grandchild never started");
            thread::sleep(Duration::from_millis(20));
        };
        assert!(!running.has_exited());
        drop(running);
        // Gone, or a zombie waiting for its new parent to reap it.
        let stopped = || {
            fs::read_to_string(format!("/proc/{grandchild}/stat"))
                .map(|stat| {
                    stat.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
                .unwrap_or(true)
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !stopped() {
            assert!(
                Instant::now() < deadline,
                "grandchild {grandchild} still running"
            );
            thread::sleep(Duration::from_millis(20));
        }
        let _ = fs::remove_dir_all(dir);
    }
}
