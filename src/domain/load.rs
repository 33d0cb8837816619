//! Loads: what is shipped, from where to where, and the status lifecycle.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::equipment::EquipmentType;
use super::ids::{AccountId, CarrierId, LoadId, StopId};
use super::location::{Coordinates, Location};
use super::stop_plan::{self, Stop};
use super::stops::StopKind;
use super::timestamp::serde_utc;
use super::validation::number_in;

/// Heaviest load accepted, in pounds. A legal US truck grosses 80,000 lb; permitted
/// superloads go far beyond, so the cap only catches unit mistakes (kg vs. tons).
pub const MAX_WEIGHT_LB: f64 = 500_000.0;
/// Largest rate accepted, in US dollars.
pub const MAX_RATE_USD: f64 = 10_000_000.0;
pub const MAX_NOTES_CHARS: usize = 2_000;
/// Longest `reference`, in characters.
pub const MAX_REFERENCE_CHARS: usize = 64;
/// Status history entries kept on a load; older ones are dropped, the count kept.
pub const MAX_STATUS_HISTORY: usize = 50;

/// Where a load is in its lifecycle: `posted` → `assigned` → `in_transit` →
/// `delivered` (and `assigned` → `posted` to unassign); `posted` or `assigned`
/// → `cancelled`. `delivered` and `cancelled` are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoadStatus {
    Posted,
    Assigned,
    InTransit,
    Delivered,
    Cancelled,
}

impl LoadStatus {
    pub const ALL: [LoadStatus; 5] = [
        LoadStatus::Posted,
        LoadStatus::Assigned,
        LoadStatus::InTransit,
        LoadStatus::Delivered,
        LoadStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LoadStatus::Posted => "posted",
            LoadStatus::Assigned => "assigned",
            LoadStatus::InTransit => "in_transit",
            LoadStatus::Delivered => "delivered",
            LoadStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == raw.trim())
            .ok_or_else(|| {
                "must be one of: posted, assigned, in_transit, delivered, cancelled".to_string()
            })
    }

    /// The statuses a load in this status may move to (besides repeating itself).
    pub fn allowed_next(self) -> &'static [LoadStatus] {
        match self {
            LoadStatus::Posted => &[LoadStatus::Assigned, LoadStatus::Cancelled],
            LoadStatus::Assigned => &[
                LoadStatus::InTransit,
                LoadStatus::Posted,
                LoadStatus::Cancelled,
            ],
            LoadStatus::InTransit => &[LoadStatus::Delivered],
            LoadStatus::Delivered | LoadStatus::Cancelled => &[],
        }
    }

    /// Delivered or cancelled: nothing about the load changes any more.
    pub fn is_final(self) -> bool {
        matches!(self, LoadStatus::Delivered | LoadStatus::Cancelled)
    }
}

impl std::fmt::Display for LoadStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The carrier as the load remembers it: a snapshot taken at assignment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CarrierSummary {
    pub id: CarrierId,
    pub name: String,
    pub mc_number: String,
}

/// One status change, with where and why it happened if the client said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StatusEntry {
    pub status: LoadStatus,
    #[serde(with = "serde_utc")]
    pub at: DateTime<Utc>,
    /// Where the change happened, if the client said; null otherwise.
    #[serde(default)]
    #[schema(required = true)]
    pub location: Option<Coordinates>,
    /// Why, if the client said; null otherwise.
    #[serde(default)]
    #[schema(required = true)]
    pub notes: Option<String>,
    /// Who made the change: `api` (a client or a person, through the API or
    /// the dashboard) or `geofence` (freight, when the truck left the pickup).
    #[serde(default)]
    pub source: ChangeSource,
}

/// Who made a status change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeSource {
    #[default]
    Api,
    Geofence,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    pub id: LoadId,
    pub account_id: AccountId,
    pub status: LoadStatus,
    pub origin: Location,
    pub destination: Location,
    /// Pounds.
    pub weight: f64,
    pub equipment_type: EquipmentType,
    #[serde(default, with = "serde_utc::option")]
    pub pickup_date: Option<DateTime<Utc>>,
    #[serde(default, with = "serde_utc::option")]
    pub delivery_date: Option<DateTime<Utc>>,
    /// US cents, so money never passes through binary floating point arithmetic.
    pub rate_cents: Option<i64>,
    pub notes: Option<String>,
    /// Free minutes at a stop before detention starts; `None`: the default (120).
    #[serde(default)]
    pub detention_free_minutes: Option<u32>,
    /// The shipper's or broker's own number for it (PO, BOL, pro number),
    /// unique among the account's loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    pub carrier: Option<CarrierSummary>,
    /// The stops, in order (see `stop_plan`); empty for a load stored before
    /// loads had their own: then [`Load::stops`] derives them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stops: Vec<Stop>,
    /// Driven by a team of two: no 10-hour rests in its ETA.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub team: bool,
    /// Once delivered: its average moving speed (mph), which the account's
    /// later ETAs learn from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moving_mph: Option<f64>,
    pub status_history: Vec<StatusEntry>,
    /// Bumped on every change; orders a load's changes (and, later, its events).
    pub version: u64,
    #[serde(with = "serde_utc")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_utc")]
    pub updated_at: DateTime<Utc>,
}

/// A validated create request.
#[derive(Debug, Clone, PartialEq)]
pub struct NewLoad {
    pub reference: Option<String>,
    pub origin: Location,
    pub destination: Location,
    pub weight: f64,
    pub equipment_type: EquipmentType,
    pub pickup_date: Option<DateTime<Utc>>,
    pub delivery_date: Option<DateTime<Utc>>,
    pub rate_cents: Option<i64>,
    pub notes: Option<String>,
    pub detention_free_minutes: Option<u32>,
    /// The stops when the client sent them (then `origin`, `destination` and
    /// the dates are theirs); `None`: the two made from those fields.
    pub stops: Option<Vec<Stop>>,
    pub team: bool,
}

/// Free minutes at a stop before detention, when the load does not say.
pub const DEFAULT_DETENTION_FREE_MINUTES: u32 = 120;
/// The most free minutes a load may give (a day).
pub const MAX_DETENTION_FREE_MINUTES: u32 = 1_440;

/// A rate in dollars with at most two decimal places, as cents.
pub fn parse_rate(rate: f64) -> Result<i64, String> {
    let rate = number_in(rate, 0.0, MAX_RATE_USD)?;
    let cents = (rate * 100.0).round();
    if ((rate * 100.0) - cents).abs() > 1e-6 {
        return Err("must have at most two decimal places (US dollars and cents)".into());
    }
    Ok(cents as i64)
}

/// A load's `reference`: 1 to 64 printable characters, trimmed; no control
/// or invisible characters (it is shown, searched and compared as typed).
pub fn parse_reference(raw: &str) -> Result<String, String> {
    let reference = super::validation::text(raw.to_owned(), MAX_REFERENCE_CHARS, false)?;
    if reference.contains(['\n', '\t']) {
        return Err("must be one line of printable characters".into());
    }
    Ok(reference)
}

impl Load {
    /// Free minutes at a stop before detention starts.
    pub fn free_minutes(&self) -> u32 {
        self.detention_free_minutes
            .unwrap_or(DEFAULT_DETENTION_FREE_MINUTES)
    }

    /// The load's stops: its own, or the two a load stored before loads had
    /// their own is read as.
    pub fn stops(&self) -> std::borrow::Cow<'_, [Stop]> {
        if self.stops.is_empty() {
            std::borrow::Cow::Owned(stop_plan::two_stops(
                &self.id,
                &self.origin,
                &self.destination,
                self.pickup_date,
                self.delivery_date,
            ))
        } else {
            std::borrow::Cow::Borrowed(&self.stops)
        }
    }

    /// Sets `origin`, `destination` and the dates from the first and last stops.
    pub(super) fn follow_stops(&mut self) {
        if let (Some(first), Some(last)) = (self.stops.first(), self.stops.last()) {
            self.origin = first.location.clone();
            self.pickup_date = first.appointment_start();
            self.destination = last.location.clone();
            self.delivery_date = last.appointment_start();
        }
    }

    pub fn create(id: LoadId, account_id: AccountId, new: NewLoad, now: DateTime<Utc>) -> Self {
        let stops = new.stops.unwrap_or_else(|| {
            vec![
                Stop::simple(
                    StopId::generate(),
                    StopKind::Pickup,
                    new.origin.clone(),
                    new.pickup_date,
                ),
                Stop::simple(
                    StopId::generate(),
                    StopKind::Delivery,
                    new.destination.clone(),
                    new.delivery_date,
                ),
            ]
        });
        let mut load = Load {
            id,
            account_id,
            status: LoadStatus::Posted,
            origin: new.origin,
            destination: new.destination,
            weight: new.weight,
            equipment_type: new.equipment_type,
            pickup_date: new.pickup_date,
            delivery_date: new.delivery_date,
            rate_cents: new.rate_cents,
            notes: new.notes,
            detention_free_minutes: new.detention_free_minutes,
            reference: new.reference,
            carrier: None,
            stops,
            team: new.team,
            moving_mph: None,
            status_history: vec![StatusEntry {
                status: LoadStatus::Posted,
                at: now,
                location: None,
                notes: None,
                source: ChangeSource::Api,
            }],
            version: 1,
            created_at: now,
            updated_at: now,
        };
        load.follow_stops();
        load
    }

    /// Decides what a status request means for this load, before anything is looked up
    /// or written. Repeating the current status is an idempotent no-op.
    pub fn plan_transition(&self, request: &StatusChange) -> Result<Transition, TransitionError> {
        let to = request.status;
        if request.carrier_id.is_some() && to != LoadStatus::Assigned {
            return Err(TransitionError::CarrierOnlyWhenAssigning { to });
        }
        if to == self.status {
            return match (&self.carrier, &request.carrier_id) {
                (Some(current), Some(wanted)) if &current.id != wanted => {
                    Err(TransitionError::AlreadyAssigned {
                        carrier_id: current.id.clone(),
                    })
                }
                _ => Ok(Transition::Unchanged),
            };
        }
        if !self.status.allowed_next().contains(&to) {
            return Err(TransitionError::NotAllowed {
                from: self.status,
                to,
            });
        }
        if to == LoadStatus::Assigned {
            return match &request.carrier_id {
                Some(carrier_id) => Ok(Transition::Assign(carrier_id.clone())),
                None => Err(TransitionError::CarrierRequired),
            };
        }
        Ok(Transition::Move(to))
    }

    /// Applies a planned change. `carrier` is the looked-up carrier for an assignment.
    pub fn apply(
        &self,
        to: LoadStatus,
        carrier: Option<CarrierSummary>,
        request: &StatusChange,
        now: DateTime<Utc>,
    ) -> Load {
        let mut next = self.clone();
        next.status = to;
        next.carrier = match to {
            LoadStatus::Posted => None,
            LoadStatus::Assigned => carrier,
            // A cancelled load keeps the carrier it had, as its history does.
            LoadStatus::InTransit | LoadStatus::Delivered | LoadStatus::Cancelled => {
                self.carrier.clone()
            }
        };
        next.status_history.push(StatusEntry {
            status: to,
            at: now,
            location: request.location,
            notes: request.notes.clone(),
            source: request.source,
        });
        let excess = next.status_history.len().saturating_sub(MAX_STATUS_HISTORY);
        next.status_history.drain(..excess);
        next.version += 1;
        next.updated_at = now;
        next
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct StatusChange {
    pub status: LoadStatus,
    pub carrier_id: Option<CarrierId>,
    pub location: Option<Coordinates>,
    pub notes: Option<String>,
    pub source: ChangeSource,
}

/// What a status request amounts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// The load already has this status (and carrier): nothing to write.
    Unchanged,
    /// `posted → assigned` to this carrier, once it is confirmed to exist.
    Assign(CarrierId),
    /// Any other allowed move.
    Move(LoadStatus),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    #[error("a load cannot move from {from} to {to}")]
    NotAllowed { from: LoadStatus, to: LoadStatus },
    #[error("assigning a load needs carrier_id")]
    CarrierRequired,
    #[error("carrier_id is only accepted with status assigned, not {to}")]
    CarrierOnlyWhenAssigning { to: LoadStatus },
    #[error("the load is already assigned to {carrier_id}; set status posted to unassign first")]
    AlreadyAssigned { carrier_id: CarrierId },
}

/// A Dallas TX → Atlanta GA dry-van load of a new account in `status`, for
/// unit tests here and in the storage backends.
#[cfg(test)]
pub(crate) fn sample(status: LoadStatus) -> Load {
    let place = |city: &str, state: &str, zip: &str| Location {
        city: city.into(),
        state: crate::domain::location::UsState::parse(state).unwrap(),
        zip: zip.into(),
        address: None,
        lat: None,
        lng: None,
        radius_m: None,
    };
    let new = NewLoad {
        reference: None,
        origin: place("Dallas", "TX", "75201"),
        destination: place("Atlanta", "GA", "30301"),
        weight: 42_000.0,
        equipment_type: EquipmentType::DryVan,
        pickup_date: None,
        delivery_date: None,
        rate_cents: None,
        notes: None,
        detention_free_minutes: None,
        stops: None,
        team: false,
    };
    let mut load = Load::create(
        LoadId::generate(),
        AccountId::generate(),
        new,
        chrono::DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap(),
    );
    load.status = status;
    load
}

mod edit;
pub use edit::{DateMoved, EditError, LoadEdit};

#[cfg(test)]
mod tests;
