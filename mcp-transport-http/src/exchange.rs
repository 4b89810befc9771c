//! One HTTP exchange with credentials, shared by both HTTP transports: the configured headers,
//! the credentials of each request from the [`AuthProvider`](mcp_core::AuthProvider) (an
//! `Authorization` value and, for DPoP-bound tokens, a `DPoP` proof; marked sensitive, so they
//! never show in `Debug` output or logs), one retry after a 401/403 when the provider has new
//! credentials (and one more when the server wants a proof with its nonce), and failures that
//! say whether the message reached the server.

use std::sync::Arc;

use mcp_core::{
    AuthChallenge, AuthProvider, AuthTarget, ChallengeOutcome, TransportError, TransportErrorKind,
};
use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use reqwest::{Method, StatusCode, Url};

use crate::config::HttpServerConfig;

/// How much of an error body is read for the error message: a server answering 500 with an
/// endless body must not hold the request (or fill memory).
const ERROR_BODY_LIMIT: usize = 4096;
/// How many characters of an error body go into the message.
const ERROR_DETAIL_CHARS: usize = 200;
const DPOP: HeaderName = HeaderName::from_static(mcp_core::DPOP_HEADER);
const DPOP_NONCE: HeaderName = HeaderName::from_static(mcp_core::DPOP_NONCE_HEADER);

/// The HTTP client of one transport: one connection pool per server.
pub(crate) struct Exchange {
    client: reqwest::Client,
    headers: HeaderMap,
    auth: Option<Arc<dyn AuthProvider>>,
    /// The URL as shown in errors and logs (no query, no user info).
    pub(crate) display_url: String,
}

impl Exchange {
    pub(crate) fn new(config: &HttpServerConfig) -> Result<Exchange, TransportError> {
        Ok(Exchange {
            client: config.build_client()?,
            headers: config.header_map()?,
            auth: config.auth.clone(),
            display_url: config.display_url(),
        })
    }

    /// The configured headers (values marked sensitive).
    pub(crate) fn headers(&self) -> HeaderMap {
        self.headers.clone()
    }

    /// Sends one request. On 401/403 the provider hears the challenge, and the request is sent
    /// once more when it has new credentials — and once more again when the server only wants
    /// a proof with its nonce; a refusal that stays is an `Unauthorized` error (which says the
    /// message was not handled). The provider is not asked about a refusal that could not be
    /// retried anyway (its answer would only cost a refresh or a login). A nonce on any other
    /// answer goes to the provider too.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<&[u8]>,
    ) -> Result<reqwest::Response, TransportError> {
        let mut retried_with_new_credentials = false;
        let mut retried_with_nonce = false;
        loop {
            let mut request = self
                .client
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(body) = body {
                request = request
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.to_vec());
            }
            request = request.headers(self.credentials(&method, url).await?);
            let response = request
                .send()
                .await
                .map_err(|e| request_error(&self.display_url, e))?;
            let status = response.status();
            let nonce = response
                .headers()
                .get(DPOP_NONCE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
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
                    return Err(TransportError::recoverable(
                        TransportErrorKind::Unauthorized,
                        format!(
                            "{} answered HTTP {}{}",
                            self.display_url,
                            status.as_u16(),
                            challenge
                                .www_authenticate
                                .map(|c| format!(" (WWW-Authenticate: {c})"))
                                .unwrap_or_default()
                        ),
                    ))
                }
            }
        }
    }

    /// The credential headers for the next request (`Authorization`, and `DPoP` for a
    /// DPoP-bound token), marked sensitive.
    async fn credentials(&self, method: &Method, url: &Url) -> Result<HeaderMap, TransportError> {
        let mut headers = HeaderMap::new();
        let Some(auth) = &self.auth else {
            return Ok(headers);
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
            return Ok(headers);
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
        Ok(headers)
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

/// A transport error for a request reqwest could not complete: a refused connection never
/// reached the server; anything later may have.
pub(crate) fn request_error(url: &str, e: reqwest::Error) -> TransportError {
    let kind = if e.is_connect() {
        TransportErrorKind::Connect
    } else {
        TransportErrorKind::Io
    };
    // Without the URL: a query string may carry a key; the caller names the server.
    let e = e.without_url();
    TransportError::recoverable(kind, format!("HTTP request to {url} failed: {e}"))
}

/// The error for a non-success answer: its status and the start of its body (read under
/// [`ERROR_BODY_LIMIT`], so an endless body cannot hold the request). 429, and 503 with
/// `Retry-After`, say the server did not handle the message, so even a side-effecting request
/// may be sent again; any other status may follow the request having run.
pub(crate) async fn status_error(
    response: reqwest::Response,
    display_url: &str,
    kind: TransportErrorKind,
) -> TransportError {
    status_answer(response, display_url, kind).await.0
}

/// [`status_error`], and the JSON-RPC error response the body holds, if it is one.
pub(crate) async fn status_answer(
    response: reqwest::Response,
    display_url: &str,
    kind: TransportErrorKind,
) -> (TransportError, Option<mcp_core::Response>) {
    let status = response.status();
    // 429, and 503 with `Retry-After`, say the server did not handle the request; a bare 503
    // may come from a proxy after the server received it.
    let refused = status == StatusCode::TOO_MANY_REQUESTS
        || (status == StatusCode::SERVICE_UNAVAILABLE
            && response
                .headers()
                .contains_key(reqwest::header::RETRY_AFTER));
    let body = read_prefix(response, ERROR_BODY_LIMIT).await;
    let answer = match mcp_core::Message::from_slice(&body) {
        Ok(mcp_core::Message::Response(r)) if r.outcome.is_err() => Some(r),
        _ => None,
    };
    let text = String::from_utf8_lossy(&body);
    let detail: String = text.trim().chars().take(ERROR_DETAIL_CHARS).collect();
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

/// Reads at most `limit` bytes of a body, then drops the rest (closing the connection).
async fn read_prefix(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
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

/// Reads a whole body of at most `limit` bytes.
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, TransportError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        TransportError::recoverable(
            TransportErrorKind::Io,
            format!("reading the response failed: {}", e.without_url()),
        )
    })? {
        if body.len() + chunk.len() > limit {
            return Err(TransportError::recoverable(
                TransportErrorKind::MessageTooLarge,
                format!("the server sent a response of more than {limit} bytes (max_message_size)"),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
