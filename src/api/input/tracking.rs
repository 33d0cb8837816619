//! A GPS fix as a device sends it, alone or as one point of a batch.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::domain::timestamp;
use crate::domain::tracking::{FixSource, GpsFix, MAX_AGE, MAX_FUTURE_SKEW, MAX_SPEED_MPH};
use crate::domain::validation::{FieldPath, ValidationErrors, number_in};

/// The body of `POST /v1/loads/{id}/tracking` (and one element of a batch, with `load_id`).
// Documented as the single fix; the batch's point schema
// (`openapi::schemas::BatchPoint`) adds `load_id`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "One GPS fix of a load.")]
pub struct FixInput {
    #[schema(ignore)]
    pub load_id: Option<String>,
    /// Latitude, WGS 84 decimal degrees.
    #[schema(required = true, nullable = false, minimum = -90.0, maximum = 90.0, examples(32.7767))]
    pub lat: Option<f64>,
    /// Longitude, WGS 84 decimal degrees.
    #[schema(required = true, nullable = false, minimum = -180.0, maximum = 180.0, examples(-96.797))]
    pub lng: Option<f64>,
    /// When the device took the fix: at most 5 minutes ahead of the server's
    /// clock and at most 30 days old.
    #[schema(required = true, schema_with = super::fields::utc_timestamp)]
    pub timestamp: Option<String>,
    /// Ground speed in miles per hour.
    #[schema(minimum = 0.0, maximum = 200.0, examples(61.5))]
    pub speed: Option<f64>,
    /// Degrees clockwise from true north (0 = north, 90 = east).
    #[schema(minimum = 0.0, maximum = 360.0, examples(92.0))]
    pub heading: Option<f64>,
}

impl FixInput {
    /// Validates a fix received at `now`; field names are prefixed with `prefix`
    /// (empty for a single fix, `points[3].` in a batch).
    pub fn validate(
        self,
        prefix: &str,
        now: DateTime<Utc>,
        errors: &mut ValidationErrors,
    ) -> Option<GpsFix> {
        let field = |name| FieldPath(prefix, name);
        let lat = errors.require(field("lat"), self.lat, |v| number_in(v, -90.0, 90.0));
        let lng = errors.require(field("lng"), self.lng, |v| number_in(v, -180.0, 180.0));
        let timestamp = errors.require(field("timestamp"), self.timestamp, |raw| {
            let at = timestamp::parse_utc(&raw)?;
            if at > now + MAX_FUTURE_SKEW {
                return Err("must not be more than 5 minutes in the future".into());
            }
            if at < now - MAX_AGE {
                return Err("must not be more than 30 days old".into());
            }
            Ok(at)
        });
        let speed_mph = errors.optional(field("speed"), self.speed, |v| {
            number_in(v, 0.0, MAX_SPEED_MPH)
        });
        let heading_deg =
            errors.optional(field("heading"), self.heading, |v| number_in(v, 0.0, 360.0));
        Some(GpsFix {
            timestamp: timestamp?,
            lat: lat?,
            lng: lng?,
            speed_mph,
            heading_deg,
            source: FixSource::Api,
        })
    }
}

impl crate::api::extract::BodyInput for FixInput {
    /// Judged against the system clock: only to complete the list of a body
    /// already refused, never to accept one.
    fn problems(self) -> ValidationErrors {
        let mut errors = ValidationErrors::new();
        self.validate("", Utc::now(), &mut errors);
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(lat: f64, lng: f64, at: &str) -> FixInput {
        FixInput {
            lat: Some(lat),
            lng: Some(lng),
            timestamp: Some(at.into()),
            speed: Some(55.0),
            heading: Some(90.0),
            load_id: None,
        }
    }

    #[test]
    fn accepts_a_sane_fix_and_refuses_each_bad_field() {
        let now = timestamp::parse_utc("2026-06-01T12:00:00Z").unwrap();
        let mut errors = ValidationErrors::new();
        assert!(
            input(32.7, -96.8, "2026-06-01T11:59:00Z")
                .validate("", now, &mut errors)
                .is_some()
        );
        assert!(errors.is_empty());
        for (bad, field) in [
            (input(91.0, 0.0, "2026-06-01T11:59:00Z"), "lat"),
            (input(0.0, 180.5, "2026-06-01T11:59:00Z"), "lng"),
            (input(0.0, 0.0, "2026-06-01T12:06:00Z"), "timestamp"),
            (input(0.0, 0.0, "2026-04-01T12:00:00Z"), "timestamp"),
            (
                FixInput {
                    speed: Some(-1.0),
                    ..input(0.0, 0.0, "2026-06-01T11:59:00Z")
                },
                "speed",
            ),
            (
                FixInput {
                    heading: Some(361.0),
                    ..input(0.0, 0.0, "2026-06-01T11:59:00Z")
                },
                "heading",
            ),
        ] {
            let mut errors = ValidationErrors::new();
            assert!(bad.validate("points[2].", now, &mut errors).is_none() || !errors.is_empty());
            assert_eq!(errors.errors()[0].field, format!("points[2].{field}"));
        }
    }
}
