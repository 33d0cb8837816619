//! A stop's geofence: where it is and how far arrival and departure reach.

use serde::{Deserialize, Serialize};

use super::{DEFAULT_RADIUS_M, DEFAULT_ZIP_RADIUS_M, DEPARTURE_FACTOR};
use crate::domain::location::Location;
use crate::geo;

pub(super) const METRES_PER_MILE: f64 = 1_609.344;
/// Metres per degree of latitude (and of longitude at the equator) on the
/// sphere `geo` measures with.
pub(super) const METRES_PER_DEGREE: f64 =
    geo::EARTH_RADIUS_MILES * METRES_PER_MILE * std::f64::consts::PI / 180.0;

/// Where a stop's geofence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlacedBy {
    Coordinates,
    Zip,
}

/// A stop's geofence: a centre and an arrival radius.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geofence {
    pub lat: f64,
    pub lng: f64,
    pub radius_m: f64,
    pub placed_by: PlacedBy,
    /// Metres per degree of longitude at the centre: a fix's distance is
    /// first judged on a flat projection without trigonometry (most fixes are
    /// nowhere near the stop), and with the great circle only near it. An
    /// `f32` (ample for a scale) keeps the fence in 32 bytes.
    pub(super) metres_per_lng_degree: f32,
}

impl Geofence {
    /// The location's geofence: its coordinates, else its ZIP's centroid;
    /// `None` for a ZIP freight does not know (that stop is not watched).
    pub fn of(location: &Location) -> Option<Geofence> {
        let (lat, lng, placed_by, default) = match (location.lat, location.lng) {
            (Some(lat), Some(lng)) => (lat, lng, PlacedBy::Coordinates, DEFAULT_RADIUS_M),
            _ => {
                let place = geo::zip_centroid(&location.zip)?;
                (place.lat, place.lng, PlacedBy::Zip, DEFAULT_ZIP_RADIUS_M)
            }
        };
        Some(Geofence {
            lat,
            lng,
            radius_m: f64::from(location.radius_m.unwrap_or(default)),
            placed_by,
            metres_per_lng_degree: (METRES_PER_DEGREE * lat.to_radians().cos()) as f32,
        })
    }

    /// The great-circle distance to `(lat, lng)` in metres, or, for a point
    /// far beyond the departure radius, a flat estimate past it (every rule
    /// only asks whether a point is within one of the radii).
    pub(super) fn metres_to(&self, lat: f64, lng: f64) -> f64 {
        let dy = (lat - self.lat) * METRES_PER_DEGREE;
        let dx = (lng - self.lng) * f64::from(self.metres_per_lng_degree);
        let flat_squared = dx * dx + dy * dy;
        // The flat projection is within a few percent of the great circle
        // over a few hundred kilometres at US latitudes: beyond twice the
        // departure radius a point is certainly outside both radii.
        let far = 2.0 * self.departure_radius_m();
        if flat_squared > far * far {
            return flat_squared.sqrt();
        }
        geo::haversine_miles(self.lat, self.lng, lat, lng) * METRES_PER_MILE
    }

    pub(super) fn departure_radius_m(&self) -> f64 {
        self.radius_m * DEPARTURE_FACTOR
    }
}
