//! `mcph`: the command-line face of the MCP client library.
//!
//! Parses the command line, resolves the configuration, starts the servers, runs one command,
//! shuts the servers down and maps the outcome to a documented exit code (see
//! [`cli::EXIT_CODES`]). Failures are one `error:` line, the agent-facing sentence (`agent:`,
//! for failures of a tool, prompt or server) and one `hint:` line on stderr — never a panic
//! message or a backtrace.

mod args;
mod cli;
mod commands;
mod config_source;
mod errors;
mod output;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use mcp_client::{ClientOptions, McpClient};
use mcp_core::types::Implementation;

use crate::cli::{AuthCommand, Cli, Command};
use crate::config_source::{Source, FIXTURE_SUBCOMMAND};
use crate::errors::{CliError, EXIT_FAILURE, EXIT_OK};

fn main() -> ExitCode {
    let mut raw = std::env::args();
    let _program = raw.next();
    if raw.next().as_deref() == Some(FIXTURE_SUBCOMMAND) {
        // The built-in fixture server: exit right away when it is done (as its own binary does).
        std::process::exit(config_source::run_fixture_server(raw.collect()));
    }
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Usage errors (exit 2), or --help / --version (exit 0).
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    if cli.verbose {
        init_logging();
    }
    let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&cli)))
        .unwrap_or(EXIT_FAILURE);
    ExitCode::from(code)
}

/// Prints a panic as one `error:` line plus a hint, without a backtrace.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("unknown cause");
        let location = info
            .location()
            .map(|l| format!(" (at {}:{})", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "error: internal error: {}{location}",
            errors::first_line(message)
        );
        eprintln!("hint: this is a bug in mcph; please report it with the command you ran");
    }));
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("debug"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Runs the command on a current-thread runtime and reports its failure; returns the exit code.
fn run(cli: &Cli) -> u8 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return report(&CliError::Other(format!(
                "cannot start the async runtime: {e}"
            )))
        }
    };
    let outcome = runtime.block_on(execute(cli));
    // Dropping the runtime drops every task left, which kills any server process group still
    // running (e.g. after an interrupted start). Bounded: a blocking read of stdin (`mcph
    // serve` on stdio) cannot be interrupted, and must not hold the exit until a key is hit.
    runtime.shutdown_timeout(Duration::from_secs(2));
    match outcome {
        Ok(()) => EXIT_OK,
        Err(e) => report(&e),
    }
}

fn report(error: &CliError) -> u8 {
    eprintln!("error: {}", error.message());
    if let Some(agent) = error.agent_message() {
        eprintln!("agent: {agent}");
    }
    eprintln!("hint: {}", error.hint());
    error.exit_code()
}

async fn execute(cli: &Cli) -> Result<(), CliError> {
    // Polled first in every select below, so SIGINT is handled (not fatal) before any server
    // process exists.
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);

    let cwd = std::env::current_dir()
        .map_err(|e| CliError::Other(format!("cannot read the current directory: {e}")))?;
    let (config, source) = config_source::resolve(cli.config.as_deref(), &cwd)?;
    if source == Source::Embedded && !cli.json {
        eprintln!("note: no config found; using the built-in fixture server (see --config)");
    }
    tracing::debug!(
        ?source,
        servers = config.servers.len(),
        "configuration resolved"
    );

    if let Command::Bridge {
        grpc,
        server,
        token_env,
        max_message_size,
        max_calls,
        tls_cert,
        tls_key,
    } = &cli.command
    {
        // The bridge serves one server until Ctrl-C; no client is started.
        let options = commands::bridge::Options {
            address: *grpc,
            server: server.clone(),
            token_env: token_env.clone(),
            max_message_size: *max_message_size,
            max_calls: *max_calls,
            tls_cert: tls_cert.clone(),
            tls_key: tls_key.clone(),
        };
        return commands::bridge::grpc(&config, options, cli.json, &mut ctrl_c).await;
    }

    if let Command::Auth { command } = &cli.command {
        // Logins work on the configuration and the store; no server is started.
        return tokio::select! {
            biased;
            _ = &mut ctrl_c => Err(CliError::Interrupted),
            outcome = auth(&config, command, cli.json) => outcome,
        };
    }

    let options = ClientOptions {
        client_info: Implementation::new("mcph", env!("CARGO_PKG_VERSION")),
        shutdown_timeout: Duration::from_secs(3),
    };
    let stores = commands::auth::stores(&config)?;
    commands::auth::note_store_fallback(&stores.oauth, &config, cli.json);
    // `mcph serve` passes the servers' requests (sampling, elicitation, roots) and logs to its
    // downstream clients.
    let relay = mcp_gateway::Relay::new();
    let client = tokio::select! {
        biased;
        _ = &mut ctrl_c => return Err(CliError::Interrupted),
        client = {
            let mut builder = McpClient::builder(config)
                .options(options)
                .oauth(stores.oauth)
                .fleet(stores.fleet);
            if matches!(cli.command, Command::Serve { .. }) {
                let handlers = relay.clone();
                builder = builder.handler_per_server(move |server| handlers.handler_for(server));
            }
            if let Some(region) = &cli.region {
                builder = builder.region(region.clone());
            }
            builder.start()
        } => client,
    };

    let outcome = tokio::select! {
        biased;
        _ = &mut ctrl_c => Err(CliError::Interrupted),
        outcome = dispatch(&client, cli, &relay) => outcome,
    };
    // Ctrl-C is how a live view (`watch`, `tools --watch`, `stats`) is meant to end.
    let outcome = match outcome {
        Err(CliError::Interrupted) if is_live(&cli.command) => Ok(()),
        outcome => outcome,
    };

    // Graceful shutdown; a second Ctrl-C skips it (the process groups are killed on drop).
    tokio::select! {
        biased;
        _ = tokio::signal::ctrl_c() => {}
        () = client.shutdown() => {}
    }
    outcome
}

/// Commands that run until Ctrl-C.
fn is_live(command: &Command) -> bool {
    matches!(
        command,
        Command::Watch { count: None, .. }
            | Command::Tools {
                watch: true,
                count: None,
                ..
            }
            | Command::Stats { once: false, .. }
            | Command::Serve { .. }
    )
}

async fn auth(
    config: &mcp_client::ClientConfig,
    command: &AuthCommand,
    json: bool,
) -> Result<(), CliError> {
    match command {
        AuthCommand::Login {
            server,
            no_browser,
            device,
            timeout,
        } => {
            let how = commands::auth::LoginMethod::from_flags(*no_browser, *device);
            commands::auth::login(config, server, how, Duration::from_secs(*timeout), json).await
        }
        AuthCommand::Status => commands::auth::status(config, json).await,
        AuthCommand::Logout { server } => commands::auth::logout(config, server, json).await,
        AuthCommand::StoreKey => commands::auth::store_key(json),
    }
}

async fn dispatch(
    client: &McpClient,
    cli: &Cli,
    relay: &mcp_gateway::Relay,
) -> Result<(), CliError> {
    let json = cli.json;
    match &cli.command {
        Command::Servers => commands::servers::run(client, json).await,
        Command::Tools {
            llm: Some(format), ..
        } => commands::tools::llm(client, *format),
        Command::Tools {
            server,
            watch: true,
            count,
            ..
        } => commands::tools::watch(client, server.as_deref(), *count, json).await,
        Command::Tools { server, .. } => commands::tools::run(client, server.as_deref(), json),
        Command::Call {
            name,
            arguments,
            args,
            task,
            no_wait,
            timeout,
        } => {
            let mode = commands::call::CallMode {
                task: *task,
                no_wait: *no_wait,
                timeout: *timeout,
            };
            commands::call::run(client, name, arguments.clone(), args, mode, json).await
        }
        Command::Task { command } => commands::task::run(client, command, json).await,
        Command::Resources => commands::resources::list(client, json).await,
        Command::Read { uri, server } => {
            commands::resources::read(client, uri, server.as_deref(), json).await
        }
        Command::Prompts => commands::prompts::list(client, json).await,
        Command::Watch { uri, server, count } => {
            commands::resources::watch(client, uri, server.as_deref(), *count, json).await
        }
        Command::Stats {
            once,
            call,
            json_args,
            args,
            rate,
            interval,
            warmup,
            prometheus,
            web,
        } => {
            let options = commands::stats::StatsOptions {
                call: call.as_ref().map(|name| {
                    (
                        name.clone(),
                        crate::args::tool_arguments(json_args.clone(), args),
                    )
                }),
                rate: *rate,
                interval: *interval,
                once: *once,
                warmup: *warmup,
                prometheus: *prometheus,
                web: *web,
            };
            commands::stats::run(client, options, json).await
        }
        Command::Prompt { name, args } => commands::prompts::get(client, name, args, json).await,
        Command::Serve {
            http,
            grpc,
            admin,
            token_env,
            tls_cert,
            tls_key,
            prefix,
            separator,
        } => {
            let options = commands::serve::ServeOptions {
                http: *http,
                grpc: *grpc,
                admin: *admin,
                token_env: token_env.clone(),
                tls: tls_cert.clone().zip(tls_key.clone()),
                prefixing: match prefix.as_str() {
                    "always" => mcp_gateway::Prefixing::Always,
                    _ => mcp_gateway::Prefixing::Auto,
                },
                separator: separator.clone(),
            };
            commands::serve::run(client, relay.clone(), options).await
        }
        // Handled before any server starts (see `execute`).
        Command::Auth { .. } | Command::Bridge { .. } => Ok(()),
    }
}
