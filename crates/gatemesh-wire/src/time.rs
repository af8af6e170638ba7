//! Times on the wire are RFC 3339 text (`2026-07-01T18:00:00.123Z`); inside, milliseconds
//! since 1970. One way to write them and one way to read them.

use time::{OffsetDateTime, format_description::well_known::Rfc3339};

use crate::WireError;

/// The earliest and latest instants RFC 3339 can write (years 0000 to 9999), in ms.
const FIRST_MS: i64 = -62_167_219_200_000;
const LAST_MS: i64 = 253_402_300_799_999;

/// `ms` since 1970 as RFC 3339 in UTC, with milliseconds when there are any. Instants outside
/// the years 0000-9999 (a clock gone wrong, a hostile record) are written as the nearest one
/// inside, so the text is always valid and always reads back.
pub fn format_ms(ms: i64) -> String {
    let ms = ms.clamp(FIRST_MS, LAST_MS);
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        // Unreachable within the clamp; the epoch is still a valid time.
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

/// `secs` since 1970 as RFC 3339, as [`format_ms`] does.
pub fn format_secs(secs: i64) -> String {
    format_ms(secs.saturating_mul(1000))
}

/// RFC 3339 text as ms since 1970 (sub-millisecond digits dropped).
pub fn parse_ms(text: &str) -> Result<i64, WireError> {
    let t = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| WireError::Invalid {
        what: "RFC 3339 time (like 2026-07-01T18:00:00Z)",
        value: crate::error::shorten(text),
    })?;
    i64::try_from(t.unix_timestamp_nanos().div_euclid(1_000_000)).map_err(|_| WireError::Invalid {
        what: "time",
        value: crate::error::shorten(text),
    })
}

/// Now, in ms since 1970.
pub fn now_ms() -> i64 {
    i64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
}

/// Now, as RFC 3339.
pub fn now() -> String {
    format_ms(now_ms())
}

/// An instant as the wire writes it: RFC 3339 text, checked when read, held as ms since 1970.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct Timestamp(i64);

impl Timestamp {
    /// The instant `ms` since 1970, kept within the years 0000-9999 (see [`format_ms`]).
    pub fn from_ms(ms: i64) -> Self {
        Self(ms.clamp(FIRST_MS, LAST_MS))
    }

    /// Now.
    pub fn now() -> Self {
        Self::from_ms(now_ms())
    }

    /// Milliseconds since 1970.
    pub fn ms(self) -> i64 {
        self.0
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_ms(self.0))
    }
}

impl std::str::FromStr for Timestamp {
    type Err = WireError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_ms(s).map(Self::from_ms)
    }
}

impl TryFrom<String> for Timestamp {
    type Error = WireError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Timestamp> for String {
    fn from(t: Timestamp) -> Self {
        t.to_string()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn writes_milliseconds_only_when_there_are_some() {
        assert_eq!(format_ms(1_782_928_800_000), "2026-07-01T18:00:00Z");
        assert_eq!(format_ms(1_782_928_800_123), "2026-07-01T18:00:00.123Z");
        assert_eq!(format_secs(0), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn out_of_range_instants_are_written_as_the_nearest_valid_one() {
        assert_eq!(format_ms(i64::MAX), "9999-12-31T23:59:59.999Z");
        assert_eq!(format_ms(i64::MIN), "0000-01-01T00:00:00Z");
        assert!(parse_ms(&format_ms(i64::MAX)).is_ok());
    }

    #[test]
    fn refuses_what_is_not_rfc3339() {
        for bad in ["", "yesterday", "2026-07-01", "2026-07-01 18:00:00"] {
            assert!(parse_ms(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_ms("2026-07-01T20:00:00+02:00").unwrap(),
            1_782_928_800_000
        );
    }

    #[test]
    fn timestamps_travel_as_text() {
        let t = Timestamp::from_ms(1_782_928_800_123);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"2026-07-01T18:00:00.123Z\"");
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
        assert!(serde_json::from_str::<Timestamp>("\"soon\"").is_err());
        assert!(serde_json::from_str::<Timestamp>("1782928800").is_err());
    }

    proptest! {
        #[test]
        fn every_instant_reads_back(ms in FIRST_MS..=LAST_MS) {
            prop_assert_eq!(parse_ms(&format_ms(ms)).unwrap(), ms);
        }
    }
}
