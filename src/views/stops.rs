//! A load's stops as clients see them: where each geofence is, and what the
//! truck did there (`GET /v1/loads/{id}`, `stops`).

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::account::StopSettings;
use crate::domain::load::Load;
use crate::domain::location::{Location, UsState};
use crate::domain::stops::{
    self, ArrivalStatus, DEPARTURE_FACTOR, Geofence, PlacedBy, StopKind, StopsProgress,
};
use crate::domain::timestamp::format;

/// A stop's place: the load's location with its geofence resolved.
#[derive(Serialize, ToSchema)]
pub struct StopLocation<'a> {
    #[schema(value_type = String)]
    pub city: &'a str,
    #[schema(value_type = String)]
    pub state: &'a UsState,
    #[schema(value_type = String)]
    pub zip: &'a str,
    #[schema(required = true, value_type = Option<String>)]
    pub address: Option<&'a str>,
    /// The geofence's centre: the given coordinates, or the ZIP's centroid;
    /// null (with `lng`, `radius_m` and `placed_by`) when the ZIP is unknown to
    /// freight, and the stop is not watched.
    #[schema(required = true)]
    pub lat: Option<f64>,
    #[schema(required = true)]
    pub lng: Option<f64>,
    /// Arrival radius, whole metres (as the load's `radius_m`).
    #[schema(required = true)]
    pub radius_m: Option<u32>,
    /// Departure radius, whole metres: 1.5 times the arrival radius, rounded.
    #[schema(required = true)]
    pub departure_radius_m: Option<u32>,
    #[schema(required = true)]
    pub placed_by: Option<PlacedBy>,
}

/// A radius as the API shows it: whole metres (radii are at most a few
/// kilometres, so the cast neither wraps nor saturates).
fn whole_metres(radius: f64) -> u32 {
    radius.round() as u32
}

/// A pickup or delivery, and what the truck did there.
#[derive(Serialize, ToSchema)]
pub struct StopView<'a> {
    #[serde(rename = "type")]
    pub kind: StopKind,
    pub location: StopLocation<'a>,
    /// The load's `pickup_date` or `delivery_date`.
    #[schema(required = true, format = DateTime)]
    pub appointment: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub arrived_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub departed_at: Option<String>,
    /// Arrival and departure were inferred from sparse fixes on either side.
    pub inferred: bool,
    /// Null without an arrival or without an appointment.
    #[schema(required = true)]
    pub arrival_status: Option<ArrivalStatus>,
    /// Arrival minus appointment, in whole minutes (negative: early).
    #[schema(required = true)]
    pub deviation_minutes: Option<i64>,
    /// Minutes from arrival to departure (to now while at the stop).
    #[schema(required = true)]
    pub dwell_minutes: Option<i64>,
    /// Minutes past the load's free time (`detention_free_minutes`), counted
    /// from the later of arrival and appointment, to departure or now; 0 within
    /// the free time.
    #[schema(required = true)]
    pub detention_minutes: Option<i64>,
}

impl<'a> StopView<'a> {
    /// Both stops of `load`, given its stored progress, as of `now`, with
    /// arrivals judged by its account's `settings`.
    pub fn of_load(
        load: &'a Load,
        progress: &StopsProgress,
        settings: &StopSettings,
        now: DateTime<Utc>,
    ) -> Vec<Self> {
        // A delivered or cancelled load's clocks stopped when it became so.
        let now = match load.status.is_final() {
            true => load.status_history.last().map_or(now, |e| e.at.min(now)),
            false => now,
        };
        StopKind::BOTH
            .into_iter()
            .map(|kind| {
                let (location, appointment) = match kind {
                    StopKind::Pickup => (&load.origin, load.pickup_date),
                    StopKind::Delivery => (&load.destination, load.delivery_date),
                };
                StopView::new(
                    kind,
                    location,
                    appointment,
                    load.free_minutes(),
                    progress,
                    settings,
                    now,
                )
            })
            .collect()
    }

    fn new(
        kind: StopKind,
        location: &'a Location,
        appointment: Option<DateTime<Utc>>,
        free_minutes: u32,
        progress: &StopsProgress,
        settings: &StopSettings,
        now: DateTime<Utc>,
    ) -> Self {
        let fence = Geofence::of(location);
        let stop = progress.of(kind);
        let (arrived, departed) = (stop.arrived(), stop.departed());
        let status = arrived.and_then(|at| stops::arrival_status(at, appointment, settings));
        let until = departed.unwrap_or(now);
        let dwell = arrived.map(|at| (until - at).num_minutes().max(0));
        let detention = arrived.map(|at| {
            let start = stops::detention_start(at, appointment, free_minutes);
            (until - start).num_minutes().max(0)
        });
        StopView {
            kind,
            location: StopLocation {
                city: &location.city,
                state: &location.state,
                zip: &location.zip,
                address: location.address.as_deref(),
                lat: fence.map(|f| f.lat),
                lng: fence.map(|f| f.lng),
                radius_m: fence.map(|f| whole_metres(f.radius_m)),
                departure_radius_m: fence.map(|f| whole_metres(f.radius_m * DEPARTURE_FACTOR)),
                placed_by: fence.map(|f| f.placed_by),
            },
            appointment: appointment.as_ref().map(format),
            arrived_at: arrived.as_ref().map(format),
            departed_at: departed.as_ref().map(format),
            inferred: stop.inferred,
            arrival_status: status.map(|(s, _)| s),
            deviation_minutes: status.map(|(_, minutes)| minutes),
            dwell_minutes: dwell,
            detention_minutes: detention,
        }
    }
}
