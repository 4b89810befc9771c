//! What the panel's tests share: a client over real fixture servers, and a small HTTP/1.1
//! client for loopback (a request, its status, headers and body; the first event of a
//! stream), every read under a deadline.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use mcp_client::config::{ClientConfig, ServerConfig, TransportConfig};
use mcp_client::{ClientOptions, McpClient};
use mcp_testkit::HttpFixture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest any one step of a test may take.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A stdio fixture server entry.
pub fn stdio_fixture(name: &str) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command: mcp_testkit::fixture_server_bin()
                .to_string_lossy()
                .into_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
    )
}

/// The HTTP fixture on a free loopback port, with its default options.
pub async fn http_fixture() -> HttpFixture {
    let Ok(mcp_testkit::CliCommand::Run(options)) = mcp_testkit::parse_args(Vec::<String>::new())
    else {
        panic!("the fixture's default options parse")
    };
    mcp_testkit::serve_http(options, "127.0.0.1:0".parse().expect("an address"))
        .await
        .expect("the HTTP fixture listens")
}

/// A Streamable HTTP server entry for `fixture`, with a header holding a secret the panel
/// must never show.
pub fn http_entry(name: &str, fixture: &HttpFixture, secret: &str) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Http {
            url: fixture.url(),
            headers: BTreeMap::from([("X-Api-Key".to_owned(), secret.to_owned())]),
        },
    )
}

/// A client over `servers`, once every one is ready.
pub async fn ready_client(servers: Vec<ServerConfig>) -> McpClient {
    let count = servers.len();
    let config = ClientConfig {
        servers,
        source: None,
        region: None,
        store: None,
    };
    let client = tokio::time::timeout(DEADLINE, McpClient::start(config, ClientOptions::default()))
        .await
        .expect("start is bounded by the startup timeouts");
    mcp_testkit::wait::until("every server ready", DEADLINE, || {
        let servers = client.servers();
        if servers.len() == count && servers.iter().all(|s| s.status.is_ready()) {
            Ok(())
        } else {
            Err(format!(
                "{:?}",
                servers
                    .iter()
                    .map(|s| (s.name.clone(), s.status.to_string()))
                    .collect::<Vec<_>>()
            ))
        }
    })
    .await;
    client
}

/// One HTTP response.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// `METHOD path` with `Connection: close`, read to its end.
pub async fn request(addr: SocketAddr, method: &str, path: &str, host: Option<&str>) -> Answer {
    let host = host.map_or_else(|| addr.to_string(), str::to_owned);
    let text = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    );
    tokio::time::timeout(DEADLINE, async {
        let mut stream = TcpStream::connect(addr).await.expect("the panel accepts");
        stream
            .write_all(text.as_bytes())
            .await
            .expect("the request is sent");
        let mut raw = Vec::new();
        stream
            .read_to_end(&mut raw)
            .await
            .expect("the answer is read");
        parse(&raw)
    })
    .await
    .unwrap_or_else(|_| panic!("{method} {path}: no complete answer within {DEADLINE:?}"))
}

/// `GET path`.
pub async fn get(addr: SocketAddr, path: &str) -> Answer {
    request(addr, "GET", path, None).await
}

/// Opens `GET path` (an event stream) and reads until `events` events (blank-line
/// terminated) have come: the head, and the events' text.
pub async fn read_events(addr: SocketAddr, path: &str, events: usize) -> Answer {
    let text = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    tokio::time::timeout(DEADLINE, async {
        let mut stream = TcpStream::connect(addr).await.expect("the panel accepts");
        stream
            .write_all(text.as_bytes())
            .await
            .expect("the request is sent");
        let mut raw = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = stream.read(&mut chunk).await.expect("the stream is read");
            assert!(
                n > 0,
                "the stream ended early: {}",
                String::from_utf8_lossy(&raw)
            );
            raw.extend_from_slice(&chunk[..n]);
            let answer = parse(&raw);
            if answer.body.matches("\n\n").count() >= events {
                return answer;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("GET {path}: {events} events did not come within {DEADLINE:?}"))
}

fn parse(raw: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers: BTreeMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        headers,
        body,
    }
}

/// The data of a chunked body, as much of it as has come.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 {
            break;
        }
        if after.len() < size {
            out.push_str(after);
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].strip_prefix("\r\n").unwrap_or(&after[size..]);
    }
    out
}
