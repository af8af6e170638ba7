//! RFC 3339 at the command line, seconds since 1970 inside.

use anyhow::{Context, Result};
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

pub fn parse(s: &str) -> Result<i64> {
    OffsetDateTime::parse(s, &Rfc3339)
        .map(OffsetDateTime::unix_timestamp)
        .with_context(|| format!("{s:?} is not an RFC 3339 time like 2026-07-01T18:00:00Z"))
}

pub fn format(secs: i64) -> String {
    OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| secs.to_string())
}

pub fn now() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}
