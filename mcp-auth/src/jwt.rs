//! ES256 JSON Web Tokens (RFC 7515 / RFC 7519), for `private_key_jwt` client assertions
//! (RFC 7523) — signed with a P-256 key given as PKCS#8 PEM.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::DecodePrivateKey;
use serde_json::{json, Value};

use crate::error::AuthError;
use crate::secret::Secret;

/// The `client_assertion_type` of a JWT client assertion.
pub const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is valid.
const ASSERTION_LIFETIME_SECS: u64 = 300;

/// A P-256 signing key. `Debug` shows only the key id.
#[derive(Clone)]
pub struct Es256Key {
    key: SigningKey,
    kid: Option<String>,
}

impl std::fmt::Debug for Es256Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Es256Key")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Es256Key {
    /// Reads a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`).
    pub fn from_pem(pem: &Secret, kid: Option<String>) -> Result<Es256Key, AuthError> {
        let key = SigningKey::from_pkcs8_pem(pem.expose()).map_err(|e| {
            AuthError::Config(format!(
                "the private key is not a PKCS#8 PEM P-256 key ({e})"
            ))
        })?;
        Ok(Es256Key { key, kid })
    }

    /// Signs `claims` as a compact JWS with `alg: ES256`.
    pub fn sign(&self, claims: &Value) -> Result<Secret, AuthError> {
        let mut header = json!({ "alg": "ES256", "typ": "JWT" });
        if let Some(kid) = &self.kid {
            header["kid"] = Value::String(kid.clone());
        }
        let encode = |v: &Value| -> Result<String, AuthError> {
            let bytes = serde_json::to_vec(v)
                .map_err(|e| AuthError::Config(format!("cannot encode a JWT: {e}")))?;
            Ok(URL_SAFE_NO_PAD.encode(bytes))
        };
        let signing_input = format!("{}.{}", encode(&header)?, encode(claims)?);
        let signature: Signature = self.key.sign(signing_input.as_bytes());
        Ok(Secret::new(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )))
    }

    /// A client assertion for `client_id` at `audience`: `iss` = `sub` = the client, `aud`,
    /// `iat`, `exp` (5 minutes) and a random `jti`.
    pub fn client_assertion(
        &self,
        client_id: &str,
        audience: &str,
        now_unix: u64,
    ) -> Result<Secret, AuthError> {
        self.sign(&json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now_unix,
            "exp": now_unix + ASSERTION_LIFETIME_SECS,
            "jti": random_id()?,
        }))
    }
}

/// 16 random bytes, base64url: for `jti` and other one-time identifiers.
pub fn random_id() -> Result<String, AuthError> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| AuthError::Config(format!("no randomness available: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::VerifyingKey;
    use p256::pkcs8::{EncodePrivateKey, LineEnding};

    #[test]
    fn assertions_verify_with_the_public_key() {
        let key = SigningKey::from_slice(&[7u8; 32]).unwrap();
        let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap();
        let signer = Es256Key::from_pem(&Secret::new(pem.as_str()), Some("k1".into())).unwrap();
        let jwt = signer
            .client_assertion("client-1", "https://as.example.com/token", 1_000)
            .unwrap();
        let parts: Vec<&str> = jwt.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header, json!({ "alg": "ES256", "typ": "JWT", "kid": "k1" }));
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example.com/token");
        assert_eq!(claims["exp"], 1_300);
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        VerifyingKey::from(&key)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .unwrap();
        assert!(!format!("{signer:?}").contains("BEGIN"));
    }

    #[test]
    fn a_bad_key_is_a_clear_error() {
        let e = Es256Key::from_pem(
            &Secret::new("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("PKCS#8"), "{e}");
        assert!(!e.to_string().contains("AAAA"), "{e}");
    }
}
