//! The scopes [`OAuthClient`] asks for, and how step-up challenges grow them.

use std::collections::BTreeSet;

use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;

use super::{OAuthClient, MAX_STEP_UPS};
use crate::error::AuthError;
use crate::metadata::{AuthMetadata, ResourceChallenge};

/// The `offline_access` scope (asks for a refresh token), requested only where advertised.
const OFFLINE_ACCESS: &str = "offline_access";

impl OAuthClient {
    /// The scopes for an authorization or grant: configured, else the challenge's or the
    /// metadata's; plus step-up scopes; plus `offline_access` where the server lists it.
    pub(super) fn scopes_to_request(&self, metadata: &AuthMetadata) -> Vec<String> {
        let mut scopes: Vec<String> = if self.config.scopes.is_empty() {
            metadata.default_scopes()
        } else {
            self.config.scopes.clone()
        };
        for scope in &lock(&self.state).step_up_scopes {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        let offers_offline = metadata
            .authorization_server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == OFFLINE_ACCESS));
        // Only with other scopes: a server that defines none gets no `scope` at all.
        if offers_offline
            && !self.is_machine()
            && !scopes.is_empty()
            && !scopes.iter().any(|s| s == OFFLINE_ACCESS)
        {
            scopes.push(OFFLINE_ACCESS.into());
        }
        scopes
    }

    /// A 403 `insufficient_scope`: the scopes the next authorization asks for grow to the
    /// union of the granted, the last requested and the challenge's scopes. Fails after
    /// [`MAX_STEP_UPS`] step-ups, and on a second step-up in a row that would ask for nothing
    /// new (the server will not grant what it asks for).
    pub fn step_up(&self, challenge: &ResourceChallenge) -> Result<(), AuthError> {
        let server = redact_url(self.config.server_url.as_str());
        let mut state = lock(&self.state);
        let wanted: BTreeSet<String> = challenge.scope.iter().flatten().cloned().collect();
        let nothing_new = wanted.is_subset(&state.last_requested);
        if state.step_ups >= MAX_STEP_UPS || (nothing_new && state.repeated_step_up) {
            return Err(AuthError::GaveUp(format!(
                "{server} still answers 403 insufficient_scope (scope {:?}) after {} \
                 re-authorization(s); giving up",
                wanted.iter().cloned().collect::<Vec<_>>().join(" "),
                state.step_ups
            )));
        }
        state.step_ups += 1;
        state.repeated_step_up = nothing_new;
        let granted: Vec<String> = state
            .held
            .as_ref()
            .map(|h| h.tokens.scopes.clone())
            .unwrap_or_default();
        let last: Vec<String> = state.last_requested.iter().cloned().collect();
        state.step_up_scopes.extend(granted);
        state.step_up_scopes.extend(last);
        state.step_up_scopes.extend(wanted);
        Ok(())
    }
}
