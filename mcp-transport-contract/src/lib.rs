//! `mcp-transport-contract`: the transport contract (R-T-CONTRACT) as one suite of behaviour
//! tests, written once as plain async functions over a [`Peer`] — a [`TransportConnector`] to a
//! server that serves the fixture's tools — and run against every transport, in both protocol
//! eras.
//!
//! - [`peer`]: [`Peer`], what a transport registers: its connector, the era its server speaks,
//!   its message-size cap, how to ask the server how many cancellations reached it, and what
//!   else differs between the servers behind the transports (pages, cache hints);
//!   [`TestkitFixture`](peer::TestkitFixture), the flags every transport gives mcp-testkit's
//!   fixture server.
//! - [`behaviours`]: the behaviours, one async function each ([`behaviours::ALL`] lists them).
//! - `slow_stats` (private): the server's count of its `slow` calls, asked over the transport —
//!   how a behaviour sees the server's side.
//! - `bench` (feature `bench`): the harness of the transport benches that measure each row
//!   against a floor row in the same run.
//! - [`contract_suite!`]: registers a transport in one line — one `#[tokio::test]` per
//!   behaviour and era (`legacy::handshake`, `modern::handshake`, …).
//!
//! A transport crate registers in its `tests/contract.rs`:
//!
//! ```ignore
//! use mcp_transport_contract::{Era, Peer};
//! mcp_transport_contract::contract_suite!(fixture_over_my_transport);
//! /// The fixture behind my transport, speaking `era` only.
//! async fn fixture_over_my_transport(era: Era) -> Peer { /* … */ }
//! ```
//!
//! The server behind a peer serves the fixture server's tools (mcp-testkit): `echo {text}`,
//! `add {a, b}`, `slow {duration_ms, steps}` (progress, cancellable), `slow_stats` (the
//! server's count of its `slow` calls: started, running, most at once — the suite's view of the
//! server's side), `fail {mode}` (its first two calls fail), `large {bytes}`,
//! `ask_elicitation {message}`, `ask_roots`, `trigger_list_changed` (toggles `dynamic_tool`),
//! `crash` (the peer dies: the connection ends without a goodbye); the resources
//! `fixture://static/hello` and `fixture://items/{id}`, and the prompt `greeting`.
//!
//! [`TransportConnector`]: mcp_core::TransportConnector

pub mod behaviours;
#[cfg(feature = "bench")]
pub mod bench;
pub mod peer;
mod slow_stats;

pub use mcp_core::Era;
pub use peer::Peer;

/// One `#[tokio::test]` per behaviour of [`behaviours::ALL`] and era, each against a fresh
/// peer from `$peer` (a function or closure taking the [`Era`] its server is to speak and
/// returning `impl Future<Output = Peer>`, called per test), in a module per era: `legacy`
/// (a server that speaks only the legacy era; the sessions probe and fall back) and `modern`
/// (one that speaks only 2026-07-28). `contract_suite!($peer; legacy)` registers only the eras
/// named, for a transport that exists in one era only.
#[macro_export]
macro_rules! contract_suite {
    (@era legacy) => {
        $crate::Era::Legacy
    };
    (@era modern) => {
        $crate::Era::Modern
    };
    (@tests $peer:expr, $era:expr; $($behaviour:ident),*) => {
        $(
            #[tokio::test]
            async fn $behaviour() {
                let peer: $crate::Peer = ($peer)($era).await;
                assert_eq!(peer.era, $era, "{}: the peer's server speaks another era", peer.name);
                let finished = ::tokio::time::timeout(
                    $crate::behaviours::LIMIT,
                    $crate::behaviours::$behaviour(&peer),
                )
                .await;
                assert!(
                    finished.is_ok(),
                    "{}: `{}` did not finish within {:?}",
                    peer.name,
                    stringify!($behaviour),
                    $crate::behaviours::LIMIT
                );
                peer.shutdown().await;
            }
        )*
    };
    ($peer:expr) => {
        $crate::contract_suite!($peer; legacy, modern);
    };
    ($peer:expr; $($era:ident),+) => {
        $(
            mod $era {
                #[allow(unused_imports)]
                use super::*;
                $crate::contract_suite!(@tests $peer, $crate::contract_suite!(@era $era);
                    handshake,
                    the_era_is_detected,
                    protocol_versions_are_negotiated,
                    calls_in_flight,
                    large_message,
                    message_over_the_cap,
                    results_and_errors_are_told_apart,
                    lists_come_in_pages,
                    resources_and_prompts,
                    cancellation_reaches_the_server,
                    progress,
                    notifications,
                    server_to_client_request,
                    roots_requests_are_answered_by_the_handler,
                    deadline_holds_without_an_answer,
                    peer_dying_mid_call,
                    close_is_idempotent,
                    policies_wrap_the_transport,
                    pool_serves_the_transport
                );
            }
        )+
    };
}
