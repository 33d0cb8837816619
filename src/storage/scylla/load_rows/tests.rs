//! A load's row and follow-up against an in-memory table whose statements
//! fail where a test says (issue 38, findings 1 and 2).

use std::collections::HashMap;
use std::sync::Mutex;

use super::*;
use crate::domain::event::EventType;
use crate::domain::load::LoadStatus;
use crate::storage::scylla::faults::{Failure, Faults};

#[derive(Clone)]
struct Row {
    version: i64,
    record: String,
    pending: Option<String>,
}

/// `loads`, and what the follow-up writes: the version each load is listed
/// at, and the events written, by id.
#[derive(Default)]
struct FakeLoads {
    rows: Mutex<HashMap<LoadId, Row>>,
    listed: Mutex<HashMap<LoadId, u64>>,
    totals: Mutex<HashMap<String, i64>>,
    events: Mutex<Vec<String>>,
    faults: Faults,
}

#[async_trait]
impl LoadRowStatements for FakeLoads {
    async fn insert_row(
        &self,
        id: &LoadId,
        version: i64,
        record: &str,
        pending: &str,
    ) -> StorageResult<bool> {
        self.faults.run("insert_row", || {
            let mut rows = self.rows.lock().unwrap();
            if rows.contains_key(id) {
                return false;
            }
            let row = Row {
                version,
                record: record.to_owned(),
                pending: Some(pending.to_owned()),
            };
            rows.insert(id.clone(), row);
            true
        })
    }

    async fn update_row(
        &self,
        id: &LoadId,
        expected: i64,
        version: i64,
        record: &str,
        pending: &str,
    ) -> StorageResult<RowCas> {
        self.faults.run("update_row", || {
            let mut rows = self.rows.lock().unwrap();
            match rows.get_mut(id) {
                Some(row) if row.version == expected && row.pending.is_none() => {
                    *row = Row {
                        version,
                        record: record.to_owned(),
                        pending: Some(pending.to_owned()),
                    };
                    RowCas::Applied
                }
                Some(row) => RowCas::NotApplied {
                    version: Some(row.version),
                    pending: row.pending.clone(),
                },
                None => RowCas::NotApplied {
                    version: None,
                    pending: None,
                },
            }
        })
    }

    async fn read_row(
        &self,
        id: &LoadId,
        as_writer: bool,
    ) -> StorageResult<Option<(String, Option<String>)>> {
        let statement = if as_writer {
            "read_row_serial"
        } else {
            "read_row"
        };
        self.faults.run(statement, || {
            let rows = self.rows.lock().unwrap();
            rows.get(id)
                .map(|row| (row.record.clone(), row.pending.clone()))
        })
    }

    async fn follow_up(
        &self,
        _: Option<&Load>,
        load: &Load,
        _: &str,
        events: &[Event],
    ) -> StorageResult<()> {
        self.faults.run("follow_up", || {
            self.listed
                .lock()
                .unwrap()
                .insert(load.id.clone(), load.version);
            let mut written = self.events.lock().unwrap();
            for event in events {
                // Events are written by id: a rewrite is the same row.
                if !written.contains(&event.id.to_string()) {
                    written.push(event.id.to_string());
                }
            }
        })
    }

    async fn add_to_totals(&self, _: &str, deltas: &[(String, i64)]) -> StorageResult<()> {
        self.faults.run("add_to_totals", || {
            let mut totals = self.totals.lock().unwrap();
            for (list, delta) in deltas {
                *totals.entry(list.clone()).or_default() += delta;
            }
        })
    }

    async fn clear_pending(&self, id: &LoadId, version: i64) -> StorageResult<()> {
        self.faults.run("clear_pending", || {
            let mut rows = self.rows.lock().unwrap();
            if let Some(row) = rows.get_mut(id).filter(|row| row.version == version) {
                row.pending = None;
            }
        })
    }
}

impl FakeLoads {
    fn listed_at(&self, load: &Load) -> Option<u64> {
        self.listed.lock().unwrap().get(&load.id).copied()
    }

    fn pending(&self, load: &Load) -> bool {
        self.rows.lock().unwrap()[&load.id].pending.is_some()
    }

    fn event_count(&self) -> usize {
        self.events.lock().unwrap().len()
    }
}

fn event(load: &Load, sequence: u64) -> Event {
    Event::new(
        load.account_id.clone(),
        load.id.clone(),
        EventType::LoadStatusChanged,
        sequence,
        chrono::Utc::now(),
        serde_json::json!({}),
    )
}

/// `load` one version on, in `status`.
fn next(load: &Load, status: LoadStatus) -> Load {
    let mut next = load.clone();
    next.status = status;
    next.version += 1;
    next
}

#[tokio::test]
async fn a_reader_never_finishes_a_change_and_sees_what_was_committed() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    insert(&st, &posted, &[event(&posted, 1)]).await.unwrap();
    let assigned = next(&posted, LoadStatus::Assigned);
    st.faults.fail("follow_up", 2, Failure::Before);
    st.faults.fail("follow_up", 3, Failure::Before);
    // Committed: answered as made, though its follow-up failed twice.
    update(&st, &posted, &assigned, &[event(&assigned, 2)])
        .await
        .unwrap();

    // Committed, not followed up: a reader sees the new version, and leaves
    // the follow-up to the writer.
    let before = st.faults.count("follow_up");
    let seen = read(&st, &posted.id).await.unwrap().unwrap();
    assert_eq!(seen.status, LoadStatus::Assigned);
    assert_eq!(
        st.faults.count("follow_up"),
        before,
        "a reader wrote the lists"
    );
    assert!(st.pending(&posted));
    assert_eq!(st.listed_at(&posted), Some(posted.version));

    assert_eq!(
        st.faults.count("read_row_serial"),
        0,
        "a reader reads at quorum"
    );
    // The writer (an actor starting) finishes it, reading at LOCAL_SERIAL.
    finish_unfinished(&st, &posted.id).await.unwrap();
    assert_eq!(st.faults.count("read_row_serial"), 1);
    assert_eq!(st.listed_at(&posted), Some(assigned.version));
    assert!(!st.pending(&posted));
    assert_eq!(st.event_count(), 2);
}

#[tokio::test]
async fn a_change_finishes_the_unfinished_one_before_it_and_loses_none_of_its_events() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    insert(&st, &posted, &[]).await.unwrap();
    let assigned = next(&posted, LoadStatus::Assigned);
    // Committed; the follow-up times out without applying, twice; the
    // change is answered as made and the writer goes on.
    st.faults.fail("follow_up", 2, Failure::Before);
    st.faults.fail("follow_up", 3, Failure::Before);
    update(&st, &posted, &assigned, &[event(&assigned, 1)])
        .await
        .unwrap();
    assert!(st.pending(&posted), "left for the next change");
    let moving = next(&assigned, LoadStatus::InTransit);
    update(&st, &assigned, &moving, &[event(&moving, 2)])
        .await
        .unwrap();
    assert_eq!(
        st.event_count(),
        2,
        "the assignment's event was written too"
    );
    assert_eq!(st.listed_at(&posted), Some(moving.version));
    assert!(!st.pending(&posted));
}

#[tokio::test]
async fn a_change_from_a_stale_read_is_refused_and_changes_nothing() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    insert(&st, &posted, &[]).await.unwrap();
    let assigned = next(&posted, LoadStatus::Assigned);
    update(&st, &posted, &assigned, &[]).await.unwrap();
    // Another writer, still holding the posted version.
    let cancelled = next(&posted, LoadStatus::Cancelled);
    assert!(update(&st, &posted, &cancelled, &[]).await.is_err());
    let seen = read(&st, &posted.id).await.unwrap().unwrap();
    assert_eq!(seen.status, LoadStatus::Assigned);
    assert_eq!(st.listed_at(&posted), Some(assigned.version));
}

#[tokio::test]
async fn an_insert_whose_answer_was_lost_is_finished_by_its_retry() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    let events = [event(&posted, 1)];
    // The answer was lost, and so was the read back that would have found it.
    st.faults.fail("insert_row", 1, Failure::After);
    st.faults.fail("read_row_serial", 1, Failure::Before);
    assert!(
        insert(&st, &posted, &events).await.is_err(),
        "the answer was lost"
    );
    assert_eq!(st.listed_at(&posted), None, "not listed before the retry");
    insert(&st, &posted, &events).await.unwrap();
    assert_eq!(st.listed_at(&posted), Some(posted.version));
    assert_eq!(st.event_count(), 1);
    assert!(!st.pending(&posted));
}

#[tokio::test]
async fn a_clear_that_failed_is_done_by_the_next_change() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    insert(&st, &posted, &[]).await.unwrap();
    let assigned = next(&posted, LoadStatus::Assigned);
    st.faults.fail("clear_pending", 2, Failure::Before);
    st.faults.fail("clear_pending", 3, Failure::Before);
    update(&st, &posted, &assigned, &[event(&assigned, 1)])
        .await
        .unwrap();
    let moving = next(&assigned, LoadStatus::InTransit);
    update(&st, &assigned, &moving, &[]).await.unwrap();
    assert_eq!(st.event_count(), 1, "the follow-up written again is one");
    assert_eq!(st.listed_at(&posted), Some(moving.version));
}

#[test]
fn a_pending_change_survives_its_row_and_older_rows_still_read() {
    let previous = crate::domain::load::sample(LoadStatus::Posted);
    let pending = Pending {
        previous: Some(previous.clone()),
        events: Vec::new(),
    };
    let back: Pending = decode(&encode(&pending).unwrap()).unwrap();
    assert_eq!(back, pending);
    // Written by a build where every pending change had a previous load.
    let older = format!(
        r#"{{"previous":{},"events":[]}}"#,
        encode(&previous).unwrap()
    );
    let back: Pending = decode(&older).unwrap();
    assert_eq!(back.previous, Some(previous));
}

impl FakeLoads {
    fn total(&self, list: &str) -> i64 {
        self.totals.lock().unwrap().get(list).copied().unwrap_or(0)
    }
}

#[tokio::test]
async fn list_totals_follow_loads_in_and_out_of_their_lists() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    let other = crate::domain::load::sample(LoadStatus::Posted);
    insert(&st, &posted, &[]).await.unwrap();
    insert(&st, &other, &[]).await.unwrap();
    assert_eq!(st.total("loads:"), 2);
    assert_eq!(st.total("loads:s=posted"), 2);
    let assigned = next(&posted, LoadStatus::Assigned);
    update(&st, &posted, &assigned, &[]).await.unwrap();
    assert_eq!(st.total("loads:"), 2, "still in the list of all loads");
    assert_eq!(st.total("loads:s=posted"), 1);
    assert_eq!(st.total("loads:s=assigned"), 1);
    assert_eq!(st.total("loads:s=assigned,o=TX"), 1);
    // An edit that moves no list moves no total.
    let mut noted = assigned.clone();
    noted.version += 1;
    noted.notes = Some("call ahead".into());
    update(&st, &assigned, &noted, &[]).await.unwrap();
    assert_eq!(st.total("loads:s=assigned"), 1);
}

#[tokio::test]
async fn a_failed_total_is_not_added_again_and_the_change_still_completes() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    // Applied, though the answer was lost: counted once, not twice.
    st.faults.fail("add_to_totals", 1, Failure::After);
    insert(&st, &posted, &[]).await.unwrap();
    assert_eq!(st.total("loads:"), 1);
    assert!(!st.pending(&posted));
}

#[tokio::test]
async fn a_committed_change_whose_follow_up_fails_once_is_finished_at_once() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    insert(&st, &posted, &[]).await.unwrap();
    let assigned = next(&posted, LoadStatus::Assigned);
    st.faults.fail("follow_up", 2, Failure::Before);
    update(&st, &posted, &assigned, &[event(&assigned, 1)])
        .await
        .unwrap();
    assert!(!st.pending(&posted));
    assert_eq!(st.listed_at(&posted), Some(assigned.version));
    assert_eq!(st.event_count(), 1);
}

#[tokio::test]
async fn a_change_that_timed_out_after_committing_is_read_back_and_answered_as_made() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    insert(&st, &posted, &[]).await.unwrap();
    let assigned = next(&posted, LoadStatus::Assigned);
    st.faults.fail("update_row", 1, Failure::After);
    update(&st, &posted, &assigned, &[event(&assigned, 1)])
        .await
        .expect("the committed change is answered as made");
    assert_eq!(
        st.faults.count("read_row_serial"),
        1,
        "read back at LOCAL_SERIAL"
    );
    assert_eq!(st.listed_at(&posted), Some(assigned.version));
    assert!(!st.pending(&posted), "followed up as after any commit");
    assert_eq!(st.event_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_change_that_failed_before_committing_every_try_is_an_error_and_changes_nothing() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    insert(&st, &posted, &[]).await.unwrap();
    let assigned = next(&posted, LoadStatus::Assigned);
    for nth in 1..=CAS_TRIES {
        st.faults.fail("update_row", nth, Failure::Before);
    }
    assert!(
        update(&st, &posted, &assigned, &[event(&assigned, 1)])
            .await
            .is_err()
    );
    assert_eq!(st.faults.count("update_row"), CAS_TRIES);
    assert_eq!(st.faults.count("read_row_serial"), CAS_TRIES);
    let seen = read(&st, &posted.id).await.unwrap().unwrap();
    assert_eq!(seen.status, LoadStatus::Posted);
    assert_eq!(st.event_count(), 0);
    // Nor tried again when the read back fails too: the change is not known
    // to be in, nor known to be out.
    let next_try = CAS_TRIES + 1;
    st.faults.fail("update_row", next_try, Failure::After);
    st.faults.fail("read_row_serial", next_try, Failure::Before);
    assert!(update(&st, &posted, &assigned, &[]).await.is_err());
    assert_eq!(st.faults.count("update_row"), next_try);
}

#[tokio::test(start_paused = true)]
async fn a_change_whose_transaction_failed_and_is_not_in_is_tried_again() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    st.faults.fail("insert_row", 1, Failure::Before);
    insert(&st, &posted, &[event(&posted, 1)])
        .await
        .expect("the second try of the insert goes in");
    assert_eq!(st.faults.count("insert_row"), 2);
    let assigned = next(&posted, LoadStatus::Assigned);
    st.faults.fail("update_row", 1, Failure::Before);
    st.faults.fail("update_row", 2, Failure::Before);
    update(&st, &posted, &assigned, &[event(&assigned, 2)])
        .await
        .expect("the third try of the change goes in");
    assert_eq!(st.faults.count("update_row"), 3);
    let seen = read(&st, &posted.id).await.unwrap().unwrap();
    assert_eq!(seen.status, LoadStatus::Assigned);
    assert_eq!(st.listed_at(&posted), Some(assigned.version));
    assert_eq!(st.event_count(), 2, "each event once");
}

#[tokio::test]
async fn an_insert_that_timed_out_after_committing_is_answered_as_made() {
    let st = FakeLoads::default();
    let posted = crate::domain::load::sample(LoadStatus::Posted);
    st.faults.fail("insert_row", 1, Failure::After);
    insert(&st, &posted, &[event(&posted, 1)])
        .await
        .expect("the committed insert is answered as made");
    assert_eq!(st.listed_at(&posted), Some(posted.version));
    assert!(!st.pending(&posted));
    assert_eq!(st.event_count(), 1);
}
