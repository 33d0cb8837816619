//! Tests only: a compaction of a keyspace does not stop writes while it
//! commits its output (vendor/README.md: the patched lsm-tree finishes and
//! syncs a compaction's output before it takes the tree's version lock, which
//! every writer of the tree waits on, and fjall's batch commit with it).

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fjall::{Database, KeyspaceCreateOptions, PersistMode};
use lsm_tree::compaction::test_hooks;

/// A deadline that means "it never happened" (a lock held until the hook is
/// released), not a performance bound: the writes take milliseconds.
const NEVER: Duration = Duration::from_secs(20);

/// Holds compactions of the tree at `path` once their output is finished,
/// until the returned sender is used (or dropped); the receiver hears when
/// one got there.
fn hold_compactions_of(path: PathBuf) -> (std::sync::mpsc::Sender<()>, Receiver<()>) {
    let (entered, reached) = channel();
    let (release, released) = channel::<()>();
    let released = Mutex::new(released);
    test_hooks::on_output_finished(Some(Arc::new(move |tree: &std::path::Path| {
        if tree == path {
            let _ = entered.send(());
            let _ = released
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .recv_timeout(NEVER);
        }
    })));
    (release, reached)
}

#[test]
fn writes_proceed_while_a_compaction_commits_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder(dir.path()).open().unwrap();
    let points = db
        .keyspace("points", KeyspaceCreateOptions::default)
        .unwrap();
    let other = db
        .keyspace("loads", KeyspaceCreateOptions::default)
        .unwrap();
    // Two tables to merge (fewer than fjall compacts on its own).
    for prefix in ["a", "b"] {
        for i in 0..2_000 {
            points.insert(format!("{prefix}{i:05}"), "fix").unwrap();
        }
        points.rotate_memtable_and_wait().unwrap();
    }

    let (release, reached) = hold_compactions_of(points.path().to_owned());
    let compacting = points.clone();
    let compaction = std::thread::spawn(move || compacting.major_compact());
    reached
        .recv_timeout(NEVER)
        .expect("the compaction reached its commit");

    // Held there, with its output written and synced: writes to the same
    // keyspace and to another, single and batched, are made durable.
    let (done, finished) = channel();
    let (writing, db_handle) = (points.clone(), db.clone());
    std::thread::spawn(move || {
        writing.insert("c00000", "fix").unwrap();
        let mut batch = db_handle.batch();
        batch.insert(&writing, "c00001", "fix");
        batch.insert(&other, "load", "assigned");
        batch.commit().unwrap();
        db_handle.persist(PersistMode::SyncData).unwrap();
        done.send(()).unwrap();
    });
    let proceeded = finished.recv_timeout(NEVER);
    release.send(()).unwrap();
    compaction.join().unwrap().unwrap();
    test_hooks::on_output_finished(None);
    proceeded.expect("writes proceed while a compaction commits its output");

    // The compaction was installed, and nothing was lost on either side.
    assert_eq!(points.table_count(), 1, "the two tables merged");
    for key in ["a00000", "a01999", "b01999", "c00000", "c00001"] {
        assert!(points.get(key).unwrap().is_some(), "{key}");
    }
}
