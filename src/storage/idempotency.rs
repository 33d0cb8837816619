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
}
