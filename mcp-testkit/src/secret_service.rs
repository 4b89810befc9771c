//! A private, real Secret Service for tests: `dbus-daemon` runs a session bus of its own and
//! `gnome-keyring-daemon` serves `org.freedesktop.secrets` on it, both under a temporary HOME,
//! so the real user's keyring is never touched. Everything is stopped (and the directory
//! removed) when the [`SecretService`] is dropped.
//!
//! Readiness is checked over D-Bus with `dbus-send` (no client library involved): the name
//! `org.freedesktop.secrets` has an owner, the `default` alias points at a collection, and that
//! collection is unlocked.
//!
//! Needs `dbus-daemon` (Debian package dbus-daemon), `dbus-send` (dbus-bin, a dependency of
//! dbus-daemon) and `gnome-keyring-daemon` (gnome-keyring); [`SecretService::start`] fails
//! with a message saying to run `cargo xtask interop-setup` when one is missing. Every process
//! is a [`ChildProcess`]: it leads its own process group, which is killed on drop.
//!
//! ```no_run
//! let service = mcp_testkit::secret_service::SecretService::start().expect("a Secret Service");
//! let mut child = std::process::Command::new("some-client");
//! child.envs(service.envs());
//! ```
//!
//! Unix only (the module is empty elsewhere).

#![cfg(unix)]

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::process::{find_program, ChildProcess};

/// How long a helper process may take to come up, answer, or go down.
pub const PROCESS_TIMEOUT: Duration = Duration::from_secs(10);

/// The password of the private login keyring (it only protects the temporary keyring file).
const KEYRING_PASSWORD: &[u8] = b"test-keyring-password";

/// A running private Secret Service (see the module documentation).
///
/// Drop order: gnome-keyring-daemon, then the bus, then the temporary directory.
pub struct SecretService {
    keyring: ChildProcess,
    bus: ChildProcess,
    address: String,
    root: PathBuf,
    home: PathBuf,
    runtime_dir: PathBuf,
}

impl std::fmt::Debug for SecretService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretService")
            .field("address", &self.address)
            .field("root", &self.root)
            .field("keyring_pid", &self.keyring.pid())
            .finish_non_exhaustive()
    }
}

impl SecretService {
    /// Starts the bus and the keyring daemon and waits (at most [`PROCESS_TIMEOUT`] per step)
    /// until the Secret Service is ready. The error says what is missing or what went wrong,
    /// with the daemons' logs.
    pub fn start() -> Result<SecretService, String> {
        let dbus_daemon = require("dbus-daemon", "dbus-daemon")?;
        let keyring_daemon = require("gnome-keyring-daemon", "gnome-keyring")?;
        require("dbus-send", "dbus-bin")?;

        let root = std::env::temp_dir().join(unique("mcp-secret-service"));
        std::fs::create_dir(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        // From here on the directory is removed on every path (the guard, then `SecretService`).
        let dir_guard = DirGuard(Some(root.clone()));
        let home = root.join("home");
        let runtime_dir = root.join("run");
        for dir in [
            home.join(".local/share"),
            home.join(".config"),
            home.join(".cache"),
            runtime_dir.clone(),
        ] {
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        set_mode_0700(&runtime_dir)?;

        // No <servicedir>: nothing is activated on this bus; only what is started here runs.
        let config = root.join("bus.conf");
        let socket = root.join("bus");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
                socket.display()
            ),
        )
        .map_err(|e| format!("cannot write the bus config: {e}"))?;

        // The bus prints its address as its first line.
        let (bus, address) = ChildProcess::spawn_until_line(
            "dbus-daemon",
            Command::new(dbus_daemon)
                .arg(format!("--config-file={}", config.display()))
                .args(["--nofork", "--print-address=1"]),
            Some(&root.join("dbus-daemon.log")),
            PROCESS_TIMEOUT,
            |line| (!line.is_empty()).then(|| line.to_owned()),
        )?;

        let keyring_log_path = root.join("gnome-keyring.log");
        let keyring_log = std::fs::File::create(&keyring_log_path)
            .map_err(|e| format!("cannot create the keyring log: {e}"))?;
        let keyring_log_err = keyring_log
            .try_clone()
            .map_err(|e| format!("cannot share the keyring log: {e}"))?;
        // Not `spawn_logged`: its stdin is piped, for the password.
        let mut keyring = ChildProcess::spawn(
            "gnome-keyring-daemon",
            Command::new(keyring_daemon)
                .args(["--foreground", "--components=secrets", "--unlock"])
                .current_dir(&root)
                .env("HOME", &home)
                .env("XDG_DATA_HOME", home.join(".local/share"))
                .env("XDG_CONFIG_HOME", home.join(".config"))
                .env("XDG_CACHE_HOME", home.join(".cache"))
                .env("XDG_RUNTIME_DIR", &runtime_dir)
                .env("DBUS_SESSION_BUS_ADDRESS", &address)
                .env_remove("DISPLAY")
                .env_remove("WAYLAND_DISPLAY")
                .stdin(Stdio::piped())
                .stdout(keyring_log)
                .stderr(keyring_log_err),
        )?;
        // `--unlock` reads the login keyring's password from stdin (creating the keyring).
        {
            let mut stdin = keyring
                .take_stdin()
                .ok_or("gnome-keyring-daemon has no stdin pipe")?;
            stdin
                .write_all(KEYRING_PASSWORD)
                .map_err(|e| format!("cannot give gnome-keyring-daemon its password: {e}"))?;
        }

        let mut service = SecretService {
            keyring,
            bus,
            address,
            root,
            home,
            runtime_dir,
        };
        // `service` owns the directory now.
        std::mem::forget(dir_guard);
        service.wait_ready()?;
        Ok(service)
    }

    /// Waits (at most [`PROCESS_TIMEOUT`]) until the Secret Service answers on the bus: the
    /// name `org.freedesktop.secrets` is owned, the `default` alias names a collection and that
    /// collection is unlocked. Fails at once when gnome-keyring-daemon exits.
    pub fn wait_ready(&mut self) -> Result<(), String> {
        let address = self.address.clone();
        self.keyring
            .wait_ready("the Secret Service was up", PROCESS_TIMEOUT, || {
                readiness(&address)
            })
            .map_err(|e| {
                format!(
                    "{e}; gnome-keyring-daemon log: {}; dbus-daemon log: {}",
                    self.keyring_log(),
                    self.bus.log_text()
                )
            })
    }

    /// The bus address (the value of `DBUS_SESSION_BUS_ADDRESS`).
    pub fn bus_address(&self) -> &str {
        &self.address
    }

    /// What a child process needs to use this Secret Service (and only it): the bus address,
    /// plus the temporary HOME and XDG directories (so nothing falls back to the real user's
    /// `$XDG_RUNTIME_DIR/bus`, and whatever a client writes lands under [`root`](Self::root)).
    pub fn envs(&self) -> Vec<(String, String)> {
        let path = |p: &Path| p.to_string_lossy().into_owned();
        vec![
            ("DBUS_SESSION_BUS_ADDRESS".into(), self.address.clone()),
            ("HOME".into(), path(&self.home)),
            (
                "XDG_DATA_HOME".into(),
                path(&self.home.join(".local/share")),
            ),
            ("XDG_CONFIG_HOME".into(), path(&self.home.join(".config"))),
            ("XDG_CACHE_HOME".into(), path(&self.home.join(".cache"))),
            ("XDG_RUNTIME_DIR".into(), path(&self.runtime_dir)),
        ]
    }

    /// The temporary directory holding everything: the HOME, the bus socket, the logs and
    /// gnome-keyring's (encrypted) keyring file. Removed on drop.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The temporary HOME (under [`root`](Self::root)); gnome-keyring keeps its keyrings in
    /// `.local/share/keyrings` there.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// gnome-keyring-daemon's process id.
    pub fn keyring_pid(&self) -> u32 {
        self.keyring.pid()
    }

    /// Sends `signal` to gnome-keyring-daemon (its process group; e.g. `SIGSTOP` to make the
    /// service hang, `SIGCONT` to resume it).
    pub fn signal_keyring(&self, signal: libc::c_int) -> io::Result<()> {
        self.keyring.signal(signal)
    }

    /// What gnome-keyring-daemon logged so far (for failure messages).
    pub fn keyring_log(&self) -> String {
        read_log(&self.root.join("gnome-keyring.log"))
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        // Resume it first in case a test left it stopped (a stopped process still dies of
        // SIGKILL, but be explicit).
        let _ = self.signal_keyring(libc::SIGCONT);
        for process in [&mut self.keyring, &mut self.bus] {
            if let Err(e) = process.kill() {
                eprintln!("{e}");
            }
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Every regular file under `dir` (recursively) whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if needle.is_empty() {
        return found;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                if let Ok(bytes) = std::fs::read(&path) {
                    if bytes.windows(needle.len()).any(|window| window == needle) {
                        found.push(path);
                    }
                }
            }
        }
    }
    found
}

/// One readiness check of the Secret Service on the bus at `address` (see
/// [`SecretService::wait_ready`]).
fn readiness(address: &str) -> Result<(), String> {
    let owned = dbus_send(
        address,
        &[
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner",
            "string:org.freedesktop.secrets",
        ],
    )?;
    if !owned.contains("boolean true") {
        return Err("org.freedesktop.secrets has no owner yet".into());
    }
    let alias = dbus_send(
        address,
        &[
            "--dest=org.freedesktop.secrets",
            "/org/freedesktop/secrets",
            "org.freedesktop.Secret.Service.ReadAlias",
            "string:default",
        ],
    )?;
    let collection = alias
        .split('"')
        .nth(1)
        .filter(|path| path.starts_with("/org/freedesktop/secrets/collection/"))
        .ok_or("no default collection yet")?
        .to_owned();
    let locked = dbus_send(
        address,
        &[
            "--dest=org.freedesktop.secrets",
            &collection,
            "org.freedesktop.DBus.Properties.Get",
            "string:org.freedesktop.Secret.Collection",
            "string:Locked",
        ],
    )?;
    if !locked.contains("boolean false") {
        return Err(format!("{collection} is still locked"));
    }
    Ok(())
}

/// `dbus-send --print-reply` on the bus at `address`; its stdout, or why it failed.
fn dbus_send(address: &str, args: &[&str]) -> Result<String, String> {
    let reply_timeout_ms = 2_000;
    let mut command = Command::new("dbus-send");
    command
        .arg(format!("--bus={address}"))
        .arg("--print-reply")
        .arg(format!("--reply-timeout={reply_timeout_ms}"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut process = ChildProcess::spawn("dbus-send", &mut command)?;
    let stdout = drain(process.take_stdout());
    let stderr = drain(process.take_stderr());
    let status = process.wait_within(PROCESS_TIMEOUT).ok_or_else(|| {
        format!(
            "dbus-send {} gave no answer within {PROCESS_TIMEOUT:?}",
            args.join(" ")
        )
    })?;
    let stdout = stdout.recv_timeout(PROCESS_TIMEOUT).unwrap_or_default();
    if status.success() {
        Ok(stdout)
    } else {
        let stderr = stderr.recv_timeout(PROCESS_TIMEOUT).unwrap_or_default();
        Err(format!("dbus-send ({status}): {}", stderr.trim()))
    }
}

/// `program`'s path, or an error saying how to install it.
fn require(program: &str, package: &str) -> Result<PathBuf, String> {
    find_program(program, package)
        .map_err(|e| format!("the Secret Service tests need `{program}`: {e}"))
}

/// A value no other run uses (pid, time, counter).
fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{nanos:x}-{n}", std::process::id())
}

/// Removes the directory on drop unless forgotten.
struct DirGuard(Option<PathBuf>);

impl Drop for DirGuard {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn set_mode_0700(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("cannot chmod 0700 {}: {e}", path.display()))
}

/// Reads `pipe` to the end on a thread; the text arrives on the channel.
fn drain(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            let _ = tx.send(text);
        });
    }
    rx
}

fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| format!("(no log: {err})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_its_package_and_the_setup_command() {
        let err = require("surely-not-a-program-here-4f2a", "some-package").unwrap_err();
        assert!(err.contains("some-package"), "{err}");
        assert!(err.contains("cargo xtask interop-setup"), "{err}");
    }

    #[test]
    fn files_containing_finds_nested_matches_only() {
        let dir = std::env::temp_dir().join(unique("mcp-testkit-files"));
        let guard = DirGuard(Some(dir.clone()));
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("a/b/hit"), b"xx needle yy").unwrap();
        std::fs::write(dir.join("a/miss"), b"nothing").unwrap();
        assert_eq!(files_containing(&dir, b"needle"), vec![dir.join("a/b/hit")]);
        assert!(files_containing(&dir, b"").is_empty());
        drop(guard);
        assert!(!dir.exists());
    }
}
