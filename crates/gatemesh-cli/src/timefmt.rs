//! RFC 3339 at the command line, seconds since 1970 inside (the wire's one way to read and
//! write times, at a second's precision).

use anyhow::{Context, Result};

use crate::exit::UsageExt;
pub use gatemesh_wire::time::format_secs as format;

pub fn parse(s: &str) -> Result<i64> {
    gatemesh_wire::time::parse_ms(s)
        .map(|ms| ms.div_euclid(1000))
        .with_context(|| format!("{s:?} is not an RFC 3339 time like 2026-07-01T18:00:00Z"))
        .usage()
}

pub fn now() -> i64 {
    gatemesh_wire::time::now_ms().div_euclid(1000)
}
