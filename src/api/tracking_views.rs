//! Response shapes of tracking: positions, the summary on a load, the live view.

use serde::Serialize;

use crate::actors::load_actor::TrackingState;
use crate::domain::eta;
use crate::domain::load::LoadStatus;
use crate::domain::timestamp::format;
use crate::domain::tracking::GpsFix;
use crate::geo;

/// A stored GPS point. Speed in mph, heading in degrees clockwise from north.
#[derive(Serialize)]
pub struct PointView {
    pub lat: f64,
    pub lng: f64,
    pub timestamp: String,
    pub speed: Option<f64>,
    pub heading: Option<f64>,
}

impl PointView {
    pub fn new(fix: &GpsFix) -> Self {
        PointView {
            lat: fix.lat,
            lng: fix.lng,
            timestamp: format(&fix.timestamp),
            speed: fix.speed_mph,
            heading: fix.heading_deg,
        }
    }
}

/// Where a load is: its latest position and the nearest city (ZIP centroid
/// within 50 miles; `city` and `state` are null beyond that).
#[derive(Serialize)]
pub struct CurrentLocation {
    pub lat: f64,
    pub lng: f64,
    pub city: Option<&'static str>,
    pub state: Option<&'static str>,
}

impl CurrentLocation {
    fn new(fix: &GpsFix) -> Self {
        let place = geo::nearest_place(fix.lat, fix.lng);
        CurrentLocation {
            lat: fix.lat,
            lng: fix.lng,
            city: place.map(|p| p.city.as_str()),
            state: place.map(|p| p.state.as_str()),
        }
    }
}

/// The spec's tracking summary on a load; fields are null until the first fix.
#[derive(Serialize, Default)]
pub struct TrackingSummary {
    pub current_location: Option<CurrentLocation>,
    pub eta: Option<String>,
    pub last_update: Option<String>,
}

/// ETA only while the load is on its way; none for a posted or delivered load.
fn estimate(state: &TrackingState) -> Option<eta::Eta> {
    if !matches!(state.status, LoadStatus::Assigned | LoadStatus::InTransit) {
        return None;
    }
    eta::estimate(&state.recent, state.destination?)
}

impl TrackingSummary {
    pub fn new(state: &TrackingState) -> Self {
        let latest = state.recent.first();
        TrackingSummary {
            current_location: latest.map(CurrentLocation::new),
            eta: estimate(state).map(|e| format(&e.at)),
            last_update: latest.map(|f| format(&f.timestamp)),
        }
    }
}

#[derive(Serialize)]
pub struct EtaDetails {
    pub remaining_miles: f64,
    pub assumed_speed_mph: f64,
    pub method: &'static str,
}

/// `GET /v1/loads/{id}/tracking`.
#[derive(Serialize)]
pub struct LiveTracking<'a> {
    pub load_id: &'a str,
    pub status: &'static str,
    pub current_location: Option<CurrentLocation>,
    pub speed: Option<f64>,
    pub heading: Option<f64>,
    pub last_update: Option<String>,
    pub eta: Option<String>,
    pub eta_details: Option<EtaDetails>,
    /// Newest first.
    pub points: Vec<PointView>,
}

impl<'a> LiveTracking<'a> {
    pub fn new(load_id: &'a str, state: &TrackingState, points: usize) -> Self {
        let latest = state.recent.first();
        let eta = estimate(state);
        LiveTracking {
            load_id,
            status: state.status.as_str(),
            current_location: latest.map(CurrentLocation::new),
            speed: latest.and_then(|f| f.speed_mph),
            heading: latest.and_then(|f| f.heading_deg),
            last_update: latest.map(|f| format(&f.timestamp)),
            eta: eta.map(|e| format(&e.at)),
            eta_details: eta.map(|e| EtaDetails {
                remaining_miles: (e.remaining_miles * 10.0).round() / 10.0,
                assumed_speed_mph: (e.assumed_mph * 10.0).round() / 10.0,
                method: "great-circle miles to the destination ZIP centroid x 1.2, at the mean moving speed of the last hour (45 mph when stopped)",
            }),
            points: state.recent.iter().take(points).map(PointView::new).collect(),
        }
    }
}
