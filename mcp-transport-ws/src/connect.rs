//! Opening one WebSocket: the connection attempt under its deadline, the credentials of the
//! upgrade request from the [`AuthProvider`](mcp_wire::AuthProvider), and one retry when the
//! provider has new credentials after a 401/403 (plus one with a fresh proof when the server
//! only wants its DPoP nonce), as the HTTP transports do.

use std::sync::Arc;

use mcp_core::{TransportError, TransportErrorKind};
use mcp_wire::{AuthChallenge, AuthTarget, ChallengeOutcome, Credentials};
use tokio_rustls::rustls::ClientConfig;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

use crate::config::{Target, WebSocketServerConfig};
use crate::handshake::{upgrade, Answer, UpgradeRequest, ERROR_DETAIL_CHARS};
use crate::stream::NetStream;

/// An open WebSocket to an MCP server.
pub(crate) type Socket = WebSocketStream<NetStream>;

/// Connects and upgrades, with credentials; `tls` is needed for `wss://` URLs.
pub(crate) async fn open_socket(
    config: &WebSocketServerConfig,
    target: &Target,
    tls: Option<&Arc<ClientConfig>>,
) -> Result<Socket, TransportError> {
    let headers = config.header_values()?;
    let mut retried_with_new_credentials = false;
    let mut retried_with_nonce = false;
    loop {
        let credentials = credentials(config, target).await?;
        let request = UpgradeRequest {
            target,
            headers: &headers,
            credentials: credentials.as_ref(),
        };
        let attempt = async {
            let mut stream = NetStream::open(target, tls).await?;
            let answer = upgrade(&mut stream, &request).await?;
            Ok::<_, TransportError>((stream, answer))
        };
        let (stream, answer) = tokio::time::timeout(config.connect_timeout, attempt)
            .await
            .map_err(|_| {
                TransportError::fatal(
                    TransportErrorKind::Connect,
                    format!(
                        "{} did not complete the WebSocket upgrade within {:?} (connect_timeout)",
                        target.display, config.connect_timeout
                    ),
                )
            })??;
        let (status, www_authenticate, dpop_nonce) = match answer {
            Answer::Upgraded {
                leftover,
                dpop_nonce,
            } => {
                if let (Some(auth), Some(nonce)) = (&config.auth, &dpop_nonce) {
                    auth.accept_nonce(nonce);
                }
                let socket = WebSocketStream::from_partially_read(
                    stream,
                    leftover,
                    Role::Client,
                    Some(websocket_config(config.max_message_size)),
                )
                .await;
                tracing::debug!(url = %target.display, "WebSocket connected");
                return Ok(socket);
            }
            Answer::Refused {
                status,
                www_authenticate,
                dpop_nonce,
            } => (status, www_authenticate, dpop_nonce),
        };
        let challenge = AuthChallenge {
            status,
            www_authenticate: (!www_authenticate.is_empty()).then(|| www_authenticate.join(", ")),
            dpop_nonce,
            credentials_retry_left: !retried_with_new_credentials,
            credentials_sent: credentials.is_some(),
        };
        // Once new credentials were tried, only a retry with a (new) nonce can be left; the
        // provider is not asked about a refusal that could not be retried anyway.
        let retry_left = !retried_with_new_credentials
            || (!retried_with_nonce && challenge.dpop_nonce.is_some());
        let outcome = match &config.auth {
            Some(auth) if retry_left => auth.on_challenge(&challenge).await.map_err(|e| {
                TransportError::fatal(
                    credentials_error_kind(&e),
                    format!(
                        "{} answered HTTP {status} to the WebSocket upgrade: {}",
                        target.display,
                        e.message()
                    ),
                )
            })?,
            _ => ChallengeOutcome::GiveUp,
        };
        match outcome {
            ChallengeOutcome::Retry if !retried_with_new_credentials => {
                retried_with_new_credentials = true
            }
            ChallengeOutcome::RetryWithNonce if !retried_with_nonce => retried_with_nonce = true,
            _ => {
                return Err(TransportError::fatal(
                    TransportErrorKind::Unauthorized,
                    format!(
                        "{} refused the WebSocket upgrade with HTTP {status}{}",
                        target.display,
                        challenge
                            .www_authenticate
                            .map(|c| format!(
                                " (WWW-Authenticate: {})",
                                mcp_wire::redact::excerpt(c.as_bytes(), ERROR_DETAIL_CHARS)
                            ))
                            .unwrap_or_default()
                    ),
                ))
            }
        }
    }
}

/// tungstenite's limits: a frame and a message are both capped at `max_message_size`, so a
/// larger one is refused from its header, before any of it is buffered.
fn websocket_config(max_message_size: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(max_message_size))
        .max_frame_size(Some(max_message_size))
}

/// The upgrade request's credentials (`GET` on the configured URL).
async fn credentials(
    config: &WebSocketServerConfig,
    target: &Target,
) -> Result<Option<Credentials>, TransportError> {
    let Some(auth) = &config.auth else {
        return Ok(None);
    };
    let request = AuthTarget {
        method: "GET",
        url: &config.url,
    };
    auth.authorization(&request).await.map_err(|e| {
        TransportError::fatal(
            credentials_error_kind(&e),
            format!("no credentials for {}: {}", target.display, e.message()),
        )
    })
}

/// How a provider's failure counts: a refusal (`Unauthorized`, never retried) unless the
/// provider failed on the network (its authorization server did not answer).
fn credentials_error_kind(e: &mcp_core::Error) -> TransportErrorKind {
    match e.kind() {
        mcp_core::ErrorKind::Network | mcp_core::ErrorKind::Timeout => TransportErrorKind::Connect,
        _ => TransportErrorKind::Unauthorized,
    }
}
