//! Which redirects are followed, and how (the rules browsers and reqwest use): at most
//! [`MAX_REDIRECTS`] hops; 301 and 302 turn a POST into a GET without a body, 303 turns
//! anything but HEAD into a GET, 307 and 308 repeat the request as it was; only to `http://`
//! and `https://` URLs. A redirect without a usable `Location` is the answer itself.
//!
//! Once a hop leaves the origin, credentials stay behind for the rest of the chain (the
//! exchange stops asking the provider, and [`strip_credentials`] removes configured ones).

use http::header::{HeaderMap, HeaderName, AUTHORIZATION, COOKIE, LOCATION, PROXY_AUTHORIZATION};
use http::{Method, StatusCode};

use crate::client::Target;

/// Hops followed before the request fails.
pub(crate) const MAX_REDIRECTS: usize = 10;

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
    /// A redirect that must not be followed.
    Refuse(String),
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
    let (method, keep_body) = match status {
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND if *method == Method::POST => {
            (Method::GET, false)
        }
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
    if hops >= MAX_REDIRECTS {
        return Redirect::Refuse(format!("redirected more than {MAX_REDIRECTS} times"));
    }
    match Target::new(url) {
        Ok(target) => Redirect::Follow {
            target: Box::new(target),
            method,
            keep_body,
        },
        Err(why) => Redirect::Refuse(format!("redirected to an unusable URL: {why}")),
    }
}

/// Removes the credentials a request to another origin must not carry.
pub(crate) fn strip_credentials(headers: &mut HeaderMap) {
    const COOKIE2: HeaderName = HeaderName::from_static("cookie2");
    const DPOP: HeaderName = HeaderName::from_static(mcp_core::DPOP_HEADER);
    for name in [AUTHORIZATION, COOKIE, COOKIE2, PROXY_AUTHORIZATION, DPOP] {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn moved_found_and_see_other_turn_a_post_into_a_get() {
        for status in [301, 302, 303] {
            let (_, method, keep_body) = follow(status, Method::POST, "other");
            assert_eq!(method, Method::GET);
            assert!(!keep_body);
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
                Redirect::Refuse(_)
            )
        };
        assert!(!refused("/a", MAX_REDIRECTS - 1));
        assert!(refused("/a", MAX_REDIRECTS));
        assert!(refused("ftp://example.com/", 0));
    }

    #[test]
    fn credentials_are_stripped_for_another_origin() {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        headers.insert("dpop", HeaderValue::from_static("proof"));
        headers.insert(COOKIE, HeaderValue::from_static("c=1"));
        headers.insert("x-api-key", HeaderValue::from_static("k"));
        strip_credentials(&mut headers);
        assert_eq!(headers.len(), 1);
        assert!(headers.contains_key("x-api-key"));
    }
}
