//! Secrets never leave the client: with secrets in stdio env values, HTTP header values,
//! bearer tokens and URL query strings and user info, against servers that work and servers
//! that fail (exit at start, refuse the credentials, refuse the connection), nothing the library
//! logs at trace level, returns as an error, prints with `Debug`, or reports as status — and
//! nothing `mcph` prints, verbose at trace level — contains a secret.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use mcp_client::config::parse_with_env;
use mcp_client::{ClientOptions, McpClient};
use serde_json::json;

const ENV_SECRET: &str = "envsecret7f3a";
const HEADER_SECRET: &str = "hdrsecret91bc";
const BEARER_SECRET: &str = "bearersecret44de";
const WRONG_BEARER_SECRET: &str = "wrongbearer22aa";
const QUERY_SECRET: &str = "qsecret0d2e";
const USERINFO_SECRET: &str = "pwsecret5a6f";
const EXPANDED_SECRET: &str = "expandedsecret9c1d";

const SECRETS: &[&str] = &[
    ENV_SECRET,
    HEADER_SECRET,
    BEARER_SECRET,
    WRONG_BEARER_SECRET,
    QUERY_SECRET,
    USERINFO_SECRET,
    EXPANDED_SECRET,
];

fn assert_no_secret(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} shows {secret}:\n{text}");
    }
}

/// The configuration: two good servers, three failing ones, secrets everywhere.
fn config(http: &HttpFixtureProcess) -> serde_json::Value {
    let fixture = mcp_testkit::fixture_server_bin()
        .to_string_lossy()
        .into_owned();
    let base = http.url.trim_end_matches('/');
    json!({"mcpServers": {
        "local": {"command": fixture, "env": {"API_TOKEN": ENV_SECRET, "OTHER": "${EXPANDED}"}},
        "broken": {"command": fixture, "args": ["--exit-on-start", "3"], "env": {"API_TOKEN": ENV_SECRET}},
        "remote": {"type": "http", "url": format!("{base}/mcp?api_key={QUERY_SECRET}"),
                   "headers": {"Authorization": format!("Bearer {BEARER_SECRET}"), "X-Api-Key": HEADER_SECRET}},
        "denied": {"type": "http", "url": format!("{base}/mcp?api_key={QUERY_SECRET}"),
                   "headers": {"Authorization": format!("Bearer {WRONG_BEARER_SECRET}"), "X-Api-Key": "${EXPANDED}"}},
        "refused": {"type": "http",
                    "url": format!("http://user:{USERINFO_SECRET}@127.0.0.1:1/mcp?token={QUERY_SECRET}"),
                    "headers": {"X-Api-Key": HEADER_SECRET}},
        "legacy": {"type": "sse", "url": format!("{base}/sse?api_key={QUERY_SECRET}"),
                   "headers": {"Authorization": format!("Bearer {WRONG_BEARER_SECRET}")},
                   "startup_timeout_sec": 5}
    }})
}

/// Collects everything the fmt subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn no_secret_reaches_logs_errors_debug_output_or_mcph_output() {
    let http = HttpFixtureProcess::start(&["--http-bearer", BEARER_SECRET]);
    let config_json = config(&http);

    // The library, with every tracing line at trace level captured.
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut seen = Vec::new();
    runtime.block_on(async {
        let env = |name: &str| (name == "EXPANDED").then(|| EXPANDED_SECRET.to_owned());
        let config = parse_with_env(
            &config_json.to_string(),
            std::path::Path::new("secrets.json"),
            &env,
        )
        .expect("valid config");
        seen.push(format!("{config:?}"));
        seen.push(format!("{config:#?}"));
        let client =
            tokio::time::timeout(DEADLINE, McpClient::start(config, ClientOptions::default()))
                .await
                .expect("start is bounded");
        let reports = client.servers();
        let mut labels: Vec<(&str, &str)> = reports
            .iter()
            .map(|r| (r.name.as_str(), r.status.label()))
            .collect();
        labels.sort();
        assert_eq!(
            labels,
            [
                ("broken", "unavailable"),
                ("denied", "needs-auth"),
                ("legacy", "needs-auth"),
                ("local", "ready"),
                ("refused", "unavailable"),
                ("remote", "ready"),
            ],
            "{reports:#?}"
        );
        seen.push(format!("{reports:?}"));
        seen.push(format!("{client:?}"));
        for tool in ["local__echo", "remote__echo"] {
            let r = client
                .call_tool(tool, Some(json!({"text": "fine"})))
                .await
                .unwrap_or_else(|e| panic!("{tool}: {e}"));
            assert_eq!(r.text(), "fine");
        }
        for tool in [
            "broken__echo",
            "denied__echo",
            "refused__echo",
            "nope__echo",
        ] {
            let e = client
                .call_tool(tool, Some(json!({"text": "x"})))
                .await
                .expect_err("a failing server");
            seen.push(format!("{e} | {e:?} | {}", e.agent_message()));
        }
        let session = client.session("remote").expect("ready");
        seen.push(format!("{session:?}"));
        let resources = client.resources().await;
        seen.push(format!("{:?}", resources.errors));
        client.shutdown().await;
    });
    drop(runtime);
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "the capture works"
    );
    assert_no_secret("the library's trace log", &log);
    for text in &seen {
        assert_no_secret("the library's output", text);
    }

    // mcph, verbose at trace level, every command, both output forms.
    let env = Env::new();
    env.cwd.write(".mcp.json", &config_json.to_string());
    let mut printed = String::new();
    for args in [
        &["servers"][..],
        &["servers", "--json"],
        &["tools"],
        &["tools", "--json"],
        &["call", "local__echo", r#"{"text":"fine"}"#],
        &["call", "remote__echo", r#"{"text":"fine"}"#],
        &["call", "broken__echo", r#"{"text":"x"}"#],
        &["call", "denied__echo", r#"{"text":"x"}"#],
        &["call", "refused__echo", r#"{"text":"x"}"#],
        &["call", "--json", "denied__echo", r#"{"text":"x"}"#],
        &["resources"],
    ] {
        let mut verbose = vec!["--verbose"];
        verbose.extend_from_slice(args);
        let run = RunningProcess::spawn(
            "mcph --verbose",
            env.command(&verbose)
                .env("RUST_LOG", "trace")
                .env("EXPANDED", EXPANDED_SECRET),
        )
        .finish(DEADLINE);
        printed.push_str(&format!(
            "$ mcph {}\n{}\n{}\n",
            verbose.join(" "),
            run.stdout,
            run.stderr
        ));
    }
    assert!(
        printed.contains("local__echo") && printed.contains("TRACE"),
        "mcph ran verbosely:\n{printed}"
    );
    assert!(printed.contains("needs-auth"), "{printed}");
    assert_no_secret("mcph's output", &printed);
    drop(http);
}
