//! A scripted service for the tests: answers each operation from a script, after an optional
//! delay (on tokio's clock), and keeps what it was given.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::{Error, ErrorKind, McpService, Operation, Payload, RequestOptions};
use serde_json::json;

/// One scripted answer.
pub enum Step {
    /// Answer with this.
    Answer(Result<Payload, Error>),
    /// Answer with this after the delay.
    After(Duration, Result<Payload, Error>),
    /// Never answer.
    Hang,
}

type Script = dyn Fn(&Operation) -> Step + Send + Sync;

/// Answers from its script; clones share what was seen.
#[derive(Clone)]
pub struct Scripted {
    script: Arc<Script>,
    seen: Arc<Mutex<Vec<RequestOptions>>>,
}

impl Scripted {
    pub fn new(script: impl Fn(&Operation) -> Step + Send + Sync + 'static) -> Scripted {
        Scripted {
            script: Arc::new(script),
            seen: Arc::default(),
        }
    }

    /// Answers every call with an empty tool result.
    pub fn ok() -> Scripted {
        Scripted::new(|_| Step::Answer(Ok(tool_result())))
    }

    /// The options of every call, in order.
    pub fn seen(&self) -> Vec<RequestOptions> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl McpService for Scripted {
    async fn call(&self, operation: Operation) -> Result<Payload, Error> {
        self.seen.lock().unwrap().push(operation.options.clone());
        match (self.script)(&operation) {
            Step::Answer(result) => result,
            Step::After(delay, result) => {
                tokio::time::sleep(delay).await;
                result
            }
            Step::Hang => std::future::pending().await,
        }
    }
}

pub fn tool_result() -> Payload {
    Payload::Value(json!({"content": [{"type": "text", "text": "ok"}]}))
}

pub fn error(kind: ErrorKind) -> Error {
    Error::new(kind, format!("scripted {kind}"))
}

pub fn tool_call(tool: &str) -> Operation {
    Operation::new("tools/call", Some(Payload::Value(json!({"name": tool})))).with_subject(tool)
}
