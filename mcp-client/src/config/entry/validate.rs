//! A server entry read, checked as a whole: its command or URLs, OAuth fields that need each
//! other, and the harness settings; and the URL checks other parts of the configuration share.

use crate::config::endpoints::check_endpoint_urls;
use crate::config::error::{ConfigError, ConfigErrorKind};
use crate::config::fields::Ctx;
use crate::config::model::{ServerConfig, TransportConfig};

pub(super) fn validate(server: &ServerConfig, ctx: &Ctx<'_>) -> Result<(), ConfigError> {
    match &server.transport {
        TransportConfig::Stdio { command, .. } => {
            if command.trim().is_empty() {
                return Err(ctx.error(
                    ConfigErrorKind::Invalid,
                    "command",
                    "expected the program to start, found an empty string",
                ));
            }
        }
        // The URL is the first endpoint's: checked (and named) as `endpoints[0].url` below.
        _ if !server.endpoints.is_empty() => check_endpoint_urls(server, ctx)?,
        TransportConfig::Http { url, .. } | TransportConfig::Sse { url, .. } => {
            check_url(url).map_err(|m| ctx.error(ConfigErrorKind::Invalid, "url", m))?;
        }
        TransportConfig::Url { url, .. } | TransportConfig::Remote { url, .. } => {
            check_any_url(url).map_err(|m| ctx.error(ConfigErrorKind::Invalid, "url", m))?;
        }
        TransportConfig::InProcess => {}
    }
    let oauth = &server.oauth;
    let is_stdio = matches!(server.transport, TransportConfig::Stdio { .. });
    if !is_stdio && (oauth.resource.is_some() || oauth.token_env.is_some()) {
        let field = if oauth.resource.is_some() {
            "oauth.resource"
        } else {
            "oauth.token_env"
        };
        return Err(ctx.error(
            ConfigErrorKind::Invalid,
            field,
            "only stdio servers take `resource` and `token_env` (a remote server is its own resource)",
        ));
    }
    match (&oauth.resource, &oauth.token_env) {
        (Some(resource), Some(_)) => {
            check_url(resource)
                .map_err(|m| ctx.error(ConfigErrorKind::Invalid, "oauth.resource", m))?;
        }
        (None, None) => {}
        (Some(_), None) => {
            return Err(ctx.error(
                ConfigErrorKind::Missing,
                "oauth.token_env",
                "`resource` needs `token_env`, the variable the token is passed to the server in",
            ))
        }
        (None, Some(_)) => {
            return Err(ctx.error(
                ConfigErrorKind::Missing,
                "oauth.resource",
                "`token_env` needs `resource`, the http(s) URL of the protected resource whose token the server needs",
            ))
        }
    }
    server
        .settings
        .validate()
        .map_err(|(field, message)| ctx.error(ConfigErrorKind::Invalid, field, message))
}

/// Accepts `http://host…` and `https://host…`. The message describes the problem without
/// repeating the URL (it may carry a token in its query).
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    check_url_with(
        url,
        &["http", "https"],
        "expected an http:// or https:// URL with a host",
    )
}

/// [`check_url`] for a transport chosen by its URL or `type`: any scheme of letters, digits,
/// `+`, `-` and `.` (`ws`, `wss`, `http`, …).
pub(crate) fn check_any_url(url: &str) -> Result<(), String> {
    check_url_with(
        url,
        &[],
        "expected a URL with a host (http://, https://, ws://, wss://, …)",
    )
}

/// A URL with one of `schemes` (any well-formed scheme when empty) and a host.
pub(crate) fn check_url_with(url: &str, schemes: &[&str], expected: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("{expected}, found text without a scheme"));
    };
    let well_formed = !scheme.is_empty()
        && scheme.len() <= 16
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let allowed = well_formed
        && (schemes.is_empty() || schemes.iter().any(|s| scheme.eq_ignore_ascii_case(s)));
    if !allowed {
        let shown = if well_formed {
            format!("a URL with scheme `{scheme}`")
        } else {
            "text without a valid scheme".to_owned()
        };
        return Err(format!("{expected}, found {shown}"));
    }
    if url.chars().any(char::is_whitespace) {
        return Err(format!("{expected}, found a URL containing whitespace"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    if host.is_empty() {
        return Err(format!("{expected}, found a URL without a host"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_url;

    #[test]
    fn urls() {
        for good in [
            "http://localhost",
            "https://example.com/mcp",
            "HTTPS://Example.com:8443/x?y=1#z",
            "http://user:pw@host:1/",
            "http://[::1]:8080/mcp",
        ] {
            assert!(check_url(good).is_ok(), "{good}");
        }
        for (bad, says) in [
            ("example.com/mcp", "without a scheme"),
            ("ftp://example.com", "scheme `ftp`"),
            ("http://", "without a host"),
            ("https:///path", "without a host"),
            ("http://:80/", "without a host"),
            ("http://exa mple.com", "whitespace"),
            ("ws://host/x", "scheme `ws`"),
        ] {
            let err = check_url(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(err.starts_with("expected an http:// or https:// URL"));
        }
        let err = check_url("https//host?token=sekrit").unwrap_err();
        assert!(!err.contains("sekrit"));
    }
}
