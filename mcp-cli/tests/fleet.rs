//! Many `mcph` processes sharing one login, against the fixture's authorization server with
//! 3-second access tokens and rotating, single-use refresh tokens:
//!
//! * processes of one machine sharing the OS credential store (a private Secret Service):
//!   8 concurrent `mcph call`s per round, 3 rounds, each round after the token expired;
//! * replicas sharing only a Redis store (each its own HOME, no OS store in common), with Redis
//!   killed in the middle and restarted.
//!
//! Every call must succeed, each round must make exactly one refresh, no refresh token may be
//! refused, and the login must survive — the fixture's own counters say so.

#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{finish, HttpFixtureProcess, Run, TempDir, DEADLINE, MCPH};
use mcp_testkit::secret_service::SecretService;
use serde_json::{json, Value};

/// Access token lifetime at the fixture.
const TOKEN_TTL_SECS: u64 = 3;
/// Concurrent `mcph call`s per round on one machine.
const PROCESSES: usize = 8;
const ROUNDS: u64 = 3;
/// How long the login may take, URL to exit.
const LOGIN_DEADLINE: Duration = Duration::from_secs(60);

/// The fixture's OAuth counters (`GET /control/oauth/stats`).
fn oauth_stats(fixture: &HttpFixtureProcess) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let response = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("client")
            .get(format!("{}/control/oauth/stats", fixture.url))
            .send()
            .await
            .expect("GET stats");
        response.json::<Value>().await.expect("stats JSON")
    })
}

fn counter(stats: &Value, name: &str) -> u64 {
    stats[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {name} in {stats}"))
}

/// Fetches `url` following redirects (the fixture approves at once and redirects to mcph's
/// loopback listener): what a browser would do.
fn browse(url: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let answer = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(15))
            .build()
            .expect("client")
            .get(url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("fetching the authorization URL failed: {e}"));
        assert!(answer.status().is_success(), "{}", answer.status());
    });
}

/// One machine (or one replica): a HOME and the environment `mcph` runs with.
struct Machine {
    config: PathBuf,
    cwd: TempDir,
    envs: Vec<(String, String)>,
}

impl Machine {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(MCPH);
        command
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .current_dir(self.cwd.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(self.envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn run(&self, args: &[&str]) -> Run {
        finish(self.command(args).spawn().expect("spawn mcph"), DEADLINE)
    }

    /// `mcph auth login fx --no-browser`, playing the browser.
    fn login(&self, authorize: &str) {
        let mut child = self
            .command(&["auth", "login", "fx", "--no-browser", "--timeout", "60"])
            .spawn()
            .expect("spawn mcph auth login");
        let stderr = child.stderr.take().expect("stderr");
        let mut stdout = child.stdout.take().expect("stdout");
        let out = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        let (tx, lines) = mpsc::channel();
        let err = std::thread::spawn(move || {
            let mut text = String::new();
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                text.push_str(&line);
                text.push('\n');
                let _ = tx.send(line);
            }
            text
        });
        let deadline = Instant::now() + LOGIN_DEADLINE;
        let url = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) if line.trim_start().starts_with(authorize) => {
                    break line.trim().to_owned()
                }
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("mcph auth login printed no URL starting with {authorize}");
                }
            }
        };
        browse(&url);
        let status = common::wait_until(&mut child, LOGIN_DEADLINE).unwrap_or_else(|| {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcph auth login did not exit");
        });
        let stderr = err.join().unwrap_or_default();
        let stdout = out.join().unwrap_or_default();
        assert!(status.success(), "login failed:\n{stdout}\n{stderr}");
    }
}

/// Starts `count` `mcph call fx__echo` processes at once on the given machines (round robin)
/// and waits for all of them.
fn concurrent_calls(machines: &[&Machine], count: usize, round: u64) -> Vec<Run> {
    let children: Vec<Child> = (0..count)
        .map(|i| {
            let text = format!("round {round} call {i}");
            machines[i % machines.len()]
                .command(&["call", "fx__echo", &json!({ "text": text }).to_string()])
                .spawn()
                .expect("spawn mcph call")
        })
        .collect();
    children
        .into_iter()
        .map(|child| finish(child, DEADLINE))
        .collect()
}

fn assert_all_succeeded(runs: &[Run], round: u64) {
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(
            run.code,
            Some(0),
            "round {round}, call {i} failed:\n--- stdout\n{}\n--- stderr\n{}",
            run.stdout,
            run.stderr
        );
        assert!(
            run.stdout.contains(&format!("round {round} call {i}")),
            "round {round}, call {i}: {}",
            run.stdout
        );
    }
}

/// Sleeps until the access token the last round used has expired (its lifetime is fixed by
/// the fixture; nothing to poll for).
fn wait_for_expiry() {
    std::thread::sleep(Duration::from_millis(TOKEN_TTL_SECS * 1000 + 600));
}

fn write_config(dir: &Path, fixture: &HttpFixtureProcess, extra: Value) -> PathBuf {
    let mut config = json!({
        "mcpServers": { "fx": { "url": format!("{}/mcp", fixture.url) } }
    });
    if let (Some(config), Some(extra)) = (config.as_object_mut(), extra.as_object()) {
        for (key, value) in extra {
            config.insert(key.clone(), value.clone());
        }
    }
    let path = dir.join("mcph.json");
    std::fs::write(&path, config.to_string()).expect("write the config");
    path
}

#[test]
fn eight_processes_sharing_the_os_store_refresh_once_per_round_and_keep_the_login() {
    let fixture = HttpFixtureProcess::start(&["--oauth-token-ttl", &TOKEN_TTL_SECS.to_string()]);
    let secret_service = SecretService::start().unwrap_or_else(|e| panic!("{e}"));
    let cwd = TempDir::new("fleet-os-store");
    let machine = Machine {
        config: write_config(cwd.path(), &fixture, json!({})),
        cwd,
        envs: secret_service.envs(),
    };
    machine.login(&format!("{}/authorize", fixture.url));
    let status = machine.run(&["auth", "status", "--json"]);
    status.assert_code(0);
    assert_eq!(
        status.json()["store"],
        "Secret Service",
        "{}",
        status.stdout
    );

    for round in 1..=ROUNDS {
        wait_for_expiry();
        let runs = concurrent_calls(&[&machine], PROCESSES, round);
        assert_all_succeeded(&runs, round);
        let stats = oauth_stats(&fixture);
        assert_eq!(
            counter(&stats, "refreshes_granted"),
            round,
            "round {round}: exactly one refresh per round ({stats})"
        );
        assert_eq!(
            counter(&stats, "refresh_refused"),
            0,
            "round {round}: no refresh token refused"
        );
    }
    // The login survived: a later call still needs no login.
    let after = machine.run(&["call", "fx__echo", r#"{"text":"after"}"#]);
    after.assert_code(0);
    let stats = oauth_stats(&fixture);
    assert_eq!(counter(&stats, "authorization_code"), 1, "one login only");
}
