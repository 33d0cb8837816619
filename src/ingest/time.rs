//! Timestamps as devices write them, the rules of Traccar's OsmAnd decoder:
//! Unix seconds, or milliseconds once the number reaches 2^31 (no device
//! clock means 2038 in seconds, and 2^31 ms is January 1970); ISO 8601 when
//! the text holds a `T` (an offset is converted, none means UTC); otherwise
//! `yyyy-MM-dd HH:mm:ss` in UTC. Fractions are kept to the nanosecond; the
//! caller's fix validation decides the precision it stores.

use std::borrow::Cow;

use chrono::{DateTime, NaiveDateTime, Timelike, Utc};

/// The first number read as milliseconds rather than seconds.
pub(crate) const MILLIS_FROM: i64 = 1 << 31;

pub(crate) fn parse(raw: &str) -> Result<DateTime<Utc>, ()> {
    let raw = raw.trim();
    if !raw.is_ascii() || raw.is_empty() {
        return Err(());
    }
    let time = if raw.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        unix_text(raw)?
    } else if raw.contains('T') {
        iso(raw)?
    } else {
        NaiveDateTime::parse_from_str(raw, "%Y-%m-%d %H:%M:%S%.f")
            .map_err(|_| ())?
            .and_utc()
    };
    // A leap second (:60) has no time of its own in UTC as computers keep it.
    if time.nanosecond() >= 1_000_000_000 {
        return Err(());
    }
    Ok(time)
}

pub(crate) fn from_unix_int(value: i64) -> Result<DateTime<Utc>, ()> {
    from_parts(value, 0)
}

pub(crate) fn from_unix_float(value: f64) -> Result<DateTime<Utc>, ()> {
    if !value.is_finite() || value < 0.0 || value >= i64::MAX as f64 {
        return Err(());
    }
    let whole = value.trunc();
    // An f64 near 1.7e9 holds about seven decimal places: keep microseconds.
    let micros = ((value - whole) * 1e6).round() as u32;
    let (whole, micros) = if micros >= 1_000_000 {
        (whole as i64 + 1, 0)
    } else {
        (whole as i64, micros)
    };
    from_parts(whole, micros * 1_000)
}

/// `whole` seconds or milliseconds (by [`MILLIS_FROM`]) plus a fraction of
/// that unit in nanoseconds.
fn from_parts(whole: i64, fraction_nanos: u32) -> Result<DateTime<Utc>, ()> {
    if whole < 0 {
        return Err(());
    }
    let (secs, nanos) = if whole >= MILLIS_FROM {
        let millis_nanos = (whole % 1_000) as u32 * 1_000_000;
        (whole / 1_000, millis_nanos + fraction_nanos / 1_000)
    } else {
        (whole, fraction_nanos)
    };
    DateTime::from_timestamp(secs, nanos).ok_or(())
}

fn unix_text(raw: &str) -> Result<DateTime<Utc>, ()> {
    let (whole, fraction) = raw.split_once('.').unwrap_or((raw, ""));
    if whole.is_empty() || fraction.contains('.') || fraction.len() > 9 {
        return Err(());
    }
    let whole: i64 = whole.parse().map_err(|_| ())?;
    let mut nanos: u32 = 0;
    for position in 0..9 {
        let digit = fraction.as_bytes().get(position).map_or(0, |b| b - b'0');
        nanos = nanos * 10 + u32::from(digit);
    }
    from_parts(whole, nanos)
}

fn iso(raw: &str) -> Result<DateTime<Utc>, ()> {
    let text = repair_plus(raw);
    if let Ok(time) = DateTime::parse_from_rfc3339(&text) {
        return Ok(time.to_utc());
    }
    // Offsets without a colon (`+0200`), as Java's SimpleDateFormat writes.
    if let Ok(time) = DateTime::parse_from_str(&text, "%Y-%m-%dT%H:%M:%S%.f%z") {
        return Ok(time.to_utc());
    }
    NaiveDateTime::parse_from_str(&text, "%Y-%m-%dT%H:%M:%S%.f")
        .map(|naive| naive.and_utc())
        .map_err(|_| ())
}

/// In a query string an unencoded `+` is a space: `…T08:46:40 02:00` can
/// only have been `+02:00`, so it is read as such (a device cannot be told
/// to percent-encode).
fn repair_plus(raw: &str) -> Cow<'_, str> {
    let Some(space) = raw.rfind(' ') else {
        return Cow::Borrowed(raw);
    };
    let offset = &raw.as_bytes()[space + 1..];
    let looks_like_offset = match offset {
        [a, b, b':', c, d] | [a, b, c, d] => [a, b, c, d].iter().all(|x| x.is_ascii_digit()),
        [a, b] => a.is_ascii_digit() && b.is_ascii_digit(),
        _ => false,
    };
    if looks_like_offset && raw[..space].contains('T') {
        Cow::Owned(format!("{}+{}", &raw[..space], &raw[space + 1..]))
    } else {
        Cow::Borrowed(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    #[test]
    fn unix_seconds() {
        assert_eq!(parse("1732690000"), Ok(at(2024, 11, 27, 6, 46, 40)));
        assert_eq!(parse(" 1732690000 "), Ok(at(2024, 11, 27, 6, 46, 40)));
        // The last second before the millisecond rule.
        assert_eq!(parse("2147483647"), Ok(at(2038, 1, 19, 3, 14, 7)));
    }

    #[test]
    fn unix_seconds_with_a_fraction() {
        let time = parse("1732690000.25").unwrap();
        assert_eq!(time.timestamp(), 1_732_690_000);
        assert_eq!(time.timestamp_subsec_nanos(), 250_000_000);
        assert_eq!(parse("1732690000.1234567890"), Err(()));
        assert_eq!(parse("1.2.3"), Err(()));
        assert_eq!(parse(".5"), Err(()));
    }

    #[test]
    fn milliseconds_from_two_to_the_31() {
        let time = parse("1732690000123").unwrap();
        assert_eq!(time.timestamp(), 1_732_690_000);
        assert_eq!(time.timestamp_subsec_millis(), 123);
        // 2^31 itself is read as milliseconds: 24 days into 1970.
        assert_eq!(
            parse("2147483648").unwrap().timestamp_millis(),
            2_147_483_648
        );
    }

    #[test]
    fn json_numbers() {
        assert_eq!(
            from_unix_int(1_732_690_000),
            Ok(at(2024, 11, 27, 6, 46, 40))
        );
        assert_eq!(
            from_unix_int(1_732_690_000_500).unwrap().timestamp_millis(),
            1_732_690_000_500
        );
        let time = from_unix_float(1_732_690_000.5).unwrap();
        assert_eq!(time.timestamp_subsec_micros(), 500_000);
        assert_eq!(
            from_unix_float(1_732_690_000.0),
            Ok(at(2024, 11, 27, 6, 46, 40))
        );
        assert_eq!(from_unix_int(-1), Err(()));
        assert_eq!(from_unix_float(f64::NAN), Err(()));
        assert_eq!(from_unix_float(-5.0), Err(()));
    }

    #[test]
    fn iso_8601_in_utc_with_an_offset_or_without_a_zone() {
        let expected = at(2024, 11, 27, 6, 46, 40);
        assert_eq!(parse("2024-11-27T06:46:40Z"), Ok(expected));
        assert_eq!(parse("2024-11-27T06:46:40.000Z"), Ok(expected));
        assert_eq!(parse("2024-11-27T08:46:40+02:00"), Ok(expected));
        assert_eq!(parse("2024-11-27T00:46:40-0600"), Ok(expected));
        assert_eq!(parse("2024-11-27T06:46:40"), Ok(expected));
        let fraction = parse("2024-11-27T06:46:40.123456Z").unwrap();
        assert_eq!(fraction.timestamp_subsec_micros(), 123_456);
    }

    #[test]
    fn a_plus_turned_space_is_read_back_as_plus() {
        let expected = at(2024, 11, 27, 6, 46, 40);
        assert_eq!(parse("2024-11-27T08:46:40 02:00"), Ok(expected));
        assert_eq!(parse("2024-11-27T08:46:40.000 0200"), Ok(expected));
    }

    #[test]
    fn date_space_time_is_utc() {
        assert_eq!(
            parse("2024-11-27 06:46:40"),
            Ok(at(2024, 11, 27, 6, 46, 40))
        );
        let fraction = parse("2024-11-27 06:46:40.5").unwrap();
        assert_eq!(fraction.timestamp_subsec_millis(), 500);
    }

    #[test]
    fn nonsense_is_refused() {
        for raw in [
            "",
            "yesterday",
            "-1732690000",
            "2024-13-01T00:00:00Z",
            "2024-11-27T25:00:00Z",
            "2024-11-27",
            "27/11/2024 06:46:40",
            "2016-12-31T23:59:60Z",
            "99999999999999999999",
            "2024-11-27T06:46:40Z\u{2212}",
        ] {
            assert_eq!(parse(raw), Err(()), "{raw:?}");
        }
    }
}
