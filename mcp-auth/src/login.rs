//! Interactive login: a loopback listener catches the authorization redirect (RFC 8252 §7.3)
//! while the user authorizes in a browser — opened for them, or shown the URL to open.
//! [`LoopbackLogin`] is an [`Authorizer`], so the same code serves `mcph auth login` and any
//! harness that logs in on demand.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tracing::debug;
use url::Url;

use crate::client::{Callback, OAuthClient};
use crate::credentials::TokenSet;
use crate::error::AuthError;
use crate::http::AuthHttp;
use crate::provider::Authorizer;

/// How long a login waits for the user, unless configured otherwise.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// The path the redirect arrives at.
pub const CALLBACK_PATH: &str = "/callback";
/// A request line and headers larger than this are refused.
const MAX_REQUEST: usize = 16 * 1024;
/// Each connection to the listener gets this long to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What to do with the authorization URL.
#[derive(Clone)]
pub enum Presenter {
    /// Open it in the system browser, and also pass it to the callback (for a "if the
    /// browser did not open, visit …" line).
    Browser(Arc<dyn Fn(&Url) + Send + Sync>),
    /// Only pass it to the callback (headless machines, `--no-browser`).
    Print(Arc<dyn Fn(&Url) + Send + Sync>),
}

impl fmt::Debug for Presenter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Presenter::Browser(_) => "Presenter::Browser",
            Presenter::Print(_) => "Presenter::Print",
        })
    }
}

/// Logs in with a browser and a loopback redirect listener.
#[derive(Debug, Clone)]
pub struct LoopbackLogin {
    /// The port to listen on (0: an ephemeral one). A fixed port matters for clients
    /// pre-registered with one redirect URI.
    pub port: u16,
    /// How long to wait for the redirect.
    pub timeout: Duration,
    /// What to do with the authorization URL.
    pub presenter: Presenter,
}

impl LoopbackLogin {
    /// A login on an ephemeral port that waits [`DEFAULT_LOGIN_TIMEOUT`].
    pub fn new(presenter: Presenter) -> LoopbackLogin {
        LoopbackLogin {
            port: 0,
            timeout: DEFAULT_LOGIN_TIMEOUT,
            presenter,
        }
    }
}

#[async_trait]
impl Authorizer for LoopbackLogin {
    async fn authorize(&self, client: &OAuthClient) -> Result<TokenSet, AuthError> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)))
            .await
            .map_err(|e| {
                AuthError::Config(format!(
                    "cannot listen for the login redirect on 127.0.0.1:{}: {e}",
                    self.port
                ))
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::Config(format!("the redirect listener has no address: {e}")))?
            .port();
        let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
        let request = client.initiate_authorization(&redirect_uri).await?;
        match &self.presenter {
            Presenter::Browser(show) => {
                show(&request.url);
                if let Err(e) = open_browser(&request.url) {
                    debug!("could not open a browser: {e}");
                }
            }
            Presenter::Print(show) => show(&request.url),
        }
        let callback = tokio::time::timeout(self.timeout, wait_for_callback(&listener))
            .await
            .map_err(|_| {
                AuthError::Callback(format!(
                    "no authorization arrived within {}",
                    mcp_core::time::human_duration(self.timeout)
                ))
            })??;
        client.exchange_code(&request, &callback).await
    }
}

/// The callback of an authorization server that approves without asking anyone (a test
/// server, the conformance suite's mock servers): GETs the authorization URL like a browser,
/// does not follow the redirect, and reads the callback parameters from its `Location`.
pub async fn approved_callback(http: &AuthHttp, url: &Url) -> Result<Callback, AuthError> {
    let answer = http.get_json(url).await?;
    let location = answer
        .headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            AuthError::Callback(format!(
                "the authorization endpoint answered HTTP {} without a redirect: {}",
                answer.status,
                answer.snippet()
            ))
        })?;
    let location = Url::parse(location)
        .map_err(|e| AuthError::Callback(format!("the redirect is not a URL: {e}")))?;
    Ok(Callback::from_url(&location))
}

/// An [`Authorizer`] for authorization servers that approve at once (see
/// [`approved_callback`]); nothing needs to listen at the redirect URI.
#[derive(Debug, Clone)]
pub struct AutoApprove {
    /// The redirect URI registered and sent (never contacted).
    pub redirect_uri: String,
    http: AuthHttp,
}

impl AutoApprove {
    /// Authorizes with `redirect_uri` as the redirect URI.
    pub fn new(redirect_uri: impl Into<String>) -> Result<AutoApprove, AuthError> {
        Ok(AutoApprove {
            redirect_uri: redirect_uri.into(),
            http: AuthHttp::new()?,
        })
    }
}

#[async_trait]
impl Authorizer for AutoApprove {
    async fn authorize(&self, client: &OAuthClient) -> Result<TokenSet, AuthError> {
        let request = client.initiate_authorization(&self.redirect_uri).await?;
        let callback = approved_callback(&self.http, &request.url).await?;
        client.exchange_code(&request, &callback).await
    }
}

/// Accepts connections until one is a `GET /callback?…`, answers it with a page saying the
/// login went through (or why not), and returns its parameters. Other requests (a favicon,
/// a probe) get 404 and are otherwise ignored.
pub async fn wait_for_callback(listener: &TcpListener) -> Result<Callback, AuthError> {
    loop {
        let (mut stream, peer) = listener
            .accept()
            .await
            .map_err(|e| AuthError::Callback(format!("the redirect listener failed: {e}")))?;
        let target =
            match tokio::time::timeout(READ_TIMEOUT, read_request_target(&mut stream)).await {
                Ok(Some(target)) => target,
                _ => continue,
            };
        let Ok(url) = Url::parse(&format!("http://127.0.0.1{target}")) else {
            let _ = respond(&mut stream, 400, "Bad request.").await;
            continue;
        };
        if url.path() != CALLBACK_PATH {
            let _ = respond(&mut stream, 404, "Not found.").await;
            continue;
        }
        debug!(%peer, "authorization redirect received");
        let callback = Callback::from_url(&url);
        let page = match (&callback.error, &callback.code) {
            (Some(error), _) => format!(
                "Authorization failed: {}. You can close this window.",
                html_escape(error)
            ),
            (None, Some(_)) => {
                "Authorization complete. You can close this window and return to the terminal."
                    .to_owned()
            }
            (None, None) => {
                "The redirect carried no authorization code. You can close this window.".to_owned()
            }
        };
        let _ = respond(&mut stream, 200, &page).await;
        return Ok(callback);
    }
}

/// The request target of a `GET` request line, read under [`MAX_REQUEST`].
async fn read_request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if buffer.windows(4).any(|w| w == b"\r\n\r\n") || buffer.windows(2).any(|w| w == b"\n\n") {
            break;
        }
        if buffer.len() > MAX_REQUEST {
            return None;
        }
    }
    let text = std::str::from_utf8(&buffer).ok()?;
    let line = text.lines().next()?;
    let mut parts = line.split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    (method == "GET" && target.starts_with('/')).then(|| target.to_owned())
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: u16,
    text: &str,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        _ => "Not Found",
    };
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mcph login</title></head>\
         <body><p>{text}</p></body></html>"
    );
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Whether a browser can be opened here (a desktop session, or macOS / Windows).
pub fn has_display() -> bool {
    if cfg!(any(target_os = "macos", target_os = "windows")) {
        return true;
    }
    std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
}

/// Opens `url` in the system browser (`open`, `xdg-open` or `start`), without waiting for it.
pub fn open_browser(url: &Url) -> std::io::Result<()> {
    if !has_display() {
        return Err(std::io::Error::other("no display"));
    }
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(target_os = "windows") {
        // Not `cmd /C start`: cmd would read the `&`s of the query as command separators.
        let mut c = std::process::Command::new("rundll32");
        c.arg("url.dll,FileProtocolHandler");
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    let mut child = command
        .arg(url.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    // The opener returns at once; reap it in the background so it leaves no zombie.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_listener_returns_the_callback_and_ignores_other_paths() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let waiter = tokio::spawn(async move { wait_for_callback(&listener).await });
        let client = reqwest::Client::new();
        let favicon = client
            .get(format!("http://{addr}/favicon.ico"))
            .send()
            .await
            .unwrap();
        assert_eq!(favicon.status(), 404);
        let page = client
            .get(format!("http://{addr}/callback?code=c0de&state=st4te"))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200);
        assert!(page
            .text()
            .await
            .unwrap()
            .contains("Authorization complete"));
        let callback = waiter.await.unwrap().unwrap();
        assert_eq!(callback.code.unwrap().expose(), "c0de");
        assert_eq!(callback.state.unwrap().expose(), "st4te");
    }
}
