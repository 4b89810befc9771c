//! OAuth 2.1 for MCP clients.
//!
//! - [`secret`]: [`Secret`], a value that is never shown.
//! - [`credentials`]: tokens and client identities, what is stored per server.
//! - [`store`]: the [`TokenStore`] trait; the OS credential store and memory backends.

pub mod credentials;
pub mod secret;
pub mod store;

pub use credentials::{ClientIdentity, StoredCredentials, TokenEndpointAuth, TokenSet};
pub use secret::Secret;
pub use store::{default_store, DefaultStore, MemoryStore, StoreError, StoreKey, TokenStore};
