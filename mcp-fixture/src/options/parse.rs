//! The hand-rolled command-line parser: every flag as `--flag VALUE` or `--flag=VALUE`.

use super::{CliCommand, ServerOptions};

/// Parses the command-line arguments (without the program name).
///
/// Returns a message suitable for stderr on an unknown flag or a bad value.
pub fn parse_args<I, S>(args: I) -> Result<CliCommand, String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut options = ServerOptions::default();
    let mut args = args.into_iter().map(Into::into);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args
                    .next()
                    .ok_or_else(|| format!("flag {name} needs a value")),
            }
        };
        let no_value = |name: &str| -> Result<(), String> {
            match inline {
                Some(_) => Err(format!("flag {name} takes no value")),
                None => Ok(()),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(CliCommand::Help),
            "-V" | "--version" => return Ok(CliCommand::Version),
            "--delay-ms" => options.delay_ms = number(&flag, &value(&flag)?)?,
            "--garbage-lines" => {
                no_value(&flag)?;
                options.garbage_lines = true;
            }
            "--ignore-stdin-eof" => {
                no_value(&flag)?;
                options.ignore_stdin_eof = true;
            }
            "--ignore-sigterm" => {
                no_value(&flag)?;
                options.ignore_sigterm = true;
            }
            "--stderr-noise" => options.stderr_noise = number(&flag, &value(&flag)?)?,
            "--hang-on-initialize" => {
                no_value(&flag)?;
                options.hang_on_initialize = true;
            }
            "--exit-on-start" => options.exit_on_start = Some(number(&flag, &value(&flag)?)?),
            "--refuse-start-while" => options.refuse_start_while = Some(value(&flag)?.into()),
            "--spawn-grandchild" => {
                no_value(&flag)?;
                options.spawn_grandchild = true;
            }
            "--fail-first" => options.fail_first = number(&flag, &value(&flag)?)?,
            "--page-size" => options.page_size = number(&flag, &value(&flag)?)?,
            "--protocol-version" => options.protocol_version = Some(value(&flag)?),
            "--era" => {
                let name = value(&flag)?;
                options.era = crate::modern::EraMode::parse(&name)
                    .ok_or_else(|| format!("--era must be legacy, dual or modern, not {name:?}"))?;
            }
            "--client-timeout-ms" => options.client_timeout_ms = number(&flag, &value(&flag)?)?,
            "--http" => options.http = Some(number(&flag, &value(&flag)?)?),
            "--ws" => options.ws = Some(number(&flag, &value(&flag)?)?),
            "--http-json" => {
                no_value(&flag)?;
                options.http_json = true;
            }
            "--http-no-get" => {
                no_value(&flag)?;
                options.http_no_get = true;
            }
            "--http-stateless" => {
                no_value(&flag)?;
                options.http_stateless = true;
            }
            "--http-drop-sse-after" => {
                options.http_drop_sse_after = Some(number(&flag, &value(&flag)?)?);
            }
            "--http-expire-session-after" => {
                options.http_expire_session_after = Some(number(&flag, &value(&flag)?)?);
            }
            "--http-fail-first" => options.http_fail_first = number(&flag, &value(&flag)?)?,
            "--http-delay-ms" => options.http_delay_ms = number(&flag, &value(&flag)?)?,
            "--http-stall-first" => options.http_stall_first = number(&flag, &value(&flag)?)?,
            "--http-trickle-first" => {
                options.http_trickle_first = number(&flag, &value(&flag)?)?;
            }
            "--http-endless-error-first" => {
                options.http_endless_error_first = number(&flag, &value(&flag)?)?;
            }
            "--event-log" => options.event_log = Some(value(&flag)?.into()),
            "--http-bearer" => options.http_bearer = Some(value(&flag)?),
            "--oauth" => {
                no_value(&flag)?;
                options.oauth.get_or_insert_with(Default::default);
            }
            "--oauth-device" => {
                no_value(&flag)?;
                options
                    .oauth
                    .get_or_insert_with(Default::default)
                    .device_authorization = true;
            }
            "--oauth-dpop" => {
                no_value(&flag)?;
                options.oauth.get_or_insert_with(Default::default).dpop = true;
            }
            "--oauth-dpop-nonce" => {
                no_value(&flag)?;
                let oauth = options.oauth.get_or_insert_with(Default::default);
                oauth.dpop = true;
                oauth.dpop_nonce = true;
            }
            "--oauth-dpop-optional" => {
                no_value(&flag)?;
                let oauth = options.oauth.get_or_insert_with(Default::default);
                oauth.dpop = true;
                oauth.dpop_optional = true;
            }
            "--oauth-dpop-split-challenges" => {
                no_value(&flag)?;
                let oauth = options.oauth.get_or_insert_with(Default::default);
                oauth.dpop = true;
                oauth.dpop_split_challenges = true;
            }
            "--oauth-dpop-refuse-proofs" => {
                no_value(&flag)?;
                let oauth = options.oauth.get_or_insert_with(Default::default);
                oauth.dpop = true;
                oauth.dpop_refuse_proofs = true;
            }
            "--oauth-token-ttl" => {
                let ttl = number(&flag, &value(&flag)?)?;
                options
                    .oauth
                    .get_or_insert_with(Default::default)
                    .token_ttl_secs = ttl;
            }
            "--oauth-required-scope" => {
                let scope = value(&flag)?;
                options
                    .oauth
                    .get_or_insert_with(Default::default)
                    .required_scopes
                    .push(scope);
            }
            "--churn-every-ms" => {
                options.churn_every_ms = Some(number::<u64>(&flag, &value(&flag)?)?.max(1))
            }
            "--conformance-content" => {
                no_value(&flag)?;
                options.conformance_content = true;
            }
            "--http-control" => {
                no_value(&flag)?;
                options.http_control = true;
            }
            "--instance" => {
                let label = value(&flag)?;
                if label.is_empty() {
                    return Err(format!(
                        "flag {flag}: invalid value {label:?} (the label must not be empty)"
                    ));
                }
                options.instance = Some(label);
            }
            "--extra-tool" => {
                let name = value(&flag)?;
                check_extra_tool_name(&name)
                    .map_err(|why| format!("flag {flag}: invalid value {name:?} ({why})"))?;
                if options.extra_tools.contains(&name) {
                    return Err(format!("flag {flag}: invalid value {name:?} (given twice)"));
                }
                options.extra_tools.push(name);
            }
            other => return Err(format!("unknown argument: {other} (see --help)")),
        }
    }
    Ok(CliCommand::Run(options))
}

/// Longest name of an `--extra-tool`.
pub const MAX_EXTRA_TOOL_NAME_LEN: usize = 64;

/// Whether `name` can be an `--extra-tool`: 1 to [`MAX_EXTRA_TOOL_NAME_LEN`] characters of
/// `[A-Za-z0-9_-]`, and not the name of a built-in tool ([`crate::tools::TOOL_NAMES`],
/// [`crate::tools::DYNAMIC_TOOL`], [`crate::tools::INSTANCE_TOOL`]). The error says why not.
pub fn check_extra_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a tool name must not be empty".to_owned());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("a tool name is made of A-Z, a-z, 0-9, _ and -".to_owned());
    }
    if name.len() > MAX_EXTRA_TOOL_NAME_LEN {
        return Err(format!(
            "a tool name has at most {MAX_EXTRA_TOOL_NAME_LEN} characters"
        ));
    }
    if crate::tools::is_built_in(name) {
        return Err("a built-in tool has this name".to_owned());
    }
    Ok(())
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("flag {flag}: invalid value {value:?}"))
}
