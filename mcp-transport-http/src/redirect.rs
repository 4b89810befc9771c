//! Which redirects are followed, and how: at most [`MAX_REDIRECTS`] hops; 307 and 308 repeat
//! the request as it was; 301 and 302 keep the method and 303 turns anything but HEAD into a
//! GET, but all three are refused for a POST — browsers would turn it into a GET without its
//! body, which drops the JSON-RPC message and leaves the caller waiting for an answer that
//! cannot come — and the refusal says the server may have acted on the message (a 303 means it
//! did); only to `http://` and `https://` URLs. A redirect without a usable `Location` is the
//! answer itself.
//!
//! Once a hop leaves the origin, nothing the origin was trusted with follows it for the rest of
//! the chain: no credentials (the exchange stops asking the provider), no configured headers
//! (API keys live there), no request metadata headers (`Mcp-Param-*` carry tool arguments) —
//! only what [`cross_origin_headers`] keeps.

use http::header::{HeaderMap, HeaderName, ACCEPT, LOCATION};
use http::{Method, StatusCode};

use crate::client::Target;

/// Hops followed before the request fails.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// The request headers a hop to another origin carries (besides `Content-Type`, which the
/// exchange sets from the body): what the server needs to read the request and answer in a
/// form the client reads — the protocol's own framing, none of it the user's: the revision
/// spoken, and the session and stream position the server side handed out (a server behind
/// a redirect issued them itself, and without them its session cannot go on).
const CROSS_ORIGIN_HEADERS: [HeaderName; 4] = [
    ACCEPT,
    HeaderName::from_static(crate::streamable::PROTOCOL_VERSION_HEADER),
    HeaderName::from_static(crate::streamable::SESSION_ID_HEADER),
    HeaderName::from_static(crate::streamable::LAST_EVENT_ID_HEADER),
];

/// What to do with a response.
#[derive(Debug)]
pub(crate) enum Redirect {
    /// Not a redirect to follow: the response is the answer.
    Answer,
    /// Send the request again, to `target` with `method`; without a body unless `keep_body`.
    Follow {
        target: Box<Target>,
        method: Method,
        keep_body: bool,
    },
    /// A redirect that must not be followed (the server may have acted on the request: it
    /// answered it).
    Refuse { why: String },
}

/// The next hop for a response of `status` with `headers`, to a request of `method` to
/// `current` that already followed `hops` redirects.
pub(crate) fn next_hop(
    status: StatusCode,
    headers: &HeaderMap,
    current: &Target,
    method: &Method,
    hops: usize,
) -> Redirect {
    let (next_method, keep_body) = match status {
        StatusCode::SEE_OTHER if *method != Method::HEAD => (Method::GET, false),
        StatusCode::MOVED_PERMANENTLY
        | StatusCode::FOUND
        | StatusCode::SEE_OTHER
        | StatusCode::TEMPORARY_REDIRECT
        | StatusCode::PERMANENT_REDIRECT => (method.clone(), true),
        _ => return Redirect::Answer,
    };
    let Some(location) = headers.get(LOCATION).and_then(|v| v.to_str().ok()) else {
        return Redirect::Answer;
    };
    let Ok(url) = current.url().join(location) else {
        return Redirect::Answer;
    };
    let rewrites_a_post = matches!(
        status,
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER
    ) && *method == Method::POST;
    if rewrites_a_post {
        let shown = match Target::new(url.clone()) {
            Ok(target) => target.display(),
            Err(_) => mcp_wire::redact::redact_url(url.as_str()),
        };
        return Redirect::Refuse {
            why: format!(
                "the server redirected a POST with HTTP {} to {shown}; configure the final URL",
                status.as_u16()
            ),
        };
    }
    if hops >= MAX_REDIRECTS {
        return Redirect::Refuse {
            why: format!("redirected more than {MAX_REDIRECTS} times"),
        };
    }
    if current.is_https() && url.scheme() == "http" {
        // Everything the rest of the chain sends would travel in cleartext.
        return Redirect::Refuse {
            why: format!(
                "the server redirected from https to plain http ({}); refusing to downgrade",
                mcp_wire::redact::redact_url(url.as_str())
            ),
        };
    }
    match Target::new(url) {
        Ok(target) => Redirect::Follow {
            target: Box::new(target),
            method: next_method,
            keep_body,
        },
        Err(why) => Redirect::Refuse {
            why: format!("redirected to an unusable URL: {why}"),
        },
    }
}

/// The headers of a request to another origin: of `requested`, only [`CROSS_ORIGIN_HEADERS`].
pub(crate) fn cross_origin_headers(requested: &HeaderMap) -> HeaderMap {
    let mut kept = HeaderMap::with_capacity(CROSS_ORIGIN_HEADERS.len() + 1);
    for name in &CROSS_ORIGIN_HEADERS {
        for value in requested.get_all(name) {
            kept.append(name.clone(), value.clone());
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{AUTHORIZATION, COOKIE};
    use http::HeaderValue;
    use url::Url;

    fn target(url: &str) -> Target {
        Target::new(Url::parse(url).unwrap()).unwrap()
    }

    fn located(location: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(LOCATION, HeaderValue::from_str(location).unwrap());
        headers
    }

    fn follow(status: u16, method: Method, location: &str) -> (String, Method, bool) {
        let current = target("http://127.0.0.1:1/mcp?k=1");
        let status = StatusCode::from_u16(status).unwrap();
        match next_hop(status, &located(location), &current, &method, 0) {
            Redirect::Follow {
                target,
                method,
                keep_body,
            } => (target.url().to_string(), method, keep_body),
            other => panic!("{status} was not followed: {other:?}"),
        }
    }

    #[test]
    fn temporary_and_permanent_redirects_repeat_the_request() {
        for status in [307, 308] {
            let (url, method, keep_body) = follow(status, Method::POST, "/mcp/");
            assert_eq!(url, "http://127.0.0.1:1/mcp/");
            assert_eq!(method, Method::POST);
            assert!(keep_body);
        }
    }

    #[test]
    fn moved_found_and_see_other_refuse_a_post_that_may_have_run() {
        let current = target("http://127.0.0.1:1/mcp?k=1");
        for status in [301, 302, 303] {
            let status = StatusCode::from_u16(status).unwrap();
            let location = "http://user:secret@127.0.0.1:2/final?key=hidden";
            match next_hop(status, &located(location), &current, &Method::POST, 0) {
                Redirect::Refuse { why } => {
                    assert_eq!(
                        why,
                        format!(
                            "the server redirected a POST with HTTP {} to \
                             http://127.0.0.1:2/final; configure the final URL",
                            status.as_u16()
                        )
                    );
                }
                other => panic!("{status} to a POST was not refused: {other:?}"),
            }
        }
    }

    #[test]
    fn a_redirect_from_https_to_http_is_refused() {
        let current = target("https://127.0.0.1:1/mcp");
        for status in [307, 308, 301] {
            let status = StatusCode::from_u16(status).unwrap();
            let location = "http://127.0.0.1:2/mcp?token=hidden";
            match next_hop(status, &located(location), &current, &Method::GET, 0) {
                Redirect::Refuse { why } => {
                    assert!(why.contains("refusing to downgrade"), "{why}");
                    assert!(!why.contains("hidden"), "{why}");
                }
                other => panic!("{status} to plain http was followed: {other:?}"),
            }
        }
    }

    #[test]
    fn moved_found_and_see_other_are_followed_by_other_methods() {
        for status in [301, 302, 303] {
            let (url, method, _) = follow(status, Method::GET, "other");
            assert_eq!(url, "http://127.0.0.1:1/other");
            assert_eq!(method, Method::GET);
        }
        let (url, method, _) = follow(301, Method::DELETE, "https://example.com/x");
        assert_eq!(
            (url.as_str(), method),
            ("https://example.com/x", Method::DELETE)
        );
        let (_, method, _) = follow(303, Method::DELETE, "/x");
        assert_eq!(method, Method::GET);
    }

    #[test]
    fn other_answers_and_unusable_locations_are_the_answer() {
        let current = target("http://127.0.0.1:1/mcp");
        let answer = |status: u16, headers: &HeaderMap| {
            matches!(
                next_hop(
                    StatusCode::from_u16(status).unwrap(),
                    headers,
                    &current,
                    &Method::POST,
                    0
                ),
                Redirect::Answer
            )
        };
        assert!(answer(200, &located("/x")));
        assert!(answer(304, &located("/x")));
        assert!(answer(307, &HeaderMap::new()));
        assert!(answer(307, &located("http://[")));
    }

    #[test]
    fn too_many_hops_and_other_schemes_are_refused() {
        let current = target("http://127.0.0.1:1/mcp");
        let refused = |location: &str, hops: usize| {
            matches!(
                next_hop(
                    StatusCode::TEMPORARY_REDIRECT,
                    &located(location),
                    &current,
                    &Method::POST,
                    hops
                ),
                Redirect::Refuse { .. }
            )
        };
        assert!(!refused("/a", MAX_REDIRECTS - 1));
        assert!(refused("/a", MAX_REDIRECTS));
        assert!(refused("ftp://example.com/", 0));
    }

    #[test]
    fn another_origin_gets_only_the_protocols_own_headers() {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        headers.insert("dpop", HeaderValue::from_static("proof"));
        headers.insert(COOKIE, HeaderValue::from_static("c=1"));
        headers.insert("x-api-key", HeaderValue::from_static("k"));
        headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
        headers.insert("mcp-name", HeaderValue::from_static("echo"));
        headers.insert("mcp-param-text", HeaderValue::from_static("private"));
        headers.insert("mcp-session-id", HeaderValue::from_static("session"));
        headers.insert("last-event-id", HeaderValue::from_static("7"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-11-25"),
        );
        let kept = cross_origin_headers(&headers);
        let mut names: Vec<&str> = kept.keys().map(|n| n.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "accept",
                "last-event-id",
                "mcp-protocol-version",
                "mcp-session-id"
            ]
        );
        assert_eq!(kept[ACCEPT], "application/json");
    }
}
