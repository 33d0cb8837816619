//! The bodies of `POST /v1/loads`, `PATCH /v1/loads/{id}` and
//! `PATCH /v1/loads/{id}/status`.

use serde::Deserialize;

use super::location::{CoordinatesInput, LocationInput};
use super::stops::{StopInput, validate_stops};
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::CarrierId;
use crate::domain::load::{
    ChangeSource, LoadEdit, LoadStatus, MAX_DETENTION_FREE_MINUTES, MAX_NOTES_CHARS, MAX_WEIGHT_LB,
    NewLoad, StatusChange, parse_rate, parse_reference,
};
use crate::domain::stop_plan::StopEdit;
use crate::domain::timestamp;
use crate::domain::validation::{ValidationErrors, text, whole_minutes};

/// The body of `POST /v1/loads` as sent.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A load to post.")]
pub struct NewLoadInput {
    /// The shipper's or broker's own number (PO, BOL, pro number): 1-64
    /// printable characters on one line, unique among the account's loads.
    #[schema(schema_with = super::fields::reference)]
    pub reference: Option<String>,
    #[schema(value_type = LocationInput)]
    pub origin: Option<LocationInput>,
    #[schema(value_type = LocationInput)]
    pub destination: Option<LocationInput>,
    /// Pounds, above 0 and at most 500,000.
    #[schema(value_type = f64, exclusive_minimum = 0.0, maximum = 500_000.0, examples(42000))]
    pub weight: Option<f64>,
    #[schema(value_type = EquipmentType)]
    pub equipment_type: Option<String>,
    #[schema(schema_with = super::fields::optional_utc_timestamp)]
    pub pickup_date: Option<String>,
    /// Not before `pickup_date`.
    #[schema(schema_with = super::fields::optional_utc_timestamp)]
    pub delivery_date: Option<String>,
    /// US dollars, 0 to 10,000,000, at most two decimal places.
    #[schema(
        minimum = 0.0,
        maximum = 10_000_000.0,
        multiple_of = 0.01,
        examples(1850.5)
    )]
    pub rate: Option<f64>,
    #[schema(schema_with = super::fields::notes)]
    pub notes: Option<String>,
    /// Free minutes at each live stop before detention starts, 0-1,440
    /// (default: the account's, 120 unless it says; a drop stop's are 30).
    #[schema(minimum = 0, maximum = 1440, examples(120))]
    pub detention_free_minutes: Option<f64>,
    /// 2 to 50 stops, in order: the first a pickup, the last a delivery.
    /// Instead of `origin`, `destination`, `pickup_date` and
    /// `delivery_date`, which are then the first and last stops'.
    pub stops: Option<Vec<StopInput>>,
    /// Driven by a team of two (no 10-hour rests in the ETA); default false.
    pub team: Option<bool>,
}

impl NewLoadInput {
    pub fn validate(self) -> Result<NewLoad, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let stops = self.stops.map(|stops| {
            let ends = [
                ("origin", self.origin.is_some()),
                ("destination", self.destination.is_some()),
                ("pickup_date", self.pickup_date.is_some()),
                ("delivery_date", self.delivery_date.is_some()),
            ];
            for (field, sent) in ends {
                if sent {
                    errors.add(
                        field,
                        "must not be sent with stops (it is the first or last stop's)",
                    );
                }
            }
            validate_stops(stops, false, &mut errors)
        });
        let from_stops = |i: fn(&[StopEdit]) -> Option<&StopEdit>| {
            stops
                .as_ref()
                .and_then(|s| s.as_deref())
                .and_then(i)
                .map(|e| e.stop.clone())
        };
        let (first, last) = (from_stops(|s| s.first()), from_stops(|s| s.last()));
        let origin = match (self.origin, &stops) {
            (_, Some(_)) => first.as_ref().map(|s| s.location.clone()),
            (Some(o), None) => o.validate("origin", &mut errors),
            (None, None) => {
                errors.add("origin", "is required");
                None
            }
        };
        let destination = match (self.destination, &stops) {
            (_, Some(_)) => last.as_ref().map(|s| s.location.clone()),
            (Some(d), None) => d.validate("destination", &mut errors),
            (None, None) => {
                errors.add("destination", "is required");
                None
            }
        };
        let weight = errors.require("weight", self.weight, parse_weight);
        let equipment_type = errors.require("equipment_type", self.equipment_type, |e| {
            EquipmentType::parse(&e)
        });
        let pickup_date = errors.optional("pickup_date", self.pickup_date, |t| {
            timestamp::parse_utc(&t)
        });
        let delivery_date = errors.optional("delivery_date", self.delivery_date, |t| {
            timestamp::parse_utc(&t)
        });
        if let (Some(pickup), Some(delivery)) = (pickup_date, delivery_date)
            && delivery < pickup
        {
            errors.add("delivery_date", "must not be before pickup_date");
        }
        let rate_cents = errors.optional("rate", self.rate, parse_rate);
        let notes = errors
            .optional("notes", self.notes, |n| text(n, MAX_NOTES_CHARS, true))
            .filter(|n| !n.is_empty());
        let detention_free_minutes =
            errors.optional("detention_free_minutes", self.detention_free_minutes, |m| {
                whole_minutes(m, MAX_DETENTION_FREE_MINUTES)
            });
        let reference = errors.optional("reference", self.reference, |r| parse_reference(&r));
        let stops = stops.flatten();
        let team = self.team.unwrap_or(false);
        errors.finish(|| NewLoad {
            reference,
            origin: origin.expect("checked"),
            destination: destination.expect("checked"),
            weight: weight.expect("checked"),
            equipment_type: equipment_type.expect("checked"),
            pickup_date: first
                .as_ref()
                .map_or(pickup_date, |s| s.appointment_start()),
            delivery_date: last
                .as_ref()
                .map_or(delivery_date, |s| s.appointment_start()),
            rate_cents,
            notes,
            detention_free_minutes,
            stops: stops.map(|s| s.into_iter().map(|e| e.stop).collect()),
            team,
        })
    }
}

/// The body of `PATCH /v1/loads/{id}/status` as sent.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A status change, with where and why it happened if the client says.")]
pub struct StatusChangeInput {
    #[schema(value_type = LoadStatus)]
    pub status: Option<String>,
    /// Required to assign (`status: assigned`), refused with any other status.
    #[schema(value_type = Option<CarrierId>)]
    pub carrier_id: Option<String>,
    /// Where the change happened.
    pub location: Option<CoordinatesInput>,
    #[schema(schema_with = super::fields::notes)]
    pub notes: Option<String>,
}

impl StatusChangeInput {
    pub fn validate(self) -> Result<StatusChange, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let status = errors.require("status", self.status, |s| LoadStatus::parse(&s));
        let carrier_id = errors.optional("carrier_id", self.carrier_id, |c| {
            CarrierId::parse(c.trim()).ok_or_else(|| "must be a carrier id (carrier_...)".into())
        });
        let location = self
            .location
            .and_then(|l| l.validate("location", &mut errors));
        let notes = errors
            .optional("notes", self.notes, |n| text(n, MAX_NOTES_CHARS, true))
            .filter(|n| !n.is_empty());
        errors.finish(|| StatusChange {
            status: status.expect("checked"),
            carrier_id,
            location,
            notes,
            source: ChangeSource::Api,
        })
    }
}

impl crate::api::extract::BodyInput for NewLoadInput {
    fn problems(self) -> ValidationErrors {
        self.validate().err().unwrap_or_default()
    }
}

impl crate::api::extract::BodyInput for StatusChangeInput {
    fn problems(self) -> ValidationErrors {
        self.validate().err().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_validation_names_every_field() {
        let errors = NewLoadInput {
            weight: Some(-5.0),
            pickup_date: Some("2026-05-02T00:00:00Z".into()),
            delivery_date: Some("2026-05-01T00:00:00Z".into()),
            ..Default::default()
        }
        .validate()
        .unwrap_err();
        let fields: Vec<&str> = errors.errors().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "origin",
                "destination",
                "weight",
                "equipment_type",
                "delivery_date"
            ]
        );
    }
}

fn parse_weight(w: f64) -> Result<f64, String> {
    if w.is_finite() && w > 0.0 && w <= MAX_WEIGHT_LB {
        Ok(w)
    } else {
        Err(format!(
            "must be a number of pounds above 0 and at most {MAX_WEIGHT_LB}"
        ))
    }
}

/// A required field's value if sent; null is recorded as its error.
fn not_null<T>(field: &str, raw: Option<Option<T>>, errors: &mut ValidationErrors) -> Option<T> {
    match raw {
        Some(None) => {
            errors.add(field, "must not be null (it cannot be cleared)");
            None
        }
        Some(Some(value)) => Some(value),
        None => None,
    }
}

/// The body of `PATCH /v1/loads/{id}` as sent.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(
    description = "Fields to change; those left out stay as they are, and `null` clears \
    an optional one (`reference`, `pickup_date`, `delivery_date`, `rate`, `notes`). Checked as \
    on create. `origin` and `destination` change only while the load is `posted`; nothing \
    changes once it is `delivered` or `cancelled`."
)]
pub struct LoadChangeInput {
    // The required fields cannot be cleared: null is refused, not ignored.
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = LocationInput)]
    pub origin: Option<Option<LocationInput>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = LocationInput)]
    pub destination: Option<Option<LocationInput>>,
    /// Pounds, above 0 and at most 500,000.
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = f64, exclusive_minimum = 0.0, maximum = 500_000.0)]
    pub weight: Option<Option<f64>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = EquipmentType)]
    pub equipment_type: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::optional_utc_timestamp)]
    pub pickup_date: Option<Option<String>>,
    /// Not before `pickup_date` (the one sent, or the load's).
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::optional_utc_timestamp)]
    pub delivery_date: Option<Option<String>>,
    /// US dollars, 0 to 10,000,000, at most two decimal places.
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = Option<f64>, minimum = 0.0, maximum = 10_000_000.0, multiple_of = 0.01)]
    pub rate: Option<Option<f64>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::notes)]
    pub notes: Option<Option<String>>,
    /// 1-64 printable characters on one line, unique among the account's loads.
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(schema_with = super::fields::reference)]
    pub reference: Option<Option<String>>,
    /// The whole list as it must become: stops with an `id` are edited,
    /// stops without one added, stops left out removed, in the order sent.
    /// A stop the truck has arrived at cannot change, go, or have a stop put
    /// before it (`409 STOP_FROZEN`).
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = Vec<StopInput>)]
    pub stops: Option<Option<Vec<StopInput>>>,
    #[serde(default, deserialize_with = "super::nullable")]
    #[schema(value_type = bool)]
    pub team: Option<Option<bool>>,
}

impl LoadChangeInput {
    pub fn validate(self) -> Result<LoadEdit, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let origin = not_null("origin", self.origin, &mut errors)
            .and_then(|o| o.validate("origin", &mut errors));
        let destination = not_null("destination", self.destination, &mut errors)
            .and_then(|d| d.validate("destination", &mut errors));
        let weight = not_null("weight", self.weight, &mut errors)
            .and_then(|w| errors.check("weight", parse_weight(w)));
        let equipment_type = not_null("equipment_type", self.equipment_type, &mut errors)
            .and_then(|e| errors.check("equipment_type", EquipmentType::parse(&e)));
        // A field sent as null clears; a value is checked as on create.
        let pickup_date = match self.pickup_date {
            None => None,
            Some(None) => Some(None),
            Some(Some(t)) => errors
                .check("pickup_date", timestamp::parse_utc(&t))
                .map(Some),
        };
        let delivery_date = match self.delivery_date {
            None => None,
            Some(None) => Some(None),
            Some(Some(t)) => errors
                .check("delivery_date", timestamp::parse_utc(&t))
                .map(Some),
        };
        if let (Some(Some(pickup)), Some(Some(delivery))) = (pickup_date, delivery_date)
            && delivery < pickup
        {
            errors.add("delivery_date", "must not be before pickup_date");
        }
        let rate_cents = match self.rate {
            None => None,
            Some(None) => Some(None),
            Some(Some(rate)) => errors.check("rate", parse_rate(rate)).map(Some),
        };
        let notes = match self.notes {
            None => None,
            Some(None) => Some(None),
            Some(Some(n)) => errors
                .check("notes", text(n, MAX_NOTES_CHARS, true))
                .map(|n| (!n.is_empty()).then_some(n)),
        };
        let reference = match self.reference {
            None => None,
            Some(None) => Some(None),
            Some(Some(r)) => errors.check("reference", parse_reference(&r)).map(Some),
        };
        if self.stops.is_some() {
            let ends = [
                ("origin", origin.is_some()),
                ("destination", destination.is_some()),
                ("pickup_date", pickup_date.is_some()),
                ("delivery_date", delivery_date.is_some()),
            ];
            for (field, _) in ends.into_iter().filter(|(_, sent)| *sent) {
                errors.add(
                    field,
                    "must not be sent with stops (it is the first or last stop's)",
                );
            }
        }
        let stops = not_null("stops", self.stops, &mut errors)
            .and_then(|s| validate_stops(s, true, &mut errors));
        let team = not_null("team", self.team, &mut errors);
        errors.finish(|| LoadEdit {
            stops,
            team,
            skip_stop: None,
            origin,
            destination,
            weight,
            equipment_type,
            pickup_date,
            delivery_date,
            rate_cents,
            notes,
            reference,
        })
    }
}

impl crate::api::extract::BodyInput for LoadChangeInput {
    fn problems(self) -> ValidationErrors {
        self.validate().err().unwrap_or_default()
    }
}
