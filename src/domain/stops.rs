//! A load's pickup and delivery as stops freight watches: geofences, and the
//! arrival and departure milestones its fixes make, in timestamp order.
//!
//! The rules (docs/api-guide.md, "Stops and milestones"):
//! - A stop's geofence is its coordinates (default arrival radius 500 m) or,
//!   without them, its ZIP's centroid (3,000 m). The departure radius is 1.5
//!   times the arrival radius, so GPS jitter at the fence never flaps.
//! - **Arrival**: the first fix inside the arrival radius, once the truck has
//!   stopped there: a fix inside reporting at most 5 mph, or two fixes inside at
//!   least 2 minutes apart, neither reporting more than 5 mph (a device that
//!   sends no speed). `arrived_at` is the first fix inside. A truck driving
//!   past does not arrive.
//! - **Departure**: after an arrival, the first fix outside the departure
//!   radius; `departed_at` is its time.
//! - **Sparse fixes**: two consecutive fixes outside, on either side of a stop,
//!   whose segment passes within the arrival radius and whose gap leaves at
//!   least 15 minutes at the stop at 50 mph, make an arrival and a departure
//!   marked `inferred`, at times estimated from the distances at 50 mph.
//! - Fixes are folded in timestamp order: a fix no newer than the newest folded
//!   one is stored but changes nothing here.
//!
//! This is pure: no clock, no storage. The load's actor holds a [`StopWatch`],
//! folds admitted fixes into it, and stores its [`StopsProgress`] with the
//! points that changed it.

use std::num::NonZeroI64;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::account::StopSettings;
use super::eta::EtaSent;
use super::location::Location;
use super::tracking::GpsFix;
use crate::geo;

/// Arrival radius around a stop's own coordinates, in metres.
pub const DEFAULT_RADIUS_M: u32 = 500;
/// Arrival radius around a ZIP's centroid: a ZIP is a wide area.
pub const DEFAULT_ZIP_RADIUS_M: u32 = 3_000;
/// Departure radius = arrival radius × this.
pub const DEPARTURE_FACTOR: f64 = 1.5;
/// At or below this a truck is stopped.
pub const STOPPED_MPH: f64 = 5.0;
/// Two fixes inside this far apart, neither moving, show a stop.
pub const DWELL_TO_CONFIRM: Duration = Duration::minutes(2);
/// Sparse fixes show a stop when their gap leaves this long at it...
pub const SPARSE_MIN_DWELL: Duration = Duration::minutes(15);
/// ...driving the rest at this speed.
pub const SPARSE_SPEED_MPH: f64 = 50.0;

const METRES_PER_MILE: f64 = 1_609.344;
/// Metres per degree of latitude (and of longitude at the equator) on the
/// sphere `geo` measures with.
const METRES_PER_DEGREE: f64 =
    geo::EARTH_RADIUS_MILES * METRES_PER_MILE * std::f64::consts::PI / 180.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StopKind {
    Pickup,
    Delivery,
}

impl StopKind {
    pub const BOTH: [StopKind; 2] = [StopKind::Pickup, StopKind::Delivery];

    pub const fn as_str(self) -> &'static str {
        match self {
            StopKind::Pickup => "pickup",
            StopKind::Delivery => "delivery",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::BOTH.into_iter().find(|k| k.as_str() == raw)
    }

    pub const fn index(self) -> usize {
        self as usize
    }
}

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
    metres_per_lng_degree: f32,
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
    fn metres_to(&self, lat: f64, lng: f64) -> f64 {
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

    fn departure_radius_m(&self) -> f64 {
        self.radius_m * DEPARTURE_FACTOR
    }
}

/// Microseconds since 1970, never 0 (no fix is dated 1970), so an optional
/// time costs 8 bytes: every active load's actor holds four.
type Micros = NonZeroI64;

fn micros(at: DateTime<Utc>) -> Micros {
    NonZeroI64::new(at.timestamp_micros()).unwrap_or(NonZeroI64::MIN)
}

fn time(micros: Micros) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros.get())
}

/// What is known of one stop, as stored (times in µs since 1970).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopProgress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrived_at: Option<Micros>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub departed_at: Option<Micros>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inferred: bool,
    /// The first fix inside the arrival radius while the truck has not been
    /// seen stopped: the arrival time if it turns out to stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_inside: Option<Micros>,
    /// That first fix inside reported moving (over 5 mph): it cannot be one
    /// of the two fixes that show a stop without speeds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first_inside_moving: bool,
}

impl StopProgress {
    pub fn arrived(&self) -> Option<DateTime<Utc>> {
        self.arrived_at.and_then(time)
    }

    pub fn departed(&self) -> Option<DateTime<Utc>> {
        self.departed_at.and_then(time)
    }

    /// At the stop now: arrived and not departed.
    pub fn at_stop(&self) -> bool {
        self.arrived_at.is_some() && self.departed_at.is_none()
    }
}

/// Both stops' progress: what the store keeps per load, written with the
/// point that changed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopsProgress {
    pub pickup: StopProgress,
    pub delivery: StopProgress,
    /// The delivery ETA last sent in `load.eta_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_sent: Option<EtaSent>,
}

impl StopsProgress {
    pub fn of(&self, kind: StopKind) -> &StopProgress {
        match kind {
            StopKind::Pickup => &self.pickup,
            StopKind::Delivery => &self.delivery,
        }
    }

    fn of_mut(&mut self, kind: StopKind) -> &mut StopProgress {
        match kind {
            StopKind::Pickup => &mut self.pickup,
            StopKind::Delivery => &mut self.delivery,
        }
    }
}

/// A milestone a fix made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Milestone {
    Arrived {
        stop: StopKind,
        at: DateTime<Utc>,
        inferred: bool,
    },
    Departed {
        stop: StopKind,
        at: DateTime<Utc>,
        inferred: bool,
    },
}

/// A load's detention clock, as the store keeps it: set when the truck arrives
/// at a stop (due when detention would start), cleared when it leaves. A load
/// has one at most; the set one fires `load.detention_started` when due if the
/// truck is still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopTimer {
    Set { stop: StopKind, due: DateTime<Utc> },
    Clear,
}

impl StopTimer {
    /// What `milestones` do to the timer, given the stops' appointments and
    /// the load's free minutes; `None` when they leave it as it is.
    pub fn after(
        milestones: &[Milestone],
        appointments: &[Option<DateTime<Utc>>; 2],
        free_minutes: u32,
    ) -> Option<StopTimer> {
        let mut timer = None;
        for milestone in milestones {
            timer = match *milestone {
                // Arrived and left at once (inferred): no clock to run.
                Milestone::Arrived { inferred: true, .. } => timer,
                Milestone::Arrived { stop, at, .. } => Some(StopTimer::Set {
                    stop,
                    due: detention_start(at, appointments[stop.index()], free_minutes),
                }),
                Milestone::Departed { .. } => Some(StopTimer::Clear),
            };
        }
        timer
    }
}

/// When detention starts at a stop: the later of arrival and appointment,
/// plus the free time.
pub fn detention_start(
    arrived_at: DateTime<Utc>,
    appointment: Option<DateTime<Utc>>,
    free_minutes: u32,
) -> DateTime<Utc> {
    appointment.map_or(arrived_at, |a| a.max(arrived_at))
        + Duration::minutes(i64::from(free_minutes))
}

/// The newest folded fix: where the truck last was.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LastFix {
    micros: i64,
    lat: f64,
    lng: f64,
}

/// A load's stops as its actor watches them.
#[derive(Debug, Clone, PartialEq)]
pub struct StopWatch {
    fences: [Option<Geofence>; 2],
    progress: StopsProgress,
    last: Option<LastFix>,
}

impl StopWatch {
    /// Watches `origin` and `destination` from `progress` (as stored); `last`
    /// is the load's newest stored fix, so a fix no newer changes nothing.
    pub fn new(
        origin: &Location,
        destination: &Location,
        progress: StopsProgress,
        last: Option<&GpsFix>,
    ) -> Self {
        StopWatch {
            fences: [Geofence::of(origin), Geofence::of(destination)],
            progress,
            last: last.map(|fix| LastFix {
                micros: fix.timestamp.timestamp_micros(),
                lat: fix.lat,
                lng: fix.lng,
            }),
        }
    }

    pub fn progress(&self) -> &StopsProgress {
        &self.progress
    }

    /// Watches the stops of a load whose origin or destination changed (only
    /// while it was posted: nothing was folded yet).
    pub fn replan(&mut self, origin: &Location, destination: &Location) {
        self.fences = [Geofence::of(origin), Geofence::of(destination)];
    }

    /// Records the ETA just sent in `load.eta_changed`.
    pub fn eta_sent(&mut self, sent: EtaSent) {
        self.progress.eta_sent = Some(sent);
    }

    pub fn fence(&self, kind: StopKind) -> Option<&Geofence> {
        self.fences[kind.index()].as_ref()
    }

    /// Folds a fix in: the milestones it makes (none for a fix no newer than
    /// the newest folded one). The progress may change without a milestone
    /// (a first fix inside): compare [`Self::progress`] before and after.
    pub fn observe(&mut self, fix: &GpsFix) -> Vec<Milestone> {
        let micros = fix.timestamp.timestamp_micros();
        if self.last.is_some_and(|last| micros <= last.micros) {
            return Vec::new();
        }
        let previous = self.last.replace(LastFix {
            micros,
            lat: fix.lat,
            lng: fix.lng,
        });
        let mut milestones = Vec::new();
        for kind in StopKind::BOTH {
            let Some(fence) = self.fences[kind.index()] else {
                continue;
            };
            let progress = self.progress.of_mut(kind);
            observe_stop(kind, &fence, progress, previous, fix, &mut milestones);
        }
        milestones
    }
}

fn observe_stop(
    kind: StopKind,
    fence: &Geofence,
    progress: &mut StopProgress,
    previous: Option<LastFix>,
    fix: &GpsFix,
    milestones: &mut Vec<Milestone>,
) {
    let now = micros(fix.timestamp);
    let distance = fence.metres_to(fix.lat, fix.lng);
    if progress.arrived_at.is_some() {
        if progress.departed_at.is_none() && distance > fence.departure_radius_m() {
            progress.departed_at = Some(now);
            milestones.push(Milestone::Departed {
                stop: kind,
                at: fix.timestamp,
                inferred: false,
            });
        }
        return;
    }
    let moving = fix.speed_mph.is_some_and(|mph| mph > STOPPED_MPH);
    if distance <= fence.radius_m {
        let stopped = fix.speed_mph.is_some_and(|mph| mph <= STOPPED_MPH)
            || progress.first_inside.is_some_and(|first| {
                !moving
                    && !progress.first_inside_moving
                    && now.get() - first.get()
                        >= DWELL_TO_CONFIRM.num_microseconds().unwrap_or(i64::MAX)
            });
        match progress.first_inside {
            _ if stopped => {
                let at = progress.first_inside.unwrap_or(now);
                progress.arrived_at = Some(at);
                progress.first_inside = None;
                progress.first_inside_moving = false;
                milestones.push(Milestone::Arrived {
                    stop: kind,
                    at: time(at).unwrap_or(fix.timestamp),
                    inferred: false,
                });
            }
            None => {
                progress.first_inside = Some(now);
                progress.first_inside_moving = moving;
            }
            // A moving first fix gives way to a still one as the candidate
            // for the two-fix rule; the arrival time stays the first inside.
            Some(_) if progress.first_inside_moving && !moving => {
                progress.first_inside_moving = false;
            }
            Some(_) => {}
        }
        return;
    }
    if distance > fence.departure_radius_m() {
        // Gone without stopping: a drive-by.
        progress.first_inside = None;
        progress.first_inside_moving = false;
    }
    if progress.first_inside.is_none()
        && let Some(previous) = previous
    {
        infer_passage(kind, fence, progress, previous, fix, milestones);
    }
}

/// Two fixes outside the stop, on either side of it: when the straight line
/// between them passes within the arrival radius and their gap, less the
/// drive at 50 mph, leaves 15 minutes at the stop, the truck stopped there.
fn infer_passage(
    kind: StopKind,
    fence: &Geofence,
    progress: &mut StopProgress,
    previous: LastFix,
    fix: &GpsFix,
    milestones: &mut Vec<Milestone>,
) {
    if fence.metres_to(previous.lat, previous.lng) <= fence.radius_m {
        return; // the previous fix was inside: the rules above decided
    }
    // Distances along the segment, in a local flat projection (metres): fine
    // at the scale of a gap between fixes.
    let to_xy = |lat: f64, lng: f64| {
        (
            (lng - fence.lng) * f64::from(fence.metres_per_lng_degree),
            (lat - fence.lat) * METRES_PER_DEGREE,
        )
    };
    let (ax, ay) = to_xy(previous.lat, previous.lng);
    let (bx, by) = to_xy(fix.lat, fix.lng);
    let (dx, dy) = (bx - ax, by - ay);
    let length = (dx * dx + dy * dy).sqrt();
    if length == 0.0 {
        return;
    }
    let along = (-(ax * dx + ay * dy) / (length * length)).clamp(0.0, 1.0);
    let (cx, cy) = (ax + along * dx, ay + along * dy);
    if (cx * cx + cy * cy).sqrt() > fence.radius_m || along <= 0.0 || along >= 1.0 {
        return;
    }
    let metres_per_second = SPARSE_SPEED_MPH * METRES_PER_MILE / 3_600.0;
    let to_stop = Duration::milliseconds((along * length / metres_per_second * 1e3) as i64);
    let from_stop =
        Duration::milliseconds(((1.0 - along) * length / metres_per_second * 1e3) as i64);
    let Some(start) = DateTime::from_timestamp_micros(previous.micros) else {
        return;
    };
    let gap = fix.timestamp - start;
    if gap - to_stop - from_stop < SPARSE_MIN_DWELL {
        return;
    }
    let arrived = start + to_stop;
    let departed = fix.timestamp - from_stop;
    progress.arrived_at = Some(micros(arrived));
    progress.departed_at = Some(micros(departed));
    progress.inferred = true;
    milestones.push(Milestone::Arrived {
        stop: kind,
        at: arrived,
        inferred: true,
    });
    milestones.push(Milestone::Departed {
        stop: kind,
        at: departed,
        inferred: true,
    });
}

/// How an arrival relates to its appointment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalStatus {
    Early,
    OnTime,
    Late,
}

/// The arrival's status and its signed deviation from the appointment in
/// whole minutes (positive: after), judged by the account's thresholds;
/// `None` without an appointment.
pub fn arrival_status(
    arrived_at: DateTime<Utc>,
    appointment: Option<DateTime<Utc>>,
    settings: &StopSettings,
) -> Option<(ArrivalStatus, i64)> {
    let appointment = appointment?;
    let deviation = (arrived_at - appointment).num_seconds().div_euclid(60);
    let status = if deviation > i64::from(settings.late_after_minutes) {
        ArrivalStatus::Late
    } else if deviation < -i64::from(settings.early_before_minutes) {
        ArrivalStatus::Early
    } else {
        ArrivalStatus::OnTime
    };
    Some((status, deviation))
}

#[cfg(test)]
mod tests;
