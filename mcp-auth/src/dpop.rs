//! DPoP (RFC 9449, the MCP DPoP extension SEP-1932): access tokens bound to a key the client
//! holds, so a leaked token is useless without it. A [`DpopKey`] signs one proof per HTTP
//! request — at the token endpoint (which binds the token to the key's thumbprint) and with
//! every request the token goes with (`ath`, the token's hash, ties the proof to it).
//! [`DpopNonces`] keeps the nonces servers ask for (RFC 9449 §8, §9).
//!
//! The key is ES256 (P-256), the algorithm every DPoP server supports; it is generated once
//! per server and stored with the tokens (a refresh token of a public client is bound to it).

use std::sync::Mutex;
use std::time::SystemTime;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use mcp_core::sync::lock;
use mcp_core::DpopProof;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use url::Url;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::credentials::unix_now;
use crate::error::AuthError;
use crate::http::{oauth2_request, AuthHttp, Fetched, SendRequest};
use crate::jwt::random_id;
use crate::secret::Secret;

/// The one signing algorithm used for proofs.
pub const DPOP_ALG: &str = "ES256";
/// The `WWW-Authenticate` / token endpoint error that asks for a proof with a nonce.
pub const USE_DPOP_NONCE: &str = "use_dpop_nonce";
/// The proof header.
const DPOP: HeaderName = HeaderName::from_static("dpop");
/// The header a server's nonce comes in.
const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

/// A P-256 key for DPoP proofs. `Debug` shows only the thumbprint.
#[derive(Clone)]
pub struct DpopKey {
    key: SigningKey,
    /// The public key as a JWK (`kty`, `crv`, `x`, `y`).
    jwk: Value,
    /// The JWK SHA-256 thumbprint (RFC 7638), what a bound token's `cnf.jkt` names.
    thumbprint: String,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey")
            .field("jkt", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new random key.
    pub fn generate() -> Result<DpopKey, AuthError> {
        // A random 32-byte string is a valid scalar but for a chance of about 2^-32; try again
        // on that chance.
        for _ in 0..8 {
            let mut bytes = [0u8; 32];
            getrandom::getrandom(&mut bytes)
                .map_err(|e| AuthError::Config(format!("no randomness available: {e}")))?;
            if let Ok(key) = SigningKey::from_slice(&bytes) {
                return Ok(DpopKey::from_signing_key(key));
            }
        }
        Err(AuthError::Config(
            "could not generate a DPoP key (no valid scalar from the random source)".into(),
        ))
    }

    /// The key as stored: its private scalar, base64url. Keep it as secret as the tokens.
    pub fn to_secret(&self) -> Secret {
        Secret::new(URL_SAFE_NO_PAD.encode(self.key.to_bytes()))
    }

    /// A key stored by [`to_secret`](Self::to_secret).
    pub fn from_secret(stored: &Secret) -> Result<DpopKey, AuthError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(stored.expose().trim())
            .map_err(|_| AuthError::Config("the stored DPoP key is not base64url".into()))?;
        let key = SigningKey::from_slice(&bytes)
            .map_err(|_| AuthError::Config("the stored DPoP key is not a P-256 key".into()))?;
        Ok(DpopKey::from_signing_key(key))
    }

    fn from_signing_key(key: SigningKey) -> DpopKey {
        let point = key.verifying_key().to_encoded_point(false);
        // An uncompressed point always has both coordinates.
        let coordinate =
            |c: Option<&p256::FieldBytes>| c.map(|c| URL_SAFE_NO_PAD.encode(c)).unwrap_or_default();
        let (x, y) = (coordinate(point.x()), coordinate(point.y()));
        let thumbprint = jwk_thumbprint(&x, &y);
        DpopKey {
            key,
            jwk: json!({ "kty": "EC", "crv": "P-256", "x": x, "y": y }),
            thumbprint,
        }
    }

    /// The JWK thumbprint (RFC 7638) a bound token's `cnf.jkt` carries.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// A proof for one request (RFC 9449 §4.2): `typ: dpop+jwt`, the public key in the header,
    /// a fresh `jti`, `htm`, `htu` (the URL without query and fragment), `iat`, and where
    /// given the server's `nonce` and the access token's hash (`ath`).
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&Secret>,
        nonce: Option<&str>,
    ) -> Result<DpopProof, AuthError> {
        let header = json!({ "typ": "dpop+jwt", "alg": DPOP_ALG, "jwk": self.jwk });
        let mut claims = json!({
            "jti": random_id()?,
            "htm": method,
            "htu": htu(url)?,
            "iat": unix_now(SystemTime::now()),
        });
        if let Some(nonce) = nonce {
            claims["nonce"] = Value::String(nonce.to_owned());
        }
        if let Some(token) = access_token {
            claims["ath"] = Value::String(access_token_hash(token.expose()));
        }
        let encode = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let signing_input = format!("{}.{}", encode(&header), encode(&claims));
        let signature: Signature = self.key.sign(signing_input.as_bytes());
        Ok(DpopProof::new(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )))
    }
}

/// The `htu` of a request URL: without query and fragment (RFC 9449 §4.2).
fn htu(url: &str) -> Result<String, AuthError> {
    let mut url = Url::parse(url)
        .map_err(|e| AuthError::Config(format!("cannot make a DPoP proof for a bad URL: {e}")))?;
    url.set_query(None);
    url.set_fragment(None);
    Ok(url.to_string())
}

/// `ath`: base64url of the SHA-256 of the access token's ASCII bytes (RFC 9449 §4.2).
pub fn access_token_hash(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

/// The RFC 7638 thumbprint of a P-256 public key: SHA-256 over the required members in
/// lexicographic order, without whitespace.
pub fn jwk_thumbprint(x: &str, y: &str) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// The nonces one server (authorization server or resource) asked for: the newest wins.
#[derive(Debug, Default)]
pub struct DpopNonces {
    authorization_server: Mutex<Option<String>>,
    resource: Mutex<Option<String>>,
}

/// Whose nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonceFrom {
    /// The authorization server's token endpoint (RFC 9449 §8).
    AuthorizationServer,
    /// The MCP server (RFC 9449 §9).
    Resource,
}

impl DpopNonces {
    fn slot(&self, from: NonceFrom) -> &Mutex<Option<String>> {
        match from {
            NonceFrom::AuthorizationServer => &self.authorization_server,
            NonceFrom::Resource => &self.resource,
        }
    }

    /// The nonce to put in the next proof to `from`.
    pub fn get(&self, from: NonceFrom) -> Option<String> {
        lock(self.slot(from)).clone()
    }

    /// Remembers the nonce `from` sent last.
    pub fn set(&self, from: NonceFrom, nonce: &str) {
        *lock(self.slot(from)) = Some(nonce.to_owned());
    }
}

/// The HTTP client of token requests: [`AuthHttp`], and with a key, a proof on every request
/// and — when the authorization server answers `use_dpop_nonce` — one retry with its nonce
/// (RFC 9449 §8). Nonces on any answer are remembered for the next request.
pub(crate) struct TokenHttp<'a> {
    pub(crate) http: &'a AuthHttp,
    pub(crate) key: Option<&'a DpopKey>,
    pub(crate) nonces: &'a DpopNonces,
}

#[async_trait::async_trait]
impl SendRequest for TokenHttp<'_> {
    async fn execute(
        &self,
        method: reqwest::Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<Fetched, AuthError> {
        let Some(key) = self.key else {
            return self.http.execute(method, url, headers, body).await;
        };
        let mut retried = false;
        loop {
            let nonce = self.nonces.get(NonceFrom::AuthorizationServer);
            let proof = key.proof(method.as_str(), url.as_str(), None, nonce.as_deref())?;
            let mut value = HeaderValue::from_str(proof.expose())
                .map_err(|_| AuthError::Config("a DPoP proof is not a header value".into()))?;
            value.set_sensitive(true);
            let mut with_proof = headers.clone();
            with_proof.insert(DPOP, value);
            let fetched = self
                .http
                .execute(method.clone(), url, with_proof, body.clone())
                .await?;
            let new_nonce = fetched
                .headers
                .get(DPOP_NONCE)
                .and_then(|v| v.to_str().ok());
            if let Some(new_nonce) = new_nonce {
                self.nonces.set(NonceFrom::AuthorizationServer, new_nonce);
            }
            if !retried && new_nonce.is_some() && fetched.status == 400 && asks_for_nonce(&fetched)
            {
                retried = true;
                continue;
            }
            return Ok(fetched);
        }
    }
}

/// Whether a token endpoint's error answer is `use_dpop_nonce`.
fn asks_for_nonce(fetched: &Fetched) -> bool {
    serde_json::from_slice::<Value>(&fetched.body)
        .ok()
        .and_then(|body| body.get("error").and_then(Value::as_str).map(str::to_owned))
        .as_deref()
        == Some(USE_DPOP_NONCE)
}

/// `oauth2`'s token requests go through [`TokenHttp`].
impl<'c> oauth2::AsyncHttpClient<'c> for TokenHttp<'_> {
    type Error = AuthError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<oauth2::HttpResponse, AuthError>> + Send + 'c>,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(oauth2_request(self, request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::VerifyingKey;

    fn decode(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
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
        // RFC 9449 §7.1: the access token and the `ath` of its proof.
        assert_eq!(
            access_token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn proofs_are_well_formed_fresh_and_verify_with_the_key_in_their_header() {
        let key = DpopKey::generate().unwrap();
        let token = Secret::new("at-1");
        let url = "https://mcp.example.com/mcp?session=1#frag";
        let first = key.proof("POST", url, Some(&token), Some("n-1")).unwrap();
        let second = key.proof("POST", url, Some(&token), Some("n-1")).unwrap();
        let parts: Vec<&str> = first.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = decode(parts[0]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert_eq!(header["jwk"]["crv"], "P-256");
        assert!(
            header["jwk"].get("d").is_none(),
            "no private key in the header"
        );
        let claims = decode(parts[1]);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(claims["ath"], access_token_hash("at-1"));
        let now = unix_now(SystemTime::now());
        assert!(claims["iat"].as_u64().unwrap().abs_diff(now) <= 5);
        let second_claims = decode(second.expose().split('.').nth(1).unwrap());
        assert_ne!(claims["jti"], second_claims["jti"], "every proof is fresh");

        // The signature verifies with the header's key, whose thumbprint is the key's.
        let x = header["jwk"]["x"].as_str().unwrap();
        let y = header["jwk"]["y"].as_str().unwrap();
        assert_eq!(jwk_thumbprint(x, y), key.thumbprint());
        let mut sec1 = vec![4u8];
        sec1.extend(URL_SAFE_NO_PAD.decode(x).unwrap());
        sec1.extend(URL_SAFE_NO_PAD.decode(y).unwrap());
        let verifying = VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        verifying
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .unwrap();

        // Without a token or a nonce, neither claim is there.
        let bare = key
            .proof("GET", "https://as.example.com/token", None, None)
            .unwrap();
        let claims = decode(bare.expose().split('.').nth(1).unwrap());
        assert!(claims.get("ath").is_none() && claims.get("nonce").is_none());
    }

    #[test]
    fn a_stored_key_comes_back_the_same_and_never_shows() {
        let key = DpopKey::generate().unwrap();
        let stored = key.to_secret();
        let again = DpopKey::from_secret(&stored).unwrap();
        assert_eq!(again.thumbprint(), key.thumbprint());
        let shown = format!("{key:?}");
        assert!(!shown.contains(stored.expose()), "{shown}");
        for bad in ["", "not base64!", "AAAA"] {
            let e = DpopKey::from_secret(&Secret::new(bad)).unwrap_err();
            assert!(e.to_string().contains("DPoP key"), "{e}");
        }
    }

    #[test]
    fn each_server_keeps_its_newest_nonce() {
        let nonces = DpopNonces::default();
        assert_eq!(nonces.get(NonceFrom::Resource), None);
        nonces.set(NonceFrom::Resource, "a");
        nonces.set(NonceFrom::Resource, "b");
        assert_eq!(nonces.get(NonceFrom::Resource).as_deref(), Some("b"));
        assert_eq!(nonces.get(NonceFrom::AuthorizationServer), None);
    }
}
