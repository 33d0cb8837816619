//! The simulated trips: where each goes, and how its driver drives it,
//! keeping the hours-of-service rules its own way (see `eta_accuracy.rs`).

use chrono::{DateTime, Duration, Utc};
use freight::domain::eta::ROAD_CIRCUITY;
use freight::domain::tracking::{FixSource, GpsFix};
use freight::geo::EARTH_RADIUS_MILES;
use rand::Rng;
use rand::rngs::StdRng;

use super::LENGTHS;

pub(crate) fn minutes(rng: &mut StdRng, from: f64, to: f64) -> Duration {
    Duration::seconds((rng.random_range(from..to) * 60.0) as i64)
}

/// The point `miles` along the great circle from `from` at `bearing` (degrees).
pub(crate) fn travel(from: (f64, f64), bearing: f64, miles: f64) -> (f64, f64) {
    let (phi1, lambda1) = (from.0.to_radians(), from.1.to_radians());
    let theta = bearing.to_radians();
    let d = miles / EARTH_RADIUS_MILES;
    let phi2 = (phi1.sin() * d.cos() + phi1.cos() * d.sin() * theta.cos()).asin();
    let lambda2 =
        lambda1 + (theta.sin() * d.sin() * phi1.cos()).atan2(d.cos() - phi1.sin() * phi2.sin());
    (phi2.to_degrees(), lambda2.to_degrees())
}

/// One leg as driven: from a point, along a bearing, this many straight miles.
pub(crate) struct Course {
    from: (f64, f64),
    bearing: f64,
    straight: f64,
}

pub(crate) struct Trip {
    pub(crate) bucket: usize,
    pub(crate) start: DateTime<Utc>,
    pub(crate) courses: Vec<Course>,
    /// Each stop's position: the end of its course.
    pub(crate) stops: Vec<(f64, f64)>,
    pub(crate) dwells: Vec<Duration>,
}

pub(crate) fn trip(rng: &mut StdRng, index: usize) -> Trip {
    let bucket = index % 3;
    let road = rng.random_range(LENGTHS[bucket].0..LENGTHS[bucket].1);
    let count = rng.random_range(2..=4);
    // The first leg runs empty to the pickup: shorter than the rest.
    let weights: Vec<f64> = (0..count)
        .map(|i| rng.random_range(if i == 0 { 0.05..0.2 } else { 0.5..1.5 }))
        .collect();
    let total: f64 = weights.iter().sum();
    let lat = rng.random_range(30.0..45.0);
    let mut at = (lat, rng.random_range(-115.0..-80.0));
    let mut bearing = rng.random_range(0.0..360.0);
    let (mut courses, mut stops) = (Vec::new(), Vec::new());
    for weight in weights {
        let straight = road * weight / total / ROAD_CIRCUITY;
        courses.push(Course {
            from: at,
            bearing,
            straight,
        });
        at = travel(at, bearing, straight);
        stops.push(at);
        bearing += rng.random_range(-60.0..60.0);
    }
    let base = DateTime::from_timestamp(1_780_272_000, 0).unwrap(); // 2026-06-01
    Trip {
        bucket,
        start: base + minutes(rng, 0.0, 7.0 * 24.0 * 60.0),
        courses,
        dwells: (0..count).map(|_| minutes(rng, 30.0, 180.0)).collect(),
        stops,
    }
}

/// What the simulation gives each trip: its fixes and the true arrivals.
pub(crate) struct Driven {
    /// Whether the driver started fresh, not hours into a shift.
    pub(crate) fresh: bool,
    pub(crate) fixes: Vec<GpsFix>,
    pub(crate) arrivals: Vec<DateTime<Utc>>,
    pub(crate) driving: Duration,
    pub(crate) road_miles: f64,
}

/// The simulated driver, keeping the rules its own way.
pub(crate) struct Driver<'r> {
    rng: &'r mut StdRng,
    now: DateTime<Utc>,
    at: (f64, f64),
    driving: Duration,
    since_break: Duration,
    window_from: Option<DateTime<Utc>>,
    /// Where this driver takes its next rest and break.
    rest_after: Duration,
    window_limit: Duration,
    break_after: Duration,
    cruise: (f64, DateTime<Utc>),
    traffic: (f64, DateTime<Utc>),
    to_fuel: f64,
    next_fix: DateTime<Utc>,
    reports_speed: bool,
    total_driving: Duration,
    fixes: Vec<GpsFix>,
}

impl Driver<'_> {
    fn fix(&mut self, speed: f64) {
        let jitter = |rng: &mut StdRng| rng.random_range(-0.0002..0.0002);
        let fix = GpsFix {
            timestamp: self.now,
            lat: self.at.0 + jitter(self.rng),
            lng: self.at.1 + jitter(self.rng),
            speed_mph: self.reports_speed.then_some(speed),
            heading_deg: None,
            source: FixSource::Api,
        };
        self.fixes.push(fix);
    }

    fn new_shift_targets(&mut self) {
        self.rest_after = minutes(self.rng, 9.0 * 60.0, 11.0 * 60.0 - 1.0);
        self.window_limit = minutes(self.rng, 13.0 * 60.0, 14.0 * 60.0 - 1.0);
        self.break_after = minutes(self.rng, 6.0 * 60.0, 8.0 * 60.0 - 1.0);
    }

    /// Not driving for `d`: fixes every 10-20 min, or none (device off).
    fn stopped(&mut self, d: Duration, device_on: bool) {
        let end = self.now + d;
        if device_on && self.next_fix <= self.now {
            self.fix(0.0);
        }
        let mut next = self.now;
        loop {
            next += minutes(self.rng, 10.0, 20.0);
            if next >= end {
                break;
            }
            if device_on && next >= self.next_fix {
                self.now = next;
                self.fix(0.0);
            }
        }
        self.now = end;
        if d >= Duration::minutes(30) {
            self.since_break = Duration::zero();
        }
        if self.next_fix < end {
            self.next_fix = end + minutes(self.rng, 1.0, 5.0);
        }
    }

    fn rest(&mut self) {
        let d = if self.rng.random_bool(0.6) {
            Duration::hours(10)
        } else {
            minutes(self.rng, 11.0 * 60.0, 12.0 * 60.0)
        };
        let device_on = self.rng.random_bool(0.5);
        self.stopped(d, device_on);
        self.driving = Duration::zero();
        self.window_from = None;
        self.new_shift_targets();
    }

    /// A rest, break or fuel stop, if one is due before the next minute.
    fn before_driving(&mut self) {
        let window = self.window_from.map_or(Duration::zero(), |w| self.now - w);
        let break_due = self.since_break >= self.break_after;
        let break_length = Duration::minutes(if self.rng.random_bool(0.7) { 30 } else { 45 });
        // A break that would end past the window is a rest: the rules
        // forbid driving after it anyway.
        if self.driving >= self.rest_after
            || window >= self.window_limit
            || (break_due && window + break_length >= self.window_limit)
        {
            self.rest();
        } else if break_due {
            self.stopped(break_length, true);
        } else if self.to_fuel <= 0.0 {
            let d = minutes(self.rng, 15.0, 20.0);
            self.stopped(d, true);
            self.to_fuel = self.rng.random_range(350.0..550.0);
        }
    }

    fn speed(&mut self) -> f64 {
        if self.now >= self.cruise.1 {
            self.cruise = (
                self.rng.random_range(55.0..65.0),
                self.now + minutes(self.rng, 30.0, 120.0),
            );
        }
        if self.now >= self.traffic.1 && self.rng.random_bool(1.0 / 180.0) {
            self.traffic = (
                self.rng.random_range(15.0..35.0),
                self.now + minutes(self.rng, 10.0, 45.0),
            );
        }
        if self.now < self.traffic.1 {
            return self.traffic.0;
        }
        self.cruise.0
    }

    /// Drives one course to its end, minute by minute.
    fn drive(&mut self, course: &Course) {
        let mut done = 0.0;
        while done < course.straight {
            self.before_driving();
            let mph = self.speed();
            let left_road = (course.straight - done) * ROAD_CIRCUITY;
            let (seconds, road) = if left_road <= mph / 60.0 {
                ((left_road / mph * 3600.0).ceil(), left_road)
            } else {
                (60.0, mph / 60.0)
            };
            let step = Duration::seconds(seconds as i64);
            self.window_from.get_or_insert(self.now);
            self.driving += step;
            self.since_break += step;
            self.total_driving += step;
            self.now += step;
            self.to_fuel -= road;
            done += road / ROAD_CIRCUITY;
            self.at = travel(course.from, course.bearing, done.min(course.straight));
            if self.now >= self.next_fix {
                let reported = mph + self.rng.random_range(-2.0..2.0);
                self.fix(reported);
                self.next_fix = if self.rng.random_bool(0.01) {
                    self.now + minutes(self.rng, 30.0, 90.0)
                } else {
                    self.now + minutes(self.rng, 1.0, 5.0)
                };
            }
        }
    }
}

pub(crate) fn drive(rng: &mut StdRng, trip: &Trip) -> Driven {
    let mut driver = Driver {
        now: trip.start,
        at: trip.courses[0].from,
        driving: Duration::zero(),
        since_break: Duration::zero(),
        window_from: None,
        rest_after: Duration::zero(),
        window_limit: Duration::zero(),
        break_after: Duration::zero(),
        cruise: (60.0, trip.start),
        traffic: (0.0, trip.start),
        to_fuel: rng.random_range(0.0..550.0),
        next_fix: trip.start,
        reports_speed: rng.random_bool(0.8),
        total_driving: Duration::zero(),
        fixes: Vec::new(),
        rng,
    };
    driver.new_shift_targets();
    // Fresh, or hours into the shift before the load's first fix.
    let fresh = !driver.rng.random_bool(0.6);
    if !fresh {
        let driven = minutes(driver.rng, 60.0, 8.5 * 60.0);
        let since_break = minutes(driver.rng, 0.0, 5.5 * 60.0).min(driven);
        let on_duty = minutes(driver.rng, 30.0, 120.0);
        driver.driving = driven;
        driver.since_break = since_break;
        driver.window_from = Some(trip.start - driven - on_duty);
    }
    let mut arrivals = Vec::new();
    for (course, dwell) in trip.courses.iter().zip(&trip.dwells) {
        driver.drive(course);
        arrivals.push(driver.now);
        driver.stopped(*dwell, true);
    }
    let road_miles = trip.courses.iter().map(|c| c.straight).sum::<f64>() * ROAD_CIRCUITY;
    Driven {
        fresh,
        driving: driver.total_driving,
        fixes: driver.fixes,
        arrivals,
        road_miles,
    }
}
