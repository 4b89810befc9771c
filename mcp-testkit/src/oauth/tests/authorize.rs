//! The authorization endpoint: PKCE, request checks, the redirect.

use super::*;
use crate::oauth::authorize::pkce_matches;

#[test]
fn pkce_rfc7636_example() {
    // RFC 7636 Appendix B.
    assert!(pkce_matches(
        "S256",
        VERIFIER,
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    ));
    assert!(!pkce_matches(
        "S256",
        "wrong",
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    ));
    assert!(pkce_matches("plain", "abc", "abc"));
    assert!(!pkce_matches("S512", "abc", "abc"));
}

#[test]
fn authorize_validates_before_redirecting() {
    let server = server(OAuthOptions::default());
    let client = register_public(&server);
    let base = format!(
        "response_type=code&client_id={client}&redirect_uri={}",
        encode(REDIRECT)
    );
    let cases = [
        (format!("{base}&code_challenge=abc&code_challenge_method=plain"), "invalid_request"),
        (base.clone(), "invalid_request"),
        (
            format!("response_type=token&client_id={client}&code_challenge=a&code_challenge_method=S256"),
            "unsupported_response_type",
        ),
        (
            format!("response_type=code&client_id=nobody&redirect_uri={}&code_challenge=a&code_challenge_method=S256", encode(REDIRECT)),
            "invalid_request",
        ),
        (
            format!("response_type=code&client_id={client}&redirect_uri={}&code_challenge=a&code_challenge_method=S256", encode("http://127.0.0.1:9/elsewhere")),
            "invalid_request",
        ),
        (format!("{base}&code_challenge=a&code_challenge_method=S256&state=1&state=2"), "invalid_request"),
    ];
    for (query, error) in cases {
        let e = server.authorize(&query).expect_err(&query);
        assert_eq!(
            (e.status, e.error),
            (StatusCode::BAD_REQUEST, error),
            "{query}"
        );
    }
    assert_eq!(server.stats().authorizations, 0);
    // The one registered redirect URI is used when none is named.
    let location = server
        .authorize(&format!(
            "response_type=code&client_id={client}&code_challenge=a&code_challenge_method=S256"
        ))
        .expect("authorized");
    assert!(
        location.starts_with(&format!("{REDIRECT}?code=code-")),
        "{location}"
    );
}

#[test]
fn overrides_shape_the_redirect() {
    let server = server(OAuthOptions {
        iss_parameter: true,
        state_override: Some("forged".into()),
        issuer_override: Some("https://issuer.example".into()),
        ..OAuthOptions::default()
    });
    let client = register_public(&server);
    let location = server
        .authorize(&format!(
            "response_type=code&client_id={client}&code_challenge=a&code_challenge_method=S256&state=mine"
        ))
        .expect("authorized");
    let params = parse_form(location.split_once('?').expect("query").1);
    assert_eq!(param(&params, "state").expect("once"), Some("forged"));
    assert_eq!(
        param(&params, "iss").expect("once"),
        Some("https://issuer.example")
    );
    let meta = server.server_metadata();
    assert_eq!(meta["issuer"], "https://issuer.example");
    assert_eq!(meta["authorization_response_iss_parameter_supported"], true);
    assert_eq!(meta["token_endpoint"], "http://127.0.0.1:4000/token");
}
