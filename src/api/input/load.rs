//! The bodies of `POST /v1/loads` and `PATCH /v1/loads/{id}/status`.

use serde::Deserialize;

use super::location::{CoordinatesInput, LocationInput};
use crate::domain::equipment::EquipmentType;
use crate::domain::ids::CarrierId;
use crate::domain::load::{
    ChangeSource, LoadStatus, MAX_DETENTION_FREE_MINUTES, MAX_NOTES_CHARS, MAX_WEIGHT_LB, NewLoad,
    StatusChange, parse_rate,
};
use crate::domain::timestamp;
use crate::domain::validation::{ValidationErrors, text, whole_minutes};

/// The body of `POST /v1/loads` as sent.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A load to post.")]
pub struct NewLoadInput {
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
    /// Free minutes at each stop before detention starts, 0-1,440 (default 120).
    #[schema(minimum = 0, maximum = 1440, examples(120))]
    pub detention_free_minutes: Option<f64>,
}

impl NewLoadInput {
    pub fn validate(self) -> Result<NewLoad, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let origin = match self.origin {
            Some(o) => o.validate("origin", &mut errors),
            None => {
                errors.add("origin", "is required");
                None
            }
        };
        let destination = match self.destination {
            Some(d) => d.validate("destination", &mut errors),
            None => {
                errors.add("destination", "is required");
                None
            }
        };
        let weight = errors.require("weight", self.weight, |w| {
            if w.is_finite() && w > 0.0 && w <= MAX_WEIGHT_LB {
                Ok(w)
            } else {
                Err(format!(
                    "must be a number of pounds above 0 and at most {MAX_WEIGHT_LB}"
                ))
            }
        });
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
        errors.finish(|| NewLoad {
            origin: origin.expect("checked"),
            destination: destination.expect("checked"),
            weight: weight.expect("checked"),
            equipment_type: equipment_type.expect("checked"),
            pickup_date,
            delivery_date,
            rate_cents,
            notes,
            detention_free_minutes,
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
