//! ISO 8601 UTC timestamps as the API exchanges them.

use chrono::{DateTime, Datelike, SecondsFormat, Timelike, Utc};

/// Parses an RFC 3339 timestamp (the strict profile of ISO 8601) that is in UTC:
/// it ends in `Z` or `+00:00`. Anything else is refused rather than guessed at,
/// so a client bug in time zones shows up at once. The rule never merges two
/// distinct inputs into one stored time (which would make the second a silent
/// duplicate): the service keeps microseconds (what the stores key points by,
/// and what most clients send at most), so finer digits are accepted only as
/// zeros, and a leap second (`:60`), which has no time of its own in UTC as
/// computers keep it, is refused.
pub fn parse_utc(raw: &str) -> Result<DateTime<Utc>, String> {
    let raw = raw.trim();
    // chrono takes U+2212 (minus sign) for `-`; a look-alike is not a timestamp.
    if !raw.is_ascii() {
        return Err(
            "must be an ISO 8601 UTC timestamp in plain ASCII, such as 2026-03-01T14:30:00Z".into(),
        );
    }
    // RFC 3339 reserves -00:00 for "the offset is unknown", which is not UTC.
    if raw.ends_with("-00:00") {
        return Err("must be in UTC: end in Z or +00:00 (-00:00 means an unknown offset)".into());
    }
    let parsed = DateTime::parse_from_rfc3339(raw).map_err(|_| {
        "must be an ISO 8601 UTC timestamp such as 2026-03-01T14:30:00Z".to_string()
    })?;
    if parsed.offset().local_minus_utc() != 0 {
        return Err("must be in UTC (end in Z or +00:00)".into());
    }
    // The offset is zero, so the UTC year is the year as written.
    let utc = parsed.with_timezone(&Utc);
    if !(2000..=2100).contains(&utc.year()) {
        return Err("must be between the years 2000 and 2100".into());
    }
    if utc.nanosecond() >= 1_000_000_000 {
        return Err(
            "must not be a leap second (:60): send 23:59:59.999Z or the next second".into(),
        );
    }
    if utc.nanosecond() % 1_000 != 0 {
        return Err("must have at most microsecond precision (such as 14:30:00.123456Z)".into());
    }
    Ok(utc)
}

/// As [`parse_utc`], for a time in a URL's query, where a `+` sent unencoded
/// stands for a space: `…T14:30:00 00:00` is refused with that said (in a
/// body the hint would mislead).
pub fn parse_utc_in_query(raw: &str) -> Result<DateTime<Utc>, String> {
    if let Some((_, offset)) = raw.trim().rsplit_once(' ')
        && offset.len() == 5
        && offset.as_bytes()[2] == b':'
    {
        return Err(
            "must be an ISO 8601 UTC timestamp; in a URL's query a `+` means a space, \
             so write +00:00 as %2B00:00, or end the time in Z"
                .into(),
        );
    }
    parse_utc(raw)
}

/// The one format the service writes, for every time in every answer, event
/// and record: RFC 3339, UTC, `Z`; no fraction for a whole second, else
/// milliseconds, or microseconds when a client sent a time that has them (a GPS
/// fix's), so that what was sent comes back as it was. Times the service makes
/// are whole milliseconds (`Clock::now`, retry delays), so they never show more
/// than three digits; nothing is ever shown to the nanosecond.
pub fn format(value: &DateTime<Utc>) -> String {
    let digits = match value.nanosecond() {
        0 => SecondsFormat::Secs,
        n if n % 1_000_000 == 0 => SecondsFormat::Millis,
        // Finer than microseconds is never stored (see `parse_utc`): cut, not shown.
        _ => SecondsFormat::Micros,
    };
    value.to_rfc3339_opts(digits, true)
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
    fn distinct_inputs_are_never_merged_into_one_time() {
        // Both would have been 23:59:59.999: refused instead.
        for raw in ["2016-12-31T23:59:60Z", "2016-12-31T23:59:60.5Z"] {
            let error = parse_utc(raw).unwrap_err();
            assert!(error.contains("leap second"), "{raw}: {error}");
        }
        // Digits below the microsecond would be cut: refused unless zeros.
        for raw in [
            "2026-03-01T14:30:00.1234567Z",
            "2026-03-01T14:30:00.123456789Z",
        ] {
            let error = parse_utc(raw).unwrap_err();
            assert!(error.contains("microsecond"), "{raw}: {error}");
        }
        assert_eq!(
            parse_utc("2026-03-01T14:30:00.123456000Z").unwrap(),
            parse_utc("2026-03-01T14:30:00.123456Z").unwrap()
        );
        // Two fixes a tenth of a millisecond apart stay two, and read back as sent.
        let a = parse_utc("2026-03-01T14:30:00.1234Z").unwrap();
        let b = parse_utc("2026-03-01T14:30:00.1235Z").unwrap();
        assert_ne!(a, b);
        assert_eq!(format(&a), "2026-03-01T14:30:00.123400Z");
    }

    #[test]
    fn unknown_and_look_alike_offsets_are_refused() {
        for raw in [
            "2026-03-01T14:30:00-00:00",
            "2026-03-01T14:30:00\u{2212}00:00",
            "2026-03-01T14:30:00\u{2212}05:00",
            "2026\u{2011}03-01T14:30:00Z",
        ] {
            assert!(parse_utc(raw).is_err(), "{raw} should be refused");
        }
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
    fn years_2000_to_2100_inclusive() {
        for raw in [
            "2000-01-01T00:00:00Z",
            "2100-12-31T23:59:59.999999Z",
            "2100-12-31T23:59:59+00:00",
        ] {
            assert!(parse_utc(raw).is_ok(), "{raw}");
        }
        for raw in [
            "1999-12-31T23:59:59.999999Z",
            "2101-01-01T00:00:00Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
        ] {
            let refused = parse_utc(raw).unwrap_err();
            assert!(refused.contains("2000 and 2100"), "{raw}: {refused}");
        }
    }

    #[test]
    fn keeps_what_was_sent_to_the_microsecond() {
        let t = parse_utc("2026-03-01T14:30:00.123Z").unwrap();
        assert_eq!(format(&t), "2026-03-01T14:30:00.123Z");
        let t = parse_utc("2026-03-01T14:30:00.123456Z").unwrap();
        assert_eq!(format(&t), "2026-03-01T14:30:00.123456Z");
    }

    #[test]
    fn an_unencoded_plus_gets_a_hint_in_a_query_only() {
        let refused = parse_utc_in_query("2026-03-01T14:30:00 00:00").unwrap_err();
        assert!(refused.contains("%2B00:00"), "{refused}");
        let refused = parse_utc("2026-03-01T14:30:00 00:00").unwrap_err();
        assert!(!refused.contains("query"), "{refused}");
        assert!(parse_utc_in_query("2026-03-01T14:30:00%2B00:00").is_err());
        assert!(parse_utc_in_query("2026-03-01T14:30:00+00:00").is_ok());
    }

    #[test]
    fn never_writes_nanoseconds() {
        let t = DateTime::from_timestamp(1_800_000_000, 275_816_912).unwrap();
        assert_eq!(format(&t), "2027-01-15T08:00:00.275816Z");
    }

    #[test]
    fn formats_with_z() {
        let t = parse_utc("2026-03-01T14:30:00+00:00").unwrap();
        assert_eq!(format(&t), "2026-03-01T14:30:00Z");
    }
}
