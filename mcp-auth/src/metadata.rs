//! Finding out how a server wants to be authorized: the `WWW-Authenticate` challenge, the
//! protected resource metadata (RFC 9728) and the authorization server metadata (RFC 8414 /
//! OpenID Connect Discovery), with the 2025-03-26 fallbacks for servers that publish no
//! resource metadata.
//!
//! Every URL followed is checked by [`check_url`](crate::http::check_url), and by the MCP
//! server's [`address_policy`](crate::address_policy) when the request is made. The 401's
//! `resource_metadata` must be on the server's origin (or one the configuration allows,
//! [`AuthHttp::allows_resource_metadata_at`]); the authorization server may be anywhere the
//! address policy allows. The resource metadata's `resource` must name the server, and the
//! authorization server metadata's `issuer` the issuer it was fetched for; otherwise metadata
//! discovery fails before anything is authorized.

use mcp_wire::redact::redact_url;
use serde::{Deserialize, Serialize};
use tracing::debug;
use url::Url;

use crate::error::AuthError;
use crate::http::{parse_url, AuthHttp};

/// The challenge of a protected resource: the `Bearer` (RFC 6750 §3, RFC 9728 §5.1) or `DPoP`
/// (RFC 9449 §7.1) challenges of a `WWW-Authenticate` header, their parameters merged (the
/// first value of each wins).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceChallenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`, split on spaces.
    pub scope: Option<Vec<String>>,
    /// `error` (`invalid_token`, `insufficient_scope`, `use_dpop_nonce`, …).
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
    /// Whether the server offered the `DPoP` scheme (it takes, or wants, DPoP-bound tokens).
    pub dpop: bool,
    /// The `DPoP` challenge's `algs`: the proof algorithms the server accepts.
    pub dpop_algs: Option<Vec<String>>,
}

impl ResourceChallenge {
    /// The `Bearer` and `DPoP` challenges in a `WWW-Authenticate` value, if there are any.
    pub fn parse(header: &str) -> Option<ResourceChallenge> {
        let (params, dpop) = challenge_params(header)?;
        let mut challenge = ResourceChallenge {
            dpop,
            ..ResourceChallenge::default()
        };
        let words = |value: &str| value.split_whitespace().map(str::to_owned).collect();
        for (name, value) in params {
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => {
                    challenge.resource_metadata.get_or_insert(value);
                }
                "scope" => {
                    challenge.scope.get_or_insert_with(|| words(&value));
                }
                "error" => {
                    challenge.error.get_or_insert(value);
                }
                "error_description" => {
                    challenge.error_description.get_or_insert(value);
                }
                "algs" => {
                    challenge.dpop_algs.get_or_insert_with(|| words(&value));
                }
                _ => {}
            }
        }
        Some(challenge)
    }

    /// Whether this is a 403 step-up challenge (`error="insufficient_scope"`).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// Whether the server only wants a DPoP proof carrying its nonce (`use_dpop_nonce`,
    /// RFC 9449 §9): the token itself is fine.
    pub fn is_dpop_nonce(&self) -> bool {
        self.error.as_deref() == Some(crate::dpop::USE_DPOP_NONCE)
    }
}

/// The auth-params of the `Bearer` and `DPoP` challenges (`name=token` or
/// `name="quoted \" string"`, comma separated), and whether a `DPoP` challenge was among
/// them; other schemes' challenges in the same header are skipped. `None` without either.
fn challenge_params(header: &str) -> Option<(Vec<(String, String)>, bool)> {
    let bytes = header.as_bytes();
    let mut i = 0;
    let mut in_challenge = false;
    let mut found = false;
    let mut dpop = false;
    let mut params = Vec::new();
    while i < bytes.len() {
        while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b',' || bytes[i] == b'\t') {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && !matches!(bytes[i], b' ' | b',' | b'=' | b'\t') {
            i += 1;
        }
        let token = &header[start..i];
        if token.is_empty() {
            break;
        }
        let mut j = i;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'=' && !token.ends_with('=') {
            // An auth-param.
            j += 1;
            while j < bytes.len() && bytes[j] == b' ' {
                j += 1;
            }
            let mut value = String::new();
            if j < bytes.len() && bytes[j] == b'"' {
                j += 1;
                let mut chars = header[j..].char_indices();
                let mut end = header.len();
                while let Some((k, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                value.push(escaped);
                            }
                        }
                        '"' => {
                            end = j + k + 1;
                            break;
                        }
                        c => value.push(c),
                    }
                }
                i = end;
            } else {
                let vstart = j;
                while j < bytes.len() && bytes[j] != b',' && bytes[j] != b' ' {
                    j += 1;
                }
                value.push_str(&header[vstart..j]);
                i = j;
            }
            if in_challenge {
                params.push((token.to_owned(), value));
            }
        } else {
            // A scheme name starts a new challenge (a token68 after it is ignored).
            let is_dpop = token.eq_ignore_ascii_case("dpop");
            in_challenge = is_dpop || token.eq_ignore_ascii_case("bearer");
            found |= in_challenge;
            dpop |= is_dpop;
            i = j;
        }
    }
    found.then_some((params, dpop))
}

/// Protected resource metadata (RFC 9728).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier.
    pub resource: String,
    /// The authorization servers (the first one is used).
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes the resource knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// The DPoP proof algorithms the resource accepts (RFC 9728 §2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether the resource takes DPoP-bound tokens only (RFC 9728 §2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_bound_access_tokens_required: Option<bool>,
}

/// Authorization server metadata (RFC 8414 / OpenID Connect Discovery); only the members a
/// client uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier.
    pub issuer: String,
    /// Where the user authorizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where tokens are obtained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Token revocation (RFC 7009).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// The device authorization grant (RFC 8628).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_authorization_endpoint: Option<String>,
    /// Scopes the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Grant types (`authorization_code`, `refresh_token`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// PKCE methods; must contain `S256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Token endpoint client authentication methods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Whether a URL may be the `client_id` (client ID metadata documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// Whether the callback carries `iss` (RFC 9207).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// The DPoP proof algorithms the token endpoint accepts (RFC 9449 §5.1); DPoP is offered
    /// only where this lists one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// What metadata discovery found for one server.
#[derive(Clone, Debug)]
pub struct AuthMetadata {
    /// The MCP server's URL.
    pub server_url: Url,
    /// The protected resource metadata (`None` for a 2025-03-26 server that has none).
    pub resource: Option<ProtectedResourceMetadata>,
    /// The authorization server's metadata (defaults at the server's origin when it has none).
    pub authorization_server: AuthorizationServerMetadata,
    /// Whether the authorization server's metadata came from the 2025-03-26 default endpoints
    /// rather than a document.
    pub default_endpoints: bool,
    /// The scopes the first 401 asked for.
    pub challenge_scope: Option<Vec<String>>,
    /// The `resource_metadata` URL of the challenge metadata discovery started from.
    pub resource_metadata_url: Option<String>,
    /// Whether that challenge (or a later one) offered the `DPoP` scheme.
    pub challenge_offers_dpop: bool,
    /// The `algs` of that `DPoP` challenge.
    pub challenge_dpop_algs: Option<Vec<String>>,
}

impl AuthMetadata {
    /// The RFC 8707 `resource` for authorize and token requests: the metadata's resource, else
    /// the server's canonical URL.
    pub fn resource_indicator(&self) -> String {
        match &self.resource {
            Some(r) => r.resource.clone(),
            None => canonical_resource(&self.server_url),
        }
    }

    /// The scopes to ask for when none are configured: the challenge's, else the resource
    /// metadata's `scopes_supported`, else none (the `scope` parameter is then left out).
    pub fn default_scopes(&self) -> Vec<String> {
        if let Some(scope) = &self.challenge_scope {
            return scope.clone();
        }
        self.resource
            .as_ref()
            .and_then(|r| r.scopes_supported.clone())
            .unwrap_or_default()
    }

    /// An endpoint of the authorization server as a checked URL.
    pub fn endpoint(&self, value: Option<&String>, what: &str) -> Result<Url, AuthError> {
        let value = value.ok_or_else(|| {
            AuthError::Unsupported(format!(
                "the authorization server {} has no {what}",
                self.authorization_server.issuer
            ))
        })?;
        parse_url(value, what)
    }

    /// Whether the MCP server takes DPoP-bound tokens proven with
    /// [`DPOP_ALG`](crate::dpop::DPOP_ALG): its challenge offered the `DPoP` scheme, or its
    /// resource metadata lists DPoP algorithms or requires bound tokens — and the algorithms
    /// it names, if it names any, include ours.
    pub fn resource_offers_dpop(&self) -> bool {
        let signals = self.challenge_offers_dpop
            || self.resource_requires_dpop()
            || self
                .resource_dpop_algs()
                .is_some_and(|algs| !algs.is_empty());
        signals && self.resource_accepts_our_proofs()
    }

    /// Whether the MCP server's DPoP algorithms (its challenge's `algs`, else its metadata's
    /// `dpop_signing_alg_values_supported`) include ours; true when it names none.
    pub fn resource_accepts_our_proofs(&self) -> bool {
        self.resource_dpop_algs()
            .is_none_or(|algs| algs.iter().any(|a| a == crate::dpop::DPOP_ALG))
    }

    /// The DPoP algorithms the MCP server names, if it names any.
    pub fn resource_dpop_algs(&self) -> Option<&[String]> {
        self.challenge_dpop_algs.as_deref().or_else(|| {
            self.resource
                .as_ref()
                .and_then(|r| r.dpop_signing_alg_values_supported.as_deref())
        })
    }

    /// Whether the MCP server takes DPoP-bound tokens only
    /// (`dpop_bound_access_tokens_required`).
    pub fn resource_requires_dpop(&self) -> bool {
        self.resource
            .as_ref()
            .is_some_and(|r| r.dpop_bound_access_tokens_required == Some(true))
    }

    /// Whether the authorization server binds tokens to a key with the algorithm proofs are
    /// made with ([`DPOP_ALG`](crate::dpop::DPOP_ALG)).
    pub fn server_offers_dpop(&self) -> bool {
        self.authorization_server
            .dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|algs| algs.iter().any(|a| a == crate::dpop::DPOP_ALG))
    }

    /// Refuses a server that does not offer PKCE with S256.
    pub fn require_s256(&self) -> Result<(), AuthError> {
        let methods = self
            .authorization_server
            .code_challenge_methods_supported
            .as_deref();
        match methods {
            Some(m) if m.iter().any(|m| m == "S256") => Ok(()),
            // The 2025-03-26 defaults carry no metadata to check: PKCE S256 is required of
            // those servers by that revision.
            None if self.default_endpoints => Ok(()),
            _ => Err(AuthError::Unsupported(format!(
                "the authorization server {} does not support PKCE with S256 \
                 (code_challenge_methods_supported: {}); refusing to authorize without it",
                self.authorization_server.issuer,
                methods.map_or("absent".to_owned(), |m| format!("{m:?}"))
            ))),
        }
    }
}

/// The server URL as a resource identifier (RFC 8707): no fragment, no query, lowercase
/// scheme and host, no trailing slash on a bare origin.
pub fn canonical_resource(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.set_query(None);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let text = url.to_string();
    match text.strip_suffix('/') {
        Some(t) if url.path() == "/" => t.to_owned(),
        _ => text,
    }
}

/// Whether the resource metadata's `resource` names this server: the same origin, and a path
/// that is the server's path or a parent of it (at a `/` boundary).
pub fn resource_matches(advertised: &str, server: &Url) -> bool {
    let Ok(advertised) = Url::parse(advertised) else {
        return false;
    };
    if advertised.scheme() != server.scheme()
        || advertised.host_str().map(str::to_ascii_lowercase)
            != server.host_str().map(str::to_ascii_lowercase)
        || advertised.port_or_known_default() != server.port_or_known_default()
    {
        return false;
    }
    let want = advertised.path().trim_end_matches('/');
    let have = server.path().trim_end_matches('/');
    have == want || have.starts_with(&format!("{want}/")) || want.is_empty()
}

/// Fetches the authorization metadata for `server_url`, starting from the 401's challenge when there was one.
pub async fn fetch_metadata(
    http: &AuthHttp,
    server_url: &Url,
    challenge: Option<&ResourceChallenge>,
) -> Result<AuthMetadata, AuthError> {
    crate::http::check_url(server_url)?;
    let resource = fetch_resource_metadata(http, server_url, challenge).await?;
    let (authorization_server, default_endpoints) = match &resource {
        Some(prm) => {
            let Some(issuer) = prm.authorization_servers.first() else {
                return Err(AuthError::Metadata(format!(
                    "the protected resource metadata of {} names no authorization server",
                    redact_url(server_url.as_str())
                )));
            };
            let issuer = parse_url(issuer, "authorization server")?;
            match fetch_server_metadata(http, &issuer, true).await? {
                Some(meta) => (meta, false),
                None => {
                    return Err(AuthError::Metadata(format!(
                        "no authorization server metadata for {} (tried RFC 8414 and OpenID \
                         Connect Discovery)",
                        redact_url(issuer.as_str())
                    )))
                }
            }
        }
        None => {
            // 2025-03-26: the MCP server's origin is the authorization server's base URL. Its
            // metadata may name an issuer under that origin (e.g. `{origin}/oauth`), so only
            // the origin is checked.
            let origin = origin_of(server_url);
            match fetch_server_metadata(http, &origin, false).await? {
                Some(meta) => (meta, false),
                None => (default_server_metadata(&origin), true),
            }
        }
    };
    Ok(AuthMetadata {
        server_url: server_url.clone(),
        resource,
        authorization_server,
        default_endpoints,
        challenge_scope: challenge.and_then(|c| c.scope.clone()),
        resource_metadata_url: challenge.and_then(|c| c.resource_metadata.clone()),
        challenge_offers_dpop: challenge.is_some_and(|c| c.dpop),
        challenge_dpop_algs: challenge.and_then(|c| c.dpop_algs.clone()),
    })
}

/// The protected resource metadata: the challenge's URL, then the path-aware and root
/// well-known URLs. `None` when no document exists (a 2025-03-26 server).
async fn fetch_resource_metadata(
    http: &AuthHttp,
    server_url: &Url,
    challenge: Option<&ResourceChallenge>,
) -> Result<Option<ProtectedResourceMetadata>, AuthError> {
    let mut candidates = Vec::new();
    if let Some(url) = challenge.and_then(|c| c.resource_metadata.as_deref()) {
        candidates.push(challenge_metadata_url(http, url, server_url)?);
    }
    let origin = origin_of(server_url);
    let path = server_url.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(join(
            &origin,
            &format!("/.well-known/oauth-protected-resource{path}"),
        )?);
    }
    candidates.push(join(&origin, "/.well-known/oauth-protected-resource")?);
    for url in candidates {
        let fetched = http.get_json(&url).await?;
        debug!(url = %redact_url(url.as_str()), status = fetched.status, "protected resource metadata");
        if !fetched.is_success() {
            continue;
        }
        let prm: ProtectedResourceMetadata = fetched.json("protected resource metadata", &url)?;
        if !resource_matches(&prm.resource, server_url) {
            return Err(AuthError::ResourceMismatch {
                advertised: redact_url(&prm.resource),
                server: redact_url(server_url.as_str()),
            });
        }
        return Ok(Some(prm));
    }
    Ok(None)
}

/// The 401's `resource_metadata` URL, if it may be followed: on the server's origin, or on
/// one the configuration allows. Otherwise any server could have the client fetch any URL.
fn challenge_metadata_url(http: &AuthHttp, text: &str, server_url: &Url) -> Result<Url, AuthError> {
    let url = parse_url(text, "resource_metadata")?;
    if url.origin() == server_url.origin() || http.allows_resource_metadata_at(&url) {
        return Ok(url);
    }
    Err(AuthError::ForeignResourceMetadata {
        url: redact_url(url.as_str()),
        origin: server_url.origin().ascii_serialization(),
    })
}

/// The well-known metadata URLs of an issuer, in the order the MCP specification gives.
pub fn server_metadata_urls(issuer: &Url) -> Result<Vec<Url>, AuthError> {
    let origin = origin_of(issuer);
    let path = issuer.path().trim_end_matches('/');
    let paths = if path.is_empty() {
        vec![
            "/.well-known/oauth-authorization-server".to_owned(),
            "/.well-known/openid-configuration".to_owned(),
        ]
    } else {
        vec![
            format!("/.well-known/oauth-authorization-server{path}"),
            format!("/.well-known/openid-configuration{path}"),
            format!("{path}/.well-known/openid-configuration"),
        ]
    };
    paths.iter().map(|p| join(&origin, p)).collect()
}

/// The first authorization server metadata document found for `issuer`. With `exact`, its
/// `issuer` must be `issuer`; without, it must at least be on the same origin.
async fn fetch_server_metadata(
    http: &AuthHttp,
    issuer: &Url,
    exact: bool,
) -> Result<Option<AuthorizationServerMetadata>, AuthError> {
    for url in server_metadata_urls(issuer)? {
        let fetched = http.get_json(&url).await?;
        debug!(url = %redact_url(url.as_str()), status = fetched.status, "authorization server metadata");
        if !fetched.is_success() {
            continue;
        }
        let meta: AuthorizationServerMetadata =
            fetched.json("authorization server metadata", &url)?;
        let matches = if exact {
            same_issuer(&meta.issuer, issuer.as_str())
        } else {
            Url::parse(&meta.issuer).is_ok_and(|found| found.origin() == issuer.origin())
        };
        if !matches {
            return Err(AuthError::IssuerMismatch {
                url: redact_url(url.as_str()),
                expected: redact_url(issuer.as_str()),
                found: redact_url(&meta.issuer),
            });
        }
        return Ok(Some(meta));
    }
    Ok(None)
}

/// Issuers compare as strings, but a lone trailing `/` (which URL parsers add to a bare
/// origin) does not make them differ.
fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The 2025-03-26 default endpoints at `origin`: `/authorize`, `/token`, `/register`.
fn default_server_metadata(origin: &Url) -> AuthorizationServerMetadata {
    let at = |p: &str| join(origin, p).ok().map(|u| u.to_string());
    AuthorizationServerMetadata {
        issuer: origin.as_str().trim_end_matches('/').to_owned(),
        authorization_endpoint: at("/authorize"),
        token_endpoint: at("/token"),
        registration_endpoint: at("/register"),
        ..Default::default()
    }
}

/// `scheme://host:port/` of a URL.
fn origin_of(url: &Url) -> Url {
    let mut origin = url.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    let _ = origin.set_username("");
    let _ = origin.set_password(None);
    origin
}

/// `path` at `origin`. Set, not joined: a path starting with `//` (an issuer's
/// `https://as.example.com//other.host/` in the OpenID Connect form) would otherwise be a
/// scheme-relative reference naming another host.
fn join(origin: &Url, path: &str) -> Result<Url, AuthError> {
    let mut url = origin.clone();
    url.set_path(path);
    if url.origin() != origin.origin() {
        return Err(AuthError::Metadata(format!(
            "cannot build a metadata URL for {} at {path:?}",
            redact_url(origin.as_str())
        )));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse() {
        let c = ResourceChallenge::parse(
            r#"Bearer resource_metadata="http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp", scope="read write""#,
        )
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope, Some(vec!["read".to_owned(), "write".to_owned()]));
        let c = ResourceChallenge::parse(
            r#"Basic realm="x", Bearer error="insufficient_scope", scope="a b", error_description="need \"b\"""#,
        )
        .unwrap();
        assert!(c.is_insufficient_scope());
        assert_eq!(c.error_description.as_deref(), Some("need \"b\""));
        assert_eq!(
            ResourceChallenge::parse("Bearer"),
            Some(ResourceChallenge::default())
        );
        assert_eq!(ResourceChallenge::parse(r#"Basic realm="r""#), None);
        assert!(!c.dpop);
        assert_eq!(
            ResourceChallenge::parse("Bearer error=invalid_token")
                .unwrap()
                .error
                .as_deref(),
            Some("invalid_token")
        );
    }

    #[test]
    fn dpop_challenges_parse_alone_and_beside_bearer() {
        // The conformance suite's first 401, and RFC 9449 §9's nonce challenge.
        let c = ResourceChallenge::parse(
            r#"DPoP resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp""#,
        )
        .unwrap();
        assert!(c.dpop);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp")
        );
        let c = ResourceChallenge::parse(
            r#"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof""#,
        )
        .unwrap();
        assert!(c.dpop && c.is_dpop_nonce());
        // RFC 9449 §7.1: both schemes offered; the first value of each parameter wins.
        let c = ResourceChallenge::parse(
            r#"Bearer realm="x", scope="a", DPoP algs="ES256 PS256", scope="b""#,
        )
        .unwrap();
        assert!(c.dpop);
        assert_eq!(c.scope, Some(vec!["a".to_owned()]));
        assert_eq!(
            c.dpop_algs,
            Some(vec!["ES256".to_owned(), "PS256".to_owned()])
        );
        assert!(!ResourceChallenge::parse("Bearer").unwrap().is_dpop_nonce());
    }

    #[test]
    fn resources_match_by_origin_and_path() {
        let server = Url::parse("http://127.0.0.1:3000/mcp").unwrap();
        assert!(resource_matches("http://127.0.0.1:3000/mcp", &server));
        assert!(resource_matches("http://127.0.0.1:3000/mcp/", &server));
        assert!(resource_matches("http://127.0.0.1:3000", &server));
        assert!(resource_matches("http://127.0.0.1:3000/", &server));
        assert!(!resource_matches("http://127.0.0.1:3001/mcp", &server));
        assert!(!resource_matches("https://127.0.0.1:3000/mcp", &server));
        assert!(!resource_matches("http://127.0.0.1:3000/other", &server));
        assert!(!resource_matches("http://127.0.0.1:3000/mcpx", &server));
        assert!(!resource_matches("https://evil.example.com/mcp", &server));
        assert_eq!(canonical_resource(&server), "http://127.0.0.1:3000/mcp");
        assert_eq!(
            canonical_resource(&Url::parse("HTTPS://Example.COM/?q=1#f").unwrap()),
            "https://example.com"
        );
    }

    #[test]
    fn a_challenge_may_point_only_at_the_servers_origin() {
        let http = AuthHttp::new().unwrap();
        let server = Url::parse("https://mcp.example.com/mcp").unwrap();
        for same in [
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "https://MCP.example.com:443/elsewhere",
        ] {
            assert!(
                challenge_metadata_url(&http, same, &server).is_ok(),
                "{same}"
            );
        }
        for foreign in [
            "https://evil.example.com/.well-known/oauth-protected-resource",
            "https://mcp.example.com:8443/.well-known/oauth-protected-resource",
            "https://169.254.169.254/latest/meta-data/",
            "http://localhost/.well-known/oauth-protected-resource",
        ] {
            let e = challenge_metadata_url(&http, foreign, &server).unwrap_err();
            assert!(
                matches!(e, AuthError::ForeignResourceMetadata { .. }),
                "{foreign}: {e}"
            );
            assert!(e.to_string().contains("https://mcp.example.com"), "{e}");
        }
    }

    #[test]
    fn metadata_urls_follow_the_documented_order() {
        let shown = |u: &str| -> Vec<String> {
            server_metadata_urls(&Url::parse(u).unwrap())
                .unwrap()
                .iter()
                .map(Url::to_string)
                .collect()
        };
        assert_eq!(
            shown("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            shown("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }
}
