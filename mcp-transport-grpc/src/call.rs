//! The call task: one `mcp.transport.v1.Mcp/Session` call carries one connection. It starts
//! the call with its metadata (configured headers, `mcp-protocol-version`, credentials), makes
//! it once more when the server refuses the credentials, the provider has new ones and what was
//! sent is safe to send again, then hands every line the server sends to the receiver (each
//! checked against `max_message_size`) — and, when the call ends, why.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mcp_core::sync::lock;
use mcp_core::{Message, ProtocolVersion, TransportError, TransportErrorKind};
use mcp_wire::{AuthChallenge, AuthProvider, AuthTarget, ChallengeOutcome, OversizedMessage};
use tokio::sync::mpsc;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tonic::transport::Channel;
use tonic::{Extensions, Request, Status, Streaming};

use crate::line::{self, Decoded};
use crate::proto::mcp_client::McpClient;
use crate::proto::JsonRpcLine;
use crate::request_stream::{AttemptStream, RequestStream};
use crate::status::{self, Stage};

/// What the receiver is handed: a message, or an error about one (recoverable) or the call
/// (fatal, then nothing more).
pub(crate) type Inbound = Result<Message, TransportError>;

/// State the sender and the call task share.
pub(crate) struct CallShared {
    /// The endpoint as shown in errors and logs.
    pub(crate) display: String,
    /// The version the session told the sender; read when the call starts.
    pub(crate) protocol_version: Mutex<Option<ProtocolVersion>>,
    /// Why the call ended, once it has (for the errors of later sends).
    pub(crate) ended: Mutex<Option<String>>,
    /// `close` was called: the call's end is expected, not an error.
    pub(crate) closing: AtomicBool,
}

impl CallShared {
    pub(crate) fn new(display: String) -> CallShared {
        CallShared {
            display,
            protocol_version: Mutex::new(None),
            ended: Mutex::new(None),
            closing: AtomicBool::new(false),
        }
    }

    /// The error of a send that found the call over.
    pub(crate) fn ended_error(&self) -> TransportError {
        let message = match lock(&self.ended).as_deref() {
            _ if self.closing.load(Ordering::Acquire) => {
                format!("the gRPC connection to {} is closed", self.display)
            }
            Some(reason) => format!(
                "the gRPC call to {} has ended ({reason}); the message was not sent",
                self.display
            ),
            None => format!("the gRPC call to {} has ended", self.display),
        };
        TransportError::fatal(TransportErrorKind::Closed, message)
    }
}

/// Everything the call needs, fixed when the transport connects.
pub(crate) struct CallSetup {
    pub(crate) channel: Channel,
    /// The configured headers as metadata.
    pub(crate) metadata: MetadataMap,
    pub(crate) auth: Option<Arc<dyn AuthProvider>>,
    /// The URL credentials are asked for.
    pub(crate) session_url: String,
    pub(crate) max_message_size: usize,
    /// tonic's decode and encode limits (the cap plus framing).
    pub(crate) tonic_limit: usize,
    pub(crate) inbound: mpsc::Sender<Inbound>,
    pub(crate) shared: Arc<CallShared>,
}

/// Runs the call to its end; what ended it goes to the receiver (unless the transport was
/// closed, when the end is expected), then the receiver sees the end of its queue.
pub(crate) async fn run_call(setup: CallSetup, requests: RequestStream) {
    let end = drive(&setup, &requests).await;
    requests.close();
    let closing = setup.shared.closing.load(Ordering::Acquire);
    *lock(&setup.shared.ended) = Some(match &end {
        End::Failed(e) => e.message().to_owned(),
        End::Clean => "the server ended it".to_owned(),
        End::Unheard => "the receiving half was dropped".to_owned(),
    });
    match end {
        End::Failed(e) if !closing => {
            tracing::debug!(endpoint = %setup.shared.display, error = %e, "gRPC call failed");
            let _ = setup.inbound.send(Err(e)).await;
        }
        End::Failed(e) => {
            tracing::debug!(endpoint = %setup.shared.display, error = %e, "gRPC call ended while closing")
        }
        End::Clean | End::Unheard => {
            tracing::debug!(endpoint = %setup.shared.display, "gRPC call ended")
        }
    }
}

/// How a call ended.
enum End {
    /// The server ended it with OK.
    Clean,
    /// Nobody receives any more (the receiving half was dropped).
    Unheard,
    /// It failed; the error says how.
    Failed(TransportError),
}

async fn drive(setup: &CallSetup, requests: &RequestStream) -> End {
    let mut streaming = match start(setup, requests).await {
        Ok(Some(streaming)) => streaming,
        Ok(None) => return End::Unheard,
        Err(e) => return End::Failed(e),
    };
    loop {
        let next = tokio::select! {
            next = streaming.message() => next,
            _ = setup.inbound.closed() => return End::Unheard,
        };
        let item = match next {
            // tonic's own limit allows for the framing around a line: the cap is on the line.
            Ok(Some(line)) if line.line.len() > setup.max_message_size => {
                let mut oversized = OversizedMessage::new();
                oversized.push(line.line.as_bytes());
                Err(oversized.error(setup.max_message_size))
            }
            Ok(Some(line)) => match line::decode(line, "the server") {
                Decoded::Message(message) => Ok(message),
                Decoded::Empty => continue,
                Decoded::Bad(e) => Err(e),
            },
            Ok(None) => return End::Clean,
            Err(status) => {
                return End::Failed(status::call_error(
                    &status,
                    &setup.shared.display,
                    Stage::Running,
                    setup.max_message_size,
                ))
            }
        };
        if setup.inbound.send(item).await.is_err() {
            return End::Unheard;
        }
    }
}

/// Starts the call; on a refusal, asks the provider and starts it once more with new
/// credentials (and once more with a fresh proof when the server only wants its DPoP nonce),
/// sending the same messages again — only when all of them are safe to send twice: with no
/// response headers yet, the server may still have handled them before refusing (a per-tool
/// scope check). `Ok(None)`: the receiver went away meanwhile.
async fn start(
    setup: &CallSetup,
    requests: &RequestStream,
) -> Result<Option<Streaming<JsonRpcLine>>, TransportError> {
    let mut retried_with_new_credentials = false;
    let mut retried_with_nonce = false;
    loop {
        let (request, credentials_sent) = request(setup, requests.stream()).await?;
        let mut client = McpClient::new(setup.channel.clone())
            .max_decoding_message_size(setup.tonic_limit)
            .max_encoding_message_size(setup.tonic_limit);
        // The answer (response headers) may only come with the server's first message (grpc-js
        // sends its headers with it): sends go on meanwhile, through the request stream.
        let answer = tokio::select! {
            answer = client.session(request) => answer,
            _ = setup.inbound.closed() => return Ok(None),
        };
        let status = match answer {
            Ok(response) => {
                requests.accepted();
                if let (Some(auth), Some(nonce)) = (&setup.auth, dpop_nonce(response.metadata())) {
                    auth.accept_nonce(&nonce);
                }
                return Ok(Some(response.into_inner()));
            }
            Err(status) => status,
        };
        let fail = |status: &Status| {
            status::call_error(
                status,
                &setup.shared.display,
                Stage::Starting,
                setup.max_message_size,
            )
        };
        let Some(auth) = setup.auth.as_ref().filter(|_| status::is_refusal(&status)) else {
            return Err(fail(&status));
        };
        let challenge = AuthChallenge {
            status: status::refusal_http_status(&status),
            www_authenticate: joined(status.metadata(), "www-authenticate"),
            dpop_nonce: dpop_nonce(status.metadata()),
            credentials_retry_left: !retried_with_new_credentials,
            credentials_sent,
        };
        // Once new credentials were tried, only a retry with a (new) nonce can be left.
        let retry_left = !retried_with_new_credentials
            || (!retried_with_nonce && challenge.dpop_nonce.is_some());
        if !retry_left {
            return Err(fail(&status));
        }
        if !requests.can_retry() {
            // Not asking the provider: it would fetch credentials nobody uses.
            return Err(TransportError::fatal(
                TransportErrorKind::Unauthorized,
                format!(
                    "{} refused the gRPC call ({}); it was not made again with new \
                     credentials: the server may have handled the messages already sent, and \
                     not all of them can be sent twice (only reads and notifications, up to \
                     max_message_size bytes of them)",
                    setup.shared.display,
                    status::describe(&status)
                ),
            ));
        }
        let outcome = auth.on_challenge(&challenge).await.map_err(|e| {
            TransportError::fatal(
                credentials_error_kind(&e),
                format!(
                    "{} refused the gRPC call ({}): {}",
                    setup.shared.display,
                    status::describe(&status),
                    e.message()
                ),
            )
        })?;
        match outcome {
            ChallengeOutcome::Retry if !retried_with_new_credentials => {
                retried_with_new_credentials = true
            }
            ChallengeOutcome::RetryWithNonce if !retried_with_nonce => retried_with_nonce = true,
            _ => return Err(fail(&status)),
        }
        if !requests.retry() {
            return Err(fail(&status));
        }
        tracing::debug!(endpoint = %setup.shared.display, "retrying the refused gRPC call with new credentials");
    }
}

/// The call's request: the configured metadata, the protocol version known now (gRPC fixes
/// metadata when a call starts), and fresh credentials for this attempt (sensitive); and
/// whether the provider gave any.
async fn request(
    setup: &CallSetup,
    stream: AttemptStream,
) -> Result<(Request<AttemptStream>, bool), TransportError> {
    let mut metadata = setup.metadata.clone();
    let version = *lock(&setup.shared.protocol_version);
    if let Some(version) = version {
        metadata.insert(
            "mcp-protocol-version",
            AsciiMetadataValue::from_static(version.as_str()),
        );
    }
    let mut credentials_sent = false;
    if let Some(auth) = &setup.auth {
        let target = AuthTarget {
            method: "POST",
            url: &setup.session_url,
        };
        let credentials = auth.authorization(&target).await.map_err(|e| {
            TransportError::fatal(
                credentials_error_kind(&e),
                format!(
                    "no credentials for {}: {}",
                    setup.shared.display,
                    e.message()
                ),
            )
        })?;
        credentials_sent = credentials.is_some();
        if let Some(credentials) = credentials {
            metadata.insert(
                "authorization",
                sensitive(credentials.authorization.expose(), &setup.shared.display)?,
            );
            if let Some(proof) = &credentials.dpop {
                metadata.insert(
                    mcp_wire::DPOP_HEADER,
                    sensitive(proof.expose(), &setup.shared.display)?,
                );
            }
        }
    }
    Ok((
        Request::from_parts(metadata, Extensions::default(), stream),
        credentials_sent,
    ))
}

fn sensitive(value: &str, display: &str) -> Result<AsciiMetadataValue, TransportError> {
    let mut value = AsciiMetadataValue::try_from(value).map_err(|_| {
        TransportError::fatal(
            TransportErrorKind::Unauthorized,
            format!("the credentials for {display} are not valid gRPC metadata"),
        )
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// How a provider's failure counts: a refusal (never retried) unless the provider failed on
/// the network (its authorization server did not answer).
fn credentials_error_kind(e: &mcp_core::Error) -> TransportErrorKind {
    match e.kind() {
        mcp_core::ErrorKind::Network | mcp_core::ErrorKind::Timeout => TransportErrorKind::Io,
        _ => TransportErrorKind::Unauthorized,
    }
}

fn dpop_nonce(metadata: &MetadataMap) -> Option<String> {
    metadata
        .get(mcp_wire::DPOP_NONCE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Every value of `key`, `, `-joined (a server may send its challenges separately).
fn joined(metadata: &MetadataMap, key: &str) -> Option<String> {
    let values: Vec<&str> = metadata
        .get_all(key)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}
