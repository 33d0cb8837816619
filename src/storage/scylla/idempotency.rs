//! Idempotency answers, one partition per account.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{ScyllaStore, encode, keys};
use crate::domain::idempotency::StoredResponse;
use crate::domain::ids::AccountId;
use crate::storage::{IdempotencyStore, StorageResult};

#[async_trait]
impl IdempotencyStore for ScyllaStore {
    async fn get_idempotent(
        &self,
        account: &AccountId,
        key: &str,
    ) -> StorageResult<Option<StoredResponse>> {
        self.record(&self.st.get_idempotent, (account.as_str(), key))
            .await
    }

    async fn put_idempotent(&self, response: &StoredResponse) -> StorageResult<()> {
        let record = encode(response)?;
        let values = (
            response.account_id.as_str(),
            response.key.as_str(),
            keys::micros(&response.created_at),
            record,
        );
        self.exec(&self.st.put_idempotent, values).await.map(|_| ())
    }

    /// A paged scan of the table (answers live a day, so it stays small; the
    /// table's TTL removes what a purge that never runs would leave).
    async fn purge_idempotent(&self, before: DateTime<Utc>) -> StorageResult<u64> {
        let before = keys::micros(&before);
        let old = self
            .rows(
                &self.st.all_idempotent,
                (),
                |(account, key, created): (String, String, Option<i64>)| {
                    Ok(created
                        .is_some_and(|at| at < before)
                        .then_some((account, key)))
                },
            )
            .await?;
        let mut purged = 0;
        for (account, key) in old.into_iter().flatten() {
            self.exec(&self.st.delete_idempotent, (account, key))
                .await?;
            purged += 1;
        }
        Ok(purged)
    }

    async fn claim_idempotency_key(
        &self,
        account: &AccountId,
        key: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> StorageResult<bool> {
        let ttl = i32::try_from(ttl.as_secs().max(1)).unwrap_or(i32::MAX);
        self.applied(
            &self.st.claim_idempotency_key,
            (account.as_str(), key, owner, ttl),
        )
        .await
    }

    async fn release_idempotency_key(
        &self,
        account: &AccountId,
        key: &str,
        owner: &str,
    ) -> StorageResult<()> {
        self.applied(
            &self.st.release_idempotency_key,
            (account.as_str(), key, owner),
        )
        .await
        .map(|_| ())
    }
}
