//! [`StdioConnector`]: the stdio transport as a [`TransportConnector`] — every connection a new
//! child process.

use async_trait::async_trait;
use mcp_core::{BoxTransport, Error, TransportConnector};

use crate::{StdioServerConfig, StdioTransport};

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
