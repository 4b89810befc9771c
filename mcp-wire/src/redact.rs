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
//! The shapes err on the side of redacting. Text that only looks like a credential goes too:
//! a URL path or file path of 32 or more characters holding a digit
//! (`/api/v2/projects/1234/items/5678`), a UUID with its dashes, a hex digest, a long
//! base64 value, and the value of any field whose name ends in `_key` or `_token` (`sort_key`,
//! `next_token`). What reads `[redacted]` in an error may therefore have been harmless; a
//! credential that reads in clear would not be, and the exact text is one `--verbose` run (the
//! protocol trace) away for whoever owns the logs.
//!
//! [`excerpt`] is the one way a peer's text (an error body, a header) enters a message: lossy
//! UTF-8, redacted, control characters taken out (a terminal must not obey escape sequences a
//! server sent), cut to a number of characters; [`excerpt_of_start`] does the same reading only
//! the first bytes of a message that may be megabytes long.
//!
//! Hand-written rather than a set of regular expressions: the patterns are few and simple, the
//! transports stay free of a regex engine, and the pass is linear in the text.
//!
//! ```
//! use mcp_wire::redact::redact_secrets;
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

/// A peer's bytes as they may appear in an error message or a log: invalid UTF-8 replaced,
/// credential-shaped values redacted ([`redact_secrets`]), line breaks and tabs turned into
/// spaces, other control and bidirectional-formatting characters removed, leading and trailing
/// white space trimmed, and at most `max_chars` characters kept, with `…` when the text was
/// cut. Redacted before it is cut, so that a cut cannot leave the start of a secret that no
/// longer looks like one.
///
/// The pass is linear in `bytes`: callers bound what they read from a peer (an error body's
/// first few KiB), not this function.
///
/// ```
/// use mcp_wire::redact::excerpt;
/// let body = b"denied\r\n\x1b[31mAuthorization: Bearer sk-live-0123456789\x1b[0m, try later";
/// assert_eq!(excerpt(body, 30), "denied  [31mAuthorization: [re…");
/// assert_eq!(excerpt(b"  short\n", 30), "short");
/// ```
pub fn excerpt(bytes: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let redacted = redact_secrets(&text);
    let mut cleaned = redacted
        .chars()
        .filter_map(|c| match c {
            '\r' | '\n' | '\t' => Some(' '),
            c if c.is_control() || is_bidi_or_invisible(c) => None,
            c => Some(c),
        })
        .skip_while(|c| c.is_whitespace());
    let mut out: String = cleaned.by_ref().take(max_chars).collect();
    let cut = cleaned.any(|c| !c.is_whitespace());
    out.truncate(out.trim_end().len());
    if cut {
        out.push('…');
    }
    out
}

/// [`excerpt`] of a peer's message that may be megabytes long (a line, a frame, a parse error
/// quoting one): only its first bytes are read, enough for `max_chars` characters with room to
/// spare for the control characters taken out and the secrets redacted, so the cost does not
/// grow with the message; `…` when it was cut.
///
/// ```
/// use mcp_wire::redact::excerpt_of_start;
/// let line = format!("Bearer sk-live-0123456789 {}", "x".repeat(1 << 20));
/// assert_eq!(excerpt_of_start(line.as_bytes(), 12), "[redacted] x…");
/// ```
pub fn excerpt_of_start(bytes: &[u8], max_chars: usize) -> String {
    let read = max_chars.saturating_mul(4).saturating_add(1024);
    if bytes.len() <= read {
        return excerpt(bytes, max_chars);
    }
    let mut shown = excerpt(&bytes[..read], max_chars);
    if !shown.ends_with('…') {
        shown.push('…');
    }
    shown
}

/// Characters that reorder or hide text on a terminal (bidirectional overrides and isolates,
/// zero-width characters): a peer's text must read as it is.
fn is_bidi_or_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
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
    // `realm="…"` reads as a token `realm=` (its `=` taken for padding) before a quote; a
    // credential at the end of a quoted string (`"you sent Bearer abc123xyz"`) is one.
    let is_parameter = unpadded < token.len() && bytes.get(to) == Some(&b'"');
    let is_token68 = !token[..unpadded].contains(&b'=') && !is_parameter;
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

/// A URL as it may be shown in errors, logs and `Debug` output: without user info
/// (`user:password@`), query string and fragment, any of which may carry a key. Works on text
/// that is not a valid URL too (it never fails, and never shows more than it should).
///
/// ```
/// assert_eq!(
///     mcp_wire::redact::redact_url("https://me:pw@api.example.com/mcp?key=s3cret#x"),
///     "https://<redacted>@api.example.com/mcp"
/// );
/// ```
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => (&url[..at + 3], &url[at + 3..]),
        None => ("", url),
    };
    // A password may hold an unencoded `/`, `?` or `#`: any `@` at all means everything before
    // the last one may be user info. Showing too little is safe; showing too much is not.
    let (hidden, rest) = match rest.rfind('@') {
        Some(at) => ("<redacted>@", &rest[at + 1..]),
        None => ("", rest),
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    format!("{scheme}{hidden}{}", &rest[..end])
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
        // Echoed inside a challenge's quoted string.
        assert_eq!(
            redact_secrets(r#"Bearer error_description="you sent Bearer SECRET-token-42""#),
            r#"Bearer error_description="you sent [redacted]""#
        );
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
    fn excerpts_are_redacted_before_they_are_cut() {
        let token = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
        // Cut inside the token: its first characters alone would not look like a key.
        let body = format!("refused: {token} was sent");
        let shown = excerpt(body.as_bytes(), 16);
        assert_eq!(shown, "refused: [redact…");
        assert!(!shown.contains("sk_live"), "{shown}");
        let echoed = br#"{"error":"denied","access_token":"SECRET-1"}"#;
        let shown = excerpt(echoed, 200);
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("denied"), "{shown}");
    }

    #[test]
    fn excerpts_hold_no_control_characters_and_say_when_they_were_cut() {
        let body = b"\n  line one\r\n\x1b]0;owned\x07line\ttwo \xff\xfe\xe2\x80\xaecba  \n";
        let shown = excerpt(body, 200);
        assert_eq!(shown, "line one  ]0;ownedline two \u{FFFD}\u{FFFD}cba");
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert_eq!(excerpt("Grüße aus Köln".as_bytes(), 5), "Grüße…");
        // Trailing white space past the cut is no cut.
        assert_eq!(excerpt(b"exactly   \n\n", 7), "exactly");
        assert_eq!(excerpt(b"", 10), "");
        assert_eq!(excerpt(b"abc", 0), "…");
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
