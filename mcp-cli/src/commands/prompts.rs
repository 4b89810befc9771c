//! `mcph prompts` and `mcph prompt SERVER__PROMPT [--arg KEY=VALUE]...`.

use mcp_client::McpClient;
use mcp_core::types::Role;
use serde_json::{json, Value};

use crate::args::prompt_arguments;
use crate::commands::{missing_entry, warn_gather_errors, warn_unavailable};
use crate::errors::{CliError, Missing};
use crate::output::{self, Table};

/// Lists the prompts of every ready server.
pub async fn list(client: &McpClient, json: bool) -> Result<(), CliError> {
    warn_unavailable(client, "prompts");
    let gathered = client.prompts().await;
    warn_gather_errors("prompts/list", &gathered.errors);
    let prompts = gathered.items.entries();
    if json {
        let list: Vec<Value> = prompts
            .iter()
            .map(|p| json!({"name": p.qualified_name, "server": p.server, "prompt": p.prompt}))
            .collect();
        return output::print(&output::json(&list)?);
    }
    if prompts.is_empty() {
        eprintln!("no prompts available");
        return Ok(());
    }
    let mut table = Table::new(&["NAME", "ARGUMENTS", "DESCRIPTION"]);
    for p in prompts {
        let arguments: Vec<String> = p
            .prompt
            .arguments
            .iter()
            .flatten()
            .map(|a| {
                if a.required == Some(true) {
                    a.name.clone()
                } else {
                    format!("[{}]", a.name)
                }
            })
            .collect();
        let arguments = if arguments.is_empty() {
            "-".to_owned()
        } else {
            arguments.join(" ")
        };
        table.row(vec![
            p.qualified_name.clone(),
            arguments,
            output::summary(p.prompt.description.as_deref(), 80),
        ]);
    }
    output::print(&table.render())
}

/// Gets one prompt and prints its messages.
pub async fn get(
    client: &McpClient,
    name: &str,
    pairs: &[(String, String)],
    json: bool,
) -> Result<(), CliError> {
    let gathered = client.prompts().await;
    if gathered.items.get(name).is_none() {
        return Err(missing_entry(client, name, Missing::Prompt));
    }
    let result = client.get_prompt(name, prompt_arguments(pairs)).await?;
    if json {
        return output::print(&output::json(&result)?);
    }
    let mut text = String::new();
    if let Some(description) = &result.description {
        text.push_str(&format!("# {}\n\n", description.trim()));
    }
    for (i, message) in result.messages.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        text.push_str(&format!("[{role}]\n"));
        text.push_str(&output::render_content(&message.content));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    output::print(&text)
}
