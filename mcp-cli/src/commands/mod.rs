//! One module per command group; helpers shared by them.

pub mod auth;
pub mod bridge;
pub mod call;
pub mod prompts;
pub mod resources;
pub mod serve;
pub mod servers;
pub mod stats;
pub mod task;
pub mod tools;

use mcp_client::{McpClient, ServerReport, ServerStatus};

use crate::errors::{first_line, reason_line, CliError, Missing};
use crate::output;

/// What a server that is not ready is doing, to follow its name: `is unavailable: <first line
/// of the reason>`, `broke the protocol: …` (it answered, but not as MCP), `needs auth: …`,
/// `is reconnecting (attempt 2)`, `is disabled`.
pub fn status_why(status: &ServerStatus) -> String {
    match status {
        ServerStatus::Unavailable {
            reason,
            kind: mcp_core::ErrorKind::Protocol,
        } => format!("broke the protocol: {}", reason_line(reason)),
        ServerStatus::Unavailable { reason, .. } => {
            format!("is unavailable: {}", reason_line(reason))
        }
        ServerStatus::NeedsCredentials { reason } => {
            format!("needs auth: {}", reason_line(reason))
        }
        other => format!("is {other}"),
    }
}

/// What a server's state means for a call to it.
pub fn status_kind(status: &ServerStatus) -> mcp_core::ErrorKind {
    match status {
        ServerStatus::NeedsCredentials { .. } => mcp_core::ErrorKind::Auth,
        // The server answered, but not as MCP: a protocol error (exit 7), not an outage.
        ServerStatus::Unavailable {
            kind: mcp_core::ErrorKind::Protocol,
            ..
        } => mcp_core::ErrorKind::Protocol,
        _ => mcp_core::ErrorKind::ServerUnavailable,
    }
}

/// The named server must be configured (else exit 5) and ready (else exit 4).
pub fn require_ready(client: &McpClient, server: &str) -> Result<ServerReport, CliError> {
    let report = client
        .servers()
        .into_iter()
        .find(|s| s.name == server)
        .ok_or_else(|| CliError::NotFound {
            what: Missing::Server,
            name: server.to_owned(),
        })?;
    if report.status.is_ready() {
        Ok(report)
    } else {
        Err(CliError::Unavailable {
            kind: status_kind(&report.status),
            why: status_why(&report.status),
            server: report.name,
            subject: None,
        })
    }
}

/// The server name as it appears in qualified names (`[A-Za-z0-9_-]`, others become `_`).
pub(crate) fn qualified_prefix(server: &str) -> String {
    let mut prefix: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    prefix.push_str(mcp_client::naming::SEPARATOR);
    prefix
}

/// When `qualified` (a name not in a catalog) starts with the prefix of a server that is not
/// ready, the error says that server is unavailable (exit 4); otherwise it is not found (exit 5).
pub fn missing_entry(client: &McpClient, qualified: &str, what: Missing) -> CliError {
    let unavailable = client
        .servers()
        .into_iter()
        .filter(|s| !s.status.is_ready() && qualified.starts_with(&qualified_prefix(&s.name)))
        .max_by_key(|s| s.name.len());
    match unavailable {
        Some(server) => CliError::Unavailable {
            kind: status_kind(&server.status),
            why: status_why(&server.status),
            server: server.name,
            subject: Some(qualified.to_owned()),
        },
        None => CliError::NotFound {
            what,
            name: qualified.to_owned(),
        },
    }
}

/// One warning line on stderr per server that is not ready (disabled ones are skipped).
pub fn warn_unavailable(client: &McpClient, what: &str) {
    for server in client.servers() {
        match &server.status {
            ServerStatus::Ready | ServerStatus::Disabled => {}
            status => output::warn(&format!(
                "server \"{}\" {} (its {what} are not listed)",
                server.name,
                status_why(status)
            )),
        }
    }
}

/// One warning line per server that failed to answer a list request.
pub fn warn_gather_errors(what: &str, errors: &[(String, mcp_core::Error)]) {
    for (server, error) in errors {
        output::warn(&format!(
            "server \"{server}\": {what} failed: {}",
            first_line(error.message())
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_sanitized_like_qualified_names() {
        assert_eq!(qualified_prefix("github"), "github__");
        assert_eq!(qualified_prefix("my server.v2"), "my_server_v2__");
    }
}
