//! Replaying a request the server refused because it forgot the session (Streamable HTTP's
//! 404 with a session id): a new handshake on the same transport, then the same request again.
//!
//! Not a layer: only the engine knows the session was lost (the transport reports it), holds
//! the handshake that makes a new one, and knows that this refusal proves the request never
//! ran — a retry layer above sees an ordinary failure and could not tell it may send a
//! side-effecting request again.

use std::sync::atomic::Ordering;

use mcp_core::error::{Delivery, Error};
use mcp_core::jsonrpc::Request;
use mcp_core::transport::TransportErrorKind;
use mcp_core::types::methods;

use super::ClientSession;

/// How often one request is replayed on a new session before its failure is reported.
pub(super) const MAX_SESSION_REPLAYS: u32 = 3;

impl ClientSession {
    /// Hands the request to the transport. Where the server can forget the session (HTTP) a
    /// copy is kept: a request refused with "unknown session" never ran, so after a new
    /// handshake it is sent again (at most [`MAX_SESSION_REPLAYS`] times).
    /// `replays`: how often the request was already refused for a forgotten session (in place).
    pub(super) async fn send_replaying(
        &self,
        method: &str,
        request: Request,
        mut replays: u32,
    ) -> Result<(), Error> {
        let shared = &self.shared;
        let replay = (shared.sender.capabilities().sessions_can_expire
            && method != methods::INITIALIZE)
            .then(|| request.clone());
        let mut generation = shared.session_generation.load(Ordering::Acquire);
        let mut sent = shared.sender.send(request.into()).await;
        while let Err(e) = sent {
            let expired = e.kind() == TransportErrorKind::SessionExpired;
            match &replay {
                Some(replay) if expired && replays < MAX_SESSION_REPLAYS => {
                    replays += 1;
                    tracing::info!(
                        method,
                        "the server forgot the session; initializing a new one"
                    );
                    // Boxed: rare, and it would otherwise grow every request's future.
                    Box::pin(self.reinitialize(generation))
                        .await
                        .map_err(|e| e.with_delivery(Delivery::NotSent))?;
                    generation = shared.session_generation.load(Ordering::Acquire);
                    sent = shared.sender.send(replay.clone().into()).await;
                }
                _ => return Err(Error::from(e)),
            }
        }
        Ok(())
    }
}
