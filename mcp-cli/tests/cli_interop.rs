//! `mcph` against servers nobody here wrote — server-everything (npm) and a server on the
//! official Python SDK (PyPI) — through temporary config files in each format. The servers are
//! installed by `cargo xtask interop-setup`.

mod common;

use common::*;
use mcp_testkit::process::{interop_component, workspace_root};
use serde_json::json;

fn everything_command() -> String {
    interop_component("node")
        .join("node_modules/.bin/mcp-server-everything")
        .to_string_lossy()
        .into_owned()
}

fn python_command() -> (String, String) {
    (
        interop_component("py")
            .join("bin/python")
            .to_string_lossy()
            .into_owned(),
        workspace_root()
            .join("interop/python_server.py")
            .to_string_lossy()
            .into_owned(),
    )
}

#[test]
fn claude_config_with_both_real_servers() {
    let env = Env::new();
    let (python, script) = python_command();
    let config = json!({"mcpServers": {
        "everything": {"command": everything_command(), "args": ["stdio"]},
        "python": {"command": python, "args": [script]}
    }});
    let path = env.cwd.write("claude.json", &config.to_string());
    let path = path.to_str().unwrap();

    let run = env.run(&["--config", path, "servers", "--json"]);
    run.assert_code(0);
    let servers = run.json();
    let by_name = |name: &str| {
        servers
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("everything")["status"], "ready");
    assert_eq!(
        by_name("everything")["server"]["name"],
        "mcp-servers/everything"
    );
    assert_eq!(by_name("python")["status"], "ready");
    assert_eq!(by_name("python")["server"]["name"], "python-interop-server");

    let run = env.run(&["--config", path, "tools"]);
    run.assert_code(0);
    for name in [
        "everything__echo",
        "everything__get-sum",
        "python__add",
        "python__long_task",
    ] {
        assert!(run.stdout.contains(name), "{name} missing:\n{}", run.stdout);
    }

    let run = env.run(&[
        "--config",
        path,
        "call",
        "everything__get-sum",
        "--arg",
        "a=1",
        "--arg",
        "b=2",
    ]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "The sum of 1 and 2 is 3.");
    let run = env.run(&[
        "--config",
        path,
        "call",
        "python__add",
        r#"{"a": 20, "b": 22}"#,
        "--json",
    ]);
    run.assert_code(0);
    assert_eq!(run.json()["structuredContent"], json!({"result": 42}));
    let run = env.run(&[
        "--config",
        path,
        "call",
        "python__long_task",
        "--arg",
        "steps=2",
    ]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "finished 2 steps");

    let run = env.run(&["--config", path, "read", "data://greeting"]);
    run.assert_code(0);
    assert!(run.stdout.contains("hello from python"), "{}", run.stdout);
    let run = env.run(&[
        "--config",
        path,
        "prompt",
        "everything__args-prompt",
        "--arg",
        "city=Paris",
        "--arg",
        "state=TX",
    ]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("What's weather in Paris, TX?"),
        "{}",
        run.stdout
    );
}

#[test]
fn codex_toml_with_the_python_server() {
    let env = Env::new();
    let (python, script) = python_command();
    let config = format!(
        "model = \"o3\"\n\n[mcp_servers.py]\ncommand = {python:?}\nargs = [{script:?}]\nstartup_timeout_sec = 30\ndisabled_tools = [\"add_tool\"]\n"
    );
    let path = env.cwd.write("config.toml", &config);
    let run = env.run(&["--config", path.to_str().unwrap(), "tools", "--json"]);
    run.assert_code(0);
    let names: Vec<String> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "py__add",
            "py__echo",
            "py__long_task",
            "py__list_roots",
            "py__greet"
        ]
    );
    let run = env.run(&[
        "--config",
        path.to_str().unwrap(),
        "call",
        "py__echo",
        "--arg",
        "text=from codex",
    ]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "from codex");
}

#[test]
fn vscode_config_with_server_everything() {
    let env = Env::new();
    std::fs::create_dir_all(env.cwd.path().join(".vscode")).unwrap();
    let config = json!({"servers": {"everything": {"type": "stdio", "command": everything_command(), "args": ["stdio"], "cwd": "${workspaceFolder}"}}});
    let path = env.cwd.write(".vscode/mcp.json", &config.to_string());
    let run = env.run(&[
        "--config",
        path.to_str().unwrap(),
        "call",
        "everything__echo",
        "--arg",
        "message=from vscode",
    ]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "Echo: from vscode");
    let run = env.run(&["--config", path.to_str().unwrap(), "resources", "--json"]);
    run.assert_code(0);
    let text = run.stdout;
    assert!(
        text.contains("demo://resource/static/document/architecture.md"),
        "{text}"
    );
}
