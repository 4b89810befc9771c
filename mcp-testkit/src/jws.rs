//! Compact JWS with ES256 (RFC 7515, RFC 7518 §3.4), as far as the OAuth mode reads it: DPoP
//! proofs ([`crate::dpop`]) and `private_key_jwt` client assertions
//! ([`OAuthOptions::preregistered_jwt`](crate::OAuthOptions::preregistered_jwt)). Splitting,
//! the JSON parts, P-256 public keys (JWK or SPKI PEM) and the signature check; what the
//! claims must say is each caller's business. Every error is a sentence, never a panic.
//!
//! Written by hand around `p256`'s signature check for the reason [`crate::dpop`] gives: the
//! fixture is a second, independent reading of the specifications.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use serde_json::{Map, Value};

/// The DER of a P-256 SubjectPublicKeyInfo up to its uncompressed point: SEQUENCE {
/// SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) }. The point follows:
/// `04 || x || y`, 65 bytes.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A compact JWS split into its parts; the signature is not checked yet.
#[derive(Debug)]
pub(crate) struct CompactJws<'a> {
    /// The protected header.
    pub(crate) header: Map<String, Value>,
    /// The payload, a JSON object of claims.
    pub(crate) claims: Map<String, Value>,
    /// `BASE64URL(header) || '.' || BASE64URL(payload)`.
    signing_input: &'a str,
    /// The third part, base64url.
    signature: &'a str,
}

impl<'a> CompactJws<'a> {
    /// Splits `jws` into three base64url parts whose first two are JSON objects.
    pub(crate) fn parse(jws: &'a str) -> Result<CompactJws<'a>, String> {
        let mut parts = jws.split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("not a compact JWS (three base64url parts separated by dots)".into());
        };
        Ok(CompactJws {
            header: json_object(header, "header")?,
            claims: json_object(claims, "claims")?,
            signing_input: &jws[..header.len() + 1 + claims.len()],
            signature,
        })
    }

    /// Checks the ES256 signature with `key` (`whose` names it in the error).
    pub(crate) fn verify(&self, key: &VerifyingKey, whose: &str) -> Result<(), String> {
        let signature = URL_SAFE_NO_PAD
            .decode(self.signature)
            .ok()
            .and_then(|bytes| Signature::from_slice(&bytes).ok())
            .ok_or("the signature is not 64 base64url bytes (ES256 r || s)")?;
        key.verify(self.signing_input.as_bytes(), &signature)
            .map_err(|_| format!("the signature does not verify with {whose}"))
    }

    /// A string claim.
    pub(crate) fn text(&self, name: &str) -> Option<&str> {
        self.claims.get(name).and_then(Value::as_str)
    }
}

/// A base64url part of the JWS that must be a JSON object.
fn json_object(part: &str, what: &str) -> Result<Map<String, Value>, String> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| format!("the {what} is not base64url"))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(format!("the {what} is not a JSON object")),
    }
}

/// A public P-256 JWK (`kty` `EC`, `crv` `P-256`, `x` and `y` of 32 bytes, no private `d`):
/// the key, and its `x` and `y` as given (what a thumbprint is made of).
pub(crate) fn p256_jwk(jwk: Option<&Value>) -> Result<(VerifyingKey, &str, &str), String> {
    let jwk = jwk
        .and_then(Value::as_object)
        .ok_or("the header has no jwk object")?;
    if jwk.contains_key("d") {
        return Err("the jwk holds a private key (d)".into());
    }
    let member = |name: &str| jwk.get(name).and_then(Value::as_str);
    if member("kty") != Some("EC") || member("crv") != Some("P-256") {
        return Err("the jwk is not an EC P-256 key".into());
    }
    let coordinate = |name: &str| {
        let text = member(name).ok_or_else(|| format!("the jwk has no {name} coordinate"))?;
        match URL_SAFE_NO_PAD.decode(text) {
            Ok(bytes) if bytes.len() == 32 => Ok((text, bytes)),
            _ => Err(format!("the jwk's {name} is not 32 base64url bytes")),
        }
    };
    let (x, x_bytes) = coordinate("x")?;
    let (y, y_bytes) = coordinate("y")?;
    let mut sec1 = Vec::with_capacity(65);
    sec1.push(0x04);
    sec1.extend_from_slice(&x_bytes);
    sec1.extend_from_slice(&y_bytes);
    let key =
        VerifyingKey::from_sec1_bytes(&sec1).map_err(|_| "the jwk is not a point on P-256")?;
    Ok((key, x, y))
}

/// A P-256 public key given as a JWK (JSON text) or an SPKI PEM (`-----BEGIN PUBLIC KEY-----`,
/// the uncompressed point every tool writes).
pub(crate) fn p256_public_key(text: &str) -> Result<VerifyingKey, String> {
    let text = text.trim();
    if text.starts_with('{') {
        let jwk: Value =
            serde_json::from_str(text).map_err(|e| format!("the JWK is not JSON: {e}"))?;
        return p256_jwk(Some(&jwk)).map(|(key, _, _)| key);
    }
    let body = text
        .strip_prefix("-----BEGIN PUBLIC KEY-----")
        .and_then(|rest| rest.trim_end().strip_suffix("-----END PUBLIC KEY-----"))
        .ok_or("neither a JWK nor a PEM public key (-----BEGIN PUBLIC KEY-----)")?;
    let base64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD
        .decode(base64)
        .map_err(|_| "the PEM body is not base64")?;
    let point = der
        .strip_prefix(&P256_SPKI_PREFIX[..])
        .filter(|point| point.len() == 65)
        .ok_or("the PEM is not a P-256 public key with an uncompressed point")?;
    VerifyingKey::from_sec1_bytes(point).map_err(|_| "the PEM key is not a point on P-256".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `openssl ecparam -name prime256v1 -genkey | openssl ec -pubout`, and its point as
    /// `openssl ec -pubin -text` shows it: an independent encoder's output.
    const PEM: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAErzBCuEHY9n5kjI4Th4VZHk+NX6d2
EN5OsnOqDjJEnX1z9Exhw2KsqU6y1hG8e8/8O31vYXB4YntidHv2WEqPww==
-----END PUBLIC KEY-----
";
    const POINT: &str = "04af3042b841d8f67e648c8e138785591e4f8d5fa77610de4eb273aa0e32449d7d73f44c61c362aca94eb2d611bc7bcffc3b7d6f617078627b62747bf6584a8fc3";

    #[test]
    fn keys_read_from_pem_and_jwk_are_the_same() {
        let from_pem = p256_public_key(PEM).expect("PEM");
        let point = from_pem.to_encoded_point(false);
        let hex: String = point
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, POINT);
        let jwk = serde_json::json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(point.x().expect("x")),
            "y": URL_SAFE_NO_PAD.encode(point.y().expect("y")),
        });
        let from_jwk = p256_public_key(&jwk.to_string()).expect("JWK");
        assert_eq!(from_pem, from_jwk);
        for bad in [
            "",
            "{",
            "{\"kty\":\"RSA\"}",
            "-----BEGIN PUBLIC KEY-----\n!!!\n-----END PUBLIC KEY-----",
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQ==\n-----END PUBLIC KEY-----",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
        ] {
            assert!(p256_public_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn malformed_tokens_are_errors() {
        for bad in [
            "",
            "a",
            "a.b",
            "a.b.c.d",
            "e30.e30",
            "W10.e30.",
            "e30.bnVsbA.",
        ] {
            assert!(CompactJws::parse(bad).is_err(), "{bad:?}");
        }
        let jws = CompactJws::parse("e30.e30.AAAA").expect("two empty objects");
        let key = p256_public_key(PEM).expect("PEM");
        assert!(jws.verify(&key, "the key").is_err());
    }
}
