//! `mcph` and servers with several endpoints: `mcph servers` shows one line per endpoint
//! (human) and an `endpoints` array (JSON), `--region` picks the region, `mcph call` is served
//! by the chosen endpoint, `mcph stats` shows the endpoints. Each "region" is the fixture over
//! HTTP on its own loopback port.

mod common;

use common::{Env, HttpFixtureProcess};
use serde_json::{json, Value};

/// A config with server `search` over the two fixtures (eu first), the file's region `us-east`.
fn write_config(env: &Env, eu: &HttpFixtureProcess, us: &HttpFixtureProcess) {
    let config = json!({
        "region": "us-east",
        "mcpServers": {
            "search": {
                "type": "http",
                "endpoints": [
                    { "url": format!("{}/mcp?token=secret-query", eu.url), "region": "eu-west" },
                    { "url": format!("{}/mcp", us.url), "region": "us-east" }
                ]
            }
        }
    });
    env.cwd.write(".mcp.json", &config.to_string());
}

fn endpoint(servers: &Value, index: usize) -> &Value {
    &servers[0]["endpoints"][index]
}

#[test]
fn servers_shows_each_endpoint_and_region_picks_where_calls_go() {
    let eu = HttpFixtureProcess::start(&["--instance", "eu"]);
    let us = HttpFixtureProcess::start(&["--instance", "us"]);
    let env = Env::new();
    write_config(&env, &eu, &us);

    // The file's region: us-east.
    let run = env.run(&["servers", "--json"]);
    run.assert_code(0);
    let servers = run.json();
    assert_eq!(servers[0]["status"], "ready", "{servers}");
    assert_eq!(endpoint(&servers, 1)["state"], "active");
    assert_eq!(endpoint(&servers, 1)["active"], true);
    assert_eq!(endpoint(&servers, 1)["region"], "us-east");
    assert_eq!(endpoint(&servers, 0)["active"], false);
    assert_eq!(endpoint(&servers, 0)["region"], "eu-west");
    for key in ["url", "region", "state", "active", "latencyMs", "breaker"] {
        assert!(
            endpoint(&servers, 0).get(key).is_some(),
            "{key} in {servers}"
        );
    }
    // URLs are shown without their query.
    assert!(!run.stdout.contains("secret-query"), "{}", run.stdout);
    assert_eq!(endpoint(&servers, 0)["breaker"]["state"], "closed");
    let run = env.run(&["call", "search__instance"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "us");

    // --region wins over the file.
    let run = env.run(&["--region", "eu-west", "call", "search__instance"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "eu");
    let run = env.run(&["servers", "--region", "eu-west"]);
    run.assert_code(0);
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("endpoint "))
        .collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert!(
        lines[0].contains("eu-west") && lines[0].contains("active"),
        "{lines:?}"
    );
    assert!(lines[1].contains("us-east"), "{lines:?}");
    assert!(!run.stdout.contains("secret-query"));

    // A bad --region is a usage error.
    env.run(&["--region", "", "servers"]).assert_code(2);
}

#[test]
fn stats_shows_the_endpoints_and_a_dead_one_is_down() {
    let eu = HttpFixtureProcess::start(&["--instance", "eu"]);
    let us = HttpFixtureProcess::start(&["--instance", "us"]);
    let env = Env::new();
    write_config(&env, &eu, &us);
    let run = env.run(&["stats", "--once", "--warmup", "3"]);
    run.assert_code(0);
    assert!(run.stdout.contains("ENDPOINT"), "{}", run.stdout);
    assert!(run.stdout.contains("eu-west") && run.stdout.contains("us-east"));
    let run = env.run(&["stats", "--once", "--warmup", "3", "--json"]);
    run.assert_code(0);
    let snapshot: Value = serde_json::from_str(run.stdout.lines().next().unwrap()).unwrap();
    let server = &snapshot["servers"][0];
    assert_eq!(server["region"], "us-east", "{server}");
    assert_eq!(server["endpoints"].as_array().map(Vec::len), Some(2));
    assert!(
        server["endpoints"][1]["calls"].as_u64().unwrap() >= 3,
        "{server}"
    );

    // The file's own endpoint dies: the other one serves, and it shows down.
    drop(us);
    let run = env.run(&["call", "search__instance"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "eu");
    let run = env.run(&["servers", "--json"]);
    let servers = run.json();
    assert_eq!(endpoint(&servers, 1)["state"], "down", "{servers}");
    assert!(endpoint(&servers, 1)["reason"].is_string());
    assert_eq!(endpoint(&servers, 0)["state"], "active");
}
