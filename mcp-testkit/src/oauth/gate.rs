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
    /// The `/mcp` (and HTTP+SSE endpoints') gate for a `method` request to `path`: the 401/403
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
        // The error of the challenge, with its description where there is one.
        let (status, error, description) = match &verdict {
            Verdict::Accept => return None,
            Verdict::Unauthorized(presented) => (
                StatusCode::UNAUTHORIZED,
                presented.then_some("invalid_token"),
                None,
            ),
            Verdict::DpopRefused(error, description) => (
                StatusCode::UNAUTHORIZED,
                Some(*error),
                Some(description.as_str()),
            ),
            Verdict::Forbidden => (StatusCode::FORBIDDEN, Some("insufficient_scope"), None),
        };
        let mut tail = format!("resource_metadata=\"{}\"", self.resource_metadata_url());
        let scope = self.options.required_scopes.join(" ");
        if !scope.is_empty() {
            tail.push_str(&format!(", scope=\"{scope}\""));
        }
        let error_params = |with_description: bool| {
            let mut params = String::new();
            if let Some(error) = error {
                params.push_str(&format!("error=\"{error}\", "));
            }
            if let Some(description) = description.filter(|_| with_description) {
                params.push_str(&format!(
                    "error_description=\"{}\", ",
                    quotable(description)
                ));
            }
            params
        };
        // A resource that takes only DPoP-bound tokens challenges with `DPoP`; one where DPoP
        // is optional with `Bearer`, but for requests made with the `DPoP` scheme.
        let dpop_challenge =
            self.options.resource_requires_dpop() || matches!(verdict, Verdict::DpopRefused(..));
        let challenges = if !dpop_challenge {
            vec![format!("Bearer {}{tail}", error_params(true))]
        } else {
            let dpop = format!("DPoP {}algs=\"{DPOP_ALG}\", {tail}", error_params(true));
            if self.options.dpop_split_challenges {
                // The `Bearer` challenge carries only the errors both schemes share.
                let shared = matches!(error, Some("invalid_token" | "insufficient_scope"));
                let bearer = if shared {
                    format!("Bearer {}{tail}", error_params(false))
                } else {
                    format!("Bearer {tail}")
                };
                vec![bearer, dpop]
            } else {
                vec![dpop]
            }
        };
        let error = error.unwrap_or("invalid_token");
        let mut response = json_response(status, json!({ "error": error }).to_string());
        for challenge in challenges {
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                response
                    .headers_mut()
                    .append(header::WWW_AUTHENTICATE, value);
            }
        }
        if error == USE_DPOP_NONCE {
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
        let dpop = self.options.dpop_enabled();
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
    /// key the token is bound to (or, where DPoP is optional, is a bearer token sent as one).
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
            return if self.options.resource_requires_dpop() {
                refused(
                    "invalid_token",
                    "this resource takes only DPoP-bound tokens (dpop_bound_access_tokens_required)",
                )
            } else if as_dpop {
                refused(
                    "invalid_token",
                    "the token is not DPoP-bound: send it as Authorization: Bearer",
                )
            } else {
                None
            };
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
        if self.options.dpop_refuse_proofs {
            state.stats.dpop_proofs_rejected += 1;
            return refused(
                INVALID_DPOP_PROOF,
                "the DPoP proof is refused (the fixture refuses every proof: dpop_refuse_proofs)",
            );
        }
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
