//! The `/mcp` gate with bearer tokens: expiry, revocation, scopes.

use super::*;

#[test]
fn gate_checks_expiry_revocation_and_scopes() {
    let server = server(OAuthOptions {
        required_scopes: vec!["admin".into()],
        grantable_scopes: Some(vec!["read".into()]),
        ..OAuthOptions::default()
    });
    let client = register_public(&server);
    let code = authorize(&server, &client, "read admin");
    let tokens = exchange(&server, &client, &code, VERIFIER).expect("tokens");
    assert_eq!(tokens["scope"], "read", "admin is not grantable");
    let access = text(&tokens, "access_token");
    assert_eq!(
        server.verdict(&Method::POST, MCP, &bearer(&access)),
        Verdict::Forbidden
    );
    let response = server
        .refusal(&Method::POST, MCP, &bearer(&access))
        .expect("403");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let challenge = response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .expect("ascii");
    assert_eq!(
        challenge,
        "Bearer error=\"insufficient_scope\", resource_metadata=\"http://127.0.0.1:4000/.well-known/oauth-protected-resource/mcp\", scope=\"admin\""
    );
    let response = server
        .refusal(&Method::POST, MCP, &HeaderMap::new())
        .expect("401");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(!response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .expect("ascii")
        .contains("error="));

    let open = self::server(OAuthOptions::default());
    let client = register_public(&open);
    let code = authorize(&open, &client, "");
    let tokens = exchange(&open, &client, &code, VERIFIER).expect("tokens");
    let access = text(&tokens, "access_token");
    assert_eq!(
        open.verdict(&Method::POST, MCP, &bearer(&access)),
        Verdict::Accept
    );
    assert_eq!(
        open.verdict(&Method::POST, MCP, &bearer("at-forged")),
        Verdict::Unauthorized(true)
    );
    open.expire_tokens();
    assert_eq!(
        open.verdict(&Method::POST, MCP, &bearer(&access)),
        Verdict::Unauthorized(true)
    );
    let rt = text(&tokens, "refresh_token");
    let fresh = refresh(&open, &client, &rt).expect("refresh after expiry");
    let access = text(&fresh, "access_token");
    assert_eq!(
        open.verdict(&Method::POST, MCP, &bearer(&access)),
        Verdict::Accept
    );
    open.revoke_all();
    assert_eq!(
        open.verdict(&Method::POST, MCP, &bearer(&access)),
        Verdict::Unauthorized(true)
    );
    assert_eq!(
        refresh(&open, &client, &text(&fresh, "refresh_token"))
            .expect_err("revoked")
            .error,
        "invalid_grant"
    );
    let stats = open.stats();
    assert_eq!(stats.mcp_requests_accepted, 2);
    assert_eq!(stats.mcp_requests_rejected, 3);
    assert_eq!(stats.expired_tokens_presented, 1);
}
