//! `mcp-transport-contract`: the transport contract (R-T-CONTRACT) as one suite of behaviour
//! tests, written once as plain async functions over a [`Peer`] — a [`TransportConnector`] to a
//! server that serves the fixture's tools — and run against every transport.
//!
//! - [`peer`]: [`Peer`], what a transport registers: its connector, its message-size cap, and how
//!   to ask the server how many cancellations reached it.
//! - [`behaviours`]: the behaviours, one async function each ([`behaviours::ALL`] lists them).
//! - `slow_stats` (private): the server's count of its `slow` calls, asked over the transport —
//!   how a behaviour sees the server's side.
//! - `bench` (feature `bench`): the harness of the transport benches that measure each row
//!   against a floor row in the same run.
//! - [`contract_suite!`]: registers a transport in one line — one `#[tokio::test]` per
//!   behaviour.
//!
//! A transport crate registers in its `tests/contract.rs`:
//!
//! ```ignore
//! mcp_transport_contract::contract_suite!(fixture_over_my_transport());
//! async fn fixture_over_my_transport() -> mcp_transport_contract::Peer { /* … */ }
//! ```
//!
//! The server behind a peer serves the fixture server's tools (mcp-testkit): `echo {text}`,
//! `slow {duration_ms, steps}` (progress, cancellable), `slow_stats` (the server's count of
//! its `slow` calls: started, running, most at once — the suite's view of the server's side),
//! `large {bytes}`, `ask_elicitation {message}`, `trigger_list_changed`, `crash` (the peer
//! dies: the connection ends without a goodbye) and `fail`.
//!
//! [`TransportConnector`]: mcp_core::TransportConnector

pub mod behaviours;
#[cfg(feature = "bench")]
pub mod bench;
pub mod peer;
mod slow_stats;

pub use peer::Peer;

/// One `#[tokio::test]` per behaviour of [`behaviours::ALL`], each against a fresh peer from
/// `$peer` (an expression of type `impl Future<Output = Peer>`, evaluated per test).
#[macro_export]
macro_rules! contract_suite {
    ($peer:expr) => {
        $crate::contract_suite!(@tests $peer;
            handshake,
            calls_in_flight,
            large_message,
            message_over_the_cap,
            cancellation_reaches_the_server,
            progress,
            notifications,
            server_to_client_request,
            deadline_holds_without_an_answer,
            peer_dying_mid_call,
            close_is_idempotent,
            policies_wrap_the_transport,
            pool_serves_the_transport
        );
    };
    (@tests $peer:expr; $($behaviour:ident),*) => {
        $(
            #[tokio::test]
            async fn $behaviour() {
                let peer: $crate::Peer = $peer.await;
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
}
