//! The harness fields every format accepts: enabling, tool lists, timeouts, the pool, retry,
//! breaker and rate-limit settings, OAuth and the protocol era.

use super::oauth::read_oauth;
use crate::config::error::{ConfigError, ConfigErrorKind};
use crate::config::fields::{Ctx, Obj};
use crate::config::model::ServerConfig;
use crate::config::settings::{
    BreakerSettings, HarnessSettings, PoolSettings, RateLimitScope, RateLimitSettings,
    RetrySettings, DEFAULT_FAILBACK_AFTER, DEFAULT_IDLE_TIMEOUT, DEFAULT_PROBE_INTERVAL,
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT,
};

/// The harness fields every format accepts.
pub(super) fn read_extras(
    obj: &Obj<'_>,
    ctx: &Ctx<'_>,
    server: &mut ServerConfig,
) -> Result<(), ConfigError> {
    let enabled = obj.bool(ctx, "enabled")?.unwrap_or(true);
    let disabled = obj.bool(ctx, "disabled")?.unwrap_or(false);
    server.enabled = enabled && !disabled;
    let (allow, deny) = read_tool_filter(obj, ctx)?;
    server.enabled_tools = allow;
    server.disabled_tools = deny;

    let startup_sec = obj.duration(ctx, "startup_timeout_sec", 1.0)?;
    let startup_ms = obj.duration(ctx, "startup_timeout_ms", 1000.0)?;
    if startup_sec.is_some() && startup_ms.is_some() {
        return Err(ctx.error(
            ConfigErrorKind::Invalid,
            "startup_timeout_ms",
            "expected one of startup_timeout_sec and startup_timeout_ms, found both",
        ));
    }
    server.startup_timeout = startup_sec
        .or(startup_ms)
        .unwrap_or(DEFAULT_STARTUP_TIMEOUT);
    server.tool_timeout = obj
        .duration(ctx, "tool_timeout_sec", 1.0)?
        .unwrap_or(DEFAULT_TOOL_TIMEOUT);

    server.settings = HarnessSettings {
        idle_timeout: obj
            .duration(ctx, "idle_timeout_sec", 1.0)?
            .unwrap_or(DEFAULT_IDLE_TIMEOUT),
        pool: read_pool(obj, ctx)?,
        retry: read_retry(obj, ctx)?,
        breaker: read_breaker(obj, ctx)?,
        rate_limit: read_rate_limit(obj, ctx)?,
        probe_interval: obj
            .duration(ctx, "probe_interval_sec", 1.0)?
            .unwrap_or(DEFAULT_PROBE_INTERVAL),
        failback_after: obj
            .duration(ctx, "failback_after_sec", 1.0)?
            .unwrap_or(DEFAULT_FAILBACK_AFTER),
    };
    server.oauth = read_oauth(obj, ctx)?;
    server.era = read_era(obj, ctx)?;
    Ok(())
}

/// Which tools of the server are used: `"tools": { "allow": [..], "deny": [..] }`, or Codex's
/// `enabled_tools` / `disabled_tools` (one spelling per list: both is an error naming them).
fn read_tool_filter(
    obj: &Obj<'_>,
    ctx: &Ctx<'_>,
) -> Result<(Option<Vec<String>>, Vec<String>), ConfigError> {
    let enabled = obj.string_list(ctx, "enabled_tools", false)?;
    let disabled = obj.string_list(ctx, "disabled_tools", false)?;
    let Some(tools) = obj.object(ctx, "tools")? else {
        return Ok((enabled, disabled.unwrap_or_default()));
    };
    let allow = tools.string_list(ctx, "allow", false)?;
    let deny = tools.string_list(ctx, "deny", false)?;
    tools.log_unknown(ctx);
    for (nested, flat, both) in [
        (
            "tools.allow",
            "enabled_tools",
            allow.is_some() && enabled.is_some(),
        ),
        (
            "tools.deny",
            "disabled_tools",
            deny.is_some() && disabled.is_some(),
        ),
    ] {
        if both {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                flat,
                format!("expected one of {nested} and {flat}, found both"),
            ));
        }
    }
    Ok((allow.or(enabled), deny.or(disabled).unwrap_or_default()))
}

/// `era` (or `protocolEra`): `"auto"` (the default: detected per server), `"legacy"`
/// (2025-11-25 and older, the `initialize` handshake) or `"modern"` (2026-07-28).
fn read_era(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<Option<mcp_core::Era>, ConfigError> {
    let key = if obj.has("protocolEra") {
        "protocolEra"
    } else {
        "era"
    };
    match obj.string(ctx, key)?.as_deref() {
        None | Some("auto") => Ok(None),
        Some("legacy") => Ok(Some(mcp_core::Era::Legacy)),
        Some("modern") => Ok(Some(mcp_core::Era::Modern)),
        Some(other) => Err(ctx.error(
            ConfigErrorKind::Invalid,
            key,
            format!("expected \"auto\", \"legacy\" (2025-11-25 and older) or \"modern\" (2026-07-28), found {other:?}"),
        )),
    }
}

fn read_pool(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<PoolSettings, ConfigError> {
    let defaults = PoolSettings::default();
    let Some(pool) = obj.object(ctx, "pool")? else {
        return Ok(defaults);
    };
    let min = pool.u32(ctx, "min")?;
    let max = pool.u32(ctx, "max")?;
    pool.log_unknown(ctx);
    // A bound left out follows the one given, so `pool: { max: 1 }` means min 1, not an error.
    let (min, max) = match (min, max) {
        (Some(min), Some(max)) => (min, max),
        (Some(min), None) => (min, defaults.max.max(min)),
        (None, Some(max)) => (defaults.min.min(max), max),
        (None, None) => (defaults.min, defaults.max),
    };
    Ok(PoolSettings {
        min,
        max,
        configured: true,
    })
}

fn read_retry(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<RetrySettings, ConfigError> {
    let defaults = RetrySettings::default();
    let Some(retry) = obj.object(ctx, "retry")? else {
        return Ok(defaults);
    };
    let settings = RetrySettings {
        max_retries: retry
            .u32(ctx, "max_retries")?
            .unwrap_or(defaults.max_retries),
        max_wait: retry
            .duration(ctx, "max_wait_sec", 1.0)?
            .unwrap_or(defaults.max_wait),
        jitter: retry.number(ctx, "jitter")?.unwrap_or(defaults.jitter),
        configured: true,
    };
    retry.log_unknown(ctx);
    Ok(settings)
}

fn read_breaker(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<BreakerSettings, ConfigError> {
    let defaults = BreakerSettings::default();
    let Some(breaker) = obj.object(ctx, "breaker")? else {
        return Ok(defaults);
    };
    let settings = BreakerSettings {
        failure_threshold: breaker
            .u32(ctx, "failure_threshold")?
            .unwrap_or(defaults.failure_threshold),
        window: breaker
            .duration(ctx, "window_sec", 1.0)?
            .unwrap_or(defaults.window),
        cooldown: breaker
            .duration(ctx, "cooldown_sec", 1.0)?
            .unwrap_or(defaults.cooldown),
        half_open_max_requests: breaker
            .u32(ctx, "half_open_max_requests")?
            .unwrap_or(defaults.half_open_max_requests),
        per_tool: breaker.bool(ctx, "per_tool")?.unwrap_or(defaults.per_tool),
    };
    breaker.log_unknown(ctx);
    Ok(settings)
}

fn read_rate_limit(obj: &Obj<'_>, ctx: &Ctx<'_>) -> Result<Option<RateLimitSettings>, ConfigError> {
    let Some(limit) = obj.object(ctx, "rate_limit")? else {
        return Ok(None);
    };
    // `per_second` is the fleet issue's spelling of `calls_per_sec`; either is read.
    let calls_per_sec =
        match (
            limit.u32(ctx, "calls_per_sec")?,
            limit.u32(ctx, "per_second")?,
        ) {
            (Some(_), Some(_)) => return Err(ctx.error(
                ConfigErrorKind::Invalid,
                "rate_limit.per_second",
                "expected one of `calls_per_sec` and `per_second` (two names for one setting), \
                 found both",
            )),
            (one, other) => one.or(other),
        };
    let calls_per_sec = calls_per_sec.ok_or_else(|| {
        ctx.error(
            ConfigErrorKind::Missing,
            "rate_limit.calls_per_sec",
            "a rate limit needs `calls_per_sec` (or `per_second`: a whole number ≥ 1), found none",
        )
    })?;
    let burst = limit.u32(ctx, "burst")?.unwrap_or(calls_per_sec);
    let wait = limit.bool(ctx, "wait")?.unwrap_or(true);
    let scope = match limit.string(ctx, "scope")?.as_deref() {
        None | Some("process") => RateLimitScope::Process,
        Some("fleet") => RateLimitScope::Fleet,
        Some(other) => {
            return Err(ctx.error(
                ConfigErrorKind::Invalid,
                "rate_limit.scope",
                format!("expected \"process\" or \"fleet\", found {other:?}"),
            ))
        }
    };
    limit.log_unknown(ctx);
    Ok(Some(RateLimitSettings {
        calls_per_sec,
        burst,
        wait,
        scope,
    }))
}
