//! [`StdioFactory`]: `type: "stdio"` entries (or entries with a `command`) as stdio servers —
//! every connection a new child process.

use std::sync::Arc;

use mcp_core::{Error, TransportConnector};
use mcp_transport_stdio::{StdioConnector, StdioServerConfig};

use super::{TransportFactory, TransportSpec};
use crate::config::TransportConfig;

/// Serves configuration entries of `type: "stdio"` (or with a `command`).
#[derive(Clone, Copy, Debug, Default)]
pub struct StdioFactory;

impl TransportFactory for StdioFactory {
    fn kinds(&self) -> &'static [&'static str] {
        &["stdio"]
    }

    fn connector(&self, spec: &TransportSpec) -> Result<Arc<dyn TransportConnector>, Error> {
        let TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } = &spec.transport
        else {
            return Err(spec.invalid("a stdio server needs a `command`, not a `url`"));
        };
        let mut config = StdioServerConfig::new(command)
            .args(args)
            .name(&spec.server);
        for (key, value) in env {
            config = config.env(key, value);
        }
        if let Some(cwd) = cwd {
            config = config.cwd(cwd);
        }
        Ok(Arc::new(StdioConnector::new(config)))
    }
}
