//! Group sync: the fdatasync that makes a write durable is shared by every
//! writer waiting for one.
//!
//! An acknowledged write must survive a crash or power loss, so no write
//! returns before its batch is on disk. One fdatasync per batch would cap every
//! writer together at the disk's sync rate, however small their batches. So a
//! batch is first written to the journal (OS buffers, cheap), then waits for a
//! sync that covers it: while one writer syncs, others append behind it, and
//! the next sync covers them all at once. A writer returns only after a sync
//! that began once its batch was written has succeeded. If a sync fails, the
//! writer that ran it returns the error; the others wake and try a sync of
//! their own.

use std::sync::{Condvar, Mutex, MutexGuard};

use fjall::{Database, OwnedWriteBatch, PersistMode};

use super::{Inner, unavailable};
use crate::storage::StorageResult;

/// Batches written to the journal, and how many of them an fdatasync has covered.
#[derive(Default)]
struct SyncState {
    written: u64,
    synced: u64,
    syncing: bool,
}

/// The bookkeeping of shared syncs, and the condition writers wait on while
/// another writer syncs.
#[derive(Default)]
pub(super) struct GroupSync {
    state: Mutex<SyncState>,
    /// Signalled whenever a sync ends, whether it succeeded or not.
    synced: Condvar,
}

impl GroupSync {
    /// The counters stay consistent whatever a panicking holder was doing, so a
    /// poisoned lock is taken as it is.
    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Commits a batch to `db`'s journal and returns once a sync has covered it.
    fn commit(&self, db: &Database, batch: OwnedWriteBatch) -> StorageResult<()> {
        let mine = self.write(batch)?;
        self.wait(db, mine)
    }

    /// Commits a batch to the journal (and the memtables) without waiting for
    /// a sync; answers its place in the order of writes, for [`Self::wait`].
    fn write(&self, batch: OwnedWriteBatch) -> StorageResult<u64> {
        batch.commit().map_err(unavailable)?;
        let mut state = self.lock();
        state.written += 1;
        Ok(state.written)
    }

    /// Returns once a sync that began after write number `mine` has succeeded,
    /// running that sync itself unless another writer is running one.
    fn wait(&self, db: &Database, mine: u64) -> StorageResult<()> {
        let mut state = self.lock();
        loop {
            if state.synced >= mine {
                return Ok(());
            }
            if state.syncing {
                state = self.synced.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            // Everything counted as written so far is in the journal: one sync covers it.
            let target = state.written;
            state.syncing = true;
            drop(state);
            let result = db.persist(PersistMode::SyncData);
            state = self.lock();
            state.syncing = false;
            if result.is_ok() {
                state.synced = state.synced.max(target);
            }
            self.synced.notify_all();
            result.map_err(unavailable)?;
        }
    }
}

impl Inner {
    /// A batch that is on disk (fdatasync'd journal) when `commit_durably` returns.
    pub(super) fn durable_batch(&self) -> OwnedWriteBatch {
        self.db.batch().durability(Some(PersistMode::Buffer))
    }

    /// Commits a batch and returns once it is on disk, the sync shared with
    /// other writers (see the module doc).
    pub(super) fn commit_durably(&self, batch: OwnedWriteBatch) -> StorageResult<()> {
        self.group_sync.commit(&self.db, batch)
    }

    /// The two halves of [`Self::commit_durably`], for a writer that orders its
    /// writes under a lock it need not hold while the sync runs.
    pub(super) fn write_batch(&self, batch: OwnedWriteBatch) -> StorageResult<u64> {
        self.group_sync.write(batch)
    }

    pub(super) fn wait_durable(&self, written: u64) -> StorageResult<()> {
        self.group_sync.wait(&self.db, written)
    }
}
