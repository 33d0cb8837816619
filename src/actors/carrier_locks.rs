//! Keeps a carrier from being deleted while a load is being assigned to it.
//!
//! Deleting a carrier checks that no load is assigned to it, then deletes;
//! assigning reads the carrier, then writes the load. Interleaved, both would
//! succeed and leave a load assigned to a carrier that no longer exists. An
//! assignment holds its carrier's lock shared from the read to the write, a
//! deletion holds it exclusively from the check to the delete. The locks are
//! striped (a carrier hashes to one of `STRIPES`), so they take no memory per
//! carrier and never need cleaning up; two carriers sharing a stripe only
//! wait for each other's deletions, which are rare.
//!
//! Process-local: instances sharing a ScyllaDB keyspace do not see each
//! other's locks (docs/design.md, "Several instances").

use std::hash::{BuildHasher, Hash};

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::domain::ids::CarrierId;

const STRIPES: usize = 64;

pub struct CarrierLocks {
    stripes: Vec<RwLock<()>>,
    hasher: std::collections::hash_map::RandomState,
}

impl Default for CarrierLocks {
    fn default() -> Self {
        CarrierLocks {
            stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
            hasher: Default::default(),
        }
    }
}

impl CarrierLocks {
    fn stripe(&self, carrier: &CarrierId) -> &RwLock<()> {
        let mut hasher = self.hasher.build_hasher();
        carrier.hash(&mut hasher);
        let hash = std::hash::Hasher::finish(&hasher);
        &self.stripes[(hash % STRIPES as u64) as usize]
    }

    /// Held while a load is assigned to `carrier`: deletions of it wait.
    pub async fn assigning(&self, carrier: &CarrierId) -> RwLockReadGuard<'_, ()> {
        self.stripe(carrier).read().await
    }

    /// Held while `carrier` is checked for loads and deleted: assignments wait.
    pub async fn deleting(&self, carrier: &CarrierId) -> RwLockWriteGuard<'_, ()> {
        self.stripe(carrier).write().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_deletion_waits_for_an_assignment_in_progress_and_the_reverse() {
        let locks = CarrierLocks::default();
        let carrier = CarrierId::generate();
        let assigning = locks.assigning(&carrier).await;
        // Assignments of the same carrier proceed side by side.
        let second = locks.assigning(&carrier).await;
        let deleting =
            tokio::time::timeout(std::time::Duration::from_secs(1), locks.deleting(&carrier));
        assert!(
            deleting.await.is_err(),
            "a deletion ran during an assignment"
        );
        drop((assigning, second));
        let deleting = locks.deleting(&carrier).await;
        let assigning =
            tokio::time::timeout(std::time::Duration::from_secs(1), locks.assigning(&carrier));
        assert!(
            assigning.await.is_err(),
            "an assignment ran during a deletion"
        );
        drop(deleting);
        let _assigning = locks.assigning(&carrier).await;
    }
}
