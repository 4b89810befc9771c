//! `--conformance-content`: what the official MCP conformance suite's **server** scenarios
//! (`@modelcontextprotocol/conformance`, `conformance server --url …`) call, under the names
//! they call — next to the fixture's own tools, resources and prompts, never instead of them.
//!
//! - Tools ([`TOOL_NAMES`], `tools.rs`): one per content type (`test_simple_text`,
//!   `test_image_content`, `test_audio_content`, `test_embedded_resource`,
//!   `test_multiple_content_types`), `test_error_handling` (an `isError` result),
//!   `test_tool_with_logging` (three `info` log messages, 50 ms apart),
//!   `test_tool_with_progress` (progress 0, 50, 100 of 100), the tools that ask the client
//!   (`test_sampling`, `test_elicitation`, `test_elicitation_sep1034_defaults`,
//!   `test_elicitation_sep1330_enums`; see [`asks_client`]), `json_schema_2020_12_tool` (a
//!   JSON Schema 2020-12 input schema) and `test_reconnection` (answered after 100 ms; the HTTP
//!   transport closes its stream after the priming event, see [`RECONNECTION_TOOL`]).
//! - The 2026-07-28 input-required results (SEP-2322, `input_required.rs`): the
//!   `test_input_required_result_*` tools and prompt answer `resultType: "input_required"`
//!   with `inputRequests` (and an integrity-protected `requestState`) until the retried request
//!   carries the `inputResponses` they asked for.
//! - Resources (`resources.rs`): `test://static-text`, `test://static-binary`,
//!   `test://watched-resource` (subscribable) and the template `test://template/{id}/data`.
//! - Prompts (`prompts.rs`): `test_simple_prompt`, `test_prompt_with_arguments` (with
//!   completions for `arg1`), `test_prompt_with_embedded_resource`, `test_prompt_with_image`.
//!
//! The texts are the ones the scenarios describe. Everything here answers from its arguments
//! alone except the tools that ask the client, log or report progress.

mod input_required;
mod media;
mod prompts;
mod resources;
#[cfg(test)]
mod tests;
mod tools;

pub(crate) use prompts::{complete as complete_prompt, get as get_prompt, list as prompt_list};
pub(crate) use resources::{
    is_subscribable, list as resource_list, read as read_resource, templates as resource_templates,
};
pub(crate) use tools::{call as call_tool, list as tool_list};

/// The conformance tools, in `tools/list` order.
pub const TOOL_NAMES: &[&str] = &[
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_error_handling",
    "test_tool_with_progress",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    RECONNECTION_TOOL,
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
];

/// The conformance prompts, in `prompts/list` order.
pub const PROMPT_NAMES: &[&str] = &[
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
    "test_input_required_result_prompt",
];

/// The tool whose Streamable HTTP stream the transport closes right after the priming event
/// (with a `retry` hint), so that the client must resume it with `Last-Event-ID` to get the
/// result (SEP-1699, the `server-sse-polling` scenario).
pub const RECONNECTION_TOOL: &str = "test_reconnection";

/// Whether `name` is a conformance tool.
pub fn is_tool(name: &str) -> bool {
    TOOL_NAMES.contains(&name)
}

/// Whether calling the tool `name` sends the client a request (`sampling/createMessage`,
/// `elicitation/create`, `roots/list`) before it answers: the fixture's `ask_*` tools and the
/// conformance tools that ask. A transport that routes server→client requests to the stream of
/// the call that made them uses this.
pub fn asks_client(name: &str) -> bool {
    name.starts_with("ask_")
        || matches!(
            name,
            "test_sampling"
                | "test_elicitation"
                | "test_elicitation_sep1034_defaults"
                | "test_elicitation_sep1330_enums"
        )
}
