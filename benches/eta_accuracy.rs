//! How far off a load's ETAs are on long trips: today's model against the
//! chained plan with hours of service (`domain::route_eta`), on simulated
//! trips whose drivers keep the rules their own way.
//!
//!   cargo bench --bench eta_accuracy             # 300 trips
//!   TRIPS=1000 SEED=7 cargo bench --bench eta_accuracy
//!
//! (`cargo test --bench eta_accuracy` runs the same, unoptimised, in seconds.)
//!
//! Each trip starts at an origin and drives to 2-4 stops (a pickup, then a
//! chain of deliveries), along great circles between them at road speed ÷ 1.2.
//! The driver is not the model's: cruise at 55-65 mph, slow-downs of 15-35
//! mph, fuel stops of 15-20 min every 350-550 mi, a break of 30 min (sometimes
//! 45) somewhere between 6 and 8 h of driving, a rest of 10 h (sometimes 11-12)
//! somewhere between 9 and 11 h of driving or before the 14th hour, 30 min to
//! 3 h at each stop, and a clock that may start hours into its shift (freight
//! never sees those hours). The device reports every 1-5 min while moving,
//! every 10-20 min while stopped, is sometimes silent for 30-90 min, and is
//! off during half the rests; a fifth of the devices send no speed.
//!
//! Every hour of each trip, every remaining stop gets an ETA from both models,
//! as of the newest fix, and its error against the simulated arrival.

#[path = "support/knobs.rs"]
mod knobs;

use chrono::{DateTime, Duration, Utc};
use freight::domain::eta::{self, ROAD_CIRCUITY};
use freight::domain::hos::DriverClock;
use freight::domain::route_eta::{self, DEFAULT_MPH, DriveModel, Leg};
use freight::domain::tracking::{FixSource, GpsFix};
use freight::geo::EARTH_RADIUS_MILES;
use knobs::env_or;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The dwell both models plan at a stop: the 2-hour loading standard.
const PLANNED_DWELL: Duration = Duration::hours(2);
const BUCKETS: [&str; 3] = ["< 300 mi", "300-800 mi", "> 800 mi"];
const LENGTHS: [(f64, f64); 3] = [(80.0, 300.0), (300.0, 800.0), (800.0, 2_500.0)];

fn minutes(rng: &mut StdRng, from: f64, to: f64) -> Duration {
    Duration::seconds((rng.random_range(from..to) * 60.0) as i64)
}

fn hours_of(d: Duration) -> f64 {
    d.num_seconds() as f64 / 3600.0
}

/// The point `miles` along the great circle from `from` at `bearing` (degrees).
fn travel(from: (f64, f64), bearing: f64, miles: f64) -> (f64, f64) {
    let (phi1, lambda1) = (from.0.to_radians(), from.1.to_radians());
    let theta = bearing.to_radians();
    let d = miles / EARTH_RADIUS_MILES;
    let phi2 = (phi1.sin() * d.cos() + phi1.cos() * d.sin() * theta.cos()).asin();
    let lambda2 =
        lambda1 + (theta.sin() * d.sin() * phi1.cos()).atan2(d.cos() - phi1.sin() * phi2.sin());
    (phi2.to_degrees(), lambda2.to_degrees())
}

/// One leg as driven: from a point, along a bearing, this many straight miles.
struct Course {
    from: (f64, f64),
    bearing: f64,
    straight: f64,
}

struct Trip {
    bucket: usize,
    start: DateTime<Utc>,
    courses: Vec<Course>,
    /// Each stop's position: the end of its course.
    stops: Vec<(f64, f64)>,
    dwells: Vec<Duration>,
}

fn trip(rng: &mut StdRng, index: usize) -> Trip {
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
struct Driven {
    /// Whether the driver started fresh, not hours into a shift.
    fresh: bool,
    fixes: Vec<GpsFix>,
    arrivals: Vec<DateTime<Utc>>,
    driving: Duration,
    road_miles: f64,
}

/// The simulated driver, keeping the rules its own way.
struct Driver<'r> {
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

fn drive(rng: &mut StdRng, trip: &Trip) -> Driven {
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

/// The three models' ETAs at every remaining stop, as of the newest fix.
#[derive(Clone, Copy)]
enum Model {
    Today,
    NoHos,
    Hos,
}

const MODELS: [Model; 3] = [Model::Today, Model::NoHos, Model::Hos];

#[derive(Default, Clone, Copy)]
struct Tally {
    etas: usize,
    abs: [f64; 3],
    signed: [f64; 3],
}

impl Tally {
    fn mae(&self, m: Model) -> f64 {
        self.abs[m as usize] / self.etas.max(1) as f64
    }

    fn bias(&self, m: Model) -> f64 {
        self.signed[m as usize] / self.etas.max(1) as f64
    }
}

/// Today's model: `eta::estimate` to the model's next stop, then each later
/// stop at the same assumed speed over its road miles, after the planned dwell.
fn today(recent: &[GpsFix], trip: &Trip, first: usize) -> Vec<DateTime<Utc>> {
    let Some(next) = eta::estimate(recent, trip.stops[first]) else {
        return Vec::new();
    };
    let mut at = next.at;
    let mut etas = vec![at];
    for pair in trip.stops[first..].windows(2) {
        let miles = route_eta::road_miles(pair[0], pair[1], ROAD_CIRCUITY);
        at += PLANNED_DWELL + Duration::seconds((miles / next.assumed_mph * 3600.0) as i64);
        etas.push(at);
    }
    etas
}

/// The new model: the plan from the newest fix, with the clock its fixes
/// folded; at a stop, what is left of its planned dwell comes first.
fn planned(
    clock: &DriverClock,
    latest: &GpsFix,
    trip: &Trip,
    first: usize,
    dwelling_since: Option<DateTime<Utc>>,
    hours_of_service: bool,
) -> Vec<DateTime<Utc>> {
    let mut legs = Vec::new();
    if let Some(arrived) = dwelling_since {
        let left = (PLANNED_DWELL - (latest.timestamp - arrived)).max(Duration::zero());
        legs.push(Leg {
            road_miles: 0.0,
            dwell: left,
        });
    }
    let mut from = (latest.lat, latest.lng);
    for (i, stop) in trip.stops.iter().enumerate().skip(first) {
        legs.push(Leg {
            road_miles: route_eta::road_miles(from, *stop, ROAD_CIRCUITY),
            // None planned after the last stop.
            dwell: PLANNED_DWELL * i32::from(i + 1 < trip.stops.len()),
        });
        from = *stop;
    }
    let model = DriveModel {
        mph: DEFAULT_MPH,
        hours_of_service,
        team: false,
    };
    let plan = route_eta::plan(latest.timestamp, clock, &legs, &model);
    let skip = usize::from(dwelling_since.is_some());
    plan.arrivals[skip..].to_vec()
}

/// Samples one trip every hour into its bucket's tallies: [next stop,
/// later stops, all stops].
fn sample(trip: &Trip, driven: &Driven, tallies: &mut [Tally; 3]) {
    let mut clock = DriverClock::default();
    let mut folded = 0;
    let last = *driven.arrivals.last().unwrap();
    let mut now = trip.start;
    let mut recent = Vec::new();
    while now < last {
        while folded < driven.fixes.len() && driven.fixes[folded].timestamp <= now {
            clock.observe(&driven.fixes[folded]);
            folded += 1;
        }
        if folded > 0 {
            let latest = driven.fixes[folded - 1];
            // The stops the model knows are behind it: a fix was seen there.
            let first = driven
                .arrivals
                .iter()
                .take_while(|a| **a <= latest.timestamp)
                .count();
            let dwelling_since = first
                .checked_sub(1)
                .map(|j| driven.arrivals[j])
                .filter(|a| latest.timestamp < *a + trip.dwells[first - 1]);
            // Newest first: the last hour's fixes and one before them.
            recent.clear();
            let window = driven.fixes[..folded].iter().rev();
            let within = window
                .clone()
                .take_while(|f| latest.timestamp - f.timestamp <= eta::SPEED_WINDOW)
                .count();
            recent.extend(window.take(within + 1).copied());
            let etas = [
                today(&recent, trip, first),
                planned(&clock, &latest, trip, first, dwelling_since, false),
                planned(&clock, &latest, trip, first, dwelling_since, true),
            ];
            let next = driven.arrivals.iter().take_while(|a| **a <= now).count();
            for stop in next.max(first)..trip.stops.len() {
                for i in [usize::from(stop > next), 2] {
                    let tally = &mut tallies[i];
                    tally.etas += 1;
                    for model in MODELS {
                        let error = etas[model as usize][stop - first] - driven.arrivals[stop];
                        tally.abs[model as usize] += hours_of(error).abs();
                        tally.signed[model as usize] += hours_of(error);
                    }
                }
            }
        }
        now += Duration::hours(1);
    }
}

fn main() {
    let trips = env_or("TRIPS", 300).max(3);
    let seed = env_or("SEED", 20_260_601) as u64;
    let mut rng = StdRng::seed_from_u64(seed);
    // By bucket, then by driver (fresh, hours driven before the first fix).
    let mut by = [[[Tally::default(); 3]; 2]; 3];
    let mut counts = [[0usize; 2]; 3];
    let (mut driving, mut road_miles) = (Duration::zero(), 0.0);
    for index in 0..trips {
        let trip = trip(&mut rng, index);
        let driven = drive(&mut rng, &trip);
        driving += driven.driving;
        road_miles += driven.road_miles;
        let driver = usize::from(!driven.fresh);
        sample(&trip, &driven, &mut by[trip.bucket][driver]);
        counts[trip.bucket][driver] += 1;
    }
    println!("# ETA accuracy: {trips} simulated trips (seed {seed})\n");
    println!(
        "Mean absolute error of the ETA at each remaining stop, sampled every simulated hour,\n\
         in hours; bias is the mean of ETA - arrival (negative: too early).\n\
         - Today's: `eta::estimate` to the next stop (recent moving speed, 20-70 mph, 45 when\n  \
           stopped); each later stop after it at that same speed over great circle x 1.2,\n  \
           plus the planned dwell (2 h) at each stop between. No rests, no breaks.\n\
         - New, no HOS: `route_eta::plan` at {DEFAULT_MPH} mph, planned dwells, no rests or breaks.\n\
         - New: the same with hours of service, from the `DriverClock` of the fixes so far.\n\
         - Fresh / hours before: the driver started the trip rested, or hours into a shift\n  \
           (hours no fix shows).\n"
    );
    println!(
        "| Trip length | Stops | Trips | ETAs | Today's | New, no HOS | New | New / today's | Today's bias | New bias |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut ratios = [0.0; 3];
    for (bucket, name) in BUCKETS.iter().enumerate() {
        let sum = |pick: &dyn Fn(usize, usize) -> bool| {
            let mut total = Tally::default();
            for (driver, tallies) in by[bucket].iter().enumerate() {
                for (_, tally) in tallies.iter().enumerate().filter(|(k, _)| pick(driver, *k)) {
                    total.etas += tally.etas;
                    for m in 0..3 {
                        total.abs[m] += tally.abs[m];
                        total.signed[m] += tally.signed[m];
                    }
                }
            }
            total
        };
        let [fresh, tired] = counts[bucket];
        let rows = [
            ("next", fresh + tired, sum(&|_, k| k == 0)),
            ("later", fresh + tired, sum(&|_, k| k == 1)),
            ("all", fresh + tired, sum(&|_, k| k == 2)),
            ("all, fresh", fresh, sum(&|d, k| d == 0 && k == 2)),
            ("all, hours before", tired, sum(&|d, k| d == 1 && k == 2)),
        ];
        ratios[bucket] = rows[2].2.mae(Model::Hos) / rows[2].2.mae(Model::Today);
        for (label, trips, tally) in rows {
            println!(
                "| {name} | {label} | {trips} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:+.2} | {:+.2} |",
                tally.etas,
                tally.mae(Model::Today),
                tally.mae(Model::NoHos),
                tally.mae(Model::Hos),
                tally.mae(Model::Hos) / tally.mae(Model::Today),
                tally.bias(Model::Today),
                tally.bias(Model::Hos),
            );
        }
    }
    println!(
        "\nSimulated drivers averaged {:.1} mph while driving ({:.0} road miles in {:.0} h).",
        road_miles / hours_of(driving),
        road_miles,
        hours_of(driving)
    );
    for (target, ratio, met) in [
        (
            "> 800 mi, new at most half of today's",
            ratios[2],
            ratios[2] <= 0.5,
        ),
        (
            "< 300 mi, new no worse than today's",
            ratios[0],
            ratios[0] <= 1.0,
        ),
    ] {
        let verdict = if met { "met" } else { "MISSED" };
        println!("Target {target}: {ratio:.2}, {verdict}.");
    }
}
