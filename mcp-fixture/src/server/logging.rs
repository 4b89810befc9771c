//! MCP logging: the levels ([`LogLevel`]), `logging/setLevel` and the level check of
//! `notifications/message`.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::FixtureServer;
use crate::jsonrpc::{params_object, req_str, RpcError};

/// MCP logging levels, in increasing severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    /// Parses an MCP level name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "debug" => Self::Debug,
            "info" => Self::Info,
            "notice" => Self::Notice,
            "warning" => Self::Warning,
            "error" => Self::Error,
            "critical" => Self::Critical,
            "alert" => Self::Alert,
            "emergency" => Self::Emergency,
            _ => return None,
        })
    }

    /// The MCP level name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

impl FixtureServer {
    pub(super) fn set_level(&self, params: Option<&RawValue>) -> Result<Value, RpcError> {
        let params = params_object(params)?;
        let name = req_str(&params, "level")?;
        let level = LogLevel::parse(name).ok_or_else(|| {
            RpcError::bad_field(
                "level",
                "one of debug, info, notice, warning, error, critical, alert, emergency",
            )
        })?;
        self.state().min_log_level = Some(level);
        Ok(Value::Object(Map::new()))
    }

    /// Whether a message at `level` passes the level set by `logging/setLevel`.
    pub(crate) fn log_enabled(&self, level: LogLevel) -> bool {
        self.state().min_log_level.is_none_or(|min| level >= min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels_are_ordered() {
        assert!(LogLevel::Emergency > LogLevel::Debug);
        assert!(LogLevel::Warning > LogLevel::Notice);
        for name in [
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        ] {
            assert_eq!(LogLevel::parse(name).map(LogLevel::as_str), Some(name));
        }
        assert_eq!(LogLevel::parse("loud"), None);
    }
}
