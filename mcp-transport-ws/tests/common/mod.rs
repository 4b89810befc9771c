//! Shared helpers: the fixture served over WebSocket in-process, sessions on it, raw
//! WebSocket test servers with scripted behaviour, and waiting on conditions with a deadline.

#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mcp_session::{ClientHandler, ClientSession, SessionOptions};
use mcp_testkit::{ServerOptions, WsFixture};
use mcp_transport_ws::{WebSocketServerConfig, WebSocketTransport};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::handshake::server::{
    Callback, ErrorResponse, Request, Response,
};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::WebSocketStream;

/// Generous deadline for anything a test waits on.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The fixture over WebSocket on 127.0.0.1, with fixture command-line `args`.
pub async fn fixture(args: &[&str]) -> WsFixture {
    let options = match mcp_testkit::parse_args(args.iter().copied()) {
        Ok(mcp_testkit::CliCommand::Run(options)) => options,
        other => panic!("bad fixture arguments {args:?}: {other:?}"),
    };
    fixture_with(options).await
}

pub async fn fixture_with(options: ServerOptions) -> WsFixture {
    mcp_testkit::serve_ws(options, "127.0.0.1:0".parse().expect("an address"))
        .await
        .expect("the WebSocket fixture starts")
}

/// A configuration for `url` with short grace periods (tests close a lot).
pub fn config(url: &str) -> WebSocketServerConfig {
    WebSocketServerConfig::new(url).close_timeout(Duration::from_millis(500))
}

pub async fn connect(fixture: &WsFixture) -> ClientSession {
    connect_with(config(&fixture.url()), (), SessionOptions::default()).await
}

pub async fn connect_with(
    config: WebSocketServerConfig,
    handler: impl ClientHandler,
    options: SessionOptions,
) -> ClientSession {
    tokio::time::timeout(DEADLINE, async {
        let transport = WebSocketTransport::connect(config).await.expect("connects");
        ClientSession::connect(transport, handler, options)
            .await
            .expect("initializes")
    })
    .await
    .expect("connect finished in time")
}

/// Runs `future` under [`DEADLINE`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, future)
        .await
        .unwrap_or_else(|_| panic!("did not finish in time: {what}"))
}

/// A raw WebSocket server on 127.0.0.1 for protocol edge cases: every connection is upgraded
/// (selecting `subprotocol`, when given) and handed to `script`. Aborted on drop.
pub struct RawServer {
    pub addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl RawServer {
    pub async fn start<F, Fut>(subprotocol: Option<&'static str>, script: F) -> RawServer
    where
        F: Fn(WebSocketStream<TcpStream>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let script = Arc::new(script);
        RawServer::start_tcp(move |stream| {
            let script = script.clone();
            async move {
                let upgrade = tokio_tungstenite::accept_hdr_async(stream, Selects(subprotocol));
                if let Ok(socket) = upgrade.await {
                    script(socket).await;
                }
            }
        })
        .await
    }

    /// Every accepted TCP connection is handed to `script` as is (no upgrade).
    pub async fn start_tcp<F, Fut>(script: F) -> RawServer
    where
        F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        let accept = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            connections.spawn(script(stream));
                        }
                        Err(_) => return,
                    },
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        RawServer { addr, accept }
    }

    pub fn url(&self) -> String {
        format!("ws://{}/mcp", self.addr)
    }
}

/// Accepts every upgrade, selecting the subprotocol it holds (or none).
pub struct Selects(pub Option<&'static str>);

impl Callback for Selects {
    fn on_request(self, _: &Request, mut response: Response) -> Result<Response, ErrorResponse> {
        if let Some(protocol) = self.0 {
            response
                .headers_mut()
                .insert("sec-websocket-protocol", HeaderValue::from_static(protocol));
        }
        Ok(response)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Reads (and so answers pings and close frames) until the client hangs up.
pub async fn drain(mut socket: WebSocketStream<TcpStream>) {
    while let Some(Ok(_)) = socket.next().await {}
}
