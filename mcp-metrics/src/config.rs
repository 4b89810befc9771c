//! [`MetricsConfig`]: the window, the precision, the cardinality cap and the exporters.

use std::fmt;
use std::time::Duration;

/// How a [`Metrics`](crate::Metrics) registry measures. `Default` gives the documented
/// defaults.
#[derive(Clone)]
pub struct MetricsConfig {
    /// The sliding window QPS is measured over, in whole seconds (at least 1). Default: 10 s.
    pub qps_window: Duration,
    /// Significant digits the latency histograms keep (1–5): 2 keeps every value within 1 %
    /// in about 16 KiB per series that has seen calls from microseconds to seconds; each
    /// digit more multiplies that by about 8. Default: 2.
    pub significant_figures: u8,
    /// Series (method × tool) one server may have (at most 65 536; each costs two 16-byte
    /// slots of the server's table up front). New tools beyond it are counted under the tool
    /// `_other`, other new methods under the method `_other`, so a caller trying many names
    /// cannot grow the registry without bound. Default: 1024.
    pub max_series_per_server: usize,
    /// The prefix of every Prometheus metric name (sanitized when rendered). Default:
    /// `mcp_client`.
    #[cfg(feature = "prometheus")]
    pub prometheus_prefix: String,
    #[cfg(feature = "opentelemetry")]
    pub(crate) telemetry: crate::otel::TelemetryConfig,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            qps_window: Duration::from_secs(10),
            significant_figures: 2,
            max_series_per_server: 1024,
            #[cfg(feature = "prometheus")]
            prometheus_prefix: "mcp_client".into(),
            #[cfg(feature = "opentelemetry")]
            telemetry: crate::otel::TelemetryConfig::default(),
        }
    }
}

impl MetricsConfig {
    /// The defaults.
    pub fn new() -> Self {
        MetricsConfig::default()
    }

    /// Sets the QPS window (rounded down to whole seconds, at least 1).
    pub fn with_qps_window(mut self, window: Duration) -> Self {
        self.qps_window = window;
        self
    }

    /// Sets the histograms' precision (see
    /// [`significant_figures`](Self::significant_figures)).
    pub fn with_significant_figures(mut self, digits: u8) -> Self {
        self.significant_figures = digits.clamp(1, 5);
        self
    }

    /// Sets the cap on one server's series.
    pub fn with_max_series_per_server(mut self, max: usize) -> Self {
        self.max_series_per_server = max;
        self
    }

    /// Sets the Prometheus metric name prefix.
    #[cfg(feature = "prometheus")]
    pub fn with_prometheus_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prometheus_prefix = prefix.into();
        self
    }

    pub(crate) fn window_seconds(&self) -> u64 {
        self.qps_window.as_secs().max(1)
    }
}

impl fmt::Debug for MetricsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("MetricsConfig");
        d.field("qps_window", &self.qps_window)
            .field("significant_figures", &self.significant_figures)
            .field("max_series_per_server", &self.max_series_per_server);
        #[cfg(feature = "prometheus")]
        d.field("prometheus_prefix", &self.prometheus_prefix);
        #[cfg(feature = "opentelemetry")]
        d.field("telemetry", &self.telemetry);
        d.finish()
    }
}
