//! Close codes (RFC 6455 §7.4) both ways: what a server's close frame means for the session,
//! and the frames this client closes with.

use mcp_core::{TransportError, TransportErrorKind};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

/// How many characters of a close frame's reason go into an error (a reason is at most 123
/// bytes; this only guards the message against control characters and noise).
const REASON_CHARS: usize = 123;

/// The error for a connection the server closed while the client was not closing it: 1008
/// (policy violation, what servers send for refused credentials) is `Unauthorized`; 1011 is a
/// server error; anything else is the peer going away. The message names the code and the
/// reason.
pub(crate) fn peer_closed(display: &str, frame: Option<&CloseFrame>) -> TransportError {
    let Some(frame) = frame else {
        return TransportError::fatal(
            TransportErrorKind::PeerGone,
            format!("{display} closed the WebSocket without a close code"),
        );
    };
    let code = u16::from(frame.code);
    let reason: String = frame
        .reason
        .chars()
        .filter(|c| !c.is_control())
        .take(REASON_CHARS)
        .collect();
    let reason = if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    };
    let (kind, what) = match frame.code {
        CloseCode::Policy => (
            TransportErrorKind::Unauthorized,
            "closed the WebSocket for a policy violation (usually refused credentials)",
        ),
        CloseCode::Error => (
            TransportErrorKind::PeerGone,
            "closed the WebSocket after a server error",
        ),
        CloseCode::Normal => (
            TransportErrorKind::PeerGone,
            "closed the WebSocket (normal closure)",
        ),
        CloseCode::Away => (
            TransportErrorKind::PeerGone,
            "closed the WebSocket (going away)",
        ),
        CloseCode::Size => (
            TransportErrorKind::PeerGone,
            "closed the WebSocket: a message from this client was too large for it",
        ),
        // tungstenite also reports 1002 in place of a close code a server may not send
        // (1005, 1006, 1015, out of range), so the server is not blamed on the client.
        CloseCode::Protocol => (
            TransportErrorKind::PeerGone,
            "closed the WebSocket for a protocol violation (the server's, when its own close code was not a valid one; else this client's)",
        ),
        CloseCode::Unsupported | CloseCode::Invalid => (
            TransportErrorKind::PeerGone,
            "closed the WebSocket: it could not accept a message from this client",
        ),
        CloseCode::Restart | CloseCode::Again => (
            TransportErrorKind::PeerGone,
            "closed the WebSocket and asks to reconnect later",
        ),
        _ => (TransportErrorKind::PeerGone, "closed the WebSocket"),
    };
    TransportError::fatal(
        kind,
        format!("{display} {what} (close code {code}){reason}"),
    )
}

/// The frame `close` ends a connection with.
pub(crate) fn normal() -> CloseFrame {
    frame(CloseCode::Normal, "client closing")
}

/// A frame with `code` and `reason`.
pub(crate) fn frame(code: CloseCode, reason: &'static str) -> CloseFrame {
    CloseFrame {
        code,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_codes_become_errors_naming_code_and_reason() {
        for (code, reason, kind, text) in [
            (
                1008,
                "token expired",
                TransportErrorKind::Unauthorized,
                "closed the WebSocket for a policy violation (usually refused credentials) (close code 1008): token expired",
            ),
            (
                1011,
                "boom",
                TransportErrorKind::PeerGone,
                "closed the WebSocket after a server error (close code 1011): boom",
            ),
            (
                1000,
                "",
                TransportErrorKind::PeerGone,
                "closed the WebSocket (normal closure) (close code 1000)",
            ),
            (
                1001,
                "bye\n\u{7}",
                TransportErrorKind::PeerGone,
                "closed the WebSocket (going away) (close code 1001): bye",
            ),
            (
                1002,
                "Protocol violation",
                TransportErrorKind::PeerGone,
                "closed the WebSocket for a protocol violation (the server's, when its own close code was not a valid one; else this client's) (close code 1002): Protocol violation",
            ),
            (
                4000,
                "custom",
                TransportErrorKind::PeerGone,
                "closed the WebSocket (close code 4000): custom",
            ),
        ] {
            let frame = CloseFrame {
                code: CloseCode::from(code),
                reason: reason.into(),
            };
            let e = peer_closed("ws://h/mcp", Some(&frame));
            assert!(e.is_fatal());
            assert_eq!(e.kind(), kind, "{code}");
            assert_eq!(e.message(), format!("ws://h/mcp {text}"));
        }
        let e = peer_closed("ws://h/mcp", None);
        assert_eq!(e.kind(), TransportErrorKind::PeerGone);
        assert!(e.message().contains("without a close code"));
    }
}
