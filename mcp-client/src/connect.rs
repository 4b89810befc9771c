//! Opening a session over whichever transport a server's configuration names, as far as the
//! enabled profile has it.

use mcp_core::{ClientHandler, ClientSession, Error, ErrorKind, SessionOptions};

use crate::config::{ServerConfig, TransportConfig};

/// Connects to one server and performs the handshake (bounded by `options.initialize_timeout`).
pub(crate) async fn connect(
    server: &ServerConfig,
    handler: impl ClientHandler,
    options: SessionOptions,
) -> Result<ClientSession, Error> {
    match &server.transport {
        #[cfg(feature = "stdio")]
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
            let mut config = StdioServerConfig::new(command)
                .args(args)
                .name(&server.name);
            for (key, value) in env {
                config = config.env(key, value);
            }
            if let Some(cwd) = cwd {
                config = config.cwd(cwd);
            }
            let transport = StdioTransport::spawn(config)?;
            ClientSession::connect(transport, handler, options).await
        }
        other => {
            let _ = (handler, options);
            Err(Error::new(
                ErrorKind::ServerUnavailable,
                format!(
                    "server \"{}\": the `{}` transport is not built into this profile of mcp-client (features: {}); it arrives with the `professional` profile",
                    server.name,
                    other.kind(),
                    crate::PROFILE
                ),
            ))
        }
    }
}
