//! The series' writes against an in-memory table pair whose statements fail
//! where a test says (finding 3 of issue 38: one failed day row hid a day).

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::domain::tracking::{FixSource, GpsFix};
use crate::storage::scylla::faults::{Failure, Faults};

/// `gps_points` and `gps_point_days`, as maps; the points marked as waiting
/// for their changes, and the changes written (by event id).
#[derive(Default)]
struct FakeSeries {
    points: Mutex<BTreeMap<(LoadId, i64), f64>>,
    days: Mutex<BTreeSet<(LoadId, i32)>>,
    marked: Mutex<BTreeSet<(LoadId, i64)>>,
    changes: Mutex<Vec<String>>,
    faults: Faults,
}

impl FakeSeries {
    fn has_day(&self, load: &LoadId, day: i32) -> bool {
        self.days.lock().unwrap().contains(&(load.clone(), day))
    }

    fn stored_lat(&self, load: &LoadId, ts: i64) -> Option<f64> {
        self.points
            .lock()
            .unwrap()
            .get(&(load.clone(), ts))
            .copied()
    }

    fn insert(&self, point: &TrackingPoint) {
        let ts = keys::micros(&point.fix.timestamp);
        self.points
            .lock()
            .unwrap()
            .insert((point.load_id.clone(), ts), point.fix.lat);
    }
}

#[async_trait]
impl PointStatements for FakeSeries {
    /// As the real read: through the newest day row, then that day's newest point.
    async fn newest_stored(&self, load: &LoadId) -> StorageResult<Option<i64>> {
        self.faults.run("newest_stored", || {
            let days = self.days.lock().unwrap();
            let day = days
                .iter()
                .rev()
                .find(|(l, _)| l == load)
                .map(|(_, d)| *d)?;
            let points = self.points.lock().unwrap();
            points
                .keys()
                .filter(|(l, ts)| l == load && keys::day(*ts) == day)
                .map(|(_, ts)| *ts)
                .max()
        })
    }

    async fn put_point(&self, point: &TrackingPoint) -> StorageResult<()> {
        self.faults.run("put_point", || self.insert(point))
    }

    async fn put_point_if_new(&self, point: &TrackingPoint) -> StorageResult<IfNew> {
        self.faults.run("put_point_if_new", || {
            let ts = keys::micros(&point.fix.timestamp);
            let mut points = self.points.lock().unwrap();
            let mut marked = self.marked.lock().unwrap();
            let key = (point.load_id.clone(), ts);
            if points.contains_key(&key) {
                return IfNew::Stored {
                    changes_pending: marked.contains(&key),
                };
            }
            points.insert(key.clone(), point.fix.lat);
            if point.event.is_some() || point.stops.is_some() {
                marked.insert(key);
            }
            IfNew::Inserted
        })
    }

    async fn put_point_day(&self, load: &LoadId, day: i32) -> StorageResult<()> {
        self.faults.run("put_point_day", || {
            self.days.lock().unwrap().insert((load.clone(), day));
        })
    }

    async fn put_with_changes(&self, point: &TrackingPoint, row: Row) -> StorageResult<()> {
        self.faults.run("put_with_changes", || {
            let key = (point.load_id.clone(), keys::micros(&point.fix.timestamp));
            match row {
                Row::Write => self.insert(point),
                Row::Marked => {
                    self.marked.lock().unwrap().remove(&key);
                }
            }
            if let Some(event) = &point.event {
                self.changes.lock().unwrap().push(event.id.to_string());
            }
            let day = keys::day(keys::micros(&point.fix.timestamp));
            self.days
                .lock()
                .unwrap()
                .insert((point.load_id.clone(), day));
        })
    }
}

fn point(load: &LoadId, at: &str, lat: f64) -> TrackingPoint {
    TrackingPoint {
        load_id: load.clone(),
        fix: GpsFix {
            timestamp: at.parse().unwrap(),
            lat,
            lng: -96.8,
            speed_mph: Some(55.0),
            heading_deg: None,
            source: FixSource::Api,
        },
        event: None,
        stops: None,
    }
}

fn day_of(at: &str) -> i32 {
    keys::day(keys::micros(&at.parse().unwrap()))
}

const MORNING: &str = "2026-11-27T08:00:00Z";
const NOON: &str = "2026-11-27T12:00:00Z";
const EVENING: &str = "2026-11-27T18:00:00Z";

#[tokio::test]
async fn a_retry_after_the_day_row_failed_writes_the_day_row() {
    let st = FakeSeries::default();
    let remembered = Remembered::default();
    let load = LoadId::generate();
    // The point lands; its day row does not.
    st.faults.fail("put_point_day", 1, Failure::Before);
    let failed = append(&st, &remembered, vec![point(&load, MORNING, 32.0)]).await;
    assert!(failed.is_err(), "the batch is not acknowledged");
    assert!(
        st.stored_lat(&load, keys::micros(&MORNING.parse().unwrap()))
            .is_some()
    );
    assert!(!st.has_day(&load, day_of(MORNING)));

    // The client retries: the point is there, and the day row is written now.
    let retried = append(&st, &remembered, vec![point(&load, MORNING, 32.0)]).await;
    assert_eq!(retried.unwrap(), [Appended::Duplicate]);
    assert!(
        st.has_day(&load, day_of(MORNING)),
        "the retry repaired the day"
    );
}

#[tokio::test]
async fn a_later_fix_of_a_day_whose_row_failed_writes_it() {
    let st = FakeSeries::default();
    let remembered = Remembered::default();
    let load = LoadId::generate();
    st.faults.fail("put_point_day", 1, Failure::Before);
    let failed = append(&st, &remembered, vec![point(&load, MORNING, 32.0)]).await;
    assert!(failed.is_err());
    // Not retried: the next fix of the day does not take the day as known
    // (the morning's failed), and writes its row.
    let later = append(&st, &remembered, vec![point(&load, NOON, 32.1)]).await;
    assert_eq!(later.unwrap(), [Appended::Stored]);
    assert!(st.has_day(&load, day_of(NOON)));
    // Once written, the day is known: the evening fix is one write.
    let before = st.faults.count("put_point_day");
    let evening = append(&st, &remembered, vec![point(&load, EVENING, 32.2)]).await;
    assert_eq!(evening.unwrap(), [Appended::Stored]);
    assert_eq!(
        st.faults.count("put_point_day"),
        before,
        "no day row for a known day"
    );
}

#[tokio::test]
async fn a_point_that_landed_before_its_batch_failed_is_still_a_duplicate() {
    let st = FakeSeries::default();
    let remembered = Remembered::default();
    let load = LoadId::generate();
    let ts = keys::micros(&NOON.parse().unwrap());
    st.faults.fail("put_point", 1, Failure::After);
    assert!(
        append(&st, &remembered, vec![point(&load, NOON, 32.0)])
            .await
            .is_err()
    );
    // Another fix at the same time with other values: the first value stays.
    let again = append(&st, &remembered, vec![point(&load, NOON, 40.0)]).await;
    assert_eq!(again.unwrap(), [Appended::Duplicate]);
    assert_eq!(st.stored_lat(&load, ts), Some(32.0));
    assert!(st.has_day(&load, day_of(NOON)));
}

#[tokio::test]
async fn a_point_that_did_not_land_is_stored_by_its_retry() {
    let st = FakeSeries::default();
    let remembered = Remembered::default();
    let load = LoadId::generate();
    st.faults.fail("put_point", 1, Failure::Before);
    assert!(
        append(&st, &remembered, vec![point(&load, NOON, 32.0)])
            .await
            .is_err()
    );
    let retried = append(&st, &remembered, vec![point(&load, NOON, 32.0)]).await;
    assert_eq!(retried.unwrap(), [Appended::Stored]);
    assert_eq!(
        st.stored_lat(&load, keys::micros(&NOON.parse().unwrap())),
        Some(32.0)
    );
    assert!(st.has_day(&load, day_of(NOON)));
}

#[tokio::test]
async fn a_new_process_reads_what_is_stored_and_a_repeat_in_a_batch_is_one_write() {
    let st = FakeSeries::default();
    let load = LoadId::generate();
    let first = append(&st, &Remembered::default(), vec![point(&load, NOON, 32.0)]).await;
    assert_eq!(first.unwrap(), [Appended::Stored]);
    // Another process (a new lease holder) remembers nothing: it reads the
    // series, finds the noon point, and takes a repeat of it as one.
    let other = Remembered::default();
    let batch = vec![
        point(&load, NOON, 41.0),
        point(&load, EVENING, 32.2),
        point(&load, EVENING, 32.2),
    ];
    let outcomes = append(&st, &other, batch).await.unwrap();
    assert_eq!(
        outcomes,
        [Appended::Duplicate, Appended::Stored, Appended::Duplicate]
    );
    assert_eq!(st.faults.count("newest_stored"), 2, "one read per process");
    assert_eq!(st.faults.count("put_point"), 2, "noon once, evening once");
}

/// A late point carrying an event, as the ingest path makes one per try.
fn with_event(load: &LoadId, at: &str, lat: f64) -> TrackingPoint {
    use crate::domain::event::{Event, EventType};
    let mut point = point(load, at, lat);
    point.event = Some(Event::new(
        crate::domain::ids::AccountId::generate(),
        load.clone(),
        EventType::TrackingUpdated,
        1,
        at.parse().unwrap(),
        serde_json::json!({"status": "in_transit"}),
    ));
    point
}

#[tokio::test]
async fn a_late_point_whose_changes_failed_gets_them_from_its_retry() {
    let st = FakeSeries::default();
    let remembered = Remembered::default();
    let load = LoadId::generate();
    append(&st, &remembered, vec![point(&load, EVENING, 32.2)])
        .await
        .unwrap();
    // Late: a conditional insert, which lands; then its changes fail.
    st.faults.fail("put_with_changes", 1, Failure::Before);
    let failed = append(&st, &remembered, vec![with_event(&load, NOON, 32.1)]).await;
    assert!(failed.is_err(), "not acknowledged");
    assert!(st.changes.lock().unwrap().is_empty());

    // The retry finds the point stored and still waiting: it writes the
    // changes and is answered as the store of the point, once.
    let retry = with_event(&load, NOON, 32.1);
    let id = retry.event.as_ref().unwrap().id.to_string();
    let retried = append(&st, &remembered, vec![retry]).await;
    assert_eq!(retried.unwrap(), [Appended::Stored]);
    assert_eq!(*st.changes.lock().unwrap(), [id]);
    let again = append(&st, &remembered, vec![with_event(&load, NOON, 32.1)]).await;
    assert_eq!(again.unwrap(), [Appended::Duplicate]);
    assert_eq!(st.changes.lock().unwrap().len(), 1, "no second event");
}

#[tokio::test]
async fn a_late_point_whose_changes_landed_unanswered_is_a_duplicate_on_retry() {
    let st = FakeSeries::default();
    let remembered = Remembered::default();
    let load = LoadId::generate();
    append(&st, &remembered, vec![point(&load, EVENING, 32.2)])
        .await
        .unwrap();
    // The batch applied (its mark cleared with it) but the client saw a timeout.
    st.faults.fail("put_with_changes", 1, Failure::After);
    assert!(
        append(&st, &remembered, vec![with_event(&load, NOON, 32.1)])
            .await
            .is_err()
    );
    let retried = append(&st, &remembered, vec![with_event(&load, NOON, 32.1)]).await;
    assert_eq!(retried.unwrap(), [Appended::Duplicate]);
    assert_eq!(st.changes.lock().unwrap().len(), 1, "the event once");
}
