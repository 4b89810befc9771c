//! Wiring a session's notifications into a [`ResourceManager`] for someone using `mcp-core`
//! and a transport directly: [`ResourceHandler`] wraps the session's [`ClientHandler`] and
//! passes every notification through a [`NotificationRelay`] to the manager attached later
//! (the handler is needed to connect, the manager needs the connected session).

use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use mcp_core::jsonrpc::{ErrorObject, Payload, Request};
use mcp_core::sync::lock;
use mcp_core::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ListRootsResult,
};
use mcp_session::{ClientHandler, ServerNotification};

use crate::manager::{Inner, ResourceManager};

/// Passes notifications to the [`ResourceManager`] attached to it, if any. Cheap to clone.
///
/// It holds the manager weakly: a manager holds its session, the session its handler, and
/// the handler this relay, so a strong hold would keep all of them alive forever.
#[derive(Clone, Default)]
pub struct NotificationRelay {
    target: Arc<Mutex<Weak<Inner>>>,
}

impl NotificationRelay {
    /// A relay with no manager attached (notifications are dropped until one is).
    pub fn new() -> Self {
        NotificationRelay::default()
    }

    /// Sends every later notification to `manager` (replacing any manager attached before).
    pub fn attach(&self, manager: &ResourceManager) {
        *lock(&self.target) = Arc::downgrade(&manager.inner);
    }

    /// Detaches the manager.
    pub fn detach(&self) {
        *lock(&self.target) = Weak::new();
    }

    /// Hands `notification` to the attached manager's
    /// [`handle_notification`](ResourceManager::handle_notification).
    pub fn forward(&self, notification: &ServerNotification) {
        let target = lock(&self.target).upgrade();
        if let Some(inner) = target {
            ResourceManager { inner }.handle_notification(notification);
        }
    }
}

impl std::fmt::Debug for NotificationRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationRelay")
            .field("attached", &(lock(&self.target).strong_count() > 0))
            .finish()
    }
}

/// A [`ClientHandler`] that answers everything as `H` does and also relays the server's
/// notifications to a [`ResourceManager`].
///
/// ```no_run
/// # async fn run(transport: impl mcp_core::Transport) -> Result<(), mcp_core::Error> {
/// use mcp_session::{ClientSession, SessionOptions};
/// use mcp_resources::{ResourceConfig, ResourceHandler, ResourceManager};
/// let handler = ResourceHandler::new(());
/// let relay = handler.relay();
/// let session = ClientSession::connect(transport, handler, SessionOptions::default()).await?;
/// let resources = ResourceManager::for_session(&session, ResourceConfig::default());
/// relay.attach(&resources);
/// # Ok(()) }
/// ```
pub struct ResourceHandler<H = ()> {
    inner: H,
    relay: NotificationRelay,
}

impl<H: ClientHandler> ResourceHandler<H> {
    /// Wraps `inner` with a new relay.
    pub fn new(inner: H) -> Self {
        ResourceHandler::with_relay(inner, NotificationRelay::new())
    }

    /// Wraps `inner`, relaying through `relay` (one relay may serve every session of a
    /// server, e.g. across reconnects).
    pub fn with_relay(inner: H, relay: NotificationRelay) -> Self {
        ResourceHandler { inner, relay }
    }

    /// The relay to [`attach`](NotificationRelay::attach) the manager to.
    pub fn relay(&self) -> NotificationRelay {
        self.relay.clone()
    }
}

#[async_trait]
impl<H: ClientHandler> ClientHandler for ResourceHandler<H> {
    fn capabilities(&self) -> ClientCapabilities {
        self.inner.capabilities()
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        self.inner.list_roots().await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.inner.create_message(params).await
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.inner.elicit(params).await
    }

    fn on_notification(&self, notification: &ServerNotification) {
        self.relay.forward(notification);
        self.inner.on_notification(notification);
    }

    async fn handle_other(&self, request: Request) -> Result<Payload, ErrorObject> {
        self.inner.handle_other(request).await
    }
}
