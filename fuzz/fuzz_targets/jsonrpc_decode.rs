//! JSON-RPC message decode (mcp-core `jsonrpc.rs`, the hand-written message visitor) and the
//! typed payloads of `mcp_core::types` (the `Content` and `CallToolResult` visitors among
//! them): a message's params or result, read as every MCP type, round-trips; a line that is
//! not a message gets an error that says why.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_core::types::*;
use mcp_core::Message;
use mcp_fuzz::check_round_trip;

/// Reads `json` as each of these types and checks the round trip of those it reads as.
macro_rules! every_type {
    ($json:expr, $($ty:ty),+ $(,)?) => {
        $( check_round_trip::<$ty>($json, stringify!($ty)); )+
    };
}

fn check_payload(json: &str) {
    every_type!(
        json,
        InitializeRequestParams,
        InitializeResult,
        ServerCapabilities,
        ClientCapabilities,
        Implementation,
        DiscoverResult,
        InputRequiredResult,
        InputRequest,
        ListenRequestParams,
        CacheHints,
        UnsupportedVersionData,
        CancelledNotificationParams,
        LoggingMessageNotificationParams,
        ProgressNotificationParams,
        ResourceUpdatedNotificationParams,
        ListPromptsResult,
        GetPromptRequestParams,
        GetPromptResult,
        PromptMessage,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ReadResourceRequestParams,
        ReadResourceResult,
        ResourceContents,
        SubscribeRequestParams,
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ListRootsResult,
        ListToolsResult,
        Tool,
        CallToolRequestParams,
        CallToolResult,
        Content,
        CompleteRequestParams,
        CompleteResult,
        PaginatedRequestParams,
        SetLevelRequestParams,
        EmptyResult,
    );
}

fuzz_target!(|data: &[u8]| {
    let message = match Message::from_slice(data) {
        Ok(message) => message,
        Err(e) => {
            assert!(!e.reason().is_empty(), "an error without a reason");
            return;
        }
    };
    let payload = match &message {
        Message::Request(r) => r.params.as_ref(),
        Message::Notification(n) => n.params.as_ref(),
        Message::Response(r) => r.outcome.as_ref().ok(),
    };
    if let Some(payload) = payload {
        let json = payload.to_json_string();
        check_payload(&json);
        // Reading a payload borrowed and owned agrees.
        let borrowed = payload.deserialize::<serde_json::Value>();
        let owned = payload.clone().into_typed::<serde_json::Value>();
        assert_eq!(
            borrowed.ok(),
            owned.ok(),
            "deserialize and into_typed disagree"
        );
    }
    if let Message::Response(r) = &message {
        if let Err(error) = &r.outcome {
            let json = serde_json::to_string(error).expect("an error object is JSON");
            check_round_trip::<mcp_core::ErrorObject>(&json, "ErrorObject");
        }
    }
});
