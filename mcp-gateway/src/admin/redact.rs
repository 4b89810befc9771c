//! A last safety net for the free text the panel shows (a server's last error, the reason it
//! is down): the facade's messages already leave secrets out, but one may quote what a server
//! or a child process said. Credentials that look like credentials are cut out, control
//! characters dropped and the length bounded — before the text reaches the page or the JSON.

/// The longest message shown, in characters; longer ones end with `…`.
pub(crate) const MAX_MESSAGE_CHARS: usize = 400;

/// What replaces a secret.
const REDACTED: &str = "[redacted]";

/// Words whose presence in a key (`api_key=…`, `"token": …`, `Authorization: …`) marks its
/// value as a secret.
const SECRET_KEYS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "api_key",
    "api-key",
    "authorization",
    "cookie",
    "credential",
    "session",
    "code_verifier",
    "assertion",
];

/// Authorization schemes whose next word is a credential.
const SCHEMES: &[&str] = &["bearer", "basic", "dpop", "token"];

/// `text` with what looks like a credential replaced by `[redacted]`: the word after an
/// authorization scheme (`Bearer abc` → `Bearer [redacted]`), the value of a key naming a
/// secret (`token=abc`, `"api_key":"abc"`, `Authorization: abc`), and the user info, query and
/// fragment of URLs. Control characters become spaces; the result has at most
/// [`MAX_MESSAGE_CHARS`] characters.
pub(crate) fn redact(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out = String::with_capacity(cleaned.len().min(MAX_MESSAGE_CHARS * 4));
    // Whether the word before asked for its successor to be hidden.
    let mut hide_next = false;
    let mut rest = cleaned.as_str();
    while !rest.is_empty() {
        let space = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..space]);
        rest = &rest[space..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        if word.is_empty() {
            continue;
        }
        let bare = word
            .trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
            .to_ascii_lowercase();
        if hide_next {
            out.push_str(REDACTED);
            // `Authorization: Bearer abc`: the scheme was hidden, and so is what follows it.
            hide_next = SCHEMES.contains(&bare.as_str());
            continue;
        }
        let (shown, hides_next) = redact_word(word, &bare);
        out.push_str(&shown);
        hide_next = hides_next;
    }
    truncate(out)
}

/// One word: what to show of it, and whether the next word is a secret.
fn redact_word(word: &str, bare: &str) -> (String, bool) {
    if SCHEMES.contains(&bare) {
        return (word.to_owned(), true);
    }
    if let Some(scheme_end) = word.find("://") {
        return (redact_url(word, scheme_end), false);
    }
    // `key=value`, `key:value`, `"key":"value"`; `key:` alone hides the next word.
    if let Some(split) = word.find(['=', ':']) {
        let key = word[..split].to_ascii_lowercase();
        if is_secret_key(&key) {
            let value = &word[split + 1..];
            let value_is_empty = value
                .trim_matches(|c: char| c == '"' || c == '\'' || c == ',')
                .is_empty();
            if value_is_empty {
                return (word.to_owned(), true);
            }
            return (format!("{}{REDACTED}", &word[..=split]), false);
        }
    }
    (word.to_owned(), false)
}

fn is_secret_key(key: &str) -> bool {
    SECRET_KEYS.iter().any(|secret| key.contains(secret))
}

/// A URL without its user info, query and fragment (each replaced by `[redacted]`).
fn redact_url(word: &str, scheme_end: usize) -> String {
    let authority_start = scheme_end + 3;
    let (head, tail) = word.split_at(authority_start);
    let authority_end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    let (authority, path) = tail.split_at(authority_end);
    let mut out = String::from(head);
    match authority.rfind('@') {
        Some(at) => {
            out.push_str(REDACTED);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    match path.find(['?', '#']) {
        Some(cut) => {
            out.push_str(&path[..cut]);
            out.push_str(&path[cut..=cut]);
            out.push_str(REDACTED);
        }
        None => out.push_str(path),
    }
    out
}

fn truncate(text: String) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => {
            let mut short = text[..cut].to_owned();
            short.push('…');
            short
        }
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_cut_out_and_the_rest_kept() {
        let cases = [
            ("connection refused", "connection refused"),
            (
                "401 from server: Authorization: Bearer abc.def.ghi",
                "401 from server: Authorization: [redacted] [redacted]",
            ),
            ("sent Bearer abc123 twice", "sent Bearer [redacted] twice"),
            ("token=abc&x=1 failed", "token=[redacted] failed"),
            (r#"{"api_key":"sk-123","n":1}"#, r#"{"api_key":[redacted]"#),
            ("password: hunter2", "password: [redacted]"),
            (
                "GET https://user:pw@example.com:8443/mcp?key=1#x failed",
                "GET https://[redacted]@example.com:8443/mcp?[redacted] failed",
            ),
            (
                "http://127.0.0.1:9/mcp refused",
                "http://127.0.0.1:9/mcp refused",
            ),
            ("line\nbreak\x1b[31m", "line break [31m"),
        ];
        for (input, expected) in cases {
            assert_eq!(redact(input), expected, "{input:?}");
        }
    }

    #[test]
    fn long_and_odd_text_is_bounded_and_never_panics() {
        let long = "é".repeat(MAX_MESSAGE_CHARS * 3);
        let shown = redact(&long);
        assert_eq!(shown.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(shown.ends_with('…'));
        for odd in [
            "",
            " ",
            "://",
            "a://",
            "x://@",
            "token=",
            "bearer",
            "=:=",
            "🦀://🦀@🦀?🦀",
        ] {
            let _ = redact(odd);
        }
        assert_eq!(redact("token= abc"), "token= [redacted]");
    }

    #[test]
    fn random_text_made_of_the_delimiters_never_panics() {
        // Every slice is cut at an ASCII delimiter: multi-byte characters around them are
        // the risk.
        let alphabet: Vec<char> = "ab=:/?#@ \"'é🦀\ttokenBearer\u{1b}".chars().collect();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let len = (state % 24) as usize;
            let text: String = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    alphabet[(state >> 33) as usize % alphabet.len()]
                })
                .collect();
            let shown = redact(&text);
            assert!(shown.chars().count() <= MAX_MESSAGE_CHARS + 1);
            assert!(
                !shown.chars().any(char::is_control),
                "{text:?} -> {shown:?}"
            );
        }
    }
}
