//! Load references (`reference` on a load: a PO, BOL or pro number), unique
//! within an account: a claim taken before the load is written
//! ([`super::claims`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::claims::{self, ClaimedName};
use super::{Storage, StorageResult};
use crate::domain::ids::{AccountId, LoadId};

pub use super::claims::CLAIM_GRACE;

/// Who holds a reference: the load, and when it claimed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceClaim {
    pub load: LoadId,
    pub at: DateTime<Utc>,
}

#[async_trait]
pub trait ReferenceStore: Send + Sync {
    /// The claim on `reference` in `account`, if any.
    async fn reference_claim(
        &self,
        account: &AccountId,
        reference: &str,
    ) -> StorageResult<Option<ReferenceClaim>>;
    /// Makes `claim` the holder if the holder now is `replacing` (`None`: no
    /// holder at all); whether it did. Durable when it answers true.
    async fn swap_reference_claim(
        &self,
        account: &AccountId,
        reference: &str,
        claim: &ReferenceClaim,
        replacing: Option<&LoadId>,
    ) -> StorageResult<bool>;
    /// Removes the claim if `load` holds it.
    async fn release_reference(
        &self,
        account: &AccountId,
        reference: &str,
        load: &LoadId,
    ) -> StorageResult<()>;
}

/// One reference of one account, as [`claims`] sees it.
struct Reference<'a> {
    storage: &'a dyn Storage,
    account: &'a AccountId,
    reference: &'a str,
}

#[async_trait]
impl ClaimedName for Reference<'_> {
    type Holder = LoadId;

    async fn current(&self) -> StorageResult<Option<(LoadId, DateTime<Utc>)>> {
        let held = self
            .storage
            .reference_claim(self.account, self.reference)
            .await?;
        Ok(held.map(|claim| (claim.load, claim.at)))
    }

    async fn swap(
        &self,
        load: &LoadId,
        at: DateTime<Utc>,
        replacing: Option<&LoadId>,
    ) -> StorageResult<bool> {
        let claim = ReferenceClaim {
            load: load.clone(),
            at,
        };
        self.storage
            .swap_reference_claim(self.account, self.reference, &claim, replacing)
            .await
    }

    async fn carried_by(&self, load: &LoadId) -> StorageResult<bool> {
        let holder = self.storage.get_load(load).await?;
        Ok(holder.is_some_and(|l| {
            &l.account_id == self.account && l.reference.as_deref() == Some(self.reference)
        }))
    }
}

/// Claims `reference` for `load`: `Ok(())` once it holds it (or did already),
/// `Err(holder)` when another load of the account has it.
pub async fn claim(
    storage: &dyn Storage,
    account: &AccountId,
    reference: &str,
    load: &LoadId,
    now: DateTime<Utc>,
) -> StorageResult<Result<(), LoadId>> {
    let name = Reference {
        storage,
        account,
        reference,
    };
    claims::claim(&name, load, now).await
}

/// The load of `account` whose reference is `reference`, if any.
pub async fn find(
    storage: &dyn Storage,
    account: &AccountId,
    reference: &str,
) -> StorageResult<Option<crate::domain::load::Load>> {
    let name = Reference {
        storage,
        account,
        reference,
    };
    match claims::holder(&name).await? {
        Some(load) => storage.get_load(&load).await,
        None => Ok(None),
    }
}

/// Lets go of a claim `load` no longer needs. A failure is logged and leaves
/// a stale claim, which the next load to claim the reference takes over.
pub async fn release(storage: &dyn Storage, account: &AccountId, reference: &str, load: &LoadId) {
    if let Err(error) = storage.release_reference(account, reference, load).await {
        tracing::warn!(load = %load, error = %crate::telemetry::error_chain(&error), "could not release a reference claim; the next claim of it takes it over");
    }
}
