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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
}

impl EventType {
    pub const ALL: [EventType; 5] = [
        EventType::LoadCreated,
        EventType::LoadAssigned,
        EventType::LoadStatusChanged,
        EventType::TrackingUpdated,
        EventType::DeliveryCompleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::LoadCreated => "load.created",
            EventType::LoadAssigned => "load.assigned",
            EventType::LoadStatusChanged => "load.status_changed",
            EventType::TrackingUpdated => "tracking.updated",
            EventType::DeliveryCompleted => "delivery.completed",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == raw.trim())
            .ok_or_else(|| {
                "must be one of: load.created, load.assigned, load.status_changed, tracking.updated, delivery.completed".to_string()
            })
    }
}

/// An event as stored in the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub data: Value,
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
            data,
        }
    }

    /// The body a subscriber receives (DESIGN.md): `{"id", "type", "timestamp", "data"}`,
    /// with the load id and the sequence number inside `data`.
    pub fn payload(&self) -> Value {
        let mut data = self.data.clone();
        if let Value::Object(map) = &mut data {
            map.insert("load_id".into(), Value::String(self.load_id.to_string()));
            map.insert("sequence".into(), Value::from(self.sequence));
        }
        serde_json::json!({
            "id": self.id,
            "type": self.kind.as_str(),
            "timestamp": timestamp::format(&self.timestamp),
            "data": data,
        })
    }
}
