//! The ETA of each upcoming stop of a load, from its latest fix: the next
//! stop's from the truck's position, each later one chained through the
//! planned dwell at the stops before it and the drive between them, with the
//! driver's breaks and rests where the hours-of-service rules put them
//! (`route_eta`). Late risk per stop: the ETA past the window's end, or more
//! than 15 minutes past an appointment time.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::eta::LATE_RISK_AFTER;
use super::fix::GpsFix;
use super::hos::{DriverClock, HoursOfService};
use super::ids::StopId;
use super::route_eta::{self, DriveModel, Leg};
use super::stop_plan::{Appointment, StopKind};

/// Within this far of a stop's centre the ETA is the latest fix's time.
pub const ARRIVED_MILES: f64 = 1.0;

/// One stop of the route as the ETA needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteStop {
    pub id: StopId,
    pub kind: StopKind,
    /// The geofence's centre (latitude, longitude); `None`: a ZIP freight
    /// does not know, so no ETA, and the legs run past it.
    pub target: Option<(f64, f64)>,
    /// The target is the stop's own coordinates, not its ZIP's centroid.
    pub own_coordinates: bool,
    pub appointment: Option<Appointment>,
    pub dwell: Duration,
    pub arrived_at: Option<DateTime<Utc>>,
    /// Departed or skipped: behind the truck.
    pub done: bool,
}

/// Where the driving speed comes from (`tracking.eta_basis`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EtaBasis {
    /// The account's `driving_mph` setting.
    #[default]
    AccountSetting,
    /// The account's own average moving speed over its delivered loads.
    AccountHistory,
    /// That average on the load's lane (origin state to destination state).
    LaneHistory,
}

/// The speed and road distance the ETA plans with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    pub mph: f64,
    /// Road miles per great-circle mile.
    pub circuity: f64,
    pub basis: EtaBasis,
}

impl Speed {
    pub const DEFAULT: Speed = Speed {
        mph: route_eta::DEFAULT_MPH,
        circuity: super::eta::ROAD_CIRCUITY,
        basis: EtaBasis::AccountSetting,
    };
}

impl Default for Speed {
    fn default() -> Self {
        Speed::DEFAULT
    }
}

/// One upcoming stop's estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopEta {
    /// The stop's place in the route.
    pub index: usize,
    pub at: DateTime<Utc>,
    pub late_risk: bool,
}

/// The route's estimates as of the latest fix.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteEta {
    /// Upcoming stops with a known place, in order.
    pub stops: Vec<StopEta>,
    pub hours_of_service: HoursOfService,
    /// Road miles from the truck to the next delivery.
    pub miles_to_delivery: Option<f64>,
}

impl RouteEta {
    /// The next delivery's estimate: what `tracking.eta` shows.
    pub fn next_delivery(&self, route: &[RouteStop]) -> Option<&StopEta> {
        self.stops
            .iter()
            .find(|s| route[s.index].kind == StopKind::Delivery)
    }
}

/// Whether an ETA puts a stop at risk of being late.
pub fn late_risk(eta: DateTime<Utc>, appointment: Option<Appointment>) -> bool {
    appointment.is_some_and(|a| match a.end {
        Some(end) => eta > end,
        None => eta > a.start + LATE_RISK_AFTER,
    })
}

/// The estimates of `route`'s upcoming stops from the latest of `recent`
/// (newest first), with the driver's clock folded so far (`None`: a fresh
/// driver). `None` without a fix or without an upcoming stop.
pub fn estimate(
    recent: &[GpsFix],
    route: &[RouteStop],
    driver: Option<&DriverClock>,
    team: bool,
    speed: &Speed,
) -> Option<RouteEta> {
    let latest = recent.first()?;
    let first = route.iter().position(|s| !s.done)?;
    let mut clock = driver.copied().unwrap_or_default();
    clock.observe(latest);
    let start = latest.timestamp;
    let mut from = (latest.lat, latest.lng);
    let mut legs = Vec::new();
    let mut indices = Vec::new();
    // At a stop: the rest of its dwell comes before the next leg.
    let mut wait = Duration::zero();
    for (index, stop) in route.iter().enumerate().skip(first) {
        if stop.done {
            continue;
        }
        if let Some(arrived) = stop.arrived_at {
            wait = (arrived + stop.dwell - start).max(Duration::zero());
            if let Some(target) = stop.target {
                from = target;
            }
            continue;
        }
        let Some(to) = stop.target else { continue };
        let straight = crate::geo::haversine_miles(from.0, from.1, to.0, to.1);
        let miles = if straight <= ARRIVED_MILES {
            0.0
        } else {
            straight * speed.circuity
        };
        legs.push(Leg {
            road_miles: miles,
            dwell: stop.dwell,
        });
        indices.push(index);
        from = to;
    }
    // Nothing after the last stop is planned.
    legs.last_mut()?.dwell = Duration::zero();
    let model = DriveModel {
        mph: speed.mph,
        hours_of_service: true,
        team,
    };
    // The dwell left at the current stop is driving-free time before the
    // first leg: a leg of no miles that ends after it.
    let plan = if wait > Duration::zero() {
        let mut with_wait = vec![Leg {
            road_miles: 0.0,
            dwell: wait,
        }];
        with_wait.extend(&legs);
        let mut plan = route_eta::plan(start, &clock, &with_wait, &model);
        plan.arrivals.remove(0);
        plan
    } else {
        route_eta::plan(start, &clock, &legs, &model)
    };
    let stops = indices
        .iter()
        .zip(&plan.arrivals)
        .map(|(&index, &at)| StopEta {
            index,
            at,
            late_risk: late_risk(at, route[index].appointment),
        })
        .collect();
    let mut hours_of_service = clock.at(start);
    hours_of_service.next_rest_at = plan.next_rest_at;
    let delivery = indices
        .iter()
        .position(|&i| route[i].kind == StopKind::Delivery);
    Some(RouteEta {
        stops,
        hours_of_service,
        miles_to_delivery: delivery.map(|d| legs[..=d].iter().map(|l| l.road_miles).sum()),
    })
}

#[cfg(test)]
mod tests;
