//! Shared helpers for the `mcph` end-to-end tests: isolated environments, running the binary
//! with a deadline ([`RunningProcess`]), the HTTP fixture.

#![allow(dead_code)]

mod running;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_testkit::process::ChildProcess;
use serde_json::Value;

// Each test file is a crate of its own, and not every one waits for a line (`Stream`).
#[allow(unused_imports)]
pub use running::{RunningProcess, Stream};

pub const MCPH: &str = env!("CARGO_BIN_EXE_mcph");
/// Upper bound of every command (a hang fails the test instead of blocking it).
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A unique temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "mcph-test-{tag}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write temp file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a finished command left.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// An isolated environment: cwd, HOME and XDG_CONFIG_HOME are empty temp dirs.
pub struct Env {
    pub home: TempDir,
    pub cwd: TempDir,
}

impl Env {
    pub fn new() -> Self {
        Env {
            home: TempDir::new("home"),
            cwd: TempDir::new("cwd"),
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(MCPH);
        command
            .args(args)
            .current_dir(self.cwd.path())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// `mcph ARGS` started in this environment.
    pub fn spawn(&self, args: &[&str]) -> RunningProcess {
        RunningProcess::spawn(&format!("mcph {}", args.join(" ")), &mut self.command(args))
    }

    /// `mcph ARGS` run to its end (at most [`DEADLINE`]).
    pub fn run(&self, args: &[&str]) -> Run {
        self.spawn(args).finish(DEADLINE)
    }
}

/// The fixture served over HTTP (mcp-testkit's `mcp-fixture-server --http`, plus `flags`; the
/// built-in `mcph __fixture-server` speaks stdio only); its process group killed on drop.
pub struct HttpFixtureProcess {
    _process: ChildProcess,
    /// `http://IP:PORT`.
    pub url: String,
}

impl HttpFixtureProcess {
    pub fn start(flags: &[&str]) -> Self {
        let (process, url) = ChildProcess::spawn_until_line(
            "the HTTP fixture",
            Command::new(mcp_testkit::fixture_server_bin())
                .args(["--http", "127.0.0.1:0"])
                .args(flags),
            None,
            DEADLINE,
            |line| line.strip_prefix("listening on ").map(str::to_owned),
        )
        .unwrap_or_else(|e| panic!("the fixture announces its address: {e}"));
        HttpFixtureProcess {
            _process: process,
            url,
        }
    }
}
