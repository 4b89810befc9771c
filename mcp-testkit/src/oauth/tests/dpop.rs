//! DPoP: binding at the token endpoint, proofs and nonces at the gate, the optional and
//! faulty modes.

use super::*;
use crate::dpop::{Audience, DPOP_NONCE_HEADER, INVALID_DPOP_PROOF};
use crate::oauth::DEVICE_CODE_GRANT;

#[test]
fn dpop_metadata_and_challenges_name_es256() {
    let server = dpop_server(false);
    let prm = server.resource_metadata();
    assert_eq!(prm["dpop_signing_alg_values_supported"], json!(["ES256"]));
    assert_eq!(prm["dpop_bound_access_tokens_required"], true);
    assert_eq!(
        server.server_metadata()["dpop_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let response = server
        .refusal(&Method::POST, MCP, &HeaderMap::new())
        .expect("401");
    assert_eq!(
        response.headers()[header::WWW_AUTHENTICATE],
        "DPoP algs=\"ES256\", resource_metadata=\"http://127.0.0.1:4000/.well-known/oauth-protected-resource/mcp\""
    );
    let response = server
        .refusal(&Method::POST, MCP, &dpop_auth("at-forged", None))
        .expect("401");
    assert!(response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .expect("ascii")
        .starts_with("DPoP error=\"invalid_token\", algs=\"ES256\", resource_metadata="));
    // Without DPoP, neither document mentions it.
    let plain = self::server(OAuthOptions::default());
    assert!(plain
        .resource_metadata()
        .get("dpop_bound_access_tokens_required")
        .is_none());
    assert!(plain
        .server_metadata()
        .get("dpop_signing_alg_values_supported")
        .is_none());
}

#[test]
fn a_proof_at_the_token_endpoint_binds_the_tokens_to_its_key() {
    let server = dpop_server(false);
    let key = TestKey::new(1);
    let other = TestKey::new(2);
    let (_, answer) = dpop_login(
        &server,
        &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
    );
    let tokens = answer.expect("tokens");
    assert_eq!(tokens["token_type"], "DPoP");
    let access = text(&tokens, "access_token");
    assert_eq!(lock(&server.state).access[&access].jkt, Some(key.jkt()));
    let rt = text(&tokens, "refresh_token");
    assert_eq!(lock(&server.state).refresh[&rt].jkt, Some(key.jkt()));

    // At the gate: only as DPoP, only with a fresh proof by that key for this request.
    let good = key.proof("POST", MCP_URL, Some(&access), None);
    assert_eq!(
        gate(&server, &dpop_auth(&access, Some(&good))),
        Verdict::Accept
    );
    let cases = [
        (bearer(&access), "invalid_token"),
        (dpop_auth(&access, None), INVALID_DPOP_PROOF),
        (dpop_auth(&access, Some(&good)), INVALID_DPOP_PROOF), // replayed
        (
            dpop_auth(
                &access,
                Some(&other.proof("POST", MCP_URL, Some(&access), None)),
            ),
            INVALID_DPOP_PROOF,
        ),
        (
            dpop_auth(
                &access,
                Some(&key.proof("POST", MCP_URL, Some("at-other"), None)),
            ),
            INVALID_DPOP_PROOF,
        ),
        (
            dpop_auth(
                &access,
                Some(&key.proof("GET", MCP_URL, Some(&access), None)),
            ),
            INVALID_DPOP_PROOF,
        ),
        (
            dpop_auth(
                &access,
                Some(&key.proof("POST", TOKEN_URL, Some(&access), None)),
            ),
            INVALID_DPOP_PROOF,
        ),
    ];
    for (headers, error) in &cases {
        let verdict = gate(&server, headers);
        assert!(refused(error)(&verdict), "{headers:?}: {verdict:?}");
    }
    let response = server
        .refusal(&Method::POST, MCP, &bearer(&access))
        .expect("401");
    assert!(response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .expect("ascii")
        .starts_with("DPoP error=\"invalid_token\", error_description=\"the token is DPoP-bound"));

    // Without a proof: a bearer token, which the resource does not take.
    let (_, answer) = dpop_login(&server, &HeaderMap::new());
    let plain = answer.expect("tokens");
    assert_eq!(plain["token_type"], "Bearer");
    let verdict = gate(&server, &bearer(&text(&plain, "access_token")));
    assert!(refused("invalid_token")(&verdict), "{verdict:?}");
    match verdict {
        Verdict::DpopRefused(_, why) => assert!(why.contains("only DPoP-bound"), "{why}"),
        other => panic!("{other:?}"),
    }

    let stats = server.stats();
    assert_eq!(stats.dpop_bound_tokens_issued, 1);
    assert_eq!(
        stats.dpop_proofs_accepted, 3,
        "token, gate, and the other key's proof"
    );
    assert_eq!(stats.dpop_proofs_rejected, 4, "replay, ath, htm, htu");
    assert_eq!(stats.replayed_dpop_proofs, 1);
    assert_eq!(stats.mcp_requests_accepted, 1);
}

#[test]
fn a_bound_refresh_token_needs_a_proof_by_its_key() {
    let server = dpop_server(false);
    let key = TestKey::new(1);
    let other = TestKey::new(2);
    let (client, answer) = dpop_login(
        &server,
        &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
    );
    let rt = text(&answer.expect("tokens"), "refresh_token");
    for headers in [
        HeaderMap::new(),
        proof_headers(&other.proof("POST", TOKEN_URL, None, None)),
    ] {
        let e = refresh_with(&server, &client, &rt, &headers).expect_err("refused");
        assert_eq!(
            (e.status, e.error),
            (StatusCode::BAD_REQUEST, "invalid_grant")
        );
    }
    let fresh = refresh_with(
        &server,
        &client,
        &rt,
        &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
    )
    .expect("refreshed");
    assert_eq!(fresh["token_type"], "DPoP");
    let rotated = text(&fresh, "refresh_token");
    assert_eq!(lock(&server.state).refresh[&rotated].jkt, Some(key.jkt()));
    assert_eq!(server.stats().dpop_bound_tokens_issued, 2);
}

#[test]
fn a_bad_proof_at_the_token_endpoint_leaves_the_code_usable() {
    let server = dpop_server(false);
    let key = TestKey::new(1);
    let client = register_public(&server);
    let code = authorize(&server, &client, "");
    let exchange = |headers: &HeaderMap| {
        server.token(
            headers,
            &form(&[
                ("grant_type", "authorization_code"),
                ("client_id", &client),
                ("code", &code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
            ]),
        )
    };
    for bad in [
        "not-a-proof".to_owned(),
        key.proof("POST", "http://127.0.0.1:4000/other", None, None),
        key.proof("GET", TOKEN_URL, None, None),
    ] {
        let e = exchange(&proof_headers(&bad)).expect_err("bad proof");
        assert_eq!(
            (e.status, e.error),
            (StatusCode::BAD_REQUEST, INVALID_DPOP_PROOF)
        );
    }
    let mut twice = proof_headers(&key.proof("POST", TOKEN_URL, None, None));
    twice.append(
        crate::dpop::DPOP_HEADER,
        HeaderValue::from_str(&key.proof("POST", TOKEN_URL, None, None)).expect("header"),
    );
    assert_eq!(
        exchange(&twice).expect_err("two proofs").error,
        INVALID_DPOP_PROOF
    );
    let tokens = exchange(&proof_headers(&key.proof("POST", TOKEN_URL, None, None)))
        .expect("the code was not used up");
    assert_eq!(tokens["token_type"], "DPoP");
    let stats = server.stats();
    assert_eq!(
        (stats.dpop_proofs_rejected, stats.dpop_proofs_accepted),
        (4, 1)
    );
    assert_eq!(stats.token_errors, 4);
}

#[test]
fn every_grant_binds_with_a_proof() {
    let server = server(OAuthOptions {
        dpop: true,
        device_authorization: true,
        preregistered: vec![("machine".into(), Some("s3cret".into()))],
        ..OAuthOptions::default()
    });
    let key = TestKey::new(1);
    let proof = || proof_headers(&key.proof("POST", TOKEN_URL, None, None));
    let cc = server
        .token(
            &proof(),
            &form(&[
                ("grant_type", "client_credentials"),
                ("client_id", "machine"),
                ("client_secret", "s3cret"),
            ]),
        )
        .expect("client_credentials");
    assert_eq!(cc["token_type"], "DPoP");
    let device = server
        .device_authorization(
            &HeaderMap::new(),
            &form(&[("client_id", "machine"), ("client_secret", "s3cret")]),
        )
        .expect("device authorization");
    server
        .approve_device(&format!("user_code={}", text(&device, "user_code")))
        .expect("approved");
    let dc = server
        .token(
            &proof(),
            &form(&[
                ("grant_type", DEVICE_CODE_GRANT),
                ("device_code", &text(&device, "device_code")),
                ("client_id", "machine"),
                ("client_secret", "s3cret"),
            ]),
        )
        .expect("device_code");
    assert_eq!(dc["token_type"], "DPoP");
    assert_eq!(
        lock(&server.state).refresh[&text(&dc, "refresh_token")].jkt,
        Some(key.jkt())
    );
    assert_eq!(server.stats().dpop_bound_tokens_issued, 2);
}

#[test]
fn nonces_are_asked_for_given_and_rotated() {
    let server = dpop_server(true);
    let key = TestKey::new(1);
    let e = dpop_login(
        &server,
        &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
    )
    .1
    .expect_err("no nonce");
    assert_eq!(
        (e.status, e.error),
        (StatusCode::BAD_REQUEST, "use_dpop_nonce")
    );
    let as_nonce = lock(&server.state)
        .dpop
        .nonce(Audience::AuthorizationServer)
        .expect("on")
        .to_owned();
    assert_eq!(
        server.nonce_header(Audience::AuthorizationServer)[DPOP_NONCE_HEADER],
        as_nonce.as_str()
    );
    let (_, answer) = dpop_login(
        &server,
        &proof_headers(&key.proof("POST", TOKEN_URL, None, Some(&as_nonce))),
    );
    let access = text(&answer.expect("tokens"), "access_token");

    // At the gate: a proof without the resource's nonce gets a use_dpop_nonce challenge
    // carrying it.
    let response = server
        .refusal(
            &Method::POST,
            MCP,
            &dpop_auth(
                &access,
                Some(&key.proof("POST", MCP_URL, Some(&access), None)),
            ),
        )
        .expect("no nonce");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .expect("ascii")
        .starts_with("DPoP error=\"use_dpop_nonce\", error_description="));
    let rs_nonce = response.headers()[DPOP_NONCE_HEADER]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert_ne!(rs_nonce, as_nonce);
    let proof = key.proof("POST", MCP_URL, Some(&access), Some(&rs_nonce));
    assert!(server
        .refusal(&Method::POST, MCP, &dpop_auth(&access, Some(&proof)))
        .is_none());
    let added = server.admitted_headers();
    assert_eq!(added[DPOP_NONCE_HEADER], rs_nonce.as_str());

    lock(&server.state).dpop.rotate_nonces();
    let verdict = gate(
        &server,
        &dpop_auth(
            &access,
            Some(&key.proof("POST", MCP_URL, Some(&access), Some(&rs_nonce))),
        ),
    );
    assert!(refused("use_dpop_nonce")(&verdict), "{verdict:?}");
    let stats = server.stats();
    assert_eq!(stats.dpop_nonce_challenges, 3);
    assert_eq!(stats.dpop_proofs_accepted, 2);
    assert_eq!(stats.dpop_proofs_rejected, 0);
}

const METADATA: &str =
    "resource_metadata=\"http://127.0.0.1:4000/.well-known/oauth-protected-resource/mcp\"";

#[test]
fn optional_dpop_binds_at_the_token_endpoint_and_the_gate_takes_both_schemes() {
    let server = server(OAuthOptions {
        dpop_optional: true,
        ..OAuthOptions::default()
    });
    // Only the authorization server speaks of DPoP.
    let prm = server.resource_metadata();
    assert!(
        prm.get("dpop_signing_alg_values_supported").is_none(),
        "{prm}"
    );
    assert!(
        prm.get("dpop_bound_access_tokens_required").is_none(),
        "{prm}"
    );
    assert_eq!(
        server.server_metadata()["dpop_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let response = server
        .refusal(&Method::POST, MCP, &HeaderMap::new())
        .expect("401");
    assert_eq!(challenges(&response), [format!("Bearer {METADATA}")]);

    // A bearer token, as Bearer.
    let (_, answer) = dpop_login(&server, &HeaderMap::new());
    let plain = text(&answer.expect("tokens"), "access_token");
    assert_eq!(gate(&server, &bearer(&plain)), Verdict::Accept);
    let verdict = gate(&server, &dpop_auth(&plain, None));
    assert!(refused("invalid_token")(&verdict), "{verdict:?}");

    // A bound token, as DPoP with a proof by its key; as Bearer or without a proof it is
    // refused, with a DPoP challenge.
    let key = TestKey::new(1);
    let (_, answer) = dpop_login(
        &server,
        &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
    );
    let tokens = answer.expect("tokens");
    assert_eq!(tokens["token_type"], "DPoP");
    let bound = text(&tokens, "access_token");
    let proof = key.proof("POST", MCP_URL, Some(&bound), None);
    assert_eq!(
        gate(&server, &dpop_auth(&bound, Some(&proof))),
        Verdict::Accept
    );
    let verdict = gate(&server, &bearer(&bound));
    assert!(refused("invalid_token")(&verdict), "{verdict:?}");
    let response = server
        .refusal(&Method::POST, MCP, &dpop_auth(&bound, None))
        .expect("401");
    let [challenge] = &challenges(&response)[..] else {
        panic!("{:?}", challenges(&response))
    };
    assert!(
        challenge.starts_with("DPoP error=\"invalid_dpop_proof\", error_description="),
        "{challenge}"
    );
    let stats = server.stats();
    assert_eq!(stats.dpop_bound_tokens_issued, 1);
    assert_eq!(stats.mcp_requests_accepted, 2);
}

#[test]
fn split_challenges_send_bearer_first_and_dpop_second() {
    let server = server(OAuthOptions {
        dpop_nonce: true,
        dpop_split_challenges: true,
        ..OAuthOptions::default()
    });
    let response = server
        .refusal(&Method::POST, MCP, &HeaderMap::new())
        .expect("401");
    assert_eq!(
        challenges(&response),
        [
            format!("Bearer {METADATA}"),
            format!("DPoP algs=\"ES256\", {METADATA}")
        ]
    );
    let response = server
        .refusal(&Method::POST, MCP, &dpop_auth("at-forged", None))
        .expect("401");
    assert_eq!(
        challenges(&response),
        [
            format!("Bearer error=\"invalid_token\", {METADATA}"),
            format!("DPoP error=\"invalid_token\", algs=\"ES256\", {METADATA}")
        ]
    );

    // use_dpop_nonce: only in the second header, which comes with the nonce.
    let key = TestKey::new(1);
    let as_nonce = lock(&server.state)
        .dpop
        .nonce(Audience::AuthorizationServer)
        .expect("on")
        .to_owned();
    let (_, answer) = dpop_login(
        &server,
        &proof_headers(&key.proof("POST", TOKEN_URL, None, Some(&as_nonce))),
    );
    let access = text(&answer.expect("tokens"), "access_token");
    let response = server
        .refusal(
            &Method::POST,
            MCP,
            &dpop_auth(
                &access,
                Some(&key.proof("POST", MCP_URL, Some(&access), None)),
            ),
        )
        .expect("no nonce");
    let all = challenges(&response);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0], format!("Bearer {METADATA}"));
    assert!(
        all[1].starts_with("DPoP error=\"use_dpop_nonce\", error_description="),
        "{all:?}"
    );
    assert!(response.headers().contains_key(DPOP_NONCE_HEADER));
}

#[test]
fn refused_proofs_fault_refuses_every_proof_at_the_gate_only() {
    let server = server(OAuthOptions {
        dpop_refuse_proofs: true,
        ..OAuthOptions::default()
    });
    let key = TestKey::new(1);
    let (_, answer) = dpop_login(
        &server,
        &proof_headers(&key.proof("POST", TOKEN_URL, None, None)),
    );
    let access = text(
        &answer.expect("the token endpoint takes the proof"),
        "access_token",
    );
    let proof = key.proof("POST", MCP_URL, Some(&access), None);
    let response = server
        .refusal(&Method::POST, MCP, &dpop_auth(&access, Some(&proof)))
        .expect("refused");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let [challenge] = &challenges(&response)[..] else {
        panic!("{:?}", challenges(&response))
    };
    assert!(
        challenge.starts_with("DPoP error=\"invalid_dpop_proof\""),
        "{challenge}"
    );
    let stats = server.stats();
    assert_eq!(
        (stats.dpop_proofs_accepted, stats.dpop_proofs_rejected),
        (1, 1),
        "{stats:?}"
    );
}

#[test]
fn a_client_assertion_is_spent_before_the_nonce_is_asked_for() {
    let key = TestKey::new(5);
    let dpop_key = TestKey::new(1);
    let server = server(OAuthOptions {
        dpop_nonce: true,
        preregistered_jwt: vec![("jwt-machine".into(), key.jwk.to_string())],
        ..OAuthOptions::default()
    });
    let first = assertion(&key, "jwt-machine", "n-1", |_| {});
    let e = jwt_client_credentials(
        &server,
        &proof_headers(&dpop_key.proof("POST", TOKEN_URL, None, None)),
        &first,
    )
    .expect_err("no nonce");
    assert_eq!(e.error, "use_dpop_nonce");
    let nonce = lock(&server.state)
        .dpop
        .nonce(Audience::AuthorizationServer)
        .expect("on")
        .to_owned();
    let with_nonce = || proof_headers(&dpop_key.proof("POST", TOKEN_URL, None, Some(&nonce)));
    // The same assertion on the retry: spent (as at strict servers).
    let e = jwt_client_credentials(&server, &with_nonce(), &first).expect_err("reused");
    assert_eq!(
        (e.status, e.error),
        (StatusCode::BAD_REQUEST, "invalid_client")
    );
    // A fresh one goes through, bound.
    let fresh = assertion(&key, "jwt-machine", "n-2", |_| {});
    let tokens = jwt_client_credentials(&server, &with_nonce(), &fresh).expect("tokens");
    assert_eq!(tokens["token_type"], "DPoP");
    let stats = server.stats();
    assert_eq!(stats.reused_client_assertions, 1, "{stats:?}");
    assert_eq!(stats.client_assertions_accepted, 2, "{stats:?}");
    assert_eq!(stats.dpop_nonce_challenges, 1, "{stats:?}");
}
