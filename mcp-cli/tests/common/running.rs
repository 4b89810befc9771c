//! [`RunningProcess`]: a process a test started, whose stdout and stderr it reads — waiting
//! for one line (an announced address, a login URL) and then for the exit — each wait under a
//! deadline, the process killed if the test ends or fails first.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcp_testkit::process::ChildProcess;

use super::Run;

/// How long a process's stdout and stderr may stay open after it exited (something it left
/// running still holds them).
const OUTPUT_CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// One of a process's output streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        })
    }
}

/// A started process (a [`ChildProcess`]: its process group killed and reaped on drop, so
/// also when the test panics) whose stdout and stderr a thread each reads to their end, so it
/// never blocks on a full pipe. [`wait_for_line`](Self::wait_for_line) waits for a line it
/// prints; [`finish`](Self::finish) and [`interrupt_leader`](Self::interrupt_leader) wait for its exit and
/// give all it printed as a [`Run`].
pub struct RunningProcess {
    process: ChildProcess,
    stdout: Output,
    stderr: Output,
}

impl RunningProcess {
    /// Starts `command` with stdin null and stdout and stderr piped; `name` names it in
    /// failure messages. Panics when it cannot start.
    #[track_caller]
    pub fn spawn(name: &str, command: &mut Command) -> RunningProcess {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut process = ChildProcess::spawn(name, command).unwrap_or_else(|e| panic!("{e}"));
        let stdout = process.take_stdout().expect("stdout is piped");
        let stderr = process.take_stderr().expect("stderr is piped");
        RunningProcess {
            process,
            stdout: Output::read(stdout),
            stderr: Output::read(stderr),
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Reads `stream` line by line (each without its line break) until `pick` takes one, for
    /// at most `within`: what `pick` returned. Panics, with what the stream printed, when the
    /// stream closes first or time runs out.
    #[track_caller]
    pub fn wait_for_line<T>(
        &mut self,
        stream: Stream,
        within: Duration,
        mut pick: impl FnMut(&str) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + within;
        let output = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        loop {
            match output.next_line(deadline) {
                Ok(line) => {
                    if let Some(picked) = pick(&line) {
                        return picked;
                    }
                }
                Err(Ended::Closed) => panic!(
                    "{} closed its {stream} without printing the line the test waits for; it \
                     printed:\n{}",
                    self.process.name(),
                    output.text
                ),
                Err(Ended::TimedOut) => panic!(
                    "{} printed on its {stream} no line the test waits for within {within:?}; \
                     it printed:\n{}",
                    self.process.name(),
                    output.text
                ),
            }
        }
    }

    /// Sends `SIGINT` to the process, as Ctrl-C in a terminal would; [`finish`](Self::finish)
    /// then collects it. To the process alone, not its group: what it started is its own to
    /// end, and a test that checks that must not have the signal do it.
    #[track_caller]
    pub fn send_interrupt_to_leader(&self) {
        let pid = libc::pid_t::try_from(self.pid()).expect("a pid fits a pid_t");
        // SAFETY: kill(2) only sends a signal, to our own child, which is not reaped before
        // `self` is dropped, so the pid names no other process.
        let sent = unsafe { libc::kill(pid, libc::SIGINT) };
        assert_eq!(sent, 0, "SIGINT to {}", self.process.name());
    }

    /// [`send_interrupt_to_leader`](Self::send_interrupt_to_leader), then [`finish`](Self::finish).
    #[track_caller]
    pub fn interrupt_leader(self, within: Duration) -> Run {
        self.send_interrupt_to_leader();
        self.finish(within)
    }

    /// Waits at most `within` for the process to exit, then for its stdout and stderr to
    /// close: its exit code and all it printed. Panics (the process is killed then) with what
    /// it printed so far when it does not exit in time.
    #[track_caller]
    pub fn finish(mut self, within: Duration) -> Run {
        let Some(status) = self.process.wait_within(within) else {
            self.stdout.take_ready();
            self.stderr.take_ready();
            panic!(
                "{} did not finish within {within:?}\n--- stdout so far\n{}\n--- stderr so far\n{}",
                self.process.name(),
                self.stdout.text,
                self.stderr.text
            );
        };
        let closed_by = Instant::now() + OUTPUT_CLOSE_LIMIT;
        for (stream, output) in [
            (Stream::Stdout, &mut self.stdout),
            (Stream::Stderr, &mut self.stderr),
        ] {
            assert!(
                output.read_to_end(closed_by),
                "{} exited ({status}), but its {stream} stayed open for {OUTPUT_CLOSE_LIMIT:?}",
                self.process.name()
            );
        }
        Run {
            code: status.code(),
            stdout: std::mem::take(&mut self.stdout.text),
            stderr: std::mem::take(&mut self.stderr.text),
        }
    }
}

/// One output stream: the lines its reader thread sends (each with its line break), and the
/// text received so far.
struct Output {
    lines: mpsc::Receiver<String>,
    text: String,
}

/// Why no further line came.
enum Ended {
    Closed,
    TimedOut,
}

impl Output {
    /// Starts the thread that reads `pipe` to its end (which comes when every process holding
    /// its other end is gone).
    fn read(pipe: impl Read + Send + 'static) -> Output {
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut pipe = BufReader::new(pipe);
            let mut bytes = Vec::new();
            // Bytes, not `lines()`: a line that is not UTF-8 must not stop the reading.
            while matches!(pipe.read_until(b'\n', &mut bytes), Ok(n) if n > 0) {
                let line = String::from_utf8_lossy(&bytes).into_owned();
                bytes.clear();
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Output {
            lines,
            text: String::new(),
        }
    }

    /// The next line, without its line break, received by `deadline`.
    fn next_line(&mut self, deadline: Instant) -> Result<String, Ended> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => {
                self.text.push_str(&line);
                let line = line.strip_suffix('\n').unwrap_or(&line);
                Ok(line.strip_suffix('\r').unwrap_or(line).to_owned())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(Ended::Closed),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(Ended::TimedOut),
        }
    }

    /// Receives every line until the stream closes, by `deadline`: whether it closed.
    fn read_to_end(&mut self, deadline: Instant) -> bool {
        loop {
            match self.next_line(deadline) {
                Ok(_) => {}
                Err(Ended::Closed) => return true,
                Err(Ended::TimedOut) => return false,
            }
        }
    }

    /// Takes the lines received so far, without waiting (for a failure message).
    fn take_ready(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            self.text.push_str(&line);
        }
    }
}
