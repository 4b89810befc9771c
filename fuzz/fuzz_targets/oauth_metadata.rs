//! OAuth documents from servers (mcp-auth): protected resource metadata (RFC 9728),
//! authorization server metadata (RFC 8414), and token and error answers (read by the `oauth2`
//! crate's types, as the token requests do). Each document that reads round-trips; what
//! discovery derives from it (the resource check, the metadata URLs of the issuer, the
//! endpoints, PKCE and DPoP support) gives an answer or a structured error, and the URLs built
//! stay on the issuer's origin.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_auth::http::{parse_url, Fetched};
use mcp_auth::metadata::{
    canonical_resource, resource_matches, server_metadata_urls, AuthorizationServerMetadata,
    ProtectedResourceMetadata,
};
use mcp_auth::{AuthMetadata, TokenType};
use mcp_fuzz::check_round_trip;
use oauth2::TokenResponse;
use url::Url;

const SERVER: &str = "https://mcp.example.com/api/mcp";

fn check_issuer(issuer: &str) {
    let Ok(issuer) = parse_url(issuer, "authorization server") else {
        return;
    };
    if let Ok(urls) = server_metadata_urls(&issuer) {
        for url in urls {
            assert_eq!(
                url.origin(),
                issuer.origin(),
                "a metadata URL off the issuer's origin"
            );
        }
    }
    let _ = canonical_resource(&issuer);
}

fuzz_target!(|data: &[u8]| {
    let server = Url::parse(SERVER).expect("a valid URL");
    let fetched = Fetched {
        status: 200,
        headers: http::HeaderMap::new(),
        body: data.to_vec(),
    };
    // serde_json reads bytes: invalid UTF-8 inside a member it skips is not an error.
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();

    match fetched.json::<ProtectedResourceMetadata>("protected resource metadata", &server) {
        Ok(prm) => {
            check_round_trip::<ProtectedResourceMetadata>(text, "resource metadata");
            let _ = resource_matches(&prm.resource, &server);
            if let Ok(advertised) = Url::parse(&prm.resource) {
                // A resource always matches itself.
                assert!(resource_matches(&prm.resource, &advertised));
            }
            for issuer in &prm.authorization_servers {
                check_issuer(issuer);
            }
        }
        Err(e) => assert!(e.to_string().contains("protected resource metadata"), "{e}"),
    }

    if let Ok(meta) =
        fetched.json::<AuthorizationServerMetadata>("authorization server metadata", &server)
    {
        check_round_trip::<AuthorizationServerMetadata>(text, "server metadata");
        check_issuer(&meta.issuer);
        let found = AuthMetadata {
            server_url: server.clone(),
            resource: None,
            authorization_server: meta.clone(),
            default_endpoints: false,
            challenge_scope: None,
            resource_metadata_url: None,
            challenge_offers_dpop: false,
            challenge_dpop_algs: None,
        };
        let _ = found.require_s256();
        let _ = found.server_offers_dpop();
        let _ = found.resource_offers_dpop();
        let _ = found.default_scopes();
        for (endpoint, what) in [
            (&meta.authorization_endpoint, "authorization endpoint"),
            (&meta.token_endpoint, "token endpoint"),
            (&meta.registration_endpoint, "registration endpoint"),
            (&meta.revocation_endpoint, "revocation endpoint"),
            (&meta.device_authorization_endpoint, "device endpoint"),
        ] {
            if let Err(e) = found.endpoint(endpoint.as_ref(), what) {
                assert!(!e.to_string().is_empty());
            }
        }
    }

    if let Ok(token) = serde_json::from_str::<oauth2::basic::BasicTokenResponse>(text) {
        let _ = TokenType::parse(token.token_type().as_ref());
        let _ = token.expires_in();
        let _ = token.scopes().map(|s| s.len());
        let _ = token.refresh_token().map(|r| r.secret().len());
    }
    if let Ok(error) = serde_json::from_str::<oauth2::basic::BasicErrorResponse>(text) {
        let _ = error.error_description().map(String::len);
    }
});
