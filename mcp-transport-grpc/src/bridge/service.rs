//! The bridge's `mcp.transport.v1.Mcp` service: checks the caller's bearer token, opens the
//! call's backend connection, and hands both to a pump task the bridge owns.

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
        let scheme = "Bearer ".len();
        let accepted = given.len() == expected.len()
            && given[..scheme].eq_ignore_ascii_case(&expected.as_bytes()[..scheme])
            && same_secret(&given[scheme..], &expected.as_bytes()[scheme..]);
        if accepted {
            Ok(())
        } else {
            Err(Status::unauthenticated(
                "the bearer token was not accepted by this MCP gRPC bridge",
            ))
        }
    }
}

/// Compares two secrets without stopping at the first difference (no timing oracle on where
/// the token goes wrong); the length is not secret.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
        let peer = request
            .remote_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let backend = match tokio::time::timeout(
            self.shared.backend_connect_timeout,
            self.shared.backend.connect(),
        )
        .await
        {
            Ok(Ok(backend)) => backend,
            Ok(Err(e)) => {
                return Err(Status::unavailable(format!(
                    "the MCP gRPC bridge could not connect to its MCP server: {}",
                    e.message()
                )))
            }
            Err(_) => {
                return Err(Status::unavailable(format!(
                    "the MCP gRPC bridge could not connect to its MCP server within {}",
                    mcp_core::time::human_duration(self.shared.backend_connect_timeout)
                )))
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

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"ab"));
        assert!(same_secret(b"", b""));
    }
}
