//! `mcph auth login|status|logout`: OAuth logins kept in the OS credential store, through the
//! same [`OAuthPolicy`] the facade uses, so a login here is what every later command (and any
//! harness on the library) finds.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_client::config::{ClientConfig, ServerConfig};
use mcp_client::mcp_auth::login::{has_display, LoopbackLogin, Presenter};
use mcp_client::mcp_auth::{AuthError, Authorizer, OAuthClient};
use mcp_client::mcp_fleet::{Fleet, StoreKeyMaterial};
use mcp_client::OAuthPolicy;
use serde_json::{json, Value};

use crate::errors::{CliError, Missing};

/// Where every mcph command keeps its state: the fleet's store when the configuration's
/// `store` (or `MCPH_STORE`) names one, else the OS credential store (or memory, with a note).
pub struct Stores {
    /// How servers that use OAuth are authorized, and where their tokens live.
    pub oauth: OAuthPolicy,
    /// The fleet's shared store, when there is one.
    pub fleet: Option<Arc<Fleet>>,
}

/// The [`Stores`] of `config`; a store that is named but cannot be used (no key, a bad URL) is
/// an error — mcph never falls back to another store, which would split the logins.
pub fn stores(config: &ClientConfig) -> Result<Stores, CliError> {
    let fleet = mcp_client::fleet::open(config).map_err(CliError::Other)?;
    let oauth = match &fleet {
        Some(fleet) => OAuthPolicy::default().with_store(fleet.token_store()),
        None => OAuthPolicy::default(),
    };
    Ok(Stores { oauth, fleet })
}

/// The policy every mcph command uses ([`stores`]).
pub fn policy(config: &ClientConfig) -> Result<OAuthPolicy, CliError> {
    Ok(stores(config)?.oauth)
}

/// `mcph auth store-key`: a new random key for a fleet store, to put in `MCPH_STORE_KEY` on
/// every replica (printed once, to stdout only).
pub fn store_key(json: bool) -> Result<(), CliError> {
    let key = StoreKeyMaterial::generate().map_err(|e| CliError::Other(e.to_string()))?;
    let encoded = key.to_base64();
    if json {
        return crate::output::print(&crate::output::json(&json!({ "key": encoded.expose() }))?);
    }
    println!("{}", encoded.expose());
    Ok(())
}

/// Prints, once, that tokens live in memory only, when the OS credential store is not
/// reachable and some server uses OAuth.
pub fn note_store_fallback(policy: &OAuthPolicy, config: &ClientConfig, json: bool) {
    let uses_oauth = config
        .enabled_servers()
        .any(|s| matches!(mcp_client::auth::oauth_config(s), Ok(Some(_))));
    if !uses_oauth || json {
        return;
    }
    if let Some(reason) = policy.store_fallback_reason() {
        tracing::debug!("no OS credential store: {reason}");
        eprintln!(
            "note: no OS credential store is reachable (Secret Service, keyutils); OAuth tokens \
             are kept in memory for this process only, nothing is written to disk (-v says why)"
        );
    }
}

fn server<'a>(config: &'a ClientConfig, name: &str) -> Result<&'a ServerConfig, CliError> {
    config.server(name).ok_or_else(|| CliError::NotFound {
        what: Missing::Server,
        name: name.to_owned(),
    })
}

fn client(policy: &OAuthPolicy, server: &ServerConfig) -> Result<OAuthClient, CliError> {
    policy
        .client_for(server)
        .map_err(CliError::Other)?
        .ok_or_else(|| {
            CliError::Other(format!(
                "server \"{}\" does not use OAuth (a stdio server without `oauth.resource`, or \
                 a remote server with its own Authorization header or `oauth: false`)",
                server.name
            ))
        })
}

/// How `mcph auth login` lets the user authorize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginMethod {
    /// A browser where there is a display, else the device grant where the server offers it,
    /// else a printed URL.
    Auto,
    /// Print the URL (`--no-browser`).
    PrintUrl,
    /// The device authorization grant (`--device`).
    Device,
}

impl LoginMethod {
    /// From the command-line flags.
    pub fn from_flags(no_browser: bool, device: bool) -> LoginMethod {
        match (no_browser, device) {
            (_, true) => LoginMethod::Device,
            (true, false) => LoginMethod::PrintUrl,
            (false, false) => LoginMethod::Auto,
        }
    }
}

/// `mcph auth login SERVER [--no-browser | --device] [--timeout SECS]`.
pub async fn login(
    config: &ClientConfig,
    name: &str,
    how: LoginMethod,
    timeout: Duration,
    json: bool,
) -> Result<(), CliError> {
    let policy = policy(config)?;
    note_store_fallback(&policy, config, json);
    let server = server(config, name)?;
    let client = client(&policy, server)?;
    let metadata = client.probe().await.map_err(auth_error)?;
    if metadata.is_none() {
        return Err(CliError::Other(format!(
            "server \"{name}\" answered without asking for authorization: it needs no login"
        )));
    }
    let display = has_display() && std::io::stderr().is_terminal();
    let device = match how {
        LoginMethod::Device => true,
        LoginMethod::PrintUrl => false,
        LoginMethod::Auto => {
            !display
                && client
                    .offers_device_authorization()
                    .await
                    .map_err(auth_error)?
        }
    };
    let tokens = if device {
        let pending = client
            .start_device_authorization()
            .await
            .map_err(auth_error)?;
        eprintln!(
            "To authorize, visit {} and enter the code {}",
            pending.verification_uri, pending.user_code
        );
        if let Some(complete) = &pending.verification_uri_complete {
            eprintln!("(or open {complete})");
        }
        eprintln!("Waiting for the authorization (Ctrl-C to give up)…");
        tokio::time::timeout(timeout, client.complete_device_authorization(&pending))
            .await
            .map_err(|_| {
                CliError::Other(format!(
                    "no authorization arrived within {}",
                    for_people(timeout)
                ))
            })?
            .map_err(auth_error)?
    } else {
        let show: Arc<dyn Fn(&url::Url) + Send + Sync> = Arc::new(|url| {
            eprintln!("Open this URL in a browser to authorize:\n\n  {url}\n");
            eprintln!("Waiting for the authorization (Ctrl-C to give up)…");
        });
        let login = LoopbackLogin {
            port: server.oauth.redirect_port.unwrap_or(0),
            timeout,
            presenter: if display && how == LoginMethod::Auto {
                Presenter::Browser(show)
            } else {
                Presenter::Print(show)
            },
        };
        login.authorize(&client).await.map_err(auth_error)?
    };
    let store = policy.store();
    let expires = tokens.remaining(SystemTime::now()).map(for_people);
    if json {
        crate::output::print(&crate::output::json(&json!({
            "server": name,
            "logged_in": true,
            "expires_in_sec": tokens.remaining(SystemTime::now()).map(|d| d.as_secs()),
            "scopes": tokens.scopes,
            "refreshable": tokens.refresh_token.is_some(),
            "store": store.describe(),
        }))?)?;
    } else {
        let mut details = Vec::new();
        if let Some(expires) = expires {
            details.push(format!("the token expires in {expires}"));
        }
        if !tokens.scopes.is_empty() {
            details.push(format!("scopes: {}", tokens.scopes.join(" ")));
        }
        let details = if details.is_empty() {
            String::new()
        } else {
            format!(" ({})", details.join("; "))
        };
        println!(
            "Logged in to {name}{details}; tokens kept in {}.",
            store.describe()
        );
    }
    Ok(())
}

/// `mcph auth status`: every server that uses OAuth, whether a token is stored, when it
/// expires, its scopes and whether it can be refreshed — never the token.
pub async fn status(config: &ClientConfig, json: bool) -> Result<(), CliError> {
    let policy = policy(config)?;
    note_store_fallback(&policy, config, json);
    let mut rows = Vec::new();
    for server in config.enabled_servers() {
        let Ok(Some(client)) = policy.client_for(server) else {
            continue;
        };
        let tokens = client.tokens().await.map_err(auth_error)?;
        let now = SystemTime::now();
        rows.push(match tokens {
            Some(t) => json!({
                "server": server.name,
                "logged_in": true,
                "expired": t.remaining(now).is_some_and(|d| d.is_zero()),
                "expires_in_sec": t.remaining(now).map(|d| d.as_secs()),
                "scopes": t.scopes,
                "refreshable": t.refresh_token.is_some(),
            }),
            None => json!({ "server": server.name, "logged_in": false }),
        });
    }
    let store = if rows.is_empty() {
        None
    } else {
        Some(policy.store().describe())
    };
    if json {
        return crate::output::print(&crate::output::json(
            &json!({ "store": store, "servers": rows }),
        )?);
    }
    if rows.is_empty() {
        println!("No configured server uses OAuth.");
        return Ok(());
    }
    let mut table = crate::output::Table::new(&["SERVER", "LOGIN", "EXPIRES", "SCOPES", "REFRESH"]);
    for row in &rows {
        let logged_in = row["logged_in"] == Value::Bool(true);
        let expires = match row["expires_in_sec"].as_u64() {
            _ if !logged_in => "-".to_owned(),
            Some(0) => "expired".to_owned(),
            Some(secs) => format!("in {}", for_people(Duration::from_secs(secs))),
            None => "never".to_owned(),
        };
        let scopes = row["scopes"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "-".to_owned());
        table.row(vec![
            row["server"].as_str().unwrap_or("").to_owned(),
            if logged_in { "yes" } else { "no" }.to_owned(),
            expires,
            scopes,
            match (logged_in, row["refreshable"].as_bool()) {
                (true, Some(true)) => "yes".to_owned(),
                (true, _) => "no".to_owned(),
                _ => "-".to_owned(),
            },
        ]);
    }
    print!("{}", table.render());
    if let Some(store) = store {
        println!("\nTokens are kept in {store}.");
    }
    Ok(())
}

/// `mcph auth logout SERVER`: revokes the tokens where the server supports RFC 7009, then
/// deletes them from the store.
pub async fn logout(config: &ClientConfig, name: &str, json: bool) -> Result<(), CliError> {
    let policy = policy(config)?;
    let server = server(config, name)?;
    let client = client(&policy, server)?;
    let had = client.tokens().await.map_err(auth_error)?.is_some();
    let note = client.logout().await.map_err(auth_error)?;
    if json {
        return crate::output::print(&crate::output::json(&json!({
            "server": name,
            "had_tokens": had,
            "revocation": note,
        }))?);
    }
    if had {
        println!(
            "Logged out of {name}{}; its tokens are deleted.",
            note.map(|n| format!(" ({n})")).unwrap_or_default()
        );
    } else {
        println!("No tokens were stored for {name}.");
    }
    Ok(())
}

/// `1h 5m`, `4m 10s`, `42s`.
fn for_people(d: Duration) -> String {
    let secs = d.as_secs();
    match (secs / 3600, secs % 3600 / 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s}s"),
        (h, m, _) => format!("{h}h {m}m"),
    }
}

fn auth_error(e: AuthError) -> CliError {
    CliError::Mcp(e.into())
}
