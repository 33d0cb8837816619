//! Reference claims (`cql/012_load_references.cql`, `storage::references`).

use async_trait::async_trait;
use chrono::DateTime;

use super::ScyllaStore;
use crate::domain::ids::{AccountId, LoadId};
use crate::storage::{ReferenceClaim, ReferenceStore, StorageError, StorageResult};

#[async_trait]
impl ReferenceStore for ScyllaStore {
    async fn reference_claim(
        &self,
        account: &AccountId,
        reference: &str,
    ) -> StorageResult<Option<ReferenceClaim>> {
        let row = self
            .first::<(Option<String>, Option<i64>)>(
                &self.st.reference_claim,
                (account.as_str(), reference),
            )
            .await?;
        let Some((Some(load), Some(micros))) = row else {
            return Ok(None);
        };
        let load = LoadId::parse(&load)
            .ok_or_else(|| StorageError::corrupt("bad load id in a reference claim"))?;
        let at = DateTime::from_timestamp_micros(micros)
            .ok_or_else(|| StorageError::corrupt("bad time in a reference claim"))?;
        Ok(Some(ReferenceClaim { load, at }))
    }

    async fn swap_reference_claim(
        &self,
        account: &AccountId,
        reference: &str,
        claim: &ReferenceClaim,
        replacing: Option<&LoadId>,
    ) -> StorageResult<bool> {
        let (load, at) = (claim.load.as_str(), claim.at.timestamp_micros());
        match replacing {
            None => {
                self.applied(
                    &self.st.insert_reference_claim,
                    (account.as_str(), reference, load, at),
                )
                .await
            }
            Some(holder) => {
                self.applied(
                    &self.st.move_reference_claim,
                    (load, at, account.as_str(), reference, holder.as_str()),
                )
                .await
            }
        }
    }

    async fn release_reference(
        &self,
        account: &AccountId,
        reference: &str,
        load: &LoadId,
    ) -> StorageResult<()> {
        // Not applied: another load holds it now, or nobody does. Either way
        // this load does not.
        self.applied(
            &self.st.release_reference_claim,
            (account.as_str(), reference, load.as_str()),
        )
        .await
        .map(|_| ())
    }
}
