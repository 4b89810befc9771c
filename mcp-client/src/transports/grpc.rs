//! [`GrpcFactory`]: `type: "grpc"` entries and bare `grpc://` / `grpcs://` URLs as gRPC servers
//! — every connection a new HTTP/2 connection and `Session` call.

use std::sync::Arc;

use mcp_core::{Error, TransportConnector};
use mcp_transport_grpc::{GrpcConnector, GrpcServerConfig};

use super::{TransportFactory, TransportSpec};

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
        // A bad URL or header is the configuration's fault: said now, naming the server,
        // instead of at every connection attempt.
        let connector = GrpcConnector::new(config).map_err(|e| spec.invalid(e.message()))?;
        Ok(Arc::new(connector))
    }
}
