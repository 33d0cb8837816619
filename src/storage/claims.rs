//! Names that one holder at a time may carry (a load's reference within its
//! account, a device's identifier across the service), kept unique by a claim
//! taken before the holder is written.
//!
//! Neither backend writes a claim and its holder in one transaction (ScyllaDB
//! cannot across partitions), so a claim whose holder does not carry the name
//! is either being written (younger than [`CLAIM_GRACE`]: taken) or was left
//! by a writer that failed or died (older: taken over, conditionally on the
//! holder being the one seen). A holder that gives up its name releases the
//! claim after it is written; a failed release is one more stale claim.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StorageResult;

/// How long a claim whose holder does not (yet) carry its name still counts:
/// far longer than a write takes, short enough that a claim left by a crash
/// frees its name soon.
pub const CLAIM_GRACE: chrono::Duration = chrono::Duration::seconds(60);

/// One name's claims, as a backend keeps them.
#[async_trait]
pub trait ClaimedName: Sync {
    /// Who may hold the name (a load's id, a device's).
    type Holder: Clone + PartialEq + Send + Sync;

    /// The holder now and when it claimed, if any.
    async fn current(&self) -> StorageResult<Option<(Self::Holder, DateTime<Utc>)>>;
    /// Makes `holder` the holder if the holder now is `replacing` (`None`: no
    /// holder at all); whether it did. Durable when it answers true.
    async fn swap(
        &self,
        holder: &Self::Holder,
        at: DateTime<Utc>,
        replacing: Option<&Self::Holder>,
    ) -> StorageResult<bool>;
    /// Whether `holder`'s stored record carries the name.
    async fn carried_by(&self, holder: &Self::Holder) -> StorageResult<bool>;
}

/// Claims the name for `holder`: `Ok(())` once it holds it (or did already),
/// `Err(other)` when another holder has it.
pub async fn claim<N: ClaimedName>(
    name: &N,
    holder: &N::Holder,
    now: DateTime<Utc>,
) -> StorageResult<Result<(), N::Holder>> {
    let mut last_holder = None;
    // Each lost race means another writer moved the claim meanwhile: a few
    // rounds settle it (the winner's record is then found, or its claim young).
    for _ in 0..4 {
        let replacing = match name.current().await? {
            None => None,
            Some((held, _)) if &held == holder => return Ok(Ok(())),
            Some((held, at)) => {
                if now - at < CLAIM_GRACE || name.carried_by(&held).await? {
                    return Ok(Err(held));
                }
                Some(held)
            }
        };
        if name.swap(holder, now, replacing.as_ref()).await? {
            return Ok(Ok(()));
        }
        last_holder = replacing;
    }
    let other = name
        .current()
        .await?
        .map(|(held, _)| held)
        .or(last_holder)
        .unwrap_or_else(|| holder.clone());
    Ok(Err(other))
}

/// The holder that carries the name, if any (a claim whose holder does not
/// carry it is nobody's).
pub async fn holder<N: ClaimedName>(name: &N) -> StorageResult<Option<N::Holder>> {
    let Some((held, _)) = name.current().await? else {
        return Ok(None);
    };
    Ok(name.carried_by(&held).await?.then_some(held))
}
