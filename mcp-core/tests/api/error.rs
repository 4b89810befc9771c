use std::time::Duration;

use mcp_core::error::*;
use mcp_core::jsonrpc::ErrorObject;

#[test]
fn retryability_follows_the_seed() {
    for kind in ErrorKind::ALL {
        let expected = !matches!(
            kind,
            ErrorKind::ToolNotFound
                | ErrorKind::InvalidParams
                | ErrorKind::Auth
                | ErrorKind::PermissionDenied
                | ErrorKind::Protocol
        );
        assert_eq!(kind.is_retryable(), expected, "{kind}");
    }
}

#[test]
fn agent_messages_match_the_seed_table() {
    let e = |k| Error::new(k, "detail").with_subject("search");
    assert_eq!(
        e(ErrorKind::Timeout).agent_message(),
        "tool search is unavailable: server not responding"
    );
    assert_eq!(
        e(ErrorKind::Network).agent_message(),
        "tool search is unavailable: server not responding"
    );
    assert_eq!(
        e(ErrorKind::ServerUnavailable).agent_message(),
        "tool search is unavailable: server not responding"
    );
    assert_eq!(
        e(ErrorKind::CircuitOpen).agent_message(),
        "tool search is temporarily disabled: the server failed repeatedly; retrying automatically in 30s"
    );
    assert_eq!(
        e(ErrorKind::CircuitOpen)
            .with_retry_after(Duration::from_secs(12))
            .agent_message(),
        "tool search is temporarily disabled: the server failed repeatedly; retrying automatically in 12s"
    );
    assert_eq!(
        e(ErrorKind::ToolNotFound).agent_message(),
        "tool search does not exist: check the tool name and server configuration"
    );
    assert_eq!(
        e(ErrorKind::Auth).agent_message(),
        "tool search authentication failed: reconnect the MCP server"
    );
    assert_eq!(
        e(ErrorKind::InvalidParams)
            .with_field("query")
            .agent_message(),
        "tool search parameter error: field query is malformed"
    );
    assert_eq!(
        e(ErrorKind::InvalidParams).agent_message(),
        "tool search parameter error: detail"
    );
    assert_eq!(
        e(ErrorKind::StaleCache).agent_message(),
        "tool search returned a stale cached result: fetching fresh data"
    );
    assert_eq!(
        e(ErrorKind::PermissionDenied).agent_message(),
        "tool search is not permitted: the server denied access"
    );
    assert_eq!(
        e(ErrorKind::Tool).agent_message(),
        "tool search failed: detail"
    );
    assert_eq!(
        e(ErrorKind::RateLimited)
            .with_retry_after(Duration::from_millis(1500))
            .agent_message(),
        "tool search is rate-limited: too many calls to its server; try again in 2s"
    );
    assert_eq!(
        e(ErrorKind::Protocol).agent_message(),
        "tool search is unavailable: the server broke the protocol"
    );
    assert_eq!(
        e(ErrorKind::Resource).agent_message(),
        "resource search is unavailable: detail"
    );
}

#[test]
fn display_and_debug_carry_kind_code_and_message() {
    let e = Error::answered(ErrorKind::Tool, ErrorObject::internal("boom"));
    assert_eq!(e.to_string(), "tool_error: boom (code -32603)");
    assert!(format!("{e:?}").contains("boom"));
}
