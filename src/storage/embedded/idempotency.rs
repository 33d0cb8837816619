//! Idempotency answers, keyed by account and idempotency key.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{EmbeddedStore, decode, encode, keys, unavailable};
use crate::domain::idempotency::StoredResponse;
use crate::domain::ids::AccountId;
use crate::storage::{IdempotencyStore, StorageResult};

#[async_trait]
impl IdempotencyStore for EmbeddedStore {
    async fn get_idempotent(
        &self,
        account: &AccountId,
        key: &str,
    ) -> StorageResult<Option<StoredResponse>> {
        let key = keys::idempotency(account, key);
        let stored: Option<StoredResponse> =
            self.run(move |s| s.get_json(&s.idempotency, &key)).await?;
        stored.map(|s| self.secrets.open_answer(s)).transpose()
    }

    async fn put_idempotent(&self, response: &StoredResponse) -> StorageResult<()> {
        let key = keys::idempotency(&response.account_id, &response.key);
        let value = encode(&self.secrets.seal_answer(response))?;
        self.put_one(|s| &s.idempotency, key, value).await
    }

    async fn purge_idempotent(&self, before: DateTime<Utc>) -> StorageResult<u64> {
        self.run(move |s| {
            let mut batch = s.durable_batch();
            let mut purged = 0;
            for guard in s.idempotency.iter() {
                let (key, value) = guard.into_inner().map_err(unavailable)?;
                let stored: StoredResponse = decode(&value)?;
                if stored.created_at < before {
                    batch.remove(&s.idempotency, key.to_vec());
                    purged += 1;
                }
            }
            s.commit_durably(batch)?;
            Ok(purged)
        })
        .await
    }
}
