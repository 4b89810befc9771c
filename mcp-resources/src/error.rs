//! The manager's own errors, each naming the URI it is about ([`Error::subject`]).

use std::time::Duration;

use mcp_core::time::human_duration;
use mcp_core::{Delivery, Error, ErrorKind};

/// Calls after [`close`](crate::ResourceManager::close).
pub(crate) fn closed(subject: &str) -> Error {
    Error::new(
        ErrorKind::ServerUnavailable,
        "the resource manager is closed (its session ended); make a new one for the new session",
    )
    .with_delivery(Delivery::NotSent)
    .with_subject(subject)
}

/// An explicit subscribe on a server without `resources.subscribe`.
pub(crate) fn subscriptions_not_offered(uri: &str) -> Error {
    Error::new(
        ErrorKind::Resource,
        "the server does not offer resource subscriptions (capability resources.subscribe); \
         reads of this resource stay fresh by the TTL only",
    )
    .with_delivery(Delivery::NotSent)
    .with_subject(uri)
}

/// A caller that waited for another caller's fetch until its own deadline.
pub(crate) fn waited_too_long(subject: &str, what: &str, timeout: Duration) -> Error {
    Error::timeout(format!(
        "{what} did not finish within {}",
        human_duration(timeout)
    ))
    .with_delivery(Delivery::Sent)
    .with_subject(subject)
}

/// Names `uri` in an error that does not name anything yet.
pub(crate) fn about(error: Error, uri: &str) -> Error {
    if error.subject().is_some() {
        error
    } else {
        error.with_subject(uri)
    }
}
