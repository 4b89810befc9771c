//! The child process: its own process group, its exit status, and its shutdown.
//!
//! The child is spawned as the leader of a new process group, so signals reach everything it
//! started (an `npx` wrapper and the `node` under it, a shell and its pipeline). A waiter task
//! reaps the child as soon as it exits (no zombie) and publishes the status.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::process::Child;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::stderr::StderrTail;

/// Shared by both halves of the transport; dropping the last reference kills the process group.
pub(crate) struct ProcessGroup {
    pub(crate) name: String,
    pgid: i32,
    exit: watch::Receiver<Option<ExitStatus>>,
    waiter: JoinHandle<()>,
    stderr_task: JoinHandle<()>,
    stderr_done: watch::Receiver<bool>,
    pub(crate) stderr: Arc<StderrTail>,
    closing: AtomicBool,
    group_cleared: AtomicBool,
}

impl ProcessGroup {
    /// Takes ownership of a freshly spawned child (already its own group leader) and of the task
    /// draining its stderr.
    pub(crate) fn adopt(
        name: String,
        mut child: Child,
        stderr: Arc<StderrTail>,
        stderr_task: JoinHandle<()>,
        stderr_done: watch::Receiver<bool>,
    ) -> Self {
        let pgid = child.id().map_or(0, |pid| pid as i32);
        let (exit_tx, exit) = watch::channel(None);
        let waiter = tokio::spawn(async move {
            match child.wait().await {
                Ok(status) => {
                    let _ = exit_tx.send(Some(status));
                }
                Err(e) => tracing::warn!(error = %e, "could not wait for the MCP server process"),
            }
        });
        ProcessGroup {
            name,
            pgid,
            exit,
            waiter,
            stderr_task,
            stderr_done,
            stderr,
            closing: AtomicBool::new(false),
            group_cleared: AtomicBool::new(false),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pgid as u32
    }

    pub(crate) fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// A receiver that changes when the child exits.
    pub(crate) fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.exit.clone()
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    pub(crate) fn mark_closing(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Waits up to `limit` for the child to exit.
    pub(crate) async fn wait_exit(&self, limit: Duration) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => *status,
            _ => self.exit_status(),
        }
    }

    /// Waits up to `limit` for stderr to reach its end, so its tail is complete.
    pub(crate) async fn wait_stderr(&self, limit: Duration) {
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(limit, done.wait_for(|d| *d)).await;
    }

    /// Sends `signal` to the whole group. Safe after the leader exited: while any member lives,
    /// the group id cannot be reused, and once none does the call fails harmlessly (ESRCH).
    pub(crate) fn signal_group(&self, signal: i32) {
        if self.pgid > 0 {
            // SAFETY: killpg only sends a signal; no memory is touched.
            unsafe {
                libc::killpg(self.pgid, signal);
            }
        }
    }

    /// The graceful shutdown: (stdin already closed by the caller) wait `grace`, SIGTERM, wait
    /// `grace`, SIGKILL; then clear out any member the leader left behind.
    pub(crate) async fn shutdown(&self, grace: Duration) -> Option<ExitStatus> {
        self.mark_closing();
        let mut status = self.wait_exit(grace).await;
        if status.is_none() {
            tracing::debug!(server = %self.name, "MCP server did not exit after stdin closed; sending SIGTERM");
            self.signal_group(libc::SIGTERM);
            status = self.wait_exit(grace).await;
        }
        if status.is_none() {
            tracing::warn!(server = %self.name, "MCP server ignored SIGTERM; sending SIGKILL");
            self.signal_group(libc::SIGKILL);
            status = self.wait_exit(Duration::from_secs(5)).await;
        }
        // The leader is gone; anything it left in its group goes too (no orphans).
        self.signal_group(libc::SIGKILL);
        if status.is_some() {
            self.group_cleared.store(true, Ordering::Release);
        }
        status
    }

    /// How the child ended, with the last lines of its stderr, for error messages.
    pub(crate) fn describe_exit(&self, status: Option<ExitStatus>) -> String {
        let how = match status {
            Some(status) => describe_status(status),
            None => "closed its output but is still running".to_owned(),
        };
        let tail = self.stderr.text();
        if tail.is_empty() {
            format!("MCP server `{}` {how}", self.name)
        } else {
            format!("MCP server `{}` {how}; stderr tail:\n{tail}", self.name)
        }
    }
}

pub(crate) fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exited with status {code}")
    } else if let Some(signal) = status.signal() {
        format!("was killed by signal {signal} ({})", signal_name(signal))
    } else {
        format!("ended ({status})")
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        _ => "signal",
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // Dropped without a graceful close: nothing of the group may outlive us. The waiter task
        // keeps running until it has reaped the killed child (kill_on_drop and tokio's orphan
        // reaper cover a runtime that is shutting down).
        if !self.group_cleared.load(Ordering::Acquire) {
            self.signal_group(libc::SIGKILL);
        }
        self.stderr_task.abort();
        // The waiter is left to reap the killed child; it ends as soon as the child is gone.
        let _ = &self.waiter;
    }
}
