//! Idempotency answers and claims, one partition per (account, key)
//! (cql/013; before it, one per account, which read answers still come from
//! for the two days they live).

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
        let found = self
            .record(&self.st.get_idempotent, (account.as_str(), key))
            .await?;
        let before_013 = self
            .idempotency_before_013_until
            .is_some_and(|until| Utc::now() < until);
        let found: Option<StoredResponse> = match found {
            None if before_013 => {
                self.record(&self.st.get_idempotent_before_013, (account.as_str(), key))
                    .await?
            }
            found => found,
        };
        found.map(|s| self.secrets.open_answer(s)).transpose()
    }

    async fn put_idempotent(&self, response: &StoredResponse) -> StorageResult<()> {
        let record = encode(&self.secrets.seal_answer(response))?;
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

/// How long answers stored in the table of cql/003 may still be replayed: the
/// answers' lifetime (the table's TTL) after cql/013 was applied.
const ANSWERS_LIVE: chrono::TimeDelta = chrono::TimeDelta::days(2);

/// Until when answers stored before cql/013 are read; `None` once they have all
/// expired (or when the keyspace never had them: 013 applied with 003).
pub(super) async fn read_before_013_until(
    session: &scylla::client::session::Session,
    st: &super::statements::Statements,
) -> anyhow::Result<Option<DateTime<Utc>>> {
    use anyhow::Context as _;
    let result = session
        .execute_unpaged(&st.migration_applied_at, ("013_idempotency_by_key.cql",))
        .await
        .context("reading when cql/013 was applied")?;
    let applied = result
        .into_rows_result()?
        .maybe_first_row::<(Option<scylla::value::CqlTimestamp>,)>()?
        .and_then(|(at,)| at)
        .and_then(|at| DateTime::<Utc>::from_timestamp_millis(at.0));
    Ok(applied
        .map(|at| at + ANSWERS_LIVE)
        .filter(|until| Utc::now() < *until))
}
