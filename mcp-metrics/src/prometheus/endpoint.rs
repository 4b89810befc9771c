//! The scrape endpoint: `GET /metrics` over HTTP/1.1 on hyper, owned by a handle.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use crate::Metrics;

/// The exposition format's content type.
const CONTENT_TYPE_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Scrapers connected at once; more are closed at once.
const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send its request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one connection may stay open, whatever it does.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(60);
/// The pause after a failed accept (out of file descriptors, say) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long [`PrometheusEndpoint::shutdown`] waits for the server task to end.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// A Prometheus scrape endpoint serving [`Metrics::render_prometheus`] at `GET /metrics`
/// (`HEAD` too; other paths 404, other methods 405). The handle owns the server: dropping it
/// or [`shutdown`](Self::shutdown) stops accepting and closes every connection.
///
/// It serves whatever address it is given; the metrics name servers and tools (no secrets),
/// but bind it to loopback unless something else guards it.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use mcp_metrics::{Metrics, PrometheusEndpoint};
/// let metrics = Metrics::new();
/// let endpoint = PrometheusEndpoint::serve(metrics.clone(), "127.0.0.1:9464".parse().unwrap()).await?;
/// println!("scrape http://{}/metrics", endpoint.local_addr());
/// endpoint.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PrometheusEndpoint {
    local_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl PrometheusEndpoint {
    /// Binds `addr` (port 0 picks a free one: see [`local_addr`](Self::local_addr)) and
    /// serves `metrics` until the handle is dropped or shut down. Must be called within a
    /// tokio runtime, which runs the server.
    pub async fn serve(metrics: Metrics, addr: SocketAddr) -> io::Result<PrometheusEndpoint> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, metrics, stopped));
        Ok(PrometheusEndpoint {
            local_addr,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, closes every connection and waits (boundedly) for the server task to
    /// end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(SHUTDOWN_TIMEOUT, &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

impl Drop for PrometheusEndpoint {
    fn drop(&mut self) {
        // Aborting the accept task drops its `JoinSet`, which aborts every connection.
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn accept_loop(listener: TcpListener, metrics: Metrics, mut stopped: oneshot::Receiver<()>) {
    // Owns the connections: they end when this task does.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    if connections.len() >= MAX_CONNECTIONS {
                        tracing::debug!("metrics endpoint: too many scrapers connected; closing a new connection");
                        drop(stream);
                        continue;
                    }
                    connections.spawn(serve_connection(stream, metrics.clone()));
                }
                Err(error) => {
                    tracing::debug!(%error, "metrics endpoint: accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    connections.shutdown().await;
}

async fn serve_connection(stream: TcpStream, metrics: Metrics) {
    let service = hyper::service::service_fn(move |request| {
        let metrics = metrics.clone();
        async move { Ok::<_, Infallible>(answer(&request, &metrics)) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    match tokio::time::timeout(CONNECTION_TIMEOUT, connection).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::debug!(%error, "metrics endpoint: connection failed"),
        Err(_elapsed) => tracing::debug!("metrics endpoint: connection open too long; closed"),
    }
}

fn answer(request: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, body: &'static str| {
        let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *response.status_mut() = status;
        response
    };
    if request.uri().path() != "/metrics" {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: metrics are at /metrics\n",
        );
    }
    let head = request.method() == Method::HEAD;
    if request.method() != Method::GET && !head {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "use GET\n");
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let body = if head {
        Bytes::new()
    } else {
        Bytes::from(metrics.render_prometheus())
    };
    let mut response = Response::new(Full::new(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_TEXT));
    response
}
