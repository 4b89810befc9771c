//! Notifications from the server, parsed once and fanned out to subscribers.

use tokio::sync::broadcast;

use mcp_core::jsonrpc::Notification;
use mcp_core::types::{
    methods, LoggingMessageNotificationParams, ResourceUpdatedNotificationParams,
};

/// A notification the server sent (progress and cancellation are handled by the session and are
/// not fanned out).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerNotification {
    /// `notifications/tools/list_changed`
    ToolListChanged,
    /// `notifications/prompts/list_changed`
    PromptListChanged,
    /// `notifications/resources/list_changed`
    ResourceListChanged,
    /// `notifications/resources/updated`
    ResourceUpdated(ResourceUpdatedNotificationParams),
    /// `notifications/message`
    LoggingMessage(LoggingMessageNotificationParams),
    /// Any other notification, or a known one whose parameters did not parse (kept whole).
    Other(Notification),
}

impl ServerNotification {
    pub(crate) fn parse(n: Notification) -> Self {
        let typed = match n.method.as_str() {
            methods::NOTIFICATION_TOOLS_LIST_CHANGED => Some(ServerNotification::ToolListChanged),
            methods::NOTIFICATION_PROMPTS_LIST_CHANGED => {
                Some(ServerNotification::PromptListChanged)
            }
            methods::NOTIFICATION_RESOURCES_LIST_CHANGED => {
                Some(ServerNotification::ResourceListChanged)
            }
            methods::NOTIFICATION_RESOURCES_UPDATED => n
                .params
                .as_ref()
                .and_then(|p| p.deserialize().ok())
                .map(ServerNotification::ResourceUpdated),
            methods::NOTIFICATION_MESSAGE => n
                .params
                .as_ref()
                .and_then(|p| p.deserialize().ok())
                .map(ServerNotification::LoggingMessage),
            _ => None,
        };
        typed.unwrap_or(ServerNotification::Other(n))
    }
}

/// A subscription to a session's notifications. Each subscriber sees every notification sent
/// after it subscribed; one that falls more than
/// [`SessionOptions::notification_buffer`](super::SessionOptions::notification_buffer) behind
/// skips the oldest and is told how many it missed.
pub struct NotificationStream {
    pub(crate) receiver: broadcast::Receiver<ServerNotification>,
}

/// What [`NotificationStream::recv`] yields.
#[derive(Debug, Clone, PartialEq)]
pub enum NotificationEvent {
    /// The next notification.
    Notification(ServerNotification),
    /// This subscriber fell behind and missed this many notifications.
    Missed(u64),
}

impl NotificationStream {
    /// The next notification; `None` once the session has ended.
    pub async fn recv(&mut self) -> Option<NotificationEvent> {
        match self.receiver.recv().await {
            Ok(n) => Some(NotificationEvent::Notification(n)),
            Err(broadcast::error::RecvError::Lagged(k)) => Some(NotificationEvent::Missed(k)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// The next notification itself, skipping over gaps; `None` once the session has ended.
    pub async fn next(&mut self) -> Option<ServerNotification> {
        loop {
            match self.recv().await? {
                NotificationEvent::Notification(n) => return Some(n),
                NotificationEvent::Missed(_) => continue,
            }
        }
    }
}
