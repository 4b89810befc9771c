//! A scripted service for the tests: answers from a script (then a fallback), and records when
//! and with what every attempt arrived.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::{Delivery, Error, ErrorKind, McpService, Operation, Payload};
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

/// One scripted answer.
#[derive(Clone)]
pub enum Step {
    /// Answer with `result` after `delay`.
    Reply {
        delay: Duration,
        result: Result<Payload, Error>,
    },
    /// Never answer (until the caller gives up).
    Hang,
}

/// What one attempt looked like when it arrived.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub at: Instant,
    pub method: String,
    pub subject: Option<String>,
    pub deadline: Option<Instant>,
}

pub struct Scripted {
    script: Mutex<VecDeque<Step>>,
    fallback: Step,
    attempts: Mutex<Vec<Attempt>>,
    count: watch::Sender<usize>,
}

impl Scripted {
    /// Answers `ok()` once the script is used up.
    pub fn new() -> Arc<Scripted> {
        Scripted::with_fallback(Step::Reply {
            delay: Duration::ZERO,
            result: ok(),
        })
    }

    /// Fails every call with `error`.
    pub fn failing(error: Error) -> Arc<Scripted> {
        Scripted::with_fallback(Step::Reply {
            delay: Duration::ZERO,
            result: Err(error),
        })
    }

    pub fn with_fallback(fallback: Step) -> Arc<Scripted> {
        Arc::new(Scripted {
            script: Mutex::new(VecDeque::new()),
            fallback,
            attempts: Mutex::new(Vec::new()),
            count: watch::channel(0).0,
        })
    }

    /// Appends an immediate answer to the script.
    pub fn then(self: Arc<Self>, result: Result<Payload, Error>) -> Arc<Self> {
        self.then_step(Step::Reply {
            delay: Duration::ZERO,
            result,
        })
    }

    /// Appends an answer after `delay` to the script.
    pub fn then_after(
        self: Arc<Self>,
        delay: Duration,
        result: Result<Payload, Error>,
    ) -> Arc<Self> {
        self.then_step(Step::Reply { delay, result })
    }

    pub fn then_step(self: Arc<Self>, step: Step) -> Arc<Self> {
        self.script.lock().unwrap().push_back(step);
        self
    }

    /// Appends an immediate answer to the script (on a shared handle).
    pub fn push(&self, result: Result<Payload, Error>) {
        self.script.lock().unwrap().push_back(Step::Reply {
            delay: Duration::ZERO,
            result,
        });
    }

    pub fn attempts(&self) -> Vec<Attempt> {
        self.attempts.lock().unwrap().clone()
    }

    pub fn calls(&self) -> usize {
        self.attempts.lock().unwrap().len()
    }

    pub fn starts(&self) -> Vec<Instant> {
        self.attempts().iter().map(|a| a.at).collect()
    }

    /// The time between consecutive attempts.
    pub fn gaps(&self) -> Vec<Duration> {
        self.starts().windows(2).map(|w| w[1] - w[0]).collect()
    }

    pub fn methods(&self) -> Vec<String> {
        self.attempts().into_iter().map(|a| a.method).collect()
    }

    pub fn subjects(&self) -> Vec<Option<String>> {
        self.attempts().into_iter().map(|a| a.subject).collect()
    }

    /// Resolves once `n` attempts have arrived (an event, not a guess at timing).
    pub async fn wait_for_calls(&self, n: usize) {
        let mut rx = self.count.subscribe();
        rx.wait_for(|count| *count >= n).await.unwrap();
    }
}

#[async_trait]
impl McpService for Scripted {
    async fn call(&self, operation: Operation) -> Result<Payload, Error> {
        let step = {
            let mut attempts = self.attempts.lock().unwrap();
            attempts.push(Attempt {
                at: Instant::now(),
                method: operation.method.to_string(),
                subject: operation.subject.clone(),
                deadline: operation.options.deadline,
            });
            self.count.send_replace(attempts.len());
            self.script
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| self.fallback.clone())
        };
        match step {
            Step::Reply { delay, result } => {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                result
            }
            Step::Hang => std::future::pending().await,
        }
    }
}

/// A successful (empty) result.
pub fn ok() -> Result<Payload, Error> {
    Ok(Payload::Value(json!({})))
}

/// An error of `kind` that got as far as `delivery`.
pub fn err(kind: ErrorKind, delivery: Delivery) -> Error {
    Error::new(kind, format!("scripted {kind}")).with_delivery(delivery)
}

/// A `tools/call` of `name` (not idempotent).
pub fn tool_call(name: &str) -> Operation {
    Operation::call_tool(name, Some(json!({})))
}

/// Whole seconds as durations.
pub fn secs(values: &[u64]) -> Vec<Duration> {
    values.iter().map(|s| Duration::from_secs(*s)).collect()
}
