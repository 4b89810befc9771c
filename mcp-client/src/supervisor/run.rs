//! The supervising task's state machine: start-up, ready, lost, reconnecting on the backoff
//! schedule, unavailable and probed, needs credentials — and one connection attempt.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use mcp_core::sync::lock;
use mcp_core::types::Tool;
use mcp_core::{Error, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::ClientSession;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::follow::Followed;
use super::{Lists, Supervisor, SupervisorEvent, SupervisorListener};
use crate::router::Placement;
use crate::status::ServerStatus;

/// How one connection attempt went.
pub(super) enum Attempt {
    /// A session (on that endpoint) and its tools.
    Connected(ClientSession, Vec<Tool>, usize),
    Failed(Error),
}

impl Supervisor {
    pub(super) async fn run(
        self: Arc<Self>,
        mut inbox: mpsc::Receiver<SupervisorEvent>,
        listener: Arc<dyn SupervisorListener>,
    ) {
        let mut outcome = self.start_up().await;
        // The session a move left: closed by the router once the new one is in place and the
        // calls on the old one are over.
        let mut left: Option<(usize, ClientSession)> = None;
        loop {
            match outcome {
                Attempt::Connected(session, tools, endpoint) => {
                    self.metrics
                        .set_protocol_version(Some(session.protocol_version().as_str()));
                    *lock(&self.session_started) = Some(Instant::now());
                    // The router learns where the calls go before any call sees the session.
                    let placement = match &self.router {
                        Some(router) => router.activated(endpoint),
                        None => Placement::SINGLE,
                    };
                    self.remember(&ServerStatus::Ready);
                    self.state.send_modify(|s| {
                        s.status = ServerStatus::Ready;
                        s.session = Some(session.clone());
                        s.tools = Some(Arc::new(tools));
                        s.placement = placement;
                    });
                    if let (Some(router), Some((from, old))) = (&self.router, left.take()) {
                        router.retire(from, Some(old));
                    }
                    tracing::info!(server = %self.name, "MCP server ready");
                    listener.tools_changed(&self.name);
                    listener.lists_changed(&self.name, Lists::BOTH);
                    let lost = match self
                        .follow(&session, endpoint, &mut inbox, listener.as_ref())
                        .await
                    {
                        Followed::Moved(new, tools, to) => {
                            // The old session goes on serving the calls in flight on it; the
                            // router closes it after them, once the new one is in place.
                            self.session_ended(None);
                            left = Some((endpoint, session));
                            outcome = Attempt::Connected(new, tools, to);
                            continue;
                        }
                        Followed::Lost(lost) => lost,
                    };
                    tracing::warn!(server = %self.name, reason = %lost, "MCP server session lost; reconnecting");
                    self.note_error(&lost);
                    self.session_ended(Some(lost.kind().as_str()));
                    if let Some(router) = &self.router {
                        router.endpoint_failed(endpoint, lost.message());
                    }
                    // No call may take the lost session while it is being closed.
                    self.set_status(ServerStatus::Reconnecting { attempt: 1 });
                    let _ = tokio::time::timeout(Duration::from_secs(2), session.close()).await;
                    drop(session);
                    outcome = self.reconnect(&mut inbox).await;
                }
                Attempt::Failed(error) if is_credentials_error(&error) => {
                    self.note_error(&error);
                    tracing::warn!(server = %self.name, error = %error, "MCP server refused the credentials; not retrying");
                    self.set_status(ServerStatus::NeedsCredentials {
                        reason: error.message().to_owned(),
                    });
                    listener.tools_changed(&self.name);
                    return;
                }
                Attempt::Failed(error) => {
                    self.note_error(&error);
                    tracing::warn!(server = %self.name, error = %error, "MCP server unavailable");
                    self.set_status(ServerStatus::Unavailable {
                        reason: error.message().to_owned(),
                        kind: error.kind(),
                    });
                    listener.tools_changed(&self.name);
                    outcome = self.probe(&mut inbox).await;
                }
            }
        }
    }

    /// The first attempt, and one immediate retry within the same `startup_timeout`.
    async fn start_up(&self) -> Attempt {
        let deadline = mcp_core::time::deadline_after(Instant::now(), self.connect_timeout);
        match self.attempt(deadline).await {
            Attempt::Failed(e) if !is_credentials_error(&e) && Instant::now() < deadline => {
                tracing::debug!(server = %self.name, error = %e, "start-up failed; retrying at once");
                self.attempt(deadline).await
            }
            outcome => outcome,
        }
    }

    /// Re-establishes a lost session on the backoff schedule.
    async fn reconnect(&self, inbox: &mut mpsc::Receiver<SupervisorEvent>) -> Attempt {
        let mut last = Error::network("the session was lost");
        for (index, delay) in self.policy.reconnect_delays.iter().enumerate() {
            let attempt = u32::try_from(index + 1).unwrap_or(u32::MAX);
            self.set_status(ServerStatus::Reconnecting { attempt });
            tokio::time::sleep(*delay).await;
            self.drain(inbox);
            match self
                .attempt(mcp_core::time::deadline_after(
                    Instant::now(),
                    self.connect_timeout,
                ))
                .await
            {
                connected @ Attempt::Connected(..) => {
                    self.reconnects.fetch_add(1, Ordering::Relaxed);
                    self.metrics.reconnected();
                    tracing::info!(server = %self.name, attempt, "MCP server reconnected");
                    return connected;
                }
                Attempt::Failed(e) if is_credentials_error(&e) => return Attempt::Failed(e),
                Attempt::Failed(e) => {
                    tracing::debug!(server = %self.name, attempt, error = %e, "reconnect attempt failed");
                    self.note_error(&e);
                    last = e;
                }
            }
        }
        Attempt::Failed(last)
    }

    /// Tries an unavailable server again every `probe_interval` until it is back.
    async fn probe(&self, inbox: &mut mpsc::Receiver<SupervisorEvent>) -> Attempt {
        loop {
            tokio::time::sleep(self.probe_interval).await;
            self.drain(inbox);
            self.set_status(ServerStatus::Probing);
            match self
                .attempt(mcp_core::time::deadline_after(
                    Instant::now(),
                    self.connect_timeout,
                ))
                .await
            {
                connected @ Attempt::Connected(..) => {
                    self.reconnects.fetch_add(1, Ordering::Relaxed);
                    self.metrics.reconnected();
                    tracing::info!(server = %self.name, "MCP server is back");
                    return connected;
                }
                Attempt::Failed(e) if is_credentials_error(&e) => return Attempt::Failed(e),
                Attempt::Failed(e) => {
                    tracing::debug!(server = %self.name, error = %e, "probe failed");
                    self.note_error(&e);
                    self.set_status(ServerStatus::Unavailable {
                        reason: e.message().to_owned(),
                        kind: e.kind(),
                    });
                }
            }
        }
    }

    /// Connects, lists the tools and resubscribes, all before `deadline`.
    async fn attempt(&self, deadline: Instant) -> Attempt {
        self.attempt_leaving(deadline, None).await
    }

    /// [`attempt`](Self::attempt); a routed server's session is opened where its router says,
    /// never on `leaving` (the endpoint a move goes away from).
    pub(super) async fn attempt_leaving(
        &self,
        deadline: Instant,
        leaving: Option<usize>,
    ) -> Attempt {
        let connecting = async {
            let (session, endpoint) = match &self.router {
                Some(router) => router.connect(deadline, leaving).await?,
                None => (self.connector.connect().await?, 0),
            };
            let setup = async {
                let tools = session
                    .list_all_tools_with_hints(RequestOptions::new().with_deadline(deadline))
                    .await
                    .map(|(tools, hints)| {
                        // The tool list is not kept across sessions: a listing is a miss.
                        self.metrics.cache(mcp_metrics::CacheKind::Tools, false);
                        self.note_freshness(&hints);
                        tools
                    })?;
                // Last: the resource manager is handed the session only once nothing can
                // fail (a failed move keeps it on the session it stays on).
                self.resubscribe(&session, deadline).await;
                Ok::<_, Error>(tools)
            };
            match setup.await {
                Ok(tools) => {
                    if let Some(router) = &self.router {
                        router.session_ready(endpoint);
                    }
                    Ok((session, tools, endpoint))
                }
                Err(e) => {
                    if let Some(router) = &self.router {
                        router.endpoint_failed(endpoint, e.message());
                    }
                    session.close().await;
                    Err(e)
                }
            }
        };
        match tokio::time::timeout_at(deadline, connecting).await {
            Ok(Ok((session, tools, endpoint))) => Attempt::Connected(session, tools, endpoint),
            Ok(Err(e)) => Attempt::Failed(e),
            Err(_) => Attempt::Failed(Error::timeout(format!(
                "the server did not complete start-up (initialize and tools/list) within the startup timeout ({})",
                mcp_core::time::human_duration(self.connect_timeout)
            ))),
        }
    }
}

fn is_credentials_error(error: &Error) -> bool {
    matches!(error.kind(), ErrorKind::Auth | ErrorKind::PermissionDenied)
}
