//! The ETA at each remaining stop of a load, chained: drive each leg at the
//! model's speed, spend the planned dwell at each stop, and stop the driver
//! where the hours-of-service rules ([`super::hos`]) would.
//!
//! The plan drives as a driver who runs to the limits would:
//! - a 30-minute break when 8 hours of driving since the last one are up;
//! - a 10-hour rest when 11 hours of driving or the 14-hour window are up,
//!   or when a break due now would leave no window to drive in (the rest is
//!   the break too);
//! - a break or rest counts the time the truck has already been stopped (a
//!   truck stopped 6 hours when the plan starts rests 4 more);
//! - a dwell counts as stopped: it runs the window, is the break if it lasts
//!   30 minutes, and the rest if it lasts 10 hours, as the clock that read the
//!   fixes would count it;
//! - breaks and rests come only before more driving: none after the last stop;
//! - a driver already stopped (when the plan starts, or at the end of a dwell)
//!   rests there rather than driving on to rest later, when that brings the
//!   last stop sooner: the rest counts the time already stopped. A truck
//!   parked 3 hours, 13 h 30 min into its window, with 5 hours left to
//!   drive, is planned to rest 7 more hours there and arrive in 12, not to
//!   drive 30 minutes, rest 10 hours and arrive in 15. Both ways are played
//!   out to the last stop (taking stops only when due); the sooner is kept.
//!
//! A team (two drivers) never stops for a 10-hour rest: one drives while the
//! other is off duty in the sleeper, and each driver's own limits are met at
//! the swaps. It still stops 30 minutes every 8 hours of driving: a team
//! truck stops to swap drivers and to fuel, and the break rule applies to
//! each driver. Without hours of service, the plan is today's: driving and
//! dwell, no stops of the driver's own.

use chrono::{DateTime, Duration, Utc};

use super::hos::{BREAK, BREAK_AFTER, DRIVING_LIMIT, DriverClock, REST, Shift, WINDOW, at_speed};
use crate::geo::haversine_miles;

/// The speed an account plans with unless it says otherwise: a long-haul
/// average that allows for traffic, towns and fuel stops.
pub const DEFAULT_MPH: f64 = 50.0;

/// One leg of the remaining route: to the next stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Leg {
    pub road_miles: f64,
    /// Planned time at the stop this leg ends at, after arriving (zero for
    /// the last stop: nothing after it is planned).
    pub dwell: Duration,
}

/// How the plan drives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriveModel {
    /// Average driving speed (below 1 mph is taken as 1).
    pub mph: f64,
    /// Whether breaks and rests are planned; `false` is today's model.
    pub hours_of_service: bool,
    /// Two drivers: breaks, but no 10-hour rests.
    pub team: bool,
}

/// The plan's arrivals and the driver's next rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// One per leg: the arrival at its stop.
    pub arrivals: Vec<DateTime<Utc>>,
    /// When the plan has the driver begin a 10-hour rest, the first one
    /// before the last stop (a break is not shown: half an hour moves no
    /// dispatcher's plan; a rest moves it by a night). A driver who must rest
    /// before driving on begins it at `start`, counting the time already
    /// stopped toward the 10 hours. A dwell of 10 hours is not shown: it is
    /// the stop's, not the driver's.
    pub next_rest_at: Option<DateTime<Utc>>,
}

/// Road miles between two positions (latitude, longitude): the great circle
/// times `circuity` (`super::eta::ROAD_CIRCUITY`, 1.2, for US long haul).
pub fn road_miles(from: (f64, f64), to: (f64, f64), circuity: f64) -> f64 {
    haversine_miles(from.0, from.1, to.0, to.1) * circuity
}

/// The plan of `legs` from `start`, with the driver's clock as of `start`
/// (a clock without fixes is a fresh driver).
pub fn plan(start: DateTime<Utc>, clock: &DriverClock, legs: &[Leg], model: &DriveModel) -> Plan {
    let mut run = Run {
        now: start,
        shift: clock.shift_at(start),
        model: *model,
        next_rest_at: None,
    };
    let arrivals = (0..legs.len())
        .map(|i| {
            if run.rest_here_is_sooner(&legs[i..]) {
                run.rest();
            }
            run.leg(&legs[i])
        })
        .collect();
    Plan {
        arrivals,
        next_rest_at: run.next_rest_at,
    }
}

/// The plan as it runs.
#[derive(Clone)]
struct Run {
    now: DateTime<Utc>,
    shift: Shift,
    model: DriveModel,
    next_rest_at: Option<DateTime<Utc>>,
}

impl Run {
    /// Drives a leg and dwells at its stop; the arrival there.
    fn leg(&mut self, leg: &Leg) -> DateTime<Utc> {
        self.drive(at_speed(leg.road_miles.max(0.0), self.model.mph.max(1.0)));
        let arrival = self.now;
        self.stopped(leg.dwell);
        arrival
    }

    /// Whether a driver stopped now, before driving `legs`, reaches their
    /// last stop sooner by resting here than by driving on to rest later.
    /// Both are played out, the rest of the way taking stops only when due.
    fn rest_here_is_sooner(&self, legs: &[Leg]) -> bool {
        let in_shift = self.shift.driving > Duration::zero() || self.shift.window_from.is_some();
        if !self.model.hours_of_service
            || self.model.team
            || self.shift.stopped <= Duration::zero()
            || !in_shift
        {
            return false;
        }
        let finish = |mut run: Run| legs.iter().map(|leg| run.leg(leg)).last();
        let mut resting = self.clone();
        resting.rest();
        finish(resting) < finish(self.clone())
    }

    fn rest(&mut self) {
        self.next_rest_at.get_or_insert(self.now);
        self.stopped(REST - self.shift.stopped);
    }

    /// Drives `left`, stopping where the rules say.
    fn drive(&mut self, mut left: Duration) {
        while left > Duration::zero() {
            let chunk = if self.model.hours_of_service {
                self.stop_if_due();
                self.may_drive()
            } else {
                left
            };
            let chunk = chunk.min(left);
            if chunk <= Duration::zero() {
                continue;
            }
            self.shift.drive(self.now, chunk);
            self.now += chunk;
            left -= chunk;
        }
    }

    /// Takes the rest or the break due before driving on, if any.
    fn stop_if_due(&mut self) {
        let window = self.shift.window(self.now);
        let break_due = self.shift.since_break >= BREAK_AFTER;
        let break_left = (BREAK - self.shift.stopped).max(Duration::zero());
        let rest_due = self.shift.driving >= DRIVING_LIMIT
            || window >= WINDOW
            || (break_due && window + break_left >= WINDOW);
        if rest_due && !self.model.team {
            self.rest();
        } else if break_due {
            self.stopped(break_left);
        }
    }

    /// How long the driver may drive from now before the next stop is due.
    fn may_drive(&self) -> Duration {
        let to_break = BREAK_AFTER - self.shift.since_break;
        if self.model.team {
            return to_break;
        }
        let to_limit = DRIVING_LIMIT - self.shift.driving;
        let to_window = WINDOW - self.shift.window(self.now);
        to_break.min(to_limit).min(to_window)
    }

    fn stopped(&mut self, d: Duration) {
        let d = d.max(Duration::zero());
        self.shift.stop(d);
        self.now += d;
    }
}

#[cfg(test)]
mod tests;
