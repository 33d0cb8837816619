use super::*;
use crate::domain::fix::{FixSource, GpsFix};
use crate::domain::hos::HoursOfService;
use crate::domain::timestamp::parse_utc;

/// Degrees of latitude per statute mile on the sphere `geo` measures with.
const DEG_PER_MILE: f64 = 180.0 / (std::f64::consts::PI * crate::geo::EARTH_RADIUS_MILES);

fn at(raw: &str) -> DateTime<Utc> {
    parse_utc(raw).unwrap()
}

fn leg(road_miles: f64, dwell_minutes: i64) -> Leg {
    Leg {
        road_miles,
        dwell: Duration::minutes(dwell_minutes),
    }
}

const SOLO: DriveModel = DriveModel {
    mph: 50.0,
    hours_of_service: true,
    team: false,
};

/// A clock folded from fixes every 5 minutes from `start`: for each
/// `(minutes, moving)`, that long driving north at 55 mph or parked.
/// Returns it with the time of its last fix.
fn folded(start: DateTime<Utc>, stretches: &[(i64, bool)]) -> (DriverClock, DateTime<Utc>) {
    let mut clock = DriverClock::default();
    let (mut minute, mut miles) = (0, 0.0);
    let mut observe = |minute: i64, miles: f64, moving: bool| {
        clock.observe(&GpsFix {
            timestamp: start + Duration::minutes(minute),
            lat: 30.0 + miles * DEG_PER_MILE,
            lng: -90.0,
            speed_mph: Some(if moving { 55.0 } else { 0.0 }),
            heading_deg: None,
            source: FixSource::Api,
        });
    };
    observe(0, 0.0, stretches.first().is_some_and(|s| s.1));
    for &(length, moving) in stretches {
        for _ in 0..length / 5 {
            minute += 5;
            if moving {
                miles += 55.0 * 5.0 / 60.0;
            }
            observe(minute, miles, moving);
        }
    }
    (clock, start + Duration::minutes(minute))
}

#[test]
fn the_reference_example_with_breaks_and_the_14_hour_window() {
    // 1,746 mi at 45 mph is 38 h 48 min of driving. The reference (11 h
    // driving, 10 h off, no breaks, no window) arrives Thursday 04:48.
    // This plan also takes a 30-minute break after 8 h of each 11-h shift
    // (the window, 11 h 30 min a shift, never binds):
    //   Mon 08:00-16:00 drive, break, 16:30-19:30 drive (11 h), rest to Tue 05:30;
    //   Tue 05:30-13:30, break, 14:00-17:00 (22 h), rest to Wed 03:00;
    //   Wed 03:00-11:00, break, 11:30-14:30 (33 h), rest to Thu 00:30;
    //   Thu 00:30 + 5 h 48 min = 06:18: the reference's 04:48 plus 3 breaks.
    let model = DriveModel { mph: 45.0, ..SOLO };
    let start = at("2026-06-01T08:00:00Z");
    let plan = plan(start, &DriverClock::default(), &[leg(1_746.0, 0)], &model);
    assert_eq!(plan.arrivals, [at("2026-06-04T06:18:00Z")]);
    assert_eq!(plan.next_rest_at, Some(at("2026-06-01T19:30:00Z")));
    // Without hours of service: 38 h 48 min straight, Tuesday 22:48.
    let today = DriveModel {
        hours_of_service: false,
        ..model
    };
    let plan = super::plan(start, &DriverClock::default(), &[leg(1_746.0, 0)], &today);
    assert_eq!(plan.arrivals, [at("2026-06-02T22:48:00Z")]);
    assert_eq!(plan.next_rest_at, None);
}

#[test]
fn a_team_takes_breaks_but_no_rests() {
    // 38 h 48 min of driving with a 30-minute stop after each 8 h (at 8, 16,
    // 24 and 32 h): 40 h 48 min, Monday 08:00 to Wednesday 00:48.
    let model = DriveModel {
        mph: 45.0,
        team: true,
        ..SOLO
    };
    let start = at("2026-06-01T08:00:00Z");
    let plan = plan(start, &DriverClock::default(), &[leg(1_746.0, 0)], &model);
    assert_eq!(plan.arrivals, [at("2026-06-03T00:48:00Z")]);
    assert_eq!(plan.next_rest_at, None);
}

#[test]
fn a_dwell_of_30_minutes_is_the_break() {
    let start = at("2026-06-01T08:00:00Z");
    let fresh = DriverClock::default();
    // 7 h to the first stop, 45 min there, 3 h on: no break needed.
    let plan = plan(start, &fresh, &[leg(350.0, 45), leg(150.0, 0)], &SOLO);
    assert_eq!(
        plan.arrivals,
        [at("2026-06-01T15:00:00Z"), at("2026-06-01T18:45:00Z")]
    );
    // 20 minutes there is no break: one falls after 1 more hour of driving.
    // 15:20 + 1 h, break to 16:50, + 2 h.
    let plan = super::plan(start, &fresh, &[leg(350.0, 20), leg(150.0, 0)], &SOLO);
    assert_eq!(plan.arrivals[1], at("2026-06-01T18:50:00Z"));
    // A break due on leaving counts the dwell: 10 more minutes, not 30.
    let plan = super::plan(start, &fresh, &[leg(400.0, 20), leg(50.0, 0)], &SOLO);
    assert_eq!(
        plan.arrivals,
        [at("2026-06-01T16:00:00Z"), at("2026-06-01T17:30:00Z")]
    );
    // No rest or break after the last stop, however long its dwell.
    let plan = super::plan(start, &fresh, &[leg(550.0, 600)], &SOLO);
    assert_eq!(plan.arrivals, [at("2026-06-01T19:30:00Z")]);
    assert_eq!(plan.next_rest_at, None);
}

#[test]
fn a_dwell_of_10_hours_is_a_rest() {
    // 10 h to the stop, 10 h there, 3 h on: no rest of the driver's own,
    // though 13 h of driving would need one.
    let start = at("2026-06-01T08:00:00Z");
    let plan = plan(
        start,
        &DriverClock::default(),
        &[leg(500.0, 600), leg(150.0, 0)],
        &SOLO,
    );
    // 08:00 + 8 h, break, + 2 h = 18:30; + 10 h = 04:30; + 3 h.
    assert_eq!(
        plan.arrivals,
        [at("2026-06-01T18:30:00Z"), at("2026-06-02T07:30:00Z")]
    );
    assert_eq!(plan.next_rest_at, None);
}

#[test]
fn a_clock_10_hours_into_its_driving_rests_after_one_more() {
    // 6 h driving, 40 min parked, 4 h driving: 10 h driven, 4 h since the
    // break, a window of 10 h 40 min.
    let (clock, start) = folded(
        at("2026-06-01T08:00:00Z"),
        &[(360, true), (40, false), (240, true)],
    );
    assert_eq!(start, at("2026-06-01T18:40:00Z"));
    assert_eq!(
        clock.at(start),
        HoursOfService {
            driving_minutes: 600,
            window_minutes: 640,
            since_break_minutes: 240,
            next_rest_at: None,
        }
    );
    // 200 mi is 4 h: 1 h to the 11-h limit, 10 h off, 3 h.
    let plan = plan(start, &clock, &[leg(200.0, 0)], &SOLO);
    assert_eq!(plan.next_rest_at, Some(at("2026-06-01T19:40:00Z")));
    assert_eq!(plan.arrivals, [at("2026-06-02T08:40:00Z")]);
}

#[test]
fn the_14_hour_window_stops_a_driver_with_hours_left() {
    // 3 h driving, 8 h parked (no rest), 2 h driving: 5 h driven, window 13 h.
    let (clock, start) = folded(
        at("2026-06-01T06:00:00Z"),
        &[(180, true), (480, false), (120, true)],
    );
    assert_eq!(clock.at(start).window_minutes, 13 * 60);
    // 300 mi is 6 h: 1 h to the window's end, 10 h off, 5 h.
    let plan = plan(start, &clock, &[leg(300.0, 0)], &SOLO);
    assert_eq!(start, at("2026-06-01T19:00:00Z"));
    assert_eq!(plan.next_rest_at, Some(at("2026-06-01T20:00:00Z")));
    assert_eq!(plan.arrivals, [at("2026-06-02T11:00:00Z")]);
}

#[test]
fn a_rest_counts_the_time_already_stopped() {
    // 7 h driving, 30 min break, 4 h driving (the 11-h limit), parked 6 h.
    let (clock, start) = folded(
        at("2026-06-01T06:00:00Z"),
        &[(420, true), (30, false), (240, true), (360, false)],
    );
    assert_eq!(start, at("2026-06-01T23:30:00Z"));
    // The rest is under way: 4 more hours, then 2 h of driving.
    let plan = plan(start, &clock, &[leg(100.0, 0)], &SOLO);
    assert_eq!(plan.next_rest_at, Some(start));
    assert_eq!(plan.arrivals, [at("2026-06-02T05:30:00Z")]);
}

#[test]
fn a_truck_parked_with_a_rest_ahead_rests_where_it_is() {
    // 7 h driving, a break, 3 h driving (10 h), parked 3 h: a window of
    // 13 h 30 min.
    let (clock, start) = folded(
        at("2026-06-01T08:00:00Z"),
        &[(420, true), (30, false), (180, true), (180, false)],
    );
    assert_eq!(start, at("2026-06-01T21:30:00Z"));
    // 250 mi is 5 h: driving on is 30 min to the window's end, 10 h off,
    // 4 h 30 min (15 h); resting the 7 h left here, then 5 h, is sooner.
    let plan = plan(start, &clock, &[leg(250.0, 0)], &SOLO);
    assert_eq!(plan.next_rest_at, Some(start));
    assert_eq!(plan.arrivals, [at("2026-06-02T09:30:00Z")]);
    // 20 mi fits in the window left: it drives on.
    let plan = super::plan(start, &clock, &[leg(20.0, 0)], &SOLO);
    assert_eq!(plan.next_rest_at, None);
    assert_eq!(plan.arrivals, [at("2026-06-01T21:54:00Z")]);
}

#[test]
fn a_rest_due_in_the_next_leg_is_taken_at_the_stop_before_it() {
    // 08:00 + 8 h, break, 2 h: the first stop at 18:30 with 10 h driven,
    // an hour there. The next leg (4 h) would rest after 1 h: resting at the
    // stop instead (9 h more, the dwell counting) arrives at 08:30, not 17:30.
    let start = at("2026-06-01T08:00:00Z");
    let plan = plan(
        start,
        &DriverClock::default(),
        &[leg(500.0, 60), leg(200.0, 0)],
        &SOLO,
    );
    assert_eq!(
        plan.arrivals,
        [at("2026-06-01T18:30:00Z"), at("2026-06-02T08:30:00Z")]
    );
    assert_eq!(plan.next_rest_at, Some(at("2026-06-01T19:30:00Z")));
}

#[test]
fn a_break_that_would_leave_no_window_is_a_rest() {
    // 4 h driving, 20 min parked (no break), 4 h driving: the break is due,
    // and the window (8 h 20 min) has room for it: break, then 2 h.
    let (clock, start) = folded(
        at("2026-06-01T06:00:00Z"),
        &[(240, true), (20, false), (240, true)],
    );
    let shown = clock.at(start);
    assert_eq!(
        (shown.driving_minutes, shown.since_break_minutes),
        (480, 480)
    );
    let plan = super::plan(start, &clock, &[leg(100.0, 0)], &SOLO);
    assert_eq!(plan.arrivals, [start + Duration::minutes(150)]);
    assert_eq!(plan.next_rest_at, None);
    // 4 h driving, then 17 stops of 20 min each followed by 5 min of
    // driving, then 2 h 40 min: 8 h 5 min since a break, in a window of
    // 13 h 45 min. A break would end past the 14th hour: the rest comes now.
    let mut stretches = vec![(240, true)];
    for _ in 0..17 {
        stretches.extend([(20, false), (5, true)]);
    }
    stretches.push((160, true));
    let (clock, start) = folded(at("2026-06-01T06:00:00Z"), &stretches);
    let shown = clock.at(start);
    assert_eq!(
        (shown.since_break_minutes, shown.window_minutes),
        (485, 825)
    );
    let plan = super::plan(start, &clock, &[leg(100.0, 0)], &SOLO);
    assert_eq!(plan.next_rest_at, Some(start));
    assert_eq!(plan.arrivals, [start + Duration::hours(12)]);
}

#[test]
fn without_hours_of_service_it_drives_and_dwells() {
    let start = at("2026-06-01T08:00:00Z");
    let model = DriveModel {
        hours_of_service: false,
        ..SOLO
    };
    let (tired, _) = folded(start, &[(660, true)]);
    let legs = [leg(600.0, 120), leg(0.0, 30), leg(25.0, 0)];
    let plan = plan(start + Duration::hours(11), &tired, &legs, &model);
    // 12 h, 2 h there; the same place at once, 30 min there; 30 min on.
    assert_eq!(
        plan.arrivals,
        [
            at("2026-06-02T07:00:00Z"),
            at("2026-06-02T09:00:00Z"),
            at("2026-06-02T10:00:00Z"),
        ]
    );
    assert_eq!(plan.next_rest_at, None);
    assert!(super::plan(start, &tired, &[], &SOLO).arrivals.is_empty());
}

#[test]
fn road_miles_are_the_great_circle_times_the_circuity() {
    let (dallas, atlanta) = ((32.7767, -96.797), (33.749, -84.388));
    let straight = haversine_miles(dallas.0, dallas.1, atlanta.0, atlanta.1);
    assert!((road_miles(dallas, atlanta, 1.2) - straight * 1.2).abs() < 1e-9);
    assert!((straight - 721.0).abs() < 5.0, "{straight}");
    assert_eq!(road_miles(dallas, dallas, 1.2), 0.0);
}
