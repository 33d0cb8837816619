//! A load's stops as clients see them: where each geofence is, and what the
//! truck did there (`GET /v1/loads/{id}`, `stops`).

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::account::StopSettings;
use crate::domain::ids::StopId;
use crate::domain::load::{Load, LoadStatus};
use crate::domain::location::UsState;
use crate::domain::stop_etas::RouteEta;
use crate::domain::stop_plan::{Appointment, Contact, Handling, Stop, StopReference};
use crate::domain::stops::{
    self, ArrivalStatus, DEPARTURE_FACTOR, Geofence, PlacedBy, StopKind, StopProgress,
    StopsProgress,
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

/// Where a stop stands: `scheduled` → `en_route` → `arrived` → `departed`,
/// or `skipped`. While the load is tracked exactly one stop is `en_route` or
/// `arrived`: the first not departed or skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopStatus {
    Scheduled,
    EnRoute,
    Arrived,
    Departed,
    Skipped,
}

/// A stop, and what the truck did there.
#[derive(Serialize, ToSchema)]
pub struct StopView<'a> {
    #[schema(value_type = String, examples("stop_01jd5ex0k3m2v8q4r6t9w1y3z5"))]
    pub id: &'a StopId,
    /// 1 for the first stop, in the order the truck visits them.
    pub sequence: u32,
    #[serde(rename = "type")]
    pub kind: StopKind,
    pub status: StopStatus,
    pub location: StopLocation<'a>,
    /// The appointment time, or a window's start (the load's `pickup_date`
    /// for its first stop, `delivery_date` for its last).
    #[schema(required = true, format = DateTime)]
    pub appointment: Option<String>,
    /// A window's end; null for an appointment time.
    #[schema(required = true, format = DateTime)]
    pub appointment_end: Option<String>,
    /// The first appointment the stop had, once it was changed; else null.
    #[schema(required = true)]
    pub original_appointment: Option<&'a Appointment>,
    pub handling: Handling,
    /// Minutes the ETA plans at the stop: its own, else 120 (live) or 30 (drop).
    pub planned_dwell_minutes: i64,
    pub references: &'a [StopReference],
    #[schema(required = true)]
    pub contact: Option<&'a Contact>,
    #[schema(required = true, value_type = Option<String>)]
    pub notes: Option<&'a str>,
    #[schema(required = true, format = DateTime)]
    pub arrived_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub departed_at: Option<String>,
    /// When the stop was skipped (by a client, or by the truck arriving at a
    /// later stop first); null otherwise.
    #[schema(required = true, format = DateTime)]
    pub skipped_at: Option<String>,
    /// Arrival and departure were inferred from sparse fixes on either side.
    pub inferred: bool,
    /// Null without an arrival or without an appointment.
    #[schema(required = true)]
    pub arrival_status: Option<ArrivalStatus>,
    /// Minutes from the appointment (or the window's edge passed) to the
    /// arrival, negative when early; 0 inside a window.
    #[schema(required = true)]
    pub deviation_minutes: Option<i64>,
    /// Minutes from arrival to departure (to now while at the stop).
    #[schema(required = true)]
    pub dwell_minutes: Option<i64>,
    /// Minutes past the stop's free time (the load's `detention_free_minutes`,
    /// 30 at a `drop` stop), counted from the later of arrival and appointment,
    /// to departure or now; 0 within the free time.
    #[schema(required = true)]
    pub detention_minutes: Option<i64>,
    /// While the stop is ahead and the load tracked: its estimated arrival,
    /// chained through the stops before it (see the guide's ETA model).
    #[schema(required = true, format = DateTime)]
    pub eta: Option<String>,
    /// The ETA is past the window's end, or more than 15 minutes past an
    /// appointment time; false without an ETA.
    pub late_risk: bool,
}

impl<'a> StopView<'a> {
    /// Every stop of `load`, given its stored progress and its upcoming
    /// stops' ETAs, as of `now`, with arrivals judged by its account's
    /// `settings`.
    pub fn of_load(
        load: &'a Load,
        stops: &'a [Stop],
        progress: &StopsProgress,
        etas: Option<&RouteEta>,
        settings: &StopSettings,
        now: DateTime<Utc>,
    ) -> Vec<Self> {
        // A delivered or cancelled load's clocks stopped when it became so.
        let now = match load.status.is_final() {
            true => load.status_history.last().map_or(now, |e| e.at.min(now)),
            false => now,
        };
        let progress = progress.of_stops(stops);
        let tracked = matches!(load.status, LoadStatus::Assigned | LoadStatus::InTransit);
        let picked_up = load.status == LoadStatus::InTransit;
        let behind = |index: usize, stop: &Stop, p: &StopProgress| {
            p.done() || stop.skipped_at.is_some() || stops::left_by_status(index, p, picked_up)
        };
        let current = stops
            .iter()
            .zip(&progress)
            .enumerate()
            .position(|(i, (stop, p))| !behind(i, stop, p));
        stops
            .iter()
            .zip(&progress)
            .enumerate()
            .map(|(index, (stop, p))| {
                let eta = etas.and_then(|e| e.stops.iter().find(|s| s.index == index));
                let status = match () {
                    _ if stop.skipped_at.is_some() || p.skipped_at.is_some() => StopStatus::Skipped,
                    _ if p.departed_at.is_some() => StopStatus::Departed,
                    // In transit: left, though no fix showed it.
                    _ if stops::left_by_status(index, p, picked_up) => StopStatus::Departed,
                    _ if p.arrived_at.is_some() => StopStatus::Arrived,
                    _ if tracked && current == Some(index) => StopStatus::EnRoute,
                    _ => StopStatus::Scheduled,
                };
                StopView::new(stop, index, status, p, load.free_minutes(), settings, now)
                    .with_eta(eta.map(|e| (e.at, e.late_risk)))
            })
            .collect()
    }

    fn new(
        stop: &'a Stop,
        index: usize,
        status: StopStatus,
        progress: &StopProgress,
        free_minutes: u32,
        settings: &StopSettings,
        now: DateTime<Utc>,
    ) -> Self {
        let location = &stop.location;
        let fence = Geofence::of(location);
        let (arrived, departed) = (progress.arrived(), progress.departed());
        let appointment = stop.appointment;
        let arrival = arrived.and_then(|at| stops::arrival_status(at, appointment, settings));
        let until = departed.unwrap_or(now);
        let dwell = arrived.map(|at| (until - at).num_minutes().max(0));
        let detention = arrived.map(|at| {
            let start = stops::detention_start(
                at,
                stop.appointment_start(),
                stop.free_minutes(free_minutes),
            );
            (until - start).num_minutes().max(0)
        });
        let skipped = stop.skipped_at.or(progress.skipped());
        StopView {
            id: &stop.id,
            sequence: index as u32 + 1,
            kind: stop.kind,
            status,
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
            appointment: appointment.as_ref().map(|a| format(&a.start)),
            appointment_end: appointment.and_then(|a| a.end).as_ref().map(format),
            original_appointment: stop.original_appointment.as_ref(),
            handling: stop.handling,
            planned_dwell_minutes: stop.planned_dwell().num_minutes(),
            references: &stop.references,
            contact: stop.contact.as_ref(),
            notes: stop.notes.as_deref(),
            arrived_at: arrived.as_ref().map(format),
            departed_at: departed.as_ref().map(format),
            skipped_at: skipped.as_ref().map(format),
            inferred: progress.inferred,
            arrival_status: arrival.map(|(s, _)| s),
            deviation_minutes: arrival.map(|(_, minutes)| minutes),
            dwell_minutes: dwell,
            detention_minutes: detention,
            eta: None,
            late_risk: false,
        }
    }

    fn with_eta(mut self, eta: Option<(DateTime<Utc>, bool)>) -> Self {
        if let Some((at, late_risk)) = eta {
            self.eta = Some(format(&at));
            self.late_risk = late_risk;
        }
        self
    }
}
