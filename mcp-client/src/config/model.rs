//! The configuration model every format is read into.
//!
//! `Debug` never prints `env` or `headers` values (they hold tokens): keys are shown, values read
//! `"<redacted>"`; a stdio server's arguments are shown as their count only; URLs are shown
//! without user info, query or fragment.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::settings::{HarnessSettings, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT};

/// All servers of one configuration file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClientConfig {
    /// The servers, in file order (disabled ones included; see [`ServerConfig::enabled`]).
    pub servers: Vec<ServerConfig>,
    /// The file the configuration came from.
    pub source: Option<PathBuf>,
    /// The client's own region (the file's top-level `"region"`): servers that list
    /// [`endpoints`](ServerConfig::endpoints) prefer the endpoints of this region. The
    /// builder's `region(..)` and `MCPH_REGION` are the other sources (see
    /// `McpClientBuilder::region`).
    pub region: Option<String>,
    /// Where a fleet's shared state lives (the file's top-level `store`): OAuth tokens and
    /// fleet-wide rate limits on Redis. `MCPH_STORE` sets or overrides the URL.
    pub store: Option<StoreConfig>,
}

/// A fleet's shared store (the top-level `store` of a configuration file): where it is and which
/// environment variables hold its secrets — never the secrets themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    /// `redis://host:port/db` or `rediss://…` (TLS), without a password.
    pub url: String,
    /// The variable holding the 32-byte encryption key (hex or base64). Default `MCPH_STORE_KEY`.
    pub key_env: String,
    /// The variable holding the Redis password, if it needs one. Default `MCPH_STORE_PASSWORD`.
    pub password_env: String,
    /// What every key of this fleet starts with, so several fleets share one Redis. Default
    /// `mcph`.
    pub prefix: String,
}

impl StoreConfig {
    /// The environment variable that sets (or overrides) the store's URL.
    pub const URL_VARIABLE: &'static str = "MCPH_STORE";
    /// The default variable of the encryption key.
    pub const DEFAULT_KEY_VARIABLE: &'static str = "MCPH_STORE_KEY";
    /// The default variable of the password.
    pub const DEFAULT_PASSWORD_VARIABLE: &'static str = "MCPH_STORE_PASSWORD";
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = "mcph";

    /// The store at `url`, with the default variables and prefix.
    pub fn new(url: impl Into<String>) -> StoreConfig {
        StoreConfig {
            url: url.into(),
            key_env: StoreConfig::DEFAULT_KEY_VARIABLE.into(),
            password_env: StoreConfig::DEFAULT_PASSWORD_VARIABLE.into(),
            prefix: StoreConfig::DEFAULT_PREFIX.into(),
        }
    }
}

impl ClientConfig {
    /// The server called `name`.
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The servers that are enabled, in file order.
    pub fn enabled_servers(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().filter(|s| s.enabled)
    }
}

/// One MCP server: how to reach it and how the harness treats it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The server's name (the key in `mcpServers` / `servers` / `[mcp_servers.<name>]`).
    pub name: String,
    /// How to reach the server.
    pub transport: TransportConfig,
    /// `false` for Claude-style `"disabled": true` or Codex `enabled = false` (default `true`).
    pub enabled: bool,
    /// Allow-list of tool names (`None` = all tools).
    pub enabled_tools: Option<Vec<String>>,
    /// Deny-list of tool names, applied after the allow-list.
    pub disabled_tools: Vec<String>,
    /// Time allowed to start and initialize (`startup_timeout_sec` / `startup_timeout_ms`,
    /// default 10 s).
    pub startup_timeout: Duration,
    /// Time allowed for one tool call (`tool_timeout_sec`, default 30 s).
    pub tool_timeout: Duration,
    /// Pool, retry, breaker and idle settings.
    pub settings: HarnessSettings,
    /// OAuth settings (`oauth: { … }`); remote servers without them still use OAuth when they
    /// ask for it, with dynamic registration.
    pub oauth: OAuthSettings,
    /// The protocol era to speak: `None` detects it (the default); config key `era`.
    pub era: Option<mcp_core::Era>,
    /// Several endpoints of one remote server (`endpoints`), in configuration order; empty
    /// for a server with one `url`. The [`transport`](Self::transport) then holds the kind,
    /// the server's own headers and the first endpoint's URL; [`at_endpoint`](Self::at_endpoint)
    /// gives each endpoint as a server of its own.
    pub endpoints: Vec<EndpointConfig>,
}

/// One endpoint of a server that lists several (`endpoints: [{ url, region, headers }]`): the
/// same MCP server (the same tools) served at another address, usually in another region.
/// `Debug` never prints header values or the URL's user info and query.
#[derive(Clone, PartialEq)]
pub struct EndpointConfig {
    /// The endpoint's URL (its scheme picks the transport where the entry has no `type`).
    pub url: String,
    /// Its region label (`region`), compared with the client's own.
    pub region: Option<String>,
    /// Headers of this endpoint only, sent over the server's `headers` (values are secret).
    pub headers: BTreeMap<String, String>,
}

impl fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointConfig")
            .field("url", &mcp_wire::redact::redact_url(&self.url))
            .field("region", &self.region)
            .field("headers", &Redacted(&self.headers))
            .finish()
    }
}

/// A server's `oauth` settings, matching what Claude Code and Codex configs allow:
/// `oauth: { client_id, client_secret_env, scopes, redirect_port }`, plus
/// `client_metadata_url`, and for stdio servers `resource` + `token_env` (the token for that
/// protected resource is passed to the child in that variable). `oauth: false` turns OAuth off
/// for a remote server. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Default)]
pub struct OAuthSettings {
    /// `false` when the config says `oauth: false`.
    pub disabled: bool,
    /// A pre-registered client ID (`client_id` / `clientId`).
    pub client_id: Option<String>,
    /// The variable the client secret was read from (`client_secret_env`).
    pub client_secret_env: Option<String>,
    /// The client secret, read from `client_secret_env` (secret: never shown).
    pub client_secret: Option<String>,
    /// The scopes to ask for (`scopes`: a list or a space-separated string).
    pub scopes: Vec<String>,
    /// A fixed port for the login redirect listener (`redirect_port` / `callbackPort`).
    pub redirect_port: Option<u16>,
    /// An https URL of this client's metadata document, used as its `client_id` where the
    /// server supports that.
    pub client_metadata_url: Option<String>,
    /// stdio servers: the protected resource (an http(s) URL) whose token the child needs.
    pub resource: Option<String>,
    /// stdio servers: the environment variable the token is passed in.
    pub token_env: Option<String>,
    /// When tokens are bound to a DPoP key (`dpop`: `auto`, `always`, `never`).
    pub dpop: DpopSetting,
    /// Origins besides the server's own where its 401's `resource_metadata` may point
    /// (`resource_metadata_origins`: a list of http(s) URLs, only their origins count).
    pub resource_metadata_origins: Vec<String>,
    /// Which addresses OAuth requests to other origins may go to (`address_policy`).
    pub address_policy: AddressPolicySetting,
}

/// `oauth.address_policy`: which addresses the OAuth requests of a server may go to, besides
/// its own origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AddressPolicySetting {
    /// `auto`: decided by the server's own addresses (a server on a local network may use
    /// authorization servers there too; a public one only public ones).
    #[default]
    Auto,
    /// `public`: public addresses only.
    Public,
    /// `local-network`: loopback, private and shared (CGNAT) addresses too, e.g. a public
    /// MCP server whose authorization server is inside the user's network.
    LocalNetwork,
    /// `link-local`: link-local addresses (169.254.0.0/16, fe80::/10) too.
    LinkLocal,
}

/// `oauth.dpop`: when access tokens are bound to a DPoP key (RFC 9449), so a leaked token is
/// useless without the key this client holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpopSetting {
    /// Where the server takes DPoP-bound tokens and its authorization server can bind them.
    #[default]
    Auto,
    /// Wherever the authorization server can bind them.
    Always,
    /// Never (a server that takes only DPoP-bound tokens is then refused with a clear error).
    Never,
}

impl fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("disabled", &self.disabled)
            .field("client_id", &self.client_id)
            .field("client_secret_env", &self.client_secret_env)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("scopes", &self.scopes)
            .field("redirect_port", &self.redirect_port)
            .field("client_metadata_url", &self.client_metadata_url)
            .field(
                "resource",
                &self.resource.as_deref().map(mcp_wire::redact::redact_url),
            )
            .field("token_env", &self.token_env)
            .field("dpop", &self.dpop)
            .field(
                "resource_metadata_origins",
                &self
                    .resource_metadata_origins
                    .iter()
                    .map(|u| mcp_wire::redact::redact_url(u))
                    .collect::<Vec<_>>(),
            )
            .field("address_policy", &self.address_policy)
            .finish()
    }
}

impl ServerConfig {
    /// A server with the given transport and every other setting at its default.
    pub fn new(name: impl Into<String>, transport: TransportConfig) -> Self {
        ServerConfig {
            name: name.into(),
            transport,
            enabled: true,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            settings: HarnessSettings::default(),
            oauth: OAuthSettings::default(),
            era: None,
            endpoints: Vec::new(),
        }
    }

    /// Whether the server lists more than one endpoint (and so is routed among them).
    pub fn is_routed(&self) -> bool {
        self.endpoints.len() > 1
    }

    /// Endpoint `index` as a server of its own: the same entry with that endpoint's URL, its
    /// headers merged over the server's (a header named in both — compared without case —
    /// takes the endpoint's value), and no `endpoints`. `None` past the last endpoint; a
    /// server without endpoints is its own endpoint 0.
    pub fn at_endpoint(&self, index: usize) -> Option<ServerConfig> {
        if self.endpoints.is_empty() {
            return (index == 0).then(|| self.clone());
        }
        let endpoint = self.endpoints.get(index)?;
        let mut server = self.clone();
        server.endpoints = Vec::new();
        let merge = |url: &mut String, headers: &mut BTreeMap<String, String>| {
            url.clone_from(&endpoint.url);
            for (name, value) in &endpoint.headers {
                headers.retain(|k, _| !k.eq_ignore_ascii_case(name));
                headers.insert(name.clone(), value.clone());
            }
        };
        match &mut server.transport {
            TransportConfig::Http { url, headers }
            | TransportConfig::Sse { url, headers }
            | TransportConfig::Url { url, headers }
            | TransportConfig::Remote { url, headers, .. } => merge(url, headers),
            TransportConfig::Stdio { .. } | TransportConfig::InProcess => return None,
        }
        Some(server)
    }

    /// Whether the tool lists let `tool` through: on the allow-list (when there is one) and not
    /// on the deny-list.
    pub fn allows_tool(&self, tool: &str) -> bool {
        let allowed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool));
        allowed && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// How to reach a server.
#[derive(Clone, PartialEq)]
pub enum TransportConfig {
    /// A child process speaking newline-delimited JSON on stdin/stdout.
    Stdio {
        /// The program (looked up on `PATH` when not a path).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables for the child (values are secret: never logged).
        env: BTreeMap<String, String>,
        /// Working directory (as written; a relative path is relative to the harness's cwd).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP (`type: "http"`, `"streamable-http"`, `"streamableHttp"`, Codex `url`).
    Http {
        /// The endpoint, `http://` or `https://`.
        url: String,
        /// Extra request headers (values are secret: never logged).
        headers: BTreeMap<String, String>,
    },
    /// The 2024-11-05 HTTP+SSE transport (`type: "sse"`).
    Sse {
        /// The SSE endpoint, `http://` or `https://`.
        url: String,
        /// Extra request headers (values are secret: never logged).
        headers: BTreeMap<String, String>,
    },
    /// A `url` without a `type`: an http(s) URL is Streamable HTTP or HTTP+SSE, detected when
    /// connecting; another scheme (`ws://`, `wss://`) picks the transport that serves it.
    Url {
        /// The endpoint.
        url: String,
        /// Extra request headers (values are secret: never logged).
        headers: BTreeMap<String, String>,
    },
    /// A transport served by a registered factory, named by `type`: `"ws"` (also
    /// `"websocket"`), `"grpc"`, or a downstream crate's.
    Remote {
        /// The `type` (`"websocket"` is read as `"ws"`).
        kind: String,
        /// The endpoint.
        url: String,
        /// Extra request headers or metadata (values are secret: never logged).
        headers: BTreeMap<String, String>,
    },
    /// A server registered in code (`McpClientBuilder::local_server`): nothing to configure.
    InProcess,
}

impl TransportConfig {
    /// `"stdio"`, `"http"`, `"sse"`, `"url"`, `"in-process"`, or a remote transport's `type`
    /// (`"ws"`, `"grpc"`, …).
    pub fn kind(&self) -> &str {
        match self {
            TransportConfig::Stdio { .. } => "stdio",
            TransportConfig::Http { .. } => "http",
            TransportConfig::Sse { .. } => "sse",
            TransportConfig::Url { .. } => "url",
            TransportConfig::Remote { kind, .. } => kind,
            TransportConfig::InProcess => "in-process",
        }
    }

    /// The URL of a remote transport (`None` for stdio and in-process servers).
    pub fn url(&self) -> Option<&str> {
        match self {
            TransportConfig::Stdio { .. } | TransportConfig::InProcess => None,
            TransportConfig::Http { url, .. }
            | TransportConfig::Sse { url, .. }
            | TransportConfig::Url { url, .. }
            | TransportConfig::Remote { url, .. } => Some(url),
        }
    }

    /// The extra headers of a remote transport (`None` for stdio and in-process servers).
    pub fn headers(&self) -> Option<&BTreeMap<String, String>> {
        match self {
            TransportConfig::Stdio { .. } | TransportConfig::InProcess => None,
            TransportConfig::Http { headers, .. }
            | TransportConfig::Sse { headers, .. }
            | TransportConfig::Url { headers, .. }
            | TransportConfig::Remote { headers, .. } => Some(headers),
        }
    }
}

/// Prints a map's keys with every value replaced by `"<redacted>"`.
struct Redacted<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "<redacted>")))
            .finish()
    }
}

impl fmt::Debug for TransportConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                // Arguments often carry keys (`--api-key=…`): only their count is shown.
                .field(
                    "args",
                    &format_args!("<{} arguments, redacted>", args.len()),
                )
                .field("env", &Redacted(env))
                .field("cwd", cwd)
                .finish(),
            TransportConfig::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &mcp_wire::redact::redact_url(url))
                .field("headers", &Redacted(headers))
                .finish(),
            TransportConfig::Sse { url, headers } => f
                .debug_struct("Sse")
                .field("url", &mcp_wire::redact::redact_url(url))
                .field("headers", &Redacted(headers))
                .finish(),
            TransportConfig::Url { url, headers } => f
                .debug_struct("Url")
                .field("url", &mcp_wire::redact::redact_url(url))
                .field("headers", &Redacted(headers))
                .finish(),
            TransportConfig::Remote { kind, url, headers } => f
                .debug_struct("Remote")
                .field("kind", kind)
                .field("url", &mcp_wire::redact::redact_url(url))
                .field("headers", &Redacted(headers))
                .finish(),
            TransportConfig::InProcess => f.write_str("InProcess"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_env_and_header_values() {
        let stdio = TransportConfig::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "--api-key=ak-secret321".into()],
            env: BTreeMap::from([("GITHUB_TOKEN".into(), "ghp_secret123".into())]),
            cwd: None,
        };
        let http = TransportConfig::Http {
            url: "https://user:pw-secret789@example.com/mcp?api_key=q-secret000".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer sk-secret456".into())]),
        };
        let config = ClientConfig {
            servers: vec![ServerConfig::new("a", stdio), ServerConfig::new("b", http)],
            ..ClientConfig::default()
        };
        for text in [format!("{config:?}"), format!("{config:#?}")] {
            assert!(!text.contains("ghp_secret123"), "{text}");
            assert!(!text.contains("ak-secret321"), "{text}");
            assert!(!text.contains("sk-secret456"), "{text}");
            assert!(!text.contains("pw-secret789"), "{text}");
            assert!(!text.contains("q-secret000"), "{text}");
        }
        let text = format!("{:?}", config.servers[0].transport);
        assert!(text.contains(r#""GITHUB_TOKEN": "<redacted>""#), "{text}");
        assert!(text.contains("<2 arguments, redacted>"), "{text}");
        assert!(text.contains("npx"));
        let text = format!("{:?}", config.servers[1]);
        assert!(text.contains(r#""Authorization": "<redacted>""#), "{text}");
        assert!(
            text.contains("https://<redacted>@example.com/mcp"),
            "{text}"
        );
    }

    #[test]
    fn endpoints_merge_their_headers_over_the_servers() {
        let mut server = ServerConfig::new(
            "search",
            TransportConfig::Http {
                url: "https://eu.example.com/mcp".into(),
                headers: BTreeMap::from([
                    ("Authorization".into(), "Bearer server".into()),
                    ("X-Team".into(), "a".into()),
                ]),
            },
        );
        assert_eq!(server.at_endpoint(0).as_ref(), Some(&server));
        assert_eq!(server.at_endpoint(1), None);
        server.endpoints = vec![
            EndpointConfig {
                url: "https://eu.example.com/mcp".into(),
                region: Some("eu-west".into()),
                headers: BTreeMap::new(),
            },
            EndpointConfig {
                url: "https://us.example.com/mcp".into(),
                region: Some("us-east".into()),
                headers: BTreeMap::from([("authorization".into(), "Bearer us-secret".into())]),
            },
        ];
        assert!(server.is_routed());
        let us = server.at_endpoint(1).expect("endpoint 1");
        assert!(us.endpoints.is_empty());
        assert_eq!(us.transport.url(), Some("https://us.example.com/mcp"));
        let headers = us.transport.headers().expect("remote");
        assert_eq!(
            headers.get("authorization").map(String::as_str),
            Some("Bearer us-secret")
        );
        assert_eq!(headers.get("Authorization"), None);
        assert_eq!(headers.get("X-Team").map(String::as_str), Some("a"));
        assert_eq!(server.at_endpoint(2), None);
        let shown = format!("{server:?}");
        assert!(!shown.contains("us-secret"), "{shown}");
        assert!(shown.contains("us-east"), "{shown}");
    }

    #[test]
    fn tool_filters() {
        let mut s = ServerConfig::new(
            "s",
            TransportConfig::Url {
                url: "http://h".into(),
                headers: BTreeMap::new(),
            },
        );
        assert!(s.allows_tool("x"));
        s.enabled_tools = Some(vec!["x".into(), "y".into()]);
        s.disabled_tools = vec!["y".into()];
        assert!(s.allows_tool("x"));
        assert!(!s.allows_tool("y"));
        assert!(!s.allows_tool("z"));
        assert_eq!(s.transport.kind(), "url");
        assert_eq!(s.transport.url(), Some("http://h"));
    }
}
