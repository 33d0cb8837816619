//! Device identifier claims (`cql/019_device_identifiers.cql`, `storage::identifiers`).

use async_trait::async_trait;
use chrono::DateTime;

use super::ScyllaStore;
use crate::domain::ids::DeviceId;
use crate::storage::identifiers::{IdentifierClaim, IdentifierStore};
use crate::storage::{StorageError, StorageResult};

#[async_trait]
impl IdentifierStore for ScyllaStore {
    async fn identifier_claim(&self, identifier: &str) -> StorageResult<Option<IdentifierClaim>> {
        let row = self
            .first::<(Option<String>, Option<i64>)>(&self.st.identifier_claim, (identifier,))
            .await?;
        let Some((Some(device), Some(micros))) = row else {
            return Ok(None);
        };
        let device = DeviceId::parse(&device)
            .ok_or_else(|| StorageError::corrupt("bad device id in an identifier claim"))?;
        let at = DateTime::from_timestamp_micros(micros)
            .ok_or_else(|| StorageError::corrupt("bad time in an identifier claim"))?;
        Ok(Some(IdentifierClaim { device, at }))
    }

    async fn swap_identifier_claim(
        &self,
        identifier: &str,
        claim: &IdentifierClaim,
        replacing: Option<&DeviceId>,
    ) -> StorageResult<bool> {
        let (device, at) = (claim.device.as_str(), claim.at.timestamp_micros());
        match replacing {
            None => {
                self.applied(&self.st.insert_identifier_claim, (identifier, device, at))
                    .await
            }
            Some(holder) => {
                self.applied(
                    &self.st.move_identifier_claim,
                    (device, at, identifier, holder.as_str()),
                )
                .await
            }
        }
    }

    async fn release_identifier(&self, identifier: &str, device: &DeviceId) -> StorageResult<()> {
        // Not applied: another device holds it now, or none does.
        self.applied(
            &self.st.release_identifier_claim,
            (identifier, device.as_str()),
        )
        .await
        .map(|_| ())
    }
}
