//! [`NetStream`]: the byte stream under the WebSocket, plain TCP (`ws://`) or TLS (`wss://`),
//! and opening it: TCP connect and the TLS handshake with rustls (the platform's verifier, the
//! same crypto provider as the HTTP transport).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use mcp_core::{TransportError, TransportErrorKind};
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::{self, ClientConfig};

use crate::config::Target;

/// The connection a WebSocket runs on.
pub(crate) enum NetStream {
    /// `ws://`
    Plain(TcpStream),
    /// `wss://`
    Tls(Box<TlsStream<TcpStream>>),
}

impl NetStream {
    /// Connects to `target` (TCP, then TLS for `wss://`). Not bounded here: the caller bounds
    /// the whole attempt.
    pub(crate) async fn open(
        target: &Target,
        tls: Option<&Arc<ClientConfig>>,
    ) -> Result<NetStream, TransportError> {
        let tcp = TcpStream::connect((target.host.as_str(), target.port))
            .await
            .map_err(|e| {
                TransportError::fatal(
                    TransportErrorKind::Connect,
                    format!("could not connect to {}: {e}", target.display),
                )
            })?;
        // One JSON-RPC message is one frame, usually one write: do not hold it back.
        let _ = tcp.set_nodelay(true);
        if !target.tls {
            return Ok(NetStream::Plain(tcp));
        }
        let Some(tls) = tls else {
            return Err(TransportError::fatal(
                TransportErrorKind::Connect,
                format!("no TLS configuration for {}", target.display),
            ));
        };
        let name = ServerName::try_from(target.host.clone()).map_err(|_| {
            TransportError::fatal(
                TransportErrorKind::Connect,
                format!("invalid TLS server name in {}", target.display),
            )
        })?;
        let stream = tokio_rustls::TlsConnector::from(tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| {
                TransportError::fatal(
                    TransportErrorKind::Connect,
                    format!("the TLS handshake with {} failed: {e}", target.display),
                )
            })?;
        Ok(NetStream::Tls(Box::new(stream)))
    }
}

/// The TLS client configuration for `wss://`: rustls with the process's default crypto
/// provider if one is installed, else aws-lc-rs (as the HTTP transport does, so one provider
/// serves both), the platform's certificate verifier plus `extra_roots`, and ALPN
/// `http/1.1` (the upgrade is an HTTP/1.1 request).
pub(crate) fn client_config(extra_roots: &[Vec<u8>]) -> Result<Arc<ClientConfig>, TransportError> {
    let tls_error = |what: &str, e: rustls::Error| {
        TransportError::fatal(
            TransportErrorKind::Connect,
            format!("cannot set up TLS for wss:// ({what}): {e}"),
        )
    };
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error("protocol versions", e))?;
    let verifier = if extra_roots.is_empty() {
        rustls_platform_verifier::Verifier::new(provider)
    } else {
        let roots = extra_roots
            .iter()
            .map(|der| CertificateDer::from(der.clone()));
        rustls_platform_verifier::Verifier::new_with_extra_roots(roots, provider)
    }
    .map_err(|e| tls_error("certificate verifier", e))?;
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

impl AsyncRead for NetStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NetStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            NetStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for NetStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            NetStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            NetStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            NetStream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            NetStream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            NetStream::Plain(s) => s.is_write_vectored(),
            NetStream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NetStream::Plain(s) => Pin::new(s).poll_flush(cx),
            NetStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NetStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            NetStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
