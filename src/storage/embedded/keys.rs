//! Byte layouts of the embedded store's keys.
//!
//! Ids are fixed-length ASCII, so keys need no separators and a prefix scan never
//! runs into a neighbouring account or filter value.

use chrono::{DateTime, Utc};

use crate::domain::ids::{AccountId, CarrierId, EventId, LoadId, WebhookId};
use crate::domain::load::{Load, LoadStatus};
use crate::domain::tracking::{FixSource, GpsFix};
use crate::domain::webhook::{Delivery, DeliveryStatus};
use crate::storage::LoadFilter;

/// `account_id ‖ resource_id`: the primary key of loads and carriers.
pub fn owned(account: &AccountId, id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(account.as_str().len() + id.len());
    key.extend_from_slice(account.as_str().as_bytes());
    key.extend_from_slice(id.as_bytes());
    key
}

/// Loads are keyed by id alone: a load actor finds its record knowing only the id.
/// Listing by account goes through the index, whose keys start with the account.
pub fn load(id: &LoadId) -> Vec<u8> {
    id.as_str().as_bytes().to_vec()
}

pub fn carrier(account: &AccountId, id: &CarrierId) -> Vec<u8> {
    owned(account, id.as_str())
}

pub fn carrier_mc(account: &AccountId, mc_number: &str) -> Vec<u8> {
    owned(account, mc_number)
}

fn status_byte(status: LoadStatus) -> u8 {
    match status {
        LoadStatus::Posted => b'p',
        LoadStatus::Assigned => b'a',
        LoadStatus::InTransit => b't',
        LoadStatus::Delivered => b'd',
        LoadStatus::Cancelled => b'c',
    }
}

const BY_STATUS: u8 = 1;
const BY_ORIGIN: u8 = 2;
const BY_DESTINATION: u8 = 4;

/// The index prefix that lists exactly the loads matching `filter`:
/// `account ‖ mask ‖ [status] ‖ [origin state] ‖ [destination state]`.
///
/// Every load is written under all eight subsets of its (status, origin,
/// destination), so each combination of filters is one contiguous range, ordered by
/// load id (creation time), and listing never scans loads that do not match.
pub fn load_index_prefix(account: &AccountId, filter: &LoadFilter) -> Vec<u8> {
    let mut key = Vec::with_capacity(64);
    key.extend_from_slice(account.as_str().as_bytes());
    let mut mask = 0u8;
    if filter.status.is_some() {
        mask |= BY_STATUS;
    }
    if filter.origin_state.is_some() {
        mask |= BY_ORIGIN;
    }
    if filter.destination_state.is_some() {
        mask |= BY_DESTINATION;
    }
    key.push(b'0' + mask);
    if let Some(status) = filter.status {
        key.push(status_byte(status));
    }
    if let Some(state) = filter.origin_state {
        key.extend_from_slice(state.as_str().as_bytes());
    }
    if let Some(state) = filter.destination_state {
        key.extend_from_slice(state.as_str().as_bytes());
    }
    key
}

/// The eight index prefixes a load is listed under (one per subset of filters);
/// they are also the keys of the counters behind each list's `total`.
pub fn load_index_prefixes(load: &Load) -> Vec<Vec<u8>> {
    (0u8..8)
        .map(|mask| {
            let filter = LoadFilter {
                status: (mask & BY_STATUS != 0).then_some(load.status),
                origin_state: (mask & BY_ORIGIN != 0).then_some(load.origin.state),
                destination_state: (mask & BY_DESTINATION != 0).then_some(load.destination.state),
            };
            load_index_prefix(&load.account_id, &filter)
        })
        .collect()
}

/// All index keys of a load: each prefix followed by the load id.
pub fn load_index_keys(load: &Load) -> Vec<Vec<u8>> {
    load_index_prefixes(load)
        .into_iter()
        .map(|mut key| {
            key.extend_from_slice(load.id.as_str().as_bytes());
            key
        })
        .collect()
}

/// The counter of an account's carriers. `#` cannot start a load index suffix
/// (those start with a digit), so it never collides with a load counter.
pub fn carrier_count(account: &AccountId) -> Vec<u8> {
    let mut key = account.as_str().as_bytes().to_vec();
    key.push(b'#');
    key
}

/// The load id at the end of an index key.
pub fn load_id_from_index_key(key: &[u8]) -> Option<LoadId> {
    let id_len = LoadId::PREFIX.len() + 26;
    let start = key.len().checked_sub(id_len)?;
    LoadId::parse(std::str::from_utf8(&key[start..]).ok()?)
}

/// `load part ‖ timestamp (µs since the epoch, big-endian)`: one load's points are
/// contiguous and in time order, so "latest N" and a time range are one scan.
/// The load part is [`point_load_key`] in `gps_track`; older data directories'
/// keyspaces use the parts of [`OlderPointLayout`].
pub fn point_key(load_part: &[u8], at: &DateTime<Utc>) -> Vec<u8> {
    let mut key = Vec::with_capacity(load_part.len() + 8);
    key.extend_from_slice(load_part);
    key.extend_from_slice(&point_time(at));
    key
}

/// A point's key in the current layout (`gps_track`): 20 bytes.
pub fn point(load: &LoadId, at: &DateTime<Utc>) -> Vec<u8> {
    point_key(&point_load_key(load), at)
}

/// Length of a load's part of its point keys.
const POINT_LOAD_KEY_LEN: usize = 12;

/// A load's part of its point keys: the low 96 bits of the id's ULID, its 80
/// random bits first, then the low 16 bits of its creation millisecond.
///
/// Why so: the memtable keeps a key of at most 20 bytes inside its skiplist
/// node and compares keys by their first four bytes before anything else. A
/// 12-byte part and 8 time bytes make 20, so an insert compares keys without
/// following a pointer to the heap, and random bytes first make those four
/// bytes differ between loads (`load_` and the ULID's time half do not).
///
/// Unique per load: ids come only from this service's generator, which draws
/// 79 fresh random bits each millisecond and counts up within one; two loads
/// share a part only if their random bits are equal *and* their creation times
/// are a multiple of 65.536 s apart (odds about 2^-95 for a pair).
pub fn point_load_key(load: &LoadId) -> [u8; POINT_LOAD_KEY_LEN] {
    let ulid = load.ulid();
    let mut key = [0u8; POINT_LOAD_KEY_LEN];
    key[..10].copy_from_slice(&(ulid & ((1 << 80) - 1)).to_be_bytes()[6..]);
    key[10..].copy_from_slice(&((ulid >> 80) as u16).to_be_bytes());
    key
}

/// The point key layouts of older data directories' keyspaces: read alongside
/// the current one, never written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OlderPointLayout {
    /// `points`, before November 2026: the load id as it is.
    LoadId,
    /// `gps_points`, 25 November 2026: the id's ULID text, random half first.
    UlidText,
}

impl OlderPointLayout {
    pub const ALL: [OlderPointLayout; 2] = [OlderPointLayout::LoadId, OlderPointLayout::UlidText];

    /// The keyspace its points are in.
    pub fn keyspace(self) -> &'static str {
        match self {
            OlderPointLayout::LoadId => "points",
            OlderPointLayout::UlidText => "gps_points",
        }
    }

    pub fn load_part(self, load: &LoadId) -> Vec<u8> {
        match self {
            OlderPointLayout::LoadId => load.as_str().as_bytes().to_vec(),
            OlderPointLayout::UlidText => {
                let ulid = &load.as_str().as_bytes()[LoadId::PREFIX.len()..];
                [&ulid[10..26], &ulid[..10]].concat()
            }
        }
    }
}

/// The time part of a point key, as a number (microseconds since 1970).
pub fn point_micros(key: &[u8]) -> Option<u64> {
    let time: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some(u64::from_be_bytes(time))
}

/// Timestamps before 1970 cannot be stored (validation keeps fixes after 2000);
/// they clamp to 0 so the key order stays the time order.
fn point_time(at: &DateTime<Utc>) -> [u8; 8] {
    (at.timestamp_micros().max(0) as u64).to_be_bytes()
}

/// The timestamp at the end of a point key.
pub fn point_timestamp(key: &[u8]) -> Option<DateTime<Utc>> {
    let raw: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    DateTime::from_timestamp_micros(i64::try_from(u64::from_be_bytes(raw)).ok()?)
}

/// A point value: lat, lng, speed, heading as little-endian f64 (NaN when
/// unknown), so exactly the numbers the client sent come back, then one byte,
/// the fix's source (`FixSource::code`). Points written before sources were
/// recorded are the 32 bytes without it, and read as the API's.
pub fn encode_point(fix: &GpsFix) -> Vec<u8> {
    let mut value = Vec::with_capacity(POINT_VALUE_LEN);
    value.extend_from_slice(&fix.lat.to_le_bytes());
    value.extend_from_slice(&fix.lng.to_le_bytes());
    value.extend_from_slice(&fix.speed_mph.unwrap_or(f64::NAN).to_le_bytes());
    value.extend_from_slice(&fix.heading_deg.unwrap_or(f64::NAN).to_le_bytes());
    value.push(fix.source.code());
    value
}

pub const POINT_VALUE_LEN: usize = 33;
/// A point value as written before fixes recorded their source.
const UNSOURCED_POINT_VALUE_LEN: usize = 32;

pub fn decode_point(key: &[u8], value: &[u8]) -> Option<GpsFix> {
    let source = match value.len() {
        POINT_VALUE_LEN => FixSource::from_code(value[32])?,
        UNSOURCED_POINT_VALUE_LEN => FixSource::Api,
        _ => return None,
    };
    let f64_at = |i: usize| f64::from_le_bytes(value[i..i + 8].try_into().expect("8 bytes"));
    let optional = |v: f64| (!v.is_nan()).then_some(v);
    Some(GpsFix {
        timestamp: point_timestamp(key)?,
        lat: f64_at(0),
        lng: f64_at(8),
        speed_mph: optional(f64_at(16)),
        heading_deg: optional(f64_at(24)),
        source,
    })
}

/// `load id ‖ sequence (big-endian)`: the last key of a load is its last sequence.
pub fn load_event(load: &LoadId, sequence: u64) -> Vec<u8> {
    let mut key = load.as_str().as_bytes().to_vec();
    key.extend_from_slice(&sequence.to_be_bytes());
    key
}

pub fn sequence_of(key: &[u8]) -> Option<u64> {
    let raw: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some(u64::from_be_bytes(raw))
}

pub fn delivery(webhook: &WebhookId, event: &EventId) -> Vec<u8> {
    let mut key = webhook.as_str().as_bytes().to_vec();
    key.extend_from_slice(event.as_str().as_bytes());
    key
}

/// Account ids have a fixed length, but the separator keeps that from mattering.
pub fn idempotency(account: &AccountId, key: &str) -> Vec<u8> {
    let mut out = account.as_str().as_bytes().to_vec();
    out.push(0);
    out.extend_from_slice(key.as_bytes());
    out
}

pub fn due_time(at: &DateTime<Utc>) -> [u8; 8] {
    point_time(at)
}

/// The schedule entry of a pending delivery with a next attempt, else `None`.
pub fn due(delivery: &Delivery) -> Option<Vec<u8>> {
    let at = delivery
        .next_attempt_at
        .filter(|_| delivery.status == DeliveryStatus::Pending)?;
    let mut key = due_time(&at).to_vec();
    key.extend_from_slice(&self::delivery(&delivery.webhook_id, &delivery.event_id));
    Some(key)
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, Utc};

    use super::*;

    #[test]
    fn a_point_value_keeps_its_source_and_older_values_read_as_the_apis() {
        let at = DateTime::from_timestamp_micros(1_790_000_000_123_456).unwrap();
        let key = point(&LoadId::generate(), &at);
        for source in FixSource::ALL {
            let fix = GpsFix {
                timestamp: at,
                lat: 41.878_114,
                lng: -87.629_798,
                speed_mph: None,
                heading_deg: Some(359.5),
                source,
            };
            let value = encode_point(&fix);
            assert_eq!(value.len(), POINT_VALUE_LEN);
            assert_eq!(decode_point(&key, &value), Some(fix));
            // Written by the build before sources: the first 32 bytes.
            let older = decode_point(&key, &value[..32]).unwrap();
            assert_eq!(older.source, FixSource::Api);
            assert_eq!((older.lat, older.heading_deg), (fix.lat, fix.heading_deg));
        }
        let mut unknown = encode_point(&GpsFix {
            timestamp: at,
            lat: 0.0,
            lng: 0.0,
            speed_mph: None,
            heading_deg: None,
            source: FixSource::Api,
        });
        *unknown.last_mut().unwrap() = 200;
        assert_eq!(decode_point(&key, &unknown), None, "a code no build wrote");
        assert_eq!(decode_point(&key, &unknown[..31]), None);
    }

    #[test]
    fn a_point_key_is_20_bytes_and_keeps_each_load_contiguous_and_in_time_order() {
        // Made in the same millisecond (the generator counts up): still apart.
        let loads: Vec<LoadId> = (0..1000).map(|_| LoadId::generate()).collect();
        let parts: std::collections::HashSet<_> = loads.iter().map(point_load_key).collect();
        assert_eq!(parts.len(), loads.len());

        // Keys hold microseconds.
        let now = DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap();
        let (a, b) = (&loads[0], &loads[1]);
        let key = point(a, &now);
        assert_eq!(key.len(), 20, "kept inside the memtable's node");
        assert_eq!(point_timestamp(&key), Some(now));
        // Later is greater within a load, and no key of another load falls
        // between two of this one's.
        let later = point(a, &(now + Duration::microseconds(1)));
        assert!(later > key);
        let (low, high) = (
            point(a, &DateTime::UNIX_EPOCH),
            point(a, &(now + Duration::days(365))),
        );
        for other in [point(b, &now), point(b, &DateTime::UNIX_EPOCH)] {
            assert!(other < low || other > high);
        }
    }

    #[test]
    fn the_load_part_is_the_ulid_random_bits_then_the_low_time_bits() {
        let id = LoadId::from_suffix("01jd0000000000000000000001").unwrap();
        let part = point_load_key(&id);
        assert_eq!(&part[..10], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        // "01jd" is the top of the millisecond; its low 16 bits are 0 here.
        assert_eq!(&part[10..], &[0, 0]);
        let id = LoadId::from_suffix("0000000001zzzzzzzzzzzzzzzz").unwrap();
        let part = point_load_key(&id);
        assert_eq!(&part[..10], &[0xff; 10]);
        assert_eq!(&part[10..], &[0, 1]);
    }
}
