//! [`McpClientBuilder`]: how a harness sets up its [`McpClient`](crate::McpClient) — its own
//! [`ClientHandler`] (sampling, elicitation, roots), per-server session options, the layers of
//! the call stack and the reconnect schedule.

use std::sync::Arc;
use std::time::Duration;

use mcp_core::types::Implementation;
use mcp_core::TransportConnector;
use mcp_session::{ClientHandler, SessionOptions};

use crate::client::{ClientOptions, McpClient};
use crate::config::{ClientConfig, ServerConfig, TransportConfig};
use crate::stack::StackPolicy;
use crate::supervisor::SupervisionPolicy;
use crate::transports::TransportFactory;
use crate::transports::TransportRegistry;

/// Adjusts the session options of one server's sessions (every connection, reconnect and
/// pooled session of it).
pub type SessionOptionsHook =
    Arc<dyn Fn(&ServerConfig, SessionOptions) -> SessionOptions + Send + Sync>;

/// What makes each server's handler from its name.
pub(crate) type HandlerFor = Arc<dyn Fn(&str) -> Arc<dyn ClientHandler> + Send + Sync>;

/// The same handler for every server.
fn one_handler(handler: Arc<dyn ClientHandler>) -> HandlerFor {
    Arc::new(move |_| handler.clone())
}

/// Builds an [`McpClient`]; see [`McpClient::builder`].
pub struct McpClientBuilder {
    pub(crate) config: ClientConfig,
    pub(crate) options: ClientOptions,
    pub(crate) handler: HandlerFor,
    pub(crate) session_options: Option<SessionOptionsHook>,
    pub(crate) stack: StackPolicy,
    pub(crate) supervision: SupervisionPolicy,
    pub(crate) transports: TransportRegistry,
    pub(crate) metrics: mcp_metrics::Metrics,
    #[cfg(feature = "oauth")]
    pub(crate) oauth: crate::auth::OAuthPolicy,
    pub(crate) region: Option<String>,
    pub(crate) routing: crate::router::RoutingPolicy,
    pub(crate) max_concurrent_starts: usize,
    #[cfg(feature = "fleet")]
    pub(crate) fleet: Option<Option<Arc<mcp_fleet::Fleet>>>,
}

/// How many servers [`McpClientBuilder::start`] starts at once by default: 16. Each start-up
/// is a child process (stdio) or a connection plus `initialize` and `tools/list`; a
/// configuration of many servers starts in waves of this size instead of all at once.
pub const DEFAULT_MAX_CONCURRENT_STARTS: usize = 16;

impl McpClientBuilder {
    pub(crate) fn new(config: ClientConfig) -> McpClientBuilder {
        McpClientBuilder {
            config,
            options: ClientOptions::default(),
            handler: one_handler(Arc::new(())),
            session_options: None,
            stack: StackPolicy::default(),
            supervision: SupervisionPolicy::default(),
            transports: TransportRegistry::with_profile(),
            metrics: mcp_metrics::Metrics::new(),
            #[cfg(feature = "oauth")]
            oauth: crate::auth::OAuthPolicy::default(),
            region: None,
            routing: crate::router::RoutingPolicy::default(),
            max_concurrent_starts: DEFAULT_MAX_CONCURRENT_STARTS,
            #[cfg(feature = "fleet")]
            fleet: None,
        }
    }

    /// Shares state with a fleet through `fleet` (its Redis): OAuth tokens (unless
    /// [`oauth`](Self::oauth) set a store of its own) and `scope: "fleet"` rate limits; `None`
    /// shares nothing. Without this call the configuration's `store` (or `MCPH_STORE`) is
    /// opened with [`crate::fleet::open`]; if that fails the client logs the error and shares
    /// nothing (`mcph` refuses to start instead).
    #[cfg(feature = "fleet")]
    pub fn fleet(mut self, fleet: Option<Arc<mcp_fleet::Fleet>>) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// Sets how servers that use OAuth are authorized (token store, login hint, interactive
    /// login); see [`OAuthPolicy`](crate::OAuthPolicy).
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, policy: crate::auth::OAuthPolicy) -> Self {
        self.oauth = policy;
        self
    }

    /// Sets the client name and shutdown bound.
    pub fn options(mut self, options: ClientOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets the `clientInfo` sent in every `initialize`.
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.options.client_info = Implementation::new(name, version);
        self
    }

    /// How long [`McpClient::shutdown`] waits per server.
    pub fn shutdown_timeout(mut self, limit: Duration) -> Self {
        self.options.shutdown_timeout = limit;
        self
    }

    /// The harness's handler: it answers every server's sampling, elicitation and roots
    /// requests (its capabilities are what every `initialize` advertises) and sees every
    /// notification. Default: `()`, which declares nothing.
    pub fn handler(mut self, handler: impl ClientHandler) -> Self {
        self.handler = one_handler(Arc::new(handler));
        self
    }

    /// [`handler`](Self::handler) with a handler already behind an `Arc`.
    pub fn shared_handler(mut self, handler: Arc<dyn ClientHandler>) -> Self {
        self.handler = one_handler(handler);
        self
    }

    /// A handler of each server's own, made from its configured name when the server is added
    /// (a gateway answers a server's requests through the calls it makes to that server).
    pub fn handler_per_server(
        mut self,
        make: impl Fn(&str) -> Arc<dyn ClientHandler> + Send + Sync + 'static,
    ) -> Self {
        self.handler = Arc::new(make);
        self
    }

    /// Adjusts each server's session options (error-code table, notification buffer,
    /// reset-on-progress, …). The hook gets the options the facade derived from the entry
    /// (`startup_timeout`, `tool_timeout`, the client info) and returns the ones to use.
    pub fn session_options(
        mut self,
        hook: impl Fn(&ServerConfig, SessionOptions) -> SessionOptions + Send + Sync + 'static,
    ) -> Self {
        self.session_options = Some(Arc::new(hook));
        self
    }

    /// Which layers every server's call stack gets (default: the compiled profile's).
    pub fn stack_policy(mut self, policy: StackPolicy) -> Self {
        self.stack = policy;
        self
    }

    /// Adds a transport: servers whose `type` (or bare URL's scheme) it serves are reached
    /// through it — a downstream crate's transport, or one of ours in place of the built-in.
    pub fn transport(mut self, factory: Arc<dyn TransportFactory>) -> Self {
        self.transports.register(factory);
        self
    }

    /// Adds a server reached in process through `connector` (e.g. an `mcp-transport-local`
    /// server's), with the default harness settings; it takes part in the catalog, the call
    /// stack and supervision like any configured server.
    pub fn local_server(mut self, name: &str, connector: Arc<dyn TransportConnector>) -> Self {
        self.transports.register_in_process(name, connector);
        self.config
            .servers
            .push(ServerConfig::new(name, TransportConfig::InProcess));
        self
    }

    /// The registry every server's calls are counted in (default: a new one, 10 s QPS
    /// window). Give one configured with an OpenTelemetry meter or tracer (feature `otel`) to
    /// export the MCP semantic conventions and propagate the trace context.
    pub fn metrics(mut self, metrics: mcp_metrics::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// The reconnect schedule and health checks (default: immediate, 1 s, 2 s, 4 s, 8 s).
    pub fn supervision(mut self, policy: SupervisionPolicy) -> Self {
        self.supervision = policy;
        self
    }

    /// The client's own region: servers with several `endpoints` send their calls to an
    /// endpoint of this region when one is healthy. It wins over the configuration's top-level
    /// `"region"`, which wins over the `MCPH_REGION` environment variable; with none of them
    /// there is no region preference (the lowest latency decides).
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// How servers with several endpoints weigh them (default: another endpoint of the same
    /// region tier must answer its probes 25 % faster, over at least 3 probes, before the calls
    /// move to it).
    pub fn routing(mut self, policy: crate::router::RoutingPolicy) -> Self {
        self.routing = policy;
        self
    }

    /// How many servers [`start`](Self::start) starts at once (default
    /// [`DEFAULT_MAX_CONCURRENT_STARTS`], 16; 0 counts as 1, and anything over tokio's largest
    /// semaphore as that, unbounded in practice): the others wait for a start-up to end (ready,
    /// failed or timed out) before theirs begins, in configuration order. Only the first
    /// start-up is bounded; later restarts and reconnects are each server's own.
    pub fn max_concurrent_starts(mut self, limit: usize) -> Self {
        self.max_concurrent_starts = limit.max(1);
        self
    }

    /// Starts every enabled server, at most
    /// [`max_concurrent_starts`](Self::max_concurrent_starts) at once, and returns once each is
    /// ready or its start-up attempt is over (each bounded by its `startup_timeout`). Never
    /// fails as a whole: check [`McpClient::servers`] for each server's status.
    pub async fn start(self) -> McpClient {
        McpClient::from_builder(self).await
    }
}
