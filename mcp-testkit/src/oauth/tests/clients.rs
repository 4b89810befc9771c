//! Clients: registration, authentication (secrets, `private_key_jwt`), what `Debug` shows.

use super::*;

#[test]
fn confidential_clients_authenticate() {
    let server = server(OAuthOptions {
        preregistered: vec![
            ("machine".into(), Some("s3cret".into())),
            ("public".into(), None),
        ],
        ..OAuthOptions::default()
    });
    let cc = |headers: &HeaderMap, extra: &[(&str, &str)]| {
        let mut pairs = vec![("grant_type", "client_credentials")];
        pairs.extend_from_slice(extra);
        server.token(headers, &form(&pairs))
    };
    let mut basic = HeaderMap::new();
    let encoded = base64::engine::general_purpose::STANDARD.encode("machine:s3cret");
    basic.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Basic {encoded}")).expect("header"),
    );
    let answer = cc(&basic, &[("scope", "a b")]).expect("basic");
    assert_eq!(answer["scope"], "a b");
    assert!(answer.get("refresh_token").is_none());
    cc(
        &HeaderMap::new(),
        &[("client_id", "machine"), ("client_secret", "s3cret")],
    )
    .expect("post");
    let e = cc(
        &HeaderMap::new(),
        &[("client_id", "machine"), ("client_secret", "wrong")],
    )
    .expect_err("wrong secret");
    assert_eq!(
        (e.status, e.error),
        (StatusCode::UNAUTHORIZED, "invalid_client")
    );
    let e = cc(&HeaderMap::new(), &[("client_id", "machine")]).expect_err("no secret");
    assert_eq!(e.error, "invalid_client");
    let e = cc(&HeaderMap::new(), &[("client_id", "public")]).expect_err("public");
    assert_eq!(e.error, "unauthorized_client");
    let e = cc(&HeaderMap::new(), &[("client_id", "nobody")]).expect_err("unknown");
    assert_eq!(e.error, "invalid_client");
    let stats = server.stats();
    assert_eq!((stats.client_credentials, stats.token_errors), (6, 4));
}

#[test]
fn registration_checks_redirect_uris_and_methods() {
    let server = server(OAuthOptions::default());
    for bad in [
        json!({}),
        json!({ "redirect_uris": [] }),
        json!({ "redirect_uris": [7] }),
        json!({ "redirect_uris": ["no-scheme"] }),
        json!({ "redirect_uris": ["http://127.0.0.1/cb#frag"] }),
        json!({ "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt" }),
    ] {
        assert!(server.register(&bad.to_string()).is_err(), "{bad}");
    }
    assert!(server.register("not json").is_err());
    let answer = server
        .register(&json!({ "redirect_uris": [REDIRECT], "client_name": "t" }).to_string())
        .expect("registered");
    assert_eq!(answer["token_endpoint_auth_method"], "client_secret_basic");
    assert!(text(&answer, "client_secret").starts_with("secret-"));
    assert_eq!(server.stats().registrations, 1);
}

#[test]
fn debug_hides_preregistered_secrets() {
    let options = OAuthOptions {
        preregistered: vec![("machine".into(), Some("s3cret".into()))],
        ..OAuthOptions::default()
    };
    let shown = format!("{options:?}");
    assert!(
        shown.contains("machine") && !shown.contains("s3cret"),
        "{shown}"
    );
    // Every field is listed.
    for field in [
        "device_authorization",
        "dpop: false",
        "dpop_nonce: false",
        "dpop_optional: false",
        "dpop_split_challenges: false",
        "dpop_refuse_proofs: false",
        "preregistered_jwt",
    ] {
        assert!(shown.contains(field), "{shown}");
    }
}

#[test]
fn private_key_jwt_clients_authenticate_with_single_use_assertions() {
    let key = TestKey::new(5);
    let server = server(OAuthOptions {
        preregistered: vec![("machine".into(), Some("s3cret".into()))],
        preregistered_jwt: vec![
            ("jwt-machine".into(), key.jwk.to_string()),
            ("broken".into(), "not a key".into()),
        ],
        ..OAuthOptions::default()
    });
    let meta = server.server_metadata();
    assert_eq!(
        meta["token_endpoint_auth_methods_supported"],
        json!([
            "none",
            "client_secret_post",
            "client_secret_basic",
            "private_key_jwt"
        ])
    );
    assert_eq!(
        meta["token_endpoint_auth_signing_alg_values_supported"],
        json!(["ES256"])
    );

    let first = assertion(&key, "jwt-machine", "a-1", |_| {});
    let answer = jwt_client_credentials(&server, &HeaderMap::new(), &first).expect("accepted");
    assert_eq!(answer["token_type"], "Bearer");
    // The same assertion again: its jti is spent.
    let e = jwt_client_credentials(&server, &HeaderMap::new(), &first).expect_err("reused");
    assert_eq!(
        (e.status, e.error),
        (StatusCode::BAD_REQUEST, "invalid_client")
    );
    assert!(e.description.contains("used before"), "{}", e.description);
    // The token endpoint as aud, and no client_id (the client is the assertion's sub).
    let to_endpoint = assertion(&key, "jwt-machine", "a-2", |c| {
        c["aud"] = json!("http://127.0.0.1:4000/token");
    });
    server
        .token(
            &HeaderMap::new(),
            &form(&[
                ("grant_type", "client_credentials"),
                ("client_assertion_type", super::super::CLIENT_ASSERTION_TYPE),
                ("client_assertion", &to_endpoint),
            ]),
        )
        .expect("aud = the token endpoint, client from sub");

    let other = TestKey::new(6);
    let refusals = [
        (
            "another key",
            assertion(&other, "jwt-machine", "b-1", |_| {}),
        ),
        (
            "another audience",
            assertion(&key, "jwt-machine", "b-2", |c| {
                c["aud"] = json!("https://elsewhere.example");
            }),
        ),
        (
            "expired",
            assertion(&key, "jwt-machine", "b-3", |c| {
                c["exp"] = json!(super::super::unix_now() - 1);
            }),
        ),
        (
            "another subject",
            assertion(&key, "jwt-machine", "b-4", |c| c["sub"] = json!("machine")),
        ),
    ];
    for (what, bad) in &refusals {
        let e = jwt_client_credentials(&server, &HeaderMap::new(), bad).expect_err(what);
        assert_eq!(
            (e.status, e.error),
            (StatusCode::BAD_REQUEST, "invalid_client"),
            "{what}"
        );
    }
    let cc = |pairs: &[(&str, &str)]| {
        let mut all = vec![("grant_type", "client_credentials")];
        all.extend_from_slice(pairs);
        server.token(&HeaderMap::new(), &form(&all))
    };
    let fresh = assertion(&key, "jwt-machine", "c-1", |_| {});
    let e = cc(&[
        ("client_id", "jwt-machine"),
        ("client_assertion_type", "urn:other"),
        ("client_assertion", &fresh),
    ])
    .expect_err("wrong assertion type");
    assert_eq!(e.error, "invalid_client");
    let e = cc(&[
        ("client_id", "jwt-machine"),
        ("client_secret", "s3cret"),
        ("client_assertion_type", super::super::CLIENT_ASSERTION_TYPE),
        ("client_assertion", &fresh),
    ])
    .expect_err("two methods");
    assert_eq!(e.error, "invalid_request");
    let e = cc(&[("client_id", "jwt-machine")]).expect_err("no assertion");
    assert_eq!(
        (e.status, e.error),
        (StatusCode::UNAUTHORIZED, "invalid_client")
    );
    for (id, why) in [("machine", "no public key"), ("broken", "unusable")] {
        let signed = assertion(&key, id, &format!("d-{id}"), |_| {});
        let e = cc(&[
            ("client_id", id),
            ("client_assertion_type", super::super::CLIENT_ASSERTION_TYPE),
            ("client_assertion", &signed),
        ])
        .expect_err(id);
        assert!(e.description.contains(why), "{id}: {}", e.description);
    }
    // The refusals spent nothing: c-1 still works.
    jwt_client_credentials(&server, &HeaderMap::new(), &fresh).expect("c-1 unspent");

    let stats = server.stats();
    assert_eq!(stats.client_assertions_accepted, 3, "{stats:?}");
    assert_eq!(stats.reused_client_assertions, 1, "{stats:?}");
}

#[test]
fn a_pem_public_key_registers_a_jwt_client() {
    // The PEM of `TestKey::new(5)`'s public key, built from its JWK by the SPKI layout.
    let key = TestKey::new(5);
    let coordinate = |name: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(key.jwk[name].as_str().expect("coordinate"))
            .expect("base64url")
    };
    let mut der = vec![
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
    ];
    der.extend(coordinate("x"));
    der.extend(coordinate("y"));
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let pem = format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n{}\n-----END PUBLIC KEY-----\n",
        &body[..64],
        &body[64..]
    );
    let server = server(OAuthOptions {
        preregistered_jwt: vec![("jwt-machine".into(), pem)],
        ..OAuthOptions::default()
    });
    jwt_client_credentials(
        &server,
        &HeaderMap::new(),
        &assertion(&key, "jwt-machine", "p-1", |_| {}),
    )
    .expect("accepted with the PEM key");
}
