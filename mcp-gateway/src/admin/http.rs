//! The panel's HTTP/1.1 server on hyper: the accept loop (which also takes the readings),
//! the routes, and the server-sent events stream.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{HeaderMap, HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use mcp_core::sync::lock;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

use super::history::{wall_clock_ms, PanelState};
use super::PanelSource;

/// The page: one self-contained file (inline CSS, script and SVG charts; nothing fetched
/// from elsewhere).
const PAGE: &str = include_str!("page.html");

/// Clients connected at once; more are closed at once.
const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send its request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one connection may stay open, whatever it does: an event stream ends then, and
/// the page's `EventSource` connects again.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The pause after a failed accept (out of file descriptors, say) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long the page's `EventSource` waits before connecting again after losing the stream.
const SSE_RETRY_MS: u64 = 2_000;

/// What the server task and every connection share.
pub(crate) struct Shared {
    pub(crate) source: Arc<dyn PanelSource>,
    pub(crate) state: Mutex<PanelState>,
    /// The newest sample's number, for the event streams.
    pub(crate) updates: watch::Sender<u64>,
}

impl Shared {
    /// Reads the source and records one sample; tells the event streams.
    pub(crate) fn sample(&self) {
        // Read outside the state's lock: the source takes locks of its own.
        let reports = self.source.servers();
        let metrics = self.source.metrics();
        let seq = {
            let mut state = lock(&self.state);
            state.record(&reports, &metrics, Instant::now(), wall_clock_ms());
            state.seq()
        };
        self.updates.send_replace(seq);
    }

    fn document(&self, since: Option<u64>) -> Result<(u64, String), serde_json::Error> {
        let state = lock(&self.state);
        Ok((state.seq(), state.document(since)?))
    }
}

/// Accepts connections and takes a reading every `interval` until `stopped` fires (or the
/// task is aborted); owns the connections, which end with it.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    interval: Duration,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            _ = ticks.tick() => shared.sample(),
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    if connections.len() >= MAX_CONNECTIONS {
                        tracing::debug!("operations panel: too many clients connected; closing a new connection");
                        drop(stream);
                        continue;
                    }
                    connections.spawn(serve_connection(stream, shared.clone()));
                }
                Err(error) => {
                    tracing::debug!(%error, "operations panel: accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    connections.shutdown().await;
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let service = hyper::service::service_fn(move |request| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(answer(&request, &shared)) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    match tokio::time::timeout(CONNECTION_TIMEOUT, connection).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::debug!(%error, "operations panel: connection failed"),
        Err(_elapsed) => tracing::debug!("operations panel: connection open too long; closed"),
    }
}

type PanelBody = UnsyncBoxBody<Bytes, Infallible>;

fn full(body: impl Into<Bytes>) -> PanelBody {
    Full::new(body.into()).boxed_unsync()
}

fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<PanelBody> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

fn plain(status: StatusCode, body: &'static str) -> Response<PanelBody> {
    respond(status, "text/plain; charset=utf-8", body)
}

/// The routes: `/`, `/api/snapshot`, `/events`, `/metrics` (GET only; 405 otherwise);
/// anything else 404.
pub(crate) fn answer(request: &Request<Incoming>, shared: &Arc<Shared>) -> Response<PanelBody> {
    route(request.method(), request.uri(), request.headers(), shared)
}

fn route(
    method: &Method,
    uri: &hyper::Uri,
    headers: &HeaderMap,
    shared: &Arc<Shared>,
) -> Response<PanelBody> {
    const ROUTES: [&str; 4] = ["/", "/api/snapshot", "/events", "/metrics"];
    let path = uri.path();
    if !ROUTES.contains(&path) {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: the panel is at /, its JSON at /api/snapshot, its live stream at \
             /events, Prometheus metrics at /metrics\n",
        );
    }
    if method != Method::GET {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "use GET\n");
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET"));
        return response;
    }
    // A page elsewhere may point a name of its own at 127.0.0.1 (DNS rebinding) and read the
    // panel as same-origin: only loopback names are served.
    if !loopback_host(headers) {
        return plain(
            StatusCode::MISDIRECTED_REQUEST,
            "the operations panel answers only to a loopback host name (127.0.0.1, [::1], \
             localhost)\n",
        );
    }
    let since = query_u64(uri.query(), "since");
    match path {
        "/" => page(),
        "/api/snapshot" => match shared.document(since) {
            Ok((_, json)) => respond(StatusCode::OK, "application/json", json),
            Err(error) => internal_error(&error),
        },
        "/events" => {
            // An `EventSource` that connects again says where it was.
            let since = since.or_else(|| {
                headers
                    .get("last-event-id")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse().ok())
            });
            events(shared, since)
        }
        _ => respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            shared.source.prometheus(),
        ),
    }
}

fn page() -> Response<PanelBody> {
    let mut response = respond(StatusCode::OK, "text/html; charset=utf-8", PAGE);
    let headers = response.headers_mut();
    // The page needs nothing but itself and this server.
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; \
             frame-ancestors 'none'",
        ),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

fn internal_error(error: &serde_json::Error) -> Response<PanelBody> {
    tracing::warn!(%error, "operations panel: cannot write the snapshot");
    plain(
        StatusCode::INTERNAL_SERVER_ERROR,
        "cannot write the snapshot as JSON\n",
    )
}

/// Whether the `Host` header names a loopback host (or is absent, as an HTTP/1.0 client may
/// leave it).
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(HOST) else {
        return true;
    };
    host.to_str()
        .is_ok_and(crate::serving::is_loopback_authority)
}

/// `name`'s value in a query string, when it is a number.
fn query_u64(query: Option<&str>, name: &str) -> Option<u64> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .and_then(|(_, value)| value.parse().ok())
}

fn events(shared: &Arc<Shared>, since: Option<u64>) -> Response<PanelBody> {
    let body = SseBody {
        shared: shared.clone(),
        since,
        first: true,
        state: SseState::Ready(shared.updates.subscribe()),
    };
    let mut response = Response::new(body.boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Waiting for the next sample: the receiver travels into the future and back out.
type Changed = Pin<Box<dyn Future<Output = Option<watch::Receiver<u64>>> + Send>>;

enum SseState {
    Ready(watch::Receiver<u64>),
    Waiting(Changed),
    Done,
}

/// `GET /events`: a `snapshot` event at once (every sample newer than `since`, all without
/// it), then one per new sample with the samples the client has not had. Each event's `id`
/// is the newest sample's number, so an `EventSource` that connects again (it sends the id as
/// `Last-Event-ID`) gets only what it missed. Ends when the panel stops.
///
/// Written by hand instead of with a stream adapter: the body polls the watch channel itself,
/// so an event stream needs no task of its own, and a client that reads slowly gets the
/// newest state (the channel keeps one value), never a growing backlog.
struct SseBody {
    shared: Arc<Shared>,
    since: Option<u64>,
    first: bool,
    state: SseState,
}

impl SseBody {
    /// The next event: the samples after the last one sent (all of them the first time).
    fn event(&mut self) -> Bytes {
        let mut text = String::new();
        if self.first {
            text.push_str(&format!("retry: {SSE_RETRY_MS}\n"));
            self.first = false;
        }
        match self.shared.document(self.since) {
            Ok((seq, json)) => {
                self.since = Some(seq);
                text.push_str(&format!("id: {seq}\nevent: snapshot\ndata: {json}\n\n"));
            }
            Err(error) => {
                tracing::warn!(%error, "operations panel: cannot write the snapshot");
                text.push_str(": cannot write the snapshot as JSON\n\n");
            }
        }
        Bytes::from(text)
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.first {
            if let SseState::Ready(updates) = &mut this.state {
                // What the first event shows is seen.
                updates.mark_unchanged();
            }
            return Poll::Ready(Some(Ok(Frame::data(this.event()))));
        }
        loop {
            match std::mem::replace(&mut this.state, SseState::Done) {
                SseState::Done => return Poll::Ready(None),
                SseState::Ready(mut updates) => {
                    this.state = SseState::Waiting(Box::pin(async move {
                        updates.changed().await.ok().map(|()| updates)
                    }));
                }
                SseState::Waiting(mut changed) => match changed.as_mut().poll(cx) {
                    Poll::Pending => {
                        this.state = SseState::Waiting(changed);
                        return Poll::Pending;
                    }
                    // The panel stopped: the stream ends.
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Ready(Some(updates)) => {
                        this.state = SseState::Ready(updates);
                        return Poll::Ready(Some(Ok(Frame::data(this.event()))));
                    }
                },
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.state, SseState::Done)
    }
}
