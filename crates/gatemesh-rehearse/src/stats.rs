//! The numbers every report here shares: percentiles of latencies, and rounding.

use std::time::Duration;

use serde_json::{Value, json};

/// The `p` quantile (0..1, nearest rank) of sorted latencies, in milliseconds.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// Count, mean and percentiles in milliseconds, as every gatemesh bench reports them.
pub(crate) fn summary(mut lat: Vec<Duration>) -> Value {
    lat.sort();
    let mean =
        lat.iter().map(Duration::as_secs_f64).sum::<f64>() / lat.len().max(1) as f64 * 1000.0;
    json!({
        "n": lat.len(),
        "mean_ms": round(mean),
        "p50_ms": round(percentile(&lat, 0.50)),
        "p95_ms": round(percentile(&lat, 0.95)),
        "p99_ms": round(percentile(&lat, 0.99)),
        "max_ms": round(percentile(&lat, 1.0)),
    })
}

/// To three decimals: microseconds, where the value is milliseconds.
pub(crate) fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Cores this machine offers (for the reports' `machine`).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
