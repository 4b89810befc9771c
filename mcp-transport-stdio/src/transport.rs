//! [`StdioTransport`]: the two halves over a child's stdin and stdout.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::{
    Message, Transport, TransportCapabilities, TransportError, TransportErrorKind,
    TransportReceiver, TransportSender,
};
use mcp_wire::outbound::{self, OutboundQueue, OutboundReceiver};
use mcp_wire::OwnedTask;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use crate::config::StdioServerConfig;
use crate::framing::{Frame, LineReader};
use crate::process::ProcessGroup;
use crate::stderr::{drain_stderr, StderrTail};

/// Largest batch of queued lines written with one syscall.
const MAX_BATCH: usize = 1 << 20;
/// After the child exits, how long output it wrote before dying is still read.
const EXIT_DRAIN: Duration = Duration::from_millis(500);

/// An MCP server running as a child process, connected over its stdin and stdout.
pub struct StdioTransport {
    sender: StdioSender,
    receiver: StdioReceiver,
}

impl StdioTransport {
    /// Starts the server. Fails with [`TransportErrorKind::Connect`] when the program cannot be
    /// started (not found, not executable, bad working directory).
    ///
    /// Must be called within a tokio runtime.
    pub fn spawn(config: StdioServerConfig) -> Result<StdioTransport, TransportError> {
        let name = config.display_name();
        let mut command = Command::new(&config.command);
        command
            .args(&config.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if config.clear_env {
            command.env_clear();
        }
        command.envs(config.env.iter().map(|(k, v)| (k, v)));
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(|e| {
            let hint = match e.kind() {
                std::io::ErrorKind::NotFound
                    if config.cwd.as_ref().is_some_and(|d| !d.is_dir()) =>
                {
                    format!(
                        "the working directory {} does not exist",
                        config
                            .cwd
                            .as_ref()
                            .map(|d| d.display().to_string())
                            .unwrap_or_default()
                    )
                }
                std::io::ErrorKind::NotFound => {
                    "the program was not found; check the command and PATH".to_owned()
                }
                std::io::ErrorKind::PermissionDenied => "the program is not executable".to_owned(),
                _ => "the program could not be started".to_owned(),
            };
            TransportError::fatal(
                TransportErrorKind::Connect,
                format!(
                    "could not start MCP server `{name}` ({}): {e}; {hint}",
                    config.command.to_string_lossy()
                ),
            )
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(TransportError::fatal(
                TransportErrorKind::Connect,
                "the child process has no stdio pipes",
            ));
        };
        enlarge_pipe(&stdin);
        enlarge_pipe(&stdout);
        let tail = Arc::new(StderrTail::new(config.stderr_buffer));
        let (stderr_done_tx, stderr_done) = watch::channel(false);
        let stderr_task = tokio::spawn({
            let tail = tail.clone();
            let name = name.clone();
            async move {
                drain_stderr(stderr, &tail, &name).await;
                let _ = stderr_done_tx.send(true);
            }
        });
        let process = Arc::new(ProcessGroup::adopt(
            name,
            child,
            tail,
            stderr_task,
            stderr_done,
        ));
        let (queue, outgoing) = outbound::channel(config.outgoing_queue);
        let writer = OwnedTask::spawn(run_writer(stdin, outgoing));
        tracing::debug!(server = %process.name, pid = process.pid(), "started MCP server");
        Ok(StdioTransport {
            sender: StdioSender {
                queue,
                writer,
                process: process.clone(),
                grace: config.shutdown_grace,
            },
            receiver: StdioReceiver {
                lines: LineReader::new(
                    BufReader::with_capacity(64 * 1024, stdout),
                    config.max_message_size,
                ),
                exit: process.exit_watch(),
                process,
                ended: false,
            },
        })
    }

    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.sender.process.pid()
    }
}

impl Transport for StdioTransport {
    type Sender = StdioSender;
    type Receiver = StdioReceiver;

    fn split(self) -> (StdioSender, StdioReceiver) {
        (self.sender, self.receiver)
    }
}

/// Pipe capacity asked for (Linux): a large message then crosses in one go instead of in 64 KiB
/// steps that each wait for the other process to be scheduled.
const PIPE_CAPACITY: i32 = 1 << 20;

/// Best effort: enlarges a pipe's kernel buffer (up to the system's `pipe-max-size`); where
/// that is not possible the default capacity stays.
fn enlarge_pipe(pipe: &impl std::os::fd::AsRawFd) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: F_SETPIPE_SZ only resizes the kernel buffer of a pipe we own; a failure
        // (EPERM above pipe-max-size, EBUSY) leaves it as it was and is ignored.
        unsafe {
            libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_CAPACITY);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pipe;
}

/// Writes queued lines to the child's stdin, whatever is queued in one write. Ends (closing
/// stdin) when the queue ends or a write fails.
async fn run_writer(mut stdin: ChildStdin, mut outgoing: OutboundReceiver<Vec<u8>>) {
    let mut joined = Vec::new();
    while let Some(first) = outgoing.recv().await {
        let mut queued = outgoing.queued_behind(&first, MAX_BATCH);
        let result = match queued.next() {
            None => stdin.write_all(&first).await,
            Some(second) => {
                joined.clear();
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&second);
                for more in queued {
                    joined.extend_from_slice(&more);
                }
                let r = stdin.write_all(&joined).await;
                if joined.capacity() > MAX_BATCH * 2 {
                    joined = Vec::new();
                }
                r
            }
        };
        if let Err(e) = result {
            tracing::debug!(error = %e, "writing to the MCP server's stdin failed");
            return;
        }
    }
    let _ = stdin.shutdown().await;
}

/// The sending half: serializes on the caller's task and queues the line for the writer task.
pub struct StdioSender {
    queue: OutboundQueue<Vec<u8>>,
    /// The writer task: ended by `close` within the grace, aborted when the sender is dropped.
    writer: OwnedTask,
    process: Arc<ProcessGroup>,
    grace: Duration,
}

impl StdioSender {
    fn not_accepting(&self) -> TransportError {
        let message = match self.process.exit_status() {
            Some(status) => self.process.describe_exit(Some(status)),
            None if self.process.is_closing() => {
                format!("MCP server `{}` is being closed", self.process.name)
            }
            None => format!(
                "MCP server `{}` stopped reading its input",
                self.process.name
            ),
        };
        TransportError::fatal(TransportErrorKind::Closed, message)
    }
}

#[async_trait]
impl TransportSender for StdioSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let mut line = Vec::with_capacity(128);
        message.write_json(&mut line).map_err(|e| {
            TransportError::recoverable(
                TransportErrorKind::InvalidMessage,
                format!("could not encode the message: {e}"),
            )
        })?;
        line.push(b'\n');
        self.queue
            .send(line)
            .await
            .map_err(|_| self.not_accepting())
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.process.mark_closing();
        // Closing the queue lets the writer flush what is queued, then close stdin (EOF). A
        // child that is not reading does not hold us: the writer is stopped after the grace,
        // and the signals below end the child.
        self.queue.close();
        self.writer.finish(self.grace).await;
        let status = self.process.shutdown(self.grace).await;
        tracing::debug!(
            server = %self.process.name,
            status = %status.map(crate::process::describe_status).unwrap_or_else(|| "unknown".into()),
            "MCP server stopped"
        );
        Ok(())
    }

    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("pipe")
    }
}

/// The receiving half: frames lines from the child's stdout.
pub struct StdioReceiver {
    lines: LineReader<BufReader<ChildStdout>>,
    exit: watch::Receiver<Option<std::process::ExitStatus>>,
    process: Arc<ProcessGroup>,
    ended: bool,
}

impl StdioReceiver {
    async fn end(
        &mut self,
        io_error: Option<std::io::Error>,
    ) -> Option<Result<Message, TransportError>> {
        self.ended = true;
        if self.process.is_closing() {
            return None;
        }
        // The child closed stdout: usually it is exiting. Give it a moment to finish, and its
        // stderr a moment to be read, so the error carries both.
        let status = self.process.wait_exit(EXIT_DRAIN).await;
        self.process.wait_stderr(EXIT_DRAIN).await;
        let mut message = self.process.describe_exit(status);
        if let Some(e) = io_error {
            message = format!("reading from MCP server failed: {e}; {message}");
        }
        Some(Err(TransportError::fatal(
            TransportErrorKind::PeerGone,
            message,
        )))
    }
}

impl StdioReceiver {
    /// A bad line's error, naming the server. A fatal one ends the transport: its output can no
    /// longer be trusted to be framed, so nothing more is read (closing or dropping the
    /// transport stops the child as usual).
    fn bad_output(&mut self, error: TransportError) -> TransportError {
        let message = format!("MCP server `{}` {}", self.process.name, error.message());
        if error.is_fatal() {
            self.ended = true;
            tracing::warn!(server = %self.process.name, error = %message, "ending the connection to the MCP server");
            TransportError::fatal(error.kind(), message)
        } else {
            TransportError::recoverable(error.kind(), message)
                .for_request(error.request_id().cloned())
        }
    }
}

#[async_trait]
impl TransportReceiver for StdioReceiver {
    async fn receive(&mut self) -> Option<Result<Message, TransportError>> {
        if self.ended {
            return None;
        }
        let mut exited_at = None;
        loop {
            let drain_deadline = exited_at.map(|t: tokio::time::Instant| t + EXIT_DRAIN);
            tokio::select! {
                frame = self.lines.next_frame() => match frame {
                    Ok(Some(Frame::Message(message))) => return Some(Ok(message)),
                    Ok(Some(Frame::Bad(error))) => return Some(Err(self.bad_output(error))),
                    Ok(Some(Frame::Garbage(line))) => {
                        tracing::warn!(server = %self.process.name, line = %line, "skipping a non-JSON line on the MCP server's stdout");
                    }
                    Ok(None) => return self.end(None).await,
                    Err(e) => return self.end(Some(e)).await,
                },
                // The child exited but something (a grandchild) still holds stdout open: read
                // what is already there, then report the exit instead of waiting forever.
                _ = wait_for_exit(&mut self.exit), if exited_at.is_none() => {
                    exited_at = Some(tokio::time::Instant::now());
                }
                _ = sleep_until_opt(drain_deadline), if drain_deadline.is_some() => {
                    return self.end(None).await;
                }
            }
        }
    }
}

async fn wait_for_exit(exit: &mut watch::Receiver<Option<std::process::ExitStatus>>) {
    if exit.wait_for(Option::is_some).await.is_err() {
        // The waiter is gone without a status: only the stream's end can tell us more.
        std::future::pending::<()>().await;
    }
}

async fn sleep_until_opt(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
