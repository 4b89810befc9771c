//! Loads every sample file under `tests/configs/` and checks the full parsed structure; the bad
//! ones must name the file, the line and column, the server and the field and say what was
//! expected — and never echo a secret.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_client::config::{
    load_default_with_env, load_with_env, parse_with_env, AddressPolicySetting, BreakerSettings,
    ClientConfig, ConfigError, ConfigErrorKind, DpopSetting, EndpointConfig, HarnessSettings,
    PoolSettings, RetrySettings, ServerConfig, TransportConfig, DEFAULT_FAILBACK_AFTER,
};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/configs")
        .join(name)
}

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn load(name: &str, pairs: &[(&str, &str)]) -> ClientConfig {
    let env = env_of(pairs);
    match load_with_env(&sample(name), &env) {
        Ok(config) => config,
        Err(err) => panic!("{name}: {err}"),
    }
}

fn load_err(name: &str, pairs: &[(&str, &str)]) -> ConfigError {
    let env = env_of(pairs);
    match load_with_env(&sample(name), &env) {
        Ok(config) => panic!("{name} loaded: {config:?}"),
        Err(err) => err,
    }
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn stdio(command: &str, args: &[&str], env: &[(&str, &str)], cwd: Option<&str>) -> TransportConfig {
    TransportConfig::Stdio {
        command: command.to_owned(),
        args: strings(args),
        env: map(env),
        cwd: cwd.map(PathBuf::from),
    }
}

fn names(config: &ClientConfig) -> Vec<&str> {
    config.servers.iter().map(|s| s.name.as_str()).collect()
}

/// Asserts the error's location: the file, the 1-based line and column (`None`: an error about
/// the whole file), the server and the field, each as a property and in the text, which reads
/// `<file>: line L, column C: server "s": field `f`: <message>`.
fn assert_located(
    err: &ConfigError,
    file: &str,
    at: Option<(usize, usize)>,
    server: Option<&str>,
    field: Option<&str>,
) {
    let text = err.to_string();
    assert!(err.file().ends_with(file), "{text}");
    assert_eq!(err.position(), at, "{text}");
    assert_eq!(err.server(), server, "{text}");
    assert_eq!(err.field(), field, "{text}");
    let mut location = sample(file).display().to_string();
    if let Some((line, column)) = at {
        location += &format!(": line {line}, column {column}");
    }
    if let Some(server) = server {
        location += &format!(": server \"{server}\"");
    }
    if let Some(field) = field {
        location += &format!(": field `{field}`");
    }
    assert_eq!(text, format!("{location}: {}", err.message()));
}

// ---------------------------------------------------------------- good files

#[test]
fn claude_desktop() {
    let config = load(
        "claude_desktop.json",
        &[("HOME", "/home/me"), ("GITHUB_TOKEN", "ghp_envsecret0100")],
    );
    assert_eq!(config.source, Some(sample("claude_desktop.json")));
    let expected = vec![
        ServerConfig::new(
            "filesystem",
            stdio(
                "npx",
                &[
                    "-y",
                    "@modelcontextprotocol/server-filesystem",
                    "/Users/me/Desktop",
                    "/home/me/Downloads",
                ],
                &[],
                None,
            ),
        ),
        ServerConfig::new(
            "github",
            stdio(
                "docker",
                &[
                    "run",
                    "-i",
                    "--rm",
                    "-e",
                    "GITHUB_PERSONAL_ACCESS_TOKEN",
                    "ghcr.io/github/github-mcp-server",
                ],
                &[("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_envsecret0100")],
                None,
            ),
        ),
        ServerConfig {
            enabled: false,
            ..ServerConfig::new(
                "sqlite",
                stdio(
                    "uvx",
                    &["mcp-server-sqlite", "--db-path", "/tmp/test.db"],
                    &[],
                    None,
                ),
            )
        },
    ];
    assert_eq!(config.servers, expected);
    assert_eq!(
        config
            .enabled_servers()
            .map(|s| &*s.name)
            .collect::<Vec<_>>(),
        ["filesystem", "github"]
    );
    // Defaults are the seed's.
    let github = config.server("github").unwrap();
    assert_eq!(github.startup_timeout, Duration::from_secs(10));
    assert_eq!(github.tool_timeout, Duration::from_secs(30));
    assert_eq!(github.settings, HarnessSettings::default());
    assert_eq!(github.enabled_tools, None);
    assert!(github.disabled_tools.is_empty());

    let debug = format!("{config:?}");
    assert!(!debug.contains("ghp_envsecret0100"), "{debug}");
    assert!(debug.contains("\"GITHUB_PERSONAL_ACCESS_TOKEN\": \"<redacted>\""));
}

#[test]
fn claude_code_with_remote_transports_defaults_and_extras() {
    let config = load(
        "claude_code.mcp.json",
        &[("API_KEY", "sk-envsecret0200"), ("MODE", "")],
    );
    assert_eq!(
        names(&config),
        ["local", "api", "legacy", "auto", "streamable"]
    );

    let local = &config.servers[0];
    assert_eq!(
        local.transport,
        stdio(
            "/usr/local/bin/mcp-server",
            &["--port", "3000", "$LITERAL", "cost: 5$"],
            &[("API_KEY", "sk-envsecret0200"), ("MODE", "fast")],
            Some("/srv/project"),
        )
    );
    assert!(local.enabled);
    assert_eq!(
        local.enabled_tools,
        Some(strings(&["read", "write", "search"]))
    );
    assert_eq!(local.disabled_tools, strings(&["write"]));
    assert!(local.allows_tool("read") && !local.allows_tool("write") && !local.allows_tool("x"));
    assert_eq!(local.startup_timeout, Duration::from_millis(2500));
    assert_eq!(local.tool_timeout, Duration::from_secs(120));
    assert_eq!(
        local.settings,
        HarnessSettings {
            idle_timeout: Duration::from_secs(600),
            pool: PoolSettings {
                min: 1,
                max: 4,
                configured: true,
            },
            retry: RetrySettings {
                max_retries: 3,
                max_wait: Duration::from_secs(10),
                jitter: 0.1,
                configured: true,
            },
            breaker: BreakerSettings {
                failure_threshold: 3,
                window: Duration::from_secs(30),
                cooldown: Duration::from_secs(15),
                half_open_max_requests: 1,
                per_tool: false,
            },
            ..HarnessSettings::default()
        }
    );

    assert_eq!(
        config.servers[1],
        ServerConfig::new(
            "api",
            TransportConfig::Http {
                url: "https://api.example.com/mcp".into(),
                headers: map(&[("Authorization", "Bearer sk-envsecret0200")]),
            }
        )
    );
    assert_eq!(
        config.servers[2].transport,
        TransportConfig::Sse {
            url: "https://legacy.example.com/sse".into(),
            headers: map(&[("X-Api-Key", "none")]),
        }
    );
    assert_eq!(
        config.servers[3].transport,
        TransportConfig::Url {
            url: "http://localhost:8080/mcp".into(),
            headers: BTreeMap::new(),
        }
    );
    assert_eq!(config.servers[3].transport.kind(), "url");
    assert_eq!(config.servers[4].transport.kind(), "http");
    assert!(!config.servers[4].enabled);

    let kinds: Vec<_> = config.servers.iter().map(|s| s.transport.kind()).collect();
    assert_eq!(kinds, ["stdio", "http", "sse", "url", "http"]);

    let debug = format!("{config:#?}");
    assert!(!debug.contains("sk-envsecret0200"), "{debug}");
    assert!(
        debug.contains("\"Authorization\": \"<redacted>\""),
        "{debug}"
    );
}

#[test]
fn claude_code_variables_override_defaults() {
    let config = load(
        "claude_code.mcp.json",
        &[
            ("API_KEY", "k"),
            ("MCP_BIN", "/opt/bin/server"),
            ("PORT", "9999"),
            ("PROJECT_DIR", "/work/p"),
            ("API_BASE_URL", "http://127.0.0.1:7000"),
            ("LEGACY_KEY", "lk"),
        ],
    );
    assert_eq!(
        config.servers[0].transport,
        stdio(
            "/opt/bin/server",
            &["--port", "9999", "$LITERAL", "cost: 5$"],
            &[("API_KEY", "k"), ("MODE", "fast")],
            Some("/work/p"),
        )
    );
    assert_eq!(
        config.servers[1].transport.url(),
        Some("http://127.0.0.1:7000/mcp")
    );
    assert_eq!(
        config.servers[2].transport,
        TransportConfig::Sse {
            url: "https://legacy.example.com/sse".into(),
            headers: map(&[("X-Api-Key", "lk")]),
        }
    );
}

#[test]
fn cursor_ignores_unknown_fields() {
    let config = load("cursor.json", &[]);
    assert_eq!(
        config.servers,
        vec![
            ServerConfig::new(
                "web-search",
                stdio(
                    "node",
                    &["/opt/mcp/web-search/index.js"],
                    &[("SEARCH_KEY", "sk-cursor-literal-secret")],
                    None,
                ),
            ),
            ServerConfig::new(
                "remote",
                TransportConfig::Url {
                    url: "https://mcp.example.com/sse".into(),
                    headers: map(&[("Authorization", "Bearer anonymous")]),
                },
            ),
        ]
    );
    assert!(!format!("{config:?}").contains("sk-cursor-literal-secret"));
}

#[test]
fn vscode_workspace_variables() {
    let config = load(
        "vscode_ws/.vscode/mcp.json",
        &[("HOME", "/home/dev"), ("VS_TOKEN", "vs-envsecret0300")],
    );
    let ws = sample("vscode_ws");
    let ws = ws.to_string_lossy();
    assert_eq!(names(&config), ["fs", "remote", "events"]);
    assert_eq!(
        config.servers[0],
        ServerConfig::new(
            "fs",
            stdio(
                "npx",
                &["-y", "@modelcontextprotocol/server-filesystem", &ws],
                &[("HOME_DIR", "/home/dev"), ("TOKEN", "vs-envsecret0300")],
                Some(&format!("{ws}/tools")),
            ),
        )
    );
    assert_eq!(
        config.servers[1],
        ServerConfig::new(
            "remote",
            TransportConfig::Http {
                url: "https://api.example.com/mcp".into(),
                headers: map(&[("Authorization", "Bearer vs-envsecret0300")]),
            },
        )
    );
    assert_eq!(
        config.servers[2],
        ServerConfig {
            tool_timeout: Duration::from_secs(5),
            ..ServerConfig::new(
                "events",
                TransportConfig::Sse {
                    url: "http://localhost:9000/sse".into(),
                    headers: BTreeMap::new(),
                },
            )
        }
    );
    assert!(!format!("{config:?}").contains("vs-envsecret0300"));
}

#[test]
fn vscode_unset_env_variable_is_an_error() {
    let err = load_err("vscode_ws/.vscode/mcp.json", &[("HOME", "/home/dev")]);
    assert_eq!(err.kind(), ConfigErrorKind::UnsetVariable);
    // JSONC: the comment and the trailing commas above do not move the position.
    assert_located(
        &err,
        "vscode_ws/.vscode/mcp.json",
        Some((12, 52)),
        Some("fs"),
        Some("env.TOKEN"),
    );
    assert!(err.message().contains("VS_TOKEN is not set"), "{err}");
}

#[test]
fn codex_toml() {
    let config = load(
        "codex.toml",
        &[
            ("DOCS_TOKEN", "docs-envsecret0400"),
            ("LINEAR_TOKEN", "lin-envsecret0500"),
        ],
    );
    // File order, not alphabetical.
    assert_eq!(names(&config), ["docs", "linear", "archived"]);
    assert_eq!(
        config.servers[0],
        ServerConfig {
            enabled_tools: Some(strings(&["search", "fetch"])),
            disabled_tools: strings(&["fetch"]),
            startup_timeout: Duration::from_secs(20),
            tool_timeout: Duration::from_millis(45_500),
            ..ServerConfig::new(
                "docs",
                stdio(
                    "docs-server",
                    &["--root", "/srv/docs"],
                    &[("LOG_LEVEL", "debug"), ("DOCS_TOKEN", "docs-envsecret0400")],
                    Some("/srv"),
                ),
            )
        }
    );
    assert_eq!(
        config.servers[1],
        ServerConfig {
            startup_timeout: Duration::from_secs(15),
            ..ServerConfig::new(
                "linear",
                TransportConfig::Http {
                    url: "https://mcp.linear.app/mcp".into(),
                    headers: map(&[
                        ("X-Team", "core"),
                        ("Authorization", "Bearer lin-envsecret0500"),
                    ]),
                },
            )
        }
    );
    assert_eq!(
        config.servers[2],
        ServerConfig {
            enabled: false,
            settings: HarnessSettings {
                pool: PoolSettings {
                    min: 1,
                    max: 1,
                    configured: true,
                },
                ..HarnessSettings::default()
            },
            ..ServerConfig::new("archived", stdio("old-server", &[], &[], None))
        }
    );
    let debug = format!("{config:?}");
    assert!(!debug.contains("docs-envsecret0400") && !debug.contains("lin-envsecret0500"));
}

#[test]
fn load_default_loads_the_first_existing_file() {
    let cwd = sample("vscode_ws");
    // No `.mcp.json` in cwd and no config dir: nothing.
    let none = env_of(&[]);
    assert_eq!(load_default_with_env(&cwd, &none).unwrap(), None);
    // A config dir whose mcph/config.toml exists (config.json does not).
    let root = std::env::temp_dir().join(format!("mcp-client-config-test-{}", std::process::id()));
    let dir = root.join("mcph");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[mcp_servers.t]\ncommand = \"t-server\"\n",
    )
    .unwrap();
    let xdg = root.to_string_lossy().into_owned();
    let env = env_of(&[("XDG_CONFIG_HOME", &xdg)]);
    let found = load_default_with_env(&cwd, &env).unwrap().unwrap();
    assert_eq!(names(&found), ["t"]);
    assert_eq!(found.source, Some(dir.join("config.toml")));
    std::fs::remove_dir_all(&root).unwrap();
}

/// Harness code written against the facade's names before "one name per idea" (README,
/// "Moved in the one-small-core split") still builds and behaves the same.
#[test]
#[allow(deprecated)]
fn the_facades_old_names_still_work() {
    let cwd = sample("vscode_ws");
    let none = env_of(&[]);
    assert_eq!(
        mcp_client::config::discover_with_env(&cwd, &none).unwrap(),
        load_default_with_env(&cwd, &none).unwrap()
    );
    let gathered: mcp_client::Gathered<Vec<u8>> = mcp_client::FromAllServers {
        items: vec![1],
        errors: Vec::new(),
    };
    assert_eq!(gathered.items, [1]);
}

// ---------------------------------------------------------------- bad files

#[test]
fn json_syntax_error_has_line_and_column() {
    let err = load_err("bad_syntax.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::Syntax);
    assert_eq!(err.position(), Some((5, 7)));
    let text = err.to_string();
    assert!(
        text.contains("bad_syntax.json: line 5, column 7: invalid JSON: expected"),
        "{text}"
    );
}

#[test]
fn toml_syntax_error_has_line_and_column() {
    let err = load_err("bad_syntax.toml", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::Syntax);
    let (line, _) = err.position().expect("a position");
    assert!(line >= 3, "{err}");
    assert!(err.to_string().contains("invalid TOML"), "{err}");
    assert!(!err.to_string().contains('\n'), "{err}");
}

#[test]
fn wrong_type_names_the_element() {
    let err = load_err("bad_wrong_type.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::WrongType);
    assert_located(
        &err,
        "bad_wrong_type.json",
        Some((5, 61)),
        Some("github"),
        Some("args[2]"),
    );
    assert_eq!(err.message(), "expected a string, found a number");
}

#[test]
fn missing_command() {
    let err = load_err("bad_missing_command.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::Missing);
    // An absent field: the server's key.
    assert_located(
        &err,
        "bad_missing_command.json",
        Some((3, 5)),
        Some("broken"),
        Some("command"),
    );
    assert!(err.message().contains("needs `command`"), "{err}");
}

#[test]
fn bad_url_does_not_echo_the_url() {
    let err = load_err("bad_url.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::Invalid);
    assert_located(
        &err,
        "bad_url.json",
        Some((5, 14)),
        Some("remote"),
        Some("url"),
    );
    assert_eq!(
        err.message(),
        "expected an http:// or https:// URL with a host, found a URL with scheme `ftp`"
    );
    let text = err.to_string();
    assert!(!text.contains("urlsecret0002") && !text.contains("hdrsecret0003"));
}

#[test]
fn unset_variable_reads_as_documented() {
    let err = load_err("bad_unset_variable.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::UnsetVariable);
    assert_located(
        &err,
        "bad_unset_variable.json",
        Some((12, 25)),
        Some("github"),
        Some("env.GITHUB_TOKEN"),
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}: line 12, column 25: server \"github\": field `env.GITHUB_TOKEN`: environment \
             variable GITHUB_TOKEN is not set (write ${{GITHUB_TOKEN:-default}} to give a default)",
            sample("bad_unset_variable.json").display()
        )
    );
    assert!(!err.to_string().contains("envsecret0004"));
}

#[test]
fn bad_pool() {
    let err = load_err("bad_pool.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::Invalid);
    assert_located(
        &err,
        "bad_pool.json",
        Some((5, 15)),
        Some("busy"),
        Some("pool"),
    );
    assert_eq!(
        err.message(),
        "expected pool.min ≤ pool.max, found min 5 > max 2"
    );
}

#[test]
fn vscode_input_variable() {
    let err = load_err("bad_input_variable.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::Unsupported);
    assert_located(
        &err,
        "bad_input_variable.json",
        Some((7, 37)),
        Some("remote"),
        Some("headers.Authorization"),
    );
    assert_eq!(
        err.message(),
        "VS Code input variables need an interactive prompt; set the value directly or use ${env:VAR}"
    );
}

#[test]
fn vscode_env_file() {
    let err = load_err("bad_env_file.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::Unsupported);
    assert_located(
        &err,
        "bad_env_file.json",
        Some((6, 18)),
        Some("local"),
        Some("envFile"),
    );
}

#[test]
fn unknown_format_says_which_keys_were_expected() {
    let err = load_err("bad_unknown_format.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::UnknownFormat);
    // About the whole file: no line.
    assert_located(&err, "bad_unknown_format.json", None, None, None);
    let text = err.to_string();
    assert!(
        text.contains("`mcpServers`") && text.contains("`servers`"),
        "{text}"
    );
    assert!(text.contains("found keys `context_servers`"), "{text}");
}

#[test]
fn codex_bearer_token_variable_must_be_set() {
    let err = load_err("bad_codex_bearer.toml", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::UnsetVariable);
    assert_located(
        &err,
        "bad_codex_bearer.toml",
        Some((3, 24)),
        Some("linear"),
        Some("bearer_token_env_var"),
    );
    assert!(err.message().contains("LINEAR_TOKEN is not set"), "{err}");
}

#[test]
fn missing_file_is_an_io_error() {
    let err = load_err("does_not_exist.json", &[]);
    assert_eq!(err.kind(), ConfigErrorKind::Io);
    assert!(err
        .to_string()
        .contains("does_not_exist.json: cannot read the file"));
}

// ---------------------------------------------------------------- inline cases

fn parse_json(text: &str, pairs: &[(&str, &str)]) -> Result<ClientConfig, ConfigError> {
    let env = env_of(pairs);
    parse_with_env(text, Path::new("inline.json"), &env)
}

fn parse_err(text: &str) -> ConfigError {
    parse_json(text, &[]).expect_err("an error")
}

#[test]
fn secrets_never_appear_in_errors() {
    let cases = [
        // A non-string env value next to a secret.
        r#"{"mcpServers": {"s": {"command": "x", "env": {"A": "sekrit-0601", "B": 1}}}}"#,
        // An unterminated reference after a token in a header.
        r#"{"mcpServers": {"s": {"url": "https://h/", "headers": {"Authorization": "Bearer sekrit-0602 ${X"}}}}"#,
        // A bad variable name.
        r#"{"mcpServers": {"s": {"command": "x", "env": {"T": "sekrit-0603${not valid}"}}}}"#,
        // headers of the wrong shape.
        r#"{"mcpServers": {"s": {"url": "https://h/", "headers": ["sekrit-0604"]}}}"#,
        // A bad URL carrying a token.
        r#"{"mcpServers": {"s": {"url": "sekrit-0605.example.com/?t=1"}}}"#,
    ];
    for text in cases {
        let err = parse_err(text);
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("sekrit"), "{shown}");
        assert_eq!(err.server(), Some("s"), "{shown}");
        assert!(err.position().is_some(), "{shown}");
    }
    let err = parse_err(cases[0]);
    assert_eq!(err.field(), Some("env.B"));
    assert_eq!(err.message(), "expected a string, found a number");
    let err = parse_err(cases[1]);
    assert_eq!(err.kind(), ConfigErrorKind::Expansion);
    assert_eq!(err.field(), Some("headers.Authorization"));
    let err = parse_err(cases[3]);
    assert_eq!(
        err.message(),
        "expected an object of names to string values, found an array"
    );
}

#[test]
fn wrong_types_say_what_was_expected() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"command": "x", "args": 5}"#,
            "args",
            "expected an array of strings, found a number",
        ),
        (
            r#"{"command": 5}"#,
            "command",
            "expected a string, found a number",
        ),
        (
            r#"{"command": "x", "enabled_tools": "a"}"#,
            "enabled_tools",
            "expected an array of strings, found a string",
        ),
        (
            r#"{"command": "x", "disabled_tools": [true]}"#,
            "disabled_tools[0]",
            "expected a string, found a boolean",
        ),
        (
            r#"{"command": "x", "disabled": "yes"}"#,
            "disabled",
            "expected true or false, found a string",
        ),
        (
            r#"{"command": "x", "tool_timeout_sec": "30"}"#,
            "tool_timeout_sec",
            "expected a number, found a string",
        ),
        (
            r#"{"command": "x", "pool": 3}"#,
            "pool",
            "expected an object, found a number",
        ),
        (
            r#"{"command": "x", "pool": {"max": 2.5}}"#,
            "pool.max",
            "expected a whole number, found 2.5",
        ),
        (
            r#"{"command": "x", "retry": {"max_retries": -1}}"#,
            "retry.max_retries",
            "expected a whole number from 0 to 4294967295, found -1",
        ),
    ];
    for (entry, field, message) in cases {
        let err = parse_err(&format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#));
        assert_eq!(err.server(), Some("s"), "{err}");
        assert_eq!(err.field(), Some(*field), "{err}");
        assert_eq!(err.message(), *message, "{err}");
        assert!(err.position().is_some(), "{err}");
    }
    let err = parse_err(r#"{"mcpServers": {"s": "npx"}}"#);
    assert_eq!(err.field(), None);
    assert_eq!(
        err.message(),
        "expected an object describing the server, found a string"
    );
    let err = parse_err(r#"{"mcpServers": []}"#);
    assert_eq!((err.server(), err.field()), (None, Some("mcpServers")));
}

#[test]
fn value_rules() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"command": "  "}"#,
            "command",
            "expected the program to start, found an empty string",
        ),
        (
            r#"{"command": "x", "startup_timeout_sec": 0}"#,
            "startup_timeout_sec",
            "expected a number of seconds greater than 0, found 0",
        ),
        (
            r#"{"command": "x", "tool_timeout_sec": -2}"#,
            "tool_timeout_sec",
            "expected a number of seconds greater than 0, found -2",
        ),
        (
            r#"{"command": "x", "startup_timeout_sec": 1, "startup_timeout_ms": 5}"#,
            "startup_timeout_ms",
            "expected one of startup_timeout_sec and startup_timeout_ms, found both",
        ),
        (
            r#"{"command": "x", "pool": {"min": 0, "max": 0}}"#,
            "pool.max",
            "expected a number ≥ 1, found 0",
        ),
        (
            r#"{"command": "x", "retry": {"jitter": 1.5}}"#,
            "retry.jitter",
            "expected a fraction between 0 and 1, found 1.5",
        ),
        (
            r#"{"command": "x", "breaker": {"failure_threshold": 0}}"#,
            "breaker.failure_threshold",
            "expected a number ≥ 1, found 0",
        ),
        (
            r#"{"command": "x", "breaker": {"cooldown_sec": 0}}"#,
            "breaker.cooldown_sec",
            "expected a number of seconds greater than 0, found 0",
        ),
        (
            r#"{"type": "", "url": "wss://h"}"#,
            "type",
            "expected a transport type (\"stdio\", \"http\", \"sse\", \"ws\", \"grpc\", …), found an empty string",
        ),
        (
            r#"{"type": "sse"}"#,
            "url",
            "a remote server needs `url` (an http://, https://, ws:// or wss:// address), found none",
        ),
        (
            r#"{"type": "ws"}"#,
            "url",
            "a remote server needs `url` (an http://, https://, ws:// or wss:// address), found none",
        ),
        (
            r#"{"type": "sse", "url": "wss://h"}"#,
            "url",
            "expected an http:// or https:// URL with a host, found a URL with scheme `wss`",
        ),
        (
            r#"{"type": "grpc", "url": "not a url"}"#,
            "url",
            "expected a URL with a host (http://, https://, ws://, wss://, …), found text without a scheme",
        ),
    ];
    for (entry, field, message) in cases {
        let err = parse_err(&format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#));
        assert_eq!(err.field(), Some(*field), "{err}");
        assert_eq!(err.message(), *message, "{err}");
        assert!(err.position().is_some(), "{err}");
    }
    let err = parse_err(r#"{"mcpServers": {"s": {"command": "x", "url": "http://h"}}}"#);
    assert_eq!(err.field(), None);
    assert!(err.message().contains("found both"), "{err}");
    let err = parse_err(r#"{"mcpServers": {"s": {"args": []}}}"#);
    assert_eq!(err.kind(), ConfigErrorKind::Missing);
    assert!(err.message().contains("found neither"), "{err}");
}

/// `type` names any registered transport: `ws` (or `websocket`), `grpc`, a downstream crate's;
/// a bare URL keeps its scheme for the registry to pick a transport by.
#[test]
fn remote_transports_by_type_and_scheme() {
    let config = parse_json(
        r#"{"mcpServers": {
            "a": {"type": "ws", "url": "wss://h/mcp", "headers": {"Authorization": "Bearer t"}},
            "b": {"type": "websocket", "url": "ws://127.0.0.1:9/mcp"},
            "c": {"type": "grpc", "url": "https://h:50051"},
            "d": {"type": "carrier-pigeon", "url": "coop://loft"},
            "e": {"url": "wss://h/mcp"}}}"#,
        &[],
    )
    .unwrap();
    let kinds: Vec<(&str, Option<&str>)> = config
        .servers
        .iter()
        .map(|s| (s.transport.kind(), s.transport.url()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("ws", Some("wss://h/mcp")),
            ("ws", Some("ws://127.0.0.1:9/mcp")),
            ("grpc", Some("https://h:50051")),
            ("carrier-pigeon", Some("coop://loft")),
            ("url", Some("wss://h/mcp")),
        ]
    );
    assert_eq!(
        config.servers[0]
            .transport
            .headers()
            .and_then(|h| h.get("Authorization"))
            .map(String::as_str),
        Some("Bearer t")
    );
    assert!(!format!("{config:?}").contains("Bearer t"));
}

#[test]
fn partial_settings_keep_the_other_defaults() {
    let config = parse_json(
        r#"{"mcpServers": {"s": {"command": "x", "pool": {"min": 12}, "retry": {"jitter": 0}, "breaker": {"window_sec": 0.5}}}}"#,
        &[],
    )
    .unwrap();
    let s = &config.servers[0].settings;
    assert_eq!(
        s.pool,
        PoolSettings {
            min: 12,
            max: 12,
            configured: true
        }
    );
    assert_eq!(
        s.retry,
        RetrySettings {
            jitter: 0.0,
            configured: true,
            ..RetrySettings::default()
        }
    );
    assert_eq!(
        s.breaker,
        BreakerSettings {
            window: Duration::from_millis(500),
            ..BreakerSettings::default()
        }
    );
    // `null` counts as absent.
    let config = parse_json(
        r#"{"mcpServers": {"s": {"command": "x", "cwd": null, "env": null}}}"#,
        &[],
    )
    .unwrap();
    assert_eq!(config.servers[0].transport, stdio("x", &[], &[], None));
}

#[test]
fn duplicate_server_names_are_rejected() {
    let err = parse_err(
        "{\"mcpServers\": {\n\"a\": {\"command\": \"x\"},\n\"a\": {\"command\": \"y\"}\n}}",
    );
    assert_eq!(err.kind(), ConfigErrorKind::Syntax);
    assert!(err.message().contains("duplicate key \"a\""), "{err}");
    assert!(err.position().is_some());
}

#[test]
fn empty_server_tables_are_fine() {
    assert!(parse_json(r#"{"mcpServers": {}}"#, &[])
        .unwrap()
        .servers
        .is_empty());
    let env = env_of(&[]);
    let codex = parse_with_env("model = \"o3\"\n", Path::new("config.toml"), &env).unwrap();
    assert!(codex.servers.is_empty());
}

#[test]
fn vscode_settings_file_with_mcp_servers() {
    let env = env_of(&[]);
    let config = parse_with_env(
        r#"{"editor.fontSize": 14, "mcp": {"servers": {"s": {"type": "http", "url": "https://h/mcp"}}}}"#,
        Path::new("/ws/.vscode/settings.json"),
        &env,
    )
    .unwrap();
    assert_eq!(names(&config), ["s"]);
    assert_eq!(config.servers[0].transport.kind(), "http");
}

#[test]
fn rate_limit_breaker_per_tool_and_probe_interval_are_read() {
    let config = parse_json(
        r#"{"mcpServers": {"s": {"command": "x",
            "rate_limit": {"calls_per_sec": 3, "wait": false},
            "breaker": {"per_tool": true},
            "probe_interval_sec": 5}}}"#,
        &[],
    )
    .unwrap();
    let s = &config.servers[0].settings;
    assert_eq!(
        s.rate_limit,
        Some(mcp_client::config::RateLimitSettings {
            calls_per_sec: 3,
            burst: 3,
            wait: false,
            scope: mcp_client::config::RateLimitScope::Process,
        })
    );
    assert!(s.breaker.per_tool);
    assert_eq!(s.probe_interval, Duration::from_secs(5));
    assert!(!s.pool.configured && !s.retry.configured);

    let err = parse_err(r#"{"mcpServers": {"s": {"command": "x", "rate_limit": {"burst": 3}}}}"#);
    assert_eq!(err.kind(), ConfigErrorKind::Missing);
    assert_eq!(err.server(), Some("s"), "{err}");
    assert_eq!(err.field(), Some("rate_limit.calls_per_sec"), "{err}");
    let err =
        parse_err(r#"{"mcpServers": {"s": {"command": "x", "rate_limit": {"calls_per_sec": 0}}}}"#);
    assert_eq!(err.kind(), ConfigErrorKind::Invalid);
    assert_eq!(err.server(), Some("s"), "{err}");
    assert_eq!(err.field(), Some("rate_limit.calls_per_sec"), "{err}");
}

#[test]
fn absurd_durations_are_refused_not_overflowed() {
    let err = parse_err(r#"{"mcpServers": {"s": {"command": "x", "startup_timeout_sec": 1e19}}}"#);
    assert_eq!(err.kind(), ConfigErrorKind::Invalid);
    assert_eq!(err.field(), Some("startup_timeout_sec"), "{err}");
    assert!(err.message().contains("at most a week"), "{err}");
    let err = parse_err(r#"{"mcpServers": {"s": {"command": "x", "tool_timeout_sec": 604801}}}"#);
    assert_eq!(err.field(), Some("tool_timeout_sec"), "{err}");
    assert!(parse_json(
        r#"{"mcpServers": {"s": {"command": "x", "tool_timeout_sec": 604800}}}"#,
        &[]
    )
    .is_ok());
}

/// `oauth` settings in the forms other tools write, and their errors.
#[test]
fn oauth_settings() {
    let text = r#"{ "mcpServers": {
        "remote": { "type": "http", "url": "https://api.example.com/mcp",
                    "oauth": { "clientId": "cid", "client_secret_env": "SECRET_VAR",
                               "scopes": "read write", "callbackPort": 8765 } },
        "listed": { "url": "https://b.example.com/mcp", "oauth": { "scopes": ["a", "b"],
                                                                   "dpop": "always",
                    "resource_metadata_origins": ["https://meta.example.com"],
                    "address_policy": "local-network" } },
        "off":    { "url": "https://c.example.com/mcp", "oauth": false },
        "local":  { "command": "tool", "oauth": { "resource": "https://api.example.com/mcp",
                                                  "token_env": "API_TOKEN" } } } }"#;
    let env = env_of(&[("SECRET_VAR", "s3cr3t-value")]);
    let config = parse_with_env(text, Path::new(".mcp.json"), &env).unwrap();
    let remote = &config.server("remote").unwrap().oauth;
    assert_eq!(remote.client_id.as_deref(), Some("cid"));
    assert_eq!(remote.client_secret.as_deref(), Some("s3cr3t-value"));
    assert_eq!(remote.scopes, strings(&["read", "write"]));
    assert_eq!(remote.redirect_port, Some(8765));
    assert_eq!(remote.dpop, DpopSetting::Auto);
    assert!(
        !format!("{config:?}").contains("s3cr3t"),
        "Debug shows the secret"
    );
    assert_eq!(
        config.server("listed").unwrap().oauth.scopes,
        strings(&["a", "b"])
    );
    assert_eq!(
        config.server("listed").unwrap().oauth.dpop,
        DpopSetting::Always
    );
    assert_eq!(
        config
            .server("listed")
            .unwrap()
            .oauth
            .resource_metadata_origins,
        strings(&["https://meta.example.com"])
    );
    assert_eq!(
        config.server("listed").unwrap().oauth.address_policy,
        AddressPolicySetting::LocalNetwork
    );
    assert_eq!(remote.address_policy, AddressPolicySetting::Auto);
    assert!(remote.resource_metadata_origins.is_empty());
    assert!(config.server("off").unwrap().oauth.disabled);
    let local = &config.server("local").unwrap().oauth;
    assert_eq!(local.token_env.as_deref(), Some("API_TOKEN"));
    assert_eq!(
        local.resource.as_deref(),
        Some("https://api.example.com/mcp")
    );

    let bad = [
        (
            r#"{ "mcpServers": { "r": { "url": "https://a.example.com/mcp",
                 "oauth": { "client_secret_env": "UNSET_VAR" } } } }"#,
            "oauth.client_secret_env",
            "UNSET_VAR",
        ),
        (
            r#"{ "mcpServers": { "r": { "url": "https://a.example.com/mcp",
                 "oauth": { "redirect_port": 70000 } } } }"#,
            "oauth.redirect_port",
            "70000",
        ),
        (
            r#"{ "mcpServers": { "r": { "url": "https://a.example.com/mcp",
                 "oauth": { "dpop": "sometimes" } } } }"#,
            "oauth.dpop",
            "\"sometimes\"",
        ),
        (
            r#"{ "mcpServers": { "r": { "url": "https://a.example.com/mcp",
                 "oauth": { "token_env": "T", "resource": "https://x.example.com" } } } }"#,
            "oauth.resource",
            "only stdio servers",
        ),
        (
            r#"{ "mcpServers": { "s": { "command": "tool", "oauth": { "token_env": "T" } } } }"#,
            "oauth.resource",
            "needs `resource`",
        ),
        (
            r#"{ "mcpServers": { "r": { "url": "https://a.example.com/mcp",
                 "oauth": { "resource_metadata_origins": ["meta.example.com"] } } } }"#,
            "oauth.resource_metadata_origins[0]",
            "\"meta.example.com\"",
        ),
        (
            r#"{ "mcpServers": { "r": { "url": "https://a.example.com/mcp",
                 "oauth": { "address_policy": "anywhere" } } } }"#,
            "oauth.address_policy",
            "\"anywhere\"",
        ),
    ];
    for (text, field, says) in bad {
        let err = parse_with_env(text, Path::new(".mcp.json"), &env).unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains(field), "{shown}");
        assert!(shown.contains(says), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }
}

// ---------------------------------------------------------------- endpoints and region

fn endpoint(url: &str, region: Option<&str>, headers: &[(&str, &str)]) -> EndpointConfig {
    EndpointConfig {
        url: url.to_owned(),
        region: region.map(str::to_owned),
        headers: map(headers),
    }
}

/// The transport endpoint `index` of `server` is reached by (its URL and merged headers).
fn transport_at(server: &ServerConfig, index: usize) -> TransportConfig {
    match server.at_endpoint(index) {
        Some(at) => {
            assert!(at.endpoints.is_empty(), "{at:?}");
            at.transport
        }
        None => panic!("{}: no endpoint {index}", server.name),
    }
}

/// Asserts a bad sample's error: its kind, location (line and column, server, field) and
/// message, and that no secret shows.
fn assert_endpoint_error(
    err: &ConfigError,
    kind: ConfigErrorKind,
    file: &str,
    (at, server, field): ((usize, usize), Option<&str>, &str),
    message: &str,
    secrets: &[&str],
) {
    assert_eq!(err.kind(), kind, "{err}");
    assert_located(err, file, Some(at), server, Some(field));
    assert_eq!(err.message(), message, "{err}");
    let shown = format!("{err} {err:?}");
    for secret in secrets {
        assert!(!shown.contains(secret), "{secret} shown: {shown}");
    }
}

#[test]
fn claude_endpoints_regions_and_the_clients_region() {
    let config = load(
        "endpoints.mcp.json",
        &[
            ("TOKEN", "tok-envsecret0800"),
            ("US_KEY", "usk-envsecret0801"),
        ],
    );
    assert_eq!(config.region.as_deref(), Some("eu-west"));
    assert_eq!(names(&config), ["search", "events", "single", "plain"]);

    // The transport: the kind as written, the first endpoint's URL, the server's own headers.
    let search = config.server("search").unwrap();
    assert_eq!(
        search.transport,
        TransportConfig::Http {
            url: "https://eu.example.com/mcp".into(),
            headers: map(&[("Authorization", "Bearer tok-envsecret0800")]),
        }
    );
    assert_eq!(
        search.endpoints,
        vec![
            endpoint("https://eu.example.com/mcp", Some("eu-west"), &[]),
            endpoint(
                "https://us.example.com/mcp",
                Some("us-east"),
                &[("X-Region-Key", "usk-envsecret0801")],
            ),
            endpoint("https://ap.example.com/mcp", None, &[]),
        ]
    );
    assert!(search.is_routed());
    assert_eq!(search.settings.failback_after, Duration::from_secs(5));
    assert_eq!(search.settings.probe_interval, Duration::from_secs(2));
    // Each endpoint as a server of its own: its URL, its headers over the server's.
    assert_eq!(
        transport_at(search, 1),
        TransportConfig::Http {
            url: "https://us.example.com/mcp".into(),
            headers: map(&[
                ("Authorization", "Bearer tok-envsecret0800"),
                ("X-Region-Key", "usk-envsecret0801"),
            ]),
        }
    );
    assert_eq!(
        transport_at(search, 2),
        TransportConfig::Http {
            url: "https://ap.example.com/mcp".into(),
            headers: map(&[("Authorization", "Bearer tok-envsecret0800")]),
        }
    );
    assert_eq!(search.at_endpoint(3), None);

    // No `type`: each endpoint's scheme picks its transport later.
    let events = config.server("events").unwrap();
    assert_eq!(events.transport.kind(), "url");
    assert_eq!(
        events.transport.url(),
        Some("wss://events-eu.example.com/mcp")
    );
    assert_eq!(
        transport_at(events, 1),
        TransportConfig::Url {
            url: "https://events-us.example.com/mcp".into(),
            headers: BTreeMap::new(),
        }
    );
    let regions: Vec<_> = events
        .endpoints
        .iter()
        .map(|e| e.region.as_deref())
        .collect();
    assert_eq!(regions, [Some("eu-west"), Some("us-east")]);

    // One endpoint is allowed: it is just that endpoint.
    let single = config.server("single").unwrap();
    assert_eq!(single.transport.kind(), "sse");
    assert_eq!(
        single.transport.url(),
        Some("https://single.example.com/sse")
    );
    assert_eq!(single.endpoints.len(), 1);
    assert!(!single.is_routed());

    let plain = config.server("plain").unwrap();
    assert!(plain.endpoints.is_empty());
    assert_eq!(plain.settings.failback_after, DEFAULT_FAILBACK_AFTER);

    let debug = format!("{config:?}");
    assert!(!debug.contains("envsecret080"), "{debug}");
    assert!(debug.contains("us-east"), "{debug}");
}

#[test]
fn claude_endpoint_urls_and_regions_expand_variables() {
    let config = load(
        "endpoints.mcp.json",
        &[
            ("TOKEN", "t"),
            ("US_KEY", "k"),
            ("US_HOST", "us2.example.com"),
            ("EVENTS_REGION", "us-west"),
        ],
    );
    let search = config.server("search").unwrap();
    assert_eq!(search.endpoints[1].url, "https://us2.example.com/mcp");
    assert_eq!(
        config.server("events").unwrap().endpoints[1]
            .region
            .as_deref(),
        Some("us-west")
    );
    // An endpoint's header variable is as required as any other.
    let err = load_err("endpoints.mcp.json", &[("TOKEN", "t")]);
    assert_eq!(err.kind(), ConfigErrorKind::UnsetVariable);
    assert_located(
        &err,
        "endpoints.mcp.json",
        Some((10, 40)),
        Some("search"),
        Some("endpoints[1].headers.X-Region-Key"),
    );
}

#[test]
fn vscode_endpoints_and_the_clients_region() {
    let config = load(
        "endpoints.vscode.json",
        &[
            ("CLIENT_REGION", "us-east"),
            ("TOKEN", "tok-envsecret0810"),
            ("US_TOKEN", "us-envsecret0811"),
        ],
    );
    assert_eq!(config.region.as_deref(), Some("us-east"));
    assert_eq!(names(&config), ["search", "socket"]);
    let search = config.server("search").unwrap();
    assert_eq!(
        search.transport,
        TransportConfig::Http {
            url: "https://eu.example.com/mcp".into(),
            headers: map(&[
                ("Authorization", "Bearer tok-envsecret0810"),
                ("X-Team", "core"),
            ]),
        }
    );
    assert_eq!(
        search.endpoints,
        vec![
            endpoint("https://eu.example.com/mcp", Some("eu-west"), &[]),
            endpoint(
                "https://us.example.com/mcp",
                Some("us-east"),
                &[("Authorization", "Bearer us-envsecret0811")],
            ),
        ]
    );
    // The endpoint's `Authorization` replaces the server's; the rest is kept.
    assert_eq!(
        transport_at(search, 1),
        TransportConfig::Http {
            url: "https://us.example.com/mcp".into(),
            headers: map(&[
                ("Authorization", "Bearer us-envsecret0811"),
                ("X-Team", "core"),
            ]),
        }
    );
    let socket = config.server("socket").unwrap();
    assert_eq!(socket.transport.kind(), "ws");
    assert_eq!(socket.transport.url(), Some("wss://ws-eu.example.com/mcp"));
    assert_eq!(
        transport_at(socket, 1).url(),
        Some("wss://ws-us.example.com/mcp")
    );
    assert_eq!(transport_at(socket, 1).kind(), "ws");
    let debug = format!("{config:?}");
    assert!(!debug.contains("envsecret081"), "{debug}");
}

#[test]
fn codex_endpoints_inline_and_as_tables() {
    let config = load(
        "endpoints.toml",
        &[
            ("SEARCH_TOKEN", "tok-envsecret0820"),
            ("US_KEY", "usk-envsecret0821"),
        ],
    );
    assert_eq!(config.region.as_deref(), Some("us-east"));
    assert_eq!(names(&config), ["search", "mirror", "docs"]);
    let search = config.server("search").unwrap();
    assert_eq!(
        search.transport,
        TransportConfig::Http {
            url: "https://eu.example.com/mcp".into(),
            headers: map(&[
                ("X-Team", "core"),
                ("Authorization", "Bearer tok-envsecret0820"),
            ]),
        }
    );
    assert_eq!(
        search.endpoints,
        vec![
            endpoint("https://eu.example.com/mcp", Some("eu-west"), &[]),
            endpoint(
                "https://us.example.com/mcp",
                Some("us-east"),
                &[("X-Region-Key", "usk-envsecret0821")],
            ),
        ]
    );
    assert_eq!(search.settings.failback_after, Duration::from_secs(5));
    assert_eq!(
        transport_at(search, 1),
        TransportConfig::Http {
            url: "https://us.example.com/mcp".into(),
            headers: map(&[
                ("X-Team", "core"),
                ("Authorization", "Bearer tok-envsecret0820"),
                ("X-Region-Key", "usk-envsecret0821"),
            ]),
        }
    );

    let mirror = config.server("mirror").unwrap();
    assert_eq!(
        *mirror,
        ServerConfig {
            startup_timeout: Duration::from_secs(15),
            endpoints: vec![
                endpoint(
                    "https://mirror-a.example.com/mcp",
                    Some("eu-west"),
                    &[("X-Mirror", "a")],
                ),
                endpoint("https://mirror-b.example.com/mcp", None, &[]),
            ],
            ..ServerConfig::new(
                "mirror",
                TransportConfig::Http {
                    url: "https://mirror-a.example.com/mcp".into(),
                    headers: BTreeMap::new(),
                },
            )
        }
    );
    assert_eq!(
        transport_at(mirror, 0).headers(),
        Some(&map(&[("X-Mirror", "a")]))
    );
    assert_eq!(
        config.server("docs").unwrap().transport,
        stdio("docs-server", &[], &[], None)
    );
    let debug = format!("{config:?}");
    assert!(!debug.contains("envsecret082"), "{debug}");
}

#[test]
fn url_and_endpoints_together_are_refused() {
    let err = load_err("bad_endpoints_and_url.json", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::Invalid,
        "bad_endpoints_and_url.json",
        ((6, 20), Some("search"), "endpoints"),
        "expected either `url` or `endpoints`, found both",
        &["hdrsecret0701"],
    );
}

#[test]
fn empty_endpoints_are_refused() {
    let err = load_err("bad_endpoints_empty.json", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::Invalid,
        "bad_endpoints_empty.json",
        ((5, 20), Some("search"), "endpoints"),
        "expected at least one endpoint ({ url, region, headers }), found an empty array",
        &["hdrsecret0702"],
    );
}

#[test]
fn endpoint_region_of_the_wrong_type_is_refused() {
    let err = load_err("bad_endpoint_region.json", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::WrongType,
        "bad_endpoint_region.json",
        ((8, 58), Some("search"), "endpoints[2].region"),
        "expected a region name (a non-empty string), found a number",
        &["hdrsecret0703"],
    );
}

#[test]
fn endpoint_without_url_is_refused() {
    let err = load_err("bad_endpoint_no_url.toml", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::Missing,
        "bad_endpoint_no_url.toml",
        ((7, 1), Some("search"), "endpoints[1].url"),
        "an endpoint needs `url` (an http://, https://, ws:// or wss:// address), found none",
        &["hdrsecret0704", "hdrsecret0705"],
    );
}

#[test]
fn duplicate_endpoint_urls_are_refused_without_echoing_them() {
    let err = load_err("bad_endpoints_duplicate.json", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::Invalid,
        "bad_endpoints_duplicate.json",
        ((7, 18), Some("search"), "endpoints[2].url"),
        "expected a URL no other endpoint has, found the URL of endpoints[0]",
        &["urlsecret0706", "hdrsecret0707"],
    );
}

#[test]
fn command_and_endpoints_together_are_refused() {
    let err = load_err("bad_endpoints_command.json", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::Invalid,
        "bad_endpoints_command.json",
        ((6, 20), Some("search"), "endpoints"),
        "expected either `command` (a stdio server) or `endpoints` (the addresses of a remote \
         server), found both",
        &["envsecret0708"],
    );
}

#[test]
fn client_region_of_the_wrong_type_is_refused() {
    for (file, at, found) in [
        ("bad_region.json", (5, 13), "an array"),
        ("bad_region.toml", (1, 10), "a number"),
    ] {
        let err = load_err(file, &[]);
        assert_endpoint_error(
            &err,
            ConfigErrorKind::WrongType,
            file,
            (at, None, "region"),
            &format!("expected a region name (a non-empty string), found {found}"),
            &[],
        );
    }
}

#[test]
fn jsonc_comments_strings_and_trailing_commas_do_not_move_the_line() {
    let err = load_err("bad_endpoint_region.vscode.json", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::WrongType,
        "bad_endpoint_region.vscode.json",
        ((13, 58), Some("search"), "endpoints[1].region"),
        "expected a region name (a non-empty string), found a number",
        &["hdrsecret0710"],
    );
}

#[test]
fn codex_errors_have_the_line_in_every_table_form() {
    // An inline array of endpoints in a `[mcp_servers.search]` table.
    let err = load_err("bad_endpoint_region_inline.toml", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::WrongType,
        "bad_endpoint_region_inline.toml",
        ((8, 50), Some("search"), "endpoints[1].region"),
        "expected a region name (a non-empty string), found a number",
        &["hdrsecret0711"],
    );
    // Servers written as dotted keys under `[mcp_servers]`.
    let err = load_err("bad_codex_dotted.toml", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::WrongType,
        "bad_codex_dotted.toml",
        ((5, 37), Some("docs"), "args[2]"),
        "expected a string, found a number",
        &["envsecret0712"],
    );
    // A server as an inline table: the endpoint without `url` is named where it starts.
    let err = load_err("bad_codex_inline_server.toml", &[]);
    assert_endpoint_error(
        &err,
        ConfigErrorKind::Missing,
        "bad_codex_inline_server.toml",
        ((6, 3), Some("search"), "endpoints[1].url"),
        "an endpoint needs `url` (an http://, https://, ws:// or wss:// address), found none",
        &["hdrsecret0713"],
    );
}

/// Every `bad_*` sample's error names a line and column that exist in the file, at a character
/// that is not a space (an unknown format is about the whole file), and shows no secret.
#[test]
fn every_bad_sample_names_its_line() {
    let mut files: Vec<String> = std::fs::read_dir(sample(""))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("bad_"))
        .collect();
    files.sort();
    assert!(files.len() >= 23, "{files:?}");
    for file in &files {
        let err = load_err(file, &[]);
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("secret0"), "{shown}");
        if err.kind() == ConfigErrorKind::UnknownFormat {
            assert_eq!(err.position(), None, "{err}");
            continue;
        }
        let Some((line, column)) = err.position() else {
            panic!("{file}: no position: {err}");
        };
        assert!(
            err.to_string()
                .contains(&format!(": line {line}, column {column}: ")),
            "{err}"
        );
        if err.kind() == ConfigErrorKind::Syntax {
            continue;
        }
        let text = std::fs::read_to_string(sample(file)).unwrap();
        let at = text
            .lines()
            .nth(line - 1)
            .and_then(|l| l.chars().nth(column - 1));
        assert!(at.is_some_and(|c| !c.is_whitespace()), "{err}: {at:?}");
    }
}

/// `endpoints` works with every remote `type` and without one; the transport keeps the kind.
#[test]
fn endpoints_with_every_remote_type() {
    let config = parse_json(
        r#"{"mcpServers": {
            "h": {"type": "streamableHttp", "endpoints": [{"url": "https://a/mcp"}, {"url": "https://b/mcp"}]},
            "s": {"type": "sse", "endpoints": [{"url": "http://a/sse"}, {"url": "http://b/sse"}]},
            "w": {"type": "websocket", "endpoints": [{"url": "wss://a/mcp"}, {"url": "ws://b/mcp"}]},
            "g": {"type": "grpc", "endpoints": [{"url": "https://a:50051"}, {"url": "https://b:50051"}]},
            "p": {"type": "carrier-pigeon", "endpoints": [{"url": "coop://a"}, {"url": "coop://b"}]},
            "u": {"endpoints": [{"url": "wss://a/mcp"}, {"url": "https://b/mcp"}]}}}"#,
        &[],
    )
    .unwrap();
    let seen: Vec<(&str, Option<&str>, usize)> = config
        .servers
        .iter()
        .map(|s| (s.transport.kind(), s.transport.url(), s.endpoints.len()))
        .collect();
    assert_eq!(
        seen,
        [
            ("http", Some("https://a/mcp"), 2),
            ("sse", Some("http://a/sse"), 2),
            ("ws", Some("wss://a/mcp"), 2),
            ("grpc", Some("https://a:50051"), 2),
            ("carrier-pigeon", Some("coop://a"), 2),
            ("url", Some("wss://a/mcp"), 2),
        ]
    );
    for server in &config.servers {
        let second = server.at_endpoint(1).unwrap();
        assert_eq!(second.transport.kind(), server.transport.kind());
        assert_eq!(second.transport.url(), Some(&*server.endpoints[1].url));
    }
}

#[test]
fn endpoint_shapes_and_values_are_checked() {
    let cases: &[(&str, ConfigErrorKind, &str, &str)] = &[
        (
            r#"{"type": "http", "endpoints": "https://a/mcp"}"#,
            ConfigErrorKind::WrongType,
            "endpoints",
            "expected an array of endpoints ({ url, region, headers }), found a string",
        ),
        (
            r#"{"type": "http", "endpoints": ["https://a/mcp"]}"#,
            ConfigErrorKind::WrongType,
            "endpoints[0]",
            "expected an endpoint object ({ url, region, headers }), found a string",
        ),
        (
            r#"{"type": "stdio", "endpoints": [{"url": "https://a/mcp"}]}"#,
            ConfigErrorKind::Invalid,
            "endpoints",
            "expected a remote `type` with `endpoints` (\"http\", \"sse\", \"ws\", …), found \"stdio\"",
        ),
        (
            r#"{"type": "sse", "endpoints": [{"url": "https://a/sse"}, {"url": "wss://b/sse?t=sekrit-0901"}]}"#,
            ConfigErrorKind::Invalid,
            "endpoints[1].url",
            "expected an http:// or https:// URL with a host, found a URL with scheme `wss`",
        ),
        (
            r#"{"type": "grpc", "endpoints": [{"url": "sekrit-0902.example.com"}]}"#,
            ConfigErrorKind::Invalid,
            "endpoints[0].url",
            "expected a URL with a host (http://, https://, ws://, wss://, …), found text without a scheme",
        ),
        (
            r#"{"endpoints": [{"url": "https://a/mcp", "region": " "}]}"#,
            ConfigErrorKind::Invalid,
            "endpoints[0].region",
            "expected a region name (such as \"eu-west\"), found an empty string",
        ),
        (
            r#"{"endpoints": [{"url": "https://a/mcp", "region": {"name": "eu"}}]}"#,
            ConfigErrorKind::WrongType,
            "endpoints[0].region",
            "expected a region name (a non-empty string), found an object",
        ),
        (
            r#"{"endpoints": [{"url": "https://a/mcp", "headers": {"K": "sekrit-0903", "N": 1}}]}"#,
            ConfigErrorKind::WrongType,
            "endpoints[0].headers.N",
            "expected a string, found a number",
        ),
        (
            r#"{"endpoints": [{"url": 5}]}"#,
            ConfigErrorKind::WrongType,
            "endpoints[0].url",
            "expected a string, found a number",
        ),
    ];
    for (entry, kind, field, message) in cases {
        let err = parse_err(&format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#));
        let shown = format!("{err} {err:?}");
        assert_eq!(err.kind(), *kind, "{shown}");
        assert_eq!(err.server(), Some("s"), "{shown}");
        assert_eq!(err.field(), Some(*field), "{shown}");
        assert_eq!(err.message(), *message, "{shown}");
        assert!(!shown.contains("sekrit"), "{shown}");
        assert!(err.position().is_some(), "{shown}");
    }
}

#[test]
fn codex_endpoints_errors_name_the_element() {
    let env = env_of(&[]);
    let cases = [
        (
            "[mcp_servers.s]\nurl = \"https://a/mcp\"\nendpoints = [{ url = \"https://b/mcp\" }]\n",
            (3, 13),
            "endpoints",
            "expected either `url` or `endpoints`, found both",
        ),
        (
            "[mcp_servers.s]\nendpoints = [{ url = \"https://a/mcp\", region = 1 }]\n",
            (2, 48),
            "endpoints[0].region",
            "expected a region name (a non-empty string), found a number",
        ),
        (
            "[mcp_servers.s]\nendpoints = [{ url = \"ws://a/mcp\" }]\n",
            (2, 22),
            "endpoints[0].url",
            "expected an http:// or https:// URL with a host, found a URL with scheme `ws`",
        ),
        (
            "region = \"\"\n[mcp_servers.s]\nurl = \"https://a/mcp\"\n",
            (1, 10),
            "region",
            "expected a region name (such as \"eu-west\"), found an empty string",
        ),
        (
            "[mcp_servers.s]\nurl = \"https://a/mcp\"\n\n[mcp_servers.s.pool]\nmin = 3\nmax = 2\n",
            (4, 1),
            "pool",
            "expected pool.min ≤ pool.max, found min 3 > max 2",
        ),
    ];
    for (text, at, field, message) in cases {
        let err = parse_with_env(text, Path::new("config.toml"), &env).unwrap_err();
        assert_eq!(err.field(), Some(field), "{err}");
        assert_eq!(err.message(), message, "{err}");
        assert_eq!(err.position(), Some(at), "{err}");
    }
    // No field (an entry with neither `command` nor `url`): the server's key in its header.
    let err = parse_with_env(
        "model = \"o3\"\n\n[mcp_servers.s]\nargs = []\n",
        Path::new("config.toml"),
        &env,
    )
    .unwrap_err();
    assert_eq!(
        (err.field(), err.position()),
        (None, Some((3, 14))),
        "{err}"
    );
}

#[test]
fn vscode_settings_file_takes_the_region_in_mcp() {
    let env = env_of(&[]);
    let text = r#"{"editor.fontSize": 14, "mcp": {"region": "eu-west", "servers": {
        "s": {"type": "http", "endpoints": [{"url": "https://a/mcp", "region": "eu-west"},
                                            {"url": "https://b/mcp", "region": "us-east"}]}}}}"#;
    let config = parse_with_env(text, Path::new("/ws/.vscode/settings.json"), &env).unwrap();
    assert_eq!(config.region.as_deref(), Some("eu-west"));
    assert_eq!(config.servers[0].endpoints.len(), 2);
    let text = r#"{"mcp": {"region": 3, "servers": {}}}"#;
    let err = parse_with_env(text, Path::new("/ws/.vscode/settings.json"), &env).unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::WrongType);
    assert_eq!((err.server(), err.field()), (None, Some("mcp.region")));
    assert_eq!(err.position(), Some((1, 20)), "{err}");
    // A server's field in a settings file: found under `mcp.servers`.
    let text = "{\"editor.fontSize\": 14,\n \"mcp\": {\"servers\": {\n  \"s\": {\"type\": \"http\", \"url\": 5}}}}";
    let err = parse_with_env(text, Path::new("/ws/.vscode/settings.json"), &env).unwrap_err();
    assert_eq!((err.server(), err.field()), (Some("s"), Some("url")));
    assert_eq!(err.position(), Some((3, 32)), "{err}");
    // No region: none.
    let config = parse_json(r#"{"mcpServers": {}}"#, &[]).unwrap();
    assert_eq!(config.region, None);
}

#[test]
fn the_fleet_store_is_read_from_every_format_without_its_secrets() {
    let config = parse_json(
        r#"{"store": {"url": "redis://127.0.0.1:6379/0", "prefix": "team-a"}, "mcpServers": {}}"#,
        &[],
    )
    .unwrap();
    let store = config.store.expect("a store");
    assert_eq!(store.url, "redis://127.0.0.1:6379/0");
    assert_eq!(store.prefix, "team-a");
    assert_eq!(store.key_env, "MCPH_STORE_KEY");
    assert_eq!(store.password_env, "MCPH_STORE_PASSWORD");

    let env = env_of(&[("REDIS_HOST", "cache.internal")]);
    let text = "[store]\nurl = \"rediss://${REDIS_HOST}:6380/2\"\nkey_env = \"TEAM_KEY\"\n";
    let config = parse_with_env(text, Path::new("/home/u/.codex/config.toml"), &env).unwrap();
    let store = config.store.expect("a store");
    assert_eq!(store.url, "rediss://cache.internal:6380/2");
    assert_eq!(store.key_env, "TEAM_KEY");

    let text = r#"{"mcp": {"store": {"url": "redis://127.0.0.1:6379"}, "servers": {}}}"#;
    let config = parse_with_env(text, Path::new("/ws/.vscode/settings.json"), &env).unwrap();
    assert!(config.store.is_some());

    // A password in the file, the wrong scheme, a key instead of a variable name: refused,
    // naming the field and its line, never repeating the secret.
    let text = "{\"mcpServers\": {},\n \"store\": {\"url\": \"redis://:hunter22@127.0.0.1:6379\"}}";
    let err = parse_json(text, &[]).unwrap_err();
    assert_eq!(err.field(), Some("store.url"), "{err}");
    assert_eq!(err.position().map(|p| p.0), Some(2), "{err}");
    assert!(err.to_string().contains("MCPH_STORE_PASSWORD"), "{err}");
    assert!(!err.to_string().contains("hunter22"), "{err}");
    let err = parse_json(r#"{"mcpServers": {}, "store": {"url": "http://x:1"}}"#, &[]).unwrap_err();
    assert_eq!(err.field(), Some("store.url"), "{err}");
    let err = parse_json(
        r#"{"mcpServers": {}, "store": {"url": "redis://x", "key_env": "c2VjcmV0a2V5IQ=="}}"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(err.field(), Some("store.key_env"), "{err}");
    assert!(!err.to_string().contains("c2VjcmV0a2V5IQ"), "{err}");
    let err = parse_json(r#"{"mcpServers": {}, "store": {"prefix": "x"}}"#, &[]).unwrap_err();
    assert_eq!(err.field(), Some("store.url"), "{err}");
}

#[test]
fn a_rate_limit_may_be_the_fleets() {
    let config = parse_json(
        r#"{"mcpServers": {"s": {"command": "x",
            "rate_limit": {"per_second": 20, "burst": 5, "scope": "fleet"}}}}"#,
        &[],
    )
    .unwrap();
    let limit = config.servers[0].settings.rate_limit.clone().unwrap();
    assert_eq!((limit.calls_per_sec, limit.burst), (20, 5));
    assert_eq!(limit.scope, mcp_client::config::RateLimitScope::Fleet);
    let err = parse_json(
        r#"{"mcpServers": {"s": {"command": "x", "rate_limit": {"per_second": 2, "scope": "world"}}}}"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(err.field(), Some("rate_limit.scope"), "{err}");
}

#[test]
fn a_tools_object_allows_and_denies_tools() {
    let config = parse_json(
        r#"{"mcpServers": {"s": {"command": "x", "tools": {"allow": ["read", "write"], "deny": ["write"]}}}}"#,
        &[],
    )
    .expect("a tools object");
    let server = &config.servers[0];
    assert_eq!(server.enabled_tools, Some(strings(&["read", "write"])));
    assert_eq!(server.disabled_tools, strings(&["write"]));
    assert!(server.allows_tool("read") && !server.allows_tool("write") && !server.allows_tool("x"));

    let deny_only = parse_json(
        r#"{"mcpServers": {"s": {"command": "x", "tools": {"deny": ["rm"]}}}}"#,
        &[],
    )
    .expect("a deny list alone");
    assert!(deny_only.servers[0].allows_tool("ls") && !deny_only.servers[0].allows_tool("rm"));

    let both = parse_err(
        r#"{"mcpServers": {"s": {"command": "x", "enabled_tools": ["a"], "tools": {"allow": ["b"]}}}}"#,
    );
    assert_eq!(both.field(), Some("enabled_tools"));
    assert_eq!(
        both.message(),
        "expected one of tools.allow and enabled_tools, found both"
    );
    let wrong = parse_err(r#"{"mcpServers": {"s": {"command": "x", "tools": {"allow": "a"}}}}"#);
    assert_eq!(wrong.field(), Some("tools.allow"));
}
