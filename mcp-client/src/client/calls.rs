//! Calls routed to their server: a tool by its qualified name (traced, with its outcome
//! recorded), a prompt by its qualified name.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Instant;

use mcp_core::types::{CallToolResult, GetPromptResult};
use mcp_core::{Delivery, Error, ErrorKind, McpServiceExt, Operation, Payload, RequestOptions};
use mcp_tasks::{TaskOptionsExt, ToolCallOutcome};
use serde_json::Value;
use tracing::Instrument;

use super::McpClient;

impl McpClient {
    /// Calls a tool by its qualified name (`server__tool`) with the server's tool timeout.
    // A plain function returning the call's future: an `async fn` would wrap it in one more
    // future, moved on every await.
    pub fn call_tool<'a>(
        &'a self,
        qualified_name: &'a str,
        arguments: Option<Value>,
    ) -> impl Future<Output = Result<CallToolResult, Error>> + Send + 'a {
        self.call_tool_with(qualified_name, arguments, RequestOptions::new())
    }

    /// Calls a tool by its qualified name with per-call options (progress, deadline). Without
    /// an explicit timeout the server's `tool_timeout` applies. The call is retried only when
    /// that is safe: the tool is annotated read-only or idempotent, or the failure proves the
    /// server never received it. A call a 2026-07-28 server that offers the Tasks extension
    /// runs as a task is followed to its end within the same deadline.
    pub fn call_tool_with<'a>(
        &'a self,
        qualified_name: &'a str,
        arguments: Option<Value>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<CallToolResult, Error>> + Send + 'a {
        self.traced_tool_call(qualified_name, arguments, options, |payload| {
            let result = CallToolResult::from_answer(payload, qualified_name)?;
            let is_error = result.is_error();
            Ok((result, is_error))
        })
    }

    /// Calls a tool by its qualified name, handing back the task when the server runs the call
    /// as one (Tasks extension) instead of following it: poll, wait for or cancel it through
    /// [`service`](Self::service) and [`TasksExt`](crate::tasks::TasksExt).
    pub async fn call_tool_as_task(
        &self,
        qualified_name: &str,
        arguments: Option<Value>,
        options: RequestOptions,
    ) -> Result<ToolCallOutcome, Error> {
        self.traced_tool_call(
            qualified_name,
            arguments,
            options.returning_task(),
            |payload| {
                let outcome = ToolCallOutcome::from_answer(payload, qualified_name)?;
                let is_error = outcome.is_tool_error();
                Ok((outcome, is_error))
            },
        )
        .await
    }

    /// One `tools/call` through the server's stack, in a span with the outcome recorded;
    /// `parse` reads the answer and says whether it is a tool error.
    async fn traced_tool_call<T>(
        &self,
        qualified_name: &str,
        arguments: Option<Value>,
        options: RequestOptions,
        parse: impl FnOnce(Payload) -> Result<(T, bool), Error>,
    ) -> Result<T, Error> {
        // Borrowed from the catalog snapshot (held for the call): a definition can be large.
        let catalog = self.tools();
        let entry = catalog.get(qualified_name).ok_or_else(|| {
            Error::new(
                ErrorKind::ToolNotFound,
                format!("no tool named {qualified_name:?} in the catalog"),
            )
            .with_subject(qualified_name)
            .with_delivery(Delivery::NotSent)
        })?;
        let server = self.inner.catalog_server(&entry.server)?;
        // Found without listing: the tool catalog served it.
        server.metrics.cache(mcp_metrics::CacheKind::Tools, true);
        let operation = Operation::call_tool(&entry.tool.name, arguments)
            .with_idempotent(entry.tool.is_replay_safe())
            .with_options(options);
        let span = tracing::info_span!(
            "mcp.client.operation",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = %entry.tool.name,
            mcp.server.name = %entry.server,
            network.transport = server.network_transport(),
            mcp.outcome = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        // The clock only for the event that reports the duration, when it may be recorded: INFO
        // on for a subscriber, or no subscriber yet (tracing's `log` feature then forwards it).
        let started = (tracing::level_enabled!(tracing::Level::INFO)
            || !tracing::dispatcher::has_been_set())
        .then(Instant::now);
        // Started inside the span (the stack's first steps, a breaker's admission among them,
        // log there), then awaited in it.
        let result = span
            .in_scope(|| server.stack.calls.call_in_place(operation))
            .instrument(span.clone())
            .await
            .and_then(parse)
            .map_err(|e| e.with_subject(qualified_name));
        let outcome = match &result {
            Ok((_, true)) => "tool_error",
            Ok(_) => "success",
            Err(e) if e.kind() == ErrorKind::Timeout => "timeout",
            Err(_) => "error",
        };
        span.record("mcp.outcome", outcome);
        match &result {
            Ok((_, true)) => {
                span.record("error.type", "tool_error");
            }
            Err(e) => {
                span.record("error.type", e.kind().as_str());
            }
            Ok(_) => {}
        }
        if let Some(started) = started {
            let _entered = span.enter();
            tracing::info!(
                duration_ms = started.elapsed().as_secs_f64() * 1000.0,
                outcome,
                "tool call finished"
            );
        }
        result.map(|(value, _)| value)
    }

    /// Gets a prompt by qualified name.
    pub async fn get_prompt(
        &self,
        qualified_name: &str,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, Error> {
        let prompts = self.prompts().await.items;
        let entry = prompts.get(qualified_name).ok_or_else(|| {
            Error::new(
                ErrorKind::ToolNotFound,
                format!("no prompt named {qualified_name:?}"),
            )
            .with_subject(qualified_name)
            .with_delivery(Delivery::NotSent)
        })?;
        let server = self.inner.catalog_server(&entry.server)?;
        server
            .stack
            .calls
            .get_prompt(&entry.prompt.name, arguments, RequestOptions::new())
            .await
            .map_err(|e| e.with_subject(qualified_name))
    }
}
