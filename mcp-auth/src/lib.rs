//! OAuth 2.1 for MCP clients (the 2025-11-25 authorization specification and its extensions).
//!
//! - [`metadata`] — the `WWW-Authenticate` challenge, protected resource metadata (RFC 9728)
//!   and authorization server metadata (RFC 8414 / OpenID), with the 2025-03-26 fallbacks.
//! - [`client`] — [`OAuthClient`], the seed's interface for one server: fetch the authorization metadata, initiate an
//!   authorization (PKCE S256), exchange the code, refresh, get a valid token; client identity
//!   (pre-registered → client ID metadata document → dynamic registration); machine grants
//!   (client credentials, `private_key_jwt`, cross-app access); revocation.
//! - [`provider`] — [`OAuthProvider`], the `AuthProvider` the transports use: background
//!   refresh, one refresh-and-retry on 401, bounded step-up on 403, DPoP proofs and nonces;
//!   [`Authorizer`] runs logins.
//! - [`config`] — [`OAuthConfig`] and [`Grant`].
//! - [`credentials`] — tokens and client identities, what is stored per server.
//! - [`store`] — the [`TokenStore`] trait; the OS credential store and memory backends.
//! - [`http`] — the one HTTP client all OAuth requests use (https or loopback http only).
//! - [`address_policy`] — which addresses an MCP server's OAuth requests may go to: none
//!   outside its own kind of network, checked on every resolved address and connected to as
//!   checked.
//! - [`login`] — [`LoopbackLogin`], a browser login with a loopback redirect listener;
//!   [`AutoApprove`] for authorization servers that approve at once (tests, conformance).
//! - [`dpop`] — DPoP (RFC 9449): the key tokens are bound to, one proof per request, the
//!   servers' nonces.
//! - [`jwt`] — ES256 client assertions.
//! - [`secret`] — [`Secret`], a value that is never shown.
//! - [`error`] — [`AuthError`].

pub mod address_policy;
pub mod client;
pub mod config;
pub mod credentials;
pub mod dpop;
pub mod error;
pub mod http;
pub mod jwt;
pub mod login;
pub mod metadata;
pub mod provider;
pub mod secret;
pub mod store;
mod token_http;

pub use client::{AuthorizationRequest, Callback, OAuthClient};
pub use config::{CrossAppAccess, DpopMode, Grant, OAuthConfig};
pub use credentials::{ClientIdentity, StoredCredentials, TokenEndpointAuth, TokenSet, TokenType};
pub use dpop::DpopKey;
pub use error::AuthError;
pub use login::{AutoApprove, LoopbackLogin, Presenter};
pub use metadata::{AuthMetadata, ResourceChallenge};
pub use provider::{Authorizer, OAuthProvider};
pub use secret::Secret;
pub use store::{
    default_store, DefaultStore, EntryLock, MemoryStore, StoreError, StoreKey, TokenStore,
};
