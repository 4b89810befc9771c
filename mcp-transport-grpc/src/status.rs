//! How a gRPC status reads as a [`TransportError`]: refusals of credentials are
//! `Unauthorized`, a size limit is `MessageTooLarge`, a call that demonstrably never reached a
//! handler is `Connect` (never delivered), and any other end of a call is the peer going away
//! (what was sent may have been handled) — each naming the status code (as gRPC spells it) and
//! the server's message.

use mcp_core::{TransportError, TransportErrorKind};
use tonic::{Code, Status};

/// How far the call had got when it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// No response headers yet. That does not mean nothing was handled: grpc-js and grpc-go
    /// send their headers only with the first message, so a handler may have read (and acted
    /// on) what the client sent and then failed. Only a status that shows the call never
    /// reached a handler ([`never_reached_a_handler`]) means nothing was delivered.
    Starting,
    /// Messages were flowing.
    Running,
}

/// Whether the status refuses the call's credentials.
pub(crate) fn is_refusal(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unauthenticated | Code::PermissionDenied
    )
}

/// The HTTP status a refusal stands for, as the [`mcp_wire::AuthProvider`] understands it.
pub(crate) fn refusal_http_status(status: &Status) -> u16 {
    if status.code() == Code::PermissionDenied {
        403
    } else {
        401
    }
}

/// The fatal error for a call that ended with `status` (never `OK`).
pub(crate) fn call_error(
    status: &Status,
    endpoint: &str,
    stage: Stage,
    max_message_size: usize,
) -> TransportError {
    let detail = describe(status);
    if is_refusal(status) {
        return TransportError::fatal(
            TransportErrorKind::Unauthorized,
            format!("{endpoint} refused the gRPC call: {detail}"),
        );
    }
    if is_size_limit(status) {
        return TransportError::fatal(
            TransportErrorKind::MessageTooLarge,
            format!(
                "a message on the gRPC call to {endpoint} was over the size limit \
                 (max_message_size is {max_message_size} bytes, plus {} for the gRPC framing), \
                 which ends the call: {detail}",
                crate::config::FRAMING_ALLOWANCE
            ),
        );
    }
    if is_undecodable(status) {
        return TransportError::fatal(
            TransportErrorKind::InvalidMessage,
            format!(
                "a message on the gRPC call to {endpoint} could not be decoded (not a valid \
                 JsonRpcLine), which ends the call: {detail}"
            ),
        );
    }
    match (stage, status.code()) {
        (Stage::Starting, Code::Unimplemented) => TransportError::fatal(
            TransportErrorKind::Connect,
            format!(
                "{endpoint} does not serve {} (is it an MCP gRPC server?): {detail}",
                crate::SESSION_PATH
            ),
        ),
        (Stage::Starting, _) if never_reached_a_handler(status) => TransportError::fatal(
            TransportErrorKind::Connect,
            format!("the gRPC call to {endpoint} could not be made: {detail}"),
        ),
        (Stage::Starting, _) => TransportError::fatal(
            TransportErrorKind::PeerGone,
            format!(
                "the gRPC call to {endpoint} ended before the server answered (it may have \
                 handled the messages sent): {detail}"
            ),
        ),
        (Stage::Running, _) => TransportError::fatal(
            TransportErrorKind::PeerGone,
            format!("the gRPC call to {endpoint} ended: {detail}"),
        ),
    }
}

/// Whether the status shows the call never got to the server: tonic could not (re)open the
/// HTTP/2 connection (TCP, TLS), which it reports as UNAVAILABLE caused by a
/// [`tonic::ConnectError`]. (An UNIMPLEMENTED method is the other such case, worded apart.) A
/// stream the server refused (RST_STREAM REFUSED_STREAM) would be one too, but tonic does not
/// tell it apart from other HTTP/2 errors without a dependency on `h2`: it counts as possibly
/// handled, which costs a retry, never a duplicate.
fn never_reached_a_handler(status: &Status) -> bool {
    let mut next = std::error::Error::source(status);
    while let Some(cause) = next {
        if cause.is::<tonic::ConnectError>() {
            return true;
        }
        next = cause.source();
    }
    false
}

/// tonic reports a message over its limits as OUT_OF_RANGE ("decoded/encoded message length
/// too large") on the side that noticed, and passes the peer's status on as it came.
fn is_size_limit(status: &Status) -> bool {
    matches!(status.code(), Code::OutOfRange | Code::ResourceExhausted)
        && status.message().contains("message length too large")
}

/// tonic reports a message it cannot decode as INTERNAL: a protobuf decode error (a `line`
/// that is not UTF-8, a broken field) or a compressed message when no compression was
/// negotiated. The peer broke the protocol; it did not go away.
fn is_undecodable(status: &Status) -> bool {
    status.code() == Code::Internal
        && (status
            .message()
            .starts_with("failed to decode Protobuf message")
            || status
                .message()
                .starts_with("protocol error: received message with compressed-flag"))
}

/// `CODE: message` (or the underlying error when the message is empty).
pub(crate) fn describe(status: &Status) -> String {
    let mut message = status.message().to_owned();
    if let Some(source) = std::error::Error::source(status) {
        let cause = error_chain(source);
        if cause.contains(&message) {
            // tonic's "transport error" over a cause that says it again, and more.
            message = cause;
        } else if !message.contains(&cause) {
            message = format!("{message}: {cause}");
        }
    }
    if message.is_empty() {
        code_name(status.code()).to_owned()
    } else {
        format!("{}: {message}", code_name(status.code()))
    }
}

/// An error and its sources, `: `-joined (tonic's transport errors say little on their own:
/// "transport error").
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        next = cause.source();
    }
    text
}

/// The status code as gRPC documents it (`UNAVAILABLE`), which is what operators search for.
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1:1";

    #[test]
    fn refusals_are_unauthorized_with_the_code_and_message() {
        for (status, http) in [
            (Status::unauthenticated("token expired"), 401),
            (Status::permission_denied("wrong tenant"), 403),
        ] {
            let e = call_error(&status, URL, Stage::Starting, 10);
            assert_eq!(e.kind(), TransportErrorKind::Unauthorized);
            assert!(e.is_fatal());
            assert!(!e.may_have_been_delivered());
            assert!(e.message().contains(status.message()), "{e}");
            assert!(e.message().contains(code_name(status.code())), "{e}");
            assert_eq!(refusal_http_status(&status), http);
        }
    }

    #[test]
    fn size_limits_are_message_too_large_naming_the_cap() {
        let status = Status::out_of_range(
            "Error, decoded message length too large: found 20000000 bytes, the limit is: 16842752 bytes",
        );
        let e = call_error(&status, URL, Stage::Running, 16 * 1024 * 1024);
        assert_eq!(e.kind(), TransportErrorKind::MessageTooLarge);
        assert!(e.is_fatal());
        assert!(e.message().contains("16777216"), "{e}");
        assert!(e.message().contains("max_message_size"), "{e}");
        assert!(e.message().contains("found 20000000 bytes"), "{e}");
    }

    #[test]
    fn messages_tonic_cannot_decode_are_invalid_messages() {
        for message in [
            "failed to decode Protobuf message: JsonRpcLine.line: invalid string value: data is not UTF-8 encoded",
            "protocol error: received message with compressed-flag but no grpc-encoding was specified",
        ] {
            let e = call_error(&Status::internal(message), URL, Stage::Running, 1);
            assert_eq!(e.kind(), TransportErrorKind::InvalidMessage, "{message}");
            assert!(e.is_fatal());
            assert!(e.message().contains("could not be decoded"), "{e}");
            assert!(e.message().contains(message), "{e}");
        }
        // Any other INTERNAL status is the peer's end of the call.
        let e = call_error(&Status::internal("boom"), URL, Stage::Running, 1);
        assert_eq!(e.kind(), TransportErrorKind::PeerGone);
    }

    #[test]
    fn other_statuses_name_the_code_and_the_stage() {
        let e = call_error(&Status::unimplemented(""), URL, Stage::Starting, 1);
        assert_eq!(e.kind(), TransportErrorKind::Connect);
        assert!(e
            .message()
            .contains("does not serve /mcp.transport.v1.Mcp/Session"));
        assert!(e.message().contains("UNIMPLEMENTED"), "{e}");
        let e = call_error(
            &Status::unavailable("the MCP server exited"),
            URL,
            Stage::Running,
            1,
        );
        assert_eq!(e.kind(), TransportErrorKind::PeerGone);
        assert!(
            e.message().contains("UNAVAILABLE: the MCP server exited"),
            "{e}"
        );
        // Before response headers, a handler may still have read and acted on the messages.
        let e = call_error(&Status::internal("boom"), URL, Stage::Starting, 1);
        assert_eq!(e.kind(), TransportErrorKind::PeerGone);
        assert!(e.may_have_been_delivered());
        assert!(e.message().contains("INTERNAL: boom"), "{e}");
    }

    #[test]
    fn only_a_connection_that_could_not_be_made_is_never_delivered() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let status = Status::from_error(Box::new(tonic::ConnectError(Box::new(refused))));
        assert_eq!(status.code(), Code::Unavailable);
        let e = call_error(&status, URL, Stage::Starting, 1);
        assert_eq!(e.kind(), TransportErrorKind::Connect, "{e}");
        assert!(!e.may_have_been_delivered());
        assert!(e.message().contains("could not be made"), "{e}");
        assert!(e.message().contains("refused"), "{e}");
        // The same code from the server (or a broken connection) may follow a handler's work.
        let e = call_error(&Status::unavailable("draining"), URL, Stage::Starting, 1);
        assert_eq!(e.kind(), TransportErrorKind::PeerGone, "{e}");
        assert!(e.may_have_been_delivered());
    }
}
