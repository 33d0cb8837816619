use super::*;
use crate::domain::fix::FixSource;
use crate::geo::haversine_miles;

fn t(minutes: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_790_000_000 + minutes * 60, 0).unwrap()
}

fn fix(minute: i64, at: (f64, f64), mph: f64) -> GpsFix {
    GpsFix {
        timestamp: t(minute),
        lat: at.0,
        lng: at.1,
        speed_mph: Some(mph),
        heading_deg: None,
        source: FixSource::Api,
    }
}

const DALLAS: (f64, f64) = (32.7767, -96.797);
const SHREVEPORT: (f64, f64) = (32.5252, -93.7502);
const ATLANTA: (f64, f64) = (33.749, -84.388);

fn stop(kind: StopKind, target: (f64, f64), dwell_minutes: i64) -> RouteStop {
    RouteStop {
        id: StopId::generate(),
        kind,
        target: Some(target),
        own_coordinates: true,
        appointment: None,
        dwell: Duration::minutes(dwell_minutes),
        arrived_at: None,
        done: false,
    }
}

fn hours(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_seconds() as f64 / 3600.0
}

#[test]
fn later_stops_chain_through_the_dwell_before_them() {
    let route = [
        stop(StopKind::Pickup, DALLAS, 120),
        stop(StopKind::Delivery, SHREVEPORT, 60),
        stop(StopKind::Delivery, ATLANTA, 0),
    ];
    // Just left Dallas, fresh driver.
    let mut route = route.to_vec();
    route[0].done = true;
    let recent = [fix(0, DALLAS, 55.0)];
    let eta = estimate(&recent, &route, None, false, &Speed::DEFAULT).unwrap();
    assert_eq!(eta.stops.len(), 2);
    let first = haversine_miles(DALLAS.0, DALLAS.1, SHREVEPORT.0, SHREVEPORT.1) * 1.2;
    let second = haversine_miles(SHREVEPORT.0, SHREVEPORT.1, ATLANTA.0, ATLANTA.1) * 1.2;
    assert!((hours(t(0), eta.stops[0].at) - first / 50.0).abs() < 0.01);
    // Second leg: the hour at Shreveport (which is the driver's break),
    // then the 10-hour rest once 11 hours of driving are up.
    let driving = (first + second) / 50.0;
    assert!(driving > 11.0 && second / 50.0 - (11.0 - first / 50.0) < 8.0);
    let expected = driving + 1.0 + 10.0;
    assert!(
        (hours(t(0), eta.stops[1].at) - expected).abs() < 0.02,
        "{} vs {expected}",
        hours(t(0), eta.stops[1].at)
    );
    assert_eq!(eta.next_delivery(&route).map(|s| s.index), Some(1));
    assert!(
        eta.miles_to_delivery
            .is_some_and(|m| (m - first).abs() < 0.01)
    );
}

#[test]
fn a_long_drive_takes_the_ten_hour_rest_unless_a_team_drives_it() {
    let mut route = vec![
        stop(StopKind::Pickup, DALLAS, 0),
        stop(StopKind::Delivery, ATLANTA, 0),
    ];
    route[0].done = true;
    let recent = [fix(0, DALLAS, 60.0)];
    let miles = haversine_miles(DALLAS.0, DALLAS.1, ATLANTA.0, ATLANTA.1) * 1.2;
    let driving = miles / 50.0;
    assert!(driving > 11.0, "{driving}");
    let solo = estimate(&recent, &route, None, false, &Speed::DEFAULT).unwrap();
    let team = estimate(&recent, &route, None, true, &Speed::DEFAULT).unwrap();
    let solo_hours = hours(t(0), solo.stops[0].at);
    let team_hours = hours(t(0), team.stops[0].at);
    // Solo: the 30-minute break at 8 h, the 10-hour rest at 11 h.
    assert!(
        (solo_hours - (driving + 0.5 + 10.0)).abs() < 0.02,
        "{solo_hours}"
    );
    // Team: a 30-minute stop every 8 hours of driving, no rest.
    let breaks = (driving / 8.0).floor() * 0.5;
    assert!(
        (team_hours - (driving + breaks)).abs() < 0.02,
        "{team_hours}"
    );
    assert_eq!(
        solo.hours_of_service
            .next_rest_at
            .map(|at| hours(t(0), at).round()),
        Some(12.0)
    );
    assert_eq!(team.hours_of_service.next_rest_at, None);
}

#[test]
fn at_a_stop_the_rest_of_its_dwell_comes_first() {
    let mut route = vec![
        stop(StopKind::Pickup, DALLAS, 120),
        stop(StopKind::Delivery, SHREVEPORT, 0),
    ];
    route[0].arrived_at = Some(t(-30));
    let recent = [fix(0, DALLAS, 0.0)];
    let eta = estimate(&recent, &route, None, false, &Speed::DEFAULT).unwrap();
    let first = haversine_miles(DALLAS.0, DALLAS.1, SHREVEPORT.0, SHREVEPORT.1) * 1.2;
    // 90 minutes of dwell left, then the drive.
    assert!((hours(t(0), eta.stops[0].at) - (1.5 + first / 50.0)).abs() < 0.01);
    assert_eq!(eta.stops[0].index, 1);
}

#[test]
fn late_risk_is_past_a_window_or_fifteen_minutes_past_a_time() {
    let window = Appointment {
        start: t(0),
        end: Some(t(120)),
    };
    assert!(!late_risk(t(120), Some(window)));
    assert!(late_risk(t(121), Some(window)));
    assert!(!late_risk(t(15), Some(Appointment::at(t(0)))));
    assert!(late_risk(t(16), Some(Appointment::at(t(0)))));
    assert!(!late_risk(t(10_000), None));
}

#[test]
fn nothing_is_estimated_without_a_fix_or_a_stop_ahead() {
    let mut route = vec![stop(StopKind::Pickup, DALLAS, 0)];
    assert!(estimate(&[], &route, None, false, &Speed::DEFAULT).is_none());
    route[0].done = true;
    let recent = [fix(0, DALLAS, 0.0)];
    assert!(estimate(&recent, &route, None, false, &Speed::DEFAULT).is_none());
}
