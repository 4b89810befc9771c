//! `application/x-www-form-urlencoded`, the encoding of token requests and query strings:
//! parsing, one-parameter lookup, percent-encoding.

use super::OAuthError;

/// One parameter of a form or query; a repeated parameter is an error (RFC 6749 §3.1).
pub(super) fn param<'a>(
    form: &'a [(String, String)],
    name: &str,
) -> Result<Option<&'a str>, OAuthError> {
    let mut found = form.iter().filter(|(n, _)| n == name);
    let first = found.next().map(|(_, v)| v.as_str());
    if found.next().is_some() {
        return Err(OAuthError::bad(
            "invalid_request",
            format!("{name} is repeated"),
        ));
    }
    Ok(first)
}

/// `application/x-www-form-urlencoded` (also a query string) as name/value pairs.
pub(super) fn parse_form(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

/// Percent-decoding with `+` as space; malformed escapes are kept as they are.
pub(super) fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(byte) = hex {
                    out.push(byte);
                    i += 2;
                } else {
                    out.push(b'%');
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encoding of everything but the unreserved characters (RFC 3986).
pub(super) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_codec_round_trips() {
        let original = "a b+c&d=e/é%";
        assert_eq!(decode(&encode(original)), original);
        assert_eq!(decode("a+b%20c%zz%4"), "a b c%zz%4");
        assert_eq!(
            parse_form("x=1&&y&z=%3D"),
            vec![
                ("x".to_owned(), "1".to_owned()),
                ("y".to_owned(), String::new()),
                ("z".to_owned(), "=".to_owned())
            ]
        );
    }

    #[test]
    fn a_repeated_parameter_is_refused() {
        let form = parse_form("a=1&b=2&a=3");
        assert_eq!(param(&form, "b").expect("once"), Some("2"));
        assert_eq!(param(&form, "c").expect("absent"), None);
        assert_eq!(
            param(&form, "a").expect_err("twice").error,
            "invalid_request"
        );
    }
}
