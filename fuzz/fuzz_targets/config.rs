//! The configuration loaders (mcp-client `config/`): Claude Desktop / Claude Code / Cursor
//! JSON, VS Code JSON(C), Codex TOML, and the format detection, with `${VAR}`,
//! `${VAR:-default}` and VS Code `${env:VAR}` expansion through a lookup. A file either reads
//! or gets an error that says what is wrong, at a line and column inside the file, and never
//! quotes what a variable expanded to. A configuration that reads prints (`Debug`) the same
//! whatever its secrets are: the values of `env` and of `headers` (the server's and each
//! endpoint's), the arguments of a stdio server and the OAuth client secret can be swapped
//! for other text without changing a byte of the output, so none of them is in it.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mcp_client::config::{
    parse_format_with_env, parse_with_env, ClientConfig, ConfigFormat, TransportConfig,
};
use mcp_fuzz::Input;

/// What every variable that is set expands to; never in an error message.
const VALUE: &str = "\u{27ea}expanded\u{27eb}";

fn lookup(name: &str) -> Option<String> {
    // Set, set but empty, or unset, decided by the name so a run is reproducible.
    match name.len() % 3 {
        0 => Some(VALUE.to_owned()),
        1 => Some(String::new()),
        _ => None,
    }
}

/// What [`with_other_secrets`] puts in place of every secret.
const OTHER: &str = "\u{27ea}other secret\u{27eb}";

/// `config` with every secret value replaced by [`OTHER`] (the number of arguments, and every
/// key, kept: `Debug` shows those).
fn with_other_secrets(config: &ClientConfig) -> ClientConfig {
    fn replace_values(map: &mut std::collections::BTreeMap<String, String>) {
        map.values_mut().for_each(|v| *v = OTHER.to_owned());
    }
    let mut other = config.clone();
    for server in &mut other.servers {
        match &mut server.transport {
            TransportConfig::Stdio { args, env, .. } => {
                args.iter_mut().for_each(|a| *a = OTHER.to_owned());
                replace_values(env);
            }
            TransportConfig::Http { headers, .. }
            | TransportConfig::Sse { headers, .. }
            | TransportConfig::Url { headers, .. }
            | TransportConfig::Remote { headers, .. } => replace_values(headers),
            TransportConfig::InProcess => {}
        }
        for endpoint in &mut server.endpoints {
            replace_values(&mut endpoint.headers);
        }
        if let Some(secret) = &mut server.oauth.client_secret {
            *secret = OTHER.to_owned();
        }
    }
    other
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let how = input.byte() % 6;
    let Ok(text) = std::str::from_utf8(input.rest()) else {
        return;
    };
    let result = match how {
        0 => parse_format_with_env(ConfigFormat::Claude, text, Path::new("mcp.json"), &lookup),
        1 => parse_format_with_env(ConfigFormat::VsCode, text, Path::new("mcp.json"), &lookup),
        2 => parse_format_with_env(ConfigFormat::Codex, text, Path::new("config.toml"), &lookup),
        3 => parse_with_env(text, Path::new("config.toml"), &lookup),
        _ => parse_with_env(text, Path::new(".mcp.json"), &lookup),
    };
    match result {
        Ok(config) => {
            // Every server came from the file: at least a name and a value each.
            assert!(config.servers.len() <= text.len() / 4 + 1);
            let shown = format!("{config:?}");
            assert_eq!(
                shown,
                format!("{:?}", with_other_secrets(&config)),
                "Debug shows a secret (env, header or argument value, or the client secret)"
            );
        }
        Err(e) => {
            assert!(!e.message().is_empty(), "an error without a message");
            let shown = e.to_string();
            if !text.contains(VALUE) {
                assert!(
                    !shown.contains(VALUE),
                    "an error quotes an expanded variable: {shown}"
                );
            }
            if let Some((line, column)) = e.position() {
                let lines = text.split('\n').count();
                assert!(
                    (1..=lines).contains(&line),
                    "line {line} of a {lines}-line file: {shown}"
                );
                let width = text
                    .split('\n')
                    .nth(line - 1)
                    .map_or(0, |l| l.chars().count());
                assert!(
                    (1..=width + 1).contains(&column),
                    "column {column} of a {width}-character line {line}: {shown}"
                );
            }
        }
    }
});
