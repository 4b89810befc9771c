//! What to run and the limits to run it under.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How to start an MCP server as a child process. Build it with [`StdioServerConfig::new`] and
/// the chained setters; every limit has a sensible default. `Debug` shows environment variable
/// names but never their values, and only the number of arguments (both often hold tokens:
/// `--api-key sk-…`, `TOKEN=…`, a URL with a key in it).
#[derive(Clone)]
pub struct StdioServerConfig {
    /// The program (looked up on `PATH` if it has no slash).
    pub command: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables added to (or overriding) the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// Start from an empty environment instead of inheriting this process's. Default: false.
    pub clear_env: bool,
    /// The working directory. Default: this process's.
    pub cwd: Option<PathBuf>,
    /// Largest message accepted from the server, in bytes. Default: 64 MiB. A longer line is
    /// discarded as it arrives and fails the request it names; one that names none in its first
    /// KiB may run to twice this size for its end to name one, and is fatal past that (the
    /// crate docs say exactly what happens).
    pub max_message_size: usize,
    /// How much of the server's stderr is kept for error reports, in bytes. Default: 16 KiB.
    pub stderr_buffer: usize,
    /// How long close waits after closing stdin before SIGTERM, and after SIGTERM before
    /// SIGKILL. Default: 2 s.
    pub shutdown_grace: Duration,
    /// A name for logs and errors. Default: the command's file name.
    pub name: Option<String>,
    /// Messages queued for the child before `send` waits for it to read (backpressure; a
    /// request's deadline covers that wait). Default: 1024.
    pub outgoing_queue: usize,
}

impl StdioServerConfig {
    /// Runs `command` with the defaults.
    pub fn new(command: impl AsRef<OsStr>) -> Self {
        StdioServerConfig {
            command: command.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            clear_env: false,
            cwd: None,
            max_message_size: 64 * 1024 * 1024,
            stderr_buffer: 16 * 1024,
            shutdown_grace: Duration::from_secs(2),
            name: None,
            outgoing_queue: 1024,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets one environment variable for the child.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Starts the child with only the variables given by [`env`](Self::env).
    pub fn clear_env(mut self) -> Self {
        self.clear_env = true;
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// Sets the largest accepted message.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Sets the stderr ring-buffer size.
    pub fn stderr_buffer(mut self, bytes: usize) -> Self {
        self.stderr_buffer = bytes;
        self
    }

    /// Sets how many messages may wait for the child to read them (at least 1).
    pub fn outgoing_queue(mut self, messages: usize) -> Self {
        self.outgoing_queue = messages.max(1);
        self
    }

    /// Sets the shutdown grace period.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Sets the name used in logs and errors.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The name used in logs and errors.
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            Path::new(&self.command)
                .file_name()
                .unwrap_or(&self.command)
                .to_string_lossy()
                .into_owned()
        })
    }
}

impl std::fmt::Debug for StdioServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(key, _)| format!("{}=<redacted>", key.to_string_lossy()))
            .collect();
        f.debug_struct("StdioServerConfig")
            .field("command", &self.command)
            .field(
                "args",
                &format_args!("<{} arguments, redacted>", self.args.len()),
            )
            .field("env", &env)
            .field("clear_env", &self.clear_env)
            .field("cwd", &self.cwd)
            .field("max_message_size", &self.max_message_size)
            .field("stderr_buffer", &self.stderr_buffer)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("name", &self.name)
            .field("outgoing_queue", &self.outgoing_queue)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_env_names_and_the_argument_count_but_never_values() {
        let config = StdioServerConfig::new("server")
            .env("GITHUB_TOKEN", "ghp_topsecret")
            .args([
                "--verbose",
                "--api-key",
                "sk-argsecret",
                "API_TOKEN=envsecret",
                "https://example.test/?key=urlsecret",
            ]);
        for text in [format!("{config:?}"), format!("{config:#?}")] {
            for secret in ["ghp_topsecret", "sk-argsecret", "envsecret", "urlsecret"] {
                assert!(!text.contains(secret), "{secret} in {text}");
            }
            assert!(text.contains("GITHUB_TOKEN=<redacted>"), "{text}");
            assert!(text.contains("<5 arguments, redacted>"), "{text}");
            assert!(text.contains("\"server\""), "{text}");
        }
    }
}
