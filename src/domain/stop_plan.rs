//! A load's stops as planned: where the truck must go, in order, and what is
//! agreed at each (appointment, handling, references, contact). What the
//! truck did there is `stops` (the watch) and the stop progress it stores.
//!
//! A load has 2 to 50 stops; the first is a pickup and the last a delivery.
//! The load's `origin`, `destination`, `pickup_date` and `delivery_date` are
//! its first and last stops' places and appointment starts, kept in step.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::ids::{LoadId, StopId};
use super::location::Location;
use super::timestamp::serde_utc;

pub const MIN_STOPS: usize = 2;
pub const MAX_STOPS: usize = 50;
pub const MAX_STOP_REFERENCES: usize = 10;
pub const MAX_REFERENCE_VALUE_CHARS: usize = 64;
pub const MAX_CONTACT_CHARS: usize = 100;
/// The longest planned dwell a stop may be given: a day.
pub const MAX_PLANNED_DWELL_MINUTES: u32 = 1_440;
/// Planned time at a live stop when it does not say (the industry's 2-hour
/// loading or unloading standard).
pub const LIVE_DWELL_MINUTES: u32 = 120;
/// Planned time at a drop stop (drop a trailer, hook another) when it does
/// not say; also a drop stop's free time before detention.
pub const DROP_DWELL_MINUTES: u32 = 30;

/// What the truck does at a stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StopKind {
    Pickup,
    Delivery,
}

impl StopKind {
    pub const BOTH: [StopKind; 2] = [StopKind::Pickup, StopKind::Delivery];

    pub const fn as_str(self) -> &'static str {
        match self {
            StopKind::Pickup => "pickup",
            StopKind::Delivery => "delivery",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::BOTH.into_iter().find(|k| k.as_str() == raw)
    }

    pub const fn index(self) -> usize {
        self as usize
    }
}

/// How the freight is handled at a stop: loaded or unloaded while the driver
/// waits (`live`), or a trailer dropped and another hooked (`drop`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Handling {
    #[default]
    Live,
    Drop,
}

impl Handling {
    pub const ALL: [Handling; 2] = [Handling::Live, Handling::Drop];

    pub const fn as_str(self) -> &'static str {
        match self {
            Handling::Live => "live",
            Handling::Drop => "drop",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.as_str() == raw)
    }
}

/// An appointment time (`end` absent) or a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Appointment {
    #[serde(with = "serde_utc")]
    #[schema(value_type = String, format = DateTime)]
    pub start: DateTime<Utc>,
    #[serde(default, with = "serde_utc::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub end: Option<DateTime<Utc>>,
}

impl Appointment {
    pub fn at(start: DateTime<Utc>) -> Self {
        Appointment { start, end: None }
    }
}

/// What kind of number a stop reference is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceKind {
    Po,
    Bol,
    PickupNumber,
    DeliveryNumber,
    Other,
}

impl ReferenceKind {
    pub const ALL: [ReferenceKind; 5] = [
        ReferenceKind::Po,
        ReferenceKind::Bol,
        ReferenceKind::PickupNumber,
        ReferenceKind::DeliveryNumber,
        ReferenceKind::Other,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ReferenceKind::Po => "po",
            ReferenceKind::Bol => "bol",
            ReferenceKind::PickupNumber => "pickup_number",
            ReferenceKind::DeliveryNumber => "delivery_number",
            ReferenceKind::Other => "other",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == raw)
    }
}

/// A number the facility knows the stop by (PO, BOL, appointment number).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StopReference {
    #[serde(rename = "type")]
    pub kind: ReferenceKind,
    pub value: String,
}

/// Who to call at the stop; each field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = StopContact)]
pub struct Contact {
    #[serde(default)]
    #[schema(required = true)]
    pub name: Option<String>,
    #[serde(default)]
    #[schema(required = true)]
    pub phone: Option<String>,
    #[serde(default)]
    #[schema(required = true)]
    pub email: Option<String>,
}

/// Which stop a milestone is at: its id, type and place in the load's order
/// (1-based, as events and views number it), and its appointment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopRef {
    pub id: StopId,
    pub kind: StopKind,
    pub sequence: u32,
    /// The load's last stop: leaving it ends the trip.
    pub last: bool,
    pub appointment: Option<Appointment>,
}

/// One planned stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stop {
    pub id: StopId,
    pub kind: StopKind,
    pub location: Location,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appointment: Option<Appointment>,
    /// The first appointment the stop was given, once it has been changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_appointment: Option<Appointment>,
    #[serde(default)]
    pub handling: Handling,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<StopReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact: Option<Contact>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_dwell_minutes: Option<u32>,
    /// Skipped by a client (`POST …/stops/{id}/skip`); a stop the truck went
    /// past to a later one is skipped in its progress instead.
    #[serde(
        default,
        with = "serde_utc::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub skipped_at: Option<DateTime<Utc>>,
}

impl Stop {
    /// A stop with only a place and an appointment: what a load made from
    /// `origin`/`destination` and its dates has.
    pub fn simple(
        id: StopId,
        kind: StopKind,
        location: Location,
        appointment: Option<DateTime<Utc>>,
    ) -> Self {
        Stop {
            id,
            kind,
            location,
            appointment: appointment.map(Appointment::at),
            original_appointment: None,
            handling: Handling::Live,
            references: Vec::new(),
            contact: None,
            notes: None,
            planned_dwell_minutes: None,
            skipped_at: None,
        }
    }

    /// How long the truck is expected to stay: the stop's own figure, else
    /// the default for its handling.
    pub fn planned_dwell(&self) -> Duration {
        let minutes = self.planned_dwell_minutes.unwrap_or(match self.handling {
            Handling::Live => LIVE_DWELL_MINUTES,
            Handling::Drop => DROP_DWELL_MINUTES,
        });
        Duration::minutes(i64::from(minutes))
    }

    /// Free minutes before detention: a drop stop's own default, else the
    /// load's (or its account's) free time.
    pub fn free_minutes(&self, load_free_minutes: u32) -> u32 {
        match self.handling {
            Handling::Live => load_free_minutes,
            Handling::Drop => DROP_DWELL_MINUTES,
        }
    }

    pub fn appointment_start(&self) -> Option<DateTime<Utc>> {
        self.appointment.map(|a| a.start)
    }

    /// Changes the appointment, keeping the first one it had.
    pub fn reschedule(&mut self, appointment: Option<Appointment>) {
        if appointment != self.appointment {
            if self.original_appointment.is_none() {
                self.original_appointment = self.appointment;
            }
            self.appointment = appointment;
        }
    }
}

/// The two stops of a load stored before loads had their own: its origin
/// and destination, with ids derived from the load's.
pub fn two_stops(
    load: &LoadId,
    origin: &Location,
    destination: &Location,
    pickup_date: Option<DateTime<Utc>>,
    delivery_date: Option<DateTime<Utc>>,
) -> Vec<Stop> {
    vec![
        Stop::simple(
            StopId::derived(load, 1),
            StopKind::Pickup,
            origin.clone(),
            pickup_date,
        ),
        Stop::simple(
            StopId::derived(load, 2),
            StopKind::Delivery,
            destination.clone(),
            delivery_date,
        ),
    ]
}

/// Why a list of stops cannot be a load's; each names the field, as
/// `stops` or `stops[i].…`.
pub fn problems(stops: &[Stop]) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    if !(MIN_STOPS..=MAX_STOPS).contains(&stops.len()) {
        problems.push((
            "stops".to_owned(),
            format!("must hold {MIN_STOPS} to {MAX_STOPS} stops"),
        ));
        return problems;
    }
    if stops.first().is_some_and(|s| s.kind != StopKind::Pickup) {
        problems.push((
            "stops[0].type".to_owned(),
            "the first stop must be a pickup".into(),
        ));
    }
    let last = stops.len() - 1;
    if stops.last().is_some_and(|s| s.kind != StopKind::Delivery) {
        problems.push((
            format!("stops[{last}].type"),
            "the last stop must be a delivery".into(),
        ));
    }
    for (i, stop) in stops.iter().enumerate() {
        if let Some(Appointment {
            start,
            end: Some(end),
        }) = stop.appointment
            && end < start
        {
            problems.push((
                format!("stops[{i}].appointment.end"),
                "must not be before start".into(),
            ));
        }
    }
    let mut ids: Vec<&StopId> = stops.iter().map(|s| &s.id).collect();
    ids.sort();
    if ids.windows(2).any(|w| w[0] == w[1]) {
        problems.push(("stops".to_owned(), "names a stop id twice".into()));
    }
    problems
}

/// One stop of a `PATCH` that sends the list: an existing stop (`id`) with
/// its fields as they must become, or a new one (`id` none; `stop.id` is the
/// id it gets).
#[derive(Debug, Clone, PartialEq)]
pub struct StopEdit {
    pub id: Option<StopId>,
    pub stop: Stop,
}

/// Why a list of stops cannot replace a load's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopsEditError {
    /// The truck has arrived at this stop: it cannot change, go, or have a
    /// stop put before it.
    Frozen(StopId),
    Bad {
        field: String,
        message: String,
    },
}

/// The load's stops once `edits` replace `current`: stops with an id are
/// edited, stops without one added, stops left out removed, in the order
/// sent. A stop in `frozen` (arrived at) must come back unchanged, after
/// the same stops as before.
pub fn merge(
    current: &[Stop],
    edits: &[StopEdit],
    frozen: &[StopId],
) -> Result<Vec<Stop>, StopsEditError> {
    let mut next = Vec::with_capacity(edits.len());
    for (i, edit) in edits.iter().enumerate() {
        let Some(id) = &edit.id else {
            next.push(edit.stop.clone());
            continue;
        };
        let Some(existing) = current.iter().find(|s| &s.id == id) else {
            return Err(StopsEditError::Bad {
                field: format!("stops[{i}].id"),
                message: format!("the load has no stop {id}"),
            });
        };
        let mut stop = existing.clone();
        let wanted = &edit.stop;
        stop.kind = wanted.kind;
        stop.location = wanted.location.clone();
        stop.handling = wanted.handling;
        stop.references = wanted.references.clone();
        stop.contact = wanted.contact.clone();
        stop.notes = wanted.notes.clone();
        stop.planned_dwell_minutes = wanted.planned_dwell_minutes;
        stop.reschedule(wanted.appointment);
        next.push(stop);
    }
    let ids = |stops: &[Stop]| stops.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    let (old_ids, new_ids) = (ids(current), ids(&next));
    for id in frozen {
        let Some(old) = current.iter().find(|s| &s.id == id) else {
            continue;
        };
        let Some(at) = new_ids.iter().position(|n| n == id) else {
            return Err(StopsEditError::Frozen(id.clone()));
        };
        // Unchanged, and preceded only by stops that preceded it before.
        let was = old_ids.iter().position(|o| o == id).unwrap_or(0);
        let before_ok = new_ids[..at].iter().all(|n| old_ids[..was].contains(n));
        let in_order = new_ids[..at].windows(2).all(|w| {
            old_ids.iter().position(|o| *o == w[0]) < old_ids.iter().position(|o| *o == w[1])
        });
        if &next[at] != old || !before_ok || !in_order {
            return Err(StopsEditError::Frozen(id.clone()));
        }
    }
    if let Some((field, message)) = problems(&next).into_iter().next() {
        return Err(StopsEditError::Bad { field, message });
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::location::UsState;

    fn place(zip: &str) -> Location {
        Location {
            city: "Dallas".into(),
            state: UsState::parse("TX").unwrap(),
            zip: zip.into(),
            address: None,
            lat: None,
            lng: None,
            radius_m: None,
        }
    }

    #[test]
    fn derived_ids_are_stable_and_distinct() {
        let load = LoadId::generate();
        let stops = two_stops(&load, &place("75201"), &place("30303"), None, None);
        assert_eq!(stops[0].id, StopId::derived(&load, 1));
        assert_ne!(stops[0].id, stops[1].id);
        assert!(stops[0].id.as_str().starts_with("stop_"));
        assert!(StopId::parse(stops[1].id.as_str()).is_some());
    }

    #[test]
    fn the_first_stop_picks_up_and_the_last_delivers() {
        let load = LoadId::generate();
        let mut stops = two_stops(&load, &place("75201"), &place("30303"), None, None);
        assert!(problems(&stops).is_empty());
        stops.swap(0, 1);
        let fields: Vec<String> = problems(&stops).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["stops[0].type", "stops[1].type"]);
        assert_eq!(problems(&stops[..1])[0].0, "stops");
    }

    #[test]
    fn a_rescheduled_stop_keeps_its_first_appointment() {
        let t = |h: i64| DateTime::from_timestamp(1_790_000_000 + h * 3600, 0).unwrap();
        let load = LoadId::generate();
        let mut stop =
            two_stops(&load, &place("75201"), &place("30303"), Some(t(0)), None).remove(0);
        stop.reschedule(Some(Appointment::at(t(2))));
        stop.reschedule(Some(Appointment::at(t(4))));
        assert_eq!(stop.original_appointment, Some(Appointment::at(t(0))));
        assert_eq!(stop.appointment_start(), Some(t(4)));
        assert_eq!(stop.planned_dwell(), Duration::hours(2));
        stop.handling = Handling::Drop;
        assert_eq!(stop.planned_dwell(), Duration::minutes(30));
        assert_eq!(stop.free_minutes(120), 30);
    }
}
