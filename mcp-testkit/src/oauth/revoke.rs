//! Token revocation (`POST /revoke`, RFC 7009): the client authenticates as at the token
//! endpoint; its refresh token, or any access token, is revoked.

use hyper::header::HeaderMap;

use super::form::param;
use super::{AuthServer, OAuthError, REVOKE_PATH};
use crate::http::lock;

impl AuthServer {
    /// RFC 7009 revocation: the client authenticates; whatever the token, 200.
    pub(super) fn revoke(
        &self,
        headers: &HeaderMap,
        form: &[(String, String)],
    ) -> Result<(), OAuthError> {
        let mut state = lock(&self.state);
        let client_id = self.authenticate(&mut state, headers, form, REVOKE_PATH)?;
        let token = param(form, "token")?
            .ok_or_else(|| OAuthError::bad("invalid_request", "token is missing"))?;
        let own_refresh = state
            .refresh
            .get(token)
            .is_some_and(|g| g.client_id == client_id);
        if own_refresh {
            state.refresh.remove(token);
        }
        state.access.remove(token);
        state.stats.revocations += 1;
        Ok(())
    }
}
