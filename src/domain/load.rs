//! Loads: what is shipped, from where to where, and the status lifecycle.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::equipment::EquipmentType;
use super::ids::{AccountId, CarrierId, LoadId};
use super::location::{Coordinates, Location};
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

/// A validated change of a load's fields (`PATCH /v1/loads/{id}`): `None`
/// leaves a field as it is; for the optional fields `Some(None)` clears it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadEdit {
    pub origin: Option<Location>,
    pub destination: Option<Location>,
    pub weight: Option<f64>,
    pub equipment_type: Option<EquipmentType>,
    pub pickup_date: Option<Option<DateTime<Utc>>>,
    pub delivery_date: Option<Option<DateTime<Utc>>>,
    pub rate_cents: Option<Option<i64>>,
    pub notes: Option<Option<String>>,
    pub reference: Option<Option<String>>,
}

/// Why an edit cannot be made to the load as it stands.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    /// Delivered or cancelled loads are final; origin and destination change
    /// only while the load is posted.
    #[error("a load in status {status} cannot change {}", fields.join(", "))]
    NotEditable {
        status: LoadStatus,
        fields: Vec<&'static str>,
    },
    /// The change leaves `delivery_date` before `pickup_date`. Named by the
    /// date the edit moved: the delivery date if it sent one, else the pickup
    /// date (the stored delivery date is not what the client got wrong).
    #[error("{}", match .moved { DateMoved::Pickup => "pickup_date must not be after delivery_date", DateMoved::Delivery => "delivery_date must not be before pickup_date" })]
    DatesOutOfOrder { moved: DateMoved },
}

/// Which of the two dates an edit that put them out of order changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateMoved {
    Pickup,
    Delivery,
}

impl Load {
    /// The load with `edit` applied and the names of the fields that changed
    /// (none: nothing to write). Checked against the load's status.
    pub fn plan_edit(
        &self,
        edit: &LoadEdit,
        now: DateTime<Utc>,
    ) -> Result<(Load, Vec<&'static str>), EditError> {
        let mut next = self.clone();
        let mut changed = Vec::new();
        macro_rules! set {
            ($field:ident, $name:literal) => {
                if let Some(value) = &edit.$field
                    && next.$field != *value
                {
                    next.$field = value.clone();
                    changed.push($name);
                }
            };
        }
        set!(origin, "origin");
        set!(destination, "destination");
        set!(weight, "weight");
        set!(equipment_type, "equipment_type");
        set!(pickup_date, "pickup_date");
        set!(delivery_date, "delivery_date");
        set!(rate_cents, "rate");
        set!(notes, "notes");
        set!(reference, "reference");
        let refused: Vec<&'static str> = match self.status {
            status if status.is_final() => changed.clone(),
            LoadStatus::Posted => Vec::new(),
            _ => changed
                .iter()
                .copied()
                .filter(|f| matches!(*f, "origin" | "destination"))
                .collect(),
        };
        if !refused.is_empty() {
            return Err(EditError::NotEditable {
                status: self.status,
                fields: refused,
            });
        }
        // Dates stored out of order by an older build are not this edit's doing:
        // only an edit that moves one of them is refused.
        let out_of_order = matches!(
            (next.pickup_date, next.delivery_date),
            (Some(pickup), Some(delivery)) if delivery < pickup
        );
        if out_of_order && changed.contains(&"delivery_date") {
            return Err(EditError::DatesOutOfOrder {
                moved: DateMoved::Delivery,
            });
        }
        if out_of_order && changed.contains(&"pickup_date") {
            return Err(EditError::DatesOutOfOrder {
                moved: DateMoved::Pickup,
            });
        }
        if !changed.is_empty() {
            next.version += 1;
            next.updated_at = now;
        }
        Ok((next, changed))
    }

    /// Free minutes at a stop before detention starts.
    pub fn free_minutes(&self) -> u32 {
        self.detention_free_minutes
            .unwrap_or(DEFAULT_DETENTION_FREE_MINUTES)
    }

    pub fn create(id: LoadId, account_id: AccountId, new: NewLoad, now: DateTime<Utc>) -> Self {
        Load {
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
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn change(status: LoadStatus, carrier: Option<CarrierId>) -> StatusChange {
        StatusChange {
            status,
            carrier_id: carrier,
            location: None,
            notes: None,
            source: ChangeSource::Api,
        }
    }

    #[test]
    fn every_pair_of_statuses_is_decided() {
        use LoadStatus::*;
        let carrier = CarrierId::generate();
        for from in LoadStatus::ALL {
            for to in LoadStatus::ALL {
                let carrier_id = (to == Assigned).then(|| carrier.clone());
                let mut load = sample(from);
                if from != Posted && from != Delivered {
                    load.carrier = Some(CarrierSummary {
                        id: carrier.clone(),
                        name: "X".into(),
                        mc_number: "1".into(),
                    });
                }
                let plan = load.plan_transition(&change(to, carrier_id));
                let allowed = matches!(
                    (from, to),
                    (Posted, Assigned)
                        | (Assigned, InTransit)
                        | (InTransit, Delivered)
                        | (Assigned, Posted)
                        | (Posted, Cancelled)
                        | (Assigned, Cancelled)
                );
                match plan {
                    Ok(Transition::Unchanged) => assert_eq!(from, to),
                    Ok(_) => assert!(allowed, "{from} -> {to} should be refused"),
                    Err(e) => assert!(!allowed && from != to, "{from} -> {to} refused: {e}"),
                }
            }
        }
    }

    #[test]
    fn an_edit_is_refused_by_status_and_names_what_changed() {
        let mut edit = LoadEdit {
            weight: Some(40_000.0),
            notes: Some(Some("Dock 7".into())),
            ..LoadEdit::default()
        };
        let posted = sample(LoadStatus::Posted);
        let (edited, changed) = posted.plan_edit(&edit, Utc::now()).unwrap();
        assert_eq!(changed, ["weight", "notes"]);
        assert_eq!(edited.version, posted.version + 1);
        // The same again changes nothing.
        let (same, none) = edited.plan_edit(&edit, Utc::now()).unwrap();
        assert!(none.is_empty());
        assert_eq!(same.version, edited.version);

        edit.destination = Some(posted.origin.clone());
        let assigned = sample(LoadStatus::Assigned);
        assert_eq!(
            assigned.plan_edit(&edit, Utc::now()),
            Err(EditError::NotEditable {
                status: LoadStatus::Assigned,
                fields: vec!["destination"],
            })
        );
        for status in [LoadStatus::Delivered, LoadStatus::Cancelled] {
            let refused = sample(status).plan_edit(&edit, Utc::now()).unwrap_err();
            assert!(
                matches!(refused, EditError::NotEditable { ref fields, .. } if fields.len() == 3),
                "{refused:?}"
            );
        }
        let dates = LoadEdit {
            pickup_date: Some(Some(Utc::now())),
            delivery_date: Some(Some(Utc::now() - chrono::Duration::hours(1))),
            ..LoadEdit::default()
        };
        assert_eq!(
            posted.plan_edit(&dates, Utc::now()),
            Err(EditError::DatesOutOfOrder {
                moved: DateMoved::Delivery
            })
        );
        let late_pickup = LoadEdit {
            pickup_date: Some(Some(Utc::now() + chrono::Duration::days(30))),
            ..LoadEdit::default()
        };
        let mut scheduled = posted.clone();
        scheduled.pickup_date = Some(Utc::now());
        scheduled.delivery_date = Some(Utc::now() + chrono::Duration::days(1));
        assert_eq!(
            scheduled.plan_edit(&late_pickup, Utc::now()),
            Err(EditError::DatesOutOfOrder {
                moved: DateMoved::Pickup
            })
        );
    }

    #[test]
    fn assignment_needs_a_carrier_and_unassign_clears_it() {
        let load = sample(LoadStatus::Posted);
        assert_eq!(
            load.plan_transition(&change(LoadStatus::Assigned, None)),
            Err(TransitionError::CarrierRequired)
        );
        let carrier = CarrierSummary {
            id: CarrierId::generate(),
            name: "Acme".into(),
            mc_number: "123".into(),
        };
        let request = change(LoadStatus::Assigned, Some(carrier.id.clone()));
        let assigned = load.apply(LoadStatus::Assigned, Some(carrier), &request, Utc::now());
        assert_eq!(assigned.version, 2);
        assert!(assigned.carrier.is_some());
        let posted = assigned.apply(
            LoadStatus::Posted,
            None,
            &change(LoadStatus::Posted, None),
            Utc::now(),
        );
        assert!(posted.carrier.is_none());
        let other = CarrierId::generate();
        assert!(matches!(
            assigned.plan_transition(&change(LoadStatus::Assigned, Some(other))),
            Err(TransitionError::AlreadyAssigned { .. })
        ));
    }

    #[test]
    fn rates_keep_cents_exactly() {
        assert_eq!(parse_rate(1500.55), Ok(150_055));
        assert_eq!(parse_rate(0.0), Ok(0));
        assert!(parse_rate(1.005).is_err());
        assert!(parse_rate(-1.0).is_err());
        assert!(parse_rate(f64::INFINITY).is_err());
    }
}
