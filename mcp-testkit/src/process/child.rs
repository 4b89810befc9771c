//! [`ChildProcess`]: a child a test owns, leading a process group of its own (see the
//! [module documentation](super)).

use std::fmt;
use std::fs::OpenOptions;
use std::future::Future;
use std::io::{self, BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a process may take to exit after `SIGKILL` (on drop, or [`ChildProcess::kill`]).
pub const KILL_TIMEOUT: Duration = Duration::from_secs(10);

/// How often [`ChildProcess::wait_ready`] probes: often enough to add little to a start-up,
/// seldom enough not to flood a server that is still starting (a probe may be an HTTP request
/// or a process of its own).
pub const READY_POLL_INTERVAL: Duration = Duration::from_millis(25);

/// How many lines a process printed before its ready line are kept for the error message.
const SEEN_LINES: usize = 20;

/// A child process a test owns (see the [module documentation](super)): the leader of a process group
/// of its own, killed with that group and reaped when dropped.
///
/// Its stdin is what the command says; set it (`Stdio::null()` or piped), since a process group
/// other than the terminal's foreground one is stopped (`SIGTTIN`) when it reads the terminal.
/// [`spawn_logged`](Self::spawn_logged) and [`spawn_until_line`](Self::spawn_until_line) set
/// it to null.
pub struct ChildProcess {
    name: String,
    child: Child,
    log: Option<PathBuf>,
    /// The group was sent `SIGKILL` and the leader reaped: nothing is left to end.
    ended: bool,
}

impl fmt::Debug for ChildProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildProcess")
            .field("name", &self.name)
            .field("pid", &self.child.id())
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}

impl ChildProcess {
    /// Starts `command` as the leader of a new process group; `name` names it in messages.
    /// Its stdin, stdout and stderr are what `command` says.
    pub fn spawn(name: impl Into<String>, command: &mut Command) -> Result<ChildProcess, String> {
        let name = name.into();
        let child = command.process_group(0).spawn().map_err(|e| {
            format!(
                "cannot start {name} ({}): {e}",
                command.get_program().to_string_lossy()
            )
        })?;
        Ok(ChildProcess {
            name,
            child,
            log: None,
            ended: false,
        })
    }

    /// Starts `command` with stdin null and its stdout and stderr appended to `log` (created
    /// when missing, so a process restarted with the same log keeps its predecessor's lines);
    /// [`log_text`](Self::log_text) reads it back.
    pub fn spawn_logged(
        name: impl Into<String>,
        command: &mut Command,
        log: &Path,
    ) -> Result<ChildProcess, String> {
        let name = name.into();
        let out = open_log(&name, log)?;
        let err = out
            .try_clone()
            .map_err(|e| format!("cannot share the log of {name}: {e}"))?;
        command.stdin(Stdio::null()).stdout(out).stderr(err);
        let mut process = ChildProcess::spawn(name, command)?;
        process.log = Some(log.to_path_buf());
        Ok(process)
    }

    /// Starts `command` with stdin null and stdout piped, and reads stdout line by line until
    /// `ready` picks a line (given trimmed), within `limit`: the process and what `ready`
    /// returned. Its stderr goes to `stderr_log` (appended; then [`log_text`](Self::log_text)
    /// reads it), or nowhere.
    ///
    /// A thread reads stdout to its end, so the process never blocks on a full pipe; it ends
    /// when the process group does. The error (the process is killed then) says whether the
    /// process ended or stayed silent, with the lines it printed before.
    pub fn spawn_until_line<T: Send + 'static>(
        name: impl Into<String>,
        command: &mut Command,
        stderr_log: Option<&Path>,
        limit: Duration,
        mut ready: impl FnMut(&str) -> Option<T> + Send + 'static,
    ) -> Result<(ChildProcess, T), String> {
        let name = name.into();
        let stderr = match stderr_log {
            Some(log) => Stdio::from(open_log(&name, log)?),
            None => Stdio::null(),
        };
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut process = ChildProcess::spawn(name, command)?;
        process.log = stderr_log.map(Path::to_path_buf);
        let stdout = process
            .take_stdout()
            .ok_or_else(|| format!("{} has no stdout pipe", process.name))?;

        let (lines, seen) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut bytes = Vec::new();
            let mut picked = false;
            // Bytes, not `lines()`: a line that is not UTF-8 must not stop the draining.
            while matches!(stdout.read_until(b'\n', &mut bytes), Ok(n) if n > 0) {
                if picked {
                    bytes.clear();
                    continue;
                }
                let text = String::from_utf8_lossy(&bytes).into_owned();
                bytes.clear();
                let line = text.trim();
                let message = match ready(line) {
                    Some(value) => {
                        picked = true;
                        Line::Ready(value)
                    }
                    None => Line::Seen(line.to_owned()),
                };
                let _ = lines.send(message);
            }
        });

        let deadline = Instant::now() + limit;
        let mut printed: Vec<String> = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match seen.recv_timeout(left) {
                Ok(Line::Ready(value)) => return Ok((process, value)),
                Ok(Line::Seen(line)) => {
                    if printed.len() == SEEN_LINES {
                        printed.remove(0);
                    }
                    printed.push(line);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let how = match process.wait_within(left) {
                        Some(status) => format!("exited ({status})"),
                        None => "closed its stdout".to_owned(),
                    };
                    return Err(format!(
                        "{} {how} without printing its ready line; it printed: {printed:?}{}",
                        process.name,
                        process.log_suffix()
                    ));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "{} printed no ready line within {limit:?}; it printed: {printed:?}{}",
                        process.name,
                        process.log_suffix()
                    ));
                }
            }
        }
    }

    /// The name given at the start.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id (also its process group's id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its stdin, when the command piped it (once).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// Its stdout, when the command piped it (once).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Its stderr, when the command piped it (once).
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// The log file its output goes to, if it was started with one.
    pub fn log_path(&self) -> Option<&Path> {
        self.log.as_deref()
    }

    /// What it logged so far (for failure messages): empty without a log file, `(no log: …)`
    /// when the file cannot be read.
    pub fn log_text(&self) -> String {
        match &self.log {
            Some(log) => {
                std::fs::read_to_string(log).unwrap_or_else(|err| format!("(no log: {err})"))
            }
            None => String::new(),
        }
    }

    /// How it exited, if it has (without waiting; it is reaped then).
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Whether it still runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Its exit status once it has exited, waiting at most `limit`; `None` if it still runs.
    pub fn wait_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(crate::wait::POLL_INTERVAL);
                }
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Polls `probe` (every [`READY_POLL_INTERVAL`]) until it says the process is ready, for at
    /// most `limit`. `what` says what ready means, as in "… before `what`" ("listening on port
    /// 8080"). Fails at once when the process exits, else at the deadline with the probe's last
    /// reason; both errors carry the log.
    pub fn wait_ready(
        &mut self,
        what: &str,
        limit: Duration,
        mut probe: impl FnMut() -> Result<(), String>,
    ) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            let reason = match self.ready_after(what, probe())? {
                None => return Ok(()),
                Some(reason) => reason,
            };
            if Instant::now() >= deadline {
                return Err(self.not_ready(what, limit, &reason));
            }
            std::thread::sleep(READY_POLL_INTERVAL);
        }
    }

    /// [`wait_ready`](Self::wait_ready) for a probe that must be awaited (a tokio connect, an
    /// HTTP request); sleeps on tokio's clock between probes.
    pub async fn wait_ready_async<F, Fut>(
        &mut self,
        what: &str,
        limit: Duration,
        mut probe: F,
    ) -> Result<(), String>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<(), String>>,
    {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let probed = probe().await;
            let reason = match self.ready_after(what, probed)? {
                None => return Ok(()),
                Some(reason) => reason,
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(self.not_ready(what, limit, &reason));
            }
            tokio::time::sleep(READY_POLL_INTERVAL).await;
        }
    }

    /// After a probe: `Ok(None)` when ready, `Ok(Some(reason))` to probe again, `Err` when the
    /// process exited. The exit is checked after the probe, so that an answer from another
    /// process on the same port, while this one failed to bind, is not taken for readiness.
    fn ready_after(
        &mut self,
        what: &str,
        probed: Result<(), String>,
    ) -> Result<Option<String>, String> {
        if let Some(status) = self.exit_status() {
            return Err(format!(
                "{} exited ({status}) before {what}{}",
                self.name,
                self.log_suffix()
            ));
        }
        Ok(probed.err())
    }

    fn not_ready(&self, what: &str, limit: Duration, reason: &str) -> String {
        format!(
            "{} was not {what} within {limit:?} (last: {reason}){}",
            self.name,
            self.log_suffix()
        )
    }

    /// Sends `signal` to its process group (e.g. `SIGSTOP` to make a server hang, `SIGCONT` to
    /// resume it). Fails (`ESRCH`) when nothing of the group is left.
    pub fn signal(&self, signal: libc::c_int) -> io::Result<()> {
        if self.ended {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        self.signal_group(signal)
    }

    /// `SIGINT` to its process group, as Ctrl-C in a terminal would, then its exit status,
    /// waiting at most `limit`; `None` if it still runs (dropping it kills it then).
    pub fn interrupt(&mut self, limit: Duration) -> Option<ExitStatus> {
        let _ = self.signal(libc::SIGINT);
        self.wait_within(limit)
    }

    /// `SIGKILL` to its process group, then reaps it (waiting at most [`KILL_TIMEOUT`]): its
    /// exit status, or an error when it did not exit. Nothing happens the second time.
    pub fn kill(&mut self) -> Result<ExitStatus, String> {
        if !self.ended {
            // Also after the leader exited on its own: what it left in its group goes too.
            let _ = self.signal_group(libc::SIGKILL);
        }
        let status = self.wait_within(KILL_TIMEOUT).ok_or_else(|| {
            format!(
                "{} (pid {}) did not exit within {KILL_TIMEOUT:?} after SIGKILL",
                self.name,
                self.pid()
            )
        })?;
        self.ended = true;
        Ok(status)
    }

    fn signal_group(&self, signal: libc::c_int) -> io::Result<()> {
        let pgid = libc::pid_t::try_from(self.child.id())
            .map_err(|_| io::Error::other("the pid does not fit a pid_t"))?;
        // A group id is not reused while any member lives (a leader not yet reaped counts);
        // once none does, this fails with ESRCH, as in mcp-transport-stdio's shutdown.
        // SAFETY: killpg(2) only sends a signal, to the group this child leads; no memory is
        // involved.
        let rc = unsafe { libc::killpg(pgid, signal) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn log_suffix(&self) -> String {
        match &self.log {
            Some(log) => format!("; its log ({}):\n{}", log.display(), self.log_text()),
            None => String::new(),
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if let Err(e) = self.kill() {
            eprintln!("{e}");
        }
    }
}

/// What the stdout reader of [`ChildProcess::spawn_until_line`] saw.
enum Line<T> {
    Seen(String),
    Ready(T),
}

fn open_log(name: &str, log: &Path) -> Result<std::fs::File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("cannot open the log of {name} ({}): {e}", log.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a process with this pid exists (a zombie counts until it is reaped).
    fn exists(pid: u32) -> bool {
        Path::new(&format!("/proc/{pid}")).exists()
    }

    fn temp_log(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "mcp-testkit-process-{tag}-{}.log",
            std::process::id()
        ))
    }

    #[test]
    fn dropping_kills_the_whole_group_and_reaps_it() {
        // A shell that starts a grandchild and prints its pid: killing the shell alone would
        // orphan the `sleep`.
        let (shell, grandchild) = ChildProcess::spawn_until_line(
            "a shell with a grandchild",
            Command::new("sh").args(["-c", "sleep 600 & echo child=$!; wait"]),
            None,
            Duration::from_secs(10),
            |line| line.strip_prefix("child=")?.parse::<u32>().ok(),
        )
        .unwrap();
        let leader = shell.pid();
        assert!(exists(grandchild));
        drop(shell);
        assert!(!exists(leader), "the leader is gone and reaped");
        crate::wait::until_blocking("the grandchild to die", KILL_TIMEOUT, || {
            // It was the shell's child; init reaps it once it is gone.
            !exists(grandchild)
                || std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
                    .is_ok_and(|stat| stat.contains(") Z"))
        });
    }

    #[test]
    fn interrupt_sends_sigint_and_returns_the_exit() {
        let (mut process, ()) = ChildProcess::spawn_until_line(
            "a shell trapping SIGINT",
            Command::new("sh").args([
                "-c",
                "trap 'exit 7' INT; echo ready; while :; do sleep 0.05; done",
            ]),
            None,
            Duration::from_secs(10),
            |line| (line == "ready").then_some(()),
        )
        .unwrap();
        let status = process.interrupt(Duration::from_secs(10));
        assert_eq!(status.and_then(|s| s.code()), Some(7), "{status:?}");
        assert!(!process.is_running());
        assert!(process.signal(libc::SIGCONT).is_err(), "it has exited");
    }

    #[test]
    fn output_goes_to_the_log_and_into_the_errors() {
        let log = temp_log("logged");
        let _ = std::fs::remove_file(&log);
        let mut process = ChildProcess::spawn_logged(
            "a failing server",
            Command::new("sh").args(["-c", "echo out-line; echo err-line >&2; exit 3"]),
            &log,
        )
        .unwrap();
        let err = process
            .wait_ready("listening", Duration::from_secs(10), || {
                Err("not yet".to_owned())
            })
            .unwrap_err();
        assert!(err.contains("a failing server exited"), "{err}");
        assert!(err.contains("before listening"), "{err}");
        assert!(
            err.contains("out-line") && err.contains("err-line"),
            "{err}"
        );
        assert_eq!(process.exit_status().and_then(|s| s.code()), Some(3));
        assert_eq!(process.log_path(), Some(log.as_path()));
        drop(process);
        let _ = std::fs::remove_file(&log);
    }

    #[test]
    fn wait_ready_gives_up_at_the_deadline_with_the_last_reason() {
        let mut process = ChildProcess::spawn(
            "a silent process",
            Command::new("sleep").arg("600").stdin(Stdio::null()),
        )
        .unwrap();
        let err = process
            .wait_ready("answering", Duration::from_millis(100), || {
                Err("connection refused".to_owned())
            })
            .unwrap_err();
        assert!(
            err.contains("a silent process was not answering within 100ms"),
            "{err}"
        );
        assert!(err.contains("(last: connection refused)"), "{err}");
        assert!(process.is_running());
        let status = process.kill().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        assert!(process.kill().is_ok(), "a second kill does nothing");
    }

    #[test]
    fn a_ready_line_that_never_comes_is_an_error_with_what_was_printed() {
        let err = ChildProcess::spawn_until_line(
            "a chatty process",
            Command::new("sh").args(["-c", "echo hello; echo world"]),
            None,
            Duration::from_secs(10),
            |line| line.strip_prefix("listening on ").map(str::to_owned),
        )
        .unwrap_err();
        assert!(err.contains("a chatty process exited"), "{err}");
        assert!(err.contains(r#"["hello", "world"]"#), "{err}");

        let err = ChildProcess::spawn_until_line(
            "a quiet process",
            Command::new("sleep").arg("600"),
            None,
            Duration::from_millis(100),
            |line| Some(line.to_owned()),
        )
        .unwrap_err();
        assert!(
            err.contains("a quiet process printed no ready line within 100ms"),
            "{err}"
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_does_not_stop_the_reading() {
        let (_process, line) = ChildProcess::spawn_until_line(
            "a process printing bytes",
            Command::new("sh").args(["-c", r"printf 'a\377b\nlistening on x\n'; sleep 600"]),
            None,
            Duration::from_secs(10),
            |line| line.strip_prefix("listening on ").map(str::to_owned),
        )
        .unwrap();
        assert_eq!(line, "x");
    }

    #[tokio::test]
    async fn wait_ready_async_awaits_the_probe() {
        let mut process = ChildProcess::spawn(
            "a process",
            Command::new("sleep").arg("600").stdin(Stdio::null()),
        )
        .unwrap();
        let mut probes = 0;
        process
            .wait_ready_async("ready", Duration::from_secs(10), || {
                probes += 1;
                let ready = probes == 3;
                async move {
                    tokio::task::yield_now().await;
                    if ready {
                        Ok(())
                    } else {
                        Err("not yet".to_owned())
                    }
                }
            })
            .await
            .unwrap();
        assert_eq!(probes, 3);
    }

    #[test]
    fn a_program_that_cannot_start_is_an_error() {
        let err = ChildProcess::spawn("nothing", &mut Command::new("/surely/not/a/program-4f2a"))
            .unwrap_err();
        assert!(
            err.starts_with("cannot start nothing (/surely/not/a/program-4f2a)"),
            "{err}"
        );
    }
}
