//! Compact binary layouts of the two records the webhook pipeline reads and
//! writes at thousands a second: outbox events and delivery records.
//!
//! Everything else in the store is JSON. These two were too: decoding an event
//! (its ids checked again, its payload scanned to find where it ends) and
//! encoding every delivery twice were a fifth of a webhook drain's storage time.
//! A binary record starts with a version byte; a JSON record starts with `{`,
//! so records written before this layout are still read (and never rewritten
//! in place: an event is immutable, a delivery is replaced whole).
//!
//! Layouts (integers little-endian; a time is i64 seconds since the epoch and
//! u32 nanoseconds, as exact as the value it keeps; strings are a length then
//! UTF-8 bytes: a `u8` length for ids, which are short
//! ASCII, a `u32` one for free text):
//!
//! - event v1: `1, kind u8, sequence u64, timestamp, id, account id,
//!   load id`, then the data's JSON text to the end of the record;
//! - delivery v1: `1, event type u8, status u8, attempts u32, last status code
//!   u16 (0: none), flags u8 (1: next attempt, 2: delivered at, 4: last error),
//!   created at, [next attempt at], [delivered at], webhook id,
//!   event id, [last error]`.

use chrono::{DateTime, Utc};

use crate::domain::event::{Event, EventType};
use crate::domain::ids::{AccountId, EventId, LoadId, WebhookId};
use crate::domain::webhook::{Delivery, DeliveryStatus};
use crate::storage::{StorageError, StorageResult};

const V1: u8 = 1;
const JSON: u8 = b'{';

const HAS_NEXT_ATTEMPT: u8 = 1;
const HAS_DELIVERED_AT: u8 = 2;
const HAS_LAST_ERROR: u8 = 4;

pub fn encode_event(event: &Event) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + event.data.len());
    out.push(V1);
    out.push(event_type_code(event.kind));
    out.extend_from_slice(&event.sequence.to_le_bytes());
    put_time(&mut out, &event.timestamp);
    put_id(&mut out, event.id.as_str());
    put_id(&mut out, event.account_id.as_str());
    put_id(&mut out, event.load_id.as_str());
    out.extend_from_slice(event.data.as_bytes());
    out
}

pub fn decode_event(bytes: &[u8]) -> StorageResult<Event> {
    match bytes.first() {
        Some(&JSON) => json(bytes),
        Some(&V1) => {
            let mut r = Reader::new(&bytes[1..], "event");
            let kind = event_type(r.u8()?)?;
            let sequence = r.u64()?;
            let timestamp = r.time()?;
            let id = r.id(EventId::from_stored)?;
            let account_id = r.id(AccountId::from_stored)?;
            let load_id = r.id(LoadId::from_stored)?;
            let data = r.rest_str()?.into();
            Ok(Event {
                id,
                account_id,
                load_id,
                kind,
                sequence,
                timestamp,
                data,
            })
        }
        _ => Err(unknown("event")),
    }
}

pub fn encode_delivery(delivery: &Delivery) -> Vec<u8> {
    let mut out = Vec::with_capacity(112);
    out.push(V1);
    out.push(event_type_code(delivery.event_type));
    out.push(match delivery.status {
        DeliveryStatus::Pending => 0,
        DeliveryStatus::Delivered => 1,
        DeliveryStatus::Failed => 2,
    });
    out.extend_from_slice(&delivery.attempts.to_le_bytes());
    out.extend_from_slice(&delivery.last_status_code.unwrap_or(0).to_le_bytes());
    let flags = (delivery.next_attempt_at.is_some() as u8 * HAS_NEXT_ATTEMPT)
        | (delivery.delivered_at.is_some() as u8 * HAS_DELIVERED_AT)
        | (delivery.last_error.is_some() as u8 * HAS_LAST_ERROR);
    out.push(flags);
    put_time(&mut out, &delivery.created_at);
    for time in [&delivery.next_attempt_at, &delivery.delivered_at]
        .into_iter()
        .flatten()
    {
        put_time(&mut out, time);
    }
    put_id(&mut out, delivery.webhook_id.as_str());
    put_id(&mut out, delivery.event_id.as_str());
    if let Some(error) = &delivery.last_error {
        out.extend_from_slice(&(error.len() as u32).to_le_bytes());
        out.extend_from_slice(error.as_bytes());
    }
    out
}

pub fn decode_delivery(bytes: &[u8]) -> StorageResult<Delivery> {
    match bytes.first() {
        Some(&JSON) => json(bytes),
        Some(&V1) => {
            let mut r = Reader::new(&bytes[1..], "delivery");
            let event_type = event_type(r.u8()?)?;
            let status = match r.u8()? {
                0 => DeliveryStatus::Pending,
                1 => DeliveryStatus::Delivered,
                2 => DeliveryStatus::Failed,
                _ => return Err(unknown("delivery status")),
            };
            let attempts = r.u32()?;
            let last_status_code = Some(r.u16()?).filter(|code| *code != 0);
            let flags = r.u8()?;
            let created_at = r.time()?;
            let next_attempt_at = match flags & HAS_NEXT_ATTEMPT {
                0 => None,
                _ => Some(r.time()?),
            };
            let delivered_at = match flags & HAS_DELIVERED_AT {
                0 => None,
                _ => Some(r.time()?),
            };
            let webhook_id = r.id(WebhookId::from_stored)?;
            let event_id = r.id(EventId::from_stored)?;
            let last_error = match flags & HAS_LAST_ERROR {
                0 => None,
                _ => {
                    let len = r.u32()? as usize;
                    Some(r.str(len)?.to_owned())
                }
            };
            Ok(Delivery {
                webhook_id,
                event_id,
                event_type,
                status,
                attempts,
                last_status_code,
                last_error,
                next_attempt_at,
                delivered_at,
                created_at,
            })
        }
        _ => Err(unknown("delivery")),
    }
}

fn json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> StorageResult<T> {
    serde_json::from_slice(bytes).map_err(|e| StorageError::undecodable("a JSON record", e))
}

fn unknown(what: &str) -> StorageError {
    StorageError::corrupt(format!("a {what} record of an unknown layout"))
}

fn event_type_code(kind: EventType) -> u8 {
    EventType::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("every event type is in ALL") as u8
}

fn event_type(code: u8) -> StorageResult<EventType> {
    EventType::ALL
        .get(code as usize)
        .copied()
        .ok_or_else(|| unknown("event type"))
}

fn put_time(out: &mut Vec<u8>, time: &DateTime<Utc>) {
    out.extend_from_slice(&time.timestamp().to_le_bytes());
    out.extend_from_slice(&time.timestamp_subsec_nanos().to_le_bytes());
}

fn put_id(out: &mut Vec<u8>, id: &str) {
    out.push(u8::try_from(id.len()).expect("ids are short"));
    out.extend_from_slice(id.as_bytes());
}

/// Reads a record front to back; running out is corruption, never a panic.
struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, what }
    }

    fn take(&mut self, n: usize) -> StorageResult<&'a [u8]> {
        if self.bytes.len() < n {
            return Err(StorageError::corrupt(format!(
                "a {} record ends early",
                self.what
            )));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> StorageResult<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    fn u8(&mut self) -> StorageResult<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> StorageResult<u16> {
        self.array().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> StorageResult<u32> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> StorageResult<u64> {
        self.array().map(u64::from_le_bytes)
    }

    fn time(&mut self) -> StorageResult<DateTime<Utc>> {
        let seconds = i64::from_le_bytes(self.array()?);
        let nanos = self.u32()?;
        DateTime::from_timestamp(seconds, nanos)
            .ok_or_else(|| StorageError::corrupt(format!("a {} record's time", self.what)))
    }

    fn str(&mut self, len: usize) -> StorageResult<&'a str> {
        let what = self.what;
        std::str::from_utf8(self.take(len)?)
            .map_err(|_| StorageError::corrupt(format!("a {what} record's text")))
    }

    fn id<T>(&mut self, make: fn(&str) -> Option<T>) -> StorageResult<T> {
        let len = self.u8()? as usize;
        let what = self.what;
        make(self.str(len)?).ok_or_else(|| StorageError::corrupt(format!("a {what} record's id")))
    }

    fn rest_str(&mut self) -> StorageResult<&'a str> {
        let len = self.bytes.len();
        self.str(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::timestamp::parse_utc;

    fn event() -> Event {
        Event::new(
            AccountId::generate(),
            LoadId::generate(),
            EventType::DeliveryCompleted,
            42,
            crate::clock::Clock::system().now(),
            serde_json::json!({"load": {"notes": "ünïcode \"quoted\"", "weight": 1.5}}),
        )
    }

    fn delivery() -> Delivery {
        Delivery::new(
            WebhookId::generate(),
            EventId::generate(),
            EventType::LoadAssigned,
            crate::clock::Clock::system().now(),
        )
    }

    #[test]
    fn events_round_trip_and_json_records_still_read() {
        let event = event();
        let encoded = encode_event(&event);
        assert_eq!(encoded[0], V1);
        assert_eq!(decode_event(&encoded).unwrap(), event);
        // A record written before the binary layout.
        let legacy = serde_json::to_vec(&event).unwrap();
        assert_eq!(decode_event(&legacy).unwrap(), event);
        assert_eq!(decode_event(&legacy).unwrap().body(), event.body());
    }

    #[test]
    fn deliveries_round_trip_in_every_state() {
        let fresh = delivery();
        let at = parse_utc("2026-11-22T01:02:03.004Z").unwrap();
        let retrying = Delivery {
            attempts: 3,
            last_status_code: Some(503),
            last_error: Some("the receiver answered 503 Service Unavailable".into()),
            next_attempt_at: Some(at),
            ..fresh.clone()
        };
        let refused = Delivery {
            attempts: 1,
            last_status_code: None,
            last_error: Some("connection refused".into()),
            ..fresh.clone()
        };
        let delivered = Delivery {
            status: DeliveryStatus::Delivered,
            attempts: 4,
            last_status_code: Some(204),
            last_error: None,
            next_attempt_at: None,
            delivered_at: Some(at),
            ..fresh.clone()
        };
        let failed = Delivery {
            status: DeliveryStatus::Failed,
            next_attempt_at: None,
            ..retrying.clone()
        };
        for delivery in [fresh, retrying, refused, delivered, failed] {
            assert_eq!(
                decode_delivery(&encode_delivery(&delivery)).unwrap(),
                delivery
            );
            let legacy = serde_json::to_vec(&delivery).unwrap();
            assert_eq!(decode_delivery(&legacy).unwrap(), delivery);
        }
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let encoded = encode_delivery(&delivery());
        for len in 0..encoded.len() {
            assert!(decode_delivery(&encoded[..len]).is_err(), "cut at {len}");
        }
        let event = event();
        let encoded = encode_event(&event);
        // Cut inside the header (the data runs to the end, so any cut after it decodes).
        for len in 0..encoded.len() - event.data.len() {
            assert!(decode_event(&encoded[..len]).is_err(), "cut at {len}");
        }
        assert!(decode_event(&[9, 1, 2]).is_err());
        let mut bad_kind = encode_event(&event);
        bad_kind[1] = 200;
        assert!(decode_event(&bad_kind).is_err());
    }
}
