//! `mcph task get|wait|cancel SERVER ID`: the tasks of the Tasks extension, by id (a task
//! `mcph call --task --no-wait` started, or one a harness left running).

use mcp_client::tasks::{Task, TaskStatus, TasksExt};
use mcp_client::McpClient;
use mcp_core::{BoxService, RequestOptions};
use serde_json::json;

use crate::cli::TaskCommand;
use crate::commands::call::print_result;
use crate::commands::require_ready;
use crate::errors::CliError;
use crate::output;

/// Runs one `mcph task` command.
pub async fn run(client: &McpClient, command: &TaskCommand, json: bool) -> Result<(), CliError> {
    match command {
        TaskCommand::Get { server, id } => {
            let task = service(client, server)?
                .get_task(id, RequestOptions::new())
                .await?;
            print_task(server, &task, json)?;
            if !json && task.status.is_terminal() {
                // What it ended with: the result's text, or the error.
                match task.into_tool_result() {
                    Ok(result) => output::print(&output::render_contents(&result.content))?,
                    Err(e) => output::print(&format!("error: {}\n", e.message()))?,
                }
            }
            Ok(())
        }
        TaskCommand::Wait {
            server,
            id,
            timeout,
        } => {
            let ended = wait(
                client,
                server,
                id,
                RequestOptions::new().with_timeout(*timeout),
            )
            .await?;
            if !json {
                output::note(&status_line(server, &ended));
            }
            match ended.status {
                TaskStatus::Completed => print_result(id, &ended.into_tool_result()?, json),
                _ => {
                    if json {
                        print_task(server, &ended, json)?;
                    }
                    Err(ended.into_tool_result().err().map_or_else(
                        || CliError::Other(format!("task {id} ended without a result")),
                        CliError::from,
                    ))
                }
            }
        }
        TaskCommand::Cancel { server, id } => {
            let service = service(client, server)?;
            service.cancel_task(id, RequestOptions::new()).await?;
            // The server may forget a cancelled task at once: its state is a bonus.
            let task = service.get_task(id, RequestOptions::new()).await.ok();
            if json {
                return output::print(&output::json(
                    &json!({"cancelRequested": true, "task": task}),
                )?);
            }
            match task {
                Some(task) => output::print(&format!(
                    "asked {server} to cancel task {id}; it is now {}\n",
                    task.status
                )),
                None => output::print(&format!("asked {server} to cancel task {id}\n")),
            }
        }
    }
}

/// Waits for the task to end through the server's call stack (its task follower polls it and
/// answers what it asks).
pub async fn wait(
    client: &McpClient,
    server: &str,
    id: &str,
    options: RequestOptions,
) -> Result<Task, CliError> {
    Ok(service(client, server)?.wait_for_task(id, options).await?)
}

/// Prints a task: one line for people, the task object with `--json`.
pub fn print_task(server: &str, task: &Task, json: bool) -> Result<(), CliError> {
    if json {
        return output::print(&output::json(task)?);
    }
    output::print(&format!("{}\n", status_line(server, task)))
}

/// `task task-1 on fixture: working (the job is running)`.
pub fn status_line(server: &str, task: &Task) -> String {
    let mut line = format!("task {} on {server}: {}", task.task_id, task.status);
    if let Some(message) = &task.status_message {
        line.push_str(&format!(" ({})", output::summary(Some(message), 120)));
    }
    line
}

fn service(client: &McpClient, server: &str) -> Result<BoxService, CliError> {
    require_ready(client, server)?;
    client.service(server).ok_or_else(|| CliError::NotFound {
        what: crate::errors::Missing::Server,
        name: server.to_owned(),
    })
}
