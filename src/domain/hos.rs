//! A driver's hours-of-service clock, inferred from a load's own GPS fixes,
//! and the limits that project it forward.
//!
//! The limits are those of 49 CFR 395.3 for property-carrying drivers:
//! - a shift starts after [`REST`] (10 consecutive hours) off duty;
//! - no driving after the 14th hour ([`WINDOW`]) after the shift began; time
//!   stopped inside the shift does not extend it;
//! - at most [`DRIVING_LIMIT`] (11 hours) of driving in the shift;
//! - no driving once [`BREAK_AFTER`] (8 hours) of driving have passed without
//!   an interruption of [`BREAK`] (30 consecutive minutes); off duty, sleeper
//!   and on duty not driving all count, so any stop that long is the break.
//!
//! Freight sees positions, not duty status, so "stopped" stands for every
//! status but driving: a stop of 30 minutes is the break, and a stop of 10
//! hours is the rest, even if the driver was on duty at a dock for part of it
//! (the fixes cannot tell). The window opens at the first driving seen after
//! a rest: on-duty time before it (inspection, loading) is invisible, so the
//! window shown is short by that much. A clock with no fixes is a fresh
//! driver: freight cannot see the hours driven before the load's first fix.
//!
//! Not modelled, because one load's fixes cannot show them:
//! - the 60/70-hour limits over 7/8 days and the 34-hour restart (395.3(b),
//!   (c)): they need the driver's previous days, on other loads and trucks;
//! - the sleeper-berth split (395.1(g)): a 7-hour and a 3-hour stop look like
//!   any other two stops without knowing which was in the berth;
//! - the adverse-conditions extension (395.1(b)): it is the driver's call,
//!   recorded in the logs, not in the positions.
//!
//! Between two fixes the clock decides how much of the gap was driving:
//! - fixes at most [`DENSE_GAP`] apart, the truck moving at both (reporting
//!   over [`MOVING_MPH`], or, without a speed, the distance since the fix
//!   before faster than that): all driving; stopped at both and not moved
//!   in between: all stopped;
//! - any other gap (a departure, an arrival, no coverage, a device off
//!   overnight) drove only as long as its road miles (great circle × 1.2)
//!   take at [`SPARSE_MPH`] (none if the fixes are within
//!   [`SAME_PLACE_MILES`]: jitter), and stopped the rest, in one piece at the
//!   stopped end: before the driving if the newer fix is moving, after it if
//!   stopped. A departure or an arrival is split, not counted as all
//!   driving, because devices often report a parked truck less often than a
//!   moving one: the minutes between the last fix at a stop and the first on
//!   the road are mostly the stop, and counting them as driving would shorten
//!   every stop seen, a 30-minute break to less than 30. A device back after
//!   a long gap without a speed is taken as moving (it usually comes back
//!   with the ignition): the driving then comes after the stop, which never
//!   shows a driver more rested than the fixes allow.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::eta::ROAD_CIRCUITY;
use super::fix::GpsFix;
use super::timestamp::serde_utc;
use crate::geo::haversine_miles;

/// Driving allowed in a shift.
pub const DRIVING_LIMIT: Duration = Duration::hours(11);
/// Wall time from a shift's start after which the driver may not drive.
pub const WINDOW: Duration = Duration::hours(14);
/// Driving after which a break is due...
pub const BREAK_AFTER: Duration = Duration::hours(8);
/// ...and how long it is.
pub const BREAK: Duration = Duration::minutes(30);
/// Consecutive time off that starts a new shift.
pub const REST: Duration = Duration::hours(10);
/// Fixes at most this far apart show what the truck did between them.
pub const DENSE_GAP: Duration = Duration::minutes(15);
/// Over this a truck is moving.
pub const MOVING_MPH: f64 = 5.0;
/// Fixes closer than this (160 m) are one place seen through GPS jitter:
/// between them the truck did not drive, however long the gap.
pub const SAME_PLACE_MILES: f64 = 0.1;
/// Over a longer gap the truck drove its distance at this speed, and stopped
/// the rest of the time.
pub const SPARSE_MPH: f64 = 50.0;

/// Where a shift stands: the durations the limits count. Both the fold of
/// fixes ([`DriverClock`]) and the planner (`route_eta`) move it forward
/// with [`Shift::drive`] and [`Shift::stop`], so the two apply one set of rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Shift {
    /// Driving since the last rest.
    #[serde(rename = "d", with = "seconds", default)]
    pub driving: Duration,
    /// Driving since the last break (or rest).
    #[serde(rename = "b", with = "seconds", default)]
    pub since_break: Duration,
    /// How long the truck has been stopped, up to now; zero while driving.
    #[serde(rename = "s", with = "seconds", default)]
    pub stopped: Duration,
    /// When the shift's first driving began: the 14-hour window's start.
    /// `None` until the driver drives after a rest.
    #[serde(
        rename = "w",
        with = "chrono::serde::ts_microseconds_option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub window_from: Option<DateTime<Utc>>,
}

impl Shift {
    /// Driving for `d` from `from`.
    pub fn drive(&mut self, from: DateTime<Utc>, d: Duration) {
        if d <= Duration::zero() {
            return;
        }
        self.window_from.get_or_insert(from);
        self.driving += d;
        self.since_break += d;
        self.stopped = Duration::zero();
    }

    /// Stopped (anything but driving) for `d` more.
    pub fn stop(&mut self, d: Duration) {
        if d <= Duration::zero() {
            return;
        }
        self.stopped += d;
        if self.stopped >= BREAK {
            self.since_break = Duration::zero();
        }
        if self.stopped >= REST {
            self.driving = Duration::zero();
            self.window_from = None;
        }
    }

    /// Wall time since the window opened; zero before the shift's first driving.
    pub fn window(&self, now: DateTime<Utc>) -> Duration {
        self.window_from
            .map_or(Duration::zero(), |from| (now - from).max(Duration::zero()))
    }
}

/// The newest fix folded: where the clock continues from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct LastFix {
    #[serde(rename = "t", with = "chrono::serde::ts_microseconds")]
    at: DateTime<Utc>,
    #[serde(rename = "y")]
    lat: f64,
    #[serde(rename = "x")]
    lng: f64,
    /// Moving at that fix: the time after it counts as driving.
    #[serde(rename = "m", default, skip_serializing_if = "std::ops::Not::not")]
    moving: bool,
}

/// A driver's hours-of-service clock, folded from a load's fixes in
/// timestamp order and stored with the load (hence the short field names).
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct DriverClock {
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    last: Option<LastFix>,
    #[serde(rename = "s", default)]
    shift: Shift,
}

impl DriverClock {
    /// Folds one fix; a fix no newer than the newest folded changes nothing.
    pub fn observe(&mut self, fix: &GpsFix) {
        let reported = fix.speed_mph.map(|mph| mph > MOVING_MPH);
        let Some(last) = self.last else {
            self.last = Some(LastFix::of(fix, reported.unwrap_or(false)));
            return;
        };
        let gap = fix.timestamp - last.at;
        if gap <= Duration::zero() {
            return;
        }
        let miles = haversine_miles(last.lat, last.lng, fix.lat, fix.lng);
        let dense = gap <= DENSE_GAP;
        let implied = miles / hours(gap);
        // Whether the truck was moving at the newer fix. After a long gap
        // without a reported speed, the distance says nothing of it: taken
        // as moving, so the stop goes first.
        let newer_moving = reported.unwrap_or(!dense || implied > MOVING_MPH);
        let moving = if dense && last.moving && newer_moving {
            self.shift.drive(last.at, gap);
            true
        } else if dense && !last.moving && !newer_moving && implied <= MOVING_MPH {
            self.shift.stop(gap);
            false
        } else {
            let driving = if miles < SAME_PLACE_MILES {
                Duration::zero()
            } else {
                gap.min(at_speed(miles * ROAD_CIRCUITY, SPARSE_MPH))
            };
            let stopped = gap - driving;
            if newer_moving {
                self.shift.stop(stopped);
                self.shift.drive(last.at + stopped, driving);
            } else {
                self.shift.drive(last.at, driving);
                self.shift.stop(stopped);
            }
            reported.unwrap_or(driving > Duration::zero())
        };
        self.last = Some(LastFix::of(fix, moving));
    }

    /// The time of the newest fix folded.
    pub fn last_fix_at(&self) -> Option<DateTime<Utc>> {
        self.last.map(|last| last.at)
    }

    /// The shift at `now`: the time since the newest fix counts as the truck
    /// was then, driving if it was moving, else stopped. A `now` before that
    /// fix is taken as its time.
    pub fn shift_at(&self, now: DateTime<Utc>) -> Shift {
        let mut shift = self.shift;
        if let Some(last) = self.last {
            let since = (now - last.at).max(Duration::zero());
            if last.moving {
                shift.drive(last.at, since);
            } else {
                shift.stop(since);
            }
        }
        shift
    }

    /// The hours of service at `now`, as the load shows them; `next_rest_at`
    /// is the planner's to fill.
    pub fn at(&self, now: DateTime<Utc>) -> HoursOfService {
        let now = self.last_fix_at().map_or(now, |last| now.max(last));
        let shift = self.shift_at(now);
        HoursOfService {
            driving_minutes: minutes(shift.driving),
            window_minutes: minutes(shift.window(now)),
            since_break_minutes: minutes(shift.since_break),
            next_rest_at: None,
        }
    }
}

impl LastFix {
    fn of(fix: &GpsFix, moving: bool) -> Self {
        LastFix {
            at: fix.timestamp,
            lat: fix.lat,
            lng: fix.lng,
            moving,
        }
    }
}

/// A load's driver's hours of service, inferred from its fixes (never from
/// an ELD): the legal limits are 11 hours of driving, 14 hours of window, and
/// a 30-minute break after 8 hours of driving.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct HoursOfService {
    /// Minutes driven since the last 10-hour rest.
    pub driving_minutes: u32,
    /// Minutes since the shift's first driving after that rest (0 before it).
    pub window_minutes: u32,
    /// Minutes driven since the last stop of 30 minutes or more.
    pub since_break_minutes: u32,
    /// When the ETA's plan has the driver begin the next 10-hour rest; null
    /// when no rest falls before the last stop.
    #[serde(with = "serde_utc::option")]
    #[schema(required = true)]
    pub next_rest_at: Option<DateTime<Utc>>,
}

fn hours(d: Duration) -> f64 {
    d.num_milliseconds() as f64 / 3.6e6
}

/// How long `miles` take at `mph`, to the second.
pub(super) fn at_speed(miles: f64, mph: f64) -> Duration {
    // A year caps nonsense input (a wild fix) short of overflowing time.
    let seconds = (miles / mph * 3600.0).round().clamp(0.0, 3.2e7);
    Duration::seconds(seconds as i64)
}

fn minutes(d: Duration) -> u32 {
    u32::try_from(d.num_minutes().max(0)).unwrap_or(u32::MAX)
}

/// Durations stored as whole seconds.
mod seconds {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(d.num_seconds())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let seconds = i64::deserialize(d)?;
        Duration::try_seconds(seconds).ok_or_else(|| serde::de::Error::custom("duration too long"))
    }
}

#[cfg(test)]
mod tests;
