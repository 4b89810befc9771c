//! The protected resource's gate: whether a request to `/mcp`, `/sse` or `/message` carries
//! an access token the fixture issued, unexpired, unrevoked, with the required scopes — and in
//! DPoP mode bound to a key the request proves it holds — and the RFC 6750 / RFC 9449
//! challenge when it does not. See the [module documentation](super).

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, StatusCode};
use serde_json::json;
use tokio::time::Instant;

use super::{AuthServer, State};
use crate::dpop::{proof_header, Audience, ProofRequest, DPOP_ALG, DPOP_NONCE_HEADER};
use crate::dpop::{INVALID_DPOP_PROOF, USE_DPOP_NONCE};
use crate::http::{json_response, lock, HttpResponse};

/// What the `/mcp` gate decided.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Accept,
    /// 401; `true` when a token was presented (and is invalid).
    Unauthorized(bool),
    /// 401 in DPoP mode with this `error` (`invalid_token`, `invalid_dpop_proof`,
    /// `use_dpop_nonce`) and `error_description`.
    DpopRefused(&'static str, String),
    /// 403 `insufficient_scope`.
    Forbidden,
}

/// The parts of a request the gate looks at.
struct GateRequest<'a> {
    method: &'a Method,
    path: &'a str,
    headers: &'a HeaderMap,
}

impl AuthServer {
    /// The `/mcp` (and legacy endpoints') gate for a `method` request to `path`: the 401/403
    /// answer when the request carries no valid token with the required scopes (in DPoP mode:
    /// no bound token with a valid proof by its key), `None` to let it through (its answer
    /// then gets [`admitted_headers`](Self::admitted_headers)).
    pub(crate) fn refusal(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
    ) -> Option<HttpResponse> {
        let verdict = self.verdict(method, path, headers);
        let scope = self.options.required_scopes.join(" ");
        let mut challenge = String::from(if self.dpop() { "DPoP " } else { "Bearer " });
        let mut nonce = false;
        let (status, error) = match &verdict {
            Verdict::Accept => return None,
            Verdict::Unauthorized(presented) => {
                if *presented {
                    challenge.push_str("error=\"invalid_token\", ");
                }
                (StatusCode::UNAUTHORIZED, "invalid_token")
            }
            Verdict::DpopRefused(error, description) => {
                challenge.push_str(&format!(
                    "error=\"{error}\", error_description=\"{}\", ",
                    quotable(description)
                ));
                nonce = *error == USE_DPOP_NONCE;
                (StatusCode::UNAUTHORIZED, *error)
            }
            Verdict::Forbidden => {
                challenge.push_str("error=\"insufficient_scope\", ");
                (StatusCode::FORBIDDEN, "insufficient_scope")
            }
        };
        if self.dpop() {
            challenge.push_str(&format!("algs=\"{DPOP_ALG}\", "));
        }
        challenge.push_str(&format!(
            "resource_metadata=\"{}\"",
            self.resource_metadata_url()
        ));
        if !scope.is_empty() {
            challenge.push_str(&format!(", scope=\"{scope}\""));
        }
        let mut response = json_response(status, json!({ "error": error }).to_string());
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        if nonce {
            response
                .headers_mut()
                .extend(self.nonce_header(Audience::Resource));
        }
        Some(response)
    }

    /// The headers of every answer to a request the gate let through: `DPoP-Nonce` with the
    /// resource's current nonce, when nonces are on.
    pub(crate) fn admitted_headers(&self) -> HeaderMap {
        self.nonce_header(Audience::Resource)
    }

    /// `DPoP-Nonce` with the current nonce of `audience`, when nonces are on.
    pub(super) fn nonce_header(&self, audience: Audience) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let state = lock(&self.state);
        if let Some(value) = state
            .dpop
            .nonce(audience)
            .and_then(|n| HeaderValue::from_str(n).ok())
        {
            headers.insert(DPOP_NONCE_HEADER, value);
        }
        headers
    }

    pub(super) fn verdict(&self, method: &Method, path: &str, headers: &HeaderMap) -> Verdict {
        let dpop = self.dpop();
        // `(scheme is DPoP, token)`; `Some(None)`: a scheme the gate does not take.
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.split_once(' ').and_then(|(scheme, token)| {
                    let is_dpop = dpop && scheme.eq_ignore_ascii_case("dpop");
                    (is_dpop || scheme.eq_ignore_ascii_case("bearer"))
                        .then(|| (is_dpop, token.trim().to_owned()))
                })
            });
        let now = Instant::now();
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        let verdict = match presented {
            None => Verdict::Unauthorized(false),
            Some(None) => Verdict::Unauthorized(true),
            Some(Some((as_dpop, token))) => match state.access.get(&token) {
                None => Verdict::Unauthorized(true),
                Some(access) if now >= access.expires => {
                    state.stats.expired_tokens_presented += 1;
                    Verdict::Unauthorized(true)
                }
                Some(access) => {
                    let scoped = self
                        .options
                        .required_scopes
                        .iter()
                        .all(|s| access.scopes.contains(s));
                    let jkt = access.jkt.clone();
                    let binding = if dpop {
                        let request = GateRequest {
                            method,
                            path,
                            headers,
                        };
                        self.check_binding(state, &request, &token, as_dpop, jkt)
                    } else {
                        None
                    };
                    match binding {
                        Some(refused) => refused,
                        None if !scoped => Verdict::Forbidden,
                        None => Verdict::Accept,
                    }
                }
            },
        };
        if verdict == Verdict::Accept {
            state.stats.mcp_requests_accepted += 1;
        } else {
            state.stats.mcp_requests_rejected += 1;
        }
        verdict
    }

    /// DPoP mode: why a request with this valid `token` (presented with the `DPoP` scheme or
    /// not, bound to `jkt` or not) is refused, or `None` when it carries a valid proof by the
    /// key the token is bound to.
    fn check_binding(
        &self,
        state: &mut State,
        request: &GateRequest<'_>,
        token: &str,
        as_dpop: bool,
        jkt: Option<String>,
    ) -> Option<Verdict> {
        let refused =
            |error: &'static str, why: &str| Some(Verdict::DpopRefused(error, why.into()));
        let Some(jkt) = jkt else {
            return refused(
                "invalid_token",
                "this resource takes only DPoP-bound tokens (dpop_bound_access_tokens_required)",
            );
        };
        if !as_dpop {
            return refused(
                "invalid_token",
                "the token is DPoP-bound: send it as Authorization: DPoP with a DPoP proof",
            );
        }
        let proof = match proof_header(request.headers) {
            Ok(Some(proof)) => proof,
            Ok(None) => {
                return refused(
                    INVALID_DPOP_PROOF,
                    "a DPoP-bound token needs a DPoP proof header",
                )
            }
            // Unreadable (or more than one): refused without looking further.
            Err(e) => {
                state.stats.dpop_proofs_rejected += 1;
                return Some(Verdict::DpopRefused(e.error_code(), e.to_string()));
            }
        };
        let url = format!("{}{}", self.origin, request.path);
        let expected = ProofRequest {
            audience: Audience::Resource,
            method: request.method.as_str(),
            url: &url,
            access_token: Some(token),
        };
        match self.check_proof(state, proof, &expected) {
            Ok(key) if key == jkt => None,
            Ok(_) => refused(
                INVALID_DPOP_PROOF,
                "the DPoP proof is made with another key than the token is bound to",
            ),
            Err(e) => Some(Verdict::DpopRefused(e.error_code(), e.to_string())),
        }
    }
}

/// `text` as the value of a quoted auth-param: visible ASCII without `"` and `\`.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c == ' ' || c.is_ascii_graphic() => c,
            _ => '?',
        })
        .collect()
}
