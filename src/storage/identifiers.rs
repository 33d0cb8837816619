//! Device identifiers (an IMEI, an OwnTracks `user/device`), unique across the
//! whole service: a TCP tracker says only its IMEI, so whichever account holds
//! an identifier, nobody else may. Kept by a claim taken before the device is
//! written ([`super::claims`]); a removed device, or one that changes its
//! identifier, releases its claim.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::claims::{self, ClaimedName};
use super::{Storage, StorageResult};
use crate::domain::device::Device;
use crate::domain::ids::DeviceId;

/// Who holds an identifier: the device, and when it claimed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifierClaim {
    pub device: DeviceId,
    pub at: DateTime<Utc>,
}

#[async_trait]
pub trait IdentifierStore: Send + Sync {
    /// The claim on `identifier`, if any.
    async fn identifier_claim(&self, identifier: &str) -> StorageResult<Option<IdentifierClaim>>;
    /// Makes `claim` the holder if the holder now is `replacing` (`None`: no
    /// holder at all); whether it did. Durable when it answers true.
    async fn swap_identifier_claim(
        &self,
        identifier: &str,
        claim: &IdentifierClaim,
        replacing: Option<&DeviceId>,
    ) -> StorageResult<bool>;
    /// Removes the claim if `device` holds it.
    async fn release_identifier(&self, identifier: &str, device: &DeviceId) -> StorageResult<()>;
}

struct Identifier<'a> {
    storage: &'a dyn Storage,
    identifier: &'a str,
}

#[async_trait]
impl ClaimedName for Identifier<'_> {
    type Holder = DeviceId;

    async fn current(&self) -> StorageResult<Option<(DeviceId, DateTime<Utc>)>> {
        let held = self.storage.identifier_claim(self.identifier).await?;
        Ok(held.map(|claim| (claim.device, claim.at)))
    }

    async fn swap(
        &self,
        device: &DeviceId,
        at: DateTime<Utc>,
        replacing: Option<&DeviceId>,
    ) -> StorageResult<bool> {
        let claim = IdentifierClaim {
            device: device.clone(),
            at,
        };
        self.storage
            .swap_identifier_claim(self.identifier, &claim, replacing)
            .await
    }

    async fn carried_by(&self, device: &DeviceId) -> StorageResult<bool> {
        let holder = self.storage.get_device(device).await?;
        Ok(holder.is_some_and(|d| d.identifier.as_deref() == Some(self.identifier)))
    }
}

/// Claims `identifier` for `device`: `Ok(())` once it holds it (or did
/// already), `Err(holder)` when another device has it.
pub async fn claim(
    storage: &dyn Storage,
    identifier: &str,
    device: &DeviceId,
    now: DateTime<Utc>,
) -> StorageResult<Result<(), DeviceId>> {
    claims::claim(
        &Identifier {
            storage,
            identifier,
        },
        device,
        now,
    )
    .await
}

/// The device whose identifier is `identifier`, if any.
pub async fn find(storage: &dyn Storage, identifier: &str) -> StorageResult<Option<Device>> {
    let Some(held) = storage.identifier_claim(identifier).await? else {
        return Ok(None);
    };
    let device = storage.get_device(&held.device).await?;
    Ok(device.filter(|d| d.identifier.as_deref() == Some(identifier)))
}

/// Lets go of a claim `device` no longer needs. A failure is logged and
/// leaves a stale claim, which the next device to claim it takes over.
pub async fn release(storage: &dyn Storage, identifier: &str, device: &DeviceId) {
    if let Err(error) = storage.release_identifier(identifier, device).await {
        tracing::warn!(device = %device, error = %crate::telemetry::error_chain(&error), "could not release an identifier claim; the next claim of it takes it over");
    }
}
