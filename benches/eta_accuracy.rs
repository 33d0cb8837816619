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
#[path = "eta_accuracy/trips.rs"]
mod trips;

use trips::{Driven, Trip, drive, trip};

use chrono::{DateTime, Duration, Utc};
use freight::domain::eta::{self, ROAD_CIRCUITY};
use freight::domain::hos::DriverClock;
use freight::domain::ids::StopId;
use freight::domain::route_eta::{self, DEFAULT_MPH, DriveModel, Leg};
use freight::domain::stop_etas::{self, RouteStop, Speed};
use freight::domain::stop_plan::StopKind;
use freight::domain::tracking::GpsFix;
use knobs::env_or;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// The dwell both models plan at a stop: the 2-hour loading standard.
const PLANNED_DWELL: Duration = Duration::hours(2);
const BUCKETS: [&str; 3] = ["< 300 mi", "300-800 mi", "> 800 mi"];
const LENGTHS: [(f64, f64); 3] = [(80.0, 300.0), (300.0, 800.0), (800.0, 2_500.0)];

fn hours_of(d: Duration) -> f64 {
    d.num_seconds() as f64 / 3600.0
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

/// The new model as the service runs it (`stop_etas::estimate`, which
/// `GET /v1/loads/{id}` and `load.eta_changed` show): the stops behind the
/// truck done, the one it is at with its arrival.
fn served(
    clock: &DriverClock,
    recent: &[GpsFix],
    trip: &Trip,
    first: usize,
    dwelling_since: Option<DateTime<Utc>>,
) -> Vec<DateTime<Utc>> {
    let route: Vec<RouteStop> = trip
        .stops
        .iter()
        .enumerate()
        .map(|(i, &target)| {
            let at_it = i + 1 == first && dwelling_since.is_some();
            RouteStop {
                id: StopId::generate(),
                kind: if i == 0 {
                    StopKind::Pickup
                } else {
                    StopKind::Delivery
                },
                target: Some(target),
                own_coordinates: true,
                appointment: None,
                dwell: PLANNED_DWELL,
                arrived_at: dwelling_since.filter(|_| at_it),
                done: i < first && !at_it,
            }
        })
        .collect();
    let estimate = stop_etas::estimate(recent, &route, Some(clock), false, &Speed::DEFAULT)
        .expect("a stop ahead");
    (first..trip.stops.len())
        .map(|i| {
            estimate
                .stops
                .iter()
                .find(|s| s.index == i)
                .expect("every stop ahead estimated")
                .at
        })
        .collect()
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
                served(&clock, &recent, trip, first, dwelling_since),
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
         - New: as the service estimates it (`stop_etas::estimate`), with hours of service\n  \
           from the `DriverClock` of the fixes so far.\n\
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
