//! A change of a load's fields (`PATCH /v1/loads/{id}`), planned against
//! the load as it stands.

use chrono::{DateTime, Utc};

use super::{Load, LoadStatus};
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::StopId;
use crate::domain::location::Location;
use crate::domain::stop_plan::{self, Appointment, StopEdit, StopsEditError};

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
    /// The whole list of stops as it must become (see [`stop_plan::merge`]).
    pub stops: Option<Vec<StopEdit>>,
    pub team: Option<bool>,
    /// Marks this stop skipped (`POST …/stops/{id}/skip`).
    pub skip_stop: Option<StopId>,
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
    /// The edit names a stop the load does not have.
    #[error("the load has no stop {0}")]
    UnknownStop(StopId),
    /// The edit changes, moves or removes a stop the truck has reached.
    #[error("stop {stop_id} has been arrived at and can no longer change")]
    StopFrozen { stop_id: StopId },
    /// The edit names a stop the load does not have, or leaves the list
    /// of stops one a load cannot have.
    #[error("{message}")]
    BadStops { field: String, message: String },
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
    /// `frozen`: the stops the truck has arrived at, which no edit may change.
    pub fn plan_edit(
        &self,
        edit: &LoadEdit,
        frozen: &[StopId],
        now: DateTime<Utc>,
    ) -> Result<(Load, Vec<&'static str>), EditError> {
        let mut next = self.clone();
        next.stops = self.stops().into_owned();
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
        if let Some(team) = edit.team
            && next.team != team
        {
            next.team = team;
            changed.push("team");
        }
        next.stops_follow_fields();
        let refused: Vec<&'static str> = match self.status {
            status if status.is_final() => changed
                .iter()
                .copied()
                .chain((edit.stops.is_some() || edit.skip_stop.is_some()).then_some("stops"))
                .collect(),
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
        // Stops change while the truck has not reached them, whatever the
        // load's status: a stop added on the way is what multi-stop loads need.
        if let Some(stops) = &edit.stops {
            let merged = stop_plan::merge(&next.stops, stops, frozen).map_err(|e| match e {
                StopsEditError::Frozen(stop_id) => EditError::StopFrozen { stop_id },
                StopsEditError::Bad { field, message } => EditError::BadStops { field, message },
            })?;
            if merged != next.stops {
                next.stops = merged;
                changed.push("stops");
            }
        }
        if let Some(id) = &edit.skip_stop {
            let stop = next
                .stops
                .iter_mut()
                .find(|s| &s.id == id)
                .ok_or_else(|| EditError::UnknownStop(id.clone()))?;
            if frozen.contains(id) {
                return Err(EditError::StopFrozen {
                    stop_id: id.clone(),
                });
            }
            if stop.skipped_at.is_none() {
                stop.skipped_at = Some(now);
                changed.push("stops");
            }
        }
        let before = (next.origin.clone(), next.destination.clone());
        let dates = (next.pickup_date, next.delivery_date);
        next.follow_stops();
        let moved = [
            ("origin", next.origin != before.0),
            ("destination", next.destination != before.1),
            ("pickup_date", next.pickup_date != dates.0),
            ("delivery_date", next.delivery_date != dates.1),
        ];
        for (field, moved) in moved {
            if moved && !changed.contains(&field) {
                changed.push(field);
            }
        }
        if !changed.is_empty() {
            next.version += 1;
            next.updated_at = now;
        }
        Ok((next, changed))
    }

    /// Puts `origin`, `destination` and the dates into the first and last
    /// stops (a window's end is kept while it is still after its start).
    fn stops_follow_fields(&mut self) {
        let ends = [
            (0, self.origin.clone(), self.pickup_date),
            (
                self.stops.len() - 1,
                self.destination.clone(),
                self.delivery_date,
            ),
        ];
        for (index, location, date) in ends {
            let stop = &mut self.stops[index];
            stop.location = location;
            if stop.appointment_start() != date {
                let end = stop.appointment.and_then(|a| a.end);
                stop.reschedule(date.map(|start| Appointment {
                    start,
                    end: end.filter(|end| *end >= start),
                }));
            }
        }
    }
}
