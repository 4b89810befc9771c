//! The device authorization grant (RFC 8628): [`DeviceAuthorization`] and the
//! [`OAuthClient`] methods that start it and poll for its tokens.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use oauth2::Scope;

use super::registration::IdentityUse;
use super::token_request::{token_error, token_set};
use super::OAuthClient;
use crate::credentials::{ClientIdentity, TokenSet};
use crate::dpop::check_binding;
use crate::error::AuthError;
use crate::metadata::AuthMetadata;

/// A device authorization in progress (RFC 8628): the user visits
/// [`verification_uri`](Self::verification_uri) on any device and enters
/// [`user_code`](Self::user_code), while [`OAuthClient::complete_device_authorization`] polls.
pub struct DeviceAuthorization {
    /// Where the user goes.
    pub verification_uri: String,
    /// The same with the code filled in, when the server offers one.
    pub verification_uri_complete: Option<String>,
    /// The code the user enters.
    pub user_code: String,
    /// How long the codes are valid.
    pub expires_in: Duration,
    details: oauth2::StandardDeviceAuthorizationResponse,
    client: ClientIdentity,
    metadata: Arc<AuthMetadata>,
    scopes: Vec<String>,
}

impl fmt::Debug for DeviceAuthorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceAuthorization")
            .field("verification_uri", &self.verification_uri)
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// Whether the server offers the device authorization grant (RFC 8628).
    pub async fn offers_device_authorization(&self) -> Result<bool, AuthError> {
        let metadata = self.auth_metadata(None).await?;
        Ok(metadata
            .authorization_server
            .device_authorization_endpoint
            .is_some())
    }

    /// Starts a device authorization: a client identity (registered without a redirect URI
    /// when needed), then the codes to show the user.
    pub async fn start_device_authorization(&self) -> Result<DeviceAuthorization, AuthError> {
        let metadata = self.auth_metadata(None).await?;
        let endpoint = metadata.endpoint(
            metadata
                .authorization_server
                .device_authorization_endpoint
                .as_ref(),
            "device_authorization_endpoint",
        )?;
        self.check_dpop(&metadata)?;
        let client = self.client_identity(&metadata, IdentityUse::Device).await?;
        let scopes = self.scopes_to_request(&metadata);
        let oauth = self
            .token_client(&metadata, &client)?
            .set_device_authorization_url(oauth2::DeviceAuthorizationUrl::from_url(endpoint));
        let mut request = oauth
            .exchange_device_code()
            .add_extra_param("resource", metadata.resource_indicator());
        if !scopes.is_empty() {
            request = request.add_scope(Scope::new(scopes.join(" ")));
        }
        let details: oauth2::StandardDeviceAuthorizationResponse = request
            .request_async(&self.token_http(None))
            .await
            .map_err(|e| token_error(e, &metadata, "device_authorization"))?;
        Ok(DeviceAuthorization {
            verification_uri: details.verification_uri().to_string(),
            verification_uri_complete: details
                .verification_uri_complete()
                .map(|u| u.secret().clone()),
            user_code: details.user_code().secret().clone(),
            expires_in: details.expires_in(),
            details,
            client,
            metadata,
            scopes,
        })
    }

    /// Polls the token endpoint (at the server's interval, slowing down when told) until the
    /// user approved the device authorization, refused it, or its codes expired; stores the
    /// tokens.
    pub async fn complete_device_authorization(
        &self,
        device: &DeviceAuthorization,
    ) -> Result<TokenSet, AuthError> {
        let key = self.dpop_key_for(&device.metadata)?;
        let oauth = self.token_client(&device.metadata, &device.client)?;
        let response = oauth
            .exchange_device_access_token(&device.details)
            .add_extra_param("resource", device.metadata.resource_indicator())
            .request_async(
                &self.token_http(key.as_ref()),
                tokio::time::sleep,
                Some(device.expires_in),
            )
            .await
            .map_err(|e| token_error(e, &device.metadata, "device_code"))?;
        let tokens = token_set(&response, &device.scopes, None);
        let tokens = check_binding(tokens, key.as_ref(), &device.metadata)?;
        let _guard = self.refresh_lock.lock().await;
        self.keep_under_entry_lock(tokens.clone(), Some(device.client.clone()))
            .await?;
        Ok(tokens)
    }
}
