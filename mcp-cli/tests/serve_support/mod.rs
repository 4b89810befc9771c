//! What the `mcph serve` tests share: the three upstreams every downstream client reaches through
//! the gateway — a stdio fixture, a Streamable HTTP fixture, and an OAuth-protected HTTP fixture
//! already logged in (`mcph auth login`, tokens in a private Secret Service under an isolated
//! HOME) — the gateway itself over Streamable HTTP, and the check that no upstream credential
//! reached a downstream client.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use crate::common::{HttpFixtureProcess, Run, RunningProcess, Stream, TempDir, DEADLINE, MCPH};
use mcp_client::mcp_auth::store::{KeyringStore, TokenStore};
use mcp_testkit::secret_service::SecretService;
use serde_json::{json, Value};

/// How long `mcph auth login` may take, URL to exit.
const LOGIN_DEADLINE: Duration = Duration::from_secs(60);

/// Some of the tools the gateway serves for the three upstreams (all three are the fixture: as
/// their lists share names, every name of those lists is prefixed with its server's, the OAuth
/// fixture's extra tool `vault` too).
pub const SERVED_TOOLS: &[&str] = &[
    "files__echo",
    "files__add",
    "web__echo",
    "web__add",
    "secure__echo",
    "secure__add",
    "secure__vault",
];

/// The calls every client makes: one to each upstream, and what each must answer.
pub fn calls() -> Value {
    json!([
        { "name": "files__echo", "arguments": { "text": "from stdio" } },
        { "name": "web__add", "arguments": { "a": 2, "b": 3 } },
        { "name": "secure__echo", "arguments": { "text": "from behind oauth" } },
        { "name": "secure__vault", "arguments": { "text": "opened" } }
    ])
}

/// What [`calls`] answer, in order: (text, isError).
pub const EXPECTED_ANSWERS: &[(&str, bool)] = &[
    ("from stdio", false),
    ("5", false),
    ("from behind oauth", false),
    ("vault: opened", false),
];

/// The three upstreams, the gateway's configuration naming them, and the login.
pub struct Upstreams {
    /// Drop order matters little (each process is killed on drop), but the Secret Service
    /// goes last: mcph processes of the test may still hold its bus.
    web: HttpFixtureProcess,
    secure: HttpFixtureProcess,
    /// The gateway's configuration file (`files`, `web`, `secure`).
    pub config: PathBuf,
    /// mcph's working directory.
    pub cwd: TempDir,
    /// The access token the login stored: no downstream client may ever see it.
    pub access_token: String,
    /// The refresh token, if the login got one: the same.
    pub refresh_token: Option<String>,
    pub secret_service: SecretService,
}

impl Upstreams {
    /// Starts the private Secret Service and the two HTTP fixtures, writes the configuration
    /// and logs in to `secure` (playing the browser), then reads the stored tokens back.
    pub fn start() -> Upstreams {
        let secret_service = SecretService::start().unwrap_or_else(|e| panic!("{e}"));
        let web = HttpFixtureProcess::start(&[]);
        let secure = HttpFixtureProcess::start(&["--oauth", "--extra-tool", "vault"]);
        let cwd = TempDir::new("serve-upstreams");
        let config = json!({
            "mcpServers": {
                "files": { "command": fixture_path(), "args": [] },
                "web": { "type": "http", "url": format!("{}/mcp", web.url) },
                "secure": { "type": "http", "url": format!("{}/mcp", secure.url) }
            }
        });
        let config = cwd.write("gateway.json", &config.to_string());
        let mut upstreams = Upstreams {
            web,
            secure,
            config,
            cwd,
            access_token: String::new(),
            refresh_token: None,
            secret_service,
        };
        upstreams.login();
        upstreams
    }

    /// The environment every mcph of the test runs with: the Secret Service's HOME, bus and
    /// XDG directories, and PATH (nothing else of the test's environment).
    pub fn envs(&self) -> Vec<(String, String)> {
        let mut envs = self.secret_service.envs();
        envs.push((
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        ));
        envs
    }

    /// `mcph --config CONFIG ARGS` in this environment, output piped.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(MCPH);
        command
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .current_dir(self.cwd.path())
            .env_clear()
            .envs(self.envs())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// `mcph serve --http 127.0.0.1:0`: the process and the URL it announced
    /// (`http://ADDR/mcp`).
    pub fn serve_http(&self) -> (RunningProcess, String) {
        let mut gateway = RunningProcess::spawn(
            "mcph serve --http",
            &mut self.command(&["serve", "--http", "127.0.0.1:0"]),
        );
        let url = gateway.wait_for_line(Stream::Stdout, DEADLINE, |line| {
            line.trim().strip_prefix("listening on ").map(str::to_owned)
        });
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "{url}"
        );
        (gateway, url)
    }

    /// The plan of a client that starts `mcph serve` over stdio itself.
    pub fn stdio_plan(&self) -> Value {
        let mut env = serde_json::Map::new();
        for (key, value) in self.envs() {
            env.insert(key, Value::String(value));
        }
        json!({
            "command": MCPH,
            "args": ["serve", "--config", self.config],
            "env": env,
            "calls": calls(),
        })
    }

    /// The plan of a client that reaches the gateway at `url`.
    pub fn http_plan(&self, url: &str) -> Value {
        json!({ "url": url, "calls": calls() })
    }

    /// Writes `plan` to a file of its own and returns its path.
    pub fn write_plan(&self, name: &str, plan: &Value) -> PathBuf {
        self.cwd.write(name, &plan.to_string())
    }

    /// Panics when `text` (what a downstream client received, printed or logged) holds a
    /// token the login stored.
    #[track_caller]
    pub fn assert_no_credential(&self, text: &str, what: &str) {
        assert!(!self.access_token.is_empty(), "the login stored a token");
        assert!(
            !text.contains(&self.access_token),
            "{what} holds the upstream access token:\n{text}"
        );
        if let Some(refresh) = &self.refresh_token {
            assert!(
                !text.contains(refresh.as_str()),
                "{what} holds the upstream refresh token:\n{text}"
            );
        }
    }

    /// `mcph auth login secure --no-browser`, playing the browser; then the stored tokens.
    fn login(&mut self) {
        let authorize = format!("{}/authorize", self.secure.url);
        let mut login = RunningProcess::spawn(
            "mcph auth login secure",
            &mut self.command(&["auth", "login", "secure", "--no-browser", "--timeout", "60"]),
        );
        let url = login.wait_for_line(Stream::Stderr, LOGIN_DEADLINE, |line| {
            line.trim_start()
                .starts_with(&authorize)
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
        let (access, refresh) = self.stored_tokens();
        self.access_token = access;
        self.refresh_token = refresh;
    }

    /// The tokens the login left in the Secret Service (mcp-auth's `KeyringStore` on this
    /// test's private bus).
    fn stored_tokens(&self) -> (String, Option<String>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let store = {
            let _bus = BusAddress::set(self.secret_service.bus_address());
            KeyringStore::secret_service(mcp_client::auth::STORE_SERVICE)
        }
        .unwrap_or_else(|e| panic!("opening the Secret Service: {e}"));
        let url = format!("{}/mcp", self.secure.url);
        let creds = runtime
            .block_on(store.load(&mcp_client::auth::store_key(&url)))
            .unwrap_or_else(|e| panic!("reading the Secret Service entry: {e}"))
            .unwrap_or_else(|| panic!("no login stored for {url}"));
        let tokens = creds.tokens.expect("the login stored tokens");
        (
            tokens.access_token.expose().to_owned(),
            tokens.refresh_token.map(|r| r.expose().to_owned()),
        )
    }
}

/// The fixture server binary (stdio unless given `--http`).
pub fn fixture_path() -> String {
    mcp_testkit::fixture_server_bin()
        .to_string_lossy()
        .into_owned()
}

/// A finished client's output as JSON, after checking it exited 0.
#[track_caller]
pub fn client_output(run: &Run, client: &str) -> Value {
    assert_eq!(
        run.code,
        Some(0),
        "{client}:\n--- stdout\n{}\n--- stderr\n{}",
        run.stdout,
        run.stderr
    );
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{client} printed no JSON ({e}):\n{}\n{}",
            run.stdout, run.stderr
        )
    })
}

/// Checks what a plan-following client printed: the gateway's name, every served tool, the
/// answer of each call.
#[track_caller]
pub fn check_client(seen: &Value, client: &str) {
    assert_eq!(seen["server"], "mcph-gateway", "{client}: {seen}");
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{client}: a tool list in {seen}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for expected in SERVED_TOOLS {
        assert!(
            tools.contains(expected),
            "{client}: {expected} in {tools:?}"
        );
    }
    let answers: Vec<(&str, bool)> = seen["calls"]
        .as_array()
        .unwrap_or_else(|| panic!("{client}: calls in {seen}"))
        .iter()
        .map(|c| (c["text"].as_str().unwrap_or(""), c["isError"] == true))
        .collect();
    assert_eq!(answers, EXPECTED_ANSWERS, "{client}: {seen}");
    assert!(
        seen["received"].as_array().is_some_and(|r| !r.is_empty()),
        "{client} recorded what it received: {seen}"
    );
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

/// The test process points `DBUS_SESSION_BUS_ADDRESS` (read when a `KeyringStore` connects)
/// at one test's bus only while holding this; mcph children get theirs explicitly.
static BUS_ENV: Mutex<()> = Mutex::new(());

/// Sets `DBUS_SESSION_BUS_ADDRESS` and puts the old value back on drop (under [`BUS_ENV`]).
struct BusAddress {
    old: Option<std::ffi::OsString>,
    _lock: std::sync::MutexGuard<'static, ()>,
}

impl BusAddress {
    fn set(address: &str) -> BusAddress {
        let lock = BUS_ENV.lock().unwrap_or_else(|p| p.into_inner());
        let old = std::env::var_os("DBUS_SESSION_BUS_ADDRESS");
        std::env::set_var("DBUS_SESSION_BUS_ADDRESS", address);
        BusAddress { old, _lock: lock }
    }
}

impl Drop for BusAddress {
    fn drop(&mut self) {
        match self.old.take() {
            Some(old) => std::env::set_var("DBUS_SESSION_BUS_ADDRESS", old),
            None => std::env::remove_var("DBUS_SESSION_BUS_ADDRESS"),
        }
    }
}
