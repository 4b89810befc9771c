//! Running one handler to its answer ([`Run`], [`drive`]): a panic becomes an error answer (an
//! `isError` result for a tool), the server counts what runs and what was cancelled, and in
//! the modern era a handler that asks the client for input is parked while the client answers
//! (`input_required`) and resumed by the request that brings the answer.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;

use futures_util::future::CatchUnwind;
use futures_util::FutureExt;
use mcp_core::jsonrpc::{ErrorObject, Payload, RequestId};
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use crate::context::{CallState, InputWait};
use crate::error::{tool_error_result, ToolError};
use crate::tool::Started;

/// What kind of handler runs, and its name: how its failures are answered, and how errors
/// name it.
#[derive(Clone)]
pub(crate) struct Handled {
    kind: HandlerKind,
    name: Arc<str>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum HandlerKind {
    Tool,
    Resource,
    Prompt,
    /// A method the server's builder added.
    Method,
}

impl Handled {
    pub(crate) fn tool(name: Arc<str>) -> Handled {
        Handled {
            kind: HandlerKind::Tool,
            name,
        }
    }

    pub(crate) fn resource(uri: &str) -> Handled {
        Handled {
            kind: HandlerKind::Resource,
            name: Arc::from(uri),
        }
    }

    pub(crate) fn prompt(name: Arc<str>) -> Handled {
        Handled {
            kind: HandlerKind::Prompt,
            name,
        }
    }

    pub(crate) fn method(method: &str) -> Handled {
        Handled {
            kind: HandlerKind::Method,
            name: Arc::from(method),
        }
    }

    /// The method the call answers.
    pub(crate) fn answered_method(&self) -> &str {
        match self.kind {
            HandlerKind::Tool => mcp_core::types::methods::TOOLS_CALL,
            HandlerKind::Resource => mcp_core::types::methods::RESOURCES_READ,
            HandlerKind::Prompt => mcp_core::types::methods::PROMPTS_GET,
            HandlerKind::Method => &self.name,
        }
    }

    /// The name the call was made with.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The answer to a handler's outcome: a tool's failure and a tool's panic are results the
    /// model reads; anything else that failed is a JSON-RPC error.
    pub(crate) fn answer(
        &self,
        outcome: std::thread::Result<Result<Payload, ToolError>>,
    ) -> Result<Payload, ErrorObject> {
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) if self.kind == HandlerKind::Tool => {
                error.into_tool_outcome().map(Payload::Value)
            }
            Ok(Err(error)) => Err(error.into_error_object()),
            Err(panic) => {
                let message = format!("{self} panicked: {}", panic_message(&*panic));
                tracing::warn!(handler = %self, "{message}");
                match self.kind {
                    HandlerKind::Tool => Ok(Payload::Value(tool_error_result(message))),
                    _ => Err(ErrorObject::internal(message)),
                }
            }
        }
    }
}

impl fmt::Display for Handled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            HandlerKind::Tool => "tool",
            HandlerKind::Resource => "resource",
            HandlerKind::Prompt => "prompt",
            HandlerKind::Method => "method",
        };
        write!(f, "{kind} `{}`", self.name)
    }
}

impl fmt::Debug for Handled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    if let Some(text) = panic.downcast_ref::<&str>() {
        text
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text
    } else {
        "(no message)"
    }
}

/// One running handler. Counted by the server while it exists; dropped before it finishes
/// (the client cancelled, the caller gave up), it cancels the call's token first, so work the
/// handler handed elsewhere stops too.
pub(crate) struct Run {
    future: CatchUnwind<AssertUnwindSafe<Started>>,
    pub(crate) state: Arc<CallState>,
    /// The connection's count of queued messages when this run (or round) started.
    queued_before: u64,
    finished: bool,
    /// Whether dropping it unfinished is a cancellation by the client (not when the
    /// connection ended or an unanswered question expired).
    counts_as_cancelled: bool,
}

impl Run {
    pub(crate) fn new(state: Arc<CallState>, outcome: Started) -> Run {
        state
            .connection
            .server
            .stats
            .running_calls
            .fetch_add(1, Ordering::Relaxed);
        let queued_before = state.connection.queued();
        Run {
            future: AssertUnwindSafe(outcome).catch_unwind(),
            state,
            queued_before,
            finished: false,
            counts_as_cancelled: true,
        }
    }

    /// Drops the run without counting a cancellation by the client.
    pub(crate) fn discard(mut self) {
        self.counts_as_cancelled = false;
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let stats = &self.state.connection.server.stats;
        stats.running_calls.fetch_sub(1, Ordering::Relaxed);
        if !self.finished {
            self.state.cancel();
            if self.counts_as_cancelled && !self.state.connection.is_ended() {
                stats.cancellations.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

enum Step {
    Done(std::thread::Result<Result<Payload, ToolError>>),
    NeedsInput(Vec<InputWait>),
}

/// A run's answer, and whether messages were queued for the client while it ran (then an
/// answer given in place waits until they have been dispatched).
pub(crate) struct Driven {
    pub(crate) answer: Result<Payload, ErrorObject>,
    pub(crate) queued_meanwhile: bool,
}

/// Runs `run` to its answer — or, when a modern handler waits for the client's input, parks
/// it and answers `input_required`.
pub(crate) async fn drive(mut run: Run) -> Driven {
    let step = std::future::poll_fn(|cx| match Pin::new(&mut run.future).poll(cx) {
        Poll::Ready(outcome) => Poll::Ready(Step::Done(outcome)),
        Poll::Pending => {
            let asked = run.state.take_input_requests();
            if asked.is_empty() {
                Poll::Pending
            } else {
                Poll::Ready(Step::NeedsInput(asked))
            }
        }
    })
    .await;
    let queued_meanwhile = run.state.connection.queued() != run.queued_before;
    let answer = match step {
        Step::Done(outcome) => {
            run.finished = true;
            run.state.handled.answer(outcome)
        }
        Step::NeedsInput(asked) => Ok(Payload::Value(park(run, asked))),
    };
    Driven {
        answer,
        queued_meanwhile,
    }
}

/// Keeps a waiting run on its connection and answers with its questions.
fn park(run: Run, asked: Vec<InputWait>) -> Value {
    let connection = run.state.connection.clone();
    let mut input_requests = Map::new();
    let mut responders = Vec::with_capacity(asked.len());
    for wait in asked {
        input_requests.insert(
            wait.key.clone(),
            json!({ "method": wait.method, "params": wait.params }),
        );
        responders.push((wait.key, wait.responder));
    }
    let request_state = connection.park(run, responders);
    json!({
        "resultType": "input_required",
        "inputRequests": input_requests,
        "requestState": request_state,
    })
}

/// A parked run, waiting for the request that brings the client's answers.
pub(crate) struct Parked {
    pub(crate) run: Run,
    pub(crate) responders: Vec<(String, oneshot::Sender<Result<Value, ErrorObject>>)>,
}

impl Parked {
    /// Hands the client's answers to the waiting handler and continues it in request `id`.
    pub(crate) fn resume(
        self,
        name: &str,
        mut responses: Map<String, Value>,
        id: RequestId,
        progress_token: Option<RequestId>,
    ) -> Result<Run, ErrorObject> {
        if self.run.state.handled.name() != name {
            let expected = self.run.state.handled.to_string();
            self.run.discard();
            return Err(ErrorObject::invalid_params(format!(
                "requestState belongs to {expected}, not `{name}`"
            )));
        }
        for (key, responder) in self.responders {
            let answer = responses.remove(&key).ok_or_else(|| {
                ErrorObject::invalid_params(format!("inputResponses has no answer for {key:?}"))
            });
            // The handler may have stopped waiting; then nobody needs the answer.
            let _ = responder.send(answer);
        }
        let mut run = self.run;
        run.state.continue_in(id, progress_token);
        run.queued_before = run.state.connection.queued();
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_read_from_str_and_string_payloads() {
        let text: Box<dyn Any + Send> = Box::new("boom");
        assert_eq!(panic_message(&*text), "boom");
        let owned: Box<dyn Any + Send> = Box::new(String::from("bang"));
        assert_eq!(panic_message(&*owned), "bang");
        let other: Box<dyn Any + Send> = Box::new(7_u8);
        assert_eq!(panic_message(&*other), "(no message)");
    }

    #[test]
    fn a_tool_panic_is_a_tool_error_and_other_panics_are_internal_errors() {
        let tool = Handled::tool(Arc::from("explode"));
        let answer = tool
            .answer(Err(Box::new("boom")))
            .unwrap()
            .into_value()
            .unwrap();
        assert_eq!(answer["isError"], true);
        assert_eq!(
            answer["content"][0]["text"],
            "tool `explode` panicked: boom"
        );
        let prompt = Handled::prompt(Arc::from("p"));
        let error = prompt.answer(Err(Box::new("boom"))).unwrap_err();
        assert_eq!(error.code, mcp_core::jsonrpc::codes::INTERNAL_ERROR);
        let failed = tool.answer(Ok(Err(ToolError::failed("no luck"))));
        assert_eq!(failed.unwrap().into_value().unwrap()["isError"], true);
    }
}
