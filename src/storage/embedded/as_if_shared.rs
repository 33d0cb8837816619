//! Tests only (the switch is `#[cfg(test)]`): the embedded store acting as a
//! store several instances share, so that what only a shared store (ScyllaDB)
//! exercises is tested without a cluster: several instances in one process
//! over one `EmbeddedStore` play the cluster. Role and load leases are kept as
//! the shared store keeps them (one owner at a time, a TTL, a later
//! incarnation of the same instance taking over), and so is the registry of
//! instances; tests can make load leases fail (`fail_load_leases`) or a
//! landed load update answer an error (`fail_load_updates_after_writing`).

use std::collections::HashMap;
#[cfg(test)]
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

#[cfg(test)]
use super::EmbeddedStore;
use crate::storage::{StorageError, StorageResult, lease_supersedes};

/// Names to `(holder, until)`, in tokio time (paused time moves it).
type Leases = Mutex<HashMap<String, (String, Instant)>>;

#[derive(Default)]
pub(super) struct SharedForTests {
    roles: Leases,
    loads: Leases,
    /// Instances to `(address, until)`.
    instances: Leases,
    /// Load leases answer an error (the cluster unreachable) while set.
    failing_leases: AtomicBool,
    /// A load update that landed answers an error (as after a timeout) while set.
    failing_updates: AtomicBool,
}

fn lock(leases: &Leases) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
    leases.lock().unwrap_or_else(|p| p.into_inner())
}

/// As the shared store's conditional insert-or-renew: `owner` holds `name`
/// if it is free, expired, already `owner`'s, or held by an earlier
/// incarnation of `owner`'s instance.
fn take(leases: &Leases, name: &str, owner: &str, ttl: Duration) -> bool {
    let mut leases = lock(leases);
    let now = Instant::now();
    match leases.get(name) {
        Some((holder, until))
            if holder != owner && *until > now && !lease_supersedes(owner, holder) =>
        {
            false
        }
        _ => {
            leases.insert(name.to_owned(), (owner.to_owned(), now + ttl));
            true
        }
    }
}

fn release(leases: &Leases, name: &str, owner: &str) {
    let mut leases = lock(leases);
    if leases.get(name).is_some_and(|(holder, _)| holder == owner) {
        leases.remove(name);
    }
}

fn unexpired(leases: &Leases, name: &str) -> Option<String> {
    lock(leases)
        .get(name)
        .filter(|(_, until)| *until > Instant::now())
        .map(|(holder, _)| holder.clone())
}

impl SharedForTests {
    /// After a load update landed: an error while a test asks for one.
    pub(super) fn after_load_update(&self) -> StorageResult<()> {
        if self.failing_updates.load(Ordering::SeqCst) {
            return Err(StorageError::unavailable(std::io::Error::other(
                "timed out after the write reached the store",
            )));
        }
        Ok(())
    }

    pub(super) fn lease_load(&self, load: &str, owner: &str, ttl: Duration) -> StorageResult<bool> {
        if self.failing_leases.load(Ordering::SeqCst) {
            return Err(StorageError::unavailable(std::io::Error::other(
                "the lease table cannot be reached",
            )));
        }
        Ok(take(&self.loads, load, owner, ttl))
    }

    pub(super) fn release_load(&self, load: &str, owner: &str) {
        release(&self.loads, load, owner);
    }

    pub(super) fn load_lease_holder(&self, load: &str) -> Option<String> {
        unexpired(&self.loads, load)
    }

    pub(super) fn lease_role(&self, role: &str, owner: &str, ttl: Duration) -> bool {
        take(&self.roles, role, owner, ttl)
    }

    pub(super) fn release_role(&self, role: &str, owner: &str) {
        release(&self.roles, role, owner);
    }

    pub(super) fn register_instance(&self, instance: &str, address: &str, ttl: Duration) {
        lock(&self.instances).insert(
            instance.to_owned(),
            (address.to_owned(), Instant::now() + ttl),
        );
    }

    pub(super) fn instances(&self) -> Vec<(String, String)> {
        let now = Instant::now();
        lock(&self.instances)
            .iter()
            .filter(|(_, (_, until))| *until > now)
            .map(|(instance, (address, _))| (instance.clone(), address.clone()))
            .collect()
    }
}

#[cfg(test)]
impl EmbeddedStore {
    /// This store, with leases and the instance registry as several
    /// instances sharing it would see them.
    pub fn as_if_shared(mut self) -> Self {
        self.as_if_shared = Some(Arc::default());
        self
    }

    /// Load updates that land answer an error from now on (`true`), or not.
    pub fn fail_load_updates_after_writing(&self, failing: bool) {
        if let Some(shared) = &self.as_if_shared {
            shared.failing_updates.store(failing, Ordering::SeqCst);
        }
    }

    /// Load leases fail from now on (`true`) or are granted again.
    pub fn fail_load_leases(&self, failing: bool) {
        if let Some(shared) = &self.as_if_shared {
            shared.failing_leases.store(failing, Ordering::SeqCst);
        }
    }
}
