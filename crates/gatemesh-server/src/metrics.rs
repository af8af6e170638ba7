//! `GET /metrics`: Prometheus text. Scans by verdict and gate and the redemption latency are
//! counted by this process (sum them across instances); the upload backlog is each gate's
//! own figure from its last heartbeat, read from the database at scrape time.

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScanLabels {
    event: String,
    gate: String,
    verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GateLabels {
    event: String,
    gate: String,
}

pub(crate) struct Metrics {
    registry: Registry,
    scans: Family<ScanLabels, Counter>,
    latency: Histogram,
    backlog: Family<GateLabels, Gauge>,
    last_seen: Family<GateLabels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("gatemesh");
        let scans = Family::<ScanLabels, Counter>::default();
        registry.register(
            "redemptions",
            "Redemptions answered by this server, by event, gate and verdict",
            scans.clone(),
        );
        // 100 µs to ~3 s.
        let latency = Histogram::new(exponential_buckets(0.0001, 2.0, 16));
        registry.register(
            "redemption_seconds",
            "Time to decide and store one redemption (database included)",
            latency.clone(),
        );
        let backlog = Family::<GateLabels, Gauge>::default();
        registry.register(
            "gate_upload_backlog",
            "Redemptions a gate holds that the server has not acknowledged (its last heartbeat)",
            backlog.clone(),
        );
        let last_seen = Family::<GateLabels, Gauge>::default();
        registry.register(
            "gate_last_seen_seconds",
            "When a gate last reported, seconds since 1970",
            last_seen.clone(),
        );
        Self {
            registry,
            scans,
            latency,
            backlog,
            last_seen,
        }
    }

    pub fn redemption(&self, event: &str, gate: &str, verdict: &str, seconds: f64) {
        self.scans
            .get_or_create(&ScanLabels {
                event: event.to_owned(),
                gate: gate.to_owned(),
                verdict: verdict.to_owned(),
            })
            .inc();
        self.latency.observe(seconds);
    }

    /// The text exposition, with the gates' figures as given.
    pub fn render(&self, gates: &[(String, String, Option<i64>, Option<i64>)]) -> String {
        self.backlog.clear();
        self.last_seen.clear();
        for (event, gate, backlog, seen_ms) in gates {
            let labels = GateLabels {
                event: event.clone(),
                gate: gate.clone(),
            };
            if let Some(b) = backlog {
                self.backlog.get_or_create(&labels).set(*b);
            }
            if let Some(ms) = seen_ms {
                self.last_seen.get_or_create(&labels).set(ms / 1000);
            }
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}
