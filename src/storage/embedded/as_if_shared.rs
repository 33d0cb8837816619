//! Tests only (the switch is `#[cfg(test)]`): the embedded store acting as a store several instances share,
//! so that what only a shared store (ScyllaDB) exercises, such as one webhook
//! dispatcher among several, is tested without a cluster: several dispatchers
//! over one `EmbeddedStore` play the instances. Only role leases are kept;
//! load leases are granted as by a store one process owns, unless a test makes
//! their renewals fail (`fail_load_leases`).

use std::collections::HashMap;
#[cfg(test)]
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

#[cfg(test)]
use super::EmbeddedStore;

/// Role leases by role: who holds each, and until when (tokio time, so paused
/// time moves it).
#[derive(Default)]
pub(super) struct RoleLeases(
    Mutex<HashMap<String, (String, Instant)>>,
    /// Load leases answer an error (the cluster unreachable) while set.
    std::sync::atomic::AtomicBool,
    /// A load update that landed answers an error (as after a timeout) while set.
    std::sync::atomic::AtomicBool,
);

impl RoleLeases {
    /// After a load update landed: an error while a test asks for one.
    pub(super) fn after_load_update(&self) -> crate::storage::StorageResult<()> {
        if self.2.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(crate::storage::StorageError::unavailable(
                std::io::Error::other("timed out after the write reached the store"),
            ));
        }
        Ok(())
    }

    /// As the shared store's load lease: granted, or an error while failing.
    pub(super) fn lease_load(&self) -> crate::storage::StorageResult<bool> {
        if self.1.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(crate::storage::StorageError::unavailable(
                std::io::Error::other("the lease table cannot be reached"),
            ));
        }
        Ok(true)
    }

    /// As the shared store's conditional insert-or-renew.
    pub(super) fn lease(&self, role: &str, owner: &str, ttl: Duration) -> bool {
        let mut leases = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match leases.get(role) {
            Some((holder, until)) if holder != owner && *until > now => false,
            _ => {
                leases.insert(role.to_owned(), (owner.to_owned(), now + ttl));
                true
            }
        }
    }

    pub(super) fn release(&self, role: &str, owner: &str) {
        let mut leases = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if leases.get(role).is_some_and(|(holder, _)| holder == owner) {
            leases.remove(role);
        }
    }
}

#[cfg(test)]
impl EmbeddedStore {
    /// This store, with role leases as several instances sharing it would see.
    pub fn as_if_shared(mut self) -> Self {
        self.roles = Some(Arc::default());
        self
    }

    /// Load updates that land answer an error from now on (`true`), or not.
    pub fn fail_load_updates_after_writing(&self, failing: bool) {
        if let Some(roles) = &self.roles {
            roles.2.store(failing, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Load leases fail from now on (`true`) or are granted again.
    pub fn fail_load_leases(&self, failing: bool) {
        if let Some(roles) = &self.roles {
            roles.1.store(failing, std::sync::atomic::Ordering::SeqCst);
        }
    }
}
