//! What is known of each stop, as stored with the point that changed it.
//!
//! Stored as JSON, one entry per stop named by its id. Progress stored
//! before loads had stop ids (`{"pickup": …, "delivery": …}`) reads as two
//! entries named by kind, which stand for the load's first and last stops.

use std::num::NonZeroI64;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::StopKind;
use crate::domain::eta::EtaSent;
use crate::domain::hos::DriverClock;
use crate::domain::ids::StopId;
use crate::domain::stop_plan::Stop;

/// Microseconds since 1970, never 0 (no fix is dated 1970), so an optional
/// time costs 8 bytes.
pub type Micros = NonZeroI64;

pub(super) fn micros(at: DateTime<Utc>) -> Micros {
    NonZeroI64::new(at.timestamp_micros()).unwrap_or(NonZeroI64::MIN)
}

pub(super) fn time(micros: Micros) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros.get())
}

/// What is known of one stop (times in µs since 1970).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopProgress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrived_at: Option<Micros>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub departed_at: Option<Micros>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inferred: bool,
    /// The first fix inside the arrival radius while the truck has not been
    /// seen stopped: the arrival time if it turns out to stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_inside: Option<Micros>,
    /// That first fix inside reported moving (over 5 mph): it cannot be one
    /// of the two fixes that show a stop without speeds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first_inside_moving: bool,
    /// The truck arrived at a later stop without arriving here: the time of
    /// that arrival.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_at: Option<Micros>,
    /// The ETA last sent in `load.eta_changed` for this stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_sent: Option<EtaSent>,
}

impl StopProgress {
    pub fn arrived(&self) -> Option<DateTime<Utc>> {
        self.arrived_at.and_then(time)
    }

    pub fn departed(&self) -> Option<DateTime<Utc>> {
        self.departed_at.and_then(time)
    }

    pub fn skipped(&self) -> Option<DateTime<Utc>> {
        self.skipped_at.and_then(time)
    }

    /// At the stop now: arrived and not departed.
    pub fn at_stop(&self) -> bool {
        self.arrived_at.is_some() && self.departed_at.is_none()
    }

    /// Nothing more can happen here: departed or skipped.
    pub fn done(&self) -> bool {
        self.departed_at.is_some() || self.skipped_at.is_some()
    }
}

/// Which stop an entry is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopKey {
    Id(StopId),
    /// Stored before stops had ids: the load's first (pickup) or last
    /// (delivery) stop.
    Legacy(StopKind),
}

impl StopKey {
    /// A stop id, or the `pickup`/`delivery` of progress stored before stops
    /// had ids.
    pub fn parse(raw: &str) -> Option<StopKey> {
        StopId::parse(raw)
            .map(StopKey::Id)
            .or_else(|| StopKind::parse(raw).map(StopKey::Legacy))
    }

    pub fn as_str(&self) -> &str {
        match self {
            StopKey::Id(id) => id.as_str(),
            StopKey::Legacy(kind) => kind.as_str(),
        }
    }

    /// Whether this entry is of `stop`, the `index`th of `len`.
    pub fn names(&self, stop: &Stop, index: usize, len: usize) -> bool {
        match self {
            StopKey::Id(id) => *id == stop.id,
            StopKey::Legacy(StopKind::Pickup) => index == 0,
            StopKey::Legacy(StopKind::Delivery) => index + 1 == len,
        }
    }
}

/// Every stop's progress, and the driver's clock: what the store keeps per
/// load, written with the point that changed it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Stored", into = "Stored")]
pub struct StopsProgress {
    pub stops: Vec<(StopKey, StopProgress)>,
    /// The driver's hours-of-service clock as of the newest fix folded.
    pub driver: Option<DriverClock>,
}

impl StopsProgress {
    /// The progress of the stop named `id`, as this progress was written.
    pub fn by_id(&self, id: &StopId) -> Option<&StopProgress> {
        self.stops
            .iter()
            .find(|(key, _)| matches!(key, StopKey::Id(k) if k == id))
            .map(|(_, progress)| progress)
    }

    /// The progress of each of `stops`, in their order.
    pub fn of_stops(&self, stops: &[Stop]) -> Vec<StopProgress> {
        (0..stops.len()).map(|i| self.of(stops, i)).collect()
    }

    /// The progress of `stops[index]`.
    pub fn of(&self, stops: &[Stop], index: usize) -> StopProgress {
        let Some(stop) = stops.get(index) else {
            return StopProgress::default();
        };
        // An entry by id wins over a legacy one for the same stop.
        let by_id = self
            .stops
            .iter()
            .find(|(key, _)| matches!(key, StopKey::Id(id) if *id == stop.id));
        by_id
            .or_else(|| {
                self.stops
                    .iter()
                    .find(|(key, _)| key.names(stop, index, stops.len()))
            })
            .map(|(_, progress)| *progress)
            .unwrap_or_default()
    }
}

#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    stops: Vec<StoredStop>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    driver: Option<DriverClock>,
    // The two-stop form, read only.
    #[serde(default, skip_serializing)]
    pickup: Option<StopProgress>,
    #[serde(default, skip_serializing)]
    delivery: Option<StopProgress>,
    #[serde(default, skip_serializing)]
    eta_sent: Option<EtaSent>,
}

#[derive(Serialize, Deserialize)]
struct StoredStop {
    stop: String,
    #[serde(flatten)]
    progress: StopProgress,
}

impl From<Stored> for StopsProgress {
    fn from(stored: Stored) -> Self {
        let mut stops: Vec<(StopKey, StopProgress)> = stored
            .stops
            .into_iter()
            .filter_map(|s| Some((StopKey::parse(&s.stop)?, s.progress)))
            .collect();
        if let Some(pickup) = stored.pickup {
            stops.push((StopKey::Legacy(StopKind::Pickup), pickup));
        }
        if let Some(mut delivery) = stored.delivery {
            delivery.eta_sent = delivery.eta_sent.or(stored.eta_sent);
            stops.push((StopKey::Legacy(StopKind::Delivery), delivery));
        }
        StopsProgress {
            stops,
            driver: stored.driver,
        }
    }
}

impl From<StopsProgress> for Stored {
    fn from(progress: StopsProgress) -> Self {
        Stored {
            stops: progress
                .stops
                .into_iter()
                .map(|(key, progress)| StoredStop {
                    stop: key.as_str().to_owned(),
                    progress,
                })
                .collect(),
            driver: progress.driver,
            pickup: None,
            delivery: None,
            eta_sent: None,
        }
    }
}
