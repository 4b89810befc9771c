//! The suite's view of the server's side: the fixture's `slow_stats` tool counts the server's
//! `slow` calls, so a behaviour can tell that a call reached the server, that it is running
//! there, or that calls overlapped there — over the transport under test, for every transport.

use mcp_core::{McpServiceExt, RequestOptions};
use mcp_session::ClientSession;
use serde_json::json;

use crate::behaviours::PROMPTLY;
use crate::peer::Peer;

/// What the server says of its `slow` calls (the fixture's `slow_stats` tool): the suite's view
/// of the server's side — whether a call reached it, whether calls overlapped there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlowStats {
    /// `slow` calls the server began handling.
    pub(crate) started: u64,
    /// `slow` calls running now (neither answered nor cancelled).
    pub(crate) running: u64,
    /// The most `slow` calls that ran at once.
    pub(crate) max_running: u64,
}

/// Asks the server for its [`SlowStats`] once (a call bounded by [`PROMPTLY`]).
pub(crate) async fn slow_stats(peer: &Peer, session: &ClientSession) -> SlowStats {
    let text = session
        .call_tool(
            "slow_stats",
            Some(json!({})),
            RequestOptions::new().with_timeout(PROMPTLY),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: slow_stats failed: {e}", peer.name))
        .text();
    let stats: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: slow_stats answered {text:?}: {e}", peer.name));
    let count = |field: &str| {
        stats[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{}: no count `{field}` in {text}", peer.name))
    };
    SlowStats {
        started: count("started"),
        running: count("running"),
        max_running: count("max_running"),
    }
}

/// Asks the server for its [`SlowStats`] (polling, bounded by [`PROMPTLY`]) until `check`
/// holds.
pub(crate) async fn eventually_slow_stats(
    what: &str,
    peer: &Peer,
    session: &ClientSession,
    check: impl Fn(&SlowStats) -> bool,
) {
    let what = format!("{}: {what}", peer.name);
    mcp_testkit::wait::until_async(&what, PROMPTLY, || async {
        let stats = slow_stats(peer, session).await;
        if check(&stats) {
            Ok(())
        } else {
            Err(format!("{stats:?}"))
        }
    })
    .await;
}
