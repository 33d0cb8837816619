//! Key arithmetic of the ScyllaDB tables: day buckets of the GPS series and
//! the filter partitions of load lists. Pure functions, tested without a server.

use chrono::{DateTime, Utc};

use crate::domain::load::Load;
use crate::storage::LoadFilter;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A time as the tables keep it: microseconds since 1970 (what the embedded
/// store keeps, so both backends give back exactly the timestamp sent).
pub fn micros(at: &DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

pub fn from_micros(micros: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros)
}

/// The UTC day (days since 1970-01-01) a time falls in: the partition bucket
/// of `gps_points`. Floor division, so a time before 1970 is in a negative day.
pub fn day(micros: i64) -> i32 {
    let day = micros.div_euclid(MICROS_PER_DAY);
    day.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

/// The partition of `loads_by_account` that lists exactly the loads matching
/// `filter`: its parts in a fixed order, `''` for no filter.
pub fn load_filter(filter: &LoadFilter) -> String {
    let mut parts = Vec::with_capacity(3);
    if let Some(status) = filter.status {
        parts.push(format!("s={}", status.as_str()));
    }
    if let Some(state) = filter.origin_state {
        parts.push(format!("o={}", state.as_str()));
    }
    if let Some(state) = filter.destination_state {
        parts.push(format!("d={}", state.as_str()));
    }
    parts.join(",")
}

/// The eight list partitions a load is in: one per subset of its (status,
/// origin state, destination state).
pub fn load_filters(load: &Load) -> Vec<String> {
    (0u8..8)
        .map(|mask| {
            load_filter(&LoadFilter {
                status: (mask & 1 != 0).then_some(load.status),
                origin_state: (mask & 2 != 0).then_some(load.origin.state),
                destination_state: (mask & 4 != 0).then_some(load.destination.state),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::load::LoadStatus;
    use crate::domain::location::UsState;

    #[test]
    fn days_are_utc_and_floor_before_the_epoch() {
        let at = |s: &str| micros(&s.parse::<DateTime<Utc>>().unwrap());
        assert_eq!(day(at("1970-01-01T00:00:00Z")), 0);
        assert_eq!(day(at("1970-01-01T23:59:59.999999Z")), 0);
        assert_eq!(day(at("1970-01-02T00:00:00Z")), 1);
        assert_eq!(day(at("1969-12-31T23:59:59.999999Z")), -1);
        assert_eq!(day(at("2026-11-24T00:00:00Z")), 20_781);
        assert_eq!(day(at("2026-11-23T23:59:59.999999Z")), 20_780);
    }

    #[test]
    fn micros_round_trip_exactly() {
        let at: DateTime<Utc> = "2026-11-24T07:08:09.123456Z".parse().unwrap();
        assert_eq!(from_micros(micros(&at)), Some(at));
    }

    #[test]
    fn a_filter_names_its_parts_in_a_fixed_order() {
        assert_eq!(load_filter(&LoadFilter::default()), "");
        let all = LoadFilter {
            status: Some(LoadStatus::InTransit),
            origin_state: Some(UsState::parse("TX").unwrap()),
            destination_state: Some(UsState::parse("GA").unwrap()),
        };
        assert_eq!(load_filter(&all), "s=in_transit,o=TX,d=GA");
        let destination_only = LoadFilter {
            destination_state: Some(UsState::parse("TX").unwrap()),
            ..LoadFilter::default()
        };
        // Origin TX and destination TX are different partitions.
        assert_eq!(load_filter(&destination_only), "d=TX");
    }
}
