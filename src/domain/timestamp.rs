//! ISO 8601 UTC timestamps as the API exchanges them.

use chrono::{DateTime, DurationRound, SecondsFormat, TimeDelta, Timelike, Utc};

/// Parses an RFC 3339 timestamp (the strict profile of ISO 8601) that is in UTC:
/// it ends in `Z` or carries a zero offset. Anything else is refused rather than
/// guessed at, so a client bug in time zones shows up at once.
pub fn parse_utc(raw: &str) -> Result<DateTime<Utc>, String> {
    let parsed = DateTime::parse_from_rfc3339(raw.trim()).map_err(|_| {
        "must be an ISO 8601 UTC timestamp such as 2026-03-01T14:30:00Z".to_string()
    })?;
    if parsed.offset().local_minus_utc() != 0 {
        return Err("must be in UTC (end in Z or +00:00)".into());
    }
    let year = parsed.format("%Y").to_string().parse::<i32>().unwrap_or(0);
    if !(2000..=2100).contains(&year) {
        return Err("must be between the years 2000 and 2100".into());
    }
    // The service keeps millisecond precision, like the timestamps it makes itself.
    let utc = parsed.with_timezone(&Utc);
    // A leap second (`23:59:60.5`) is kept as the last millisecond before it, so
    // every time the service writes back is a plain RFC 3339 date-time (many
    // parsers refuse `:60`) and order is kept.
    let utc = if utc.nanosecond() >= 1_000_000_000 {
        utc.with_nanosecond(999_000_000).unwrap_or(utc)
    } else {
        utc
    };
    Ok(utc
        .duration_trunc(TimeDelta::milliseconds(1))
        .unwrap_or(utc))
}

/// The one format the service writes: RFC 3339, UTC, `Z`, millisecond precision
/// only when the value has a fraction.
pub fn format(value: &DateTime<Utc>) -> String {
    value.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Serde helpers so records and responses share the format above.
pub mod serde_utc {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(value))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let raw = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }

    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(
            value: &Option<DateTime<Utc>>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match value {
                Some(v) => s.serialize_str(&crate::domain::timestamp::format(v)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<DateTime<Utc>>, D::Error> {
            Option::<String>::deserialize(d)?
                .map(|raw| {
                    DateTime::parse_from_rfc3339(&raw)
                        .map(|t| t.with_timezone(&Utc))
                        .map_err(serde::de::Error::custom)
                })
                .transpose()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_utc_forms() {
        assert!(parse_utc("2026-03-01T14:30:00Z").is_ok());
        assert!(parse_utc("2026-03-01T14:30:00.250Z").is_ok());
        assert!(parse_utc("2026-03-01T14:30:00+00:00").is_ok());
    }

    #[test]
    fn a_leap_second_becomes_the_millisecond_before_it() {
        let leap = parse_utc("2016-12-31T23:59:60.5Z").unwrap();
        assert_eq!(format(&leap), "2016-12-31T23:59:59.999Z");
        assert!(leap < parse_utc("2017-01-01T00:00:00Z").unwrap());
        assert!(leap > parse_utc("2016-12-31T23:59:59.998Z").unwrap());
    }

    #[test]
    fn refuses_non_utc_and_non_timestamps() {
        for raw in [
            "2026-03-01",
            "2026-03-01T14:30:00",
            "2026-03-01T14:30:00+02:00",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "1970-01-01T00:00:00Z",
        ] {
            assert!(parse_utc(raw).is_err(), "{raw} should be refused");
        }
    }

    #[test]
    fn keeps_milliseconds() {
        let t = parse_utc("2026-03-01T14:30:00.123456789Z").unwrap();
        assert_eq!(format(&t), "2026-03-01T14:30:00.123Z");
    }

    #[test]
    fn formats_with_z() {
        let t = parse_utc("2026-03-01T14:30:00+00:00").unwrap();
        assert_eq!(format(&t), "2026-03-01T14:30:00Z");
    }
}
