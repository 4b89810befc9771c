//! DPoP (RFC 9449, the MCP DPoP extension SEP-1932): access tokens bound to a key the client
//! holds, so a leaked token is useless without it. A [`DpopKey`] signs one proof per HTTP
//! request — at the token endpoint (which binds the token to the key's thumbprint) and with
//! every request the token goes with (`ath`, the token's hash, ties the proof to it).
//! [`DpopNonces`] keeps the nonces servers ask for (RFC 9449 §8, §9). Which tokens are bound is
//! decided here too; token requests carry their proofs through the crate's token client.
//!
//! The key is ES256 (P-256), the algorithm every DPoP server supports; it is generated once
//! per server and stored with the tokens (a refresh token of a public client is bound to it).

use std::sync::Mutex;
use std::time::SystemTime;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use mcp_core::sync::lock;
use mcp_wire::DpopProof;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use url::Url;

use tracing::debug;

use crate::config::DpopMode;
use crate::credentials::{unix_now, TokenSet, TokenType};
use crate::error::AuthError;
use crate::jwt::random_id;
use crate::metadata::AuthMetadata;
use crate::secret::Secret;

/// The one signing algorithm used for proofs.
pub const DPOP_ALG: &str = "ES256";
/// The `WWW-Authenticate` / token endpoint error that asks for a proof with a nonce.
pub const USE_DPOP_NONCE: &str = "use_dpop_nonce";
/// The `WWW-Authenticate` error of a proof the MCP server refused.
pub const INVALID_DPOP_PROOF: &str = "invalid_dpop_proof";

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
    /// A new random key (from the operating system's random source).
    pub fn generate() -> DpopKey {
        DpopKey::from_signing_key(SigningKey::random(&mut rand_core::OsRng))
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
        .map_err(|e| AuthError::InvalidUrl(format!("cannot make a DPoP proof for it: {e}")))?;
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

/// The nonce each server (the authorization server, the MCP server) sent last: the next proof
/// to it carries that one. Answers that arrive out of order may put back an older nonce; the
/// server then asks again (one more round trip), which is cheaper than ordering them.
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

/// Whether a token request binds its tokens to the DPoP key, per [`DpopMode`]: always when the
/// held tokens are bound (their refresh token may be bound too); otherwise only where the
/// authorization server can bind them and — in `Auto` — the MCP server takes them. Fails when
/// the MCP server takes only bound tokens and they cannot be had (`server` names it).
pub(crate) fn binds_tokens(
    mode: DpopMode,
    metadata: &AuthMetadata,
    held_bound: bool,
    server: &str,
) -> Result<bool, AuthError> {
    if held_bound {
        return Ok(true);
    }
    let can_bind = metadata.server_offers_dpop() && metadata.resource_accepts_our_proofs();
    let wanted = match mode {
        DpopMode::Never => false,
        DpopMode::Always => can_bind,
        DpopMode::Auto => can_bind && metadata.resource_offers_dpop(),
    };
    if wanted || !metadata.resource_requires_dpop() {
        return Ok(wanted);
    }
    let why = if mode == DpopMode::Never {
        "DPoP is turned off for it (oauth.dpop: never)".to_owned()
    } else if !metadata.resource_accepts_our_proofs() {
        format!(
            "it takes proofs made with {:?} only, and this client makes {DPOP_ALG} proofs",
            metadata.resource_dpop_algs().unwrap_or_default()
        )
    } else {
        format!(
            "its authorization server {} cannot bind tokens with {DPOP_ALG} proofs \
             (dpop_signing_alg_values_supported: {})",
            metadata.authorization_server.issuer,
            metadata
                .authorization_server
                .dpop_signing_alg_values_supported
                .as_ref()
                .map_or("absent".to_owned(), |algs| format!("{algs:?}"))
        )
    };
    Err(AuthError::Unsupported(format!(
        "{server} takes only DPoP-bound tokens, but {why}"
    )))
}

/// The tokens of an answer to a request made with `key` (or without): a DPoP-bound token
/// needs the key its request was proven with; a bearer token where one was asked for is
/// used as a bearer token (RFC 9449 §5 lets a server decline to bind).
pub(crate) fn check_binding(
    tokens: TokenSet,
    key: Option<&DpopKey>,
    metadata: &AuthMetadata,
) -> Result<TokenSet, AuthError> {
    if tokens.token_type == TokenType::Dpop && key.is_none() {
        return Err(AuthError::Http(format!(
            "the token endpoint of {} issued a DPoP-bound token to a request without a proof",
            metadata.authorization_server.issuer
        )));
    }
    if key.is_some() && tokens.token_type == TokenType::Bearer {
        debug!(issuer = %metadata.authorization_server.issuer, "asked for a DPoP-bound token, got a bearer token");
    }
    Ok(tokens)
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
        let key = DpopKey::generate();
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
        let key = DpopKey::generate();
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

    fn metadata(
        server_algs: Option<&[&str]>,
        challenge: Option<&[&str]>,
        prm_algs: Option<&[&str]>,
        required: bool,
    ) -> AuthMetadata {
        let list = |algs: &[&str]| algs.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        AuthMetadata {
            server_url: Url::parse("https://mcp.example.com/mcp").unwrap(),
            resource: Some(crate::metadata::ProtectedResourceMetadata {
                resource: "https://mcp.example.com/mcp".into(),
                authorization_servers: vec!["https://as.example.com".into()],
                scopes_supported: None,
                dpop_signing_alg_values_supported: prm_algs.map(list),
                dpop_bound_access_tokens_required: required.then_some(true),
            }),
            authorization_server: crate::metadata::AuthorizationServerMetadata {
                issuer: "https://as.example.com".into(),
                dpop_signing_alg_values_supported: server_algs.map(list),
                ..Default::default()
            },
            default_endpoints: false,
            challenge_scope: None,
            resource_metadata_url: None,
            challenge_offers_dpop: challenge.is_some(),
            challenge_dpop_algs: challenge.filter(|a| !a.is_empty()).map(list),
        }
    }

    #[test]
    fn tokens_are_bound_where_both_servers_take_es256_proofs() {
        use DpopMode::{Always, Auto, Never};
        let es256: &[&str] = &["ES256"];
        let ps256: &[&str] = &["PS256"];
        let bare: &[&str] = &[];
        let cases = [
            // (as algs, challenge algs, prm algs, required) → (auto, always, never)
            (Some(es256), None, None, false, [false, true, false]),
            (Some(es256), Some(bare), None, false, [true, true, false]),
            (Some(es256), Some(es256), None, false, [true, true, false]),
            (Some(es256), None, Some(es256), false, [true, true, false]),
            (Some(es256), Some(ps256), None, false, [false, false, false]),
            (Some(es256), None, Some(ps256), false, [false, false, false]),
            (Some(ps256), Some(bare), None, false, [false, false, false]),
            (None, Some(bare), None, false, [false, false, false]),
        ];
        for (i, (server, challenge, prm, required, want)) in cases.into_iter().enumerate() {
            let meta = metadata(server, challenge, prm, required);
            for (mode, want) in [Auto, Always, Never].into_iter().zip(want) {
                let got = binds_tokens(mode, &meta, false, "s");
                match got {
                    Ok(got) => assert_eq!(got, want, "case {i} {mode:?}"),
                    Err(e) => panic!("case {i} {mode:?}: {e}"),
                }
                // Held bound tokens keep their key whatever the mode.
                assert!(binds_tokens(mode, &meta, true, "s").unwrap());
            }
        }
    }

    #[test]
    fn a_server_that_takes_only_bound_tokens_gets_them_or_a_reason() {
        let required = metadata(Some(&["ES256"]), None, None, true);
        assert!(binds_tokens(DpopMode::Auto, &required, false, "s").unwrap());
        assert!(binds_tokens(DpopMode::Always, &required, false, "s").unwrap());
        let e = binds_tokens(
            DpopMode::Never,
            &metadata(Some(&["ES256"]), None, None, true),
            false,
            "https://s/mcp",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("takes only DPoP-bound tokens") && e.contains("oauth.dpop: never"),
            "{e}"
        );
        let e = binds_tokens(
            DpopMode::Auto,
            &metadata(Some(&["RS256"]), None, None, true),
            false,
            "s",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cannot bind tokens with ES256"), "{e}");
        let e = binds_tokens(
            DpopMode::Always,
            &metadata(Some(&["ES256"]), Some(&["PS256"]), None, true),
            false,
            "s",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("\"PS256\"") && e.contains("ES256 proofs"), "{e}");
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
