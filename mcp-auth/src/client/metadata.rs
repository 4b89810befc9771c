//! Authorization metadata for [`OAuthClient`]: fetched once and cached, fetched again after a
//! refusal, and the unauthenticated probe for the server's challenge.

use std::sync::Arc;

use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;
use serde_json::json;
use tracing::info;

use super::OAuthClient;
use crate::error::AuthError;
use crate::metadata::{fetch_metadata, AuthMetadata, ResourceChallenge};

impl OAuthClient {
    /// How the server wants to be authorized: fetched once per server, then from the cache.
    /// A challenge naming another resource metadata URL than the cached one starts metadata
    /// discovery again.
    pub async fn auth_metadata(
        &self,
        challenge: Option<&ResourceChallenge>,
    ) -> Result<Arc<AuthMetadata>, AuthError> {
        if let Some(cached) = lock(&self.state).metadata.clone() {
            let moved = challenge
                .and_then(|c| c.resource_metadata.as_deref())
                .is_some_and(|url| cached.resource_metadata_url.as_deref() != Some(url));
            if !moved {
                // A later challenge may be the first to say the server takes DPoP.
                if let Some(c) = challenge.filter(|c| c.dpop && !cached.challenge_offers_dpop) {
                    let mut learned = (*cached).clone();
                    learned.challenge_offers_dpop = true;
                    learned.challenge_dpop_algs = c.dpop_algs.clone();
                    let learned = Arc::new(learned);
                    lock(&self.state).metadata = Some(learned.clone());
                    return Ok(learned);
                }
                return Ok(cached);
            }
        }
        let metadata =
            Arc::new(fetch_metadata(&self.http, &self.config.server_url, challenge).await?);
        info!(
            server = %redact_url(self.config.server_url.as_str()),
            issuer = %metadata.authorization_server.issuer,
            "OAuth metadata discovered"
        );
        let mut state = lock(&self.state);
        state.metadata = Some(metadata.clone());
        Ok(metadata)
    }

    /// Fetches the metadata again, past the cache (a token was refused: the server may now name another
    /// authorization server). Returns whether the authorization server changed; if it did, the
    /// tokens of the old one are forgotten, and its client registration is never offered to the
    /// new one (registrations are kept per issuer).
    pub async fn refetch_auth_metadata(
        &self,
        challenge: Option<&ResourceChallenge>,
    ) -> Result<bool, AuthError> {
        let before = lock(&self.state).metadata.clone();
        let metadata =
            Arc::new(fetch_metadata(&self.http, &self.config.server_url, challenge).await?);
        let changed = before.is_some_and(|old| {
            old.authorization_server.issuer != metadata.authorization_server.issuer
        });
        lock(&self.state).metadata = Some(metadata.clone());
        if changed {
            info!(
                server = %redact_url(self.config.server_url.as_str()),
                issuer = %metadata.authorization_server.issuer,
                "the server moved to another authorization server"
            );
            self.forget_tokens().await?;
        }
        Ok(changed)
    }

    /// Asks the server (an unauthenticated `initialize`) for its challenge and fetches the
    /// metadata from it, so a login can start before any call was refused. Returns `Ok(None)` when the
    /// server accepted the request: it needs no authorization.
    pub async fn probe(&self) -> Result<Option<Arc<AuthMetadata>>, AuthError> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": mcp_core::ProtocolVersion::LATEST.as_str(),
                "capabilities": {},
                "clientInfo": { "name": self.config.client_name, "version": env!("CARGO_PKG_VERSION") }
            }
        });
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            reqwest::header::HeaderValue::from_static("application/json"),
        );
        let bytes = serde_json::to_vec(&body)
            .map_err(|e| AuthError::Http(format!("cannot encode a request: {e}")))?;
        let answer = self
            .http
            .execute(
                reqwest::Method::POST,
                &self.config.server_url,
                headers,
                Some(bytes),
            )
            .await?;
        if answer.status != 401 && answer.status != 403 {
            if answer.is_success() {
                return Ok(None);
            }
            // Not a challenge: metadata discovery goes by the well-known URLs alone.
            return self.auth_metadata(None).await.map(Some);
        }
        let challenges: Vec<&str> = answer
            .headers
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let challenge = ResourceChallenge::parse(&challenges.join(", "));
        self.auth_metadata(challenge.as_ref()).await.map(Some)
    }
}
