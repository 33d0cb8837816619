use super::geofence::METRES_PER_MILE;
use super::*;
use crate::domain::ids::LoadId;
use crate::domain::location::{Location, UsState};
use crate::domain::stop_plan::{Appointment, two_stops};
use crate::domain::tracking::FixSource;

const PICKUP: (f64, f64) = (32.7767, -96.797);
/// Metres per degree of latitude, near enough.
const M_PER_DEG: f64 = 111_195.0;

fn place(zip: &str, at: Option<(f64, f64)>, radius_m: Option<u32>) -> Location {
    Location {
        city: "Somewhere".into(),
        state: UsState::parse("TX").unwrap(),
        zip: zip.into(),
        address: None,
        lat: at.map(|a| a.0),
        lng: at.map(|a| a.1),
        radius_m,
    }
}

fn load() -> LoadId {
    LoadId::from_suffix("01jd0000000000000000000000").unwrap()
}

/// A pickup at `PICKUP` (500 m) and a delivery at Atlanta's ZIP, the pickup
/// at `pickup_at` if given.
fn plan(pickup_at: Option<DateTime<Utc>>) -> Vec<Stop> {
    two_stops(
        &load(),
        &place("75201", Some(PICKUP), None),
        &place("30303", None, None),
        pickup_at,
        None,
    )
}

fn watch() -> StopWatch {
    StopWatch::new(&plan(None), 120, &StopsProgress::default(), None)
}

fn stop_ref(stops: &[Stop], index: usize) -> StopRef {
    StopRef {
        id: stops[index].id.clone(),
        kind: stops[index].kind,
        sequence: index as u32 + 1,
        last: index + 1 == stops.len(),
        appointment: stops[index].appointment,
    }
}

fn pickup() -> StopRef {
    stop_ref(&plan(None), 0)
}

fn progress_of(watch: &StopWatch, index: usize) -> StopProgress {
    *watch.stops().nth(index).unwrap().1
}

/// A fix `minute` minutes into the trip, `north_m` metres north of the pickup.
fn at(minute: f64, north_m: f64, mph: Option<f64>) -> GpsFix {
    GpsFix {
        timestamp: DateTime::from_timestamp(1_790_000_000 + (minute * 60.0) as i64, 0).unwrap(),
        lat: PICKUP.0 + north_m / M_PER_DEG,
        lng: PICKUP.1,
        speed_mph: mph,
        heading_deg: None,
        source: FixSource::Api,
    }
}

fn minute(m: f64) -> DateTime<Utc> {
    at(m, 0.0, None).timestamp
}

fn all(watch: &mut StopWatch, fixes: &[GpsFix]) -> Vec<Milestone> {
    fixes.iter().flat_map(|f| watch.observe(f).0).collect()
}

#[test]
fn geofences_come_from_coordinates_or_the_zip_with_their_defaults() {
    let watch = watch();
    let pickup = watch.fence(0).unwrap();
    assert_eq!(pickup.placed_by, PlacedBy::Coordinates);
    assert_eq!(pickup.radius_m, 500.0);
    let delivery = watch.fence(1).unwrap();
    assert_eq!(delivery.placed_by, PlacedBy::Zip);
    assert_eq!(delivery.radius_m, 3_000.0);
    let given = Geofence::of(&place("75201", Some(PICKUP), Some(120))).unwrap();
    assert_eq!(given.radius_m, 120.0);
    assert!(Geofence::of(&place("00000", None, None)).is_none());
}

#[test]
fn a_dwell_with_jitter_at_the_fence_is_one_arrival_and_one_departure() {
    let mut watch = watch();
    let trip = [
        at(0.0, -5_000.0, Some(40.0)),
        at(3.0, -450.0, Some(12.0)), // inside, still moving: the arrival time
        at(4.0, -80.0, Some(3.0)),   // stopped: arrived
        at(30.0, 490.0, Some(0.0)),  // jitter around the edge...
        at(31.0, 520.0, Some(0.0)),  // ...outside the arrival radius,
        at(32.0, 700.0, Some(0.0)),  // ...inside the departure radius (750 m)
        at(33.0, 480.0, Some(0.0)),
        at(90.0, 760.0, Some(8.0)), // out past 750 m: departed
        at(95.0, 5_000.0, Some(55.0)),
        at(96.0, 400.0, Some(55.0)), // a later pass never re-arrives
    ];
    let milestones = all(&mut watch, &trip);
    assert_eq!(
        milestones,
        [
            Milestone::Arrived {
                stop: pickup(),
                at: minute(3.0),
                inferred: false
            },
            Milestone::Departed {
                stop: pickup(),
                at: minute(90.0),
                inferred: false
            },
        ]
    );
    let pickup = progress_of(&watch, 0);
    assert_eq!(pickup.arrived(), Some(minute(3.0)));
    assert_eq!(pickup.departed(), Some(minute(90.0)));
    assert!(!pickup.inferred);
}

#[test]
fn a_drive_by_does_not_arrive() {
    let mut watch = watch();
    let pass: Vec<GpsFix> = (0..12)
        .map(|n| {
            at(
                f64::from(n) * 0.5,
                -2_500.0 + f64::from(n) * 450.0,
                Some(60.0),
            )
        })
        .collect();
    assert_eq!(all(&mut watch, &pass), []);
    assert_eq!(progress_of(&watch, 0), StopProgress::default());
}

#[test]
fn two_still_fixes_two_minutes_apart_arrive_without_speeds() {
    let mut watch = watch();
    let milestones = all(
        &mut watch,
        &[
            at(0.0, -3_000.0, None),
            at(5.0, 100.0, None),
            at(6.0, 120.0, None), // a minute: not yet
            at(7.5, 90.0, None),
        ],
    );
    assert_eq!(
        milestones,
        [Milestone::Arrived {
            stop: pickup(),
            at: minute(5.0),
            inferred: false
        }]
    );
}

#[test]
fn sparse_fixes_that_straddle_a_stop_infer_both_milestones() {
    let mut watch = watch();
    // 10 km south, then 10 km north 60 minutes later: 20 km at 50 mph is
    // about 15 minutes of driving, leaving 45 at the stop.
    let milestones = all(
        &mut watch,
        &[
            at(0.0, -10_000.0, Some(50.0)),
            at(60.0, 10_000.0, Some(50.0)),
        ],
    );
    let [
        Milestone::Arrived {
            stop: ref first,
            at: arrived,
            inferred: true,
        },
        Milestone::Departed {
            stop: ref second,
            at: departed,
            inferred: true,
        },
    ] = milestones[..]
    else {
        panic!("{milestones:?}");
    };
    assert_eq!((first, second), (&pickup(), &pickup()));
    // 10 km at 50 mph: 7.46 minutes each way.
    assert!(
        (arrived - minute(7.46)).num_seconds().abs() < 10,
        "{arrived}"
    );
    assert!(
        (departed - minute(52.54)).num_seconds().abs() < 10,
        "{departed}"
    );
    assert!(progress_of(&watch, 0).inferred);

    // The same gap with no time to stop: nothing.
    let mut watch = self::watch();
    let quick = [
        at(0.0, -10_000.0, Some(50.0)),
        at(20.0, 10_000.0, Some(50.0)),
    ];
    assert_eq!(all(&mut watch, &quick), []);
    // Passing well beside the stop: nothing.
    let mut watch = self::watch();
    let beside = |m: f64, north: f64| GpsFix {
        lng: PICKUP.1 + 0.05, // some 4.7 km east
        ..at(m, north, Some(50.0))
    };
    assert_eq!(
        all(
            &mut watch,
            &[beside(0.0, -10_000.0), beside(60.0, 10_000.0)]
        ),
        []
    );
}

#[test]
fn a_late_fix_changes_nothing() {
    let mut watch = watch();
    all(&mut watch, &[at(10.0, -5_000.0, Some(50.0))]);
    let before = watch.progress().clone();
    assert_eq!(all(&mut watch, &[at(5.0, 0.0, Some(0.0))]), []);
    assert_eq!(watch.progress(), &before);
    // Nor does a repeat of the newest.
    assert_eq!(all(&mut watch, &[at(10.0, 0.0, Some(0.0))]), []);

    // A watch rebuilt from stored progress and the newest stored fix goes on
    // where the old one stopped.
    let mut arrived = watch.clone();
    let milestones = all(&mut arrived, &[at(11.0, 0.0, Some(0.0))]);
    assert_eq!(milestones.len(), 1);
    let mut rebuilt = StopWatch::new(
        &plan(None),
        120,
        arrived.progress(),
        Some(&at(11.0, 0.0, Some(0.0))),
    );
    assert_eq!(all(&mut rebuilt, &[at(11.0, 5_000.0, Some(50.0))]), []);
    assert_eq!(
        all(&mut rebuilt, &[at(12.0, 5_000.0, Some(50.0))]),
        [Milestone::Departed {
            stop: pickup(),
            at: minute(12.0),
            inferred: false
        }]
    );
}

#[test]
fn progress_round_trips_through_its_stored_form() {
    let mut watch = watch();
    all(&mut watch, &[at(0.0, 0.0, Some(20.0))]);
    let stored = serde_json::to_string(watch.progress()).unwrap();
    assert_eq!(
        &serde_json::from_str::<StopsProgress>(&stored).unwrap(),
        watch.progress()
    );
    // Stored before stops had ids: read as the first and last stops'.
    let legacy = r#"{"pickup":{"arrived_at":1790000000000000},"delivery":{},"eta_sent":{"eta":1,"at":2,"late_risk":true}}"#;
    let legacy = serde_json::from_str::<StopsProgress>(legacy).unwrap();
    let rebuilt = StopWatch::new(&plan(None), 120, &legacy, None);
    assert_eq!(progress_of(&rebuilt, 0).arrived(), Some(minute(0.0)));
    assert!(
        progress_of(&rebuilt, 1)
            .eta_sent
            .is_some_and(|s| s.late_risk)
    );
}

#[test]
fn arrival_status_against_the_appointment() {
    let appointment = minute(600.0);
    let defaults = StopSettings::default();
    let status = |m: f64| arrival_status(minute(m), Some(Appointment::at(appointment)), &defaults);
    assert_eq!(status(616.0), Some((ArrivalStatus::Late, 16)));
    assert_eq!(status(615.0), Some((ArrivalStatus::OnTime, 15)));
    assert_eq!(status(540.0), Some((ArrivalStatus::OnTime, -60)));
    assert_eq!(status(539.0), Some((ArrivalStatus::Early, -61)));
    assert_eq!(arrival_status(minute(1.0), None, &defaults), None);
}

#[test]
fn arrival_status_follows_the_account_thresholds() {
    let appointment = minute(600.0);
    let strict = StopSettings {
        late_after_minutes: 0,
        early_before_minutes: 5,
        ..StopSettings::default()
    };
    let status = |m: f64| {
        arrival_status(minute(m), Some(Appointment::at(appointment)), &strict).map(|s| s.0)
    };
    assert_eq!(status(601.0), Some(ArrivalStatus::Late));
    assert_eq!(status(600.0), Some(ArrivalStatus::OnTime));
    assert_eq!(status(595.0), Some(ArrivalStatus::OnTime));
    assert_eq!(status(594.0), Some(ArrivalStatus::Early));
}

#[test]
fn a_watch_is_small_enough_for_every_actor() {
    assert!(
        std::mem::size_of::<StopWatch>() < 200,
        "{} bytes",
        std::mem::size_of::<StopWatch>()
    );
}

#[test]
fn the_detention_clock_is_set_on_arrival_and_cleared_on_departure() {
    let stops = plan(Some(minute(30.0)));
    let key = StopKey::Id(stops[0].id.clone());
    let watch = |free| StopWatch::new(&stops, free, &StopsProgress::default(), None);
    let arrived = |index, m: f64, inferred| Milestone::Arrived {
        stop: stop_ref(&stops, index),
        at: minute(m),
        inferred,
    };
    let departed = |index, m: f64, inferred| Milestone::Departed {
        stop: stop_ref(&stops, index),
        at: minute(m),
        inferred,
    };
    // Early: the clock starts at the appointment; late: at the arrival.
    assert_eq!(
        watch(120).timer_after(&[arrived(0, 0.0, false)]),
        Some(StopTimer::Set {
            stop: key.clone(),
            due: minute(150.0)
        })
    );
    assert_eq!(
        watch(0).timer_after(&[arrived(0, 60.0, false)]),
        Some(StopTimer::Set {
            stop: key,
            due: minute(60.0)
        })
    );
    assert_eq!(
        watch(120).timer_after(&[departed(0, 90.0, false)]),
        Some(StopTimer::Clear)
    );
    // Inferred from sparse fixes: arrived and gone, nothing to time.
    assert_eq!(
        watch(120).timer_after(&[arrived(1, 10.0, true), departed(1, 40.0, true)]),
        Some(StopTimer::Clear)
    );
    assert_eq!(watch(120).timer_after(&[]), None);
    // A drop stop's free time is its own 30 minutes.
    let mut dropped = stops.clone();
    dropped[0].handling = crate::domain::stop_plan::Handling::Drop;
    let drop_watch = StopWatch::new(&dropped, 120, &StopsProgress::default(), None);
    assert_eq!(
        drop_watch.timer_after(&[arrived(0, 60.0, false)]),
        Some(StopTimer::Set {
            stop: StopKey::Id(stops[0].id.clone()),
            due: minute(90.0)
        })
    );
}

#[test]
fn arrival_against_a_window_is_early_before_it_and_late_after_it() {
    let window = Some(Appointment {
        start: minute(600.0),
        end: Some(minute(720.0)),
    });
    let defaults = StopSettings::default();
    let status = |m: f64| arrival_status(minute(m), window, &defaults);
    assert_eq!(status(590.0), Some((ArrivalStatus::Early, -10)));
    assert_eq!(status(700.0), Some((ArrivalStatus::OnTime, 0)));
    assert_eq!(status(725.0), Some((ArrivalStatus::Late, 5)));
}

#[test]
fn the_flat_shortcut_never_changes_which_side_of_a_radius_a_fix_is_on() {
    let mut location = Location {
        city: "Dallas".into(),
        state: UsState::parse("TX").unwrap(),
        zip: "75201".into(),
        address: None,
        lat: Some(PICKUP.0),
        lng: Some(PICKUP.1),
        radius_m: Some(500),
    };
    for radius in [25, 500, 3_000, 10_000] {
        location.radius_m = Some(radius);
        let fence = Geofence::of(&location).unwrap();
        let great_circle = |lat: f64, lng: f64| {
            crate::geo::haversine_miles(fence.lat, fence.lng, lat, lng) * METRES_PER_MILE
        };
        // Points at every bearing, from a few metres to 2,000 km away.
        for step in 0..2_000 {
            let bearing = f64::from(step) * 0.7;
            let metres = 5.0 * 1.0045_f64.powi(step);
            let lat = fence.lat + metres * bearing.cos() / M_PER_DEG;
            let lng =
                fence.lng + metres * bearing.sin() / (M_PER_DEG * fence.lat.to_radians().cos());
            let (shown, exact) = (fence.metres_to(lat, lng), great_circle(lat, lng));
            for limit in [fence.radius_m, fence.departure_radius_m()] {
                assert_eq!(
                    shown <= limit,
                    exact <= limit,
                    "radius {radius}, {metres:.0} m at {bearing:.1}: {shown:.1} vs {exact:.1}"
                );
            }
        }
    }
}

mod many;
