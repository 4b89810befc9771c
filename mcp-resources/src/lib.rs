//! `mcp-resources`: one MCP server's resources kept fresh for a harness (R-RES), on any
//! [`McpService`](mcp_core::McpService) — a session, or a stack of layers around one.
//!
//! - **The manager** ([`ResourceManager`], `manager.rs`; its request paths in `requests.rs`): [`read`](ResourceManager::read)
//!   (from the cache within the TTL, one fetch shared by concurrent readers),
//!   [`subscribe`](ResourceManager::subscribe) / [`unsubscribe`](ResourceManager::unsubscribe),
//!   [`discover_resources`](ResourceManager::discover_resources) (resources and templates,
//!   kept until the list changes), [`on_update`](ResourceManager::on_update) observers,
//!   [`handle_notification`](ResourceManager::handle_notification),
//!   [`reconnected`](ResourceManager::reconnected) (subscriptions survive a new session),
//!   [`close`](ResourceManager::close), [`state`](ResourceManager::state),
//!   [`stats`](ResourceManager::stats) ([`ResourceStats`], `stats.rs`: hits, misses, bytes)
//!   and [`transitions`](ResourceManager::transitions). [`NewSession`] and
//!   [`ResubscribeReport`] (`new_session.rs`) describe a reconnect; [`offers_subscriptions`] reads a
//!   server's capabilities.
//! - **The state machine** (`state.rs` the names, `table.rs` the rules): [`ResourceState`],
//!   [`Trigger`], [`Transition`] — below.
//! - **The cache** (`content.rs`, internal): a moka `sync::Cache` weighed in bytes
//!   ([`ResourceConfig::max_bytes`]), least recently used out first.
//! - **Single flight** (`flight.rs`, internal): concurrent callers of one URI (or of the
//!   listing) share one request, each waiting within its own deadline.
//! - **Subscription eviction** (`eviction.rs`, internal): past
//!   [`max_auto_subscriptions`](ResourceConfig::max_auto_subscriptions) the least recently
//!   read automatic subscription is given up; its `resources/unsubscribe` goes out from a task
//!   the manager owns, in the URI's subscription flight, off the reader's path (at most
//!   [`MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT`] at once).
//! - **Observers** (`observers.rs`): URI → callbacks, removed when their [`UpdateGuard`]
//!   drops; a panicking callback is caught.
//! - **Listing and templates** (`listing.rs`, `template/`): [`ResourceListing`] (with
//!   [`template_for`](ResourceListing::template_for) → [`TemplateMatch`]) and RFC 6570
//!   [`UriTemplate`]s (parse, [`expand`](UriTemplate::expand); `template/matcher.rs`
//!   [`matches`](UriTemplate::matches)).
//! - **Wiring** (`handler.rs`): [`ResourceHandler`], a `ClientHandler` that relays a
//!   session's notifications to a manager through a [`NotificationRelay`].
//! - **Configuration** (`config.rs`): [`ResourceConfig`]; errors (`error.rs`) are
//!   `mcp_core::Error`s naming the URI.
//!
//! # The state of one URI
//!
//! ```text
//!             subscribe · first read (the server offers subscriptions)
//!   UNKNOWN ────────────────────────────────────────────────► SUBSCRIBED
//!    │   ▲                                                      │     ▲
//!    │   │ evicted, not subscribed                         read │     │ evicted
//!    │   │                                                      ▼     │
//!    │   └───────────────────────────────────────────────── CACHED ───┘
//!    │                                                      ▲ │  ▲
//!    └──── read, no subscription (fresh by the TTL only) ───┘ │  │ read
//!                                                             │  │
//!       updated · TTL expired · reconnected · missed updates  ▼  │
//!                                                            STALE
//!
//!   any state ── unsubscribe · close ──► UNSUBSCRIBED ── subscribe ──► SUBSCRIBED
//!   SUBSCRIBED ── reconnected, resubscribing failed ──► UNKNOWN
//! ```
//!
//! | from | trigger | to |
//! |---|---|---|
//! | UNKNOWN | [`subscribe`](ResourceManager::subscribe), or the first [`read`](ResourceManager::read) when the server offers `resources.subscribe` and [`auto_subscribe`](ResourceConfig::auto_subscribe) is on | SUBSCRIBED ([`Trigger::Subscribe`]) |
//! | UNKNOWN | a read without a subscription (the server offers none, `auto_subscribe` off, or the server refused it): freshness relies on the TTL alone | CACHED ([`Trigger::Read`]) |
//! | SUBSCRIBED, STALE | a read that fetched and kept the content | CACHED ([`Trigger::Read`]) |
//! | CACHED | `notifications/resources/updated` for the URI | STALE ([`Trigger::Updated`]) |
//! | CACHED | the TTL ran out, noticed when the URI is next read or its state asked for (on tokio's clock) | STALE ([`Trigger::TtlExpired`]) |
//! | CACHED | a new session ([`reconnected`](ResourceManager::reconnected)) | STALE ([`Trigger::Reconnected`]) |
//! | CACHED | the owner's notification stream lagged ([`notifications_missed`](ResourceManager::notifications_missed)) | STALE ([`Trigger::NotificationsMissed`]) |
//! | CACHED | evicted to stay within [`max_bytes`](ResourceConfig::max_bytes): the content is dropped, the subscription kept | SUBSCRIBED ([`Trigger::Evicted`]); UNKNOWN when not subscribed |
//! | SUBSCRIBED | a new session on which the resource could not be resubscribed | UNKNOWN ([`Trigger::ResubscribeFailed`]) |
//! | SUBSCRIBED | a read's automatic subscription, the least recently read one past [`max_auto_subscriptions`](ResourceConfig::max_auto_subscriptions) (default 256): `resources/unsubscribe` is sent in the background, each within [`request_timeout`](ResourceConfig::request_timeout) (the read that pushed it out does not wait; a failure is logged and counted in [`evicted_unsubscribes_failed`](ResourceStats::evicted_unsubscribes_failed)) | UNKNOWN ([`Trigger::SubscriptionEvicted`]); CACHED and STALE keep their state and content, fresh by the TTL only, and the next fetch subscribes again — once that unsubscribe is over, so the server never sees it after the new subscribe (a read while it is under way does not wait for it: it reads without subscribing) |
//! | any | [`unsubscribe`](ResourceManager::unsubscribe) | UNSUBSCRIBED ([`Trigger::Unsubscribe`]) |
//! | any | [`close`](ResourceManager::close): the session ended | UNSUBSCRIBED ([`Trigger::Closed`]) |
//! | UNSUBSCRIBED | [`subscribe`](ResourceManager::subscribe) | SUBSCRIBED ([`Trigger::Subscribe`]) |
//!
//! A trigger that does not change the state is no transition: an update of a URI holding no
//! content, a read whose result is not kept (it raced an update, reconnect or unsubscribe; it
//! is heavier than the cache; its TTL is zero; the URI is UNSUBSCRIBED and read through), a
//! subscribe of a URI that holds content. A URI that ends up UNKNOWN is forgotten.
//!
//! # Wiring it to a session
//!
//! The manager owns no session and no long-lived task (only the short ones sending
//! evictions' unsubscribes, aborted when its last handle drops). Its owner:
//! 1. builds it over the service reads go through and, when subscriptions must use another
//!    one (the primary session, while reads go through a pool),
//!    [`with_subscription_service`](ResourceManager::with_subscription_service);
//! 2. feeds it the session's notifications — from its `ClientHandler`'s `on_notification`
//!    ([`ResourceHandler`] does it), or a task running [`follow`](ResourceManager::follow);
//! 3. calls [`reconnected`](ResourceManager::reconnected) after every new session (with the
//!    new subscription service if it changed) and [`close`](ResourceManager::close) when the
//!    server goes away for good.
//!
//! ```no_run
//! # async fn run(transport: impl mcp_core::Transport) -> Result<(), mcp_core::Error> {
//! use mcp_session::{ClientSession, SessionOptions};
//! use mcp_resources::{ResourceConfig, ResourceHandler, ResourceManager};
//! let handler = ResourceHandler::new(());
//! let relay = handler.relay();
//! let session = ClientSession::connect(transport, handler, SessionOptions::default()).await?;
//! let resources = ResourceManager::for_session(&session, ResourceConfig::default());
//! relay.attach(&resources);
//!
//! let _guard = resources.on_update("fixture://counter", |update| println!("{} changed", update.uri));
//! let counter = resources.read("fixture://counter").await?; // SUBSCRIBED, then CACHED
//! for content in &counter.contents {
//!     println!("{}", content.text.as_deref().unwrap_or("<binary>"));
//! }
//! resources.close().await; // UNSUBSCRIBED
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

#[cfg(feature = "manager")]
mod config;
#[cfg(feature = "manager")]
mod content;
#[cfg(feature = "manager")]
mod error;
#[cfg(feature = "manager")]
mod eviction;
#[cfg(feature = "manager")]
mod flight;
#[cfg(feature = "manager")]
mod handler;
mod listing;
#[cfg(feature = "manager")]
mod manager;
#[cfg(feature = "manager")]
mod new_session;
#[cfg(feature = "manager")]
mod observers;
#[cfg(feature = "manager")]
mod requests;
#[cfg(feature = "manager")]
mod state;
#[cfg(feature = "manager")]
mod stats;
#[cfg(feature = "manager")]
mod table;
mod template;

#[cfg(feature = "manager")]
pub use config::ResourceConfig;
#[cfg(feature = "manager")]
pub use eviction::MAX_EVICTION_UNSUBSCRIBES_IN_FLIGHT;
#[cfg(feature = "manager")]
pub use handler::{NotificationRelay, ResourceHandler};
pub use listing::{ResourceListing, TemplateMatch};
#[cfg(feature = "manager")]
pub use manager::{offers_subscriptions, ReadSource, ResourceManager};
#[cfg(feature = "manager")]
pub use new_session::{NewSession, ResubscribeReport};

#[cfg(feature = "manager")]
pub use observers::UpdateGuard;
#[cfg(feature = "manager")]
pub use state::{ResourceState, Transition, Trigger};
#[cfg(feature = "manager")]
pub use stats::ResourceStats;
pub use template::{
    TemplateError, UriTemplate, MAX_EXPRESSION_VARIABLES, MAX_TEMPLATE_BYTES, MAX_TEMPLATE_PARTS,
};

/// The name [`ResourceListing`] had before (what a server offers is its *listing*).
#[deprecated(since = "0.1.0", note = "renamed `ResourceListing`")]
pub type Discovery = ResourceListing;
/// The name [`NewSession`] had before (a new session's subscriptions are *resubscribed*).
#[deprecated(since = "0.1.0", note = "renamed `NewSession`")]
#[cfg(feature = "manager")]
pub type SessionRenewal = NewSession;
/// The name [`ResubscribeReport`] had before.
#[deprecated(since = "0.1.0", note = "renamed `ResubscribeReport`")]
#[cfg(feature = "manager")]
pub type RenewalReport = ResubscribeReport;
