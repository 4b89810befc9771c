//! A real `redis-server` for tests, on a free loopback port and a temporary directory of its
//! own: nothing persisted (`--save ""`, `--appendonly no`), bound to 127.0.0.1 only, run in the
//! foreground as a child of the test process. Dropping the [`RedisServer`] kills it and removes
//! the directory.
//!
//! Readiness is checked without a Redis client library: a raw `PING` over TCP must answer
//! `+PONG` (or `-NOAUTH …` when the server wants a password). A test can kill the server,
//! start it again on the same port ([`RedisServer::restart`]), or freeze it (`SIGSTOP`) to make
//! it hang ([`RedisServer::freeze`]).
//!
//! Needs `redis-server` (Debian package redis-server); [`RedisServer::start`] fails with a
//! message saying to run `cargo xtask interop-setup` when it is missing. The process is a
//! [`ChildProcess`]: it leads its own process group, which is killed on drop.
//!
//! ```no_run
//! let redis = mcp_testkit::redis::RedisServer::start().expect("a redis-server");
//! println!("Redis at {}", redis.url());
//! ```
//!
//! Unix only (the module is empty elsewhere).

#![cfg(unix)]

use std::fmt;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::process::{find_program, free_port, ChildProcess};

/// How long the server may take to answer its first `PING`.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a refused bind is tried again on restart.
const RETRY_INTERVAL: Duration = Duration::from_millis(10);

/// How long one readiness probe (connect, `PING`, answer) may take.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// How many ports are tried when the one picked was taken meanwhile.
const PORT_ATTEMPTS: usize = 5;

/// What to start a [`RedisServer`] with beyond the defaults.
#[derive(Clone, Default)]
pub struct RedisOptions {
    /// `requirepass`: clients must `AUTH` with it.
    pub password: Option<String>,
    /// Serve TLS too (`--tls-port`, no client certificates): [`RedisServer::tls_url`].
    pub tls: Option<RedisTls>,
}

impl fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisOptions")
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("tls", &self.tls)
            .finish()
    }
}

/// The server certificate and key of a TLS port, as PEM files.
#[derive(Clone, Debug)]
pub struct RedisTls {
    /// The certificate chain (PEM).
    pub cert_file: PathBuf,
    /// Its private key (PEM).
    pub key_file: PathBuf,
}

/// A running `redis-server` (see the module documentation).
pub struct RedisServer {
    program: PathBuf,
    child: Option<ChildProcess>,
    port: u16,
    tls_port: Option<u16>,
    dir: PathBuf,
    options: RedisOptions,
}

impl fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisServer")
            .field("port", &self.port)
            .field("tls_port", &self.tls_port)
            .field("pid", &self.pid())
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl RedisServer {
    /// Starts a server without a password and waits (at most [`START_TIMEOUT`]) until it
    /// answers.
    pub fn start() -> Result<RedisServer, String> {
        RedisServer::start_with(RedisOptions::default())
    }

    /// Starts a server that wants `password` (`requirepass`).
    pub fn start_with_password(password: &str) -> Result<RedisServer, String> {
        RedisServer::start_with(RedisOptions {
            password: Some(password.to_owned()),
            tls: None,
        })
    }

    /// Starts a server with `options`. The error says what is missing or what went wrong, with
    /// the server's log.
    pub fn start_with(options: RedisOptions) -> Result<RedisServer, String> {
        let program = find_program("redis-server", "redis-server")
            .map_err(|e| format!("the fleet tests need redis-server: {e}"))?;
        let dir = std::env::temp_dir().join(unique("mcp-redis"));
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut server = RedisServer {
            program,
            child: None,
            port: 0,
            tls_port: None,
            dir,
            options,
        };
        // From here on `server` owns the directory (and the child): every error path drops it.
        let mut last_error = String::new();
        for _ in 0..PORT_ATTEMPTS {
            server.port = free_port();
            if server.options.tls.is_some() {
                server.tls_port = Some(free_port());
            }
            match server.launch() {
                Ok(()) => return Ok(server),
                // Another process took the port between our probe and the server's bind.
                Err(e) if e.contains("Address already in use") => last_error = e,
                Err(e) => return Err(e),
            }
        }
        Err(format!(
            "redis-server found no free port in {PORT_ATTEMPTS} tries: {last_error}"
        ))
    }

    /// The URL of the plain-text port: `redis://127.0.0.1:PORT` (no password in it).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The URL of the TLS port, `rediss://localhost:PORT`, when started with TLS (the host
    /// name a test certificate names).
    pub fn tls_url(&self) -> Option<String> {
        self.tls_port
            .map(|port| format!("rediss://localhost:{port}"))
    }

    /// The plain-text port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(ChildProcess::pid)
    }

    /// Whether the server process runs (it was not killed and has not exited).
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(ChildProcess::is_running)
    }

    /// Kills the server (`SIGKILL`) and waits (at most
    /// [`KILL_TIMEOUT`](crate::process::KILL_TIMEOUT)) until it has exited. Its port stays
    /// reserved for [`restart`](Self::restart).
    pub fn kill(&mut self) -> Result<(), String> {
        match self.child.take() {
            Some(mut child) => child.kill().map(drop),
            None => Ok(()),
        }
    }

    /// Kills the server if it runs and starts it again on the same port and directory,
    /// waiting (at most [`START_TIMEOUT`]) until it answers.
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill()?;
        // The old listening socket is gone with the process; a new bind can race only with
        // the kernel's cleanup, so a refused bind is tried again within the bound.
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match self.launch() {
                Ok(()) => return Ok(()),
                Err(e) if e.contains("Address already in use") && Instant::now() < deadline => {
                    std::thread::sleep(RETRY_INTERVAL);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Stops the server with `SIGSTOP`: connections and commands hang until
    /// [`thaw`](Self::thaw).
    pub fn freeze(&self) -> Result<(), String> {
        self.signal(libc::SIGSTOP)
    }

    /// Resumes a [frozen](Self::freeze) server (`SIGCONT`).
    pub fn thaw(&self) -> Result<(), String> {
        self.signal(libc::SIGCONT)
    }

    /// What the server logged so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_else(|err| format!("(no log: {err})"))
    }

    /// The temporary directory (its working directory and log). Removed on drop.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("redis-server.log")
    }

    fn signal(&self, signal: libc::c_int) -> Result<(), String> {
        let child = self.child.as_ref().ok_or("redis-server is not running")?;
        child
            .signal(signal)
            .map_err(|e| format!("cannot signal redis-server (pid {}): {e}", child.pid()))
    }

    /// Starts the process on `self.port` and waits (at most [`START_TIMEOUT`]) until a raw
    /// `PING` is answered; fails at once when the process exits (e.g. for want of its port).
    fn launch(&mut self) -> Result<(), String> {
        let mut command = Command::new(&self.program);
        command
            .arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ])
            .args(["--daemonize", "no", "--logfile", ""]);
        if let Some(password) = &self.options.password {
            command.arg("--requirepass").arg(password);
        }
        if let (Some(tls), Some(port)) = (&self.options.tls, self.tls_port) {
            command
                .arg("--tls-port")
                .arg(port.to_string())
                .arg("--tls-cert-file")
                .arg(&tls.cert_file)
                .arg("--tls-key-file")
                .arg(&tls.key_file)
                .args(["--tls-auth-clients", "no"]);
        }
        command.current_dir(&self.dir);
        let mut child = ChildProcess::spawn_logged("redis-server", &mut command, &self.log_path())?;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        // Dropping `child` on an error kills it.
        child.wait_ready(
            &format!("answering PING on {address}"),
            START_TIMEOUT,
            || ping(address),
        )?;
        self.child = Some(child);
        Ok(())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A frozen server dies of SIGKILL too; resuming first keeps its exit prompt.
        let _ = self.thaw();
        if let Err(e) = self.kill() {
            eprintln!("{e}");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One readiness probe: `PING` answered by `+PONG`, or by `-NOAUTH` (a password is wanted:
/// the server is up).
fn ping(address: SocketAddr) -> Result<(), String> {
    let mut stream =
        TcpStream::connect_timeout(&address, PROBE_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(PROBE_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(PROBE_TIMEOUT)))
        .map_err(|e| format!("socket timeouts: {e}"))?;
    stream
        .write_all(b"PING\r\n")
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 64];
    while !answer.ends_with(b"\r\n") && answer.len() < 256 {
        let n = stream.read(&mut buf).map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
    }
    if answer.starts_with(b"+PONG") || answer.starts_with(b"-NOAUTH") {
        Ok(())
    } else {
        Err(format!(
            "answered {:?}",
            String::from_utf8_lossy(&answer).trim_end()
        ))
    }
}

/// A name no other run uses (pid, time, counter).
fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{nanos:x}-{n}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_answers_survives_a_restart_and_leaves_nothing_behind() {
        let mut redis = RedisServer::start().expect("redis-server (cargo xtask interop-setup)");
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, redis.port()));
        assert!(redis.url().starts_with("redis://127.0.0.1:"));
        assert_eq!(ping(address), Ok(()));
        let first = redis.pid().unwrap();

        redis.kill().unwrap();
        assert!(!redis.is_running());
        assert!(ping(address).is_err(), "nothing answers once killed");
        redis.restart().unwrap();
        assert_eq!(ping(address), Ok(()), "the same port again");
        assert_ne!(redis.pid(), Some(first));

        let dir = redis.dir().to_path_buf();
        let pid = redis.pid().unwrap();
        drop(redis);
        assert!(!dir.exists(), "the directory is removed");
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "the process is gone (and reaped)"
        );
    }

    #[test]
    fn a_password_protected_server_is_ready_when_it_asks_for_the_password() {
        let redis = RedisServer::start_with_password("s3cret-pass").unwrap();
        let mut stream = TcpStream::connect(("127.0.0.1", redis.port())).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream.write_all(b"PING\r\n").unwrap();
        let mut buf = [0u8; 128];
        let n = stream.read(&mut buf).unwrap();
        assert!(buf[..n].starts_with(b"-NOAUTH"), "{:?}", &buf[..n]);
        let shown = format!(
            "{:?}",
            RedisOptions {
                password: Some("s3cret-pass".into()),
                tls: None
            }
        );
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn a_frozen_server_hangs_and_thaws() {
        let redis = RedisServer::start().unwrap();
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, redis.port()));
        redis.freeze().unwrap();
        assert!(ping(address).is_err(), "no answer while frozen");
        redis.thaw().unwrap();
        assert_eq!(ping(address), Ok(()));
    }
}
