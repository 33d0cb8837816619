use super::*;
use crate::domain::fix::FixSource;

/// Degrees of latitude per statute mile on the sphere `geo` measures with.
const DEG_PER_MILE: f64 = 180.0 / (std::f64::consts::PI * crate::geo::EARTH_RADIUS_MILES);

fn t(minutes: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_790_000_000 + minutes * 60, 0).unwrap()
}

/// A fix `miles` north of a fixed origin, `minutes` after a fixed start.
fn fix(minutes: i64, miles: f64, speed: Option<f64>) -> GpsFix {
    GpsFix {
        timestamp: t(minutes),
        lat: 35.0 + miles * DEG_PER_MILE,
        lng: -97.0,
        speed_mph: speed,
        heading_deg: None,
        source: FixSource::Api,
    }
}

/// Fixes every `every` minutes from `from` to `to` (inclusive) at `mph`
/// north, starting `miles` north; returns the miles reached.
fn drive(clock: &mut DriverClock, from: i64, to: i64, every: i64, miles: f64, mph: f64) -> f64 {
    let mut at = miles;
    for minute in (from..=to).step_by(every as usize) {
        at = miles + mph * (minute - from) as f64 / 60.0;
        clock.observe(&fix(minute, at, Some(mph)));
    }
    at
}

fn hos(driving: u32, window: u32, since_break: u32) -> HoursOfService {
    HoursOfService {
        driving_minutes: driving,
        window_minutes: window,
        since_break_minutes: since_break,
        next_rest_at: None,
    }
}

#[test]
fn a_clock_without_fixes_is_a_fresh_driver() {
    let clock = DriverClock::default();
    assert_eq!(clock.at(t(0)), hos(0, 0, 0));
    assert_eq!(clock.shift_at(t(600)), Shift::default());
    assert_eq!(clock.last_fix_at(), None);
}

#[test]
fn dense_moving_fixes_drive_and_a_30_minute_stop_is_the_break() {
    let mut clock = DriverClock::default();
    let miles = drive(&mut clock, 0, 120, 5, 0.0, 60.0);
    assert_eq!(clock.at(t(120)), hos(120, 120, 120));
    // Stopped, reporting 0 mph: 25 minutes is no break, 30 is.
    for minute in (125..=145).step_by(5) {
        clock.observe(&fix(minute, miles, Some(0.0)));
    }
    assert_eq!(clock.at(t(145)), hos(120, 145, 120));
    clock.observe(&fix(150, miles, Some(0.0)));
    assert_eq!(clock.at(t(150)), hos(120, 150, 0));
    // Driving again: the window kept running through the stop.
    drive(&mut clock, 150, 210, 5, miles, 60.0);
    assert_eq!(clock.at(t(210)), hos(180, 210, 60));
}

#[test]
fn without_reported_speeds_the_distance_over_the_gap_decides() {
    let mut clock = DriverClock::default();
    // 5 miles every 5 minutes (60 mph), then GPS jitter of 100 m in 5 minutes.
    for (i, minute) in (0..=30).step_by(5).enumerate() {
        clock.observe(&fix(minute, i as f64 * 5.0, None));
    }
    assert_eq!(clock.at(t(30)), hos(30, 30, 30));
    clock.observe(&fix(35, 30.06, None));
    assert_eq!(clock.at(t(35)), hos(30, 35, 30));
    clock.observe(&fix(45, 30.0, None));
    assert_eq!(clock.at(t(45)), hos(30, 45, 30));
    // Moving again, reported or not: 5 mph over 5 minutes is moving.
    clock.observe(&fix(50, 30.42, None));
    clock.observe(&fix(55, 35.42, Some(60.0)));
    assert_eq!(clock.shift_at(t(55)).stopped, Duration::zero());
}

#[test]
fn a_departure_or_an_arrival_drives_only_its_distance() {
    let mut clock = DriverClock::default();
    let miles = drive(&mut clock, 0, 60, 5, 0.0, 60.0);
    // Arrival: 2 miles then parked, the first fix there 12 minutes on:
    // 2.4 road miles at 50 mph (2 min 53 s), then stopped.
    clock.observe(&fix(72, miles + 2.0, Some(0.0)));
    let shift = clock.shift_at(t(72));
    assert_eq!(shift.driving, Duration::seconds(3600 + 173));
    assert_eq!(shift.stopped, Duration::seconds(12 * 60 - 173));
    // Parked fixes every 15 minutes, the last at 87 (24 min 7 s stopped);
    // on the road 10 minutes later, 3 miles on: 4 min 19 s of driving, the
    // stop first. The stop (29 min 48 s) is no break; a mile less, it is.
    clock.observe(&fix(87, miles + 2.0, Some(0.0)));
    let parked = clock;
    clock.observe(&fix(97, miles + 5.0, Some(60.0)));
    assert_eq!(
        clock.shift_at(t(97)).since_break,
        Duration::seconds(3600 + 173 + 259)
    );
    let mut clock = parked;
    clock.observe(&fix(97, miles + 4.0, Some(60.0)));
    assert_eq!(clock.shift_at(t(97)).since_break, Duration::seconds(173));
}

#[test]
fn ten_hours_stopped_start_a_new_shift_whose_window_opens_with_driving() {
    let mut clock = DriverClock::default();
    let miles = drive(&mut clock, 0, 600, 5, 0.0, 55.0);
    assert_eq!(clock.at(t(600)), hos(600, 600, 600));
    // Stopped with a fix every 15 minutes: 9 h 45 min is not yet a rest.
    for minute in (615..=1185).step_by(15) {
        clock.observe(&fix(minute, miles, Some(0.0)));
    }
    assert_eq!(clock.at(t(1185)), hos(600, 1185, 0));
    clock.observe(&fix(1200, miles, Some(0.0)));
    assert_eq!(clock.at(t(1200)), hos(0, 0, 0));
    // Still parked an hour later; then it drives for an hour.
    clock.observe(&fix(1260, miles, Some(0.0)));
    drive(&mut clock, 1260, 1320, 5, miles, 55.0);
    assert_eq!(clock.at(t(1320)), hos(60, 60, 60));
    assert_eq!(clock.shift_at(t(1320)).window_from, Some(t(1260)));
}

#[test]
fn a_parked_truck_reporting_seldom_through_jitter_rests() {
    let mut clock = DriverClock::default();
    let miles = drive(&mut clock, 0, 600, 5, 0.0, 55.0);
    // A fix every 20 minutes for 10 hours, each up to 50 m off the last.
    for (i, minute) in (620..=1200).step_by(20).enumerate() {
        let jitter = if i % 2 == 0 { 0.03 } else { 0.0 };
        clock.observe(&fix(minute, miles + jitter, Some(0.0)));
    }
    assert_eq!(clock.at(t(1200)), hos(0, 0, 0));
}

#[test]
fn a_sparse_gap_drives_its_road_miles_at_50_mph_and_stops_the_rest() {
    // 100 miles in 3 hours: 120 road miles, 2 h 24 min driving, 36 min stopped.
    let start = || {
        let mut clock = DriverClock::default();
        drive(&mut clock, 0, 60, 5, 0.0, 60.0);
        clock
    };
    // The newer fix moving: the stop came first, so the 2 h 24 min count
    // toward the next break.
    let mut clock = start();
    clock.observe(&fix(240, 160.0, Some(60.0)));
    assert_eq!(clock.at(t(240)), hos(60 + 144, 240, 144));
    // The newer fix stopped: it drove first, and the stop is a break.
    let mut clock = start();
    clock.observe(&fix(240, 160.0, Some(0.0)));
    assert_eq!(clock.at(t(240)), hos(60 + 144, 240, 0));
    // No speed: as if moving.
    let mut clock = start();
    clock.observe(&fix(240, 160.0, None));
    assert_eq!(clock.at(t(240)), hos(60 + 144, 240, 144));
    // Faster than 50 mph over the gap: all of it driving.
    let mut clock = start();
    clock.observe(&fix(90, 90.0, None));
    assert_eq!(clock.at(t(90)), hos(90, 90, 90));
}

#[test]
fn a_device_off_overnight_is_a_rest() {
    let mut clock = DriverClock::default();
    let miles = drive(&mut clock, 0, 480, 5, 0.0, 60.0);
    clock.observe(&fix(490, miles, Some(0.0)));
    // Back 11 hours later, 2 miles on, moving: a rest, then 2 min 53 s of
    // driving (2.4 road miles at 50 mph).
    clock.observe(&fix(490 + 660, miles + 2.0, Some(60.0)));
    let shift = clock.shift_at(t(1150));
    assert_eq!(shift.driving, Duration::seconds(173));
    assert_eq!(shift.window_from, Some(t(1150) - Duration::seconds(173)));
    assert_eq!(clock.at(t(1150)), hos(2, 2, 2));
}

#[test]
fn time_after_the_newest_fix_counts_as_the_truck_was_then() {
    let mut clock = DriverClock::default();
    let miles = drive(&mut clock, 0, 60, 5, 0.0, 60.0);
    // Moving: 20 more minutes of driving.
    assert_eq!(clock.at(t(80)), hos(80, 80, 80));
    // A `now` before the newest fix is its time.
    assert_eq!(clock.at(t(30)), hos(60, 60, 60));
    clock.observe(&fix(65, miles, Some(0.0)));
    // Stopped: 35 minutes later the break is taken, 10 hours later the rest.
    assert_eq!(clock.at(t(95)), hos(60, 95, 0));
    assert_eq!(clock.at(t(65 + 600)), hos(0, 0, 0));
}

#[test]
fn a_fix_not_newer_than_the_newest_changes_nothing() {
    let mut clock = DriverClock::default();
    drive(&mut clock, 0, 60, 5, 0.0, 60.0);
    let before = clock;
    clock.observe(&fix(60, 500.0, Some(0.0)));
    clock.observe(&fix(30, 0.0, Some(0.0)));
    assert_eq!(clock, before);
}

#[test]
fn the_first_fix_only_places_the_truck() {
    let mut clock = DriverClock::default();
    clock.observe(&fix(0, 0.0, Some(60.0)));
    assert_eq!(clock.last_fix_at(), Some(t(0)));
    assert_eq!(clock.at(t(0)), hos(0, 0, 0));
    assert_eq!(clock.at(t(10)), hos(10, 10, 10));
}

#[test]
fn the_stored_form_is_compact_and_reads_back() {
    let mut clock = DriverClock::default();
    assert_eq!(
        serde_json::to_string(&clock).unwrap(),
        r#"{"s":{"d":0,"b":0,"s":0}}"#
    );
    drive(&mut clock, 0, 60, 5, 0.0, 60.0);
    let json = serde_json::to_string(&clock).unwrap();
    assert!(
        json.starts_with(r#"{"f":{"t":1790003600000000,"y":35.86"#),
        "{json}"
    );
    assert!(
        json.ends_with(r#""m":true},"s":{"d":3600,"b":3600,"s":0,"w":1790000000000000}}"#),
        "{json}"
    );
    assert_eq!(serde_json::from_str::<DriverClock>(&json).unwrap(), clock);
    assert_eq!(
        serde_json::from_str::<DriverClock>("{}").unwrap(),
        DriverClock::default()
    );
}

#[test]
fn hours_of_service_serialize_as_the_api_shows_them() {
    let mut shown = hos(60, 75, 30);
    assert_eq!(
        serde_json::to_value(shown).unwrap(),
        serde_json::json!({"driving_minutes": 60, "window_minutes": 75,
            "since_break_minutes": 30, "next_rest_at": null})
    );
    shown.next_rest_at = Some(t(0));
    assert_eq!(
        serde_json::to_value(shown).unwrap()["next_rest_at"],
        "2026-09-21T14:13:20Z"
    );
}
