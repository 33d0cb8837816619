//! Places as clients send them: pickup and delivery locations, coordinates.

use serde::Deserialize;

use crate::domain::location::{
    Coordinates, Location, MAX_ADDRESS_CHARS, MAX_CITY_CHARS, RADIUS_M_RANGE, UsState, parse_zip,
};
use crate::domain::validation::{FieldPath, ValidationErrors, number_in, text};

/// A location as the client sent it, before validation.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(description = "A pickup or delivery place.")]
pub struct LocationInput {
    #[schema(required = true, schema_with = super::fields::city)]
    pub city: Option<String>,
    #[schema(value_type = super::fields::StateCodeInput)]
    pub state: Option<String>,
    #[schema(required = true, schema_with = super::fields::zip)]
    pub zip: Option<String>,
    #[schema(schema_with = super::fields::address)]
    pub address: Option<String>,
    /// The facility's latitude (WGS 84); with `lng`, the centre of the stop's
    /// geofence. Without them the stop is the ZIP's centroid.
    #[schema(minimum = -90.0, maximum = 90.0, examples(32.7767))]
    pub lat: Option<f64>,
    /// The facility's longitude; given with `lat`.
    #[schema(minimum = -180.0, maximum = 180.0, examples(-96.797))]
    pub lng: Option<f64>,
    /// Arrival radius in metres, 25-10,000 (default 500 with coordinates,
    /// 3,000 around a ZIP centroid); the departure radius is 1.5 times it.
    #[schema(minimum = 25, maximum = 10000, examples(400))]
    pub radius_m: Option<f64>,
}

impl LocationInput {
    /// Validates under `prefix` (`origin` or `destination`), recording every problem.
    pub fn validate(self, prefix: &str, errors: &mut ValidationErrors) -> Option<Location> {
        let city = errors.require(FieldPath(prefix, ".city"), self.city, |v| {
            text(v, MAX_CITY_CHARS, false)
        });
        let state = errors.require(FieldPath(prefix, ".state"), self.state, |v| {
            UsState::parse(&v)
        });
        let zip = errors.require(FieldPath(prefix, ".zip"), self.zip, |v| parse_zip(&v));
        let address = errors
            .optional(FieldPath(prefix, ".address"), self.address, |v| {
                text(v, MAX_ADDRESS_CHARS, true)
            })
            .filter(|a| !a.is_empty());
        let lat = errors.optional(FieldPath(prefix, ".lat"), self.lat, |v| {
            number_in(v, -90.0, 90.0)
        });
        let lng = errors.optional(FieldPath(prefix, ".lng"), self.lng, |v| {
            number_in(v, -180.0, 180.0)
        });
        match (self.lat.is_some(), self.lng.is_some()) {
            (true, false) => errors.add(
                FieldPath(prefix, ".lng").to_string(),
                "must be given with lat",
            ),
            (false, true) => errors.add(
                FieldPath(prefix, ".lat").to_string(),
                "must be given with lng",
            ),
            _ => {}
        }
        let radius_m = errors.optional(FieldPath(prefix, ".radius_m"), self.radius_m, |v| {
            let (min, max) = (*RADIUS_M_RANGE.start(), *RADIUS_M_RANGE.end());
            if v.fract() != 0.0 || !(f64::from(min)..=f64::from(max)).contains(&v) {
                return Err(format!(
                    "must be a whole number of metres from {min} to {max}"
                ));
            }
            Ok(v as u32)
        });
        Some(Location {
            city: city?,
            state: state?,
            zip: zip?,
            address,
            lat,
            lng,
            radius_m,
        })
    }
}

/// A WGS 84 position in decimal degrees.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CoordinatesInput {
    #[schema(required = true, nullable = false, minimum = -90.0, maximum = 90.0)]
    pub lat: Option<f64>,
    #[schema(required = true, nullable = false, minimum = -180.0, maximum = 180.0)]
    pub lng: Option<f64>,
}

impl CoordinatesInput {
    pub fn validate(self, prefix: &str, errors: &mut ValidationErrors) -> Option<Coordinates> {
        let lat = errors.require(FieldPath(prefix, ".lat"), self.lat, |v| {
            number_in(v, -90.0, 90.0)
        });
        let lng = errors.require(FieldPath(prefix, ".lng"), self.lng, |v| {
            number_in(v, -180.0, 180.0)
        });
        Some(Coordinates {
            lat: lat?,
            lng: lng?,
        })
    }
}
