//! The first answer to each idempotency key, replayed on a retry.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StorageResult;
use crate::domain::idempotency::StoredResponse;
use crate::domain::ids::AccountId;

#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// The answer kept for an idempotency key of an account, if any (expired or not).
    async fn get_idempotent(
        &self,
        account: &AccountId,
        key: &str,
    ) -> StorageResult<Option<StoredResponse>>;
    /// Keeps (or replaces) the answer for an idempotency key.
    async fn put_idempotent(&self, response: &StoredResponse) -> StorageResult<()>;
    /// Forgets answers created before `before`; returns how many.
    async fn purge_idempotent(&self, before: DateTime<Utc>) -> StorageResult<u64>;
    /// Marks a key as in progress on `owner` (one running instance) for at
    /// most `ttl`, unless another owner has it so; `false` then. A store one
    /// process owns answers `true`: that process's own guard is enough.
    async fn claim_idempotency_key(
        &self,
        _account: &AccountId,
        _key: &str,
        _owner: &str,
        _ttl: std::time::Duration,
    ) -> StorageResult<bool> {
        Ok(true)
    }
    /// Ends `owner`'s claim of a key, if it holds it.
    async fn release_idempotency_key(
        &self,
        _account: &AccountId,
        _key: &str,
        _owner: &str,
    ) -> StorageResult<()> {
        Ok(())
    }
}
