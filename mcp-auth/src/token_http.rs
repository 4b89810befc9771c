//! [`TokenHttp`]: how token requests (and the other requests of the `oauth2` crate) go out —
//! through the one [`AuthHttp`] client, and with a DPoP key, each with a fresh proof
//! (RFC 9449 §5) and one retry when the authorization server asks for its nonce (§8).

use mcp_wire::{DPOP_HEADER, DPOP_NONCE_HEADER};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::Value;
use url::Url;

use crate::dpop::{DpopKey, DpopNonces, NonceFrom, USE_DPOP_NONCE};
use crate::error::AuthError;
use crate::http::{AuthHttp, Fetched};

const DPOP: HeaderName = HeaderName::from_static(DPOP_HEADER);
const DPOP_NONCE: HeaderName = HeaderName::from_static(DPOP_NONCE_HEADER);

/// The HTTP client of token requests. Without a key, [`AuthHttp`] itself. With one, every
/// request carries a proof with the authorization server's latest nonce, and nonces on any
/// answer are remembered; an answer `use_dpop_nonce` is retried once with the new nonce —
/// unless [`retry_on_nonce`](Self::retry_on_nonce) is off because the body holds something
/// single-use (a client assertion), which the caller then rebuilds and sends again itself.
pub(crate) struct TokenHttp<'a> {
    pub(crate) http: &'a AuthHttp,
    pub(crate) key: Option<&'a DpopKey>,
    pub(crate) nonces: &'a DpopNonces,
    pub(crate) retry_on_nonce: bool,
}

impl TokenHttp<'_> {
    /// Sends one request and reads the whole answer.
    pub(crate) async fn execute(
        &self,
        method: reqwest::Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<Fetched, AuthError> {
        let Some(key) = self.key else {
            return self.http.execute(method, url, headers, body).await;
        };
        let mut retried = false;
        loop {
            let nonce = self.nonces.get(NonceFrom::AuthorizationServer);
            let proof = key.proof(method.as_str(), url.as_str(), None, nonce.as_deref())?;
            let mut value = HeaderValue::from_str(proof.expose())
                .map_err(|_| AuthError::Config("a DPoP proof is not a header value".into()))?;
            value.set_sensitive(true);
            let mut with_proof = headers.clone();
            with_proof.insert(DPOP, value);
            let fetched = self
                .http
                .execute(method.clone(), url, with_proof, body.clone())
                .await?;
            let new_nonce = fetched
                .headers
                .get(DPOP_NONCE)
                .and_then(|v| v.to_str().ok());
            if let Some(new_nonce) = new_nonce {
                self.nonces.set(NonceFrom::AuthorizationServer, new_nonce);
            }
            if self.retry_on_nonce
                && !retried
                && new_nonce.is_some()
                && fetched.status == 400
                && asks_for_nonce(&fetched)
            {
                retried = true;
                continue;
            }
            return Ok(fetched);
        }
    }

    /// POST a form (`application/x-www-form-urlencoded`) with extra headers.
    pub(crate) async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        mut headers: HeaderMap,
    ) -> Result<Fetched, AuthError> {
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish()
            .into_bytes();
        self.execute(reqwest::Method::POST, url, headers, Some(body))
            .await
    }

    /// One request of the `oauth2` crate.
    async fn oauth2_request(
        &self,
        request: oauth2::HttpRequest,
    ) -> Result<oauth2::HttpResponse, AuthError> {
        let (parts, body) = request.into_parts();
        let url = Url::parse(&parts.uri.to_string())
            .map_err(|e| AuthError::Http(format!("invalid OAuth endpoint URL: {e}")))?;
        let fetched = self
            .execute(parts.method, &url, parts.headers, Some(body))
            .await?;
        let mut response = http::Response::new(fetched.body);
        *response.status_mut() = http::StatusCode::from_u16(fetched.status).map_err(|e| {
            AuthError::Http(format!(
                "invalid status from {}: {e}",
                mcp_wire::redact::redact_url(url.as_str())
            ))
        })?;
        *response.headers_mut() = fetched.headers;
        Ok(response)
    }
}

/// Whether a token endpoint's error answer is `use_dpop_nonce`.
fn asks_for_nonce(fetched: &Fetched) -> bool {
    serde_json::from_slice::<Value>(&fetched.body)
        .ok()
        .and_then(|body| body.get("error").and_then(Value::as_str).map(str::to_owned))
        .as_deref()
        == Some(USE_DPOP_NONCE)
}

/// The `oauth2` crate's requests go through [`TokenHttp`]: the same URL policy, timeout and
/// body cap as every other OAuth request.
impl<'c> oauth2::AsyncHttpClient<'c> for TokenHttp<'_> {
    type Error = AuthError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<oauth2::HttpResponse, AuthError>> + Send + 'c>,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(self.oauth2_request(request))
    }
}
