//! The token endpoint's grants, and revocation.

use super::*;

#[test]
fn wrong_verifier_is_refused_and_burns_the_code() {
    let server = server(OAuthOptions::default());
    let client = register_public(&server);
    let code = authorize(&server, &client, "");
    let e = exchange(&server, &client, &code, "not-the-verifier").expect_err("refused");
    assert_eq!(
        (e.status, e.error),
        (StatusCode::BAD_REQUEST, "invalid_grant")
    );
    assert!(e.description.contains("PKCE"), "{}", e.description);
    // The code was single-use even though the first attempt failed.
    let e = exchange(&server, &client, &code, VERIFIER).expect_err("used");
    assert_eq!(e.error, "invalid_grant");
    let stats = server.stats();
    assert_eq!(stats.authorization_code, 2);
    assert_eq!(stats.token_errors, 2);
}

#[test]
fn code_is_single_use() {
    let server = server(OAuthOptions::default());
    let client = register_public(&server);
    let code = authorize(&server, &client, "read");
    let tokens = exchange(&server, &client, &code, VERIFIER).expect("tokens");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3600);
    assert_eq!(tokens["scope"], "read");
    assert!(text(&tokens, "refresh_token").starts_with("rt-"));
    let e = exchange(&server, &client, &code, VERIFIER).expect_err("second use");
    assert_eq!(e.error, "invalid_grant");
    let stats = server.stats();
    assert_eq!(stats.authorizations, 1);
    assert_eq!(stats.authorization_scopes, vec!["read".to_owned()]);
    assert_eq!(
        stats.resources_seen,
        vec![
            "http://127.0.0.1:4000/mcp".to_owned(),
            String::new(),
            String::new()
        ]
    );
}

#[test]
fn code_is_bound_to_client_and_redirect_uri() {
    let server = server(OAuthOptions::default());
    let client = register_public(&server);
    let other = register_public(&server);
    let code = authorize(&server, &client, "");
    let e = exchange(&server, &other, &code, VERIFIER).expect_err("other client");
    assert_eq!(e.error, "invalid_grant");
    let code = authorize(&server, &client, "");
    let e = server
        .token(
            &HeaderMap::new(),
            &form(&[
                ("grant_type", "authorization_code"),
                ("client_id", &client),
                ("code", &code),
                ("redirect_uri", "http://127.0.0.1:9/other"),
                ("code_verifier", VERIFIER),
            ]),
        )
        .expect_err("other redirect");
    assert_eq!(e.error, "invalid_grant");
}

#[test]
fn rotation_invalidates_the_old_refresh_token() {
    let server = server(OAuthOptions::default());
    let client = register_public(&server);
    let code = authorize(&server, &client, "read");
    let first = exchange(&server, &client, &code, VERIFIER).expect("tokens");
    let rt1 = text(&first, "refresh_token");
    let second = refresh(&server, &client, &rt1).expect("refreshed");
    let rt2 = text(&second, "refresh_token");
    assert_ne!(rt1, rt2);
    assert_ne!(text(&first, "access_token"), text(&second, "access_token"));
    assert_eq!(second["scope"], "read");
    let e = refresh(&server, &client, &rt1).expect_err("rotated away");
    assert_eq!(
        (e.status, e.error),
        (StatusCode::BAD_REQUEST, "invalid_grant")
    );
    refresh(&server, &client, &rt2).expect("the new one works");
    assert_eq!(server.stats().refresh_token, 3);
}

#[test]
fn without_rotation_the_refresh_answer_has_no_refresh_token() {
    let server = server(OAuthOptions {
        rotate_refresh_tokens: false,
        ..OAuthOptions::default()
    });
    let client = register_public(&server);
    let code = authorize(&server, &client, "");
    let first = exchange(&server, &client, &code, VERIFIER).expect("tokens");
    let rt = text(&first, "refresh_token");
    for _ in 0..2 {
        let answer = refresh(&server, &client, &rt).expect("refreshed");
        assert!(answer.get("refresh_token").is_none(), "{answer}");
    }
}

#[test]
fn refresh_token_is_bound_to_its_client() {
    let server = server(OAuthOptions::default());
    let client = register_public(&server);
    let other = register_public(&server);
    let code = authorize(&server, &client, "");
    let rt = text(
        &exchange(&server, &client, &code, VERIFIER).expect("tokens"),
        "refresh_token",
    );
    assert_eq!(
        refresh(&server, &other, &rt).expect_err("other").error,
        "invalid_grant"
    );
    refresh(&server, &client, &rt).expect("own client");
}

#[test]
fn revocation_revokes_one_token() {
    let server = server(OAuthOptions::default());
    let client = register_public(&server);
    let code = authorize(&server, &client, "");
    let tokens = exchange(&server, &client, &code, VERIFIER).expect("tokens");
    let access = text(&tokens, "access_token");
    let rt = text(&tokens, "refresh_token");
    server
        .revoke(
            &HeaderMap::new(),
            &form(&[("token", &rt), ("client_id", &client)]),
        )
        .expect("revoked");
    assert_eq!(
        refresh(&server, &client, &rt).expect_err("gone").error,
        "invalid_grant"
    );
    assert_eq!(
        server.verdict(&Method::POST, MCP, &bearer(&access)),
        Verdict::Accept
    );
    server
        .revoke(
            &HeaderMap::new(),
            &form(&[("token", &access), ("client_id", &client)]),
        )
        .expect("revoked");
    assert_eq!(
        server.verdict(&Method::POST, MCP, &bearer(&access)),
        Verdict::Unauthorized(true)
    );
    // Unknown tokens are fine (RFC 7009 §2.2); unknown clients are not.
    server
        .revoke(
            &HeaderMap::new(),
            &form(&[("token", "whatever"), ("client_id", &client)]),
        )
        .expect("200");
    assert!(server
        .revoke(
            &HeaderMap::new(),
            &form(&[("token", "x"), ("client_id", "nobody")])
        )
        .is_err());
    assert_eq!(server.stats().revocations, 3);
}
