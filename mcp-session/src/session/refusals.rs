//! The modern era's refusals the engine answers itself: an `UnsupportedProtocolVersion`
//! refusal that names the version asked for is sent once more, and a `tools/call` refused with
//! `HeaderMismatch` re-lists the tools (which teaches the transport the tools' `x-mcp-header`
//! annotations) and is sent once more.
//!
//! Not a layer: both depend on what only the session and its transport hold — the version the
//! session asked for and the headers the transport derives from the tool list — and both
//! refusals prove the request never ran, which a retry layer above could not know.

use serde_json::json;

use mcp_core::error::{Delivery, Error};
use mcp_core::jsonrpc::Payload;
use mcp_core::types::{error_codes, methods};
use mcp_core::version::ProtocolVersion;

use super::era::{names_our_version, no_mutual_version, unsupported_data};
use super::{ClientSession, RequestOptions};

impl ClientSession {
    /// One modern request; an `UnsupportedProtocolVersion` refusal is retried once when the
    /// server lists the version asked for, and otherwise reported naming both sides' versions.
    /// A `tools/call` refused with `HeaderMismatch` (the transport did not know the tool's
    /// `x-mcp-header` annotations, or they changed) re-lists the tools, which teaches the
    /// transport, and is sent once more.
    pub(super) async fn modern_round_trip(
        &self,
        method: &str,
        params: Option<Payload>,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        let retry = params.clone();
        match self.round_trip(method, params, options.clone()).await {
            Err(e) if names_our_version(&e) => self.round_trip(method, retry, options).await,
            Err(e)
                if e.code() == Some(error_codes::HEADER_MISMATCH)
                    && method == methods::TOOLS_CALL =>
            {
                tracing::debug!(error = %e, "tools/call refused for its headers; listing the tools again");
                Box::pin(self.list_tools_again(&options)).await?;
                self.round_trip(method, retry, options).await
            }
            Err(e) if e.code() == Some(error_codes::UNSUPPORTED_PROTOCOL_VERSION) => {
                let data = unsupported_data(&e);
                Err(no_mutual_version(
                    &data.supported,
                    data.requested
                        .as_deref()
                        .unwrap_or(ProtocolVersion::V2026_07_28.as_str()),
                )
                .with_delivery(Delivery::NotSent))
            }
            other => other,
        }
    }

    /// Lists every page of tools again (which teaches the transport the tools' header
    /// annotations), through the one pagination loop: a repeated cursor or too many pages end
    /// it with a protocol error.
    async fn list_tools_again(&self, options: &RequestOptions) -> Result<(), Error> {
        use mcp_core::service::pagination::{collect_pages, DEFAULT_MAX_PAGES};
        let max_pages = options.max_pages.unwrap_or(DEFAULT_MAX_PAGES);
        collect_pages(methods::TOOLS_LIST, max_pages, |cursor| async move {
            let page = Payload::Value(match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            });
            let listed = self
                .round_trip(methods::TOOLS_LIST, Some(page), options.clone())
                .await?;
            // Only the transport's side effect matters; a page that does not parse ends it.
            let next = listed
                .deserialize::<mcp_core::types::ListToolsResult>()
                .ok()
                .and_then(|l| l.next_cursor);
            Ok((Vec::<()>::new(), next))
        })
        .await
        .map(|_| ())
    }
}
