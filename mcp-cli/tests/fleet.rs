//! Many `mcph` processes sharing one login, against the fixture's authorization server with
//! 5-second access tokens and rotating, single-use refresh tokens:
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

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{HttpFixtureProcess, Run, RunningProcess, Stream, TempDir, DEADLINE, MCPH};
use mcp_testkit::redis::RedisServer;
use mcp_testkit::secret_service::SecretService;
use serde_json::{json, Value};

/// Access token lifetime at the fixture.
/// (Long enough that a round's 8 process start-ups, on a loaded machine, fall well within the
/// first half of a token's life — its refresh margin.)
const TOKEN_TTL_SECS: u64 = 5;
/// Concurrent `mcph call`s per round on one machine.
const PROCESSES: usize = 8;
const ROUNDS: u64 = 3;
/// How long the login may take, URL to exit.
const LOGIN_DEADLINE: Duration = Duration::from_secs(60);

/// `GET` of one of the fixture's control endpoints, as JSON.
fn control_json(fixture: &HttpFixtureProcess, path: &str) -> Value {
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
            .get(format!("{}{path}", fixture.url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        response.json::<Value>().await.expect("JSON")
    })
}

/// The fixture's OAuth counters (`GET /control/oauth/stats`).
fn oauth_stats(fixture: &HttpFixtureProcess) -> Value {
    control_json(fixture, "/control/oauth/stats")
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

/// One replica of the fleet: a HOME and the environment `mcph` runs with. (In the OS-store
/// test, the one machine whose processes share its credential store.)
struct Replica {
    config: PathBuf,
    cwd: TempDir,
    envs: Vec<(String, String)>,
}

impl Replica {
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

    /// A replica of the Redis tests: its own HOME and runtime directory, the fleet key.
    fn sharing_redis(tag: &str, fixture: &HttpFixtureProcess, redis: &RedisServer) -> Replica {
        let cwd = TempDir::new(tag);
        let home = cwd.path().join("home");
        let run = cwd.path().join("run");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&run).expect("runtime dir");
        let config = write_config(
            cwd.path(),
            fixture,
            json!({ "store": { "url": redis.url(), "prefix": PREFIX } }),
        );
        let path = |p: &Path| p.to_string_lossy().into_owned();
        Replica {
            config,
            envs: vec![
                ("HOME".into(), path(&home)),
                ("XDG_RUNTIME_DIR".into(), path(&run)),
                ("XDG_CACHE_HOME".into(), path(&home.join(".cache"))),
                ("XDG_CONFIG_HOME".into(), path(&home.join(".config"))),
                ("MCPH_STORE_KEY".into(), STORE_KEY.into()),
            ],
            cwd,
        }
    }

    /// `mcph ARGS` started on this replica.
    fn spawn(&self, args: &[&str]) -> RunningProcess {
        RunningProcess::spawn(&format!("mcph {}", args.join(" ")), &mut self.command(args))
    }

    fn run(&self, args: &[&str]) -> Run {
        self.spawn(args).finish(DEADLINE)
    }

    /// `mcph auth login fx --no-browser`, playing the browser.
    fn login(&self, authorize: &str) {
        let mut login = self.spawn(&["auth", "login", "fx", "--no-browser", "--timeout", "60"]);
        let url = login.wait_for_line(Stream::Stderr, LOGIN_DEADLINE, |line| {
            line.trim_start()
                .starts_with(authorize)
                .then(|| line.trim().to_owned())
        });
        browse(&url);
        let run = login.finish(LOGIN_DEADLINE);
        assert_eq!(
            run.code,
            Some(0),
            "login failed:\n{}\n{}",
            run.stdout,
            run.stderr
        );
    }
}

/// Starts `count` `mcph call fx__echo` processes at once on the given replicas (round robin)
/// and waits for all of them.
fn concurrent_calls(replicas: &[&Replica], count: usize, round: u64) -> Vec<Run> {
    let calls: Vec<RunningProcess> = (0..count)
        .map(|i| {
            let text = format!("round {round} call {i}");
            replicas[i % replicas.len()].spawn(&[
                "call",
                "fx__echo",
                &json!({ "text": text }).to_string(),
            ])
        })
        .collect();
    calls
        .into_iter()
        .map(|call| call.finish(DEADLINE))
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
    let machine = Replica {
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

/// The key prefix of the fleet in these tests.
const PREFIX: &str = "fleet-test";

/// The fleet's encryption key (every replica has the same).
const STORE_KEY: &str = "5f1c0a9e7d3b2468ace0135790bdf24680ace1357bdf02468ace13579bdf0246";

/// Every value in the Redis at `url` (strings, and every field and value of hashes), with its
/// key: what anyone with access to the Redis could read.
fn everything_in(url: &str) -> Vec<(String, Vec<u8>)> {
    let client = redis::Client::open(url).expect("a Redis URL");
    let mut connection = client
        .get_connection_with_timeout(Duration::from_secs(10))
        .expect("connect to Redis");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut connection)
        .expect("KEYS");
    let mut values = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query(&mut connection)
            .expect("TYPE");
        match kind.as_str() {
            "string" => {
                let value: Vec<u8> = redis::cmd("GET")
                    .arg(&key)
                    .query(&mut connection)
                    .expect("GET");
                values.push((key.clone(), value));
            }
            "hash" => {
                let fields: Vec<Vec<u8>> = redis::cmd("HGETALL")
                    .arg(&key)
                    .query(&mut connection)
                    .expect("HGETALL");
                values.extend(fields.into_iter().map(|f| (key.clone(), f)));
            }
            other => panic!("unexpected Redis type {other} at {key}"),
        }
    }
    values
}

/// The tokens the fleet store holds for the fixture, read through mcp-fleet with the key.
fn stored_secrets(redis: &RedisServer, fixture: &HttpFixtureProcess) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let key =
            mcp_client::mcp_fleet::StoreKeyMaterial::parse("STORE_KEY", STORE_KEY).expect("key");
        let settings = mcp_client::mcp_fleet::FleetSettings::new(redis.url(), key, "STORE_KEY")
            .with_prefix(PREFIX);
        let fleet = mcp_client::mcp_fleet::Fleet::new(settings).expect("fleet");
        let store = fleet.token_store();
        let entry = mcp_client::mcp_auth::TokenStore::load(
            &*store,
            &mcp_client::auth::store_key(&format!("{}/mcp", fixture.url)),
        )
        .await
        .expect("load")
        .expect("the login is stored in Redis");
        let tokens = entry.tokens.expect("tokens");
        let mut secrets = vec![tokens.access_token.expose().to_owned()];
        secrets.extend(tokens.refresh_token.map(|r| r.expose().to_owned()));
        secrets
    })
}

#[test]
fn three_replicas_sharing_only_redis_refresh_once_per_round_with_nothing_in_plain_text() {
    let fixture = HttpFixtureProcess::start(&["--oauth-token-ttl", &TOKEN_TTL_SECS.to_string()]);
    let redis = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
    // Three replicas, as on three machines: nothing in common but the Redis (no D-Bus, each its
    // own HOME and runtime directory, so not even a lock file is shared).
    let replicas: Vec<Replica> = (0..3)
        .map(|i| Replica::sharing_redis(&format!("fleet-replica-{i}"), &fixture, &redis))
        .collect();
    replicas[0].login(&format!("{}/authorize", fixture.url));
    // Another replica sees the login, and says where it lives.
    let status = replicas[1].run(&["auth", "status", "--json"]);
    status.assert_code(0);
    let status = status.json();
    assert!(
        status["store"]
            .as_str()
            .is_some_and(|s| s.starts_with(&format!("Redis at {}", redis.url()))),
        "{status}"
    );
    assert_eq!(status["servers"][0]["logged_in"], true, "{status}");

    let all: Vec<&Replica> = replicas.iter().collect();
    let mut secrets = stored_secrets(&redis, &fixture);
    for round in 1..=ROUNDS {
        wait_for_expiry();
        let runs = concurrent_calls(&all, PROCESSES, round);
        assert_all_succeeded(&runs, round);
        let stats = oauth_stats(&fixture);
        assert_eq!(
            counter(&stats, "refreshes_granted"),
            round,
            "round {round}: exactly one refresh across the replicas ({stats})"
        );
        assert_eq!(
            counter(&stats, "refresh_refused"),
            0,
            "round {round}: none refused"
        );
        secrets.extend(stored_secrets(&redis, &fixture));
    }

    // Nothing readable in Redis: every value of every key, against every token seen.
    let everything = everything_in(&redis.url());
    assert!(!everything.is_empty(), "the login is in Redis");
    for (key, value) in &everything {
        assert!(
            key.starts_with(&format!("{PREFIX}:")),
            "{key}: outside the prefix"
        );
        for (i, secret) in secrets.iter().enumerate() {
            assert!(
                !value.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "token #{i} is readable in Redis at {key}"
            );
        }
    }

    // Nor in a replica's logs at trace level (a refresh included).
    wait_for_expiry();
    let mut traced = replicas[2].command(&["-v", "call", "fx__echo", r#"{"text":"traced"}"#]);
    traced.env("RUST_LOG", "trace");
    let traced = RunningProcess::spawn("mcph -v call", &mut traced).finish(DEADLINE);
    traced.assert_code(0);
    assert!(traced.stderr.len() > 1000, "trace logs were written");
    secrets.extend(stored_secrets(&redis, &fixture));
    for (i, secret) in secrets.iter().enumerate() {
        assert!(
            !traced.stderr.contains(secret.as_str()),
            "token #{i} in the trace log"
        );
        assert!(
            !traced.stdout.contains(secret.as_str()),
            "token #{i} in the output"
        );
    }
    assert!(
        !traced.stderr.contains(STORE_KEY),
        "the store key in the trace log"
    );
    assert_eq!(counter(&oauth_stats(&fixture), "refresh_refused"), 0);
}

#[test]
fn a_replica_without_the_right_key_says_so_and_deletes_nothing() {
    let fixture = HttpFixtureProcess::start(&["--oauth"]);
    let redis = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
    let cwd = TempDir::new("fleet-wrong-key");
    let config = write_config(
        cwd.path(),
        &fixture,
        json!({ "store": { "url": redis.url() } }),
    );
    let home = cwd.path().to_string_lossy().into_owned();
    let envs = |key: &str| {
        vec![
            ("HOME".to_owned(), home.clone()),
            ("XDG_RUNTIME_DIR".to_owned(), home.clone()),
            ("MCPH_STORE_KEY".to_owned(), key.to_owned()),
        ]
    };
    let right = Replica {
        config: config.clone(),
        cwd,
        envs: envs(STORE_KEY),
    };
    right.login(&format!("{}/authorize", fixture.url));
    let before = everything_in(&redis.url());

    let other_key = "0000000000000000000000000000000000000000000000000000000000000001";
    let wrong = Replica {
        config: config.clone(),
        cwd: TempDir::new("fleet-wrong-key-2"),
        envs: envs(other_key),
    };
    let status = wrong.run(&["auth", "status"]);
    assert_ne!(status.code, Some(0), "{}", status.stdout);
    assert!(status.stderr.contains("key id"), "{}", status.stderr);
    assert!(
        status.stderr.contains("MCPH_STORE_KEY"),
        "{}",
        status.stderr
    );
    assert!(!status.stderr.contains(other_key) && !status.stderr.contains(STORE_KEY));
    let call = wrong.run(&["call", "fx__echo", r#"{"text":"x"}"#]);
    assert_ne!(call.code, Some(0));
    assert_eq!(
        everything_in(&redis.url()),
        before,
        "nothing was changed or deleted"
    );
    // The right key still works.
    right
        .run(&["call", "fx__echo", r#"{"text":"still"}"#])
        .assert_code(0);

    // No key at all: mcph refuses to start, naming the variable.
    let keyless = Replica {
        config,
        cwd: TempDir::new("fleet-no-key"),
        envs: vec![("HOME".to_owned(), "/nonexistent".to_owned())],
    };
    let run = keyless.run(&["servers"]);
    assert_ne!(run.code, Some(0));
    assert!(run.stderr.contains("MCPH_STORE_KEY"), "{}", run.stderr);
}

/// Three long-running replicas (`mcph stats --call`, 20 calls a second each, separate HOMEs)
/// through several token lifetimes; Redis is killed and restarted (empty: it keeps nothing on
/// disk) twice — between two refreshes, then across one. Calls go on with the tokens each
/// process holds, no refresh is made while Redis is down, and after the restart the newest
/// tokens — the replicas' — win: every call succeeds, one refresh per half token lifetime,
/// none refused.
#[test]
fn long_running_replicas_ride_out_a_redis_restart() {
    let fixture =
        HttpFixtureProcess::start(&["--oauth-token-ttl", &LONG_TOKEN_TTL_SECS.to_string()]);
    let mut redis = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
    let replicas: Vec<Replica> = (0..3)
        .map(|i| Replica::sharing_redis(&format!("fleet-long-{i}"), &fixture, &redis))
        .collect();
    replicas[0].login(&format!("{}/authorize", fixture.url));
    let processes: Vec<RunningProcess> = replicas
        .iter()
        .map(|replica| {
            replica.spawn(&[
                "stats",
                "--call",
                "fx__echo",
                "--json-args",
                r#"{"text":"x"}"#,
                "--rate",
                "20",
                "--interval",
                "1",
                "--json",
            ])
        })
        .collect();
    let running = Instant::now();

    // A refresh happens about every half token lifetime (the refresh margin is at most half
    // of it). Once one has happened and every replica had time to take its tokens, Redis goes.
    let refreshes = |stats: &Value| counter(stats, "refreshes_granted");
    let started = refreshes(&oauth_stats(&fixture));
    let deadline = Instant::now() + Duration::from_secs(30);
    while refreshes(&oauth_stats(&fixture)) == started {
        assert!(Instant::now() < deadline, "no refresh within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Redis goes in the middle of a token's first half: the others took the new tokens within
    // one of their 50 ms call intervals of the refresh (their tokens reached the same margin),
    // and the next refresh is a half lifetime (4 s) after it. Down for one second, from 1.5 s
    // on: all of it between two refreshes, with seconds to spare on either side.
    let refreshed_at = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    redis.kill().unwrap_or_else(|e| panic!("{e}"));
    let at_kill = oauth_stats(&fixture);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        refreshed_at.elapsed() < Duration::from_secs(LONG_TOKEN_TTL_SECS / 2),
        "the test itself was too slow to restart Redis before the next refresh"
    );
    redis.restart().unwrap_or_else(|e| panic!("{e}"));
    // Three more refreshes after the restart, coordinated through the new Redis.
    let deadline = Instant::now() + Duration::from_secs(40);
    while refreshes(&oauth_stats(&fixture)) < refreshes(&at_kill) + 3 {
        assert!(
            Instant::now() < deadline,
            "refreshes stopped after the restart"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Now Redis is down *across* a refresh: killed 3 s after one, back 2.5 s later — the next
    // refresh was due at 4 s, the token expires at 8 s. No replica may rotate the refresh token
    // while the others cannot learn of it: each uses its valid access token on, and the first
    // refresh after the restart is the fleet's one.
    let before = refreshes(&oauth_stats(&fixture));
    let deadline = Instant::now() + Duration::from_secs(30);
    while refreshes(&oauth_stats(&fixture)) == before {
        assert!(Instant::now() < deadline, "no refresh within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let refreshed_at = Instant::now();
    std::thread::sleep(Duration::from_millis(3000));
    redis.kill().unwrap_or_else(|e| panic!("{e}"));
    let during = oauth_stats(&fixture);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        refreshes(&oauth_stats(&fixture)),
        refreshes(&during),
        "no refresh while Redis was down"
    );
    redis.restart().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        refreshed_at.elapsed() < Duration::from_secs(LONG_TOKEN_TTL_SECS - 1),
        "the test itself was too slow: Redis came back after the token expired"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while refreshes(&oauth_stats(&fixture)) < refreshes(&during) + 2 {
        assert!(
            Instant::now() < deadline,
            "refreshes stopped after the second restart"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let runs = interrupt_all(processes);
    let ran = running.elapsed();
    let stats = oauth_stats(&fixture);
    assert_eq!(counter(&stats, "refresh_refused"), 0, "{stats}");
    for (i, run) in runs.iter().enumerate() {
        let last = run
            .stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
            .unwrap_or_else(|| panic!("replica {i} printed no snapshot: {}", run.stderr));
        let server = &last["servers"][0];
        assert!(
            server["calls"].as_u64().unwrap_or(0) > 40,
            "replica {i}: {server}"
        );
        assert_eq!(
            server["errors"], 0,
            "replica {i}: every call succeeded: {server}"
        );
    }
    // One refresh per half lifetime for the whole fleet, not one per replica.
    let granted = refreshes(&stats);
    let half_lives = ran.as_secs_f64() / (LONG_TOKEN_TTL_SECS as f64 / 2.0);
    assert!(
        (granted as f64) <= half_lives.ceil() + 1.0,
        "{granted} refreshes in {ran:?}: more than one per half token lifetime"
    );
    assert_eq!(counter(&stats, "token_errors"), 0, "{stats}");
    assert!(granted >= 4, "{stats}");
}

/// Access token lifetime in the long-running test: refreshes 4 s apart.
const LONG_TOKEN_TTL_SECS: u64 = 8;

/// Interrupts long-running `mcph` processes (Ctrl-C) all at once, then collects each.
fn interrupt_all(processes: Vec<RunningProcess>) -> Vec<Run> {
    for process in &processes {
        process.send_interrupt_to_leader();
    }
    processes
        .into_iter()
        .map(|process| process.finish(DEADLINE))
        .collect()
}

/// The fleet's limit in [`four_processes_share_one_fleet_rate_limit`], calls per second.
const FLEET_LIMIT: u64 = 40;
const FLEET_BURST: u64 = 10;
/// How long the four processes are measured.
const LIMIT_WINDOW: Duration = Duration::from_secs(10);

/// How many POSTs the fixture took, over every session (`GET /control/posts`): in the steady
/// state of the rate-limit test, its tool calls.
fn posts_taken(fixture: &HttpFixtureProcess) -> u64 {
    control_json(fixture, "/control/posts")["posts"]
        .as_u64()
        .expect("posts")
}

#[test]
fn four_processes_share_one_fleet_rate_limit() {
    let fixture = HttpFixtureProcess::start(&["--http-control"]);
    let redis = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
    let limited = json!({
        "store": { "url": redis.url(), "prefix": PREFIX },
        "mcpServers": { "fx": {
            "url": format!("{}/mcp", fixture.url),
            "rate_limit": { "per_second": FLEET_LIMIT, "burst": FLEET_BURST, "scope": "fleet" }
        } }
    });
    let replicas: Vec<Replica> = (0..4)
        .map(|i| {
            let replica = Replica::sharing_redis(&format!("fleet-limit-{i}"), &fixture, &redis);
            std::fs::write(&replica.config, limited.to_string()).expect("config");
            replica
        })
        .collect();
    let callers: Vec<RunningProcess> = replicas
        .iter()
        .map(|replica| {
            RunningProcess::spawn(
                "mcph -v stats",
                replica
                    .command(&[
                        "-v",
                        "stats",
                        "--call",
                        "fx__slow",
                        "--json-args",
                        r#"{"duration_ms":0}"#,
                        "--rate",
                        "2000",
                        "--interval",
                        "1",
                        "--json",
                    ])
                    .env("RUST_LOG", "warn"),
            )
        })
        .collect();
    // Running at the limit: the burst spent, calls waiting for permits.
    let deadline = Instant::now() + Duration::from_secs(30);
    while posts_taken(&fixture) < 2 * FLEET_LIMIT {
        assert!(
            Instant::now() < deadline,
            "the callers never reached the server"
        );
    }
    let before = Instant::now();
    let first = posts_taken(&fixture);
    let first_read = Instant::now();
    std::thread::sleep(LIMIT_WINDOW);
    let last_asked = Instant::now();
    let last = posts_taken(&fixture);
    let after = Instant::now();
    let runs = interrupt_all(callers);

    let seen = last - first;
    let secs = |d: Duration| d.as_secs_f64();
    // At most the limit over the longest the window can have been (plus one burst, if the
    // bucket had refilled), at least 90 % of it over the shortest.
    let most = FLEET_LIMIT as f64 * secs(after - before) * 1.02 + FLEET_BURST as f64;
    let least = FLEET_LIMIT as f64 * secs(last_asked - first_read) * 0.9;
    eprintln!(
        "fleet limit {FLEET_LIMIT}/s over {:.2}–{:.2} s: the server saw {seen} calls \
         (allowed ≤ {most:.0}, expected ≥ {least:.0})",
        secs(last_asked - first_read),
        secs(after - before)
    );
    assert!(
        seen as f64 <= most,
        "{seen} calls > {most:.0}: the limit did not hold"
    );
    assert!(
        seen as f64 >= least,
        "{seen} calls < {least:.0}: the fleet under-admits"
    );
    for (i, run) in runs.iter().enumerate() {
        assert!(
            run.stdout.lines().any(|l| l.contains("\"calls\"")),
            "process {i} ran: {}",
            run.stderr
        );
        // The limit is the fleet's (four local limits would have let 4 × 40/s through, which
        // the count above rules out); and the fleet store was found.
        assert!(
            !run.stderr.contains("for this process only"),
            "process {i} has no fleet store: {}",
            run.stderr
        );
    }
}
