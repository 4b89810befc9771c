//! A new session: what changed ([`NewSession`]) and what resubscribing did
//! ([`ResubscribeReport`]), for [`ResourceManager::reconnected`](crate::ResourceManager::reconnected).

use std::fmt;
use std::sync::Arc;

use mcp_core::types::ServerCapabilities;
use mcp_core::{BoxService, Error};
use mcp_session::ClientSession;

/// What changed with a new session ([`ResourceManager::reconnected`](crate::ResourceManager::reconnected)). Anything not set stays
/// as it was.
#[derive(Clone, Default)]
pub struct NewSession {
    pub(crate) read_service: Option<BoxService>,
    pub(crate) subscription_service: Option<BoxService>,
    pub(crate) capabilities: Option<ServerCapabilities>,
}

impl NewSession {
    /// Nothing changed but the session behind the same services (a facade's gate or pool
    /// that routes to the current session).
    pub fn new() -> Self {
        NewSession::default()
    }

    /// A new session used for everything: reads, subscriptions, and its capabilities.
    pub fn session(session: &ClientSession) -> Self {
        let service: BoxService = Arc::new(session.clone());
        NewSession {
            read_service: Some(service.clone()),
            subscription_service: Some(service),
            capabilities: Some(session.server_info().capabilities.clone()),
        }
    }

    /// Reads and lists go to `service` from now on.
    pub fn read_service(mut self, service: BoxService) -> Self {
        self.read_service = Some(service);
        self
    }

    /// Subscriptions go to `service` from now on (the new primary session).
    pub fn subscription_service(mut self, service: BoxService) -> Self {
        self.subscription_service = Some(service);
        self
    }

    /// The new session's server capabilities (whether it offers subscriptions).
    pub fn capabilities(mut self, capabilities: &ServerCapabilities) -> Self {
        self.capabilities = Some(capabilities.clone());
        self
    }
}

impl fmt::Debug for NewSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewSession")
            .field("read_service", &self.read_service.is_some())
            .field("subscription_service", &self.subscription_service.is_some())
            .field("capabilities", &self.capabilities)
            .finish()
    }
}

/// What [`ResourceManager::reconnected`](crate::ResourceManager::reconnected) did.
#[derive(Debug, Clone, Default)]
pub struct ResubscribeReport {
    /// URIs subscribed again on the new session.
    pub resubscribed: Vec<String>,
    /// URIs that could not be (now UNKNOWN if they held no content, else STALE and tried
    /// again on their next read), with why.
    pub failed: Vec<(String, Error)>,
}
