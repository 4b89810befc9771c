//! Sending what goes out: an answer inline or from a task registered by request id (so that
//! `notifications/cancelled` can drop it), after `--delay-ms`; notifications; the channel.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::oneshot;

use super::{FixtureServer, Outgoing, OutgoingKind, Reply, ReplyFuture};
use crate::jsonrpc::{self, RpcError};

impl FixtureServer {
    /// Runs `future` in a task registered under the request id so that it
    /// can be cancelled; applies `--delay-ms` before answering.
    pub(super) fn spawn_request(&self, id: &RawValue, future: ReplyFuture) {
        let id: Box<RawValue> = id.to_owned();
        let key = jsonrpc::id_key_raw(&id);
        let generation = self.inner.next_generation.fetch_add(1, Ordering::Relaxed);
        let (cancel_tx, cancel_rx) = oneshot::channel::<()>();
        self.state()
            .in_flight
            .insert(key.clone(), (generation, cancel_tx));
        let server = self.clone();
        let delay = Duration::from_millis(self.inner.options.delay_ms);
        tokio::spawn(async move {
            let work = async move {
                let reply = future.await;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                reply
            };
            let cancelled = async move {
                // A dropped trigger (duplicate id replaced it) is not a cancellation.
                if cancel_rx.await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let reply = tokio::select! {
                biased;
                () = cancelled => None,
                reply = work => Some(reply),
            };
            match reply {
                Some(reply) => {
                    {
                        let mut state = server.state();
                        if state.in_flight.get(&key).map(|(g, _)| *g) == Some(generation) {
                            state.in_flight.remove(&key);
                        }
                    }
                    server.send_reply(&id, reply);
                }
                None => tracing::debug!(id = %key, "request cancelled; not answering"),
            }
        });
    }

    pub(super) fn send_reply(&self, id: &RawValue, reply: Reply) {
        let json = match reply {
            Reply::Result(value) => jsonrpc::result_line(id, &value),
            Reply::Error(error) => jsonrpc::error_line(Some(id), &error),
            Reply::Line(line) => line,
            Reply::Silent => return,
        };
        self.emit(OutgoingKind::Response, json);
    }

    /// Sends an error response; delayed by `--delay-ms` like every response.
    pub(super) fn send_error(&self, id: Option<&RawValue>, error: &RpcError) {
        let json = jsonrpc::error_line(id, error);
        let delay = self.inner.options.delay_ms;
        if delay == 0 {
            self.emit(OutgoingKind::Response, json);
        } else {
            let server = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                server.emit(OutgoingKind::Response, json);
            });
        }
    }

    pub(super) fn emit(&self, kind: OutgoingKind, json: String) {
        // Output of a message handled inline by the blocking stdio loop is written by that loop
        // right away; everything else (spawned tasks) goes through the channel.
        let Some(outgoing) = crate::stdio::capture_inline(Outgoing { kind, json }) else {
            return;
        };
        if self.inner.out.send(outgoing).is_err() {
            tracing::debug!("outgoing channel closed; message dropped");
        }
    }

    /// Sends a notification to the client.
    pub(crate) fn notify(&self, method: &str, params: &Value) {
        self.emit(
            OutgoingKind::Notification,
            jsonrpc::notification_line(method, params),
        );
    }
}
