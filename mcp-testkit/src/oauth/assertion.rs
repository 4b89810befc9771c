//! `private_key_jwt` client assertions (RFC 7523 §2.2, §3) as the token endpoint checks them
//! ([`OAuthOptions::preregistered_jwt`](super::OAuthOptions::preregistered_jwt)): an ES256 JWT
//! signed with the key the client registered, `iss` and `sub` the client, `aud` the issuer or
//! the endpoint, `exp` still ahead, and a `jti` that is good for one request — an assertion
//! sent twice is refused, as strict servers (Okta among them) do.

use std::collections::HashMap;

use p256::ecdsa::VerifyingKey;
use serde_json::Value;

use crate::jws::CompactJws;

/// The `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
pub const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// Longer assertions are refused unread.
const MAX_ASSERTION_BYTES: usize = 8 * 1024;

/// Why an assertion was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum AssertionError {
    /// Malformed, badly signed, for another client or audience, or expired.
    Invalid(String),
    /// Its `jti` was used before.
    Reused,
}

/// The `sub` of an assertion, unverified: which client's key to check it with.
pub(super) fn subject(assertion: &str) -> Option<String> {
    let jws = CompactJws::parse(assertion).ok()?;
    jws.text("sub").map(str::to_owned)
}

/// The `jti`s of the assertions accepted so far, each kept until its assertion's `exp` (after
/// which the assertion fails anyway).
#[derive(Debug, Default)]
pub(super) struct UsedAssertions {
    jtis: HashMap<String, u64>,
}

impl UsedAssertions {
    /// Checks `assertion` for `client_id`, signed with `key`, at Unix time `now`; its `aud`
    /// must be one of `audiences`. An accepted assertion's `jti` is spent.
    pub(super) fn check(
        &mut self,
        assertion: &str,
        client_id: &str,
        key: &VerifyingKey,
        audiences: &[String],
        now: u64,
    ) -> Result<(), AssertionError> {
        let invalid = |why: &str| AssertionError::Invalid(why.to_owned());
        if assertion.len() > MAX_ASSERTION_BYTES {
            return Err(invalid("longer than 8 KiB"));
        }
        let jws = CompactJws::parse(assertion).map_err(AssertionError::Invalid)?;
        if jws.header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(invalid("the header's alg is not ES256"));
        }
        jws.verify(key, "the client's registered key")
            .map_err(AssertionError::Invalid)?;
        if jws.text("iss") != Some(client_id) {
            return Err(invalid("the iss claim does not name the client"));
        }
        if jws.text("sub") != Some(client_id) {
            return Err(invalid("the sub claim does not name the client"));
        }
        let aud_ok = match jws.claims.get("aud") {
            Some(Value::String(aud)) => audiences.contains(aud),
            Some(Value::Array(auds)) => auds
                .iter()
                .filter_map(Value::as_str)
                .any(|aud| audiences.iter().any(|a| a == aud)),
            _ => false,
        };
        if !aud_ok {
            return Err(AssertionError::Invalid(format!(
                "the aud claim names neither of {audiences:?}"
            )));
        }
        let exp = jws
            .claims
            .get("exp")
            .and_then(Value::as_f64)
            .ok_or_else(|| invalid("the exp claim is missing or not a number"))?;
        // As a float: an `exp` of any size compares without overflow.
        if exp <= now as f64 {
            return Err(invalid("the assertion has expired (exp)"));
        }
        let jti = jws
            .text("jti")
            .filter(|j| !j.is_empty())
            .ok_or_else(|| invalid("the jti claim is missing"))?;
        self.jtis.retain(|_, until| *until >= now);
        if self.jtis.contains_key(jti) {
            return Err(AssertionError::Reused);
        }
        // Kept at most a day: an assertion valid longer is still single-use within that day.
        let until = (exp as u64).min(now.saturating_add(86_400));
        self.jtis.insert(jti.to_owned(), until);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use p256::ecdsa::signature::Signer;
    use p256::ecdsa::{Signature, SigningKey};
    use serde_json::json;

    const CLIENT: &str = "machine";
    const AUD: &str = "http://127.0.0.1:4000";
    const NOW: u64 = 1_700_000_000;

    fn sign(key: &SigningKey, header: &Value, claims: &Value) -> String {
        let encode = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let input = format!("{}.{}", encode(header), encode(claims));
        let signature: Signature = key.sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
    }

    fn claims(jti: &str) -> Value {
        json!({ "iss": CLIENT, "sub": CLIENT, "aud": AUD, "exp": NOW + 60, "iat": NOW, "jti": jti })
    }

    fn header() -> Value {
        json!({ "alg": "ES256", "typ": "JWT" })
    }

    #[test]
    fn a_good_assertion_is_accepted_once() {
        let key = SigningKey::from_slice(&[3; 32]).expect("key");
        let public = *key.verifying_key();
        let audiences = vec![AUD.to_owned(), format!("{AUD}/token")];
        let mut used = UsedAssertions::default();
        let assertion = sign(&key, &header(), &claims("j-1"));
        assert_eq!(subject(&assertion).as_deref(), Some(CLIENT));
        assert_eq!(
            used.check(&assertion, CLIENT, &public, &audiences, NOW),
            Ok(())
        );
        assert_eq!(
            used.check(&assertion, CLIENT, &public, &audiences, NOW),
            Err(AssertionError::Reused)
        );
        // Another jti is fine, and so is the token endpoint in an aud array.
        let mut second = claims("j-2");
        second["aud"] = json!(["https://elsewhere", format!("{AUD}/token")]);
        assert_eq!(
            used.check(
                &sign(&key, &header(), &second),
                CLIENT,
                &public,
                &audiences,
                NOW
            ),
            Ok(())
        );
    }

    #[test]
    fn every_claim_is_checked() {
        let key = SigningKey::from_slice(&[3; 32]).expect("key");
        let other = SigningKey::from_slice(&[4; 32]).expect("key");
        let public = *key.verifying_key();
        let audiences = vec![AUD.to_owned()];
        type Edit = fn(&mut Value, &mut Value);
        let cases: Vec<(&str, Edit)> = vec![
            ("alg", |h, _| h["alg"] = json!("RS256")),
            ("iss", |_, c| c["iss"] = json!("someone")),
            ("sub", |_, c| c["sub"] = json!("someone")),
            ("aud", |_, c| c["aud"] = json!("https://elsewhere")),
            ("aud number", |_, c| c["aud"] = json!(5)),
            ("expired", |_, c| c["exp"] = json!(NOW - 1)),
            ("exp now", |_, c| c["exp"] = json!(NOW)),
            ("no exp", |_, c| c["exp"] = Value::Null),
            ("no jti", |_, c| c["jti"] = json!("")),
        ];
        let mut used = UsedAssertions::default();
        for (what, edit) in cases {
            let (mut h, mut c) = (header(), claims(what));
            edit(&mut h, &mut c);
            let e = used
                .check(&sign(&key, &h, &c), CLIENT, &public, &audiences, NOW)
                .expect_err(what);
            assert!(matches!(e, AssertionError::Invalid(_)), "{what}: {e:?}");
        }
        let forged = sign(&other, &header(), &claims("forged"));
        let e = used
            .check(&forged, CLIENT, &public, &audiences, NOW)
            .expect_err("another key");
        assert!(
            matches!(&e, AssertionError::Invalid(why) if why.contains("signature")),
            "{e:?}"
        );
        for garbage in ["", "a.b.c", &"x".repeat(MAX_ASSERTION_BYTES + 1)] {
            assert!(used
                .check(garbage, CLIENT, &public, &audiences, NOW)
                .is_err());
        }
        // A refused assertion spends nothing: the same jti is still good.
        let good = sign(&key, &header(), &claims("forged"));
        assert_eq!(used.check(&good, CLIENT, &public, &audiences, NOW), Ok(()));
    }

    #[test]
    fn spent_jtis_are_forgotten_once_their_assertions_expired() {
        let key = SigningKey::from_slice(&[3; 32]).expect("key");
        let public = *key.verifying_key();
        let audiences = vec![AUD.to_owned()];
        let mut used = UsedAssertions::default();
        let assertion = sign(&key, &header(), &claims("j-1"));
        used.check(&assertion, CLIENT, &public, &audiences, NOW)
            .expect("accepted");
        assert_eq!(used.jtis.len(), 1);
        let later = NOW + 120;
        let mut fresh = claims("j-2");
        fresh["exp"] = json!(later + 60);
        used.check(
            &sign(&key, &header(), &fresh),
            CLIENT,
            &public,
            &audiences,
            later,
        )
        .expect("accepted");
        assert_eq!(used.jtis.len(), 1, "j-1 is forgotten");
    }
}
