//! The modern era's `subscriptions/listen` stream, which replaces the legacy standalone stream
//! and `resources/subscribe`.
//!
//! A modern session keeps at most one listen request open, owned by the session (aborted with
//! it). It asks for the list changes the server advertises (`listChanged` in its capabilities)
//! and for updates of every resource subscribed through `resources/subscribe`; a change of that
//! set re-opens the stream with the new filter. The notifications it carries reach the same
//! subscribers and handler as legacy notifications. When the stream ends — the server closed it
//! gracefully, the connection dropped — it is opened again after a delay that grows while
//! streams keep ending quickly (1 s up to 60 s); a server that does not know the method is not
//! asked again.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::{ClientSession, RequestOptions};
use mcp_core::jsonrpc::{codes, Payload};
use mcp_core::types::{methods, ListenRequestParams, NotificationFilter, ServerCapabilities};

/// The first delay before re-opening an ended stream.
const REOPEN_MIN: Duration = Duration::from_secs(1);
/// The longest delay before re-opening.
const REOPEN_MAX: Duration = Duration::from_secs(60);
/// A stream that lasted this long resets the delay.
const HEALTHY_STREAM: Duration = Duration::from_secs(30);

/// The list-change part of the filter: what the server says it sends.
pub(super) fn advertised_filter(capabilities: &ServerCapabilities) -> NotificationFilter {
    NotificationFilter {
        tools_list_changed: capabilities
            .tools
            .as_ref()
            .is_some_and(|t| t.list_changed == Some(true)),
        prompts_list_changed: capabilities
            .prompts
            .as_ref()
            .is_some_and(|p| p.list_changed == Some(true)),
        resources_list_changed: capabilities
            .resources
            .as_ref()
            .is_some_and(|r| r.list_changed == Some(true)),
        resource_subscriptions: Vec::new(),
    }
}

impl ClientSession {
    /// Adds or removes one resource URI from what the listen stream asks for.
    pub(super) fn change_resource_subscription(&self, uri: String, subscribe: bool) {
        self.shared.listen_filter.send_if_modified(|filter| {
            let present = filter.resource_subscriptions.contains(&uri);
            match (subscribe, present) {
                (true, false) => {
                    filter.resource_subscriptions.push(uri);
                    true
                }
                (false, true) => {
                    filter.resource_subscriptions.retain(|u| *u != uri);
                    true
                }
                _ => false,
            }
        });
    }

    /// The filter the listen stream currently asks for.
    pub fn listen_filter(&self) -> NotificationFilter {
        self.shared.listen_filter.borrow().clone()
    }

    /// Keeps the listen stream open until the session ends (the session's listener task).
    pub(super) async fn run_listener(self) {
        let mut filters = self.shared.listen_filter.subscribe();
        let mut delay = REOPEN_MIN;
        loop {
            let filter = filters.borrow_and_update().clone();
            if filter.is_empty() {
                if filters.changed().await.is_err() {
                    return;
                }
                continue;
            }
            let params = match Payload::from_serialize(&ListenRequestParams {
                notifications: filter,
            }) {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot encode the subscriptions/listen filter");
                    return;
                }
            };
            // The stream lives as long as the server keeps it: no deadline of its own.
            let options = RequestOptions::new().with_timeout(Duration::MAX);
            let opened = Instant::now();
            let listen = self.round_trip(methods::SUBSCRIPTIONS_LISTEN, Some(params), options);
            tokio::select! {
                ended = listen => {
                    // Whoever waits for the stream to open waits no longer.
                    self.shared.listen_acks.send_modify(|n| *n += 1);
                    if self.is_closed() {
                        return;
                    }
                    match ended {
                        Ok(_) => tracing::debug!("the server closed the subscriptions/listen stream"),
                        Err(e) if e.code() == Some(codes::METHOD_NOT_FOUND) => {
                            tracing::debug!("the server does not offer subscriptions/listen");
                            return;
                        }
                        Err(e) => tracing::debug!(error = %e, "the subscriptions/listen stream ended"),
                    }
                    if opened.elapsed() >= HEALTHY_STREAM {
                        delay = REOPEN_MIN;
                    }
                    let mut closed = self.shared.closed.subscribe();
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = closed.wait_for(|c| c.is_some()) => return,
                    }
                    delay = (delay * 2).min(REOPEN_MAX);
                }
                // The filter changed: dropping the request cancels it; open the new one.
                changed = filters.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// Sends the filter changes of a session to its listener task.
pub(super) type FilterSender = watch::Sender<NotificationFilter>;
