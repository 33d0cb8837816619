//! Domain events: what changed, for webhook subscribers.
//!
//! An event is written to the outbox in the same atomic storage commit as the
//! change that caused it, so there is never a change without its event nor an
//! event without its change.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::{AccountId, EventId, LoadId};
use super::timestamp::{self, serde_utc};

/// What happened, as webhook subscribers name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
pub enum EventType {
    #[serde(rename = "load.created")]
    LoadCreated,
    #[serde(rename = "load.assigned")]
    LoadAssigned,
    #[serde(rename = "load.status_changed")]
    LoadStatusChanged,
    #[serde(rename = "tracking.updated")]
    TrackingUpdated,
    #[serde(rename = "delivery.completed")]
    DeliveryCompleted,
    /// The truck arrived at a stop (its geofence).
    #[serde(rename = "load.arrived")]
    LoadArrived,
    /// The truck left a stop.
    #[serde(rename = "load.departed")]
    LoadDeparted,
    /// The truck is still at a stop when its free time ends.
    #[serde(rename = "load.detention_started")]
    LoadDetentionStarted,
    /// A stop's ETA moved 15 minutes or more, or its late risk flipped.
    #[serde(rename = "load.eta_changed")]
    LoadEtaChanged,
    /// The load's fields were changed (`PATCH /v1/loads/{id}`).
    #[serde(rename = "load.updated")]
    LoadUpdated,
    /// The truck arrived at a later stop without arriving at this one.
    #[serde(rename = "load.stop_skipped")]
    LoadStopSkipped,
}

impl EventType {
    pub const ALL: [EventType; 11] = [
        EventType::LoadCreated,
        EventType::LoadAssigned,
        EventType::LoadStatusChanged,
        EventType::TrackingUpdated,
        EventType::DeliveryCompleted,
        EventType::LoadArrived,
        EventType::LoadDeparted,
        EventType::LoadDetentionStarted,
        EventType::LoadEtaChanged,
        EventType::LoadUpdated,
        EventType::LoadStopSkipped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::LoadCreated => "load.created",
            EventType::LoadAssigned => "load.assigned",
            EventType::LoadStatusChanged => "load.status_changed",
            EventType::TrackingUpdated => "tracking.updated",
            EventType::DeliveryCompleted => "delivery.completed",
            EventType::LoadArrived => "load.arrived",
            EventType::LoadDeparted => "load.departed",
            EventType::LoadDetentionStarted => "load.detention_started",
            EventType::LoadEtaChanged => "load.eta_changed",
            EventType::LoadUpdated => "load.updated",
            EventType::LoadStopSkipped => "load.stop_skipped",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == raw.trim())
            .ok_or_else(|| {
                format!(
                    "must be one of: {}",
                    Self::ALL.map(EventType::as_str).join(", ")
                )
            })
    }
}

/// An event as stored in the outbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    pub id: EventId,
    pub account_id: AccountId,
    pub load_id: LoadId,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// Position of this event among all events of its load, from 1. A receiver
    /// orders a load's events by it; gaps are possible (a write that failed).
    pub sequence: u64,
    #[serde(with = "serde_utc")]
    pub timestamp: DateTime<Utc>,
    /// Kept as JSON text (an object): it is written once and sent many times,
    /// never looked into.
    #[serde(with = "json_text")]
    pub data: Box<str>,
}

/// `Event::data` as JSON text in a JSON document (the store's original record
/// format): embedded as the value it is, not as a string.
mod json_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::value::RawValue;

    pub fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        RawValue::from_string(text.to_owned())
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Box<str>, D::Error> {
        Ok(Box::<RawValue>::deserialize(d)?.get().into())
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.account_id == other.account_id
            && self.load_id == other.load_id
            && self.kind == other.kind
            && self.sequence == other.sequence
            && self.timestamp == other.timestamp
            && self.data == other.data
    }
}

impl Event {
    pub fn new(
        account_id: AccountId,
        load_id: LoadId,
        kind: EventType,
        sequence: u64,
        timestamp: DateTime<Utc>,
        data: Value,
    ) -> Self {
        Event {
            id: EventId::generate(),
            account_id,
            load_id,
            kind,
            sequence,
            timestamp,
            data: data.to_string().into(),
        }
    }

    /// The body a subscriber receives (DESIGN.md): `{"id", "type", "timestamp", "data"}`,
    /// with the load id and the sequence number inside `data`. Written straight
    /// from the stored text: fan-out makes one per event, at thousands a second.
    pub fn body(&self) -> Vec<u8> {
        let data = self.data.trim();
        let mut out = Vec::with_capacity(data.len() + 192);
        let string = |out: &mut Vec<u8>, text: &str| {
            serde_json::to_writer(out, text).expect("strings serialise")
        };
        out.extend_from_slice(b"{\"id\":");
        string(&mut out, self.id.as_str());
        out.extend_from_slice(b",\"type\":");
        string(&mut out, self.kind.as_str());
        out.extend_from_slice(b",\"timestamp\":");
        string(&mut out, &timestamp::format(&self.timestamp));
        out.extend_from_slice(b",\"data\":");
        match data.strip_suffix('}') {
            // Every event's data is an object (see webhooks::payloads).
            Some(open) if data.starts_with('{') => {
                out.extend_from_slice(open.as_bytes());
                if open.trim() != "{" {
                    out.push(b',');
                }
                out.extend_from_slice(b"\"load_id\":");
                string(&mut out, self.load_id.as_str());
                out.extend_from_slice(format!(",\"sequence\":{}}}", self.sequence).as_bytes());
            }
            _ => out.extend_from_slice(data.as_bytes()),
        }
        out.push(b'}');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_carries_the_load_id_and_sequence_inside_data() {
        let at = timestamp::parse_utc("2026-11-21T19:29:10.141Z").unwrap();
        let load = LoadId::generate();
        let event = Event::new(
            AccountId::generate(),
            load.clone(),
            EventType::LoadStatusChanged,
            7,
            at,
            serde_json::json!({"status": "in_transit", "note": "a \"quoted\" }"}),
        );
        let body: Value = serde_json::from_slice(&event.body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "id": event.id.as_str(),
                "type": "load.status_changed",
                "timestamp": "2026-11-21T19:29:10.141Z",
                "data": {
                    "status": "in_transit",
                    "note": "a \"quoted\" }",
                    "load_id": load.as_str(),
                    "sequence": 7,
                },
            })
        );
        let empty = Event::new(
            AccountId::generate(),
            load.clone(),
            EventType::LoadCreated,
            1,
            at,
            serde_json::json!({}),
        );
        let body: Value = serde_json::from_slice(&empty.body()).unwrap();
        assert_eq!(
            body["data"],
            serde_json::json!({"load_id": load.as_str(), "sequence": 1})
        );
    }
}
