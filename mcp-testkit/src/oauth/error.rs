//! [`OAuthError`]: an RFC 6749 §5.2 error answer of the authorization server's endpoints.

use hyper::header::{self, HeaderValue};
use hyper::StatusCode;
use serde_json::json;

use crate::http::{json_response, HttpResponse};

/// An OAuth error answer (RFC 6749 §5.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OAuthError {
    pub(super) status: StatusCode,
    pub(super) error: &'static str,
    pub(super) description: String,
}

impl OAuthError {
    /// 400 with `error`.
    pub(super) fn bad(error: &'static str, description: impl Into<String>) -> Self {
        OAuthError {
            status: StatusCode::BAD_REQUEST,
            error,
            description: description.into(),
        }
    }

    /// 401 `invalid_client` (with a `Basic` challenge): the client's credentials were missing
    /// or wrong. A refused client assertion is a 400 instead (RFC 6749 §5.2 asks for 401 only
    /// where the client authenticated with the `Authorization` header).
    pub(super) fn invalid_client(description: impl Into<String>) -> Self {
        OAuthError {
            status: StatusCode::UNAUTHORIZED,
            error: "invalid_client",
            description: description.into(),
        }
    }

    pub(super) fn response(&self) -> HttpResponse {
        let mut response = json_response(
            self.status,
            json!({ "error": self.error, "error_description": self.description }).to_string(),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"fixture\""),
            );
        }
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}
