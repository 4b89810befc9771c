//! Which addresses the OAuth requests of one MCP server may go to.
//!
//! Metadata discovery follows URLs that a server hands out: the `resource_metadata` of its 401, the
//! authorization servers its metadata names, and the token, registration, device and
//! revocation endpoints their metadata names. Without a check, a hostile server could point
//! them at the client's own network (`https://169.254.169.254/` — a cloud metadata service —,
//! `localhost`, a router at `192.168.0.1`) and have the client send requests there. So every
//! request of [`AuthHttp::for_config`](crate::http::AuthHttp::for_config):
//!
//! - goes to an origin the configuration names (the MCP server's own, a cross-app access
//!   identity provider's token endpoint) without an address check: the user chose those;
//! - otherwise has its host resolved with the system resolver, and is refused
//!   ([`AuthError::RefusedAddress`]) unless **every** address the host resolves to is allowed
//!   by the server's [`AddressPolicy`]; the connection then goes to those checked addresses
//!   only ([`PinnedAddresses`] is the HTTP client's resolver), so a name that resolves to a
//!   public address for the check and to a private one for the connection (DNS rebinding) is
//!   not followed. A name that cannot be resolved fails the request as a connection error
//!   ([`AuthError::Http`]): it is never sent unchecked.
//!
//! The [`AddressPolicy`] follows from where the MCP server itself is ([`AddressPolicy::for_server`]):
//! a server whose host resolves only to loopback, private or shared (CGNAT) addresses is on a
//! local network, and its authorization server may be too; a server with any public address
//! gets public authorization servers only. Link-local addresses (169.254.0.0/16, fe80::/10,
//! where cloud metadata services live) are allowed only to a server that is itself link-local.
//! Unspecified, multicast, broadcast, documentation and reserved addresses are never allowed.
//! A server whose host this machine cannot resolve (it is reached through a proxy, or there is
//! no DNS here) is taken to be public.
//!
//! A request that goes through an HTTP proxy (`HTTPS_PROXY`, `HTTP_PROXY` or `ALL_PROXY`, and
//! its host not in `NO_PROXY`: the decision reqwest's client makes, see [`ProxyRoutes`]) is
//! connected by the proxy, which resolves the name itself; this machine may not be able to
//! resolve it at all, and the connection cannot be pinned. Such a request is checked by its
//! name only: an IP address host is classified as above, `localhost` and `*.localhost` are
//! loopback (RFC 6761), and any other name is allowed without a lookup. The proxy is then the
//! boundary: a proxy that reaches internal names is trusted not to be turned against them.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hyper_util::client::proxy::matcher::Matcher;
use mcp_core::sync::lock;
use mcp_wire::redact::redact_url;
use url::{Host, Origin, Url};

use crate::error::AuthError;

/// What kind of non-public address an address is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonPublicKind {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918 (10/8, 172.16/12, 192.168/16), unique local fc00::/7, site-local fec0::/10.
    Private,
    /// RFC 6598 shared address space (carrier-grade NAT), 100.64.0.0/10.
    SharedAddressSpace,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// 0.0.0.0, ::.
    Unspecified,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// Other special-purpose ranges (0/8, 192.0.0/24, 198.18/15, 240/4, 100::/64).
    Reserved,
}

/// A non-public address's kind and the range it is in, e.g. link-local in `169.254.0.0/16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NonPublic {
    /// What kind of address it is.
    pub kind: NonPublicKind,
    /// The range it is in, as written in its RFC.
    pub range: &'static str,
}

impl NonPublicKind {
    /// Whether an MCP server on such an address is on a local network (see
    /// [`AddressPolicy::for_server`]).
    fn is_local_network(self) -> bool {
        matches!(
            self,
            NonPublicKind::Loopback
                | NonPublicKind::Private
                | NonPublicKind::SharedAddressSpace
                | NonPublicKind::LinkLocal
        )
    }

    fn describe(self) -> &'static str {
        match self {
            NonPublicKind::Loopback => "a loopback address",
            NonPublicKind::Private => "a private-network address",
            NonPublicKind::SharedAddressSpace => "a shared (carrier-grade NAT) address",
            NonPublicKind::LinkLocal => "a link-local address",
            NonPublicKind::Unspecified => "the unspecified address",
            NonPublicKind::Multicast => "a multicast address",
            NonPublicKind::Broadcast => "the broadcast address",
            NonPublicKind::Documentation => "a documentation address",
            NonPublicKind::Reserved => "a reserved address",
        }
    }
}

impl fmt::Display for NonPublic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.kind.describe(), self.range)
    }
}

/// The class of `ip`: `None` for a public address, else what kind of non-public address it
/// is. An IPv6 address that embeds an IPv4 one (IPv4-mapped `::ffff:0:0/96`, IPv4-compatible
/// `::/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is classed by the IPv4 address.
pub fn classify(ip: IpAddr) -> Option<NonPublic> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<NonPublic> {
    use NonPublicKind::*;
    let [a, b, c, _] = ip.octets();
    let (kind, range) = match (a, b, c) {
        _ if ip.is_unspecified() => (Unspecified, "0.0.0.0/32"),
        _ if ip.is_broadcast() => (Broadcast, "255.255.255.255/32"),
        (0, _, _) => (Reserved, "0.0.0.0/8"),
        (10, _, _) => (Private, "10.0.0.0/8"),
        (100, 64..=127, _) => (SharedAddressSpace, "100.64.0.0/10"),
        (127, _, _) => (Loopback, "127.0.0.0/8"),
        (169, 254, _) => (LinkLocal, "169.254.0.0/16"),
        (172, 16..=31, _) => (Private, "172.16.0.0/12"),
        (192, 0, 0) => (Reserved, "192.0.0.0/24"),
        (192, 0, 2) => (Documentation, "192.0.2.0/24"),
        (192, 168, _) => (Private, "192.168.0.0/16"),
        (198, 18..=19, _) => (Reserved, "198.18.0.0/15"),
        (198, 51, 100) => (Documentation, "198.51.100.0/24"),
        (203, 0, 113) => (Documentation, "203.0.113.0/24"),
        (224..=239, _, _) => (Multicast, "224.0.0.0/4"),
        (240..=255, _, _) => (Reserved, "240.0.0.0/4"),
        _ => return None,
    };
    Some(NonPublic { kind, range })
}

fn classify_v6(ip: Ipv6Addr) -> Option<NonPublic> {
    use NonPublicKind::*;
    let segments = ip.segments();
    let embedded = |high: usize| {
        let [a, b] = segments[high].to_be_bytes();
        let [c, d] = segments[high + 1].to_be_bytes();
        classify_v4(Ipv4Addr::new(a, b, c, d))
    };
    let (kind, range) = match segments {
        _ if ip.is_unspecified() => (Unspecified, "::/128"),
        _ if ip.is_loopback() => (Loopback, "::1/128"),
        // IPv4-mapped and IPv4-compatible: the IPv4 address decides.
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0, 0, _, _] => return embedded(6),
        // NAT64 well-known prefix (RFC 6052).
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => return embedded(6),
        // 6to4 (RFC 3056): 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
        [0x2002, ..] => return embedded(1),
        [0x100, 0, 0, 0, ..] => (Reserved, "100::/64"),
        [0x2001, 0xdb8, ..] => (Documentation, "2001:db8::/32"),
        [s, ..] if s & 0xfff0 == 0x3ff0 => (Documentation, "3fff::/20"),
        [s, ..] if s & 0xfe00 == 0xfc00 => (Private, "fc00::/7"),
        [s, ..] if s & 0xffc0 == 0xfe80 => (LinkLocal, "fe80::/10"),
        [s, ..] if s & 0xffc0 == 0xfec0 => (Private, "fec0::/10"),
        [s, ..] if s & 0xff00 == 0xff00 => (Multicast, "ff00::/8"),
        _ => return None,
    };
    Some(NonPublic { kind, range })
}

/// Which addresses the OAuth requests of one MCP server may go to, decided by the addresses
/// of the server itself ([`for_server`](Self::for_server)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressPolicy {
    /// The server has a public address: public addresses only.
    PublicOnly,
    /// The server is on a local network (loopback, private or shared addresses only): those
    /// too, but not link-local ones.
    AlsoLocalNetwork,
    /// The server is on a local network and has a link-local address: link-local addresses
    /// too.
    AlsoLinkLocal,
}

impl AddressPolicy {
    /// The policy for an MCP server whose host resolves to `addresses`: a local network
    /// ([`AlsoLocalNetwork`](Self::AlsoLocalNetwork)) when every one of them is loopback,
    /// private, shared or link-local, and link-local too
    /// ([`AlsoLinkLocal`](Self::AlsoLinkLocal)) when one of them is link-local; otherwise
    /// (one public address is enough, or none at all)
    /// [`PublicOnly`](Self::PublicOnly).
    pub fn for_server(addresses: &[IpAddr]) -> AddressPolicy {
        let classes: Option<Vec<NonPublic>> = addresses.iter().map(|ip| classify(*ip)).collect();
        match classes {
            Some(classes)
                if !classes.is_empty() && classes.iter().all(|c| c.kind.is_local_network()) =>
            {
                if classes.iter().any(|c| c.kind == NonPublicKind::LinkLocal) {
                    AddressPolicy::AlsoLinkLocal
                } else {
                    AddressPolicy::AlsoLocalNetwork
                }
            }
            _ => AddressPolicy::PublicOnly,
        }
    }

    /// Whether a request may go to `ip`; the refusal says why not.
    pub fn permits(self, ip: IpAddr) -> Result<(), Refusal> {
        let Some(class) = classify(ip) else {
            return Ok(());
        };
        let allowed = matches!(
            (self, class.kind),
            (
                AddressPolicy::AlsoLocalNetwork | AddressPolicy::AlsoLinkLocal,
                NonPublicKind::Loopback
                    | NonPublicKind::Private
                    | NonPublicKind::SharedAddressSpace,
            ) | (AddressPolicy::AlsoLinkLocal, NonPublicKind::LinkLocal)
        );
        if allowed {
            Ok(())
        } else {
            Err(Refusal {
                class,
                policy: self,
            })
        }
    }
}

/// Why an address was refused: its class, and the policy that does not allow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The address's class.
    pub class: NonPublic,
    /// The MCP server's policy.
    pub policy: AddressPolicy,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = match (self.policy, self.class.kind) {
            (_, kind) if !kind.is_local_network() => "which OAuth requests never go to",
            (AddressPolicy::PublicOnly, _) => {
                "and the MCP server is on a public address, so its OAuth requests go only to \
                 public addresses"
            }
            _ => {
                "which OAuth requests go to only when the MCP server is itself on a link-local \
                 address"
            }
        };
        write!(f, "{}, {rule}", self.class)
    }
}

/// How host names are resolved for the check: the system resolver in use, a table in tests.
#[async_trait]
pub trait HostResolver: Send + Sync + fmt::Debug {
    /// The addresses of `host`.
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}

/// The system resolver (`getaddrinfo`, through [`tokio::net::lookup_host`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

#[async_trait]
impl HostResolver for SystemResolver {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        let addresses = tokio::net::lookup_host((host, 0)).await?;
        Ok(addresses.map(|a| a.ip()).collect())
    }
}

/// The addresses each checked host name was resolved to, which the HTTP client's connections
/// use (its [`reqwest::dns::Resolve`]): a request goes to the addresses that passed the check,
/// not to a second answer of the resolver. Names that were never checked (the configured
/// origins, a proxy) are resolved by the system resolver.
#[derive(Clone, Debug, Default)]
pub struct PinnedAddresses {
    hosts: Arc<Mutex<HashMap<String, Vec<IpAddr>>>>,
}

impl PinnedAddresses {
    fn pin(&self, host: &str, addresses: Vec<IpAddr>) {
        lock(&self.hosts).insert(host.to_ascii_lowercase(), addresses);
    }

    fn pinned(&self, host: &str) -> Option<Vec<IpAddr>> {
        lock(&self.hosts).get(&host.to_ascii_lowercase()).cloned()
    }
}

impl reqwest::dns::Resolve for PinnedAddresses {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let pinned = self.pinned(name.as_str());
        Box::pin(async move {
            // Port 0: the client puts in the URL's port.
            let addresses: Vec<SocketAddr> = match pinned {
                Some(ips) => ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect(),
                None => tokio::net::lookup_host((name.as_str(), 0)).await?.collect(),
            };
            let addresses: reqwest::dns::Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

/// Which requests go through an HTTP proxy, decided as reqwest's client decides it: with the
/// same matcher (hyper-util's), read from the same place when the client is built — the
/// environment variables `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` (upper or
/// lower case), and the system's proxy settings where that feature is compiled in.
#[derive(Clone)]
pub struct ProxyRoutes {
    matcher: Arc<Matcher>,
}

impl fmt::Debug for ProxyRoutes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The proxy URLs may carry a user and password: not shown.
        f.debug_struct("ProxyRoutes").finish_non_exhaustive()
    }
}

impl ProxyRoutes {
    /// The proxies of this process's environment, as an HTTP client built now without proxy
    /// settings of its own uses them.
    pub fn from_environment() -> ProxyRoutes {
        ProxyRoutes {
            matcher: Arc::new(Matcher::from_system()),
        }
    }

    /// No proxy: every request connects directly.
    pub fn direct() -> ProxyRoutes {
        ProxyRoutes {
            matcher: Arc::new(Matcher::builder().build()),
        }
    }

    /// The proxies the variables would give: `https` for https URLs, `http` for http ones
    /// (each falling back to `all`), except for the hosts in the `no_proxy` list (its syntax:
    /// comma-separated names, which match their subdomains too, IP addresses and ranges, `*`).
    pub fn new(
        all: Option<&str>,
        https: Option<&str>,
        http: Option<&str>,
        no_proxy: &str,
    ) -> ProxyRoutes {
        let builder = Matcher::builder()
            .all(all.unwrap_or_default().to_owned())
            .https(https.unwrap_or_default().to_owned())
            .http(http.unwrap_or_default().to_owned())
            .no(no_proxy.to_owned());
        ProxyRoutes {
            matcher: Arc::new(builder.build()),
        }
    }

    /// Whether a request to `url` goes through a proxy.
    pub fn proxies(&self, url: &Url) -> bool {
        // reqwest turns the URL into a URI the same way; a URL it cannot turn into one is
        // never sent, so "direct" (the stricter check) is right for it.
        match url.as_str().parse::<http::Uri>() {
            Ok(uri) => self.matcher.intercept(&uri).is_some(),
            Err(_) => false,
        }
    }
}

/// The address a host name stands for by definition, without a lookup: `localhost` and the
/// names under `.localhost` are loopback (RFC 6761 §6.3).
fn address_by_name(domain: &str) -> Option<IpAddr> {
    let name = domain
        .strip_suffix('.')
        .unwrap_or(domain)
        .to_ascii_lowercase();
    (name == "localhost" || name.ends_with(".localhost")).then_some(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// How long resolving one host name may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The address check of one MCP server's OAuth requests (see the module documentation).
pub struct AddressGuard {
    server: Url,
    configured: Vec<Origin>,
    resolver: Arc<dyn HostResolver>,
    proxies: ProxyRoutes,
    policy: tokio::sync::OnceCell<AddressPolicy>,
    pinned: PinnedAddresses,
}

impl fmt::Debug for AddressGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The server URL may carry a key in its query: shown redacted, like everywhere else.
        f.debug_struct("AddressGuard")
            .field("server", &redact_url(self.server.as_str()))
            .field("policy", &self.policy.get())
            .field("resolver", &self.resolver)
            .finish_non_exhaustive()
    }
}

impl AddressGuard {
    /// A guard for the MCP server at `server`; requests to `configured` origins (and the
    /// server's own) are not checked. A `policy` given here is used as is; without one it is
    /// decided from the server's addresses on the first request. Which requests go through a
    /// proxy is read from the environment ([`ProxyRoutes::from_environment`]), as the HTTP
    /// client built next to the guard reads it; [`with_proxy_routes`](Self::with_proxy_routes)
    /// sets it otherwise.
    pub fn new(
        server: &Url,
        configured: Vec<Origin>,
        resolver: Arc<dyn HostResolver>,
        policy: Option<AddressPolicy>,
    ) -> AddressGuard {
        let mut configured = configured;
        configured.push(server.origin());
        AddressGuard {
            server: server.clone(),
            configured,
            resolver,
            proxies: ProxyRoutes::from_environment(),
            policy: tokio::sync::OnceCell::new_with(policy),
            pinned: PinnedAddresses::default(),
        }
    }

    /// The guard with `proxies` deciding which requests go through a proxy (they must be the
    /// HTTP client's own).
    pub fn with_proxy_routes(mut self, proxies: ProxyRoutes) -> AddressGuard {
        self.proxies = proxies;
        self
    }

    /// The resolver the HTTP client connects with.
    pub fn pinned_addresses(&self) -> PinnedAddresses {
        self.pinned.clone()
    }

    /// The MCP server's policy, decided from its addresses the first time. A server this
    /// machine does not resolve — reached through a proxy by a name other than `localhost`, or
    /// its name not resolvable here — is taken to be public.
    pub async fn policy(&self) -> AddressPolicy {
        *self
            .policy
            .get_or_init(|| async {
                let addresses = match self.destination(&self.server).await {
                    Ok(Destination::Direct(addresses)) => addresses,
                    Ok(Destination::ByName(address)) => address.into_iter().collect(),
                    Err(error) => {
                        tracing::debug!(
                            "taking the MCP server to be on a public address for its OAuth                              requests: {error}"
                        );
                        Vec::new()
                    }
                };
                AddressPolicy::for_server(&addresses)
            })
            .await
    }

    /// Refuses `url` unless it is on a configured origin or every address its host resolves
    /// to is allowed by the server's policy; the addresses checked are the ones connected to.
    /// A request through a proxy is checked by its host name only (module documentation).
    pub async fn admit(&self, url: &Url) -> Result<(), AuthError> {
        if self.configured.contains(&url.origin()) {
            return Ok(());
        }
        let policy = self.policy().await;
        let destination = self.destination(url).await?;
        let addresses = match &destination {
            Destination::Direct(addresses) => addresses.as_slice(),
            Destination::ByName(address) => address.as_slice(),
        };
        for address in addresses {
            policy
                .permits(*address)
                .map_err(|refusal| AuthError::RefusedAddress {
                    url: redact_url(url.as_str()),
                    address: *address,
                    reason: refusal.to_string(),
                })?;
        }
        if let (Destination::Direct(addresses), Some(Host::Domain(domain))) =
            (destination, url.host())
        {
            self.pinned.pin(domain, addresses);
        }
        Ok(())
    }

    /// Where a request to `url` goes, as far as this machine can tell.
    async fn destination(&self, url: &Url) -> Result<Destination, AuthError> {
        let domain = match url.host() {
            Some(Host::Ipv4(ip)) => return Ok(Destination::Direct(vec![IpAddr::V4(ip)])),
            Some(Host::Ipv6(ip)) => return Ok(Destination::Direct(vec![IpAddr::V6(ip)])),
            Some(Host::Domain(domain)) => domain,
            None => {
                return Err(AuthError::InvalidUrl(format!(
                    "{} has no host",
                    redact_url(url.as_str())
                )))
            }
        };
        if self.proxies.proxies(url) {
            return Ok(Destination::ByName(address_by_name(domain)));
        }
        // The error reads as the request's own would: the name cannot be connected to
        // directly, whatever the policy.
        let cannot = |why: String| {
            AuthError::Http(format!(
                "request to {} failed: cannot resolve {domain}: {why}",
                redact_url(url.as_str())
            ))
        };
        let addresses = tokio::time::timeout(LOOKUP_TIMEOUT, self.resolver.lookup(domain))
            .await
            .map_err(|_| {
                cannot(format!(
                    "no answer within {}",
                    mcp_core::time::human_duration(LOOKUP_TIMEOUT)
                ))
            })?
            .map_err(|e| cannot(e.to_string()))?;
        if addresses.is_empty() {
            return Err(cannot("it has no addresses".into()));
        }
        Ok(Destination::Direct(addresses))
    }
}

/// Where a request goes, as far as this machine can tell.
enum Destination {
    /// Straight to these addresses: the host's IP address, or what its name resolved to here
    /// (the connection is pinned to them).
    Direct(Vec<IpAddr>),
    /// Through a proxy, which resolves the name: the address the name stands for by
    /// definition (`localhost`), if any.
    ByName(Option<IpAddr>),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn kind(text: &str) -> Option<NonPublicKind> {
        classify(ip(text)).map(|c| c.kind)
    }

    #[test]
    fn addresses_are_classified_by_their_special_purpose_range() {
        use NonPublicKind::*;
        let table = [
            ("127.0.0.1", Some(Loopback)),
            ("127.255.1.2", Some(Loopback)),
            ("::1", Some(Loopback)),
            ("10.1.2.3", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("192.168.1.1", Some(Private)),
            ("fd00::1", Some(Private)),
            ("fc00::1", Some(Private)),
            ("fec0::1", Some(Private)),
            ("100.64.0.1", Some(SharedAddressSpace)),
            ("100.127.255.255", Some(SharedAddressSpace)),
            ("169.254.169.254", Some(LinkLocal)),
            ("fe80::1", Some(LinkLocal)),
            ("febf::1", Some(LinkLocal)),
            ("0.0.0.0", Some(Unspecified)),
            ("::", Some(Unspecified)),
            ("224.0.0.1", Some(Multicast)),
            ("239.255.255.250", Some(Multicast)),
            ("ff02::1", Some(Multicast)),
            ("255.255.255.255", Some(Broadcast)),
            ("192.0.2.1", Some(Documentation)),
            ("198.51.100.7", Some(Documentation)),
            ("203.0.113.9", Some(Documentation)),
            ("2001:db8::1", Some(Documentation)),
            ("3fff::1", Some(Documentation)),
            ("0.1.2.3", Some(Reserved)),
            ("192.0.0.8", Some(Reserved)),
            ("198.18.0.1", Some(Reserved)),
            ("240.0.0.1", Some(Reserved)),
            ("100::1", Some(Reserved)),
            // IPv6 forms of IPv4 addresses are classed by the IPv4 address.
            ("::ffff:169.254.169.254", Some(LinkLocal)),
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:10.0.0.1", Some(Private)),
            ("::127.0.0.1", Some(Loopback)),
            ("64:ff9b::a9fe:a9fe", Some(LinkLocal)),
            ("2002:c0a8:0101::1", Some(Private)),
            // Public.
            ("93.184.216.34", None),
            ("8.8.8.8", None),
            ("100.63.255.255", None),
            ("100.128.0.0", None),
            ("172.15.255.255", None),
            ("172.32.0.0", None),
            ("169.253.1.1", None),
            ("2606:4700:4700::1111", None),
            ("::ffff:8.8.8.8", None),
            ("2002:0808:0808::1", None),
            ("fe00::1", None),
        ];
        for (address, want) in table {
            assert_eq!(kind(address), want, "{address}");
        }
    }

    #[test]
    fn the_servers_addresses_decide_its_policy() {
        let policy = |addresses: &[&str]| {
            AddressPolicy::for_server(&addresses.iter().map(|a| ip(a)).collect::<Vec<_>>())
        };
        assert_eq!(policy(&["93.184.216.34"]), AddressPolicy::PublicOnly);
        assert_eq!(policy(&[]), AddressPolicy::PublicOnly);
        // One public address makes the server public.
        assert_eq!(
            policy(&["10.0.0.1", "93.184.216.34"]),
            AddressPolicy::PublicOnly
        );
        assert_eq!(policy(&["127.0.0.1"]), AddressPolicy::AlsoLocalNetwork);
        assert_eq!(
            policy(&["127.0.0.1", "::1"]),
            AddressPolicy::AlsoLocalNetwork
        );
        assert_eq!(policy(&["192.168.1.5"]), AddressPolicy::AlsoLocalNetwork);
        assert_eq!(policy(&["100.100.1.1"]), AddressPolicy::AlsoLocalNetwork);
        assert_eq!(policy(&["fd12::5"]), AddressPolicy::AlsoLocalNetwork);
        assert_eq!(policy(&["169.254.10.1"]), AddressPolicy::AlsoLinkLocal);
        // Addresses no server is reached on do not make a local network.
        assert_eq!(policy(&["0.0.0.0"]), AddressPolicy::PublicOnly);
        assert_eq!(policy(&["192.0.2.1"]), AddressPolicy::PublicOnly);
    }

    #[test]
    fn a_public_server_reaches_only_public_addresses() {
        let public = AddressPolicy::PublicOnly;
        assert!(public.permits(ip("93.184.216.34")).is_ok());
        for refused in [
            "127.0.0.1",
            "::1",
            "10.0.0.1",
            "192.168.0.1",
            "100.64.0.1",
            "169.254.169.254",
            "::ffff:169.254.169.254",
            "fe80::1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "203.0.113.1",
        ] {
            let refusal = public.permits(ip(refused)).unwrap_err();
            assert_eq!(refusal.policy, public, "{refused}");
        }
        let refusal = public.permits(ip("169.254.169.254")).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "a link-local address (169.254.0.0/16), and the MCP server is on a public address, \
             so its OAuth requests go only to public addresses"
        );
    }

    #[test]
    fn a_local_server_reaches_its_network_but_not_link_local_addresses() {
        let local = AddressPolicy::AlsoLocalNetwork;
        for allowed in [
            "127.0.0.1",
            "::1",
            "10.0.0.1",
            "172.20.0.2",
            "100.64.0.1",
            "fd00::1",
            "8.8.8.8",
        ] {
            assert!(local.permits(ip(allowed)).is_ok(), "{allowed}");
        }
        let refusal = local.permits(ip("169.254.169.254")).unwrap_err();
        assert!(
            refusal
                .to_string()
                .contains("only when the MCP server is itself on a link-local"),
            "{refusal}"
        );
        for never in ["0.0.0.0", "224.0.0.1", "255.255.255.255", "192.0.2.1"] {
            let refusal = local.permits(ip(never)).unwrap_err();
            assert!(refusal.to_string().contains("never"), "{never}: {refusal}");
        }
        let link_local = AddressPolicy::AlsoLinkLocal;
        assert!(link_local.permits(ip("169.254.169.254")).is_ok());
        assert!(link_local.permits(ip("127.0.0.1")).is_ok());
        assert!(link_local.permits(ip("0.0.0.0")).is_err());
    }

    /// A resolver answering from a table.
    #[derive(Debug)]
    struct Table(Vec<(&'static str, Vec<IpAddr>)>);

    #[async_trait]
    impl HostResolver for Table {
        async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
            self.0
                .iter()
                .find(|(name, _)| *name == host)
                .map(|(_, ips)| ips.clone())
                .ok_or_else(|| std::io::Error::other(format!("unknown host {host}")))
        }
    }

    fn guard(server: &str, table: Table) -> AddressGuard {
        AddressGuard::new(
            &Url::parse(server).unwrap(),
            Vec::new(),
            Arc::new(table),
            None,
        )
        .with_proxy_routes(ProxyRoutes::direct())
    }

    #[tokio::test]
    async fn a_public_servers_guard_refuses_names_and_literals_of_other_networks() {
        let guard = guard(
            "https://mcp.example.com/mcp",
            Table(vec![
                ("mcp.example.com", vec![ip("93.184.216.34")]),
                ("auth.example.com", vec![ip("93.184.216.35")]),
                ("localhost", vec![ip("127.0.0.1"), ip("::1")]),
                // One public and one internal address: refused for the internal one.
                (
                    "rebind.example.com",
                    vec![ip("93.184.216.36"), ip("10.0.0.7")],
                ),
            ]),
        );
        assert_eq!(guard.policy().await, AddressPolicy::PublicOnly);
        let url = |u: &str| Url::parse(u).unwrap();
        guard
            .admit(&url("https://auth.example.com/token"))
            .await
            .unwrap();
        assert_eq!(
            guard.pinned.pinned("AUTH.example.com"),
            Some(vec![ip("93.184.216.35")])
        );
        for (target, address) in [
            (
                "https://169.254.169.254/latest/meta-data/",
                "169.254.169.254",
            ),
            ("http://localhost:8080/.well-known/x", "127.0.0.1"),
            ("https://[::ffff:a9fe:a9fe]/", "::ffff:169.254.169.254"),
            ("https://rebind.example.com/token", "10.0.0.7"),
        ] {
            let e = guard.admit(&url(target)).await.unwrap_err();
            let AuthError::RefusedAddress { address: got, .. } = &e else {
                panic!("{target}: {e}");
            };
            assert_eq!(*got, ip(address), "{target}");
            let message = e.to_string();
            assert!(message.contains(address), "{message}");
            assert!(message.contains("public address"), "{message}");
        }
        assert_eq!(guard.pinned.pinned("rebind.example.com"), None);
        // The server's own origin is never checked (the user configured it).
        guard
            .admit(&url(
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ))
            .await
            .unwrap();
        let e = guard
            .admit(&url("https://nowhere.example.com/"))
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("cannot resolve nowhere.example.com"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_loopback_servers_guard_allows_its_network() {
        let guard = guard(
            "http://localhost:3000/mcp",
            Table(vec![
                ("localhost", vec![ip("127.0.0.1"), ip("::1")]),
                ("keycloak.internal", vec![ip("172.17.0.2")]),
            ]),
        );
        assert_eq!(guard.policy().await, AddressPolicy::AlsoLocalNetwork);
        let url = |u: &str| Url::parse(u).unwrap();
        guard
            .admit(&url("https://keycloak.internal/realms/x"))
            .await
            .unwrap();
        guard.admit(&url("http://127.0.0.1:9000/")).await.unwrap();
        let e = guard
            .admit(&url("https://169.254.169.254/"))
            .await
            .unwrap_err();
        assert!(matches!(e, AuthError::RefusedAddress { .. }), "{e}");
    }

    #[test]
    fn requests_go_through_a_proxy_as_the_variables_and_no_proxy_say() {
        let url = |u: &str| Url::parse(u).unwrap();
        let https_only = ProxyRoutes::new(
            None,
            Some("http://proxy.corp:3128"),
            None,
            "internal.corp, 10.0.0.0/8, [::1]",
        );
        assert!(https_only.proxies(&url("https://auth.example.com/token")));
        assert!(https_only.proxies(&url("https://169.254.169.254/")));
        // No http proxy set, so http URLs connect directly.
        assert!(!https_only.proxies(&url("http://auth.example.com/token")));
        // NO_PROXY: a name and its subdomains, an address range.
        assert!(!https_only.proxies(&url("https://internal.corp/x")));
        assert!(!https_only.proxies(&url("https://sso.internal.corp/x")));
        assert!(!https_only.proxies(&url("https://10.1.2.3/x")));
        assert!(https_only.proxies(&url("https://notinternal.corp/x")));
        let all = ProxyRoutes::new(Some("http://proxy.corp:3128"), None, None, "");
        assert!(all.proxies(&url("http://auth.example.com/")));
        assert!(all.proxies(&url("https://auth.example.com/")));
        assert!(!ProxyRoutes::direct().proxies(&url("https://auth.example.com/")));
        assert!(!ProxyRoutes::new(None, None, None, "").proxies(&url("https://a.example/")));
        // Debug never shows the proxy (its URL may carry a password).
        let with_password = ProxyRoutes::new(Some("http://user:hunter2@proxy:1"), None, None, "");
        assert!(!format!("{with_password:?}").contains("hunter2"));
    }

    #[test]
    fn localhost_and_its_subdomains_are_loopback_by_name() {
        let loopback = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
        for name in [
            "localhost",
            "LocalHost",
            "localhost.",
            "metadata.localhost",
            "a.b.localhost.",
        ] {
            assert_eq!(address_by_name(name), loopback, "{name}");
        }
        for name in [
            "localhost.example.com",
            "notlocalhost",
            "example.com",
            "localhost.evil",
        ] {
            assert_eq!(address_by_name(name), None, "{name}");
        }
    }
}
