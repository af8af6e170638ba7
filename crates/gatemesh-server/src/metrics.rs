//! `GET /metrics`: Prometheus text. Scans by verdict and gate and the redemption latency are
//! counted by this process (sum them across instances); the upload backlog, the items a
//! gate skipped and the scans it refused (by reason) are each gate's own figures from its
//! last heartbeat, read from the database at scrape time.

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    event: String,
    gate: String,
    reason: String,
}

pub(crate) struct Metrics {
    registry: Registry,
    scans: Family<ScanLabels, Counter>,
    latency: Histogram,
    backlog: Family<GateLabels, Gauge>,
    skipped: Family<GateLabels, Gauge>,
    last_seen: Family<GateLabels, Gauge>,
    refused: Family<RefusalLabels, Gauge>,
}

/// One gate's figures from its last heartbeat.
#[derive(Debug, Clone)]
pub(crate) struct GateReport {
    pub event: String,
    pub gate: String,
    pub backlog: Option<usize>,
    pub skipped: Option<u64>,
    pub last_seen_ms: Option<i64>,
    /// Scans it refused at this event, by reason (kept across its restarts).
    pub refusals: std::collections::BTreeMap<gatemesh_wire::Reason, u64>,
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
        let skipped = Family::<GateLabels, Gauge>::default();
        registry.register(
            "gate_skipped_items",
            "Items a gate's uplink could not take or send since it started: manifest entries \
             and answers it cannot read, records the server would refuse (its last heartbeat)",
            skipped.clone(),
        );
        let last_seen = Family::<GateLabels, Gauge>::default();
        registry.register(
            "gate_last_seen_seconds",
            "When a gate last reported, seconds since 1970",
            last_seen.clone(),
        );
        let refused = Family::<RefusalLabels, Gauge>::default();
        registry.register(
            "gate_refused_scans",
            "Scans a gate refused at this event, by reason (kept across its restarts): forged, void, not on its lists, \
             out of their validity… (its last heartbeat)",
            refused.clone(),
        );
        Self {
            registry,
            scans,
            latency,
            backlog,
            skipped,
            last_seen,
            refused,
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
    pub fn render(&self, gates: &[GateReport]) -> String {
        self.backlog.clear();
        self.skipped.clear();
        self.last_seen.clear();
        self.refused.clear();
        for g in gates {
            let labels = GateLabels {
                event: g.event.clone(),
                gate: g.gate.clone(),
            };
            let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            if let Some(b) = g.backlog {
                self.backlog.get_or_create(&labels).set(gauge(b as u64));
            }
            if let Some(n) = g.skipped {
                self.skipped.get_or_create(&labels).set(gauge(n));
            }
            if let Some(ms) = g.last_seen_ms {
                self.last_seen.get_or_create(&labels).set(ms / 1000);
            }
            for (reason, n) in &g.refusals {
                let labels = RefusalLabels {
                    event: g.event.clone(),
                    gate: g.gate.clone(),
                    reason: reason.as_str().to_owned(),
                };
                self.refused.get_or_create(&labels).set(gauge(*n));
            }
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}
