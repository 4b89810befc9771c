//! Credential-shaped values taken out of text a peer sent, before the text reaches an error
//! message or a log: a server can echo back the `Authorization` it was sent (or any secret it
//! holds) in an error body, and the client would write it to the user's logs.
//!
//! [`redact_secrets`] replaces, with `[redacted]`:
//! - the credentials after an authorization scheme (`Bearer …`, `Basic …`, `DPoP …`, any
//!   case; a token68 of at least 8 characters, so a challenge's `Bearer realm="…"` and prose
//!   such as "basic auth" stay);
//! - the values of credential-named fields, in JSON (`"access_token": "…"`), forms and query
//!   strings (`client_secret=…`) and headers (`X-Api-Key: …`): `access_token`,
//!   `refresh_token`, `id_token`, `client_secret`, `password`, `api_key`, `authorization`,
//!   `secret`, `token`, and any name ending in `_token`, `_secret`, `_password` or `_key`
//!   (`-` and `_` alike, any case);
//! - JWT-shaped strings (three base64url segments, the first starting `eyJ`);
//! - long high-entropy tokens: runs of 32 or more token characters (letters, digits,
//!   `-_.~+/=`) holding both letters and digits.
//!
//! Hand-written rather than a set of regular expressions: the patterns are few and simple, the
//! core crate stays free of a regex engine, and the pass is linear in the text.
//!
//! ```
//! use mcp_core::redact::redact_secrets;
//! let body = r#"{"error":"bad","access_token":"hunter2"} Authorization: Bearer abc.def"#;
//! assert_eq!(
//!     redact_secrets(body),
//!     r#"{"error":"bad","access_token":"[redacted]"} Authorization: [redacted]"#
//! );
//! ```

/// What a removed value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Runs of token characters at least this long, with letters and digits, are taken for keys.
const HIGH_ENTROPY_MIN_LEN: usize = 32;

/// Authorization schemes whose credentials follow them.
const SCHEMES: [&str; 3] = ["bearer", "basic", "dpop"];
/// Shorter words after a scheme name are prose, not credentials.
const SCHEME_CREDENTIALS_MIN_LEN: usize = 8;

/// Field names whose values are credentials (compared lowercased, `-` read as `_`).
const SECRET_FIELDS: [&str; 12] = [
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "password",
    "passwd",
    "api_key",
    "apikey",
    "authorization",
    "proxy_authorization",
    "secret",
    "token",
];

/// Name endings that make a field a credential.
const SECRET_FIELD_SUFFIXES: [&str; 4] = ["_token", "_secret", "_password", "_key"];

/// `text` with every credential-shaped value replaced by [`REDACTED`] (see the module
/// documentation for what counts). Text without any comes back unchanged.
pub fn redact_secrets(text: &str) -> String {
    redact_shapes(&redact_named(text))
}

/// Characters of a field name or scheme.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Characters of a token (base64, base64url, hex, JWT).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
}

fn is_secret_field(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace('-', "_");
    let name = name.trim_start_matches("x_");
    SECRET_FIELDS.contains(&name) || SECRET_FIELD_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Pass one: what follows an authorization scheme, and the values of credential-named fields.
fn redact_named(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    // `out` holds `text[..copied]`, redacted.
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if !is_name_byte(bytes[at]) || (at > 0 && is_name_byte(bytes[at - 1])) {
            at += 1;
            continue;
        }
        let start = at;
        let mut end = at;
        while end < bytes.len() && is_name_byte(bytes[end]) {
            end += 1;
        }
        let name = &text[start..end];
        let value = if SCHEMES.iter().any(|s| name.eq_ignore_ascii_case(s)) {
            scheme_credentials(bytes, end)
        } else if is_secret_field(name) {
            field_value(bytes, end)
        } else {
            None
        };
        match value {
            Some((from, to)) => {
                // A scheme's credentials go with the scheme's name (which says what they were).
                let from = if SCHEMES.iter().any(|s| name.eq_ignore_ascii_case(s)) {
                    start
                } else {
                    from
                };
                out.push_str(&text[copied..from]);
                out.push_str(REDACTED);
                copied = to;
                at = to;
            }
            None => at = end,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The span of the credentials after a scheme name ending at `at`: spaces, then a token68
/// (`=` only as trailing padding) long enough to be one — not an auth parameter
/// (`realm="…"`).
fn scheme_credentials(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut from = at;
    while from < bytes.len() && bytes[from] == b' ' {
        from += 1;
    }
    if from == at {
        return None;
    }
    let mut to = from;
    while to < bytes.len() && is_token_byte(bytes[to]) {
        to += 1;
    }
    let token = &bytes[from..to];
    let unpadded = token.len() - token.iter().rev().take_while(|&&b| b == b'=').count();
    let is_token68 = !token[..unpadded].contains(&b'=') && bytes.get(to) != Some(&b'"');
    (token.len() >= SCHEME_CREDENTIALS_MIN_LEN && is_token68).then_some((from, to))
}

/// The span of a field's value after its name ends at `at`: an optional closing quote, `:` or
/// `=` (spaces around it), then a quoted string (to its closing quote, escapes skipped) or a
/// bare value (to the next delimiter).
fn field_value(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut i = at;
    if matches!(bytes.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    while matches!(bytes.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    if !matches!(bytes.get(i), Some(b':' | b'=')) {
        return None;
    }
    i += 1;
    while matches!(bytes.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    match bytes.get(i) {
        Some(&quote @ (b'"' | b'\'')) => {
            let from = i + 1;
            let mut to = from;
            while to < bytes.len() && bytes[to] != quote {
                to += if bytes[to] == b'\\' { 2 } else { 1 };
            }
            let to = to.min(bytes.len());
            Some((from, to))
        }
        Some(_) => {
            let from = i;
            let mut to = from;
            while to < bytes.len()
                && !matches!(
                    bytes[to],
                    b'&' | b',' | b';' | b'}' | b']' | b'"' | b'\'' | b'<' | b'\r' | b'\n'
                )
            {
                to += 1;
            }
            // A header value may hold spaces (`Authorization: Bearer x`), a form value not.
            let value = &bytes[from..to];
            let to = if value.contains(&b' ') && !looks_like_scheme(value) {
                from + value.iter().position(|&b| b == b' ').unwrap_or(value.len())
            } else {
                to
            };
            (to > from).then_some((from, to))
        }
        None => None,
    }
}

/// Whether a header value starts with an authorization scheme and a space.
fn looks_like_scheme(value: &[u8]) -> bool {
    SCHEMES.iter().any(|s| {
        value.len() > s.len()
            && value[..s.len()].eq_ignore_ascii_case(s.as_bytes())
            && value[s.len()] == b' '
    })
}

/// Pass two: JWT-shaped strings and long high-entropy tokens, wherever they stand.
fn redact_shapes(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if !is_token_byte(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && is_token_byte(bytes[at]) {
            at += 1;
        }
        let run = &text[start..at];
        if is_jwt(run) || is_high_entropy(run) {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = at;
        }
    }
    out.push_str(&text[copied..]);
    out
}

fn is_jwt(run: &str) -> bool {
    let segments: Vec<&str> = run.split('.').collect();
    segments.len() >= 3
        && segments[0].starts_with("eyJ")
        && segments[..3].iter().all(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

fn is_high_entropy(run: &str) -> bool {
    run.len() >= HIGH_ENTROPY_MIN_LEN
        && run.bytes().any(|b| b.is_ascii_digit())
        && run.bytes().any(|b| b.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_credentials_are_redacted_with_the_scheme() {
        assert_eq!(
            redact_secrets("you sent Authorization: Bearer abc123.x_y-z"),
            "you sent Authorization: [redacted]"
        );
        assert_eq!(redact_secrets("basic dXNlcjpwYXNz!"), "[redacted]!");
        assert_eq!(redact_secrets("DPoP  eyJ0eXAi0"), "[redacted]");
        // A scheme name before prose or a challenge's parameters is just a word.
        for kept in [
            "basic auth failed",
            "a basic: failure",
            r#"Bearer realm="mcp", error="invalid_token""#,
        ] {
            assert_eq!(redact_secrets(kept), kept);
        }
    }

    #[test]
    fn named_fields_in_json_forms_and_headers_are_redacted() {
        assert_eq!(
            redact_secrets(r#"{"access_token": "s3cr\"et", "token_type":"Bearer","ok":1}"#),
            r#"{"access_token": "[redacted]", "token_type":"Bearer","ok":1}"#
        );
        assert_eq!(
            redact_secrets("grant_type=x&client_secret=hunter2&refresh_token=r1"),
            "grant_type=x&client_secret=[redacted]&refresh_token=[redacted]"
        );
        assert_eq!(
            redact_secrets("X-Api-Key: k-123 was refused"),
            "X-Api-Key: [redacted] was refused"
        );
        assert_eq!(
            redact_secrets("{'password': 'pw', 'user': 'me'}"),
            "{'password': '[redacted]', 'user': 'me'}"
        );
        assert_eq!(
            redact_secrets(r#""my_api_key":12345"#),
            r#""my_api_key":[redacted]"#
        );
        // A name that only contains a secret word is not one.
        assert_eq!(redact_secrets("tokens: 5"), "tokens: 5");
        assert_eq!(redact_secrets("password"), "password");
    }

    #[test]
    fn jwts_and_high_entropy_tokens_are_redacted_anywhere() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
        assert_eq!(redact_secrets(&format!("got {jwt}.")), "got [redacted]");
        assert_eq!(
            redact_secrets("key sk_live_4eC39HqLyjWDarjtT1zdp7dc here"),
            "key [redacted] here"
        );
        // Ordinary prose, host names and short ids stay.
        let plain = "internal server error at mcp.example.com (request 42, id abc-123)";
        assert_eq!(redact_secrets(plain), plain);
    }

    #[test]
    fn unterminated_and_multibyte_text_is_handled() {
        assert_eq!(
            redact_secrets(r#"{"password":"unterminated"#),
            r#"{"password":"[redacted]"#
        );
        assert_eq!(redact_secrets("password=é"), "password=[redacted]");
        assert_eq!(redact_secrets("Grüße, token=\\"), "Grüße, token=[redacted]");
        assert_eq!(redact_secrets(""), "");
    }
}
