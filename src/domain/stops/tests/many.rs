//! Loads of more than two stops: visited in order, skipped when the truck
//! goes on to a later one, one arrival at a time.

use super::*;
use crate::domain::ids::StopId;

/// Stops every 20 km north of `PICKUP`: a pickup, then deliveries; the
/// last one back at `PICKUP` when `round_trip`.
fn route(count: usize, round_trip: bool) -> Vec<Stop> {
    (0..count)
        .map(|i| {
            let north = if round_trip && i + 1 == count {
                0.0
            } else {
                20_000.0 * i as f64
            };
            let kind = if i == 0 {
                StopKind::Pickup
            } else {
                StopKind::Delivery
            };
            let lat = PICKUP.0 + north / M_PER_DEG;
            Stop::simple(
                StopId::generate(),
                kind,
                place("75201", Some((lat, PICKUP.1)), None),
                None,
            )
        })
        .collect()
}

/// Stopped at the `index`th stop from `minute` for half an hour, then gone.
fn visit(index: usize, minute: f64) -> Vec<GpsFix> {
    let north = 20_000.0 * index as f64;
    vec![
        at(minute, north - 3_000.0, Some(50.0)),
        at(minute + 2.0, north + 50.0, Some(2.0)),
        at(minute + 30.0, north - 30.0, Some(0.0)),
        at(minute + 33.0, north + 2_000.0, Some(40.0)),
    ]
}

fn kinds(milestones: &[Milestone]) -> Vec<(&'static str, u32)> {
    milestones
        .iter()
        .map(|m| match m {
            Milestone::Arrived { stop, .. } => ("arrived", stop.sequence),
            Milestone::Departed { stop, .. } => ("departed", stop.sequence),
            Milestone::Skipped { stop, .. } => ("skipped", stop.sequence),
        })
        .collect()
}

#[test]
fn four_stops_are_visited_in_order() {
    let stops = route(4, false);
    let mut watch = StopWatch::new(&stops, 120, &StopsProgress::default(), None);
    let trip: Vec<GpsFix> = (0..4).flat_map(|i| visit(i, 60.0 * i as f64)).collect();
    let milestones = all(&mut watch, &trip);
    assert_eq!(
        kinds(&milestones),
        [
            ("arrived", 1),
            ("departed", 1),
            ("arrived", 2),
            ("departed", 2),
            ("arrived", 3),
            ("departed", 3),
            ("arrived", 4),
            ("departed", 4),
        ]
    );
    assert!(
        matches!(&milestones[7], Milestone::Departed { stop, .. } if stop.last && stop.id == stops[3].id)
    );
    assert_eq!(watch.current(), None);
    assert_eq!(watch.frozen().len(), 4);
}

#[test]
fn arriving_at_a_later_stop_skips_the_ones_before_it() {
    let stops = route(4, false);
    let mut watch = StopWatch::new(&stops, 120, &StopsProgress::default(), None);
    let mut trip = visit(0, 0.0);
    // North past stop 2 at 15 mph, fixes every 2 minutes, without stopping.
    trip.extend((0..43).map(|n| {
        at(
            35.0 + 2.0 * n as f64,
            2_800.0 + 800.0 * n as f64,
            Some(15.0),
        )
    }));
    trip.extend(visit(2, 120.0));
    let milestones = all(&mut watch, &trip);
    assert_eq!(
        kinds(&milestones),
        [
            ("arrived", 1),
            ("departed", 1),
            ("skipped", 2),
            ("arrived", 3),
            ("departed", 3)
        ]
    );
    let skipped = progress_of(&watch, 1);
    assert_eq!(skipped.skipped(), Some(minute(122.0)));
    assert!(skipped.done());
    assert_eq!(watch.current(), Some(3));
}

#[test]
fn at_one_stop_no_other_is_arrived_at() {
    // The last stop is where the first is: at the pickup, only the pickup
    // arrives; the return arrives at the last.
    let stops = route(3, true);
    let mut watch = StopWatch::new(&stops, 120, &StopsProgress::default(), None);
    assert_eq!(
        kinds(&all(&mut watch, &visit(0, 0.0))),
        [("arrived", 1), ("departed", 1)]
    );
    assert_eq!(
        kinds(&all(&mut watch, &visit(1, 60.0))),
        [("arrived", 2), ("departed", 2)]
    );
    assert_eq!(
        kinds(&all(&mut watch, &visit(0, 120.0))),
        [("arrived", 3), ("departed", 3)]
    );
}

#[test]
fn a_stop_skipped_by_a_client_is_not_watched() {
    let mut stops = route(3, false);
    stops[1].skipped_at = Some(minute(0.0));
    let mut watch = StopWatch::new(&stops, 120, &StopsProgress::default(), None);
    let mut trip = visit(0, 0.0);
    trip.extend(visit(1, 60.0));
    trip.extend(visit(2, 120.0));
    assert_eq!(
        kinds(&all(&mut watch, &trip)),
        [
            ("arrived", 1),
            ("departed", 1),
            ("arrived", 3),
            ("departed", 3)
        ]
    );
}

#[test]
fn progress_follows_stops_by_id_when_they_are_reordered() {
    let stops = route(4, false);
    let mut watch = StopWatch::new(&stops, 120, &StopsProgress::default(), None);
    all(&mut watch, &visit(0, 0.0));
    let mut reordered = stops.clone();
    reordered.swap(1, 2);
    watch.replan(&reordered, 120);
    assert!(progress_of(&watch, 0).departed().is_some());
    assert_eq!(watch.stop(1).map(|s| &s.id), Some(&stops[2].id));
    // The next stop is now the old third one, 40 km north.
    assert_eq!(
        kinds(&all(&mut watch, &visit(2, 60.0))),
        [("arrived", 2), ("departed", 2)]
    );
}
