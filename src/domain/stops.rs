//! A load's stops as freight watches them: geofences, and the arrival,
//! departure and skip milestones its fixes make, in timestamp order.
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
//! - **In order**: the stops are visited in sequence. While the truck is at a
//!   stop no other stop is arrived at; a fix makes at most one arrival (the
//!   earliest stop it shows), and an arrival at a later stop marks the stops
//!   before it that were never arrived at `skipped`. A stop skipped by a
//!   client is not watched.
//! - Fixes are folded in timestamp order: a fix no newer than the newest folded
//!   one is stored but changes nothing here.
//!
//! This is pure: no clock, no storage. The load's actor holds a [`StopWatch`],
//! folds admitted fixes into it, and stores its [`StopsProgress`] with the
//! points that changed it.

mod geofence;
mod passage;
mod progress;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

pub use geofence::{Geofence, PlacedBy};
use passage::{LastFix, Passage};
pub use progress::{Micros, StopKey, StopProgress, StopsProgress};

use super::account::StopSettings;
use super::eta::EtaSent;
use super::fix::GpsFix;
use super::ids::StopId;
use super::stop_etas::RouteStop;
use super::stop_plan::{Appointment, Stop};
pub use super::stop_plan::{StopKind, StopRef};

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

/// A milestone a fix made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Milestone {
    Arrived {
        stop: StopRef,
        at: DateTime<Utc>,
        inferred: bool,
    },
    Departed {
        stop: StopRef,
        at: DateTime<Utc>,
        inferred: bool,
    },
    /// The truck arrived at a later stop (at `at`) without arriving here.
    Skipped { stop: StopRef, at: DateTime<Utc> },
}

impl Milestone {
    pub fn stop(&self) -> &StopRef {
        match self {
            Milestone::Arrived { stop, .. }
            | Milestone::Departed { stop, .. }
            | Milestone::Skipped { stop, .. } => stop,
        }
    }
}

/// A load's detention clock, as the store keeps it: set when the truck arrives
/// at a stop (due when detention would start), cleared when it leaves. A load
/// has one at most; the set one fires `load.detention_started` when due if the
/// truck is still there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopTimer {
    Set { stop: StopKey, due: DateTime<Utc> },
    Clear,
}

/// When detention starts at a stop: the later of arrival and appointment
/// (a window's start), plus the free time.
pub fn detention_start(
    arrived_at: DateTime<Utc>,
    appointment: Option<DateTime<Utc>>,
    free_minutes: u32,
) -> DateTime<Utc> {
    appointment.map_or(arrived_at, |a| a.max(arrived_at))
        + Duration::minutes(i64::from(free_minutes))
}

/// One watched stop: what the plan says of it, as the rules need it.
#[derive(Debug, Clone, PartialEq)]
struct Watched {
    stop: StopRef,
    fence: Option<Geofence>,
    appointment: Option<DateTime<Utc>>,
    window: Option<Appointment>,
    dwell: Duration,
    free_minutes: u32,
    /// Skipped by a client: not watched.
    skipped_by_client: bool,
}

/// A load's stops as its actor watches them.
#[derive(Debug, Clone, PartialEq)]
pub struct StopWatch {
    watched: Vec<Watched>,
    progress: StopsProgress,
    last: Option<LastFix>,
}

impl StopWatch {
    /// Watches `stops` from `progress` (as stored) with the load's free
    /// minutes; `last` is the load's newest stored fix, so a fix no newer
    /// changes nothing.
    pub fn new(
        stops: &[Stop],
        free_minutes: u32,
        progress: &StopsProgress,
        last: Option<&GpsFix>,
    ) -> Self {
        let mut watch = StopWatch {
            watched: Vec::new(),
            progress: StopsProgress::default(),
            last: last.map(|fix| LastFix {
                micros: fix.timestamp.timestamp_micros(),
                lat: fix.lat,
                lng: fix.lng,
            }),
        };
        watch.progress.driver = progress.driver;
        watch.replan_from(stops, free_minutes, progress);
        watch
    }

    /// Watches the stops of a load whose plan changed: progress follows
    /// each stop by its id.
    pub fn replan(&mut self, stops: &[Stop], free_minutes: u32) {
        let progress = self.progress.clone();
        self.replan_from(stops, free_minutes, &progress);
    }

    fn replan_from(&mut self, stops: &[Stop], free_minutes: u32, progress: &StopsProgress) {
        let mut entries = Vec::with_capacity(stops.len());
        self.watched = stops
            .iter()
            .enumerate()
            .map(|(index, stop)| {
                entries.push((StopKey::Id(stop.id.clone()), progress.of(stops, index)));
                Watched {
                    stop: StopRef {
                        id: stop.id.clone(),
                        kind: stop.kind,
                        sequence: index as u32 + 1,
                        last: index + 1 == stops.len(),
                        appointment: stop.appointment,
                    },
                    fence: Geofence::of(&stop.location),
                    appointment: stop.appointment_start(),
                    window: stop.appointment,
                    dwell: stop.planned_dwell(),
                    free_minutes: stop.free_minutes(free_minutes),
                    skipped_by_client: stop.skipped_at.is_some(),
                }
            })
            .collect();
        self.progress.stops = entries;
    }

    pub fn progress(&self) -> &StopsProgress {
        &self.progress
    }

    /// The stops' progress, in order.
    pub fn stops(&self) -> impl Iterator<Item = (&StopRef, &StopProgress)> {
        self.watched
            .iter()
            .zip(&self.progress.stops)
            .map(|(w, (_, p))| (&w.stop, p))
    }

    pub fn len(&self) -> usize {
        self.watched.len()
    }

    pub fn is_empty(&self) -> bool {
        self.watched.is_empty()
    }

    /// The stops the truck has arrived at: an edit may not change them.
    pub fn frozen(&self) -> Vec<StopId> {
        self.stops()
            .filter(|(_, p)| p.arrived_at.is_some())
            .map(|(s, _)| s.id.clone())
            .collect()
    }

    /// The place of the stop the truck is at or heading to (the first not
    /// departed or skipped), `None` once every stop is.
    pub fn current(&self) -> Option<usize> {
        self.watched
            .iter()
            .zip(&self.progress.stops)
            .position(|(w, (_, p))| !p.done() && !w.skipped_by_client)
    }

    pub fn fence(&self, index: usize) -> Option<&Geofence> {
        self.watched.get(index)?.fence.as_ref()
    }

    pub fn stop(&self, index: usize) -> Option<&StopRef> {
        self.watched.get(index).map(|w| &w.stop)
    }

    pub fn index_of(&self, key: &StopKey) -> Option<usize> {
        let len = self.watched.len();
        self.watched.iter().position(|w| match key {
            StopKey::Id(id) => *id == w.stop.id,
            StopKey::Legacy(StopKind::Pickup) => w.stop.sequence == 1,
            StopKey::Legacy(StopKind::Delivery) => w.stop.sequence as usize == len,
        })
    }

    pub fn appointment(&self, index: usize) -> Option<DateTime<Utc>> {
        self.watched.get(index)?.appointment
    }

    /// Records the ETA just sent in `load.eta_changed` for a stop.
    pub fn eta_sent(&mut self, index: usize, sent: EtaSent) {
        if let Some((_, progress)) = self.progress.stops.get_mut(index) {
            progress.eta_sent = Some(sent);
        }
    }

    /// Sets the driver's clock stored with the progress.
    pub fn set_driver(&mut self, driver: super::hos::DriverClock) {
        self.progress.driver = Some(driver);
    }

    /// Folds a fix in: the milestones it makes (none for a fix no newer than
    /// the newest folded one), and whether the progress changed (it may
    /// without a milestone: a first fix inside).
    pub fn observe(&mut self, fix: &GpsFix) -> (Vec<Milestone>, bool) {
        let micros = fix.timestamp.timestamp_micros();
        if self.last.is_some_and(|last| micros <= last.micros) {
            return (Vec::new(), false);
        }
        let previous = self.last.replace(LastFix {
            micros,
            lat: fix.lat,
            lng: fix.lng,
        });
        let mut milestones = Vec::new();
        let mut changed = false;
        let Some(first) = self.current() else {
            return (milestones, false);
        };
        for index in first..self.watched.len() {
            let watched = &self.watched[index];
            let progress = &mut self.progress.stops[index].1;
            let Some(fence) = watched.fence.filter(|_| !watched.skipped_by_client) else {
                continue;
            };
            if progress.done() {
                continue;
            }
            let was = *progress;
            let passage = passage::observe(&fence, progress, previous, fix);
            changed |= *progress != was;
            let stop = watched.stop.clone();
            match passage {
                Passage::Nothing if was.at_stop() => return (milestones, changed),
                Passage::Nothing => {}
                Passage::Departed(at) => milestones.push(Milestone::Departed {
                    stop,
                    at,
                    inferred: false,
                }),
                Passage::Arrived(at) => {
                    self.skip_before(index, at, &mut milestones);
                    milestones.push(Milestone::Arrived {
                        stop,
                        at,
                        inferred: false,
                    });
                    // At the stop: nothing later is arrived at meanwhile.
                    return (milestones, true);
                }
                Passage::Through { arrived, departed } => {
                    self.skip_before(index, arrived, &mut milestones);
                    milestones.push(Milestone::Arrived {
                        stop: stop.clone(),
                        at: arrived,
                        inferred: true,
                    });
                    milestones.push(Milestone::Departed {
                        stop,
                        at: departed,
                        inferred: true,
                    });
                }
            }
        }
        (milestones, changed)
    }

    /// Marks the stops before `index` never arrived at skipped, as of `at`.
    fn skip_before(&mut self, index: usize, at: DateTime<Utc>, milestones: &mut Vec<Milestone>) {
        for (watched, (_, progress)) in self.watched[..index]
            .iter()
            .zip(&mut self.progress.stops[..index])
        {
            if progress.arrived_at.is_none() && progress.skipped_at.is_none() {
                progress.skipped_at = Some(progress::micros(at));
                progress.first_inside = None;
                if !watched.skipped_by_client {
                    milestones.push(Milestone::Skipped {
                        stop: watched.stop.clone(),
                        at,
                    });
                }
            }
        }
    }

    /// What `milestones` do to the detention clock; `None` when they leave
    /// it as it is.
    pub fn timer_after(&self, milestones: &[Milestone]) -> Option<StopTimer> {
        let mut timer = None;
        for milestone in milestones {
            timer = match milestone {
                // Arrived and left at once (inferred): no clock to run.
                Milestone::Arrived { inferred: true, .. } | Milestone::Skipped { .. } => timer,
                Milestone::Arrived { stop, at, .. } => {
                    let watched = &self.watched[stop.sequence as usize - 1];
                    Some(StopTimer::Set {
                        stop: StopKey::Id(stop.id.clone()),
                        due: detention_start(*at, watched.appointment, watched.free_minutes),
                    })
                }
                Milestone::Departed { .. } => Some(StopTimer::Clear),
            };
        }
        timer
    }

    /// The stops as the ETA plans them. `picked_up`: the load is
    /// `in_transit`, so the truck has left its first stop whether or not a
    /// fix showed it (tracking may start on the road).
    pub fn route(&self, picked_up: bool) -> Vec<RouteStop> {
        self.watched
            .iter()
            .zip(&self.progress.stops)
            .enumerate()
            .map(|(index, (w, (_, p)))| RouteStop {
                id: w.stop.id.clone(),
                kind: w.stop.kind,
                target: w.fence.map(|f| (f.lat, f.lng)),
                own_coordinates: w
                    .fence
                    .is_some_and(|f| f.placed_by == PlacedBy::Coordinates),
                appointment: w.window,
                dwell: w.dwell,
                arrived_at: p.arrived(),
                done: p.done() || w.skipped_by_client || left_by_status(index, p, picked_up),
            })
            .collect()
    }

    /// The appointment (time or window) of the stop at `index`.
    pub fn window(&self, index: usize) -> Option<Appointment> {
        self.watched.get(index)?.window
    }

    /// Free minutes at the stop at `index`.
    pub fn free_minutes(&self, index: usize) -> u32 {
        self.watched.get(index).map_or(0, |w| w.free_minutes)
    }
}

/// Whether the stop at `index` is behind a truck whose load is `in_transit`
/// (`picked_up`) although no fix showed it leave: the first stop, never
/// arrived at.
pub fn left_by_status(index: usize, progress: &StopProgress, picked_up: bool) -> bool {
    picked_up && index == 0 && progress.arrived_at.is_none()
}

/// How an arrival relates to its appointment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalStatus {
    Early,
    OnTime,
    Late,
}

/// The arrival's status and its signed deviation in whole minutes (positive:
/// after). Against an appointment time, judged by the account's thresholds;
/// against a window, early before its start and late after its end, the
/// deviation counted from the edge passed (0 inside). `None` without an
/// appointment.
pub fn arrival_status(
    arrived_at: DateTime<Utc>,
    appointment: Option<Appointment>,
    settings: &StopSettings,
) -> Option<(ArrivalStatus, i64)> {
    let appointment = appointment?;
    let minutes = |from: DateTime<Utc>| (arrived_at - from).num_seconds().div_euclid(60);
    if let Some(end) = appointment.end {
        return Some(if arrived_at < appointment.start {
            (ArrivalStatus::Early, minutes(appointment.start))
        } else if arrived_at > end {
            (ArrivalStatus::Late, minutes(end).max(1))
        } else {
            (ArrivalStatus::OnTime, 0)
        });
    }
    let deviation = minutes(appointment.start);
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
