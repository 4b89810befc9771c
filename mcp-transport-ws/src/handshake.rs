//! The HTTP/1.1 upgrade request and its answer (RFC 6455 §4.1), offering the `mcp`
//! subprotocol and carrying the configured headers and credentials.
//!
//! Written here rather than left to tungstenite's client handshake, which logs the raw
//! request — its `Authorization` header included — at trace level, where any application
//! that bridges `log` records into its tracing output would print the credential.
//! tungstenite still does everything after the upgrade (framing, masking, pings, closing).

use mcp_core::{TransportError, TransportErrorKind};
use mcp_wire::Credentials;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::http::header::{HeaderName, HeaderValue};

use crate::config::Target;
use crate::stream::NetStream;

/// The subprotocol every MCP WebSocket server selects.
pub const SUBPROTOCOL: &str = "mcp";

/// The largest response head read (status line and headers).
const MAX_RESPONSE_HEAD: usize = 16 * 1024;
/// The most response headers parsed.
const MAX_HEADERS: usize = 64;
/// How many characters of a refusal's body (or of its `WWW-Authenticate`) go into the error.
pub(crate) const ERROR_DETAIL_CHARS: usize = 200;

/// One upgrade request.
pub(crate) struct UpgradeRequest<'a> {
    pub(crate) target: &'a Target,
    /// The configured headers (checked, sensitive).
    pub(crate) headers: &'a [(HeaderName, HeaderValue)],
    /// The provider's credentials for this attempt; they replace a configured
    /// `Authorization` (and `DPoP`) header.
    pub(crate) credentials: Option<&'a Credentials>,
}

/// What the server answered.
#[derive(Debug)]
pub(crate) enum Answer {
    /// 101 Switching Protocols with the `mcp` subprotocol. `leftover`: bytes read past the
    /// head, the WebSocket's first frames.
    Upgraded {
        leftover: Vec<u8>,
        dpop_nonce: Option<String>,
    },
    /// 401 or 403: the credentials were refused.
    Refused {
        status: u16,
        www_authenticate: Vec<String>,
        dpop_nonce: Option<String>,
    },
}

impl UpgradeRequest<'_> {
    /// The request's bytes for the `Sec-WebSocket-Key` `key`.
    fn encode(&self, key: &str) -> Result<Vec<u8>, TransportError> {
        let target = self.target;
        let mut out = Vec::with_capacity(512);
        for line in [
            format!("GET {} HTTP/1.1\r\n", target.path_and_query),
            format!("Host: {}\r\n", target.host_header),
            "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n".into(),
            format!("Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Protocol: {SUBPROTOCOL}\r\n"),
        ] {
            out.extend_from_slice(line.as_bytes());
        }
        let replaced = |name: &HeaderName| {
            self.credentials.is_some()
                && (name.as_str() == "authorization" || name.as_str() == mcp_wire::DPOP_HEADER)
        };
        for (name, value) in self.headers.iter().filter(|(n, _)| !replaced(n)) {
            push_header(&mut out, name.as_str(), value.as_bytes());
        }
        if let Some(credentials) = self.credentials {
            let checked = |value: &str| {
                HeaderValue::from_str(value).map_err(|_| {
                    TransportError::fatal(
                        TransportErrorKind::Unauthorized,
                        format!(
                            "the credentials for {} are not a valid header value",
                            target.display
                        ),
                    )
                })
            };
            let authorization = checked(credentials.authorization.expose())?;
            push_header(&mut out, "Authorization", authorization.as_bytes());
            if let Some(proof) = &credentials.dpop {
                push_header(&mut out, "DPoP", checked(proof.expose())?.as_bytes());
            }
        }
        out.extend_from_slice(b"\r\n");
        Ok(out)
    }
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Sends the upgrade request on `stream` and reads the answer's head. Errors (fatal
/// `Connect`) for anything but a valid switch to `mcp` or a 401/403.
pub(crate) async fn upgrade(
    stream: &mut NetStream,
    request: &UpgradeRequest<'_>,
) -> Result<Answer, TransportError> {
    let display = &request.target.display;
    let key = generate_key();
    let bytes = request.encode(&key)?;
    let io_error = |what: &str, e: std::io::Error| {
        TransportError::fatal(
            TransportErrorKind::Connect,
            format!("{what} {display} failed during the WebSocket upgrade: {e}"),
        )
    };
    stream
        .write_all(&bytes)
        .await
        .map_err(|e| io_error("writing to", e))?;
    stream
        .flush()
        .await
        .map_err(|e| io_error("writing to", e))?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| io_error("reading from", e))?;
        if n == 0 {
            return Err(refusal(
                display,
                "closed the connection without answering the WebSocket upgrade",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(answer) = parse_answer(&buf, &key, display)? {
            return Ok(answer);
        }
        if buf.len() > MAX_RESPONSE_HEAD {
            return Err(refusal(
                display,
                &format!("answered the WebSocket upgrade with more than {MAX_RESPONSE_HEAD} bytes of headers"),
            ));
        }
    }
}

fn refusal(display: &str, what: &str) -> TransportError {
    TransportError::fatal(TransportErrorKind::Connect, format!("{display} {what}"))
}

/// Parses the answer in `buf`: `None` while the head is incomplete.
fn parse_answer(buf: &[u8], key: &str, display: &str) -> Result<Option<Answer>, TransportError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => {
            return Err(refusal(
                display,
                &format!("answered the WebSocket upgrade with something that is not HTTP ({e})"),
            ))
        }
    };
    let status = response.code.unwrap_or(0);
    let all = |name: &str| -> Vec<String> {
        response
            .headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_owned())
            .collect()
    };
    let one = |name: &str| all(name).into_iter().next();
    let dpop_nonce = one(mcp_wire::DPOP_NONCE_HEADER);
    match status {
        101 => {}
        401 | 403 => {
            return Ok(Some(Answer::Refused {
                status,
                www_authenticate: all("www-authenticate"),
                dpop_nonce,
            }))
        }
        _ => {
            // The server's text: redacted (it may echo the credentials it was sent), capped,
            // without control characters.
            let detail = mcp_wire::redact::excerpt(&buf[head_len..], ERROR_DETAIL_CHARS);
            let hint = match status {
                404 => "; check the URL's path".to_owned(),
                300..=399 => format!(
                    "; redirects are not followed (Location: {})",
                    one("location")
                        .map(|l| mcp_wire::redact::redact_url(&l))
                        .unwrap_or_default()
                ),
                200..=299 => "; the server did not switch protocols: is this a WebSocket endpoint?"
                    .to_owned(),
                _ => String::new(),
            };
            return Err(refusal(
                display,
                &format!(
                    "answered the WebSocket upgrade with HTTP {status} {}{}{hint}",
                    response.reason.unwrap_or(""),
                    if detail.is_empty() {
                        String::new()
                    } else {
                        format!(": {detail}")
                    }
                ),
            ));
        }
    }
    let has_token = |name: &str, token: &str| {
        all(name)
            .iter()
            .flat_map(|v| v.split(',').map(str::trim).collect::<Vec<_>>())
            .any(|t| t.eq_ignore_ascii_case(token))
    };
    if !has_token("upgrade", "websocket") || !has_token("connection", "upgrade") {
        return Err(refusal(
            display,
            "switched protocols without `Upgrade: websocket` and `Connection: Upgrade`",
        ));
    }
    if one("sec-websocket-accept").as_deref() != Some(derive_accept_key(key.as_bytes()).as_str()) {
        return Err(refusal(
            display,
            "answered the WebSocket upgrade with a wrong Sec-WebSocket-Accept (not a WebSocket server, or a proxy in between)",
        ));
    }
    match one("sec-websocket-protocol").as_deref() {
        Some(SUBPROTOCOL) => {}
        None => {
            return Err(refusal(
                display,
                "accepted the WebSocket upgrade without selecting the `mcp` subprotocol; it does not speak MCP over WebSocket",
            ))
        }
        Some(other) => {
            return Err(refusal(
                display,
                &format!(
                    "selected the WebSocket subprotocol {other:?}, but only `mcp` was offered"
                ),
            ))
        }
    }
    if let Some(extensions) = one("sec-websocket-extensions") {
        return Err(refusal(
            display,
            &format!("selected WebSocket extensions ({extensions}) that were not offered"),
        ));
    }
    Ok(Some(Answer::Upgraded {
        leftover: buf[head_len..].to_vec(),
        dpop_nonce,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_wire::{AuthorizationValue, DpopProof};

    fn target() -> Target {
        Target::parse("ws://127.0.0.1:9/mcp?x=1").unwrap()
    }

    fn switching(key: &str, extra: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n{extra}\r\n",
            derive_accept_key(key.as_bytes())
        )
        .into_bytes()
    }

    #[test]
    fn the_request_offers_mcp_and_carries_headers_and_credentials() {
        let target = target();
        let mut api_key = HeaderValue::from_static("k");
        api_key.set_sensitive(true);
        let headers = [
            (HeaderName::from_static("x-api-key"), api_key),
            (
                HeaderName::from_static("authorization"),
                HeaderValue::from_static("Bearer static"),
            ),
        ];
        let plain = UpgradeRequest {
            target: &target,
            headers: &headers,
            credentials: None,
        };
        let text = String::from_utf8(plain.encode("KEY").unwrap()).unwrap();
        assert!(text.starts_with("GET /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"));
        for line in [
            "Sec-WebSocket-Key: KEY\r\n",
            "Sec-WebSocket-Protocol: mcp\r\n",
            "x-api-key: k\r\n",
            "authorization: Bearer static\r\n",
        ] {
            assert!(text.contains(line), "{line:?} in {text}");
        }
        assert!(text.ends_with("\r\n\r\n"));

        let credentials = Credentials {
            authorization: AuthorizationValue::bearer("fresh"),
            dpop: Some(DpopProof::new("proof")),
        };
        let with_provider = UpgradeRequest {
            credentials: Some(&credentials),
            ..plain
        };
        let text = String::from_utf8(with_provider.encode("KEY").unwrap()).unwrap();
        assert!(text.contains("Authorization: Bearer fresh\r\nDPoP: proof\r\n"));
        assert!(
            !text.contains("static"),
            "the provider's credentials replace it"
        );

        let broken = Credentials::from(AuthorizationValue::new("Bearer a\r\nX-Evil: 1"));
        let e = UpgradeRequest {
            credentials: Some(&broken),
            ..with_provider
        }
        .encode("KEY")
        .unwrap_err();
        assert_eq!(e.kind(), TransportErrorKind::Unauthorized);
        assert!(!e.message().contains("Evil"));
    }

    #[test]
    fn a_switch_to_mcp_is_accepted_with_the_bytes_after_it() {
        let mut answer = switching("KEY", "Sec-WebSocket-Protocol: mcp\r\nDPoP-Nonce: n1\r\n");
        answer.extend_from_slice(b"\x81\x02hi");
        // Incomplete heads wait for more bytes, at every split.
        for cut in 0..answer.len() - 4 {
            if !answer[..cut].ends_with(b"\r\n\r\n") {
                assert!(parse_answer(&answer[..cut], "KEY", "u").unwrap().is_none());
            }
        }
        match parse_answer(&answer, "KEY", "u").unwrap() {
            Some(Answer::Upgraded {
                leftover,
                dpop_nonce,
            }) => {
                assert_eq!(leftover, b"\x81\x02hi");
                assert_eq!(dpop_nonce.as_deref(), Some("n1"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn wrong_switches_and_other_statuses_are_clear_errors() {
        for (answer, expected) in [
            (switching("KEY", ""), "without selecting the `mcp` subprotocol"),
            (
                switching("KEY", "Sec-WebSocket-Protocol: graphql-ws\r\n"),
                "\"graphql-ws\", but only `mcp`",
            ),
            (
                switching("OTHER", "Sec-WebSocket-Protocol: mcp\r\n"),
                "wrong Sec-WebSocket-Accept",
            ),
            (
                switching(
                    "KEY",
                    "Sec-WebSocket-Protocol: mcp\r\nSec-WebSocket-Extensions: permessage-deflate\r\n",
                ),
                "extensions (permessage-deflate)",
            ),
            (
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nno route!".to_vec(),
                "HTTP 404 Not Found: no route!; check the URL's path",
            ),
            (
                b"HTTP/1.1 302 Found\r\nLocation: https://u:p@h/login?t=s3cret\r\n\r\n".to_vec(),
                "redirects are not followed (Location: https://<redacted>@h/login)",
            ),
            (
                b"HTTP/1.1 200 OK\r\n\r\n".to_vec(),
                "is this a WebSocket endpoint?",
            ),
            (b"SSH-2.0-OpenSSH\r\n\r\n".to_vec(), "not HTTP"),
        ] {
            let e = parse_answer(&answer, "KEY", "ws://h/mcp").unwrap_err();
            assert_eq!(e.kind(), TransportErrorKind::Connect);
            assert!(e.is_fatal());
            assert!(e.message().contains(expected), "{expected:?} in {e}");
            assert!(!e.message().contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn a_refusal_body_echoing_credentials_is_redacted_in_the_error() {
        let answer = b"HTTP/1.1 500 Internal Server Error\r\n\r\nyou sent \
                       Authorization: Bearer SECRET-BEARER-1 and \x1b[2J{\"api_key\":\"SECRET-2\"}";
        let e = parse_answer(answer, "KEY", "ws://h/mcp").unwrap_err();
        assert!(e.message().contains("HTTP 500"), "{e}");
        assert!(e.message().contains("you sent"), "{e}");
        assert!(!e.message().contains("SECRET"), "a credential leaked: {e}");
        assert!(
            !e.message().contains('\x1b'),
            "a control character got through: {e:?}"
        );
    }

    #[test]
    fn refusals_carry_every_challenge_and_the_nonce() {
        let answer = b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"a\"\r\nWWW-Authenticate: DPoP algs=\"ES256\"\r\nDPoP-Nonce: n2\r\n\r\n";
        match parse_answer(answer, "KEY", "u").unwrap() {
            Some(Answer::Refused {
                status,
                www_authenticate,
                dpop_nonce,
            }) => {
                assert_eq!(status, 401);
                assert_eq!(
                    www_authenticate,
                    ["Bearer realm=\"a\"", "DPoP algs=\"ES256\""]
                );
                assert_eq!(dpop_nonce.as_deref(), Some("n2"));
            }
            other => panic!("{other:?}"),
        }
    }
}
