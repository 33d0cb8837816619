//! Key arithmetic of the ScyllaDB tables: day buckets of the GPS series, the
//! filter partitions of load lists, and the minute, hour and shard partitions
//! of the webhook pipeline. Pure functions, tested without a server.

use chrono::{DateTime, Utc};

use crate::domain::ids::EventId;
use crate::domain::load::Load;
use crate::domain::webhook::{Delivery, DeliveryStatus};
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

// The webhook pipeline's partitions (cql/004): time-bucketed and sharded.

/// Partitions per minute of each queue (and of `outbox_events` and
/// `deliveries_by_event`). Part of every stored key: changing it needs a new
/// table.
pub(super) const SHARDS: i32 = 8;

pub(super) const MILLIS_PER_MINUTE: i64 = 60_000;
pub(super) const MILLIS_PER_HOUR: i64 = 3_600_000;
pub(super) const MICROS_PER_MINUTE: i64 = 60_000_000;

/// A stable hash (FNV-1a) of `parts` concatenated, modulo [`SHARDS`]. Part of
/// stored keys: it must never change.
pub(super) fn shard_of(parts: &[&str]) -> i32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in parts.iter().flat_map(|part| part.bytes()) {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    (hash % SHARDS as u32) as i32
}

/// A time-bucketed partition: `(minute, shard)`. Orders by minute first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Slot {
    pub(super) minute: i64,
    pub(super) shard: i32,
}

/// The partition of an event in `outbox_events`, `unfanned_events` and
/// `deliveries_by_event`.
pub(super) fn event_slot(id: &EventId) -> Slot {
    Slot {
        minute: id.created_millis().div_euclid(MILLIS_PER_MINUTE),
        shard: shard_of(&[id.as_str()]),
    }
}

/// The hour of an event's delivery records in `deliveries`.
pub(super) fn event_hour(id: &EventId) -> i64 {
    id.created_millis().div_euclid(MILLIS_PER_HOUR)
}

/// A schedule entry: its due time (µs; before 1970 kept as 0, as the embedded
/// store does) and partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Due {
    pub(super) at: i64,
    pub(super) slot: Slot,
}

/// The schedule entry of a pending delivery with a next attempt, else `None`.
pub(super) fn due_of(delivery: &Delivery) -> Option<Due> {
    let at = delivery
        .next_attempt_at
        .filter(|_| delivery.status == DeliveryStatus::Pending)?;
    let at = micros(&at).max(0);
    Some(Due {
        at,
        slot: Slot {
            minute: at.div_euclid(MICROS_PER_MINUTE),
            shard: shard_of(&[delivery.webhook_id.as_str(), delivery.event_id.as_str()]),
        },
    })
}

/// Pending without a next attempt: waiting for its subscription to be enabled.
pub(super) fn is_parked(delivery: &Delivery) -> bool {
    delivery.status == DeliveryStatus::Pending && delivery.next_attempt_at.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    use crate::domain::ids::WebhookId;
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

    #[test]
    fn an_event_id_tells_its_millisecond_and_minute() {
        let at: DateTime<Utc> = "2026-11-24T07:08:09.123Z".parse().unwrap();
        let floor = EventId::floor_at(at);
        assert_eq!(floor.created_millis(), at.timestamp_millis());
        let slot = event_slot(&floor);
        assert_eq!(slot.minute, at.timestamp_millis() / 60_000);
        assert!((0..SHARDS).contains(&slot.shard));
        let now = EventId::generate();
        let millis = now.created_millis();
        assert!((Utc::now().timestamp_millis() - millis).abs() < 60_000);
        assert!(event_hour(&now) == millis / 3_600_000);
    }

    #[test]
    fn minutes_follow_id_order() {
        let ids: Vec<EventId> = (0..100).map(|_| EventId::generate()).collect();
        for pair in ids.windows(2) {
            assert!(event_slot(&pair[0]).minute <= event_slot(&pair[1]).minute);
        }
    }

    #[test]
    fn shards_are_stable_and_spread() {
        // FNV-1a of "a" is 0xe40c292c; the hash is part of stored keys.
        assert_eq!(shard_of(&["a"]), (0xe40c_292c_u32 % SHARDS as u32) as i32);
        assert_eq!(shard_of(&["ab", "c"]), shard_of(&["abc"]));
        let used: HashSet<i32> = (0..200)
            .map(|_| shard_of(&[EventId::generate().as_str()]))
            .collect();
        assert_eq!(used.len(), SHARDS as usize);
    }

    #[test]
    fn schedule_entries_are_pending_deliveries_with_a_next_attempt() {
        use crate::domain::event::EventType;
        let at: DateTime<Utc> = "2026-11-24T07:08:09.123456Z".parse().unwrap();
        let delivery = Delivery::new(
            WebhookId::generate(),
            EventId::generate(),
            EventType::LoadCreated,
            at,
        );
        let due = due_of(&delivery).unwrap();
        assert_eq!(due.at, micros(&at));
        assert_eq!(due.slot.minute, micros(&at) / 60_000_000);
        let parked = Delivery {
            next_attempt_at: None,
            ..delivery.clone()
        };
        assert!(due_of(&parked).is_none() && is_parked(&parked));
        let delivered = Delivery {
            status: DeliveryStatus::Delivered,
            ..delivery
        };
        assert!(due_of(&delivered).is_none() && !is_parked(&delivered));
    }
}
