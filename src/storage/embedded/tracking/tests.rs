use chrono::{Duration, TimeZone};

use super::*;
use crate::domain::tracking::FixSource;
use crate::storage::embedded::keys::OlderPointLayout;

fn fix(at: DateTime<Utc>, lat: f64) -> GpsFix {
    GpsFix {
        timestamp: at,
        lat,
        lng: -96.8,
        speed_mph: Some(55.0),
        heading_deg: None,
        source: FixSource::Api,
    }
}

fn point(load: &LoadId, fix: GpsFix) -> TrackingPoint {
    TrackingPoint {
        load_id: load.clone(),
        fix,
        event: None,
        stops: None,
    }
}

async fn append_one(store: &EmbeddedStore, load: &LoadId, fix: GpsFix) -> Appended {
    let mut outcomes = store.append_points(vec![point(load, fix)]).await.unwrap();
    assert_eq!(outcomes.len(), 1);
    outcomes.remove(0)
}

/// The times of the load's newest `n` points, newest first.
async fn latest(store: &EmbeddedStore, load: &LoadId, n: usize) -> Vec<DateTime<Utc>> {
    let fixes = store
        .load_points(load, PointRange::latest(n))
        .await
        .unwrap();
    fixes.iter().map(|f| f.timestamp).collect()
}

/// A data directory with points in older layouts' keyspaces, as the store
/// wrote them before `gps_track`.
fn write_older(path: &std::path::Path, points: &[(OlderPointLayout, LoadId, GpsFix)]) {
    let db = fjall::Database::builder(path).open().unwrap();
    for (layout, load, fix) in points {
        db.keyspace(layout.keyspace(), fjall::KeyspaceCreateOptions::default)
            .unwrap()
            .insert(
                keys::point_key(&layout.load_part(load), &fix.timestamp),
                keys::encode_point(fix),
            )
            .unwrap();
    }
    db.persist(PersistMode::SyncAll).unwrap();
}

#[tokio::test]
async fn points_of_older_layouts_are_read_merged_and_still_count_as_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let base = Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap();
    let at = |minutes: i64| base + Duration::minutes(minutes);
    let (load, other) = (LoadId::generate(), LoadId::generate());
    // Older points at minutes 0 and 10 in the first layout, 20 in the
    // second, and one of another load.
    let (first, second) = (OlderPointLayout::LoadId, OlderPointLayout::UlidText);
    write_older(
        dir.path(),
        &[
            (first, load.clone(), fix(at(0), 1.0)),
            (first, load.clone(), fix(at(10), 2.0)),
            (second, load.clone(), fix(at(20), 3.0)),
            (second, other.clone(), fix(at(30), 9.0)),
        ],
    );

    let store = EmbeddedStore::open(dir.path()).await.unwrap();
    let times = |fixes: Vec<GpsFix>| fixes.iter().map(|f| f.timestamp).collect::<Vec<_>>();
    assert_eq!(latest(&store, &load, 10).await, [at(20), at(10), at(0)]);

    // An older layout's timestamp again is a duplicate, whether it is the newest or not;
    // a later fix and one between older ones are stored in the new layout.
    let outcomes = store
        .append_points(vec![
            point(&load, fix(at(20), 7.0)),
            point(&load, fix(at(10), 7.0)),
            point(&load, fix(at(25), 4.0)),
            point(&load, fix(at(5), 5.0)),
        ])
        .await
        .unwrap();
    assert_eq!(
        outcomes,
        [
            Appended::Duplicate,
            Appended::Duplicate,
            Appended::Stored,
            Appended::Stored
        ]
    );
    // After a restart (no remembered newest point) the older ones still count.
    drop(store);
    let store = EmbeddedStore::open(dir.path()).await.unwrap();
    assert_eq!(
        append_one(&store, &load, fix(at(0), 7.0)).await,
        Appended::Duplicate
    );

    // Reads merge both layouts newest first, within the range and the limit.
    let all = store
        .load_points(&load, PointRange::latest(10))
        .await
        .unwrap();
    assert_eq!(times(all.clone()), [at(25), at(20), at(10), at(5), at(0)]);
    assert_eq!(
        all.iter().map(|f| f.lat).collect::<Vec<_>>(),
        [4.0, 3.0, 2.0, 5.0, 1.0],
        "the first stored value of each timestamp is kept"
    );
    assert_eq!(latest(&store, &load, 3).await, [at(25), at(20), at(10)]);
    let page = PointRange {
        from: at(5),
        to: at(25),
        before: Some(at(20)),
        limit: 2,
    };
    assert_eq!(
        times(store.load_points(&load, page).await.unwrap()),
        [at(10), at(5)]
    );
    assert_eq!(store.count_points(&load, at(0), at(20)).await.unwrap(), 4);
    assert_eq!(store.count_points(&load, at(1), at(24)).await.unwrap(), 3);
    // The other load's older point stays its own.
    assert_eq!(latest(&store, &other, 10).await, [at(30)]);
    assert_eq!(
        append_one(&store, &other, fix(at(30), 1.0)).await,
        Appended::Duplicate
    );
}

/// The window a late fix reads holds the newest times of every layout
/// together: each layout's newest, merged, the newest of those kept.
#[tokio::test]
async fn a_window_read_across_layouts_holds_the_newest_of_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let base = Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap();
    let at = |seconds: i64| base + Duration::seconds(seconds);
    let micros = |seconds: i64| at(seconds).timestamp_micros() as u64;
    let (load, other) = (LoadId::generate(), LoadId::generate());
    // Seconds 0 to 99 in two older layouts, even and odd; another load's
    // points among them.
    let (first, second) = (OlderPointLayout::LoadId, OlderPointLayout::UlidText);
    let mut older: Vec<_> = (0..100)
        .map(|n| {
            let layout = if n % 2 == 0 { first } else { second };
            (layout, load.clone(), fix(at(n), 1.0))
        })
        .collect();
    older.push((first, other.clone(), fix(at(500), 1.0)));
    write_older(dir.path(), &older);
    let store = EmbeddedStore::open(dir.path()).await.unwrap();
    // And 100 to 109 in the current one.
    let current: Vec<_> = (100..110).map(|n| point(&load, fix(at(n), 1.0))).collect();
    store.append_points(current).await.unwrap();

    let inner = store.shared.current().unwrap();
    let window = newest_times(&inner, &load, 64).unwrap();
    assert_eq!(window, (46..110).map(micros).collect::<Vec<_>>());
    // Fewer stored than asked for: all of them.
    let all = newest_times(&inner, &load, 200).unwrap();
    assert_eq!(all, (0..110).map(micros).collect::<Vec<_>>());
    assert_eq!(newest_times(&inner, &other, 64).unwrap(), [micros(500)]);
}

/// A batch sent again (a device retrying after a lost answer) is all
/// duplicates, told apart exactly; the load's newest times are then read
/// into memory once, so the resent fixes within them need no lookup.
#[tokio::test]
async fn a_batch_sent_again_is_told_apart_from_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).await.unwrap();
    let base = Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap();
    let at = |seconds: i64| base + Duration::seconds(seconds);
    let load = LoadId::generate();
    let batch: Vec<TrackingPoint> = (0..100)
        .map(|n| point(&load, fix(at(2 * n), 1.0)))
        .collect();
    let first = store.append_points(batch.clone()).await.unwrap();
    assert!(first.iter().all(|o| *o == Appended::Stored));

    // Sent again, with two fixes it had missed among them.
    let mut again = batch.clone();
    again.insert(50, point(&load, fix(at(101), 2.0)));
    again.insert(90, point(&load, fix(at(179), 2.0)));
    let outcomes = store.append_points(again.clone()).await.unwrap();
    for (n, (outcome, sent)) in outcomes.iter().zip(&again).enumerate() {
        let new = sent.fix.lat == 2.0;
        let expected = if new {
            Appended::Stored
        } else {
            Appended::Duplicate
        };
        assert_eq!(*outcome, expected, "fix {n} at {}", sent.fix.timestamp);
    }

    {
        let inner = store.shared.current().unwrap();
        let recent = inner.recent_points.lock().unwrap();
        let micros = |seconds: i64| at(seconds).timestamp_micros() as u64;
        // The newest times are known, the two late fixes among them...
        for seconds in [198, 180, 179] {
            assert_eq!(recent.answer(&load, micros(seconds)), Answer::Stored);
        }
        assert_eq!(recent.answer(&load, micros(181)), Answer::New);
        // ...and below the window read from the store, the store decides.
        assert_eq!(recent.answer(&load, micros(0)), Answer::LookUp);
    }

    // After a restart, memory starts over from the store.
    drop(store);
    let store = EmbeddedStore::open(dir.path()).await.unwrap();
    let outcomes = store.append_points(again).await.unwrap();
    assert!(outcomes.iter().all(|o| *o == Appended::Duplicate));
    assert_eq!(latest(&store, &load, 200).await.len(), 102);
}

#[tokio::test]
async fn a_new_data_directory_has_no_older_points_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).await.unwrap();
    let load = LoadId::generate();
    append_one(&store, &load, fix(Utc::now(), 1.0)).await;
    let inner = store.shared.current().unwrap();
    assert!(inner.older_points.is_empty());
    for layout in OlderPointLayout::ALL {
        assert!(!inner.db.keyspace_exists(layout.keyspace()), "{layout:?}");
    }
}

#[test]
fn timers_read_back_by_stop_id_and_in_the_two_stop_form() {
    let load = LoadId::generate();
    let due = DateTime::from_timestamp_micros(1_790_000_000_123_456).unwrap();
    let key = load.as_str().as_bytes();
    for stop in [
        StopKey::Id(StopId::generate()),
        StopKey::Legacy(StopKind::Pickup),
        StopKey::Legacy(StopKind::Delivery),
    ] {
        let entry = decode_timer(key, &encode_timer(&stop, &due)).unwrap();
        assert_eq!(
            (entry.load, entry.stop, entry.due),
            (load.clone(), stop, due)
        );
    }
    // As an older build wrote it: the kind's code and the due time.
    let mut legacy = vec![1];
    legacy.extend_from_slice(&due.timestamp_micros().to_be_bytes());
    let entry = decode_timer(key, &legacy).unwrap();
    assert_eq!(entry.stop, StopKey::Legacy(StopKind::Delivery));
    assert!(decode_timer(key, &[7, 0]).is_none());
}
