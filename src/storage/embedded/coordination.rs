//! How the embedded store answers the coordination several instances need
//! (`storage::Coordination`): alone on its data directory, every lease is its
//! own; tests can make it act as a shared store (`as_if_shared`).

use async_trait::async_trait;

use super::EmbeddedStore;
use crate::storage::StorageResult;

/// One process owns the data directory (it is locked while the store is
/// open): every lease is this process's, and there are no other instances'
/// counts. Tests can make it act as a shared store (`as_if_shared`).
#[async_trait]
impl crate::storage::Coordination for EmbeddedStore {
    fn needs_leases(&self) -> bool {
        self.shared_for_tests().is_some()
    }

    async fn lease_load(
        &self,
        load: &crate::domain::ids::LoadId,
        owner: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<bool> {
        self.shared_for_tests().map_or(Ok(true), |shared| {
            shared.lease_load(load.as_str(), owner, ttl)
        })
    }

    async fn release_load(
        &self,
        load: &crate::domain::ids::LoadId,
        owner: &str,
    ) -> StorageResult<()> {
        if let Some(shared) = self.shared_for_tests() {
            shared.release_load(load.as_str(), owner);
        }
        Ok(())
    }

    /// Only this process acts for loads: no other holder to forward to.
    async fn load_lease_holder(
        &self,
        load: &crate::domain::ids::LoadId,
    ) -> StorageResult<Option<String>> {
        Ok(self
            .shared_for_tests()
            .and_then(|shared| shared.load_lease_holder(load.as_str())))
    }

    async fn register_instance(
        &self,
        instance: &str,
        address: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<()> {
        if let Some(shared) = self.shared_for_tests() {
            shared.register_instance(instance, address, ttl);
        }
        Ok(())
    }

    /// None other than this process.
    async fn instances(&self) -> StorageResult<Vec<(String, String)>> {
        Ok(self
            .shared_for_tests()
            .map(|shared| shared.instances())
            .unwrap_or_default())
    }

    async fn lease_role(
        &self,
        role: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<bool> {
        Ok(self
            .shared_for_tests()
            .is_none_or(|shared| shared.lease_role(role, owner, ttl)))
    }

    async fn release_role(&self, role: &str, owner: &str) -> StorageResult<()> {
        if let Some(shared) = self.shared_for_tests() {
            shared.release_role(role, owner);
        }
        Ok(())
    }

    async fn add_request_counts(
        &self,
        _: &crate::domain::ids::AccountId,
        _: &[(i64, u32)],
    ) -> StorageResult<()> {
        Ok(())
    }

    async fn request_counts(
        &self,
        _: &crate::domain::ids::AccountId,
        _: i64,
    ) -> StorageResult<Vec<(i64, u64)>> {
        Ok(Vec::new())
    }
}
