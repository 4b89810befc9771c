//! Inputs the `oauth_metadata` fuzz target of `fuzz/` found, kept as tests of the behaviour
//! they broke.

use mcp_auth::metadata::server_metadata_urls;
use url::Url;

/// An issuer whose path starts with `//` made the OpenID Connect form
/// (`{issuer path}/.well-known/openid-configuration`) a scheme-relative reference, so the
/// metadata was fetched from the host named in the path: `https://as.example.com//169.254.169.254`
/// led to `https://169.254.169.254/.well-known/openid-configuration`.
#[test]
fn metadata_urls_stay_on_the_issuers_origin() {
    let issuer = Url::parse("https://as.example.com//169.254.169.254/tenant").unwrap();
    let urls = server_metadata_urls(&issuer).unwrap();
    assert_eq!(urls.len(), 3);
    for url in &urls {
        assert_eq!(url.origin(), issuer.origin(), "{url}");
    }
    assert_eq!(
        urls[2].as_str(),
        "https://as.example.com//169.254.169.254/tenant/.well-known/openid-configuration"
    );
    assert_eq!(
        urls[0].as_str(),
        "https://as.example.com/.well-known/oauth-authorization-server//169.254.169.254/tenant"
    );
}
