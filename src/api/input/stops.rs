//! A load's stops as clients send them (`stops` on `POST /v1/loads` and
//! `PATCH /v1/loads/{id}`).

use serde::Deserialize;

use super::location::LocationInput;
use crate::domain::ids::StopId;
use crate::domain::load::MAX_NOTES_CHARS;
use crate::domain::stop_plan::{
    self, Appointment, Contact, Handling, MAX_CONTACT_CHARS, MAX_PLANNED_DWELL_MINUTES,
    MAX_REFERENCE_VALUE_CHARS, MAX_STOP_REFERENCES, MAX_STOPS, MIN_STOPS, ReferenceKind, Stop,
    StopEdit, StopKind, StopReference,
};
use crate::domain::timestamp;
use crate::domain::validation::{ValidationErrors, text, whole_minutes};

/// A stop as sent.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(
    description = "A stop. On `PATCH`, a stop with an `id` edits that stop, one \
    without adds a stop; stops left out are removed."
)]
pub struct StopInput {
    /// `PATCH` only: the stop to edit (`stop_...`).
    #[schema(value_type = Option<String>)]
    pub id: Option<String>,
    /// `pickup` or `delivery`; the first stop picks up and the last delivers.
    #[serde(rename = "type")]
    #[schema(value_type = StopKind)]
    pub kind: Option<String>,
    #[schema(value_type = LocationInput)]
    pub location: Option<LocationInput>,
    pub appointment: Option<StopAppointmentInput>,
    /// `live` (default) or `drop`.
    #[schema(value_type = Option<Handling>)]
    pub handling: Option<String>,
    /// Up to 10.
    pub references: Option<Vec<StopReferenceInput>>,
    pub contact: Option<StopContactInput>,
    #[schema(schema_with = super::fields::notes)]
    pub notes: Option<String>,
    /// Minutes the ETA plans at the stop, 0-1,440 (default 120 live, 30 drop).
    #[schema(minimum = 0, maximum = 1440)]
    pub planned_dwell_minutes: Option<f64>,
}

/// An appointment time (`start`), or a window (`start` to `end`).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StopAppointmentInput {
    #[schema(schema_with = super::fields::optional_utc_timestamp)]
    pub start: Option<String>,
    /// Not before `start`.
    #[schema(schema_with = super::fields::optional_utc_timestamp)]
    pub end: Option<String>,
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StopReferenceInput {
    /// `po`, `bol`, `pickup_number`, `delivery_number` or `other`.
    #[serde(rename = "type")]
    #[schema(value_type = ReferenceKind)]
    pub kind: Option<String>,
    /// 1-64 printable characters.
    #[schema(value_type = String)]
    pub value: Option<String>,
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StopContactInput {
    #[schema(value_type = Option<String>)]
    pub name: Option<String>,
    #[schema(value_type = Option<String>)]
    pub phone: Option<String>,
    #[schema(value_type = Option<String>)]
    pub email: Option<String>,
}

/// Validates a list of stops, each under `stops[i]`; ids only where
/// `editing` (a `PATCH`). Every problem is recorded.
pub fn validate_stops(
    stops: Vec<StopInput>,
    editing: bool,
    errors: &mut ValidationErrors,
) -> Option<Vec<StopEdit>> {
    if !(MIN_STOPS..=MAX_STOPS).contains(&stops.len()) {
        errors.add(
            "stops",
            format!("must hold {MIN_STOPS} to {MAX_STOPS} stops"),
        );
        return None;
    }
    let before = errors.errors().len();
    let edits: Vec<Option<StopEdit>> = stops
        .into_iter()
        .enumerate()
        .map(|(i, stop)| stop.validate(&format!("stops[{i}]"), editing, errors))
        .collect();
    if errors.errors().len() > before {
        return None;
    }
    let edits: Vec<StopEdit> = edits.into_iter().flatten().collect();
    let planned: Vec<Stop> = edits.iter().map(|e| e.stop.clone()).collect();
    for (field, message) in stop_plan::problems(&planned) {
        errors.add(field, message);
    }
    (errors.errors().len() == before).then_some(edits)
}

impl StopInput {
    fn validate(self, at: &str, editing: bool, errors: &mut ValidationErrors) -> Option<StopEdit> {
        let field = |name: &str| format!("{at}.{name}");
        let id = match self.id {
            Some(_) if !editing => {
                errors.add(field("id"), "is given by freight: leave it out on create");
                None
            }
            Some(raw) => errors.check(
                field("id"),
                StopId::parse(raw.trim()).ok_or_else(|| "must be a stop id (stop_...)".to_owned()),
            ),
            None => None,
        };
        let kind = errors.require(field("type"), self.kind, |k| {
            StopKind::parse(k.trim()).ok_or_else(|| "must be pickup or delivery".to_owned())
        });
        let location = match self.location {
            Some(l) => l.validate(&field("location"), errors),
            None => {
                errors.add(field("location"), "is required");
                None
            }
        };
        let appointment = self
            .appointment
            .and_then(|a| a.validate(&field("appointment"), errors));
        let handling = errors
            .optional(field("handling"), self.handling, |h| {
                Handling::parse(h.trim()).ok_or_else(|| "must be live or drop".to_owned())
            })
            .unwrap_or_default();
        let references = self.references.unwrap_or_default();
        if references.len() > MAX_STOP_REFERENCES {
            errors.add(
                field("references"),
                format!("must hold at most {MAX_STOP_REFERENCES}"),
            );
        }
        let references: Vec<StopReference> = references
            .into_iter()
            .take(MAX_STOP_REFERENCES)
            .enumerate()
            .filter_map(|(i, r)| r.validate(&format!("{at}.references[{i}]"), errors))
            .collect();
        let contact = self.contact.map(|c| c.validate(&field("contact"), errors));
        let notes = errors
            .optional(field("notes"), self.notes, |n| {
                text(n, MAX_NOTES_CHARS, true)
            })
            .filter(|n| !n.is_empty());
        let planned_dwell_minutes = errors.optional(
            field("planned_dwell_minutes"),
            self.planned_dwell_minutes,
            |m| whole_minutes(m, MAX_PLANNED_DWELL_MINUTES),
        );
        let (kind, location) = (kind?, location?);
        let mut stop = Stop::simple(
            id.clone().unwrap_or_else(StopId::generate),
            kind,
            location,
            None,
        );
        stop.appointment = appointment;
        stop.handling = handling;
        stop.references = references;
        stop.contact = contact.filter(|c| *c != Contact::default());
        stop.notes = notes;
        stop.planned_dwell_minutes = planned_dwell_minutes;
        Some(StopEdit { id, stop })
    }
}

impl StopAppointmentInput {
    fn validate(self, at: &str, errors: &mut ValidationErrors) -> Option<Appointment> {
        let start = errors.require(format!("{at}.start"), self.start, |t| {
            timestamp::parse_utc(&t)
        });
        let end = errors.optional(format!("{at}.end"), self.end, |t| timestamp::parse_utc(&t));
        if let (Some(start), Some(end)) = (start, end)
            && end < start
        {
            errors.add(format!("{at}.end"), "must not be before start");
            return None;
        }
        Some(Appointment { start: start?, end })
    }
}

impl StopReferenceInput {
    fn validate(self, at: &str, errors: &mut ValidationErrors) -> Option<StopReference> {
        let kind = errors.require(format!("{at}.type"), self.kind, |k| {
            ReferenceKind::parse(k.trim()).ok_or_else(|| {
                "must be one of: po, bol, pickup_number, delivery_number, other".to_owned()
            })
        });
        let value = errors.require(format!("{at}.value"), self.value, |v| {
            let value = text(v, MAX_REFERENCE_VALUE_CHARS, false)?;
            if value.contains(['\n', '\t']) {
                return Err("must be one line of printable characters".into());
            }
            Ok(value)
        });
        Some(StopReference {
            kind: kind?,
            value: value?,
        })
    }
}

impl StopContactInput {
    fn validate(self, at: &str, errors: &mut ValidationErrors) -> Contact {
        let mut one = |name: &str, raw: Option<String>| {
            errors
                .optional(format!("{at}.{name}"), raw, |v| {
                    text(v, MAX_CONTACT_CHARS, true)
                })
                .filter(|v| !v.is_empty())
        };
        Contact {
            name: one("name", self.name),
            phone: one("phone", self.phone),
            email: one("email", self.email),
        }
    }
}
