//! DPoP proofs (RFC 9449) as the OAuth mode's token endpoint and `/mcp` gate check them
//! ([`OAuthOptions::dpop`](crate::OAuthOptions::dpop)).
//!
//! A proof is a compact JWS in the `DPoP` request header. It is accepted when:
//! - its header has `typ` = `dpop+jwt`, `alg` = `ES256` and a `jwk` that is a P-256 public key
//!   (`kty` `EC`, `crv` `P-256`, `x` and `y` of 32 bytes each, no private `d`);
//! - its ES256 signature verifies with that key;
//! - its claims name this request: `htm` its method, `htu` its URL (query and fragment
//!   ignored), `iat` within [`IAT_WINDOW_SECS`] of the server's clock either way, `ath` the
//!   base64url SHA-256 of the access token it comes with (requests to the resource);
//! - its `jti` was never seen before by this server (else it is a replay);
//! - with nonces on ([`OAuthOptions::dpop_nonce`](crate::OAuthOptions::dpop_nonce)), its
//!   `nonce` is the server's current one for that audience (else `use_dpop_nonce`, RFC 9449
//!   §8, §9).
//!
//! An accepted proof yields its key's RFC 7638 thumbprint (`jkt`), what a bound token is bound
//! to. Any input, however malformed, gets a [`ProofError`], never a panic.
//!
//! Written by hand around `p256`'s signature check (`jws.rs`) rather than with a JOSE
//! crate: the fixture is a second, independent reading of the specification, and these are a
//! dozen checks.

use std::collections::HashMap;
use std::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hyper::header::HeaderMap;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::http::random_hex;
use crate::jws::{p256_jwk, CompactJws};

/// The request header a proof comes in.
pub const DPOP_HEADER: &str = "dpop";
/// The response header that carries a server's current nonce.
pub const DPOP_NONCE_HEADER: &str = "dpop-nonce";
/// The one proof algorithm the fixture accepts, and advertises.
pub const DPOP_ALG: &str = "ES256";
/// The `typ` of a proof's header.
pub const DPOP_TYP: &str = "dpop+jwt";
/// How far a proof's `iat` may lie from the server's clock, either way, in seconds.
pub const IAT_WINDOW_SECS: u64 = 300;
/// `invalid_dpop_proof` (RFC 9449 §5, §7.1).
pub const INVALID_DPOP_PROOF: &str = "invalid_dpop_proof";
/// `use_dpop_nonce` (RFC 9449 §8, §9).
pub const USE_DPOP_NONCE: &str = "use_dpop_nonce";
/// Longer proofs are refused unread (an ES256 proof is well under 1 KiB).
const MAX_PROOF_BYTES: usize = 8 * 1024;

/// Which server a proof is made for: each keeps its own nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// The token endpoint (RFC 9449 §8).
    AuthorizationServer,
    /// The protected resource, `/mcp` (RFC 9449 §9).
    Resource,
}

/// The request a proof must have been made for.
#[derive(Clone, Copy, Debug)]
pub struct ProofRequest<'a> {
    /// Whose nonce the proof must carry.
    pub audience: Audience,
    /// The HTTP method (`htm`).
    pub method: &'a str,
    /// The request URL without query and fragment (`htu`).
    pub url: &'a str,
    /// The access token the request carries (requests to the resource): the proof's `ath`
    /// must be its hash.
    pub access_token: Option<&'a str>,
}

/// Why a proof was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProofError {
    /// Malformed, badly signed, made for another request or token, or too old or new.
    Invalid(String),
    /// Its `jti` was seen before.
    Replayed,
    /// Everything checks out but its nonce: missing, or not the server's current one.
    NonceNeeded,
}

impl ProofError {
    /// The OAuth error code of the answer: `invalid_dpop_proof` or `use_dpop_nonce`.
    pub fn error_code(&self) -> &'static str {
        match self {
            ProofError::NonceNeeded => USE_DPOP_NONCE,
            ProofError::Invalid(_) | ProofError::Replayed => INVALID_DPOP_PROOF,
        }
    }
}

impl fmt::Display for ProofError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofError::Invalid(why) => write!(f, "invalid DPoP proof: {why}"),
            ProofError::Replayed => {
                f.write_str("invalid DPoP proof: its jti was used before (a replayed proof)")
            }
            ProofError::NonceNeeded => {
                f.write_str("the DPoP proof must carry the server's current nonce (see DPoP-Nonce)")
            }
        }
    }
}

impl std::error::Error for ProofError {}

/// The server side of DPoP: the `jti`s seen so far (for replay detection) and, when nonces
/// are on, the current nonce of the authorization server and of the resource.
#[derive(Debug, Default)]
pub struct DpopVerifier {
    nonces: Option<Nonces>,
    /// `jti` → the Unix time after which a proof with it fails the `iat` check anyway (then
    /// it is forgotten).
    seen: HashMap<String, u64>,
}

#[derive(Debug)]
struct Nonces {
    authorization_server: String,
    resource: String,
}

impl Nonces {
    fn new() -> Nonces {
        Nonces {
            authorization_server: format!("as-{}", random_hex()),
            resource: format!("rs-{}", random_hex()),
        }
    }
}

impl DpopVerifier {
    /// A verifier; with `nonces`, every proof must carry the current nonce of its audience.
    pub fn new(nonces: bool) -> DpopVerifier {
        DpopVerifier {
            nonces: nonces.then(Nonces::new),
            seen: HashMap::new(),
        }
    }

    /// The current nonce of `audience` (`None` when nonces are off).
    pub fn nonce(&self, audience: Audience) -> Option<&str> {
        self.nonces.as_ref().map(|n| match audience {
            Audience::AuthorizationServer => n.authorization_server.as_str(),
            Audience::Resource => n.resource.as_str(),
        })
    }

    /// New nonces for both audiences (when nonces are on): proofs with the old ones get
    /// `use_dpop_nonce`.
    pub fn rotate_nonces(&mut self) {
        if self.nonces.is_some() {
            self.nonces = Some(Nonces::new());
        }
    }

    /// Checks `proof` for `request` at Unix time `now`; returns the thumbprint of the key it
    /// was made with. A proof that passes every check but the nonce is remembered all the same:
    /// no `jti` is accepted twice.
    pub fn verify(
        &mut self,
        proof: &str,
        request: &ProofRequest<'_>,
        now: u64,
    ) -> Result<String, ProofError> {
        let verified = verify_proof(proof, request, now)?;
        self.seen.retain(|_, until| *until >= now);
        if self.seen.contains_key(&verified.jti) {
            return Err(ProofError::Replayed);
        }
        self.seen
            .insert(verified.jti, now.saturating_add(2 * IAT_WINDOW_SECS));
        if let Some(expected) = self.nonce(request.audience) {
            if verified.nonce.as_deref() != Some(expected) {
                return Err(ProofError::NonceNeeded);
            }
        }
        Ok(verified.jkt)
    }
}

/// The one `DPoP` header of a request, if any (RFC 9449 §4.3: more than one is an error).
pub fn proof_header(headers: &HeaderMap) -> Result<Option<&str>, ProofError> {
    let mut values = headers.get_all(DPOP_HEADER).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ProofError::Invalid(
            "the request carries more than one DPoP header".into(),
        ));
    }
    first
        .to_str()
        .map(|v| Some(v.trim()))
        .map_err(|_| ProofError::Invalid("the DPoP header is not visible ASCII".into()))
}

/// `ath`: the base64url SHA-256 of an access token (RFC 9449 §4.2).
pub fn access_token_hash(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

/// The RFC 7638 thumbprint of a P-256 public key: base64url SHA-256 over its required members
/// in lexicographic order, without whitespace.
pub fn jwk_thumbprint(x: &str, y: &str) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// A proof whose signature and claims check out (replay and nonce not yet looked at).
struct Verified {
    jkt: String,
    jti: String,
    nonce: Option<String>,
}

/// Everything but replay and nonce.
fn verify_proof(proof: &str, request: &ProofRequest<'_>, now: u64) -> Result<Verified, ProofError> {
    let invalid = |why: &str| ProofError::Invalid(why.to_owned());
    if proof.len() > MAX_PROOF_BYTES {
        return Err(invalid("longer than 8 KiB"));
    }
    let jws = CompactJws::parse(proof).map_err(ProofError::Invalid)?;
    if jws.header.get("typ").and_then(Value::as_str) != Some(DPOP_TYP) {
        return Err(invalid("the header's typ is not dpop+jwt"));
    }
    if jws.header.get("alg").and_then(Value::as_str) != Some(DPOP_ALG) {
        return Err(invalid("the header's alg is not ES256"));
    }
    let (key, x, y) = p256_jwk(jws.header.get("jwk")).map_err(ProofError::Invalid)?;
    let jkt = jwk_thumbprint(x, y);
    jws.verify(&key, "the header's jwk")
        .map_err(ProofError::Invalid)?;

    let jti = jws
        .text("jti")
        .filter(|j| !j.is_empty())
        .ok_or_else(|| invalid("the jti claim is missing"))?;
    if jws.text("htm") != Some(request.method) {
        return Err(ProofError::Invalid(format!(
            "the htm claim does not name this request's method {}",
            request.method
        )));
    }
    let htu = jws
        .text("htu")
        .ok_or_else(|| invalid("the htu claim is missing"))?;
    if without_query_and_fragment(htu) != request.url {
        return Err(ProofError::Invalid(format!(
            "the htu claim does not name this request's URL {}",
            request.url
        )));
    }
    let iat = jws
        .claims
        .get("iat")
        .and_then(Value::as_f64)
        .ok_or_else(|| invalid("the iat claim is missing or not a number"))?;
    // As floats: an `iat` of any size (or sign) compares without overflow.
    if (iat - now as f64).abs() > IAT_WINDOW_SECS as f64 {
        return Err(ProofError::Invalid(format!(
            "the iat claim is more than {IAT_WINDOW_SECS} s away from the server's clock"
        )));
    }
    if let Some(token) = request.access_token {
        if jws.text("ath") != Some(access_token_hash(token).as_str()) {
            return Err(invalid(
                "the ath claim is not the hash of the access token it comes with",
            ));
        }
    }
    let nonce = match jws.claims.get("nonce") {
        None => None,
        Some(Value::String(n)) => Some(n.clone()),
        Some(_) => return Err(invalid("the nonce claim is not a string")),
    };
    Ok(Verified {
        jkt,
        jti: jti.to_owned(),
        nonce,
    })
}

/// `url` without its query and fragment.
fn without_query_and_fragment(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

/// A client's side of DPoP, for the fixture's own tests: a fixed key that signs proofs, well
/// formed or not.
#[cfg(test)]
pub(crate) mod test_key {
    use super::*;
    use p256::ecdsa::signature::Signer;
    use p256::ecdsa::{Signature, SigningKey};
    use serde_json::json;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A P-256 key (from a fixed seed) that makes proofs.
    pub(crate) struct TestKey {
        key: SigningKey,
        pub(crate) jwk: Value,
    }

    impl TestKey {
        /// The key of `seed` (any non-zero byte).
        pub(crate) fn new(seed: u8) -> TestKey {
            let key = SigningKey::from_slice(&[seed; 32]).expect("a valid scalar");
            let point = key.verifying_key().to_encoded_point(false);
            let x = URL_SAFE_NO_PAD.encode(point.x().expect("x"));
            let y = URL_SAFE_NO_PAD.encode(point.y().expect("y"));
            TestKey {
                key,
                jwk: json!({ "kty": "EC", "crv": "P-256", "x": x, "y": y }),
            }
        }

        /// The thumbprint a token bound to this key carries.
        pub(crate) fn jkt(&self) -> String {
            jwk_thumbprint(
                self.jwk["x"].as_str().expect("x"),
                self.jwk["y"].as_str().expect("y"),
            )
        }

        /// The standard header and claims of a proof for `method` `url` (a fresh `jti`, `iat`
        /// now, `ath` and `nonce` where given).
        pub(crate) fn parts(
            &self,
            method: &str,
            url: &str,
            token: Option<&str>,
            nonce: Option<&str>,
        ) -> (Value, Value) {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let header = json!({ "typ": DPOP_TYP, "alg": DPOP_ALG, "jwk": self.jwk });
            let mut claims = json!({
                "jti": format!("jti-{}", NEXT.fetch_add(1, Ordering::Relaxed)),
                "htm": method,
                "htu": url,
                "iat": crate::oauth::unix_now(),
            });
            if let Some(token) = token {
                claims["ath"] = json!(access_token_hash(token));
            }
            if let Some(nonce) = nonce {
                claims["nonce"] = json!(nonce);
            }
            (header, claims)
        }

        /// `header` and `claims` signed with this key.
        pub(crate) fn sign(&self, header: &Value, claims: &Value) -> String {
            let encode = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
            let input = format!("{}.{}", encode(header), encode(claims));
            let signature: Signature = self.key.sign(input.as_bytes());
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
        }

        /// A well-formed proof.
        pub(crate) fn proof(
            &self,
            method: &str,
            url: &str,
            token: Option<&str>,
            nonce: Option<&str>,
        ) -> String {
            let (header, claims) = self.parts(method, url, token, nonce);
            self.sign(&header, &claims)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_key::TestKey;
    use super::*;
    use serde_json::json;

    const URL: &str = "http://127.0.0.1:4000/mcp";

    fn resource(token: &str) -> ProofRequest<'_> {
        ProofRequest {
            audience: Audience::Resource,
            method: "POST",
            url: URL,
            access_token: Some(token),
        }
    }

    fn now() -> u64 {
        crate::oauth::unix_now()
    }

    fn remove(object: &mut Value, member: &str) {
        if let Some(object) = object.as_object_mut() {
            object.remove(member);
        }
    }

    #[test]
    fn thumbprints_and_token_hashes_match_rfc_9449() {
        // The key of RFC 9449 §4.1's example proof, and its thumbprint in §6.1's `cnf`.
        assert_eq!(
            jwk_thumbprint(
                "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs",
                "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"
            ),
            "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
        );
        // RFC 9449 §7.1: an access token and the `ath` of its proof.
        assert_eq!(
            access_token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn a_good_proof_yields_its_key_thumbprint_once() {
        let key = TestKey::new(7);
        let mut verifier = DpopVerifier::new(false);
        let proof = key.proof(
            "POST",
            "http://127.0.0.1:4000/mcp?x=1#f",
            Some("at-1"),
            None,
        );
        assert_eq!(
            verifier.verify(&proof, &resource("at-1"), now()),
            Ok(key.jkt())
        );
        assert_eq!(
            verifier.verify(&proof, &resource("at-1"), now()),
            Err(ProofError::Replayed)
        );
        // Another proof by the same key is fine.
        let again = key.proof("POST", URL, Some("at-1"), None);
        assert_eq!(
            verifier.verify(&again, &resource("at-1"), now()),
            Ok(key.jkt())
        );
    }

    #[test]
    fn every_header_and_claim_is_checked() {
        let key = TestKey::new(3);
        let other = TestKey::new(4);
        type Edit = fn(&mut Value, &mut Value);
        let cases: Vec<(&str, Edit)> = vec![
            ("typ", |h, _| h["typ"] = json!("JWT")),
            ("no typ", |h, _| remove(h, "typ")),
            ("alg", |h, _| h["alg"] = json!("RS256")),
            ("alg none", |h, _| h["alg"] = json!("none")),
            ("private key", |h, _| h["jwk"]["d"] = json!("AAAA")),
            ("kty", |h, _| h["jwk"]["kty"] = json!("RSA")),
            ("crv", |h, _| h["jwk"]["crv"] = json!("P-384")),
            ("short x", |h, _| h["jwk"]["x"] = json!("AAAA")),
            ("x not text", |h, _| h["jwk"]["x"] = json!(5)),
            ("no jwk", |h, _| remove(h, "jwk")),
            ("htm", |_, c| c["htm"] = json!("GET")),
            ("htu", |_, c| {
                c["htu"] = json!("http://127.0.0.1:4000/other")
            }),
            ("htu origin", |_, c| {
                c["htu"] = json!("http://localhost:4000/mcp")
            }),
            ("no htu", |_, c| remove(c, "htu")),
            ("old iat", |_, c| {
                c["iat"] = json!(crate::oauth::unix_now() - IAT_WINDOW_SECS - 5)
            }),
            ("future iat", |_, c| {
                c["iat"] = json!(crate::oauth::unix_now() + IAT_WINDOW_SECS + 5)
            }),
            ("iat text", |_, c| c["iat"] = json!("now")),
            ("huge iat", |_, c| c["iat"] = json!(1e300)),
            ("no jti", |_, c| remove(c, "jti")),
            ("empty jti", |_, c| c["jti"] = json!("")),
            ("ath", |_, c| {
                c["ath"] = json!(access_token_hash("at-other"))
            }),
            ("no ath", |_, c| remove(c, "ath")),
            ("nonce not text", |_, c| c["nonce"] = json!(1)),
        ];
        let mut verifier = DpopVerifier::new(false);
        for (what, edit) in cases {
            let (mut header, mut claims) = key.parts("POST", URL, Some("at-1"), None);
            edit(&mut header, &mut claims);
            let proof = key.sign(&header, &claims);
            let e = verifier
                .verify(&proof, &resource("at-1"), now())
                .expect_err(what);
            assert!(matches!(e, ProofError::Invalid(_)), "{what}: {e}");
            assert_eq!(e.error_code(), INVALID_DPOP_PROOF, "{what}");
        }
        // Signed by another key than the one in the header.
        let (header, claims) = key.parts("POST", URL, Some("at-1"), None);
        let forged = other.sign(&header, &claims);
        let e = verifier
            .verify(&forged, &resource("at-1"), now())
            .expect_err("forged");
        assert!(e.to_string().contains("signature"), "{e}");
        // A proof for the token endpoint needs no ath.
        let token_endpoint = ProofRequest {
            audience: Audience::AuthorizationServer,
            method: "POST",
            url: "http://127.0.0.1:4000/token",
            access_token: None,
        };
        let proof = key.proof("POST", "http://127.0.0.1:4000/token", None, None);
        assert_eq!(
            verifier.verify(&proof, &token_endpoint, now()),
            Ok(key.jkt())
        );
    }

    #[test]
    fn garbage_never_panics() {
        let key = TestKey::new(9);
        let good = key.proof("POST", URL, Some("at-1"), None);
        let mut verifier = DpopVerifier::new(true);
        let mut inputs: Vec<String> = vec![
            String::new(),
            ".".into(),
            "..".into(),
            "...".into(),
            "a.b.c".into(),
            "é.é.é".into(),
            format!("{good}.extra"),
            "x".repeat(MAX_PROOF_BYTES + 1),
            format!(
                "{}.{}.",
                URL_SAFE_NO_PAD.encode("[1]"),
                URL_SAFE_NO_PAD.encode("null")
            ),
        ];
        // Every prefix and every single-character change of a good proof.
        for i in 0..good.len() {
            inputs.push(good[..i].to_owned());
            let mut bytes = good.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            inputs.push(String::from_utf8(bytes).expect("ascii"));
        }
        for input in &inputs {
            let answer = verifier.verify(input, &resource("at-1"), now());
            assert!(
                matches!(answer, Err(ProofError::Invalid(_))),
                "{input:?}: {answer:?}"
            );
        }
    }

    #[test]
    fn nonces_are_required_per_audience_and_rotate() {
        let key = TestKey::new(5);
        let mut verifier = DpopVerifier::new(true);
        let rs = verifier.nonce(Audience::Resource).expect("on").to_owned();
        let as_nonce = verifier
            .nonce(Audience::AuthorizationServer)
            .expect("on")
            .to_owned();
        assert_ne!(rs, as_nonce);
        let without = key.proof("POST", URL, Some("at-1"), None);
        let e = verifier
            .verify(&without, &resource("at-1"), now())
            .expect_err("no nonce");
        assert_eq!(e, ProofError::NonceNeeded);
        assert_eq!(e.error_code(), USE_DPOP_NONCE);
        // The AS's nonce is not the resource's.
        let wrong = key.proof("POST", URL, Some("at-1"), Some(&as_nonce));
        assert_eq!(
            verifier.verify(&wrong, &resource("at-1"), now()),
            Err(ProofError::NonceNeeded)
        );
        let right = key.proof("POST", URL, Some("at-1"), Some(&rs));
        assert_eq!(
            verifier.verify(&right, &resource("at-1"), now()),
            Ok(key.jkt())
        );
        verifier.rotate_nonces();
        let new = verifier.nonce(Audience::Resource).expect("on").to_owned();
        assert_ne!(new, rs);
        let stale = key.proof("POST", URL, Some("at-1"), Some(&rs));
        assert_eq!(
            verifier.verify(&stale, &resource("at-1"), now()),
            Err(ProofError::NonceNeeded)
        );
        // Without nonces there is none to rotate, and none is asked for.
        let mut plain = DpopVerifier::new(false);
        plain.rotate_nonces();
        assert_eq!(plain.nonce(Audience::Resource), None);
    }

    #[test]
    fn seen_jtis_are_forgotten_once_they_could_not_pass_anyway() {
        let key = TestKey::new(6);
        let mut verifier = DpopVerifier::new(false);
        let proof = key.proof("POST", URL, Some("at-1"), None);
        verifier
            .verify(&proof, &resource("at-1"), now())
            .expect("accepted");
        assert_eq!(verifier.seen.len(), 1);
        // Much later, the old proof is refused for its iat, and its jti forgotten.
        let later = now() + 3 * IAT_WINDOW_SECS;
        let next = key.proof("POST", URL, Some("at-1"), None);
        assert!(matches!(
            verifier.verify(&next, &resource("at-1"), later),
            Err(ProofError::Invalid(_))
        ));
        let (header, mut claims) = key.parts("POST", URL, Some("at-1"), None);
        claims["iat"] = json!(later);
        verifier
            .verify(&key.sign(&header, &claims), &resource("at-1"), later)
            .expect("accepted");
        assert_eq!(verifier.seen.len(), 1, "the first jti is forgotten");
    }

    #[test]
    fn one_dpop_header_at_most() {
        let mut headers = HeaderMap::new();
        assert_eq!(proof_header(&headers), Ok(None));
        headers.append(DPOP_HEADER, "a.b.c".parse().expect("value"));
        assert_eq!(proof_header(&headers), Ok(Some("a.b.c")));
        headers.append(DPOP_HEADER, "d.e.f".parse().expect("value"));
        assert!(proof_header(&headers).is_err());
    }
}
