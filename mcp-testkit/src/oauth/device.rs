//! The device authorization grant's endpoints (RFC 8628): `POST /device_authorization` hands
//! out the codes, and the verification page (`GET /device?user_code=…`) approves at once. The
//! grant itself is at the token endpoint.

use hyper::header::HeaderMap;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::authorize::CODE_LIFETIME;
use super::form::{param, parse_form};
use super::{AuthServer, OAuthError, DEVICE_AUTHORIZATION_PATH, DEVICE_VERIFY_PATH};
use crate::http::{lock, random_hex};

/// A device authorization waiting for (or approved by) its user.
pub(super) struct Device {
    pub(super) client_id: String,
    pub(super) user_code: String,
    pub(super) scopes: Vec<String>,
    pub(super) resource: Option<String>,
    pub(super) approved: bool,
    pub(super) expires: Instant,
}

impl AuthServer {
    /// RFC 8628 §3.2: a device code, a user code and where the user goes.
    pub(super) fn device_authorization(
        &self,
        headers: &HeaderMap,
        form: &[(String, String)],
    ) -> Result<Value, OAuthError> {
        let mut state = lock(&self.state);
        let client_id = self.authenticate(&mut state, headers, form, DEVICE_AUTHORIZATION_PATH)?;
        let device_code = format!("dc-{}", random_hex());
        let user_code = random_hex()[..8].to_uppercase();
        let scopes = self.grant_scopes(param(form, "scope")?.unwrap_or(""));
        let resource = param(form, "resource")?.map(str::to_owned);
        state.devices.insert(
            device_code.clone(),
            Device {
                client_id,
                user_code: user_code.clone(),
                scopes,
                resource,
                approved: false,
                expires: Instant::now() + CODE_LIFETIME,
            },
        );
        let verify = format!("{}{DEVICE_VERIFY_PATH}", self.origin);
        Ok(json!({
            "device_code": device_code,
            "user_code": user_code,
            "verification_uri": verify,
            "verification_uri_complete": format!("{verify}?user_code={user_code}"),
            "expires_in": CODE_LIFETIME.as_secs(),
            "interval": 1,
        }))
    }

    /// The verification page: approves the device authorization with this `user_code`.
    pub(super) fn approve_device(&self, query: &str) -> Result<(), OAuthError> {
        let form = parse_form(query);
        let user_code = param(&form, "user_code")?
            .ok_or_else(|| OAuthError::bad("invalid_request", "user_code is missing"))?;
        let mut state = lock(&self.state);
        let device = state
            .devices
            .values_mut()
            .find(|d| d.user_code == user_code)
            .ok_or_else(|| OAuthError::bad("invalid_request", "unknown user_code"))?;
        device.approved = true;
        state.stats.device_approvals += 1;
        Ok(())
    }
}
