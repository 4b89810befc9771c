//! [`LocalConnector`]: a [`TransportConnector`] whose every `connect` opens a new in-process
//! connection to the same [`LocalServer`].

use async_trait::async_trait;
use mcp_core::{BoxTransport, Error, TransportConnector};

use crate::server::LocalServer;

/// Opens connections to one [`LocalServer`] (see [`LocalServer::connector`]).
#[derive(Debug, Clone)]
pub struct LocalConnector {
    server: LocalServer,
}

impl LocalConnector {
    /// Connections to `server`.
    pub fn new(server: LocalServer) -> LocalConnector {
        LocalConnector { server }
    }

    /// The server connected to.
    pub fn server(&self) -> &LocalServer {
        &self.server
    }
}

#[async_trait]
impl TransportConnector for LocalConnector {
    async fn connect(&self) -> Result<BoxTransport, Error> {
        Ok(BoxTransport::new(self.server.connect()?))
    }

    fn transport_name(&self) -> &'static str {
        "inproc"
    }
}
