//! [`StdioFactory`] and [`StdioConnector`]: the stdio transport as a
//! [`TransportFactory`](mcp_core::TransportFactory) — every connection a new child process.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_core::{
    BoxTransport, Endpoint, Error, ErrorKind, TransportConnector, TransportFactory, TransportSpec,
};

use crate::{StdioServerConfig, StdioTransport};

/// Serves configuration entries of `type: "stdio"` (or with a `command`).
#[derive(Clone, Copy, Debug, Default)]
pub struct StdioFactory;

impl TransportFactory for StdioFactory {
    fn kinds(&self) -> &'static [&'static str] {
        &["stdio"]
    }

    fn connector(&self, spec: &TransportSpec) -> Result<Arc<dyn TransportConnector>, Error> {
        let Endpoint::Command {
            command,
            args,
            env,
            cwd,
        } = &spec.endpoint
        else {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "server \"{}\": a stdio server needs a `command`, not a `url`",
                    spec.server
                ),
            ));
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

/// Starts a new child process for every connection.
#[derive(Debug, Clone)]
pub struct StdioConnector {
    config: StdioServerConfig,
}

impl StdioConnector {
    /// Connections to children started from `config`.
    pub fn new(config: StdioServerConfig) -> StdioConnector {
        StdioConnector { config }
    }
}

#[async_trait]
impl TransportConnector for StdioConnector {
    async fn connect(&self) -> Result<BoxTransport, Error> {
        Ok(BoxTransport::new(StdioTransport::spawn(
            self.config.clone(),
        )?))
    }

    fn transport_name(&self) -> &'static str {
        "pipe"
    }
}
