//! What instances sharing a store coordinate through it: which instance acts
//! for a load (load leases), which one plays a role for all of them (the
//! webhook dispatcher), and the request counts behind shared rate limits.
//!
//! A trait of its own, with no default methods, so that every backend says on
//! purpose what it does: a store one process owns (the embedded one: its data
//! directory is locked) grants every lease and shares no counts; a store
//! several instances share (ScyllaDB) keeps them with lightweight
//! transactions and counters.

use async_trait::async_trait;

use super::StorageResult;
use crate::domain::ids::{AccountId, LoadId};

#[async_trait]
pub trait Coordination: Send + Sync {
    /// Whether several instances may share this store, so that a load's actor
    /// must hold the load's lease ([`Self::lease_load`]) to act for it.
    fn needs_leases(&self) -> bool;

    /// Takes, or renews, the lease that makes `owner` (one actor incarnation,
    /// named by [`super::lease_owner`]) the only writer of `load` for `ttl`;
    /// `false` if another owner holds it. A later incarnation on the same
    /// instance takes over an earlier one's lease.
    async fn lease_load(
        &self,
        load: &LoadId,
        owner: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<bool>;

    /// Gives up `owner`'s lease of `load`, if it holds it.
    async fn release_load(&self, load: &LoadId, owner: &str) -> StorageResult<()>;

    /// Who holds `load`'s lease now (an owner as [`super::lease_owner`]
    /// names it), if anyone: where a request for the load is forwarded.
    async fn load_lease_holder(&self, load: &LoadId) -> StorageResult<Option<String>>;

    /// Says, for `ttl`, that `instance` is up and takes forwarded requests
    /// at `address` (its internal listener); renewed well within `ttl`, so
    /// a dead instance drops out on its own.
    async fn register_instance(
        &self,
        instance: &str,
        address: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<()>;

    /// Every instance registered and not expired, `(instance, address)`.
    async fn instances(&self) -> StorageResult<Vec<(String, String)>>;

    /// Takes, or renews, the lease that makes `owner` the one instance playing
    /// `role` for all that share the store (the webhook dispatcher) for `ttl`;
    /// `false` if another owner holds it.
    async fn lease_role(
        &self,
        role: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<bool>;

    /// Gives up `owner`'s lease of `role`, if it holds it.
    async fn release_role(&self, role: &str, owner: &str) -> StorageResult<()>;

    /// Adds requests an instance admitted for `account`, `(minute, count)`
    /// with minutes as Unix seconds / 60, to the counters all instances share.
    async fn add_request_counts(
        &self,
        account: &AccountId,
        counts: &[(i64, u32)],
    ) -> StorageResult<()>;

    /// The shared counters of `account` from minute `since` on, `(minute,
    /// requests of all instances)`.
    async fn request_counts(
        &self,
        account: &AccountId,
        since: i64,
    ) -> StorageResult<Vec<(i64, u64)>>;
}
