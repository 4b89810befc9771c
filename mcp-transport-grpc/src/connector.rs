//! [`GrpcConnector`]: the gRPC transport as a [`TransportConnector`] — every connection a new
//! HTTP/2 connection and `Session` call.

use async_trait::async_trait;
use mcp_core::{BoxTransport, Error, TransportConnector, TransportError};

use crate::{GrpcServerConfig, GrpcTransport};

/// Opens a new gRPC connection (and call) to one server for every connection asked for.
#[derive(Debug, Clone)]
pub struct GrpcConnector {
    config: GrpcServerConfig,
}

impl GrpcConnector {
    /// Connections to the server of `config`. Fails (`Connect`) when its endpoint or a
    /// metadata header is invalid ([`GrpcServerConfig::check`]): the configuration's fault,
    /// found before any connection.
    pub fn new(config: GrpcServerConfig) -> Result<GrpcConnector, TransportError> {
        config.check()?;
        Ok(GrpcConnector { config })
    }

    /// The configuration every connection uses.
    pub fn config(&self) -> &GrpcServerConfig {
        &self.config
    }
}

#[async_trait]
impl TransportConnector for GrpcConnector {
    async fn connect(&self) -> Result<BoxTransport, Error> {
        Ok(BoxTransport::new(
            GrpcTransport::connect(self.config.clone()).await?,
        ))
    }

    fn transport_name(&self) -> &'static str {
        "tcp"
    }
}

#[cfg(test)]
mod tests {
    use mcp_core::TransportErrorKind;

    use super::*;

    #[test]
    fn a_connector_is_refused_for_a_config_that_cannot_connect() {
        for (config, says) in [
            (GrpcServerConfig::new("grpc://h:1/mcp"), "no path"),
            (
                GrpcServerConfig::new("grpc://h:1").header("grpc-status", "0"),
                "reserved",
            ),
        ] {
            let Err(e) = GrpcConnector::new(config) else {
                panic!("{says:?}: expected a refusal");
            };
            assert_eq!(e.kind(), TransportErrorKind::Connect, "{e}");
            assert!(e.message().contains(says), "{says:?} in {e}");
        }
        let connector = GrpcConnector::new(GrpcServerConfig::new("grpcs://h.example:443"))
            .expect("a valid config");
        assert_eq!(connector.transport_name(), "tcp");
    }
}
