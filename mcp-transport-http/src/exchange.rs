//! One HTTP exchange with credentials, shared by both HTTP transports: the configured headers,
//! the credentials of each request from the [`AuthProvider`](mcp_wire::AuthProvider) (an
//! `Authorization` value and, for DPoP-bound tokens, a `DPoP` proof; marked sensitive, so they
//! never show in `Debug` output or logs), one retry after a 401/403 when the provider has new
//! credentials (and one more when the server wants a proof with its nonce), and failures that
//! say whether the message reached the server.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use http::{Method, StatusCode};
use mcp_core::{TransportError, TransportErrorKind};
use mcp_wire::redact::excerpt;
use mcp_wire::{AuthChallenge, AuthProvider, AuthTarget, ChallengeOutcome};

use crate::client::{HttpClient, HttpError, HttpResponse, Target};
use crate::config::HttpServerConfig;
use crate::redirect::{self, Redirect};

/// How much of an error body is read for the error message: a server answering 500 with an
/// endless body must not hold the request (or fill memory).
const ERROR_BODY_LIMIT: usize = 4096;
/// How many characters of an error body (or of a header's value) go into the message, as a
/// [`excerpt`]: redacted (a hostile server could echo the client's `Authorization` back into
/// the user's logs), without control characters.
const ERROR_DETAIL_CHARS: usize = 200;
const DPOP: HeaderName = HeaderName::from_static(mcp_wire::DPOP_HEADER);
const DPOP_NONCE: HeaderName = HeaderName::from_static(mcp_wire::DPOP_NONCE_HEADER);
/// `Content-Type` of a request with a body (a constant: built once, not checked per request).
const JSON_CONTENT: HeaderValue = HeaderValue::from_static("application/json");

/// The headers a transport puts on one request (added after the configured ones, so they win).
pub(crate) type AddHeaders<'a> = &'a (dyn Fn(&mut HeaderMap) + Sync);

/// The HTTP client of one transport: one connection pool per server.
pub(crate) struct Exchange {
    client: HttpClient,
    headers: HeaderMap,
    auth: Option<Arc<dyn AuthProvider>>,
    /// The URL as shown in errors and logs (no query, no user info).
    pub(crate) display_url: String,
}

impl Exchange {
    pub(crate) fn new(config: &HttpServerConfig) -> Result<Exchange, TransportError> {
        Ok(Exchange {
            client: HttpClient::new(config.connect_timeout),
            headers: config.header_map()?,
            auth: config.auth.clone(),
            display_url: config.display_url(),
        })
    }

    /// Sends one request, following redirects (see [`crate::redirect`]; credentials are asked
    /// for per hop, bound to its URL; once a hop left the origin, neither credentials nor the
    /// configured or metadata headers are sent, and a 401/403 from there is an `Unauthorized`
    /// error the provider never hears of, its nonces ignored). On 401/403 the
    /// provider hears the challenge, and the request is sent once more when it has new
    /// credentials — and once more again when the server only wants a proof with its nonce; a
    /// refusal that stays is an `Unauthorized` error (which says the message was not handled).
    /// The provider is not asked about a refusal that could not be retried anyway (its answer
    /// would only cost a refresh or a login). A nonce on any other answer goes to the provider
    /// too.
    pub(crate) async fn send(
        &self,
        method: Method,
        target: &Target,
        add_headers: AddHeaders<'_>,
        body: Option<Bytes>,
    ) -> Result<HttpResponse, TransportError> {
        let mut retried_with_new_credentials = false;
        let mut retried_with_nonce = false;
        let mut hop = Cow::Borrowed(target);
        let mut hop_method = method.clone();
        let mut hop_body = body.clone();
        let mut hops = 0;
        let mut left_origin = false;
        loop {
            let mut headers = if left_origin {
                // Another origin gets nothing the configured one was trusted with.
                let mut requested = HeaderMap::new();
                add_headers(&mut requested);
                redirect::cross_origin_headers(&requested)
            } else {
                let mut headers = HeaderMap::with_capacity(8 + self.headers.len());
                for (name, value) in &self.headers {
                    headers.append(name, value.clone());
                }
                if let Some(basic) = hop.basic_auth() {
                    // A configured `Authorization` wins over the URL's user info.
                    if !headers.contains_key(AUTHORIZATION) {
                        headers.insert(AUTHORIZATION, basic.clone());
                    }
                }
                add_headers(&mut headers);
                headers
            };
            if hop_body.is_some() {
                headers.insert(CONTENT_TYPE, JSON_CONTENT);
            }
            let credentials_sent = !left_origin
                && self
                    .add_credentials(&hop_method, hop.url(), &mut headers)
                    .await?;
            let response = self
                .client
                .send(
                    hop_method.clone(),
                    &hop,
                    headers,
                    hop_body.clone().unwrap_or_default(),
                )
                .await
                .map_err(|e| request_error(&self.display_url, e))?;
            let status = response.status();
            if status.is_redirection() {
                match redirect::next_hop(status, response.headers(), &hop, &hop_method, hops) {
                    Redirect::Answer => {}
                    Redirect::Follow {
                        target: next,
                        method: next_method,
                        keep_body,
                    } => {
                        hops += 1;
                        left_origin |= !next.same_origin(&hop);
                        tracing::debug!(status = status.as_u16(), hops, "following a redirect");
                        hop = Cow::Owned(*next);
                        hop_method = next_method;
                        if !keep_body {
                            hop_body = None;
                        }
                        continue;
                    }
                    // The server answered the request: it may have acted on it (a 303 says
                    // it did), so the error never claims otherwise.
                    Redirect::Refuse { why } => {
                        return Err(TransportError::recoverable(
                            TransportErrorKind::Io,
                            format!("{}: {why}", self.display_url),
                        ));
                    }
                }
            }
            if left_origin {
                // Another origin's refusal is not this server's challenge: its
                // `WWW-Authenticate` (which may name where to get a token) and its nonces are
                // not the provider's business.
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                    return Err(TransportError::recoverable(
                        TransportErrorKind::Unauthorized,
                        format!(
                            "{} redirected to {}, another origin, which answered HTTP {} \
                             (credentials are not sent to another origin)",
                            self.display_url,
                            hop.display(),
                            status.as_u16()
                        ),
                    ));
                }
                return Ok(response);
            }
            // Nonces only matter to a provider (which makes the proofs).
            let nonce = self.auth.as_ref().and_then(|_| {
                response
                    .headers()
                    .get(DPOP_NONCE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            });
            if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
                if let (Some(auth), Some(nonce)) = (&self.auth, &nonce) {
                    auth.accept_nonce(nonce);
                }
                return Ok(response);
            }
            let challenges: Vec<&str> = response
                .headers()
                .get_all(WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            let challenge = AuthChallenge {
                status: status.as_u16(),
                www_authenticate: (!challenges.is_empty()).then(|| challenges.join(", ")),
                dpop_nonce: nonce,
                credentials_retry_left: !retried_with_new_credentials,
                credentials_sent,
            };
            // Once new credentials were tried, only a retry with a (new) nonce can be left.
            let retry_left = !retried_with_new_credentials
                || (!retried_with_nonce && challenge.dpop_nonce.is_some());
            let outcome = match &self.auth {
                Some(auth) if retry_left => auth.on_challenge(&challenge).await.map_err(|e| {
                    // The provider says why it has no credentials (e.g. "log in first"); an
                    // authorization server it could not reach is a network failure, not a
                    // refusal (which is never retried).
                    TransportError::recoverable(
                        credentials_error_kind(&e),
                        format!(
                            "{} answered HTTP {}: {}",
                            self.display_url,
                            status.as_u16(),
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
                ChallengeOutcome::RetryWithNonce if !retried_with_nonce => {
                    retried_with_nonce = true
                }
                _ => {
                    // The challenge is the server's text: shown as an excerpt (redacted,
                    // capped), like a body.
                    return Err(TransportError::recoverable(
                        TransportErrorKind::Unauthorized,
                        format!(
                            "{} answered HTTP {}{}",
                            self.display_url,
                            status.as_u16(),
                            challenge
                                .www_authenticate
                                .map(|c| format!(
                                    " (WWW-Authenticate: {})",
                                    excerpt(c.as_bytes(), ERROR_DETAIL_CHARS)
                                ))
                                .unwrap_or_default()
                        ),
                    ));
                }
            }
            // The retry starts over from the URL the caller gave.
            hop = Cow::Borrowed(target);
            hop_method = method.clone();
            hop_body = body.clone();
            hops = 0;
            left_origin = false;
        }
    }

    /// The credential headers for the next request (`Authorization`, and `DPoP` for a
    /// DPoP-bound token), marked sensitive; they replace configured ones. `Ok(false)`: the
    /// provider had none to give (or there is no provider).
    async fn add_credentials(
        &self,
        method: &Method,
        url: &url::Url,
        headers: &mut HeaderMap,
    ) -> Result<bool, TransportError> {
        let Some(auth) = &self.auth else {
            return Ok(false);
        };
        let target = AuthTarget {
            method: method.as_str(),
            url: url.as_str(),
        };
        let credentials = auth.authorization(&target).await.map_err(|e| {
            TransportError::recoverable(
                credentials_error_kind(&e),
                format!("no credentials for {}: {}", self.display_url, e.message()),
            )
        })?;
        let Some(credentials) = credentials else {
            return Ok(false);
        };
        let sensitive = |value: &str| {
            let mut header = HeaderValue::from_str(value).map_err(|_| {
                TransportError::recoverable(
                    TransportErrorKind::Unauthorized,
                    format!(
                        "the credentials for {} are not a valid header value",
                        self.display_url
                    ),
                )
            })?;
            header.set_sensitive(true);
            Ok::<_, TransportError>(header)
        };
        headers.insert(
            AUTHORIZATION,
            sensitive(credentials.authorization.expose())?,
        );
        if let Some(proof) = &credentials.dpop {
            headers.insert(DPOP, sensitive(proof.expose())?);
        }
        Ok(true)
    }
}

/// How a provider's failure counts: a refusal (`Unauthorized`, never retried) unless the
/// provider failed on the network (its authorization server did not answer).
fn credentials_error_kind(e: &mcp_core::Error) -> TransportErrorKind {
    match e.kind() {
        mcp_core::ErrorKind::Network | mcp_core::ErrorKind::Timeout => TransportErrorKind::Io,
        _ => TransportErrorKind::Unauthorized,
    }
}

/// A transport error for a request that could not be completed: a connection that could not
/// be made never reached the server; anything later may have.
pub(crate) fn request_error(url: &str, e: HttpError) -> TransportError {
    let kind = if e.is_connect() {
        TransportErrorKind::Connect
    } else if e.is_malformed() {
        // Something answered, in a way no HTTP client can read: a protocol error, not an
        // unreachable server.
        TransportErrorKind::InvalidMessage
    } else {
        TransportErrorKind::Io
    };
    TransportError::recoverable(kind, format!("HTTP request to {url} failed: {e}"))
}

/// The error for a non-success answer: its status and the start of its body (read under
/// [`ERROR_BODY_LIMIT`], so an endless body cannot hold the request). 429, and 503 with
/// `Retry-After`, say the server did not handle the message, so even a side-effecting request
/// may be sent again; any other status may follow the request having run.
pub(crate) async fn status_error(
    response: HttpResponse,
    display_url: &str,
    kind: TransportErrorKind,
) -> TransportError {
    status_answer(response, display_url, kind).await.0
}

/// [`status_error`], and the JSON-RPC error response the body holds, if it is one.
pub(crate) async fn status_answer(
    response: HttpResponse,
    display_url: &str,
    kind: TransportErrorKind,
) -> (TransportError, Option<mcp_core::Response>) {
    let status = response.status();
    // 429, and 503 with `Retry-After`, say the server did not handle the request; a bare 503
    // may come from a proxy after the server received it.
    let refused = status == StatusCode::TOO_MANY_REQUESTS
        || (status == StatusCode::SERVICE_UNAVAILABLE
            && response.headers().contains_key(http::header::RETRY_AFTER));
    let body = read_prefix(response, ERROR_BODY_LIMIT).await;
    let answer = match mcp_core::Message::from_slice(&body) {
        Ok(mcp_core::Message::Response(r)) if r.outcome.is_err() => Some(r),
        _ => None,
    };
    let detail = excerpt(&body, ERROR_DETAIL_CHARS);
    let error = TransportError::recoverable(
        kind,
        format!(
            "{display_url} answered HTTP {}{}",
            status.as_u16(),
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            }
        ),
    );
    let error = if refused { error.never_sent() } else { error };
    (error, answer)
}

/// The error for a success answer that is not what was asked for (`expected`) and does not
/// read as it either: the server answered, but with a body under another `Content-Type` — an
/// HTML login page, a proxy's status page. A protocol error (not "server unavailable":
/// something did answer), naming the content type and the start of the body (an
/// [`excerpt`]).
pub(crate) fn unexpected_content_error(
    display_url: &str,
    status: StatusCode,
    content_type: &HeaderValue,
    body: &[u8],
    expected: &str,
) -> TransportError {
    let content_type = excerpt(content_type.as_bytes(), ERROR_DETAIL_CHARS);
    let detail = excerpt(body, ERROR_DETAIL_CHARS);
    TransportError::recoverable(
        TransportErrorKind::InvalidMessage,
        format!(
            "{display_url} answered HTTP {} with Content-Type {content_type:?}, not {expected}, \
             and a body that does not read as JSON-RPC either{}",
            status.as_u16(),
            if detail.is_empty() {
                " (empty body)".to_owned()
            } else {
                format!(": {detail}")
            }
        ),
    )
}

/// Why an answer's body cannot be read, when its `Content-Encoding` says it is compressed (or
/// otherwise encoded): this client sends no `Accept-Encoding` and decodes nothing, so an
/// encoded body is refused as it is — never inflated (a small gzip body can inflate to
/// gigabytes) and never parsed as if it were JSON.
pub(crate) fn unexpected_encoding(
    headers: &HeaderMap,
    display_url: &str,
) -> Option<TransportError> {
    let encoding = headers.get(http::header::CONTENT_ENCODING)?;
    let shown = excerpt(encoding.as_bytes(), ERROR_DETAIL_CHARS);
    if shown.is_empty() || shown.eq_ignore_ascii_case("identity") {
        return None;
    }
    Some(TransportError::recoverable(
        TransportErrorKind::InvalidMessage,
        format!(
            "{display_url} answered with Content-Encoding {shown:?}, which was not asked for \
             (this client sends no Accept-Encoding and decodes no compressed body)"
        ),
    ))
}

/// A message as the body of a POST (compact JSON).
pub(crate) fn message_body(message: &mcp_core::Message) -> Result<Bytes, TransportError> {
    let mut body = Vec::with_capacity(256);
    message.write_json(&mut body).map_err(|e| {
        TransportError::recoverable(
            TransportErrorKind::InvalidMessage,
            format!("could not encode the message: {e}"),
        )
    })?;
    Ok(Bytes::from(body))
}

/// Reads at most `limit` bytes of a body, then drops the rest (closing the connection).
async fn read_prefix(mut response: HttpResponse, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = limit - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    body
}

/// Reads a whole body of at most `limit` bytes; a body that came in one piece is not copied.
pub(crate) async fn read_limited(
    mut response: HttpResponse,
    limit: usize,
) -> Result<Bytes, TransportError> {
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    let mut length = 0;
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        TransportError::recoverable(
            TransportErrorKind::Io,
            format!("reading the response failed: {e}"),
        )
    })? {
        length += chunk.len();
        if length > limit {
            return Err(TransportError::recoverable(
                TransportErrorKind::MessageTooLarge,
                format!("the server sent a response of more than {limit} bytes (max_message_size)"),
            ));
        }
        match first.take() {
            None if joined.is_empty() => first = Some(chunk),
            None => joined.extend_from_slice(&chunk),
            Some(earlier) => {
                joined.reserve(earlier.len() + chunk.len());
                joined.extend_from_slice(&earlier);
                joined.extend_from_slice(&chunk);
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(joined)))
}
