//! The bridge's `mcp.transport.v1.Mcp` service: checks the caller's bearer token, takes one of
//! the bridge's call slots (`max_calls`), opens the call's backend connection, and hands them to
//! a pump task the bridge owns.

use std::sync::Arc;

use mcp_core::sync::lock;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::pump::{pump, Pump};
use super::BridgeShared;
use crate::proto::mcp_server::Mcp;
use crate::proto::JsonRpcLine;

/// Lines waiting to go to the client.
const TO_CLIENT_QUEUE: usize = 64;

/// What a caller is told when the backend connection fails (the reason is logged, not sent).
const UNREACHABLE: &str = "the bridged server could not be reached";

pub(crate) struct BridgeService {
    shared: Arc<BridgeShared>,
}

impl BridgeService {
    pub(crate) fn new(shared: Arc<BridgeShared>) -> BridgeService {
        BridgeService { shared }
    }

    fn check_bearer(&self, request: &Request<Streaming<JsonRpcLine>>) -> Result<(), Status> {
        let Some(expected) = &self.shared.bearer else {
            return Ok(());
        };
        let Some(given) = request.metadata().get("authorization") else {
            return Err(Status::unauthenticated(
                "this MCP gRPC bridge needs `authorization: Bearer <token>` metadata",
            ));
        };
        let given = given.as_encoded_bytes();
        // The scheme is case-insensitive (RFC 6750); the token is compared in constant time.
        let token = &expected.as_bytes()["Bearer ".len().min(expected.len())..];
        let accepted = mcp_wire::bearer_matches(given, token);
        if accepted {
            Ok(())
        } else {
            Err(Status::unauthenticated(
                "the bearer token was not accepted by this MCP gRPC bridge",
            ))
        }
    }
}

#[tonic::async_trait]
impl Mcp for BridgeService {
    type SessionStream = ReceiverStream<Result<JsonRpcLine, Status>>;

    async fn session(
        &self,
        request: Request<Streaming<JsonRpcLine>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        self.check_bearer(&request)?;
        if self.shared.shutting_down() {
            return Err(Status::unavailable("the MCP gRPC bridge is shutting down"));
        }
        // Taken before the backend is opened, so a refused call starts nothing.
        let call_slot = self
            .shared
            .call_slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| {
                Status::resource_exhausted(format!(
                    "the MCP gRPC bridge is already serving as many calls as it allows \
                     (max_calls is {}); retry when one ends",
                    self.shared.max_calls
                ))
            })?;
        let peer = request
            .remote_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        // The caller is told only that the server could not be reached: the reason may name
        // local commands and paths, so it goes to the bridge's log.
        let backend = match tokio::time::timeout(
            self.shared.backend_connect_timeout,
            self.shared.backend.connect(),
        )
        .await
        {
            Ok(Ok(backend)) => backend,
            Ok(Err(e)) => {
                tracing::warn!(%peer, error = %e, "the gRPC bridge could not connect to its MCP server");
                return Err(Status::unavailable(UNREACHABLE));
            }
            Err(_) => {
                let within = mcp_core::time::human_duration(self.shared.backend_connect_timeout);
                tracing::warn!(%peer, %within, "the gRPC bridge could not connect to its MCP server in time");
                return Err(Status::unavailable(format!(
                    "{UNREACHABLE} within {within}"
                )));
            }
        };
        tracing::debug!(%peer, "gRPC bridge call started");
        let (to_client, lines) = mpsc::channel(TO_CLIENT_QUEUE);
        let call = Pump {
            from_client: request.into_inner(),
            to_client,
            backend,
            max_message_size: self.shared.max_message_size,
            backend_close_timeout: self.shared.backend_close_timeout,
            shutdown: self.shared.shutdown.subscribe(),
            active: self.shared.active.clone(),
            call_slot,
        };
        {
            let mut calls = lock(&self.shared.calls);
            // Finished calls are reaped here, so a long-running bridge keeps no results.
            while calls.try_join_next().is_some() {}
            calls.spawn(pump(call));
        }
        Ok(Response::new(ReceiverStream::new(lines)))
    }
}
