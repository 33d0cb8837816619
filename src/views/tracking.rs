//! Response shapes of tracking: positions, the summary on a load, the live view.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::hos::HoursOfService;
use crate::domain::ids::LoadId;
use crate::domain::load::LoadStatus;
use crate::domain::stop_etas::{EtaBasis, RouteEta, StopEta};
use crate::domain::timestamp::format;
use crate::domain::tracking::{FixSource, GpsFix, TrackingState};
use crate::geo;

/// A stored GPS point. Speed in mph, heading in degrees clockwise from north.
#[derive(Serialize, ToSchema)]
#[schema(as = GpsPoint)]
pub struct PointView {
    #[schema(minimum = -90.0, maximum = 90.0)]
    pub lat: f64,
    #[schema(minimum = -180.0, maximum = 180.0)]
    pub lng: f64,
    #[schema(schema_with = super::schema::echoed_timestamp)]
    pub timestamp: String,
    #[schema(required = true, minimum = 0.0, maximum = 200.0)]
    pub speed: Option<f64>,
    #[schema(required = true, minimum = 0.0, maximum = 360.0)]
    pub heading: Option<f64>,
    /// How the fix arrived: `api` (this API's tracking routes), or the device
    /// protocol (`osmand` covers Traccar Client 7 and 10, the OsmAnd app and
    /// GPSLogger; `traccar` is Traccar Client 9's JSON).
    pub source: FixSource,
}

/// The answer to `POST /v1/loads/{id}/tracking`: the stored point, its load, and
/// whether it repeated a stored fix. Serialised straight from here: this is the
/// GPS ingest path, answered tens of thousands of times a second.
#[derive(Serialize, ToSchema)]
pub struct RecordedFix<'a> {
    #[schema(value_type = LoadId)]
    pub load_id: &'a str,
    #[schema(minimum = -90.0, maximum = 90.0)]
    pub lat: f64,
    #[schema(minimum = -180.0, maximum = 180.0)]
    pub lng: f64,
    #[schema(schema_with = super::schema::echoed_timestamp)]
    pub timestamp: String,
    /// Miles per hour.
    #[schema(required = true, minimum = 0.0, maximum = 200.0)]
    pub speed: Option<f64>,
    /// Degrees clockwise from true north.
    #[schema(required = true, minimum = 0.0, maximum = 360.0)]
    pub heading: Option<f64>,
    /// True when a fix with the same timestamp was already stored: nothing was
    /// written and the stored fix is the one shown.
    pub duplicate: bool,
}

impl<'a> RecordedFix<'a> {
    pub fn new(load_id: &'a str, fix: &GpsFix, duplicate: bool) -> Self {
        let point = PointView::new(fix);
        RecordedFix {
            load_id,
            lat: point.lat,
            lng: point.lng,
            timestamp: point.timestamp,
            speed: point.speed,
            heading: point.heading,
            duplicate,
        }
    }
}

impl PointView {
    pub fn new(fix: &GpsFix) -> Self {
        PointView {
            lat: fix.lat,
            lng: fix.lng,
            timestamp: format(&fix.timestamp),
            speed: fix.speed_mph,
            heading: fix.heading_deg,
            source: fix.source,
        }
    }
}

/// Where a load is: its latest position and the nearest city (ZIP centroid
/// within 50 miles; `city` and `state` are null beyond that).
#[derive(Serialize, ToSchema)]
pub struct CurrentLocation {
    pub lat: f64,
    pub lng: f64,
    #[schema(required = true, value_type = Option<String>)]
    pub city: Option<&'static str>,
    /// The ZIP's two-letter state or territory code (US territories included).
    #[schema(required = true, value_type = Option<String>, pattern = "^[A-Z]{2}$")]
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
#[derive(Serialize, Default, ToSchema)]
pub struct TrackingSummary {
    #[schema(required = true)]
    pub current_location: Option<CurrentLocation>,
    /// The ETA at the next delivery stop (each stop's is on `stops`).
    #[schema(required = true, schema_with = super::schema::optional_eta)]
    pub eta: Option<String>,
    #[schema(required = true, schema_with = super::schema::optional_echoed_timestamp)]
    pub last_update: Option<String>,
    /// True while the next delivery's ETA is past its window's end, or more
    /// than 15 minutes past its appointment time; false without either.
    pub late_risk: bool,
    /// The driver's hours of service as the load's own fixes show them:
    /// inferred from GPS (driving is movement over 5 mph), not read from an
    /// ELD. Null until the first fix, and once the load is not on its way.
    #[schema(required = true)]
    pub hours_of_service: Option<HoursOfService>,
    /// Where the ETA's driving speed comes from; null without an ETA.
    #[schema(required = true)]
    pub eta_basis: Option<EtaBasis>,
}

/// The next delivery's ETA, only while the load is on its way.
fn next_delivery(state: &TrackingState, estimate: Option<&RouteEta>) -> Option<StopEta> {
    estimate?.next_delivery(&state.route).copied()
}

/// How the ETA was worked out, naming the target it aims at.
fn method(own_coordinates: bool) -> &'static str {
    if own_coordinates {
        "great-circle miles to the delivery's own coordinates (through the stops before it) x the account's road circuity, at its driving speed, with the planned dwell at each stop and the driver's 30-minute breaks and 10-hour rests where hours of service put them"
    } else {
        "great-circle miles to the delivery ZIP's centroid (through the stops before it) x the account's road circuity, at its driving speed, with the planned dwell at each stop and the driver's 30-minute breaks and 10-hour rests where hours of service put them"
    }
}

/// The load's ETA as the views write it, if it has one.
pub fn eta(state: &TrackingState) -> Option<String> {
    next_delivery(state, state.estimate().as_ref()).map(|e| format(&e.at))
}

impl TrackingSummary {
    /// The summary of `state`, estimating its ETAs.
    pub fn of(state: &TrackingState) -> Self {
        Self::new(state, state.estimate().as_ref())
    }

    pub fn new(state: &TrackingState, estimate: Option<&RouteEta>) -> Self {
        let latest = state.recent.first();
        let next = next_delivery(state, estimate);
        TrackingSummary {
            current_location: latest.map(CurrentLocation::new),
            eta: next.map(|e| format(&e.at)),
            last_update: latest.map(|f| format(&f.timestamp)),
            late_risk: next.is_some_and(|e| e.late_risk),
            hours_of_service: estimate.map(|e| e.hours_of_service),
            eta_basis: estimate.map(|_| state.speed.basis),
        }
    }
}

/// The `data` of a `tracking.updated` server-sent event: a stored fix, as the
/// `tracking.updated` webhook carries it (`status` is the load's when the fix
/// was admitted), with the load's ETA once the fix was stored.
#[derive(Serialize, ToSchema)]
pub struct TrackingUpdate<'a> {
    #[schema(value_type = LoadId)]
    pub load_id: &'a str,
    #[schema(value_type = LoadStatus)]
    pub status: &'static str,
    pub position: PointView,
    /// As `GET /v1/loads/{load_id}/tracking` shows it right after this fix;
    /// null when it cannot be estimated.
    #[schema(required = true, schema_with = super::schema::optional_eta)]
    pub eta: Option<String>,
}

/// How the ETA was estimated.
#[derive(Serialize, ToSchema)]
pub struct EtaDetails {
    pub remaining_miles: f64,
    pub assumed_speed_mph: f64,
    #[schema(value_type = String)]
    pub method: &'static str,
}

/// `GET /v1/loads/{id}/tracking`.
#[derive(Serialize, ToSchema)]
pub struct LiveTracking<'a> {
    #[schema(value_type = LoadId)]
    pub load_id: &'a str,
    #[schema(value_type = LoadStatus)]
    pub status: &'static str,
    #[schema(required = true)]
    pub current_location: Option<CurrentLocation>,
    /// Of the latest fix, in mph.
    #[schema(required = true)]
    pub speed: Option<f64>,
    /// Of the latest fix, in degrees clockwise from true north.
    #[schema(required = true)]
    pub heading: Option<f64>,
    #[schema(required = true, schema_with = super::schema::optional_echoed_timestamp)]
    pub last_update: Option<String>,
    #[schema(required = true, schema_with = super::schema::optional_eta)]
    pub eta: Option<String>,
    #[schema(required = true)]
    pub eta_details: Option<EtaDetails>,
    /// Newest first.
    #[schema(value_type = Vec<PointView>)]
    pub points: Vec<PointView>,
}

impl<'a> LiveTracking<'a> {
    pub fn new(load_id: &'a str, state: &TrackingState, points: usize) -> Self {
        let latest = state.recent.first();
        let estimate = state.estimate();
        let eta = next_delivery(state, estimate.as_ref());
        LiveTracking {
            load_id,
            status: state.status.as_str(),
            current_location: latest.map(CurrentLocation::new),
            speed: latest.and_then(|f| f.speed_mph),
            heading: latest.and_then(|f| f.heading_deg),
            last_update: latest.map(|f| format(&f.timestamp)),
            eta: eta.map(|e| format(&e.at)),
            eta_details: eta.map(|e| EtaDetails {
                remaining_miles: estimate
                    .as_ref()
                    .and_then(|e| e.miles_to_delivery)
                    .map_or(0.0, |m| (m * 10.0).round() / 10.0),
                assumed_speed_mph: (state.speed.mph * 10.0).round() / 10.0,
                method: method(state.route[e.index].own_coordinates),
            }),
            points: state
                .recent
                .iter()
                .take(points)
                .map(PointView::new)
                .collect(),
        }
    }
}
