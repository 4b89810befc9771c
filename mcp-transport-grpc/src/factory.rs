//! [`GrpcFactory`] and [`GrpcConnector`]: the gRPC transport as a
//! [`TransportFactory`](mcp_core::TransportFactory) — every connection a new HTTP/2 connection
//! and `Session` call.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_core::{BoxTransport, Error, TransportConnector, TransportFactory, TransportSpec};

use crate::{GrpcServerConfig, GrpcTransport};

/// Serves configuration entries of `type: "grpc"`, and entries with a `grpc://` (plaintext)
/// or `grpcs://` (TLS) URL and no type.
#[derive(Clone, Copy, Debug, Default)]
pub struct GrpcFactory;

impl TransportFactory for GrpcFactory {
    fn kinds(&self) -> &'static [&'static str] {
        &["grpc"]
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["grpc", "grpcs"]
    }

    fn connector(&self, spec: &TransportSpec) -> Result<Arc<dyn TransportConnector>, Error> {
        let (url, headers) = spec.url()?;
        let mut config = GrpcServerConfig::new(url);
        for (name, value) in headers {
            config = config.header(name, value);
        }
        if let Some(auth) = &spec.auth {
            config = config.auth(auth.clone());
        }
        // A bad URL or header is the configuration's fault: say so now, naming the server,
        // instead of at every connection attempt.
        config.uri().and_then(|_| config.metadata()).map_err(|e| {
            Error::new(
                mcp_core::ErrorKind::InvalidParams,
                format!("server \"{}\": {}", spec.server, e.message()),
            )
        })?;
        Ok(Arc::new(GrpcConnector::new(config)))
    }
}

/// Opens a new gRPC connection (and call) to one server for every connection asked for.
#[derive(Debug, Clone)]
pub struct GrpcConnector {
    config: GrpcServerConfig,
}

impl GrpcConnector {
    /// Connections to the server of `config`.
    pub fn new(config: GrpcServerConfig) -> GrpcConnector {
        GrpcConnector { config }
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
    use super::*;
    use mcp_core::Endpoint;
    use std::collections::BTreeMap;

    fn spec(url: &str, headers: &[(&str, &str)]) -> TransportSpec {
        TransportSpec {
            server: "tunnel".into(),
            kind: "grpc".into(),
            endpoint: Endpoint::Url {
                url: url.into(),
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
            },
            auth: None,
        }
    }

    #[test]
    fn the_factory_serves_grpc_entries_and_urls() {
        assert_eq!(GrpcFactory.kinds(), ["grpc"]);
        assert_eq!(GrpcFactory.url_schemes(), ["grpc", "grpcs"]);
        let connector = GrpcFactory
            .connector(&spec("grpcs://mcp.example:443", &[("x-api-key", "k")]))
            .unwrap();
        assert_eq!(connector.transport_name(), "tcp");
    }

    #[test]
    fn bad_entries_are_refused_naming_the_server() {
        let refused = |spec: &TransportSpec| match GrpcFactory.connector(spec) {
            Ok(_) => panic!("{spec:?} is refused"),
            Err(e) => e,
        };
        let err = refused(&spec("grpc://h:1/mcp", &[]));
        assert!(err.message().contains("server \"tunnel\""), "{err}");
        assert!(err.message().contains("no path"), "{err}");
        let err = refused(&spec("grpc://h:1", &[("grpc-status", "0")]));
        assert!(err.message().contains("reserved"), "{err}");
        let mut command = spec("grpc://h:1", &[]);
        command.endpoint = Endpoint::Command {
            command: "server".into(),
            args: vec![],
            env: BTreeMap::new(),
            cwd: None,
        };
        let err = refused(&command);
        assert!(err.message().contains("needs a `url`"), "{err}");
    }
}
