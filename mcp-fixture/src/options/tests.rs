use super::*;

fn run(args: &[&str]) -> ServerOptions {
    match parse_args(args.iter().copied()) {
        Ok(CliCommand::Run(options)) => options,
        other => panic!("unexpected parse result {other:?}"),
    }
}

#[test]
fn defaults() {
    let options = run(&[]);
    assert_eq!(options, ServerOptions::default());
    assert_eq!(options.fail_first, 2);
    assert_eq!(options.page_size, 0);
}

#[test]
fn all_flags() {
    let options = run(&[
        "--delay-ms",
        "5",
        "--garbage-lines",
        "--ignore-stdin-eof",
        "--ignore-sigterm",
        "--stderr-noise=3",
        "--hang-on-initialize",
        "--exit-on-start",
        "7",
        "--spawn-grandchild",
        "--fail-first",
        "4",
        "--page-size=2",
        "--protocol-version",
        "1999-01-01",
        "--client-timeout-ms",
        "100",
        "--http",
        "127.0.0.1:0",
        "--http-json",
        "--http-no-get",
        "--http-stateless",
        "--http-drop-sse-after=1",
        "--http-expire-session-after",
        "3",
        "--http-fail-first",
        "2",
        "--http-delay-ms=9",
        "--ws=127.0.0.1:0",
    ]);
    assert_eq!(options.delay_ms, 5);
    assert!(options.garbage_lines);
    assert!(options.ignore_stdin_eof);
    assert!(options.ignore_sigterm);
    assert_eq!(options.stderr_noise, 3);
    assert!(options.hang_on_initialize);
    assert_eq!(options.exit_on_start, Some(7));
    assert!(options.spawn_grandchild);
    assert_eq!(options.fail_first, 4);
    assert_eq!(options.page_size, 2);
    assert_eq!(options.protocol_version.as_deref(), Some("1999-01-01"));
    assert_eq!(options.client_timeout_ms, 100);
    assert_eq!(options.http, Some("127.0.0.1:0".parse().expect("addr")));
    assert!(options.http_json && options.http_no_get && options.http_stateless);
    assert_eq!(options.http_drop_sse_after, Some(1));
    assert_eq!(options.http_expire_session_after, Some(3));
    assert_eq!(options.http_fail_first, 2);
    assert_eq!(options.http_delay_ms, 9);
    assert_eq!(options.ws, Some("127.0.0.1:0".parse().expect("addr")));
    assert_eq!(options.instance, None);
    assert!(options.extra_tools.is_empty());
}

#[test]
fn instance_and_extra_tools() {
    let longest = "z".repeat(MAX_EXTRA_TOOL_NAME_LEN);
    let options = run(&[
        "--instance",
        "eu west (1)",
        "--extra-tool",
        "beta",
        "--extra-tool=Alpha_2-x",
        "--extra-tool",
        longest.as_str(),
    ]);
    assert_eq!(options.instance.as_deref(), Some("eu west (1)"));
    assert_eq!(options.extra_tools, ["beta", "Alpha_2-x", longest.as_str()]);
    assert_eq!(run(&["--instance=a=b"]).instance.as_deref(), Some("a=b"));

    let refused = |args: &[&str], flag: &str, value: &str| {
        let message = parse_args(args.iter().copied()).expect_err("refused");
        assert!(message.contains(flag), "{message}");
        assert!(message.contains(&format!("{value:?}")), "{message}");
    };
    refused(&["--instance", ""], "--instance", "");
    refused(&["--instance="], "--instance", "");
    assert!(parse_args(["--instance"]).is_err());
    let long = "x".repeat(MAX_EXTRA_TOOL_NAME_LEN + 1);
    for bad in [
        "",
        "a b",
        "dots.no",
        "slash/no",
        "é",
        long.as_str(),
        "echo",
        "slow_stats",
    ] {
        refused(&["--extra-tool", bad], "--extra-tool", bad);
    }
    refused(
        &["--extra-tool=dynamic_tool"],
        "--extra-tool",
        "dynamic_tool",
    );
    refused(&["--extra-tool", "instance"], "--extra-tool", "instance");
    refused(
        &["--extra-tool", "twice", "--extra-tool", "twice"],
        "--extra-tool",
        "twice",
    );
    assert!(parse_args(["--extra-tool"]).is_err());
}

#[test]
fn oauth_flags() {
    assert_eq!(run(&["--oauth"]).oauth, Some(OAuthOptions::default()));
    let options = run(&[
        "--oauth-token-ttl=30",
        "--oauth-required-scope",
        "read",
        "--oauth-required-scope=admin",
    ]);
    let oauth = options.oauth.expect("implied by the --oauth-* flags");
    assert_eq!(oauth.token_ttl_secs, 30);
    assert_eq!(oauth.required_scopes, ["read", "admin"]);
    assert!(run(&["--oauth-device"])
        .oauth
        .is_some_and(|o| o.device_authorization));
    let dpop = run(&["--oauth-dpop"]).oauth.expect("implied");
    assert!(dpop.dpop && !dpop.dpop_nonce);
    let nonce = run(&["--oauth-dpop-nonce"]).oauth.expect("implied");
    assert!(nonce.dpop && nonce.dpop_nonce);
    let optional = run(&["--oauth-dpop-optional"]).oauth.expect("implied");
    assert!(optional.dpop && optional.dpop_optional && !optional.resource_requires_dpop());
    let faults = run(&[
        "--oauth-dpop-split-challenges",
        "--oauth-dpop-refuse-proofs",
        "--oauth-dpop-nonce",
    ])
    .oauth
    .expect("implied");
    assert!(faults.dpop_split_challenges && faults.dpop_refuse_proofs && faults.dpop_nonce);
    assert!(faults.resource_requires_dpop());
    assert!(parse_args(["--oauth-dpop-optional=yes"]).is_err());
    assert!(parse_args(["--oauth-dpop=1"]).is_err());
    assert!(parse_args(["--oauth=1"]).is_err());
    assert!(parse_args(["--oauth-token-ttl", "soon"]).is_err());
}

#[test]
fn errors_and_help() {
    assert!(parse_args(["--bogus"]).is_err());
    assert!(parse_args(["--delay-ms"]).is_err());
    assert!(parse_args(["--delay-ms", "abc"]).is_err());
    assert!(parse_args(["--garbage-lines=1"]).is_err());
    assert!(parse_args(["--http", "localhost"]).is_err());
    assert!(parse_args(["--ws", "localhost"]).is_err());
    assert_eq!(parse_args(["--help"]), Ok(CliCommand::Help));
    assert_eq!(parse_args(["-V"]), Ok(CliCommand::Version));
    for flag in [
        "--delay-ms",
        "--garbage-lines",
        "--ignore-stdin-eof",
        "--ignore-sigterm",
        "--stderr-noise",
        "--hang-on-initialize",
        "--exit-on-start",
        "--spawn-grandchild",
        "--fail-first",
        "--page-size",
        "--protocol-version",
        "--client-timeout-ms",
        "--http",
        "--ws",
        "--http-json",
        "--http-no-get",
        "--http-stateless",
        "--http-drop-sse-after",
        "--http-expire-session-after",
        "--http-fail-first",
        "--http-delay-ms",
        "--http-stall-first",
        "--http-trickle-first",
        "--http-endless-error-first",
        "--event-log",
        "--http-bearer",
        "--refuse-start-while",
        "--http-control",
        "--oauth",
        "--oauth-device",
        "--oauth-dpop",
        "--oauth-dpop-nonce",
        "--oauth-dpop-optional",
        "--oauth-dpop-split-challenges",
        "--oauth-dpop-refuse-proofs",
        "--oauth-token-ttl",
        "--oauth-required-scope",
        "--instance",
        "--extra-tool",
    ] {
        assert!(HELP.contains(flag), "help lacks {flag}");
    }
}

#[test]
fn conformance_content_flag() {
    assert!(!run(&[]).conformance_content);
    assert!(run(&["--conformance-content"]).conformance_content);
    let message = parse_args(["--conformance-content=yes"]).expect_err("takes no value");
    assert!(message.contains("--conformance-content"), "{message}");
}
