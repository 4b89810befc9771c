//! `mcp-wire`: what the transport crates share beyond the traits of `mcp-core`, so that the
//! core stays the few types every crate needs and a change here rebuilds only the transports
//! (and what composes them), never the session engine or the policies.
//!
//! - [`auth`]: the seam through which the networked transports (Streamable HTTP, HTTP+SSE,
//!   WebSocket, gRPC) get the credentials of each request and report the server's challenges
//!   and nonces ([`AuthProvider`]); `mcp-auth` implements it, a static token is
//!   [`StaticBearer`].
//! - [`broken`]: what can still be read from bytes that did not parse as a message: the
//!   request an answer names ([`request_id_of`]), whether it was the server's own message
//!   ([`classify_broken_message`]), the id a broken request owes an error to
//!   ([`id_of_broken_request`]), the id in the first bytes of a message still arriving
//!   ([`request_id_in_prefix`]).
//! - [`redact`]: credential-shaped values taken out of a peer's text (and URLs) before an
//!   error or a log shows them: [`redact_secrets`](redact::redact_secrets),
//!   [`excerpt`](redact::excerpt), [`redact_url`](redact::redact_url).
//! - [`oversized`]: what a transport keeps of a message over its cap ([`OversizedMessage`]: size,
//!   first and last KiB, the request id found there) and the error of one it will not send
//!   ([`unsent_oversized`]).
//! - [`outbound`]: the one outbound queue of the stream transports (stdio, WebSocket, gRPC):
//!   bounded, so `send` waits for room under the request's deadline; closed once, without
//!   waiting, with what was queued still delivered; drained by the writer in batches
//!   ([`OutboundQueue`], [`OutboundReceiver`]).
//! - [`task`]: the owner of a transport's spawned task, which ends it within a grace on close
//!   and at once when dropped ([`OwnedTask`]).

#![warn(missing_docs)]

pub mod auth;
pub mod broken;
pub mod outbound;
pub mod oversized;
pub mod redact;
pub mod task;

pub use auth::{
    bearer_matches, same_secret, AuthChallenge, AuthProvider, AuthTarget, AuthorizationValue,
    ChallengeOutcome, Credentials, DpopProof, StaticBearer, DPOP_HEADER, DPOP_NONCE_HEADER,
};
pub use broken::{
    classify_broken_message, id_of_broken_request, message_error_text, request_id_in_prefix,
    request_id_of, BrokenMessage,
};
pub use outbound::{OutboundClosed, OutboundQueue, OutboundReceiver, Queued};
pub use oversized::{unsent_oversized, OversizedMessage};
pub use task::OwnedTask;
