//! The handler every session of a server gets: the harness's own [`ClientHandler`] (sampling,
//! elicitation, roots) for everything the server asks, plus the facade's ears — list changes go to
//! the server's supervisor, and every notification reaches the harness's subscribers tagged with
//! the server's name.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_core::jsonrpc::{ErrorObject, Payload, Request};
use mcp_core::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ListRootsResult,
};
use mcp_session::{ClientHandler, ServerNotification};
use tokio::sync::{broadcast, mpsc};

use crate::supervisor::SupervisorEvent;

/// A notification from one of the client's servers.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientNotification {
    /// The configured server name.
    pub server: String,
    /// What the server sent.
    pub notification: ServerNotification,
}

pub(crate) struct FacadeHandler {
    pub(crate) server: String,
    pub(crate) harness: Arc<dyn ClientHandler>,
    pub(crate) supervisor: mpsc::Sender<SupervisorEvent>,
    pub(crate) notifications: broadcast::Sender<ClientNotification>,
    /// The server's resource manager's ears (`resources/updated`, `resources/list_changed`).
    #[cfg(feature = "resources")]
    pub(crate) resources: crate::resources::NotificationRelay,
}

#[async_trait]
impl ClientHandler for FacadeHandler {
    fn capabilities(&self) -> ClientCapabilities {
        self.harness.capabilities()
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        self.harness.list_roots().await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.harness.create_message(params).await
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.harness.elicit(params).await
    }

    async fn answer_input_round(
        &self,
        method: &str,
        requests: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<Result<serde_json::Map<String, serde_json::Value>, ErrorObject>> {
        self.harness.answer_input_round(method, requests).await
    }

    fn on_notification(&self, notification: &ServerNotification) {
        let event = match notification {
            ServerNotification::ToolListChanged => Some(SupervisorEvent::ToolsChanged),
            ServerNotification::PromptListChanged => Some(SupervisorEvent::PromptsChanged),
            ServerNotification::ResourceListChanged => Some(SupervisorEvent::ResourcesChanged),
            _ => None,
        };
        if let Some(event) = event {
            let _ = self.supervisor.try_send(event);
        }
        #[cfg(feature = "resources")]
        self.resources.forward(notification);
        self.harness.on_notification(notification);
        // Nobody listening is fine: notifications are not queued for the future.
        let _ = self.notifications.send(ClientNotification {
            server: self.server.clone(),
            notification: notification.clone(),
        });
    }

    async fn handle_other(&self, request: Request) -> Result<Payload, ErrorObject> {
        self.harness.handle_other(request).await
    }
}
