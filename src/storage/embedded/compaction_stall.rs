//! Tests only: a compaction of a keyspace does not stop writes while it
//! commits its output (vendor/README.md: the patched lsm-tree finishes and
//! syncs a compaction's output before it takes the tree's version lock, which
//! every writer of the tree waits on, and fjall's batch commit with it); nor
//! does fjall's other worker spin while one compacts (the patched fjall).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fjall::{Database, KeyspaceCreateOptions, PersistMode};
use lsm_tree::compaction::test_hooks;

/// A deadline that means "it never happened" (a lock held until the hook is
/// released), not a performance bound: the writes take milliseconds.
const NEVER: Duration = Duration::from_secs(20);

/// The hook is one for the whole process: a test that sets it holds this.
static HOOK: Mutex<()> = Mutex::new(());

/// Holds compactions of the tree at `path` once their output is finished,
/// until the returned sender is used (or dropped); the receiver hears when
/// one got there, with the id of the thread that runs it.
fn hold_compactions_of(path: PathBuf) -> (std::sync::mpsc::Sender<()>, Receiver<u32>) {
    let (entered, reached) = channel();
    let (release, released) = channel::<()>();
    let released = Mutex::new(released);
    test_hooks::on_output_finished(Some(Arc::new(move |tree: &std::path::Path| {
        if tree == path {
            let _ = entered.send(this_thread());
            let _ = released
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .recv_timeout(NEVER);
        }
    })));
    (release, reached)
}

/// The calling thread's id (Linux: /proc/thread-self links to `pid/task/tid`).
fn this_thread() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").unwrap();
    link.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// This process's fjall worker threads.
fn fjall_workers() -> HashSet<u32> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let task = task.ok()?;
            let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
            (comm.trim() == "fjall:worker")
                .then(|| task.file_name().to_str()?.parse().ok())
                .flatten()
        })
        .collect()
}

/// Time thread `tid` of this process has run on a CPU so far (`None`: it
/// has ended, as another test's database closed).
fn cpu_time(tid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    Some(Duration::from_nanos(
        stat.split_whitespace().next()?.parse().ok()?,
    ))
}

#[test]
fn the_other_worker_sleeps_while_one_compacts() {
    let _hook = HOOK.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let before = fjall_workers();
    let db = Database::builder(dir.path())
        .worker_threads(2)
        .open()
        .unwrap();
    let points = db
        .keyspace("points", KeyspaceCreateOptions::default)
        .unwrap();
    let (release, reached) = hold_compactions_of(points.path().to_owned());
    // Enough overlapping tables (disjoint ones are moved, not merged) that
    // fjall compacts on its own after a flush, on one worker, and hands the
    // other worker a compaction message too.
    let mut compacting = None;
    for table in 0..16 {
        for i in 0..500 {
            points.insert(format!("{i:05}{table:02}"), "fix").unwrap();
        }
        points.rotate_memtable_and_wait().unwrap();
        if let Ok(thread) = reached.try_recv() {
            compacting = Some(thread);
            break;
        }
    }
    let compacting = match compacting {
        Some(thread) => thread,
        None => reached
            .recv_timeout(NEVER)
            .expect("fjall compacted on its own"),
    };
    // This database's workers have run (a thread is named from inside it,
    // so only now are both surely named). Workers of databases that other
    // tests opened meanwhile may be among them: each is measured alone.
    let idle: Vec<u32> = fjall_workers()
        .difference(&before)
        .copied()
        .filter(|t| *t != compacting)
        .collect();
    assert!(
        !idle.is_empty(),
        "the other worker of this database is seen"
    );

    // Held there: the other worker has nothing to do but hand the message back.
    let used = || idle.iter().map(|t| cpu_time(*t)).collect::<Vec<_>>();
    let (at_start, started) = (used(), std::time::Instant::now());
    std::thread::sleep(Duration::from_millis(500));
    let (at_end, elapsed) = (used(), started.elapsed());
    release.send(()).unwrap();
    test_hooks::on_output_finished(None);
    // The busiest of them. Spinning, it would run for most of the interval;
    // sleeping between hand-backs, for about 100 wake-ups of a few µs.
    let spent = at_start
        .iter()
        .zip(&at_end)
        .filter_map(|(b, a)| Some(a.as_ref()?.saturating_sub(*b.as_ref()?)))
        .max()
        .unwrap_or_default();
    assert!(
        spent < elapsed / 10,
        "an idle worker ran {spent:?} of {elapsed:?} while the other compacted"
    );
}

#[test]
fn writes_proceed_while_a_compaction_commits_its_output() {
    let _hook = HOOK.lock().unwrap_or_else(|p| p.into_inner());
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
