//! A stop's local time, for the people at the stop: the main time zone of its
//! state, with US daylight saving time (second Sunday of March to the first
//! Sunday of November, at 2:00 local). States split between two zones take
//! the zone most of their people live in (Texas: Central; Florida, Indiana,
//! Kentucky, Michigan: Eastern; Tennessee: Central; Idaho: Mountain; Oregon:
//! Pacific; the Dakotas, Kansas, Nebraska: Central).

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, Utc, Weekday};

/// A zone: its standard offset from UTC and the names of its two times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    pub standard_offset_hours: i64,
    pub standard: &'static str,
    /// `None`: the zone keeps standard time all year.
    pub daylight: Option<&'static str>,
}

const EASTERN: Zone = Zone {
    standard_offset_hours: -5,
    standard: "EST",
    daylight: Some("EDT"),
};
const CENTRAL: Zone = Zone {
    standard_offset_hours: -6,
    standard: "CST",
    daylight: Some("CDT"),
};
const MOUNTAIN: Zone = Zone {
    standard_offset_hours: -7,
    standard: "MST",
    daylight: Some("MDT"),
};
const ARIZONA: Zone = Zone {
    standard_offset_hours: -7,
    standard: "MST",
    daylight: None,
};
const PACIFIC: Zone = Zone {
    standard_offset_hours: -8,
    standard: "PST",
    daylight: Some("PDT"),
};
const ALASKA: Zone = Zone {
    standard_offset_hours: -9,
    standard: "AKST",
    daylight: Some("AKDT"),
};
const HAWAII: Zone = Zone {
    standard_offset_hours: -10,
    standard: "HST",
    daylight: None,
};
const ATLANTIC: Zone = Zone {
    standard_offset_hours: -4,
    standard: "AST",
    daylight: None,
};
const CHAMORRO: Zone = Zone {
    standard_offset_hours: 10,
    standard: "ChST",
    daylight: None,
};
const SAMOA: Zone = Zone {
    standard_offset_hours: -11,
    standard: "SST",
    daylight: None,
};

/// The main zone of a state or territory (its two-letter code).
pub fn zone_of(state: &str) -> Zone {
    match state {
        "AL" | "AR" | "IL" | "IA" | "KS" | "LA" | "MN" | "MS" | "MO" | "NE" | "ND" | "OK"
        | "SD" | "TN" | "TX" | "WI" => CENTRAL,
        "CO" | "ID" | "MT" | "NM" | "UT" | "WY" => MOUNTAIN,
        "AZ" => ARIZONA,
        "CA" | "NV" | "OR" | "WA" => PACIFIC,
        "AK" => ALASKA,
        "HI" => HAWAII,
        "PR" | "VI" => ATLANTIC,
        "GU" | "MP" => CHAMORRO,
        "AS" => SAMOA,
        _ => EASTERN,
    }
}

/// `at` in `state`'s main zone, and the name of the time it was then.
pub fn local(at: DateTime<Utc>, state: &str) -> (NaiveDateTime, &'static str) {
    let zone = zone_of(state);
    let standard = at.naive_utc() + Duration::hours(zone.standard_offset_hours);
    match zone.daylight {
        Some(name) if in_daylight_time(standard) => (standard + Duration::hours(1), name),
        _ => (standard, zone.standard),
    }
}

/// `at` as "2 Dec 2026, 21:20 EST".
pub fn format_local(at: DateTime<Utc>, state: &str) -> String {
    let (time, zone) = local(at, state);
    format!("{} {zone}", time.format("%-d %b %Y, %H:%M"))
}

/// Whether a local standard time falls in US daylight saving time: from
/// 2:00 standard on the second Sunday of March to 1:00 standard (2:00
/// daylight) on the first Sunday of November.
fn in_daylight_time(standard: NaiveDateTime) -> bool {
    let year = standard.year();
    let begins = nth_sunday(year, 3, 2)
        .and_hms_opt(2, 0, 0)
        .expect("a valid time");
    let ends = nth_sunday(year, 11, 1)
        .and_hms_opt(1, 0, 0)
        .expect("a valid time");
    standard >= begins && standard < ends
}

fn nth_sunday(year: i32, month: u32, n: u8) -> NaiveDate {
    NaiveDate::from_weekday_of_month_opt(year, month, Weekday::Sun, n)
        .expect("every month has them")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn states_keep_their_zone_and_its_summer_time() {
        assert_eq!(
            format_local(utc("2026-12-02T02:20:00Z"), "GA"),
            "1 Dec 2026, 21:20 EST"
        );
        assert_eq!(
            format_local(utc("2026-07-02T02:20:00Z"), "GA"),
            "1 Jul 2026, 22:20 EDT"
        );
        assert_eq!(
            format_local(utc("2026-07-02T02:20:00Z"), "TX"),
            "1 Jul 2026, 21:20 CDT"
        );
        assert_eq!(
            format_local(utc("2026-07-02T02:20:00Z"), "AZ"),
            "1 Jul 2026, 19:20 MST"
        );
        assert_eq!(
            format_local(utc("2026-07-02T12:00:00Z"), "HI"),
            "2 Jul 2026, 02:00 HST"
        );
    }

    #[test]
    fn the_changes_happen_at_two_in_the_morning_local() {
        // 2026: 8 March and 1 November. Eastern: 07:00 UTC both times.
        assert_eq!(local(utc("2026-03-08T06:59:00Z"), "NY").1, "EST");
        assert_eq!(local(utc("2026-03-08T07:00:00Z"), "NY").1, "EDT");
        assert_eq!(local(utc("2026-11-01T05:59:00Z"), "NY").1, "EDT");
        assert_eq!(local(utc("2026-11-01T06:00:00Z"), "NY").1, "EST");
    }
}
