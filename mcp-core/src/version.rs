//! MCP protocol versions, their [`Era`]s, and negotiation: a legacy client offers its preferred
//! version in `initialize` and the server answers with the one it will speak; a modern client
//! learns the server's versions from `server/discover` and names one in each request's `_meta`. The
//! session accepts those in [`ProtocolVersion::SUPPORTED`], refusing others with a clear error.

use std::fmt;
use std::str::FromStr;

/// A protocol revision this client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// The first public revision (HTTP+SSE transport).
    V2024_11_05,
    /// Streamable HTTP, OAuth, tool annotations, JSON-RPC batching.
    V2025_03_26,
    /// Structured tool output, elicitation, `MCP-Protocol-Version` header; no batching.
    V2025_06_18,
    /// Icons, URL elicitation, tasks, sampling with tools.
    V2025_11_25,
    /// Stateless: no handshake and no sessions, `server/discover`, per-request `_meta`,
    /// multi round-trip requests, `subscriptions/listen`, cacheable results.
    V2026_07_28,
}

/// The two eras of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2024-11-05 to 2025-11-25: `initialize` opens a session; the server may send requests too.
    Legacy,
    /// 2026-07-28 and later: no handshake, every request carries its version and the client's
    /// capabilities in `_meta`; servers ask for input in their results instead of requests.
    Modern,
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        })
    }
}

impl ProtocolVersion {
    /// The newest revision.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The newest revision with the `initialize` handshake, offered to legacy servers.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// Every revision the client accepts from a server, newest first.
    pub const SUPPORTED: [ProtocolVersion; 5] = [
        ProtocolVersion::V2026_07_28,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The version string used on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// The era this revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// Whether this revision is of the modern (stateless) era.
    pub const fn is_modern(self) -> bool {
        matches!(self.era(), Era::Modern)
    }

    /// Whether HTTP transports send the `MCP-Protocol-Version` header (since 2025-06-18).
    pub fn has_protocol_version_header(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version string this client does not speak.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unsupported MCP protocol version {0:?}; this client speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05"
)]
pub struct UnsupportedVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnsupportedVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::SUPPORTED
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnsupportedVersion(s.to_owned()))
    }
}
