//! GPS points: ordered, deduplicated, read by range.

use std::num::NonZeroI64;

use chrono::DateTime;
use freight::domain::event::{Event, EventType};
use freight::domain::hos::DriverClock;
use freight::domain::ids::{AccountId, LoadId, StopId};
use freight::domain::stops::{StopKey, StopProgress, StopTimer, StopsProgress};
use freight::domain::tracking::{Appended, FixSource, GpsFix, StopsChange, TrackingPoint};
use freight::storage::{PointRange, StopTimerEntry, Storage};

fn fix(seconds: i64, lat: f64) -> GpsFix {
    GpsFix {
        timestamp: DateTime::from_timestamp(1_780_000_000 + seconds, 0).expect("valid"),
        lat,
        lng: -96.8,
        speed_mph: (seconds % 2 == 0).then_some(55.5),
        heading_deg: None,
        // Every source, so each backend shows it keeps them.
        source: FixSource::ALL[seconds.unsigned_abs() as usize % FixSource::ALL.len()],
    }
}

pub async fn points_are_ordered_deduplicated_and_ranged(store: &dyn Storage) {
    let load = LoadId::generate();
    let other = LoadId::generate();
    let point = |load: &LoadId, seconds, lat| TrackingPoint {
        load_id: load.clone(),
        fix: fix(seconds, lat),
        event: None,
        stops: None,
    };
    // Out of order, with a repeat inside the batch and a point of another load.
    let outcomes = store
        .append_points(vec![
            point(&load, 20, 1.0),
            point(&load, 10, 2.0),
            point(&load, 30, 3.0),
            point(&load, 10, 9.0),
            point(&other, 15, 4.0),
        ])
        .await
        .unwrap();
    use Appended::{Duplicate, Stored};
    assert_eq!(outcomes, [Stored, Stored, Stored, Duplicate, Stored]);
    // A repeat across batches keeps the first point; a point older than its
    // load's newest that was never stored is stored.
    let again = store
        .append_points(vec![
            point(&load, 20, 7.0),
            point(&other, 5, 8.0),
            point(&load, 40, 5.0),
            point(&other, 15, 0.0),
        ])
        .await
        .unwrap();
    assert_eq!(again, [Duplicate, Stored, Stored, Duplicate]);
    let others = store
        .load_points(&other, PointRange::latest(10))
        .await
        .unwrap();
    assert_eq!(others, [fix(15, 4.0), fix(5, 8.0)]);

    let all = store
        .load_points(&load, PointRange::latest(100))
        .await
        .unwrap();
    let seconds: Vec<i64> = all
        .iter()
        .map(|f| f.timestamp.timestamp() - 1_780_000_000)
        .collect();
    assert_eq!(seconds, [40, 30, 20, 10], "newest first, one per timestamp");
    assert_eq!(all[2], fix(20, 1.0), "the first stored point wins");
    assert_eq!(all[3].lat, 2.0);

    let latest_two = store
        .load_points(&load, PointRange::latest(2))
        .await
        .unwrap();
    assert_eq!(latest_two, all[..2]);
    let window = PointRange {
        from: fix(10, 0.0).timestamp,
        to: fix(30, 0.0).timestamp,
        before: None,
        limit: 100,
    };
    assert_eq!(store.load_points(&load, window).await.unwrap(), all[1..]);
    let next_page = PointRange {
        before: Some(fix(30, 0.0).timestamp),
        ..window
    };
    assert_eq!(store.load_points(&load, next_page).await.unwrap(), all[2..]);
    assert_eq!(
        store
            .count_points(&load, window.from, window.to)
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        store
            .count_points(&LoadId::generate(), window.from, window.to)
            .await
            .unwrap(),
        0
    );
    let empty = PointRange {
        from: fix(30, 0.0).timestamp,
        to: fix(10, 0.0).timestamp,
        ..window
    };
    assert!(store.load_points(&load, empty).await.unwrap().is_empty());
}

/// A gateway's fixes arriving out of order, over many batches and further
/// apart than any backend remembers recent times for: each is stored once,
/// each repeat is answered duplicate, whichever batch it comes in.
pub async fn late_fixes_over_many_batches_are_told_apart_exactly(store: &dyn Storage) {
    let loads = [LoadId::generate(), LoadId::generate()];
    let point = |load: &LoadId, seconds: i64| TrackingPoint {
        load_id: load.clone(),
        fix: fix(seconds, seconds as f64 / 1000.0),
        event: None,
        stops: None,
    };
    // A fixed pseudo-random sequence (no dependency, same every run).
    let mut state = 0x2545_f491_u64;
    let mut next = move |below: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % below
    };
    let mut stored = std::collections::HashSet::new();
    // What was sent, in order, to pick repeats from.
    let mut history: Vec<(usize, i64)> = Vec::new();
    for round in 0..60i64 {
        let mut batch = Vec::new();
        for _ in 0..12 {
            // Mostly near the front (late by up to 40 s), sometimes far
            // behind it (late by up to 400 s), sometimes a repeat of any
            // earlier fix.
            let key = match next(10) {
                0 => (next(2) as usize, (round * 10 - next(400) as i64).max(0)),
                1 if !history.is_empty() => history[next(history.len() as u64) as usize],
                _ => (next(2) as usize, (round * 10 + 40 - next(80) as i64).max(0)),
            };
            batch.push(key);
            history.push(key);
        }
        let expected: Vec<Appended> = batch
            .iter()
            .map(|key| {
                if stored.insert(*key) {
                    Appended::Stored
                } else {
                    Appended::Duplicate
                }
            })
            .collect();
        let points = batch.iter().map(|(l, s)| point(&loads[*l], *s)).collect();
        let outcomes = store.append_points(points).await.unwrap();
        assert_eq!(outcomes, expected, "round {round}: {batch:?}");
    }
    for (n, load) in loads.iter().enumerate() {
        let mut seconds: Vec<i64> = store
            .load_points(load, PointRange::latest(10_000))
            .await
            .unwrap()
            .iter()
            .map(|f| f.timestamp.timestamp() - 1_780_000_000)
            .collect();
        seconds.reverse();
        let mut expected: Vec<i64> = stored
            .iter()
            .filter(|(l, _)| *l == n)
            .map(|(_, s)| *s)
            .collect();
        expected.sort_unstable();
        assert_eq!(seconds, expected, "load {n}");
    }
}

/// A point's stop progress and milestone events are written with it, or not
/// at all (a duplicate's are not); of one load's changes in a batch, the
/// newest fix's progress is the one kept, whatever the order sent.
pub async fn stop_progress_is_written_with_its_point(store: &dyn Storage) {
    let account = AccountId::generate();
    let load = LoadId::generate();
    // Three stops by id, the second skipped, and the driver's clock.
    let ids = [StopId::generate(), StopId::generate(), StopId::generate()];
    let progress = |arrived: i64, departed: Option<i64>| {
        let mut driver = DriverClock::default();
        driver.observe(&fix(arrived, 0.0));
        StopsProgress {
            stops: vec![
                (
                    StopKey::Id(ids[0].clone()),
                    StopProgress {
                        arrived_at: NonZeroI64::new(fix(arrived, 0.0).timestamp.timestamp_micros()),
                        departed_at: departed.and_then(|d| {
                            NonZeroI64::new(fix(d, 0.0).timestamp.timestamp_micros())
                        }),
                        ..StopProgress::default()
                    },
                ),
                (
                    StopKey::Id(ids[1].clone()),
                    StopProgress {
                        skipped_at: NonZeroI64::new(fix(arrived, 0.0).timestamp.timestamp_micros()),
                        ..StopProgress::default()
                    },
                ),
                (StopKey::Id(ids[2].clone()), StopProgress::default()),
            ],
            driver: Some(driver),
        }
    };
    let event = |sequence: u64, kind: EventType| {
        Event::new(
            account.clone(),
            load.clone(),
            kind,
            sequence,
            fix(0, 0.0).timestamp,
            serde_json::json!({"load_id": load.as_str(), "stop": "pickup"}),
        )
    };
    let point = |seconds: i64, progress: StopsProgress, events: Vec<Event>| TrackingPoint {
        load_id: load.clone(),
        fix: fix(seconds, 1.0),
        event: None,
        stops: Some(Box::new(StopsChange {
            progress,
            events,
            timer: None,
        })),
    };
    assert_eq!(store.load_stops(&load).await.unwrap(), None);

    let arrived = event(1, EventType::LoadArrived);
    let outcomes = store
        .append_points(vec![point(10, progress(10, None), vec![arrived.clone()])])
        .await
        .unwrap();
    assert_eq!(outcomes, [Appended::Stored]);
    assert_eq!(
        store.load_stops(&load).await.unwrap(),
        Some(progress(10, None))
    );
    assert_eq!(store.get_event(&arrived.id).await.unwrap(), Some(arrived));

    // A duplicate's change is not written.
    let ghost = event(2, EventType::LoadDeparted);
    let outcomes = store
        .append_points(vec![point(10, progress(10, Some(10)), vec![ghost.clone()])])
        .await
        .unwrap();
    assert_eq!(outcomes, [Appended::Duplicate]);
    assert_eq!(
        store.load_stops(&load).await.unwrap(),
        Some(progress(10, None))
    );
    assert_eq!(store.get_event(&ghost.id).await.unwrap(), None);

    // Newest first in the batch: the newest fix's progress is kept.
    let departed = event(3, EventType::LoadDeparted);
    let outcomes = store
        .append_points(vec![
            point(30, progress(10, Some(30)), vec![departed.clone()]),
            point(20, progress(10, None), Vec::new()),
        ])
        .await
        .unwrap();
    assert_eq!(outcomes, [Appended::Stored, Appended::Stored]);
    assert_eq!(
        store.load_stops(&load).await.unwrap(),
        Some(progress(10, Some(30)))
    );
    assert_eq!(store.get_event(&departed.id).await.unwrap(), Some(departed));
    assert_eq!(store.load_stops(&LoadId::generate()).await.unwrap(), None);
}

/// A load's detention clock is set and cleared with its points (not by a
/// duplicate), listed while set, and ended with the event it fired.
pub async fn stop_timers_follow_their_points(store: &dyn Storage) {
    let account = AccountId::generate();
    let load = LoadId::generate();
    let due = fix(7_200, 0.0).timestamp;
    let point = |seconds: i64, timer: StopTimer| TrackingPoint {
        load_id: load.clone(),
        fix: fix(seconds, 1.0),
        event: None,
        stops: Some(Box::new(StopsChange {
            progress: StopsProgress::default(),
            events: Vec::new(),
            timer: Some(timer),
        })),
    };
    let mine = |timers: Vec<StopTimerEntry>| -> Vec<StopTimerEntry> {
        timers.into_iter().filter(|t| t.load == load).collect()
    };
    let stop = StopKey::Id(StopId::generate());
    let set = StopTimer::Set {
        stop: stop.clone(),
        due,
    };
    store
        .append_points(vec![point(10, set.clone())])
        .await
        .unwrap();
    let expected = StopTimerEntry {
        load: load.clone(),
        stop,
        due,
    };
    assert_eq!(
        mine(store.stop_timers().await.unwrap()),
        std::slice::from_ref(&expected)
    );

    // A duplicate's clear is not written; a new point's is.
    let outcomes = store
        .append_points(vec![point(10, StopTimer::Clear)])
        .await
        .unwrap();
    assert_eq!(outcomes, [Appended::Duplicate]);
    assert_eq!(
        mine(store.stop_timers().await.unwrap()),
        std::slice::from_ref(&expected)
    );
    store
        .append_points(vec![point(20, StopTimer::Clear)])
        .await
        .unwrap();
    assert!(mine(store.stop_timers().await.unwrap()).is_empty());

    // Set again, then ended with the event it fired.
    store.append_points(vec![point(30, set)]).await.unwrap();
    let fired = Event::new(
        account,
        load.clone(),
        EventType::LoadDetentionStarted,
        9,
        due,
        serde_json::json!({"load_id": load.as_str(), "stop": "delivery"}),
    );
    store.end_stop_timer(&load, Some(&fired)).await.unwrap();
    assert!(mine(store.stop_timers().await.unwrap()).is_empty());
    assert_eq!(store.get_event(&fired.id).await.unwrap(), Some(fired));
    // Ending a clock that is not set is harmless.
    store.end_stop_timer(&load, None).await.unwrap();
}
