//! Frees the store's flushed memtables on a thread of their own, never under
//! the lock every write takes.
//!
//! Why: fjall drops a flushed memtable while it holds the keyspace's version
//! lock, which every write takes, and freeing a full 64 MiB skiplist stopped
//! all GPS ingest for ~130 ms at each flush (docs/perf-notes.md, "Write stalls
//! at memtable flushes").
//!
//! The reaper holds a reference to each keyspace's memtable from shortly after
//! it becomes the one written to, so fjall's drop only lets go of its own
//! reference; the reaper notices when it holds the last one and frees the
//! memtable itself, outside every fjall lock, at a low CPU priority. A memtable
//! that comes and goes between two looks is dropped by fjall as before: it can
//! only be a small one.
//!
//! `Keyspace::tree` and `AbstractTree::active_memtable` are public but hidden
//! from fjall's documentation; a fjall release that changes them fails the
//! build here rather than changing behaviour silently.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use fjall::{AbstractTree, Database, Keyspace};

use super::watcher_thread::{WatcherThread, every_keyspace};

/// How often the reaper looks. A memtable fills in seconds at the least (64 MiB
/// at the fastest bulk ingest), so each is seen while it is still small.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Nice value of the reaper thread: freeing a memtable is CPU work nobody waits
/// for, so it yields to the threads that answer requests.
const REAPER_NICE: libc::c_int = 10;

/// A memtable, held only to choose where it is freed.
type Held = Arc<dyn Any + Send + Sync>;

/// The running reaper; dropping it stops the thread (freeing what it holds).
pub(super) struct MemtableReaper {
    _thread: WatcherThread,
}

impl MemtableReaper {
    /// Starts watching every keyspace `db` has now (a keyspace that cannot be
    /// opened fails the start rather than going unwatched).
    pub(super) fn start(db: &Database) -> std::io::Result<Self> {
        let keyspaces = every_keyspace(db)?;
        let mut held: Vec<Held> = Vec::new();
        let thread =
            WatcherThread::spawn("freight-memtables", LOOK_EVERY, lower_priority, move || {
                look(&keyspaces, &mut held)
            })?;
        Ok(MemtableReaper { _thread: thread })
    }
}

/// Holds each keyspace's current memtable, and frees those only the reaper
/// still holds (fjall has flushed them and let go).
fn look(keyspaces: &[Keyspace], held: &mut Vec<Held>) {
    for keyspace in keyspaces {
        let active: Held = keyspace.tree.active_memtable();
        if !held.iter().any(|h| Arc::ptr_eq(h, &active)) {
            held.push(active);
        }
    }
    held.retain(|memtable| Arc::strong_count(memtable) > 1);
}

fn lower_priority() {
    // SAFETY: setpriority with PRIO_PROCESS and id 0 changes the nice value of
    // the calling thread (Linux keeps it per thread); it touches no memory.
    // Failing (e.g. not permitted) leaves the thread at its priority, which is fine.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, REAPER_NICE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fjall::KeyspaceCreateOptions;

    fn keyspace(db: &Database) -> Keyspace {
        db.keyspace("points", KeyspaceCreateOptions::default)
            .unwrap()
    }

    /// The reaper holds each memtable once, outlives fjall's hold on it after
    /// its flush, and lets go of it (freeing it) at its next look after that.
    #[test]
    fn holds_a_flushed_memtable_until_fjall_lets_go_then_frees_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).open().unwrap();
        let points = keyspace(&db);
        points.insert("a", "1").unwrap();
        let keyspaces = vec![points.clone()];
        let mut held = Vec::new();
        look(&keyspaces, &mut held);
        look(&keyspaces, &mut held);
        assert_eq!(held.len(), 1, "the same memtable is held once");
        let first = Arc::downgrade(&held[0]);
        assert!(first.strong_count() > 1, "fjall holds it too");

        points.rotate_memtable_and_wait().unwrap();
        points.insert("b", "2").unwrap();
        look(&keyspaces, &mut held);
        assert!(
            first.strong_count() > 1,
            "flushed, but the versions fjall keeps still list it"
        );
        assert_eq!(held.len(), 2, "the flushed memtable and the new one");

        // The next flush drops those versions: fjall lets go of the first
        // memtable without freeing it, since the reaper still holds it...
        points.rotate_memtable_and_wait().unwrap();
        assert_eq!(first.strong_count(), 1, "only the reaper holds it");
        // ...and the reaper frees it at its next look.
        points.insert("c", "3").unwrap();
        look(&keyspaces, &mut held);
        assert!(first.upgrade().is_none(), "the reaper freed it");
    }

    /// Dropping the reaper stops its thread, which lets go of the keyspaces:
    /// the data directory can be opened again (fjall keeps it locked while any
    /// handle to the database lives).
    #[test]
    fn stops_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::builder(dir.path()).open().unwrap();
            keyspace(&db).insert("a", "1").unwrap();
            db.persist(fjall::PersistMode::SyncAll).unwrap();
            let reaper = MemtableReaper::start(&db).unwrap();
            drop(reaper);
        }
        let db = Database::builder(dir.path()).open().unwrap();
        assert_eq!(keyspace(&db).get("a").unwrap().as_deref(), Some(&b"1"[..]));
    }
}
