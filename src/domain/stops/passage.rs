//! One stop's rules for one fix: arrival (stopped inside), departure (past
//! the departure radius) and the passage inferred from sparse fixes on
//! either side (see the module doc of `stops`).

use chrono::{DateTime, Duration, Utc};

use super::geofence::{Geofence, METRES_PER_DEGREE, METRES_PER_MILE};
use super::progress::{StopProgress, micros, time};
use super::{DWELL_TO_CONFIRM, SPARSE_MIN_DWELL, SPARSE_SPEED_MPH, STOPPED_MPH};
use crate::domain::fix::GpsFix;

/// The newest folded fix: where the truck last was.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LastFix {
    pub micros: i64,
    pub lat: f64,
    pub lng: f64,
}

/// What a fix did at one stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Passage {
    Nothing,
    Arrived(DateTime<Utc>),
    Departed(DateTime<Utc>),
    /// Sparse fixes on either side: arrived and left, both inferred.
    Through {
        arrived: DateTime<Utc>,
        departed: DateTime<Utc>,
    },
}

/// Folds `fix` into one stop's `progress`.
pub(super) fn observe(
    fence: &Geofence,
    progress: &mut StopProgress,
    previous: Option<LastFix>,
    fix: &GpsFix,
) -> Passage {
    let now = micros(fix.timestamp);
    let distance = fence.metres_to(fix.lat, fix.lng);
    if progress.arrived_at.is_some() {
        if progress.departed_at.is_none() && distance > fence.departure_radius_m() {
            progress.departed_at = Some(now);
            return Passage::Departed(fix.timestamp);
        }
        return Passage::Nothing;
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
                return Passage::Arrived(time(at).unwrap_or(fix.timestamp));
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
        return Passage::Nothing;
    }
    if distance > fence.departure_radius_m() {
        // Gone without stopping: a drive-by.
        progress.first_inside = None;
        progress.first_inside_moving = false;
    }
    match previous {
        Some(previous) if progress.first_inside.is_none() => {
            infer_passage(fence, progress, previous, fix)
        }
        _ => Passage::Nothing,
    }
}

/// Two fixes outside the stop, on either side of it: when the straight line
/// between them passes within the arrival radius and their gap, less the
/// drive at 50 mph, leaves 15 minutes at the stop, the truck stopped there.
fn infer_passage(
    fence: &Geofence,
    progress: &mut StopProgress,
    previous: LastFix,
    fix: &GpsFix,
) -> Passage {
    if fence.metres_to(previous.lat, previous.lng) <= fence.radius_m {
        return Passage::Nothing; // the previous fix was inside: the rules above decided
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
        return Passage::Nothing;
    }
    let along = (-(ax * dx + ay * dy) / (length * length)).clamp(0.0, 1.0);
    let (cx, cy) = (ax + along * dx, ay + along * dy);
    if (cx * cx + cy * cy).sqrt() > fence.radius_m || along <= 0.0 || along >= 1.0 {
        return Passage::Nothing;
    }
    let metres_per_second = SPARSE_SPEED_MPH * METRES_PER_MILE / 3_600.0;
    let to_stop = Duration::milliseconds((along * length / metres_per_second * 1e3) as i64);
    let from_stop =
        Duration::milliseconds(((1.0 - along) * length / metres_per_second * 1e3) as i64);
    let Some(start) = DateTime::from_timestamp_micros(previous.micros) else {
        return Passage::Nothing;
    };
    let gap = fix.timestamp - start;
    if gap - to_stop - from_stop < SPARSE_MIN_DWELL {
        return Passage::Nothing;
    }
    let arrived = start + to_stop;
    let departed = fix.timestamp - from_stop;
    progress.arrived_at = Some(micros(arrived));
    progress.departed_at = Some(micros(departed));
    progress.inferred = true;
    Passage::Through { arrived, departed }
}
