//! `mcph tools --llm` and `mcph tools --watch` against fixture servers (this very binary run as
//! `mcph __fixture-server`).

mod common;

use common::*;
use serde_json::{json, Value};

fn churning_config(env: &Env) {
    let config = json!({"mcpServers": {"fx": {
        "command": MCPH,
        "args": ["__fixture-server", "--churn-every-ms", "200"]
    }}});
    env.cwd.write(".mcp.json", &config.to_string());
}

#[test]
fn tools_llm_prints_the_same_bytes_every_time() {
    let env = Env::new();
    let first = env.run(&["tools", "--llm"]);
    first.assert_code(0);
    let second = env.run(&["tools", "--llm", "anthropic"]);
    second.assert_code(0);
    assert_eq!(first.stdout, second.stdout, "the same bytes in two runs");
    assert!(first.stdout.ends_with("]\n") && first.stdout.lines().count() == 1);
    let tools: Vec<Value> = serde_json::from_str(&first.stdout).unwrap();
    assert!(tools.len() > 5);
    assert_eq!(tools[0]["name"], "fixture__echo", "the server's order");
    assert!(tools
        .iter()
        .all(|t| t["input_schema"].is_object() && t["description"].is_string()));
    let openai = env.run(&["tools", "--llm", "openai"]);
    openai.assert_code(0);
    let tools: Vec<Value> = serde_json::from_str(&openai.stdout).unwrap();
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "fixture__echo");
    let bad = env.run(&["tools", "--llm", "nope"]);
    bad.assert_code(2);
    assert!(
        bad.stderr.contains("anthropic, openai or mcp"),
        "{}",
        bad.stderr
    );
}

#[test]
fn tools_watch_shows_changes_as_they_happen() {
    let env = Env::new();
    churning_config(&env);
    let run = env.run(&["tools", "--watch", "--count", "2"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("fx__echo"),
        "the list first: {}",
        run.stdout
    );
    let diffs: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("[+")).collect();
    assert_eq!(diffs.len(), 2, "{}", run.stdout);
    assert!(diffs[0].ends_with("+ fx__dynamic_tool"), "{}", diffs[0]);
    assert!(diffs[1].ends_with("- fx__dynamic_tool"), "{}", diffs[1]);

    let run = env.run(&["tools", "--watch", "--count", "2", "--json"]);
    run.assert_code(0);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            json!({"added": ["fx__dynamic_tool"], "removed": [], "changed": []}),
            json!({"added": [], "removed": ["fx__dynamic_tool"], "changed": []}),
        ]
    );
}
