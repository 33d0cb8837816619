//! Load references (`reference` on a load: a PO, BOL or pro number), unique
//! within an account.
//!
//! Neither backend writes a claim and a load in one transaction (ScyllaDB
//! cannot across partitions), so uniqueness is a claim taken first and the
//! load written after, by [`claim`]: a claim whose load does not carry the
//! reference is either being written (younger than [`CLAIM_GRACE`]: taken) or
//! was left by a writer that failed or died (older: taken over, conditionally
//! on the holder being the one seen). A load that gives up its reference
//! releases the claim after it is written; a failed release is one more stale
//! claim.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Storage, StorageResult};
use crate::domain::ids::{AccountId, LoadId};

/// How long a claim whose load does not (yet) carry its reference still
/// counts: far longer than a load write takes, short enough that a claim left
/// by a crash frees its reference soon.
pub const CLAIM_GRACE: chrono::Duration = chrono::Duration::seconds(60);

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

/// Claims `reference` for `load`: `Ok(())` once it holds it (or did already),
/// `Err(holder)` when another load of the account has it.
pub async fn claim(
    storage: &dyn Storage,
    account: &AccountId,
    reference: &str,
    load: &LoadId,
    now: DateTime<Utc>,
) -> StorageResult<Result<(), LoadId>> {
    let wanted = ReferenceClaim {
        load: load.clone(),
        at: now,
    };
    let mut last_holder = None;
    // Each lost race means another writer moved the claim meanwhile: a few
    // rounds settle it (the winner's load is then found, or its claim young).
    for _ in 0..4 {
        let current = storage.reference_claim(account, reference).await?;
        let replacing = match current {
            None => None,
            Some(held) if &held.load == load => return Ok(Ok(())),
            Some(held) => {
                if in_force(storage, account, reference, &held, now).await? {
                    return Ok(Err(held.load));
                }
                Some(held.load)
            }
        };
        if storage
            .swap_reference_claim(account, reference, &wanted, replacing.as_ref())
            .await?
        {
            return Ok(Ok(()));
        }
        last_holder = replacing;
    }
    let holder = storage
        .reference_claim(account, reference)
        .await?
        .map(|held| held.load)
        .or(last_holder)
        .unwrap_or_else(|| load.clone());
    Ok(Err(holder))
}

/// Whether a claim held by another load still counts: its load carries the
/// reference, or it is young enough to be a write in progress.
async fn in_force(
    storage: &dyn Storage,
    account: &AccountId,
    reference: &str,
    held: &ReferenceClaim,
    now: DateTime<Utc>,
) -> StorageResult<bool> {
    if now - held.at < CLAIM_GRACE {
        return Ok(true);
    }
    let holder = storage.get_load(&held.load).await?;
    Ok(holder
        .is_some_and(|l| &l.account_id == account && l.reference.as_deref() == Some(reference)))
}

/// The load of `account` whose reference is `reference`, if any.
pub async fn find(
    storage: &dyn Storage,
    account: &AccountId,
    reference: &str,
) -> StorageResult<Option<crate::domain::load::Load>> {
    let Some(held) = storage.reference_claim(account, reference).await? else {
        return Ok(None);
    };
    let load = storage.get_load(&held.load).await?;
    Ok(load.filter(|l| &l.account_id == account && l.reference.as_deref() == Some(reference)))
}

/// Lets go of a claim `load` no longer needs. A failure is logged and leaves
/// a stale claim, which the next load to claim the reference takes over.
pub async fn release(storage: &dyn Storage, account: &AccountId, reference: &str, load: &LoadId) {
    if let Err(error) = storage.release_reference(account, reference, load).await {
        tracing::warn!(load = %load, error = %crate::telemetry::error_chain(&error), "could not release a reference claim; the next claim of it takes it over");
    }
}
