//! State a fleet of MCP client processes shares on Redis (skeleton; being written).
